/**
 * `llmcp diff`: which header fields and tensors of two checkpoints differ —
 * per tensor the count of elements whose bit patterns differ, the largest
 * |Δ| and the first differing element with both bit patterns — and whether
 * the files are bit-identical.
 */
import { f64BitsHex, f64Text, hexBytes, u64Hex, type DecodedCheckpoint, type NamedTensor } from '@llmcp/format';

/** One header field whose values differ. */
export interface FieldDifference {
  readonly field: string;
  readonly a: string;
  readonly b: string;
}

/** Which part of the checkpoint a tensor comes from. */
export type TensorKind = 'parameter' | 'first-moment' | 'second-moment';

/** The comparison of one tensor. */
export interface TensorDifference {
  readonly kind: TensorKind;
  readonly name: string;
  readonly status: 'identical' | 'different' | 'shape-mismatch' | 'only-in-a' | 'only-in-b';
  readonly shapeA: readonly number[] | null;
  readonly shapeB: readonly number[] | null;
  /** Elements compared (0 unless both exist with equal shapes). */
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
  readonly checksumA: string;
  readonly checksumB: string;
  /** Header fields that differ, in file order. */
  readonly fields: readonly FieldDifference[];
  /** Every tensor: parameters in model order of `a` (then those only in `b`), then first and second moments. */
  readonly tensors: readonly TensorDifference[];
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

function compareTensor(kind: TensorKind, name: string, a: NamedTensor | undefined, b: NamedTensor | undefined): TensorDifference {
  const base = { kind, name, shapeA: a?.shape ?? null, shapeB: b?.shape ?? null };
  if (a === undefined) return { ...base, status: 'only-in-b', elements: 0, differing: 0, maxAbsDelta: 0, first: null };
  if (b === undefined) return { ...base, status: 'only-in-a', elements: 0, differing: 0, maxAbsDelta: 0, first: null };
  if (!sameShape(a.shape, b.shape)) return { ...base, status: 'shape-mismatch', elements: 0, differing: 0, maxAbsDelta: 0, first: null };
  let differing = 0;
  let maxAbsDelta = 0;
  let first: TensorDifference['first'] = null;
  // Bit patterns compared as two 32-bit words each (no bigint per element).
  const wordsA = new Uint32Array(a.data.buffer, a.data.byteOffset, 2 * a.data.length);
  const wordsB = new Uint32Array(b.data.buffer, b.data.byteOffset, 2 * b.data.length);
  for (let i = 0; i < a.data.length; i++) {
    if (wordsA[2 * i] === wordsB[2 * i] && wordsA[2 * i + 1] === wordsB[2 * i + 1]) continue;
    const x = a.data[i] as number;
    const y = b.data[i] as number;
    differing += 1;
    first ??= { index: i, a: f64BitsHex(x), b: f64BitsHex(y) };
    const delta = Math.abs(x - y);
    if (Number.isNaN(delta) || Number.isNaN(maxAbsDelta)) maxAbsDelta = Number.NaN;
    else if (delta > maxAbsDelta) maxAbsDelta = delta;
  }
  return { ...base, status: differing === 0 ? 'identical' : 'different', elements: a.data.length, differing, maxAbsDelta, first };
}

function tokenizerFields(a: DecodedCheckpoint, b: DecodedCheckpoint, out: FieldDifference[]): void {
  const ta = a.tokenizer;
  const tb = b.tokenizer;
  if (ta.kind !== tb.kind) {
    out.push({ field: 'tokenizer.kind', a: ta.kind, b: tb.kind });
    return;
  }
  const listA = ta.kind === 'literal' ? ta.pieces.map((p) => hexBytes(p, '')) : ta.pairs.map(([l, r]) => `${l},${r}`);
  const listB = tb.kind === 'literal' ? tb.pieces.map((p) => hexBytes(p, '')) : tb.pairs.map(([l, r]) => `${l},${r}`);
  const label = ta.kind === 'literal' ? 'tokenizer.pieces' : 'tokenizer.pairs';
  if (listA.length !== listB.length) out.push({ field: `${label}.length`, a: String(listA.length), b: String(listB.length) });
  const n = Math.min(listA.length, listB.length);
  for (let i = 0; i < n; i++) {
    if (listA[i] !== listB[i]) {
      out.push({ field: `${label}[${i}] (first difference)`, a: listA[i] as string, b: listB[i] as string });
      break;
    }
  }
}

/**
 * Compares two decoded checkpoints field by field and tensor by tensor
 * (bit patterns, so −0 ≠ +0 and NaN payloads count).
 *
 * @param a - first checkpoint.
 * @param b - second checkpoint.
 * @param bytesA - bytes of the first file (for bit identity).
 * @param bytesB - bytes of the second file.
 * @returns the differences.
 * @example
 * ```ts
 * const d = diffCheckpoints(decodeCheckpoint(x), decodeCheckpoint(y), x, y);
 * d.tensors.filter((t) => t.status !== 'identical');
 * ```
 */
export function diffCheckpoints(a: DecodedCheckpoint, b: DecodedCheckpoint, bytesA: Uint8Array, bytesB: Uint8Array): CheckpointDiff {
  const fields: FieldDifference[] = [];
  const field = (name: string, x: string, y: string): void => {
    if (x !== y) fields.push({ field: name, a: x, b: y });
  };
  const f64 = (x: number): string => `${f64Text(x)} (${f64BitsHex(x)})`;
  field('file length', String(a.layout.fileLength), String(b.layout.fileLength));
  field('header_bytes', String(a.layout.headerBytes), String(b.layout.headerBytes));
  field('payload_bytes', String(a.layout.payloadBytes), String(b.layout.payloadBytes));
  field('checksum', a.layout.checksumLabel, b.layout.checksumLabel);
  field('selected step', String(a.selectedStep), String(b.selectedStep));
  field('sampling RNG state', u64Hex(a.samplingRngState), u64Hex(b.samplingRngState));
  tokenizerFields(a, b, fields);
  for (const key of ['vocabularySize', 'modelWidth', 'heads', 'feedForwardWidth', 'layers', 'maxPositions'] as const) field(`decoder.${key}`, String(a.decoder[key]), String(b.decoder[key]));
  for (const key of ['ropeBase', 'rmsEpsilon'] as const) field(`decoder.${key}`, f64(a.decoder[key]), f64(b.decoder[key]));
  const oa = a.optimizer;
  const ob = b.optimizer;
  for (const key of ['learningRate', 'beta1', 'beta2', 'epsilon', 'weightDecay'] as const) field(`adamw.${key}`, f64(oa.config[key]), f64(ob.config[key]));
  field('adamw.groups', JSON.stringify(oa.groups), JSON.stringify(ob.groups));
  field('adamw.step', String(oa.step), String(ob.step));
  field('adamw.beta1Power', f64(oa.beta1Power), f64(ob.beta1Power));
  field('adamw.beta2Power', f64(oa.beta2Power), f64(ob.beta2Power));

  const tensors: TensorDifference[] = [];
  const paramsB = new Map(b.parameters.map((p) => [p.name, p]));
  const seen = new Set<string>();
  for (const p of a.parameters) {
    seen.add(p.name);
    tensors.push(compareTensor('parameter', p.name, p, paramsB.get(p.name)));
  }
  for (const p of b.parameters) if (!seen.has(p.name)) tensors.push(compareTensor('parameter', p.name, undefined, p));
  const momentsA = new Map(oa.moments.map((m) => [m.name, m]));
  const momentsB = new Map(ob.moments.map((m) => [m.name, m]));
  const names = [...new Set([...momentsA.keys(), ...momentsB.keys()])];
  for (const which of ['first', 'second'] as const) {
    for (const name of names) {
      const ma = momentsA.get(name);
      const mb = momentsB.get(name);
      const ta = ma === undefined ? undefined : { name, shape: ma.shape, data: ma[which] };
      const tb = mb === undefined ? undefined : { name, shape: mb.shape, data: mb[which] };
      tensors.push(compareTensor(which === 'first' ? 'first-moment' : 'second-moment', name, ta, tb));
    }
  }
  const bitIdentical = bytesA.length === bytesB.length && bytesA.every((x, i) => x === bytesB[i]);
  return { bitIdentical, checksumA: a.layout.checksumLabel, checksumB: b.layout.checksumLabel, fields, tensors };
}
