/**
 * Pieces of the reference layers (../reference/layers.ts) in the batched form
 * the fast kernel sets share: the same operations on the same values, their
 * transcendental functions in batches (exp-batch.ts).
 */
import { log1p } from '../math/index.ts';
import type { NormActivations } from '../reference/layers.ts';
import type { Matrix } from '../reference/matrix.ts';
import { batchLn } from './exp-batch.ts';

/** A batched exp (bit for bit exp()): `out[outOff + i] = exp(x[xOff + i])` for i < n. */
export type BatchExp = (out: Float64Array, outOff: number, x: Float64Array, xOff: number, n: number) => void;

/**
 * The array whose element 0 is `m`'s element (0, 0), when its rows are contiguous (what a kernel taking plain arrays reads), else null.
 * @param m - a matrix.
 * @returns the array (`m.data` itself, or a view of it), or null.
 */
export function contiguous(m: Matrix): Float64Array | null {
  if (m.stride !== m.columns && m.rows > 1) return null;
  return m.offset === 0 ? m.data : m.data.subarray(m.offset, m.offset + m.rows * m.columns);
}

/**
 * {@link contiguous} of every matrix, or null when one has padded rows.
 * @param ms - matrices.
 * @returns their arrays, in order, or null.
 */
export function contiguousAll(ms: readonly Matrix[]): Float64Array[] | null {
  const out: Float64Array[] = [];
  for (const m of ms) {
    const a = contiguous(m);
    if (a === null) return null;
    out.push(a);
  }
  return out;
}

/**
 * The arrays of element-wise matrices from their element (0, 0), padding included (rows · stride elements), when
 * every one starts at its array's start, else null.
 * @param ms - matrices of one layout.
 * @returns their arrays, in order, or null.
 */
export function flatAll(ms: readonly Matrix[]): Float64Array[] | null {
  return ms.every((m) => m.offset === 0) ? ms.map((m) => m.data) : null;
}

/**
 * RMSNorm's reciprocal roots `inv[r] = exp(ln(st[r])·(−½))` of rows 0 … rows−1, each step in one batch over the rows.
 * @param n - the norm's values (st read, inv written).
 * @param rows - rows.
 * @param exp - the set's batched exp.
 */
export function inverseRoots(n: NormActivations, rows: number, exp: BatchExp): void {
  const { inv, st } = n;
  batchLn(inv, 0, st, 0, rows);
  for (let r = 0; r < rows; r++) inv[r] = (inv[r] as number) * -0.5;
  exp(inv, 0, inv, 0, rows);
}

/**
 * The cross-entropy's row losses `(m − z_y) + log1p(tail)` from each row's maximum and tail (`stats[2r]`, `stats[2r+1]`).
 * @param rowLoss - (rows) out.
 * @param logits - (rows, V) contiguous logits.
 * @param stats - (2·rows) per row m and tail.
 * @param targets - (rows) target ids.
 * @param V - row length.
 */
export function rowLosses(rowLoss: Float64Array, logits: Float64Array, stats: Float64Array, targets: ArrayLike<number>, V: number): void {
  for (let r = 0; r < targets.length; r++) {
    rowLoss[r] = (stats[2 * r] as number) - (logits[r * V + (targets[r] as number)] as number) + log1p(stats[2 * r + 1] as number);
  }
}

/**
 * Row r of the cross-entropy forward on its own (a row a kernel left undecided), with the reference's
 * operations, its exps in one batch: prob, and the row's m and tail into `stats`.
 * @param prob - (rows, V) contiguous probabilities (row r written).
 * @param logits - (rows, V) contiguous logits.
 * @param stats - (2·rows) per row m and tail (row r written).
 * @param r - the row.
 * @param V - row length.
 * @param exp - the set's batched exp.
 */
export function crossEntropyRow(prob: Float64Array, logits: Float64Array, stats: Float64Array, r: number, V: number, exp: BatchExp): void {
  const o = r * V;
  let m = -Infinity;
  for (let c = 0; c < V; c++) if ((logits[o + c] as number) > m) m = logits[o + c] as number;
  for (let c = 0; c < V; c++) prob[o + c] = (logits[o + c] as number) - m;
  exp(prob, o, prob, o, V);
  let tail = 0;
  let skipped = false;
  for (let c = 0; c < V; c++) {
    // The shift is tested, not its exp (exp of a tiny nonzero shift can round to 1).
    if (!skipped && (logits[o + c] as number) - m === 0) skipped = true;
    else tail += prob[o + c] as number;
  }
  stats[2 * r] = m;
  stats[2 * r + 1] = tail;
  const den = 1.0 + tail;
  for (let c = 0; c < V; c++) prob[o + c] = (prob[o + c] as number) / den + 0;
}
