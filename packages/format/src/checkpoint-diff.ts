/**
 * Comparison of two LLMCP35 files, from their inspections (so it works as far
 * as both files parse, damaged or not): the header fields that differ, per
 * tensor the count of elements whose bit patterns differ, the largest |Δ| and
 * the first differing element — and, byte by byte, where two copies of one
 * checkpoint differ, each run of differing bytes named by the header field,
 * descriptor entry or record element that holds it. The one implementation
 * behind `llmcp diff` and the web inspector.
 */
import { f64BitsHex, f64Text, hexBytes, u64Hex } from './bits.ts';
import { inspectCheckpoint, type CheckpointInspection, type InspectedDescriptor } from './inspect.ts';
import { DTYPE_WIDTHS } from './tags.ts';

/** One header field whose values differ (`(absent)` where a file does not hold or parse it). */
export interface FieldDifference {
  readonly field: string;
  readonly a: string;
  readonly b: string;
}

/** Which part of the checkpoint a tensor comes from. */
export type TensorKind = 'parameter' | 'first-moment' | 'second-moment';

/**
 * The verdict on one tensor: bit-identical, different, of another shape or
 * dtype, present in one file only, or not comparable (its bytes lie outside a
 * damaged file, or its length disagrees with its shape).
 */
export type TensorDiffStatus = 'identical' | 'different' | 'shape-mismatch' | 'only-in-a' | 'only-in-b' | 'unreadable';

/** The comparison of one tensor. */
export interface TensorDifference {
  readonly kind: TensorKind;
  readonly name: string;
  readonly status: TensorDiffStatus;
  readonly shapeA: readonly number[] | null;
  readonly shapeB: readonly number[] | null;
  /** Elements compared (0 unless both exist with equal shapes and readable bytes). */
  readonly elements: number;
  /** Elements whose f64 bit patterns differ. */
  readonly differing: number;
  /** Largest |a − b| over differing elements (NaN when a differing element is not finite); 0 when none differ. */
  readonly maxAbsDelta: number;
  /** First differing element with both bit patterns. */
  readonly first: { readonly index: number; readonly a: string; readonly b: string } | null;
}

/** The result of {@link diffCheckpoints}. */
export interface CheckpointDiff {
  /** The two files are byte-for-byte identical. */
  readonly bitIdentical: boolean;
  /** Stored checksum labels (`(absent)` for a file shorter than the fixed header). */
  readonly checksumA: string;
  readonly checksumB: string;
  /** Header fields that differ, in file order. */
  readonly fields: readonly FieldDifference[];
  /** Every tensor: parameters in model order of `a` (then those only in `b`), then first and second moments. */
  readonly tensors: readonly TensorDifference[];
}

/** Inspections the caller already has (each is computed from the bytes when not given). */
export interface DiffInspections {
  readonly a?: CheckpointInspection;
  readonly b?: CheckpointInspection;
}

const ABSENT = '(absent)';

function f64(x: number | null | undefined): string {
  return x === null || x === undefined ? ABSENT : `${f64Text(x)} (${f64BitsHex(x)})`;
}

function text(x: bigint | number | string | null | undefined): string {
  return x === null || x === undefined ? ABSENT : String(x);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function kindOf(d: InspectedDescriptor): TensorKind | null {
  return d.role === 'model-parameter' ? 'parameter' : d.role === 'first-moment' || d.role === 'second-moment' ? d.role : null;
}

function readable(d: InspectedDescriptor): boolean {
  return d.checks.withinFile && d.checks.byteLengthMatchesShape && d.dtype !== null;
}

interface Side {
  readonly d: InspectedDescriptor;
  readonly bytes: Uint8Array;
}

function compareTensor(kind: TensorKind, name: string, sides: { readonly a: Side | undefined; readonly b: Side | undefined }): TensorDifference {
  const { a, b } = sides;
  const shape = (x: Side | undefined): number[] | null => (x === undefined ? null : x.d.shape.map(Number));
  // Key order as `llmcp diff --json` has always printed it.
  const base = { kind, name, shapeA: shape(a), shapeB: shape(b) };
  const none = { elements: 0, differing: 0, maxAbsDelta: 0, first: null };
  if (a === undefined) return { ...base, status: 'only-in-b', ...none };
  if (b === undefined) return { ...base, status: 'only-in-a', ...none };
  if (a.d.shape.join(',') !== b.d.shape.join(',') || a.d.dtype !== b.d.dtype) return { ...base, status: 'shape-mismatch', ...none };
  if (!readable(a.d) || !readable(b.d) || a.d.byteLength !== b.d.byteLength) return { ...base, status: 'unreadable', ...none };
  const width = DTYPE_WIDTHS[a.d.dtype as keyof typeof DTYPE_WIDTHS];
  const n = Number(a.d.byteLength) / width;
  const oa = Number(a.d.offset);
  const ob = Number(b.d.offset);
  const va = new DataView(a.bytes.buffer, a.bytes.byteOffset + oa, Number(a.d.byteLength));
  const vb = new DataView(b.bytes.buffer, b.bytes.byteOffset + ob, Number(b.d.byteLength));
  let differing = 0;
  let maxAbsDelta = 0;
  let first: TensorDifference['first'] = null;
  for (let i = 0; i < n; i++) {
    let same = true;
    for (let k = 0; k < width; k++) {
      if (a.bytes[oa + i * width + k] !== b.bytes[ob + i * width + k]) {
        same = false;
        break;
      }
    }
    if (same) continue;
    differing += 1;
    if (width === 8) {
      const x = va.getFloat64(8 * i, true);
      const y = vb.getFloat64(8 * i, true);
      first ??= { index: i, a: f64BitsHex(x), b: f64BitsHex(y) };
      const delta = Math.abs(x - y);
      if (Number.isNaN(delta) || Number.isNaN(maxAbsDelta)) maxAbsDelta = Number.NaN;
      else if (delta > maxAbsDelta) maxAbsDelta = delta;
    } else {
      const hex = (v: DataView): string => hexBytes(new Uint8Array(v.buffer, v.byteOffset + i * width, width), '');
      first ??= { index: i, a: hex(va), b: hex(vb) };
    }
  }
  return { ...base, status: differing === 0 ? 'identical' : 'different', elements: n, differing, maxAbsDelta, first };
}

function tokenizerList(i: CheckpointInspection, bytes: Uint8Array): { label: string; items: string[] } | null {
  const kind = i.tokenizer?.kind;
  if (kind !== 'literal' && kind !== 'bpe') return null;
  const slice = i.descriptors.filter((d) => d.slice === 'tokenizer' && d.checks.withinFile);
  if (kind === 'literal') return { label: 'tokenizer.pieces', items: slice.map((d) => hexBytes(bytes.subarray(Number(d.offset), Number(d.end)), '')) };
  const d = slice[0];
  const items: string[] = [];
  if (d !== undefined && d.dtype === 'u32') {
    const view = new DataView(bytes.buffer, bytes.byteOffset + Number(d.offset), Number(d.byteLength));
    for (let r = 0; 8 * r + 8 <= view.byteLength; r++) items.push(`${view.getUint32(8 * r, true)},${view.getUint32(8 * r + 4, true)}`);
  }
  return { label: 'tokenizer.pairs', items };
}

function tokenizerFields(a: CheckpointInspection & { readonly bytes: Uint8Array }, b: CheckpointInspection & { readonly bytes: Uint8Array }, out: FieldDifference[]): void {
  const ka = a.tokenizer === null ? ABSENT : (a.tokenizer.kind ?? `tag ${a.tokenizer.kindTag}`);
  const kb = b.tokenizer === null ? ABSENT : (b.tokenizer.kind ?? `tag ${b.tokenizer.kindTag}`);
  if (ka !== kb) {
    out.push({ field: 'tokenizer.kind', a: ka, b: kb });
    return;
  }
  const la = tokenizerList(a, a.bytes);
  const lb = tokenizerList(b, b.bytes);
  if (la === null || lb === null) return;
  if (la.items.length !== lb.items.length) out.push({ field: `${la.label}.length`, a: String(la.items.length), b: String(lb.items.length) });
  const n = Math.min(la.items.length, lb.items.length);
  for (let k = 0; k < n; k++) {
    if (la.items[k] !== lb.items[k]) {
      out.push({ field: `${la.label}[${k}] (first difference)`, a: la.items[k] as string, b: lb.items[k] as string });
      break;
    }
  }
}

/**
 * Compares two checkpoint files field by field and tensor by tensor (bit
 * patterns, so −0 ≠ +0 and NaN payloads count). Works on damaged files as far
 * as their headers parse: a tensor whose bytes are not in the file is
 * `unreadable`, a field a file does not hold reads `(absent)`.
 *
 * @param bytesA - the first file.
 * @param bytesB - the second file.
 * @param inspections - {@link inspectCheckpoint} results the caller already has (computed when absent).
 * @returns the differences.
 * @throws TypeError when either argument is not a Uint8Array.
 * @example
 * ```ts
 * const d = diffCheckpoints(a, b);
 * d.tensors.filter((t) => t.status !== 'identical');
 * ```
 */
export function diffCheckpoints(bytesA: Uint8Array, bytesB: Uint8Array, inspections: DiffInspections = {}): CheckpointDiff {
  const a = inspections.a ?? inspectCheckpoint(bytesA);
  const b = inspections.b ?? inspectCheckpoint(bytesB);
  const fields: FieldDifference[] = [];
  const field = (name: string, x: string, y: string): void => {
    if (x !== y) fields.push({ field: name, a: x, b: y });
  };
  field('file length', String(a.fileLength), String(b.fileLength));
  field('header_bytes', text(a.headerBytes), text(b.headerBytes));
  field('payload_bytes', text(a.payloadBytes), text(b.payloadBytes));
  const checksumA = a.checksum?.storedLabel ?? ABSENT;
  const checksumB = b.checksum?.storedLabel ?? ABSENT;
  field('checksum', checksumA, checksumB);
  field('selected step', text(a.selectedStep), text(b.selectedStep));
  field('sampling RNG state', a.samplingRngState === null ? ABSENT : u64Hex(a.samplingRngState), b.samplingRngState === null ? ABSENT : u64Hex(b.samplingRngState));
  tokenizerFields({ ...a, bytes: bytesA }, { ...b, bytes: bytesB }, fields);
  for (const key of ['vocabularySize', 'modelWidth', 'heads', 'feedForwardWidth', 'layers', 'maxPositions'] as const) field(`decoder.${key}`, text(a.decoder?.[key]), text(b.decoder?.[key]));
  for (const key of ['ropeBase', 'rmsEpsilon'] as const) field(`decoder.${key}`, f64(a.decoder?.[key]), f64(b.decoder?.[key]));
  for (const key of ['learningRate', 'beta1', 'beta2', 'epsilon', 'weightDecay'] as const) field(`adamw.${key}`, f64(a.adamw?.[key]), f64(b.adamw?.[key]));
  const groups = (i: CheckpointInspection): string => (i.groupsFlag === null ? ABSENT : JSON.stringify(i.groups));
  field('adamw.groups', groups(a), groups(b));
  field('adamw.step', text(a.optimizerStep), text(b.optimizerStep));
  field('adamw.beta1Power', f64(a.beta1Power), f64(b.beta1Power));
  field('adamw.beta2Power', f64(a.beta2Power), f64(b.beta2Power));

  const tensors: TensorDifference[] = [];
  for (const kind of ['parameter', 'first-moment', 'second-moment'] as const) {
    const of = (i: CheckpointInspection, bytes: Uint8Array): Map<string, Side> => {
      const m = new Map<string, Side>();
      for (const d of i.descriptors) if (kindOf(d) === kind && !m.has(d.name)) m.set(d.name, { d, bytes });
      return m;
    };
    const ma = of(a, bytesA);
    const mb = of(b, bytesB);
    for (const name of new Set([...ma.keys(), ...mb.keys()])) tensors.push(compareTensor(kind, name, { a: ma.get(name), b: mb.get(name) }));
  }
  return { bitIdentical: sameBytes(bytesA, bytesB), checksumA, checksumB, fields, tensors };
}

/** What holds a run of differing bytes. */
export type ByteRegionKind = 'fixed-header' | 'header-field' | 'descriptor-entry' | 'record' | 'unaccounted';

/** One run of differing bytes, within one region (and, in a record, a run of whole elements). */
export interface ByteDifference {
  /** First byte of the run (for a record: the first byte of its first differing element). */
  readonly start: number;
  /** Last byte of the run, inclusive (for a record: the last byte of its last differing element). */
  readonly last: number;
  /** Bytes in the run whose values differ, and bits that differ in them. */
  readonly differingBytes: number;
  readonly differingBits: number;
  readonly region: ByteRegionKind;
  /** Header field name, `descriptor #k (name)`, or the record name. */
  readonly name: string;
  /** For a record: its role and the element range `[firstElement, lastElement]`. */
  readonly role?: string;
  readonly firstElement?: number;
  readonly lastElement?: number;
}

/** The result of {@link locateByteDifferences}. */
export interface ByteDifferences {
  readonly lengthA: number;
  readonly lengthB: number;
  /** Differing bytes within the common length. */
  readonly differingBytes: number;
  readonly differingBits: number;
  /** The runs, in file order (at most `maxRuns`). */
  readonly runs: readonly ByteDifference[];
  /** More runs existed than were listed. */
  readonly truncated: boolean;
  /** Which file's layout named the bytes (`a` unless only `b` is valid). */
  readonly layoutOf: 'a' | 'b';
}

/** Options of {@link locateByteDifferences}. */
export interface LocateOptions extends DiffInspections {
  /** Runs listed at most (default 1000); every differing byte is still counted. */
  readonly maxRuns?: number;
}

interface Region {
  readonly start: number;
  readonly end: number;
  readonly kind: ByteRegionKind;
  readonly name: string;
  readonly role?: string;
  readonly width: number;
}

function regionsOf(i: CheckpointInspection): Region[] {
  const out: Region[] = [];
  for (const f of i.fixedHeader) out.push({ start: f.offset, end: f.offset + f.width, kind: 'fixed-header', name: f.field, width: f.width });
  for (const f of i.fields) out.push({ start: f.offset, end: f.offset + f.width, kind: 'header-field', name: f.field, width: f.width });
  for (const d of i.descriptors) {
    out.push({ start: d.entryOffset, end: d.entryOffset + d.entryLength, kind: 'descriptor-entry', name: `descriptor #${d.index} (${d.name})`, width: d.entryLength });
    if (d.checks.withinFile && d.end !== null) {
      out.push({ start: Number(d.offset), end: Number(d.end), kind: 'record', name: d.name, role: d.role ?? `tag ${d.roleTag}`, width: d.dtype === null ? 1 : DTYPE_WIDTHS[d.dtype] });
    }
  }
  // Sorted by start; an overlapping region (damaged layout) keeps the earlier one.
  out.sort((x, y) => x.start - y.start || x.end - y.end);
  const clean: Region[] = [];
  let covered = 0;
  for (const r of out) {
    if (r.end <= r.start || r.start < covered) continue;
    if (r.start > covered) clean.push({ start: covered, end: r.start, kind: 'unaccounted', name: 'bytes no field or record accounts for', width: 1 });
    clean.push(r);
    covered = r.end;
  }
  clean.push({ start: covered, end: Number.MAX_SAFE_INTEGER, kind: 'unaccounted', name: 'bytes no field or record accounts for', width: 1 });
  return clean;
}

function popcount8(x: number): number {
  let n = 0;
  for (let v = x; v !== 0; v &= v - 1) n += 1;
  return n;
}

/**
 * Where two copies of a checkpoint differ, byte by byte: every run of
 * differing bytes within the common length, named by the region of the file
 * that holds it — a fixed-header field, a variable-header field, a descriptor
 * entry, or a record (with the element indices; a record's run covers whole
 * elements). Meant for locating the damage in a copy (a flipped bit) against
 * a good one: the layout comes from `a` (from `b` when only `b` is valid).
 *
 * @param bytesA - the first copy.
 * @param bytesB - the second copy.
 * @param options - inspections already computed, and `maxRuns`.
 * @returns the runs and counts.
 * @throws TypeError when either argument is not a Uint8Array.
 * @example
 * ```ts
 * const d = locateByteDifferences(latest, backup);
 * d.runs.map(byteDifferenceText); // ['bytes 4120–4127 differ: record `blocks.0.attn.wq` element 3 (1 bit)']
 * ```
 */
export function locateByteDifferences(bytesA: Uint8Array, bytesB: Uint8Array, options: LocateOptions = {}): ByteDifferences {
  if (!(bytesA instanceof Uint8Array) || !(bytesB instanceof Uint8Array)) throw new TypeError('locateByteDifferences: both copies must be Uint8Arrays');
  const a = options.a ?? inspectCheckpoint(bytesA);
  const useB = !a.verdict.valid && (options.b ?? inspectCheckpoint(bytesB)).verdict.valid;
  const layout = useB ? (options.b ?? inspectCheckpoint(bytesB)) : a;
  const maxRuns = options.maxRuns ?? 1000;
  const regions = regionsOf(layout);
  const n = Math.min(bytesA.length, bytesB.length);
  const runs: ByteDifference[] = [];
  let truncated = false;
  let differingBytes = 0;
  let differingBits = 0;
  let r = 0;
  let open: { start: number; last: number; bytes: number; bits: number; region: Region; firstElement: number; lastElement: number } | null = null;
  const close = (): void => {
    if (open === null) return;
    if (runs.length >= maxRuns) truncated = true;
    else {
      const { region } = open;
      const run: ByteDifference =
        region.kind === 'record'
          ? { start: open.start, last: open.last, differingBytes: open.bytes, differingBits: open.bits, region: region.kind, name: region.name, role: region.role ?? '', firstElement: open.firstElement, lastElement: open.lastElement }
          : { start: open.start, last: open.last, differingBytes: open.bytes, differingBits: open.bits, region: region.kind, name: region.name };
      runs.push(run);
    }
    open = null;
  };
  for (let i = 0; i < n; i++) {
    const x = (bytesA[i] as number) ^ (bytesB[i] as number);
    if (x === 0) continue;
    while ((regions[r] as Region).end <= i) r += 1;
    const region = regions[r] as Region;
    const bits = popcount8(x);
    differingBytes += 1;
    differingBits += bits;
    const record = region.kind === 'record';
    const element = record ? Math.floor((i - region.start) / region.width) : 0;
    const start = record ? region.start + element * region.width : i;
    const last = record ? start + region.width - 1 : i;
    if (open !== null && open.region === region && (record ? element <= open.lastElement + 1 : true)) {
      open.last = Math.max(open.last, last);
      open.lastElement = element;
      open.bytes += 1;
      open.bits += bits;
      continue;
    }
    close();
    open = { start, last, bytes: 1, bits, region, firstElement: element, lastElement: element };
  }
  close();
  return { lengthA: bytesA.length, lengthB: bytesB.length, differingBytes, differingBits, runs, truncated, layoutOf: useB ? 'b' : 'a' };
}

/** How a comparison's two files are named in text (`llmcp diff`: `a` and `b`; the inspector: `A` and `B`). */
export interface DiffLabels {
  readonly a: string;
  readonly b: string;
}

/**
 * One line for a tensor's comparison, the same words wherever a diff is shown,
 * e.g. `3 of 4096 differ`, `shape [4, 8] vs [4, 16]`, `only in b`.
 *
 * @param t - a tensor of {@link diffCheckpoints}.
 * @param labels - the files' names (default `a` and `b`).
 * @returns the text.
 */
export function tensorDifferenceText(t: TensorDifference, labels: DiffLabels = { a: 'a', b: 'b' }): string {
  switch (t.status) {
    case 'identical':
      return 'identical';
    case 'different':
      return `${t.differing} of ${t.elements} differ`;
    case 'shape-mismatch':
      return `shape [${t.shapeA?.join(', ')}] vs [${t.shapeB?.join(', ')}]`;
    case 'only-in-a':
      return `only in ${labels.a}`;
    case 'only-in-b':
      return `only in ${labels.b}`;
    case 'unreadable':
      return 'not comparable (bytes outside the file)';
  }
}

/**
 * One line for a run of differing bytes, e.g.
 * ``bytes 4120–4127 differ: record `blocks.0.attn.wq` element 3 (1 bit)``.
 *
 * @param d - a run from {@link locateByteDifferences}.
 * @returns the text.
 */
export function byteDifferenceText(d: ByteDifference): string {
  const where = d.start === d.last ? `byte ${d.start} differs` : `bytes ${d.start}–${d.last} differ`;
  const bits = `${d.differingBits} bit${d.differingBits === 1 ? '' : 's'}`;
  switch (d.region) {
    case 'record': {
      const elements = d.firstElement === d.lastElement ? `element ${d.firstElement}` : `elements ${d.firstElement}–${d.lastElement}`;
      return `${where}: record \`${d.name}\` (${d.role}) ${elements} (${bits})`;
    }
    case 'fixed-header':
      return `${where}: fixed header field ${d.name} (${bits})`;
    case 'header-field':
      return `${where}: header field ${d.name} (${bits})`;
    case 'descriptor-entry':
      return `${where}: ${d.name} (${bits})`;
    case 'unaccounted':
      return `${where}: ${d.name} (${bits})`;
  }
}
