/**
 * Presentation of a foreign header, shared by the CLI (`llmcp inspect`) and
 * the inspector: the text report and a JSON-safe summary (u64/i64 values as
 * decimal strings).
 */
import type { InspectionStyle } from '../inspect-text.ts';
import type { ForeignFile } from './foreign-file.ts';
import type { GgufArray, GgufScalar } from './gguf.ts';

/** Longest metadata value shown in full by {@link renderForeignFile} (longer ones are cut with `…`). */
export const FOREIGN_VALUE_PREVIEW_CHARS = 96;

/** One row of a foreign file's tensor table, the same for both kinds. */
export interface ForeignTensorRow {
  readonly name: string;
  /** dtype (safetensors) or ggml type (GGUF). */
  readonly type: string;
  /** Row-major shape (safetensors) or ggml `ne` dims, innermost first (GGUF). */
  readonly shape: readonly number[];
  readonly elements: number;
  /** Absolute half-open byte range, or null end when the size is unknown. */
  readonly begin: number;
  readonly end: number | null;
}

/** One metadata row: key, type and the value as text. */
export interface ForeignMetadataRow {
  readonly key: string;
  readonly type: string;
  readonly value: string;
}

function scalarText(v: GgufScalar): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'object') return arrayText(v);
  return String(v);
}

function arrayText(a: GgufArray): string {
  const items = a.head.map(scalarText);
  return `[${items.join(', ')}${a.length > a.head.length ? `, … ${a.length - a.head.length} more` : ''}]`;
}

/**
 * The tensor table of a foreign file.
 *
 * @param file - a parsed header.
 * @returns one row per tensor, in file order.
 */
export function foreignTensorRows(file: ForeignFile): ForeignTensorRow[] {
  if (file.kind === 'safetensors') return file.tensors.map((t) => ({ name: t.name, type: t.dtype, shape: t.shape, elements: t.elements, begin: t.begin, end: t.end }));
  return file.tensors.map((t) => ({ name: t.name, type: t.type, shape: t.dims, elements: t.elements, begin: t.begin, end: t.byteLength === null ? null : t.begin + t.byteLength }));
}

/**
 * The metadata of a foreign file as text rows (`__metadata__` of a
 * safetensors file: type `string`; GGUF: its value types, arrays as
 * `array<type>[n]` with their first elements).
 *
 * @param file - a parsed header.
 * @returns the rows, in file order.
 */
export function foreignMetadataRows(file: ForeignFile): ForeignMetadataRow[] {
  if (file.kind === 'safetensors') return Object.entries(file.metadata ?? {}).map(([key, value]) => ({ key, type: 'string', value }));
  return file.metadata.map((m) => ({
    key: m.key,
    type: typeof m.value === 'object' && m.type === 'array' ? `array<${(m.value as GgufArray).elementType}>[${(m.value as GgufArray).length}]` : m.type,
    value: typeof m.value === 'string' ? m.value : scalarText(m.value),
  }));
}

/**
 * A one-line description: what the file is.
 *
 * @param file - a parsed header.
 * @returns e.g. `safetensors, 21 tensors, 10480 elements`.
 */
export function describeForeignFile(file: ForeignFile): string {
  const kind = file.kind === 'safetensors' ? 'safetensors' : `GGUF v${file.version}`;
  const arch = file.kind === 'gguf' ? file.metadata.find((m) => m.key === 'general.architecture')?.value : undefined;
  return `${kind}${typeof arch === 'string' ? ` (architecture ${arch})` : ''}, ${file.tensors.length} tensor${file.tensors.length === 1 ? '' : 's'}, ${file.totalElements} elements`;
}

function cut(text: string): string {
  // Control characters are the point: each is shown as a \xNN escape, so a hostile value cannot drive the terminal.
  // eslint-disable-next-line no-control-regex -- matches C0 controls and DEL on purpose
  const flat = text.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return flat.length > FOREIGN_VALUE_PREVIEW_CHARS ? `${flat.slice(0, FOREIGN_VALUE_PREVIEW_CHARS)}… (${flat.length} chars)` : flat;
}

function table(rows: readonly (readonly string[])[], right: readonly boolean[]): string[] {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, Array.from(c).length)));
  return rows.map((r) =>
    `  ${r
      .map((c, i) => {
        const pad = ' '.repeat((widths[i] as number) - Array.from(c).length);
        return i === r.length - 1 && right[i] !== true ? c : right[i] === true ? pad + c : c + pad;
      })
      .join('  ')}`.trimEnd(),
  );
}

const PLAIN: InspectionStyle = { ok: (s) => s, bad: (s) => s, dim: (s) => s, bold: (s) => s };

/** Options of {@link renderForeignFile}. */
export interface RenderForeignOptions {
  /** The name shown in the title. */
  readonly file?: string;
  /** Colours (default: none). */
  readonly style?: InspectionStyle;
}

/**
 * The text report of a foreign file: what it is, where its header and data
 * lie, its metadata, and its tensor table with half-open byte ranges.
 *
 * @param file - a parsed header.
 * @param options - name and colours.
 * @returns the report (ends with a newline).
 * @example
 * ```ts
 * process.stdout.write(renderForeignFile(readForeignFile(bytes), { file: 'model.safetensors' }));
 * ```
 */
export function renderForeignFile(file: ForeignFile, options: RenderForeignOptions = {}): string {
  const s = options.style ?? PLAIN;
  const out: string[] = [];
  out.push(s.bold(`${options.file === undefined ? '' : `${options.file}: `}${file.fileLength} bytes, ${describeForeignFile(file)} — not an LLMCP35 checkpoint`));
  if (file.kind === 'safetensors') out.push(`header: ${file.headerBytes} bytes of JSON at [8, ${file.dataStart}); tensor data [${file.dataStart}, ${file.fileLength})`);
  else out.push(`header: ${file.metadata.length} metadata keys, ${file.tensors.length} tensor infos; tensor data from ${file.dataStart} (alignment ${file.alignment})`);
  const meta = foreignMetadataRows(file);
  out.push('', s.bold(file.kind === 'safetensors' ? `__metadata__: ${meta.length} key${meta.length === 1 ? '' : 's'}` : `metadata: ${meta.length} key${meta.length === 1 ? '' : 's'}`));
  if (meta.length > 0) out.push(...table([[s.dim('key'), s.dim('type'), s.dim('value')], ...meta.map((m) => [m.key, m.type, cut(m.value)])], []));
  const rows = foreignTensorRows(file);
  out.push('', s.bold(`tensors: ${rows.length}, ${file.totalElements} elements`));
  if (rows.length > 0) {
    out.push(
      ...table(
        [
          [s.dim('#'), s.dim('name'), s.dim(file.kind === 'safetensors' ? 'dtype' : 'type'), s.dim(file.kind === 'safetensors' ? 'shape' : 'ne'), s.dim('elements'), s.dim('range')],
          ...rows.map((r, i) => [String(i), r.name, r.type, `[${r.shape.join(', ')}]`, String(r.elements), r.end === null ? `[${r.begin}, ?)` : `[${r.begin}, ${r.end})`]),
        ],
        [true, false, false, false, true, false],
      ),
    );
  }
  return `${out.join('\n')}\n`;
}

/** JSON-safe form of a metadata value: bigints as decimal strings. */
export type ForeignJsonValue = number | string | boolean | { readonly elementType: string; readonly length: number; readonly head: readonly ForeignJsonValue[] };

function jsonValue(v: GgufScalar): ForeignJsonValue {
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'object') return { elementType: v.elementType, length: v.length, head: v.head.map(jsonValue) };
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
  return v;
}

/** The JSON-safe summary of {@link foreignFileJson}. */
export interface ForeignFileJson {
  readonly kind: 'safetensors' | 'gguf';
  readonly version: number | null;
  readonly fileLength: number;
  readonly dataStart: number;
  readonly metadata: readonly { readonly key: string; readonly type: string; readonly value: ForeignJsonValue }[];
  readonly tensors: readonly ForeignTensorRow[];
  readonly totalElements: number;
}

/**
 * A JSON-safe summary (u64/i64 values as decimal strings, non-finite floats as text).
 *
 * @param file - a parsed header.
 * @returns the summary.
 */
export function foreignFileJson(file: ForeignFile): ForeignFileJson {
  const metadata =
    file.kind === 'safetensors'
      ? Object.entries(file.metadata ?? {}).map(([key, value]) => ({ key, type: 'string', value }))
      : file.metadata.map((m) => ({ key: m.key, type: m.type, value: jsonValue(m.value) }));
  return {
    kind: file.kind,
    version: file.kind === 'gguf' ? file.version : null,
    fileLength: file.fileLength,
    dataStart: file.dataStart,
    metadata,
    tensors: foreignTensorRows(file),
    totalElements: file.totalElements,
  };
}
