/**
 * The human-readable layout audit of a file, from a {@link CheckpointInspection}
 * (../SPEC.md §3, §4, §12): the text of `llmcp inspect` and of the conformance
 * report. Plain text; colours only through a caller-supplied style hook, so
 * it stays browser-safe and dependency-free.
 */
import { f64BitsHex, f64Text, hexBytes, quotedBytes, u64Hex } from './bits.ts';
import { MAX_SPELLED_BYTES, spellBpeMerges } from './bpe-merges.ts';
import { inspectCheckpoint, type CheckpointInspection, type InspectedDescriptor, type InspectedField, type InspectionError } from './inspect.ts';
import { prefixSpans } from './inspect-prefix.ts';
import { BPE_BASE_VOCABULARY } from './tags.ts';

/**
 * How {@link renderInspection} marks up parts of the text (e.g. ANSI colours
 * in a terminal). Each function receives plain text and returns it marked up;
 * column widths are always computed on the plain text.
 */
export interface InspectionStyle {
  /** A passed check or a valid verdict (a terminal would use green). */
  ok(text: string): string;
  /** A failed check, a mismatch or an invalid verdict (red). */
  bad(text: string): string;
  /** Table headings (dim). */
  dim(text: string): string;
  /** The title, section headings and the verdict word (bold). */
  bold(text: string): string;
}

/** Options of {@link renderInspection}. */
export interface RenderInspectionOptions {
  /** The inspection of `bytes` if the caller already has it (default: `inspectCheckpoint(bytes)`). */
  readonly inspection?: CheckpointInspection;
  /** The name shown in the title line, e.g. the path (default `checkpoint`). */
  readonly file?: string;
  /** Mark-up hooks; each one missing is the identity. */
  readonly style?: Partial<InspectionStyle>;
  /** How many tokenizer pieces or BPE merges to list (default 16). */
  readonly tokens?: number;
}

const identity = (text: string): string => text;

/** A table cell: its plain text (which sets the column width) and the text shown. */
interface Cell {
  readonly plain: string;
  readonly shown: string;
}

type Align = 'left' | 'right';

// eslint-disable-next-line no-control-regex -- ESC (U+001B) starts every ANSI colour code; this strips them to measure widths
const ANSI = /\u001b\[[0-9;]*m/g;

function cell(text: string, mark: (text: string) => string = identity): Cell {
  return { plain: text, shown: mark(text) };
}

/** Width on screen: code points, ANSI colour codes excluded (file-controlled names may hold some). */
function visibleWidth(text: string): number {
  return Array.from(text.replace(ANSI, '')).length;
}

/** Rows of cells aligned into columns two spaces apart; the last column is never padded on the right. */
function alignTable(rows: readonly (readonly Cell[])[], align: readonly Align[], indent = '  '): string[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, visibleWidth(c.plain))));
  return rows.map((row) => {
    const cells = row.map((c, i) => {
      const pad = ' '.repeat((widths[i] ?? 0) - visibleWidth(c.plain));
      if (align[i] === 'right') return pad + c.shown;
      return i === row.length - 1 ? c.shown : c.shown + pad;
    });
    return (indent + cells.join('  ')).trimEnd();
  });
}

function plural(n: number | bigint, one: string): string {
  return `${n} ${n === 1 || n === 1n ? one : `${one}s`}`;
}

function errorText(e: InspectionError): string {
  const where: string[] = [];
  if (e.offset !== undefined) where.push(`offset ${e.offset}`);
  if (e.field !== undefined) where.push(e.field);
  if (e.recordIndex !== undefined) where.push(`record #${e.recordIndex}`);
  if (e.recordName !== undefined) where.push(JSON.stringify(e.recordName));
  return `${e.code} (${e.category}${e.reason === 'unspecified' ? '' : `/${e.reason}`})${where.length === 0 ? '' : ` at ${where.join(', ')}`}: ${e.message}`;
}

function verdictLine(i: CheckpointInspection, st: InspectionStyle): string {
  return i.verdict.valid ? `verdict: ${st.ok(st.bold('VALID'))} (${i.verdict.checkpoint.layout.checksumLabel})` : `verdict: ${st.bad(st.bold('INVALID'))} ${errorText(i.verdict.error)}`;
}

function fieldValue(f: InspectedField): string {
  if (f.type === 'f64' && typeof f.value === 'number') return `${f64Text(f.value)} (bits ${f64BitsHex(f.value)})`;
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

function range(d: InspectedDescriptor): string {
  return d.end === null ? `[${d.offset},overflow)` : `[${d.offset},${d.end})`;
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
    const table = spellBpeMerges(bytes.subarray(Number(d.offset), Number(d.end)), limit);
    for (const m of table.merges) {
      out.push(`  merge ${m.rank}: id ${BPE_BASE_VOCABULARY + m.rank} = ${quotedBytes(m.leftBytes)} + ${quotedBytes(m.rightBytes)} → ${quotedBytes(m.bytes)}   (training ids ${m.left}, ${m.right})`);
    }
    if (table.spellingStoppedAt !== null) out.push(`  merge ${table.spellingStoppedAt} on: not spelled (the spellings exceed ${MAX_SPELLED_BYTES} bytes)`);
    const u = table.unknownOperand;
    if (u !== null && u.rank < limit) out.push(`  merge ${u.rank}: (${u.left}, ${u.right}) → unknown operand`);
    if (table.total > limit) out.push(`  … ${table.total - limit} more merges`);
  }
  return out;
}

/**
 * Renders the layout audit of a file as aligned text: title and verdict, the
 * first 16 bytes annotated, the fixed header with offsets and raw bytes, the
 * checksum (stored vs computed), the variable header, summaries of
 * tokenizer (pieces or spelled merges), decoder, AdamW, groups, step and RNG
 * state, the descriptor table with half-open byte ranges and a per-row check
 * (the failing row marked), and — for a damaged file — where parsing stopped
 * and which rule failed; the verdict again at the end. Never throws for a
 * `Uint8Array`.
 *
 * @param bytes - the file's bytes.
 * @param options - the inspection if already made, the title name, style hooks, list length.
 * @returns the report, lines separated by `\n`, ending with a newline.
 * @throws RangeError when `options.tokens` is not a non-negative integer.
 * @example
 * ```ts
 * console.log(renderInspection(bytes, { file: 'state.llmcp' }));
 * // state.llmcp: 6330 bytes, LLMCP35 v1 layout audit
 * // verdict: VALID (fnv1a64:2b8b6097eaed6a91)
 * // …
 * ```
 */
export function renderInspection(bytes: Uint8Array, options: RenderInspectionOptions = {}): string {
  const st: InspectionStyle = {
    ok: options.style?.ok ?? identity,
    bad: options.style?.bad ?? identity,
    dim: options.style?.dim ?? identity,
    bold: options.style?.bold ?? identity,
  };
  const tokens = options.tokens ?? 16;
  if (!Number.isSafeInteger(tokens) || tokens < 0) throw new RangeError(`renderInspection: tokens must be a non-negative integer, found ${tokens}`);
  const i = options.inspection ?? inspectCheckpoint(bytes);
  const heading = (text: string): Cell => cell(text, st.dim);
  const out: string[] = [];
  const h = (title: string): void => {
    out.push('', st.bold(title));
  };
  out.push(`${st.bold(options.file ?? 'checkpoint')}: ${plural(i.fileLength, 'byte')}, LLMCP35 v1 layout audit`);
  out.push(verdictLine(i, st));

  h('first 16 bytes');
  out.push(`  ${hexBytes(bytes.subarray(0, 16)) || '(empty file)'}`);
  out.push(...alignTable(prefixSpans(bytes, i).map((s) => [cell(`[${s.start},${s.end})`), cell(s.hex), cell(`${s.field}: ${s.meaning}`)]), ['left', 'left', 'left']));

  if (i.fixedHeader.length > 0) {
    h('fixed header (38 bytes)');
    const rows = [
      [heading('offset'), heading('width'), heading('field'), heading('bytes'), heading('value')],
      ...i.fixedHeader.map((f) => [cell(String(f.offset)), cell(String(f.width)), cell(f.field), cell(f.hex), cell(fieldValue(f))]),
    ];
    out.push(...alignTable(rows, ['right', 'right', 'left', 'left', 'left']));
  } else {
    out.push('', st.bad(`the file is shorter than the 38-byte fixed header (${i.fileLength} bytes)`));
  }
  if (i.checksum !== null) {
    const k = i.checksum;
    out.push(`  checksum: stored ${k.storedLabel}, computed ${k.computedLabel} — ${k.matches ? st.ok('match') : st.bad('MISMATCH')}`);
  }

  if (i.fields.length > 0) {
    h('variable header');
    const rows = [[heading('offset'), heading('width'), heading('field'), heading('value')], ...i.fields.map((f) => [cell(String(f.offset)), cell(String(f.width)), cell(f.field), cell(fieldValue(f))])];
    out.push(...alignTable(rows, ['right', 'right', 'left', 'left']));
  }

  h('summary');
  const tokenLines = tokenizerLines(bytes, i, tokens);
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
    const rows: Cell[][] = [[heading('#'), heading('role'), heading('name'), heading('dtype'), heading('shape'), heading('range'), heading('length'), heading('check')]];
    let previousEnd: bigint | null = i.headerBytes;
    for (const d of i.descriptors) {
      const check = descriptorCheck(d, previousEnd, i.fileLength);
      const mark = failing === d.index ? ` ◀ ${i.verdict.valid ? '' : i.verdict.error.code}` : '';
      rows.push([
        cell(String(d.index)),
        cell(d.role ?? `tag ${d.roleTag}?`),
        cell(d.name),
        cell(d.dtype ?? `tag ${d.dtypeTag}?`),
        cell(`[${d.shape.join(', ')}]`),
        cell(range(d)),
        cell(String(d.byteLength)),
        { plain: check + mark, shown: (check === 'ok' ? st.ok(check) : st.bad(check)) + (mark === '' ? '' : st.bad(mark)) },
      ]);
      previousEnd = d.end;
    }
    out.push(...alignTable(rows, ['right', 'left', 'left', 'left', 'left', 'left', 'right', 'left']));
    if (i.recordsEnd !== null) {
      const ends = i.recordsEnd === BigInt(i.fileLength);
      out.push(`  records end at ${i.recordsEnd}; file length ${i.fileLength} — ${ends ? st.ok('ok') : st.bad('MISMATCH')}`);
    }
  }

  if (i.parseStoppedAt !== null) out.push('', st.bad(`parsing stopped: ${errorText(i.parseStoppedAt)}`));
  if (i.headerIssues.length > 0) {
    h('header issues (found while parsing leniently)');
    for (const e of i.headerIssues) out.push(`  - ${errorText(e)}`);
  }
  out.push('', verdictLine(i, st));
  return `${out.join('\n')}\n`;
}
