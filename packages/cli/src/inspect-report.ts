/**
 * The `llmcp inspect` report: the layout audit a reader needs before trusting
 * a payload (format.md §3, §4, §12), as aligned text or as JSON following
 * `schema/inspect.schema.json`. Built from `@llmcp/format`'s
 * `inspectCheckpoint`, so it covers damaged files as far as they parse.
 */
import type { CheckpointInspection, InspectedDescriptor, InspectedField, InspectionError } from '@llmcp/format';
import type { Colors } from './context.ts';
import { alignTable, f64Bits, f64Text, hexBytes, plural, quotedBytes, u64Hex } from './internal/text.ts';

/** Identifier of the JSON report layout (`schema` member). */
export const INSPECT_SCHEMA_ID = 'llmcp-inspect/1';

/** An f64 in JSON: the value (non-finite values as text) and its exact bit pattern. */
export interface F64Json {
  readonly value: number | 'NaN' | 'Infinity' | '-Infinity';
  readonly bits: string;
}

/** A header field in JSON. */
export interface FieldJson {
  readonly field: string;
  readonly offset: number;
  readonly width: number;
  readonly type: string;
  readonly hex: string;
  /** u8/u16/u32 as integers, u64 as decimal strings, f64 as {@link F64Json}, strings as text. */
  readonly value: number | string | F64Json;
}

/** One annotated span of the first 16 bytes. */
export interface PrefixSpanJson {
  readonly start: number;
  readonly end: number;
  readonly field: string;
  readonly hex: string;
  readonly meaning: string;
}

/** A descriptor row in JSON (u64 values as decimal strings). */
export interface DescriptorJson {
  readonly index: number;
  readonly entryOffset: number;
  readonly entryLength: number;
  readonly roleTag: number;
  readonly role: string | null;
  readonly name: string;
  readonly dtypeTag: number;
  readonly dtype: string | null;
  readonly shape: readonly string[];
  readonly offset: string;
  readonly byteLength: string;
  readonly end: string | null;
  /** Half-open byte range `[offset,end)`, or null when the end overflows. */
  readonly range: string | null;
  readonly expectedByteLength: string | null;
  readonly slice: string;
  readonly checks: { readonly byteLengthMatchesShape: boolean; readonly contiguous: boolean; readonly withinFile: boolean };
  readonly payloadChecksum: string | null;
}

/** The `llmcp inspect --json` document (see `schema/inspect.schema.json`). */
export interface InspectReportJson {
  readonly schema: typeof INSPECT_SCHEMA_ID;
  readonly file: string;
  readonly fileLength: number;
  readonly verdict: { readonly valid: true; readonly checksum: string } | { readonly valid: false; readonly error: InspectionError };
  readonly prefix: { readonly hex: string; readonly spans: readonly PrefixSpanJson[] };
  readonly fixedHeader: readonly FieldJson[];
  readonly checksum: { readonly stored: string; readonly computed: string; readonly matches: boolean } | null;
  readonly headerBytes: string | null;
  readonly payloadBytes: string | null;
  readonly variableHeader: readonly FieldJson[];
  readonly tokenizer: {
    readonly kindTag: number;
    readonly kind: 'literal' | 'bpe' | null;
    readonly kindName: string | null;
    readonly declaredVocabulary: string | null;
    readonly records: number | null;
    readonly merges: string | null;
    readonly preview: readonly string[];
  } | null;
  readonly decoder: {
    readonly vocabularySize: string;
    readonly modelWidth: string;
    readonly heads: string;
    readonly feedForwardWidth: string;
    readonly layers: string;
    readonly maxPositions: string;
    readonly ropeBase: F64Json;
    readonly rmsEpsilon: F64Json;
  } | null;
  readonly adamw: { readonly learningRate: F64Json; readonly beta1: F64Json; readonly beta2: F64Json; readonly epsilon: F64Json; readonly weightDecay: F64Json } | null;
  readonly groupsFlag: number | null;
  readonly groups: { readonly decay: readonly string[]; readonly noDecay: readonly string[] } | null;
  readonly selectedStep: string | null;
  readonly optimizerStep: string | null;
  readonly samplingRngState: string | null;
  readonly beta1Power: F64Json | null;
  readonly beta2Power: F64Json | null;
  readonly modelParameterCount: number | null;
  readonly optimizerStateCount: number | null;
  readonly descriptorCount: number | null;
  readonly descriptors: readonly DescriptorJson[];
  readonly recordsEnd: string | null;
  readonly parseStoppedAt: InspectionError | null;
  readonly headerIssues: readonly InspectionError[];
}

function f64Json(value: number): F64Json {
  const bits = f64Bits(value);
  if (Number.isNaN(value)) return { value: 'NaN', bits };
  if (value === Infinity) return { value: 'Infinity', bits };
  if (value === -Infinity) return { value: '-Infinity', bits };
  return { value, bits };
}

function fieldJson(f: InspectedField): FieldJson {
  const value = typeof f.value === 'bigint' ? f.value.toString() : f.type === 'f64' && typeof f.value === 'number' ? f64Json(f.value) : f.value;
  return { field: f.field, offset: f.offset, width: f.width, type: f.type, hex: f.hex, value };
}

function range(d: InspectedDescriptor): string | null {
  return d.end === null ? null : `[${d.offset},${d.end})`;
}

const PREFIX_FIELDS: readonly { start: number; end: number; field: string }[] = [
  { start: 0, end: 8, field: 'magic' },
  { start: 8, end: 10, field: 'format version' },
  { start: 10, end: 14, field: 'endian marker' },
  { start: 14, end: 22, field: 'header_bytes' },
];

/**
 * The first 16 bytes of a file split at field boundaries, each span with what it means.
 *
 * @param bytes - the file.
 * @param inspection - its inspection.
 * @returns the spans (fewer for a file shorter than 16 bytes).
 */
export function prefixSpans(bytes: Uint8Array, inspection: CheckpointInspection): PrefixSpanJson[] {
  const limit = Math.min(16, bytes.length);
  const spans: PrefixSpanJson[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (const { start, end: fieldEnd, field } of PREFIX_FIELDS) {
    if (start >= limit) break;
    const end = Math.min(fieldEnd, limit);
    const complete = end === fieldEnd;
    let meaning: string;
    if (field === 'magic') {
      const ok = complete && hexBytes(bytes.subarray(0, 8)) === '4c 4c 4d 43 50 33 35 00';
      meaning = `${quotedBytes(bytes.subarray(start, end))}${ok ? ' (ok)' : complete ? ', expected "LLMCP35\\x00"' : ' (cut short)'}`;
    } else if (field === 'format version') {
      meaning = complete ? `u16 LE = ${view.getUint16(8, true)}` : 'u16 LE (cut short)';
    } else if (field === 'endian marker') {
      meaning = complete ? `u32 LE = 0x${view.getUint32(10, true).toString(16).padStart(8, '0')}` : 'u32 LE (cut short)';
    } else {
      const total = inspection.headerBytes;
      meaning = `u64 LE, bytes ${start - 14 + 1}–${end - 14} of 8${total === null ? '' : ` (header_bytes = ${total})`}`;
    }
    spans.push({ start, end, field, hex: hexBytes(bytes.subarray(start, end)), meaning });
  }
  return spans;
}

/**
 * The JSON report of one file.
 *
 * @param bytes - the file's bytes.
 * @param inspection - `inspectCheckpoint(bytes)`.
 * @param file - the path as given on the command line.
 * @returns the document described by `schema/inspect.schema.json`.
 */
export function inspectReportJson(bytes: Uint8Array, inspection: CheckpointInspection, file: string): InspectReportJson {
  const i = inspection;
  const s = (v: bigint | null): string | null => (v === null ? null : v.toString());
  const f = (v: number | null): F64Json | null => (v === null ? null : f64Json(v));
  return {
    schema: INSPECT_SCHEMA_ID,
    file,
    fileLength: i.fileLength,
    verdict: i.verdict.valid ? { valid: true, checksum: i.verdict.checkpoint.layout.checksumLabel } : { valid: false, error: i.verdict.error },
    prefix: { hex: hexBytes(bytes.subarray(0, 16)), spans: prefixSpans(bytes, i) },
    fixedHeader: i.fixedHeader.map(fieldJson),
    checksum: i.checksum === null ? null : { stored: i.checksum.storedLabel, computed: i.checksum.computedLabel, matches: i.checksum.matches },
    headerBytes: s(i.headerBytes),
    payloadBytes: s(i.payloadBytes),
    variableHeader: i.fields.map(fieldJson),
    tokenizer:
      i.tokenizer === null
        ? null
        : {
            kindTag: i.tokenizer.kindTag,
            kind: i.tokenizer.kind,
            kindName: i.tokenizer.kindName,
            declaredVocabulary: s(i.tokenizer.declaredVocabulary),
            records: i.tokenizer.records,
            merges: s(i.tokenizer.merges),
            preview: i.tokenizer.preview,
          },
    decoder:
      i.decoder === null
        ? null
        : {
            vocabularySize: i.decoder.vocabularySize.toString(),
            modelWidth: i.decoder.modelWidth.toString(),
            heads: i.decoder.heads.toString(),
            feedForwardWidth: i.decoder.feedForwardWidth.toString(),
            layers: i.decoder.layers.toString(),
            maxPositions: i.decoder.maxPositions.toString(),
            ropeBase: f64Json(i.decoder.ropeBase),
            rmsEpsilon: f64Json(i.decoder.rmsEpsilon),
          },
    adamw:
      i.adamw === null
        ? null
        : {
            learningRate: f64Json(i.adamw.learningRate),
            beta1: f64Json(i.adamw.beta1),
            beta2: f64Json(i.adamw.beta2),
            epsilon: f64Json(i.adamw.epsilon),
            weightDecay: f64Json(i.adamw.weightDecay),
          },
    groupsFlag: i.groupsFlag,
    groups: i.groups,
    selectedStep: s(i.selectedStep),
    optimizerStep: s(i.optimizerStep),
    samplingRngState: i.samplingRngState === null ? null : u64Hex(i.samplingRngState),
    beta1Power: f(i.beta1Power),
    beta2Power: f(i.beta2Power),
    modelParameterCount: i.modelParameterCount,
    optimizerStateCount: i.optimizerStateCount,
    descriptorCount: i.descriptorCount,
    descriptors: i.descriptors.map(
      (d): DescriptorJson => ({
        index: d.index,
        entryOffset: d.entryOffset,
        entryLength: d.entryLength,
        roleTag: d.roleTag,
        role: d.role,
        name: d.name,
        dtypeTag: d.dtypeTag,
        dtype: d.dtype,
        shape: d.shape.map(String),
        offset: d.offset.toString(),
        byteLength: d.byteLength.toString(),
        end: s(d.end),
        range: range(d),
        expectedByteLength: s(d.expectedByteLength),
        slice: d.slice,
        checks: d.checks,
        payloadChecksum: d.payloadChecksum,
      }),
    ),
    recordsEnd: s(i.recordsEnd),
    parseStoppedAt: i.parseStoppedAt,
    headerIssues: i.headerIssues,
  };
}

// ---------------------------------------------------------------- text

/** Options of {@link renderInspectReport}. */
export interface InspectTextOptions {
  /** The path as given (shown in the title). */
  readonly file: string;
  readonly colors: Colors;
  /** How many tokenizer pieces / merges to list (default 16). */
  readonly tokens?: number;
}

function errorText(e: InspectionError): string {
  const where: string[] = [];
  if (e.offset !== undefined) where.push(`offset ${e.offset}`);
  if (e.field !== undefined) where.push(e.field);
  if (e.recordIndex !== undefined) where.push(`record #${e.recordIndex}`);
  if (e.recordName !== undefined) where.push(JSON.stringify(e.recordName));
  return `${e.code} (${e.category}${e.reason === 'unspecified' ? '' : `/${e.reason}`})${where.length === 0 ? '' : ` at ${where.join(', ')}`}: ${e.message}`;
}

function verdictLine(i: CheckpointInspection, c: Colors): string {
  return i.verdict.valid ? `verdict: ${c.green(c.bold('VALID'))} (${i.verdict.checkpoint.layout.checksumLabel})` : `verdict: ${c.red(c.bold('INVALID'))} ${errorText(i.verdict.error)}`;
}

function fieldValue(f: InspectedField): string {
  if (f.type === 'f64' && typeof f.value === 'number') return `${f64Text(f.value)} (bits ${f64Bits(f.value)})`;
  if (typeof f.value === 'bigint') return f.value > 0xffffffffn ? `${f.value} (${u64Hex(f.value)})` : String(f.value);
  if (f.type === 'string' && typeof f.value === 'string') return JSON.stringify(f.value);
  return String(f.value);
}

function descriptorCheck(d: InspectedDescriptor, previousEnd: bigint | null, fileLength: number): string {
  const problems: string[] = [];
  if (!d.checks.byteLengthMatchesShape) {
    problems.push(d.expectedByteLength === null ? 'length: shape × width overflows/unknown dtype' : `length ${d.byteLength} ≠ shape × width = ${d.expectedByteLength}`);
  }
  if (!d.checks.contiguous) problems.push(previousEnd === null ? 'start unknown (previous end overflowed)' : `starts at ${d.offset}, previous ended at ${previousEnd}`);
  if (!d.checks.withinFile) problems.push(`outside the file (length ${fileLength})`);
  return problems.length === 0 ? 'ok' : problems.join('; ');
}

function tokenizerLines(bytes: Uint8Array, i: CheckpointInspection, limit: number): string[] {
  const t = i.tokenizer;
  if (t === null) return [];
  const out: string[] = [];
  const kind = t.kind === null ? `unknown kind tag ${t.kindTag}` : `${t.kind} (${t.kindName})`;
  out.push(`tokenizer: ${kind}, declared vocabulary ${t.declaredVocabulary ?? '?'}${t.merges === null ? '' : `, ${plural(t.merges, 'merge')}`}`);
  const slice = i.descriptors.filter((d) => d.slice === 'tokenizer' && d.checks.withinFile);
  if (t.kind === 'literal') {
    const pieces = slice.slice(0, limit).map((d) => `${d.name}=${quotedBytes(bytes.subarray(Number(d.offset), Number(d.end)))}`);
    if (pieces.length > 0) out.push(`  pieces: ${pieces.join('  ')}${slice.length > limit ? `  … ${slice.length - limit} more` : ''}`);
  } else if (t.kind === 'bpe' && slice[0] !== undefined && slice[0].dtype === 'u32') {
    const d = slice[0];
    const view = new DataView(bytes.buffer, bytes.byteOffset + Number(d.offset), Number(d.byteLength));
    const spelled: Uint8Array[] = [];
    for (let b = 0; b < 256; b++) spelled.push(Uint8Array.of(b));
    const total = Math.floor(view.byteLength / 8);
    const rows: string[] = [];
    for (let r = 0; r < total; r++) {
      const left = view.getUint32(8 * r, true);
      const right = view.getUint32(8 * r + 4, true);
      const a = spelled[left];
      const b = spelled[right];
      if (a === undefined || b === undefined) {
        if (r < limit) rows.push(`  merge ${r}: (${left}, ${right}) → unknown operand`);
        break;
      }
      const joined = new Uint8Array(a.length + b.length);
      joined.set(a);
      joined.set(b, a.length);
      spelled.push(joined);
      if (r < limit) rows.push(`  merge ${r}: id ${258 + r} = ${quotedBytes(a)} + ${quotedBytes(b)} → ${quotedBytes(joined)}   (training ids ${left}, ${right})`);
    }
    out.push(...rows);
    if (total > limit) out.push(`  … ${total - limit} more merges`);
  }
  return out;
}

/**
 * Renders the report as aligned text: verdict, the first 16 bytes annotated,
 * the fixed header with offsets and raw bytes, the checksum (stored vs
 * computed), the variable header, summaries of tokenizer, decoder, AdamW,
 * step and RNG state, the descriptor table with half-open byte ranges and a
 * per-row check, and — for a damaged file — where parsing stopped and which
 * rule failed.
 *
 * @param bytes - the file's bytes.
 * @param inspection - `inspectCheckpoint(bytes)`.
 * @param options - file name, colours, token list length.
 * @returns the report (ends with a newline).
 */
export function renderInspectReport(bytes: Uint8Array, inspection: CheckpointInspection, options: InspectTextOptions): string {
  const c = options.colors;
  const i = inspection;
  const out: string[] = [];
  const h = (title: string): void => {
    out.push('', c.bold(title));
  };
  out.push(`${c.bold(options.file)}: ${plural(i.fileLength, 'byte')}, LLMCP35 v1 layout audit`);
  out.push(verdictLine(i, c));

  h('first 16 bytes');
  out.push(`  ${hexBytes(bytes.subarray(0, 16)) || '(empty file)'}`);
  out.push(...alignTable(prefixSpans(bytes, i).map((s) => [`[${s.start},${s.end})`, s.hex, `${s.field}: ${s.meaning}`]), ['left', 'left', 'left'], '  '));

  if (i.fixedHeader.length > 0) {
    h('fixed header (38 bytes)');
    const rows = [[c.dim('offset'), c.dim('width'), c.dim('field'), c.dim('bytes'), c.dim('value')], ...i.fixedHeader.map((f) => [String(f.offset), String(f.width), f.field, f.hex, fieldValue(f)])];
    out.push(...alignTable(rows, ['right', 'right', 'left', 'left', 'left']));
  } else {
    out.push('', c.red(`the file is shorter than the 38-byte fixed header (${i.fileLength} bytes)`));
  }
  if (i.checksum !== null) {
    const k = i.checksum;
    out.push(`  checksum: stored ${k.storedLabel}, computed ${k.computedLabel} — ${k.matches ? c.green('match') : c.red('MISMATCH')}`);
  }

  if (i.fields.length > 0) {
    h('variable header');
    const rows = [[c.dim('offset'), c.dim('width'), c.dim('field'), c.dim('value')], ...i.fields.map((f) => [String(f.offset), String(f.width), f.field, fieldValue(f)])];
    out.push(...alignTable(rows, ['right', 'right', 'left', 'left']));
  }

  h('summary');
  const tokenLines = tokenizerLines(bytes, i, options.tokens ?? 16);
  out.push(...(tokenLines.length > 0 ? tokenLines.map((l) => `  ${l}`) : ['  tokenizer: not reached']));
  if (i.decoder !== null) {
    const d = i.decoder;
    out.push(
      `  decoder: vocabulary ${d.vocabularySize}, width ${d.modelWidth}, heads ${d.heads}, feed-forward ${d.feedForwardWidth}, layers ${d.layers}, max positions ${d.maxPositions}, rope base ${f64Text(d.ropeBase)}, rms epsilon ${f64Text(d.rmsEpsilon)}`,
    );
  }
  if (i.adamw !== null) {
    const a = i.adamw;
    out.push(`  adamw: learning rate ${f64Text(a.learningRate)}, beta1 ${f64Text(a.beta1)}, beta2 ${f64Text(a.beta2)}, epsilon ${f64Text(a.epsilon)}, weight decay ${f64Text(a.weightDecay)}`);
  }
  if (i.groupsFlag !== null) {
    out.push(i.groups === null ? `  groups: ${i.groupsFlag === 0 ? 'none (weight decay applies to every parameter)' : `flag ${i.groupsFlag}`}` : `  groups: decay ${i.groups.decay.length} [${i.groups.decay.join(', ')}]`);
    if (i.groups !== null) out.push(`          no-decay ${i.groups.noDecay.length} [${i.groups.noDecay.join(', ')}]`);
  }
  if (i.selectedStep !== null) {
    const powers = i.beta1Power === null ? '' : `, beta1^t ${f64Text(i.beta1Power)}, beta2^t ${i.beta2Power === null ? '?' : f64Text(i.beta2Power)}`;
    out.push(`  step: selected ${i.selectedStep}, optimizer ${i.optimizerStep ?? '?'}${powers}`);
  }
  if (i.samplingRngState !== null) out.push(`  sampling RNG: SplitMix64 state ${u64Hex(i.samplingRngState)}`);
  if (i.modelParameterCount !== null) out.push(`  records: ${i.modelParameterCount} model parameters, ${i.optimizerStateCount ?? '?'} optimizer states, ${i.descriptorCount ?? '?'} descriptors`);

  if (i.descriptorCount !== null || i.descriptors.length > 0) {
    h(`descriptor table: ${i.descriptors.length} of ${i.descriptorCount ?? '?'} rows parsed`);
    const failing = i.verdict.valid ? undefined : i.verdict.error.recordIndex;
    const rows: string[][] = [[c.dim('#'), c.dim('role'), c.dim('name'), c.dim('dtype'), c.dim('shape'), c.dim('range'), c.dim('length'), c.dim('check')]];
    let previousEnd: bigint | null = i.headerBytes;
    for (const d of i.descriptors) {
      const check = descriptorCheck(d, previousEnd, i.fileLength);
      const mark = failing === d.index ? c.red(` ◀ ${i.verdict.valid ? '' : i.verdict.error.code}`) : '';
      rows.push([
        String(d.index),
        d.role ?? `tag ${d.roleTag}?`,
        d.name,
        d.dtype ?? `tag ${d.dtypeTag}?`,
        `[${d.shape.join(', ')}]`,
        range(d) ?? `[${d.offset},overflow)`,
        String(d.byteLength),
        (check === 'ok' ? c.green(check) : c.red(check)) + mark,
      ]);
      previousEnd = d.end;
    }
    out.push(...alignTable(rows, ['right', 'left', 'left', 'left', 'left', 'left', 'right', 'left']));
    if (i.recordsEnd !== null) {
      const ends = i.recordsEnd === BigInt(i.fileLength);
      out.push(`  records end at ${i.recordsEnd}; file length ${i.fileLength} — ${ends ? c.green('ok') : c.red('MISMATCH')}`);
    }
  }

  if (i.parseStoppedAt !== null) out.push('', c.red(`parsing stopped: ${errorText(i.parseStoppedAt)}`));
  if (i.headerIssues.length > 0) {
    h('header issues (found while parsing leniently)');
    for (const e of i.headerIssues) out.push(`  - ${errorText(e)}`);
  }
  out.push('', verdictLine(i, c));
  return `${out.join('\n')}\n`;
}
