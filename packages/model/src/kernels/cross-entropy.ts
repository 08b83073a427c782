/**
 * Mean next-token cross-entropy with the maximum split off
 * (../../../../docs/spec/model.md §13; ../../../../docs/spec/backward.md §4.1).
 */
import { exp, log1p } from '../math/index.ts';
import { expConstants, expInto } from './exp-batch.ts';
import { activeNativeKernels } from './native.ts';
import { disjointViews } from './wasm-assembler.ts';
import { wasmCrossEntropyRows } from './wasm-cross-entropy.ts';

/** Row maxima of the current call (reusable, grown as needed). */
let rowMax = new Float64Array(64);
/** Native and WebAssembly paths: per row m and tail (2 · rows), and the undecided elements (native) or rows (WebAssembly). */
let rowStats = new Float64Array(128);
let rowScratch = new Int32Array(1024);
/** Below this many logits the native call does not pay. */
const NATIVE_MIN = 64;

/**
 * Forward for `rows` rows of V logits: per-row losses
 * `(m − z_y) + log1p(tail)` and probabilities `exp(z − m) / (1 + tail)`
 * (canonical +0). The caller sums the row losses in order and divides by N.
 *
 * @param rowLoss - (rows) per-row loss (written).
 * @param prob - (rows, V) probabilities (written).
 * @param logits - (rows, V) logits.
 * @param targets - target ids, row r at `targets[tOff + r]`.
 * @param tOff - offset of the first target.
 * @param rows - number of rows.
 * @param V - vocabulary size.
 */
export function crossEntropyForward(
  rowLoss: Float64Array,
  prob: Float64Array,
  logits: Float64Array,
  targets: ArrayLike<number>,
  tOff: number,
  rows: number,
  V: number,
): void {
  const native = activeNativeKernels();
  if (rows > 0 && V > 0 && rows * V >= NATIVE_MIN) {
    if (rowStats.length < 2 * rows) rowStats = new Float64Array(Math.max(2 * rows, 2 * rowStats.length));
    const stats = rowStats;
    if (native !== null) {
      // The loops in C (native/elementwise.c): m and exp(z − m), the undecided exps finished here with exp(),
      // then the tails and probabilities.
      if (rowScratch.length < rows * V) rowScratch = new Int32Array(Math.max(rows * V, 2 * rowScratch.length));
      const und = rowScratch;
      const count = native.crossEntropyShifts(prob, logits, stats, rows, V, und, expConstants());
      if (count >= 0) {
        for (let k = 0; k < count; k++) {
          const i = und[k] as number;
          prob[i] = exp(prob[i] as number);
        }
        native.crossEntropyRows(prob, logits, stats, rows, V);
        rowLosses(rowLoss, logits, stats, targets, tOff, rows, V);
        return;
      }
    } else if (disjointViews([prob, logits])) {
      // One WebAssembly SIMD kernel (wasm-cross-entropy.ts); its rows with an undecided exp are computed here.
      if (rowScratch.length < rows) rowScratch = new Int32Array(Math.max(rows, 2 * rowScratch.length));
      const und = rowScratch;
      const count = wasmCrossEntropyRows(prob, logits, stats, rows, V, und);
      if (count >= 0) {
        for (let k = 0; k < count; k++) forwardRow(prob, logits, stats, und[k] as number, V);
        rowLosses(rowLoss, logits, stats, targets, tOff, rows, V);
        return;
      }
    }
  }
  if (rowMax.length < rows) rowMax = new Float64Array(Math.max(rows, 2 * rowMax.length));
  const M = rowMax;
  // Pass 1, every row: the maximum m and the shifts z − m, written into prob.
  for (let r = 0; r < rows; r++) {
    const o = r * V;
    let m = -Infinity;
    for (let c = 0; c < V; c++) {
      const z = logits[o + c] as number;
      if (z > m) m = z;
    }
    M[r] = m;
    for (let c = 0; c < V; c++) prob[o + c] = (logits[o + c] as number) - m;
  }
  // exp of all rows in one batch, in place (bit for bit exp(), see exp-batch.ts).
  expInto(prob, 0, prob, 0, rows * V);
  for (let r = 0; r < rows; r++) {
    const o = r * V;
    const m = M[r] as number;
    // The shift is tested, not its exp (exp of a tiny nonzero shift can round to 1).
    let tail = 0;
    let skipped = false;
    for (let c = 0; c < V; c++) {
      const shifted = (logits[o + c] as number) - m;
      const e = prob[o + c] as number;
      if (!skipped && shifted === 0) skipped = true;
      else tail += e;
    }
    const y = targets[tOff + r] as number;
    rowLoss[r] = m - (logits[o + y] as number) + log1p(tail);
    const den = 1.0 + tail;
    for (let c = 0; c < V; c++) prob[o + c] = (prob[o + c] as number) / den + 0;
  }
}

/** The per-row losses `(m − z_y) + log1p(tail)` from each row's m and tail (`stats[2r]`, `stats[2r+1]`). */
function rowLosses(rowLoss: Float64Array, logits: Float64Array, stats: Float64Array, targets: ArrayLike<number>, tOff: number, rows: number, V: number): void {
  for (let r = 0; r < rows; r++) {
    const y = targets[tOff + r] as number;
    rowLoss[r] = (stats[2 * r] as number) - (logits[r * V + y] as number) + log1p(stats[2 * r + 1] as number);
  }
}

/** Row r of {@link crossEntropyForward} on its own (a row the WebAssembly kernel left undecided), with the same operations as the batched loops, its exps in one batch (bit for bit exp()): prob, m and tail. */
function forwardRow(prob: Float64Array, logits: Float64Array, stats: Float64Array, r: number, V: number): void {
  const o = r * V;
  let m = -Infinity;
  for (let c = 0; c < V; c++) {
    const z = logits[o + c] as number;
    if (z > m) m = z;
  }
  // The row's exps in one batch (bit for bit exp(), see exp-batch.ts: most decided by the fast path, the rest by exp()).
  for (let c = 0; c < V; c++) prob[o + c] = (logits[o + c] as number) - m;
  expInto(prob, o, prob, o, V);
  let tail = 0;
  let skipped = false;
  for (let c = 0; c < V; c++) {
    const shifted = (logits[o + c] as number) - m;
    if (!skipped && shifted === 0) skipped = true;
    else tail += prob[o + c] as number;
  }
  stats[2 * r] = m;
  stats[2 * r + 1] = tail;
  const den = 1.0 + tail;
  for (let c = 0; c < V; c++) prob[o + c] = (prob[o + c] as number) / den + 0;
}

/**
 * Backward: `g = p` (minus 1.0 at the target) times `k = 1 / N`, canonical +0.
 *
 * @param dlogits - (rows, V) adjoint of the logits (written).
 * @param prob - (rows, V) forward probabilities.
 * @param targets - target ids, row r at `targets[tOff + r]`.
 * @param tOff - offset of the first target.
 * @param rows - number of rows.
 * @param V - vocabulary size.
 * @param k - `1.0 / N` (N = tokens in the whole batch), computed once.
 * @param ld - row stride of `dlogits` (default V; more for a kernel arena's padded rows, whose padding is not written).
 */
export function crossEntropyBackward(
  dlogits: Float64Array,
  prob: Float64Array,
  targets: ArrayLike<number>,
  tOff: number,
  rows: number,
  V: number,
  k: number,
  ld: number = V,
): void {
  if (ld === V && rows * V >= NATIVE_MIN && targets instanceof Int32Array) {
    const native = activeNativeKernels();
    if (native !== null && native.crossEntropyBackward(dlogits, prob, targets, tOff, rows, V, k) >= 0) return;
  }
  for (let r = 0; r < rows; r++) {
    const o = r * V;
    const od = r * ld;
    const y = targets[tOff + r] as number;
    for (let c = 0; c < V; c++) {
      const g = c === y ? (prob[o + c] as number) - 1.0 : (prob[o + c] as number);
      dlogits[od + c] = g * k + 0;
    }
  }
}
