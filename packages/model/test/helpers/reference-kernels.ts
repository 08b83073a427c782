/**
 * Straightforward one-element-at-a-time definitions of the element-wise
 * kernels, for the bit-identity tests of the vectorised ones
 * (../../../../docs/spec/model.md §13 for the cross-entropy).
 */
import { exp } from '../../src/math/exp.ts';
import { log1p } from '../../src/math/index.ts';

/**
 * The cross-entropy forward by its definition: per row the maximum m, the
 * shifted exps, the tail (every exp but the first one whose shift is 0, in
 * column order), `loss = m − z[target] + log1p(tail)` and `prob = e/(1+tail) + 0`.
 *
 * @param logits - (rows, V) row-major.
 * @param targets - target ids; row r's at `targets[tOff + r]`.
 * @param tOff - offset of row 0's target.
 * @param rows - rows.
 * @param V - vocabulary size.
 * @returns the row losses and the probabilities.
 */
export function referenceCrossEntropy(logits: Float64Array, targets: ArrayLike<number>, tOff: number, rows: number, V: number): { rowLoss: Float64Array; prob: Float64Array } {
  const rowLoss = new Float64Array(rows);
  const prob = new Float64Array(rows * V);
  for (let r = 0; r < rows; r++) {
    const o = r * V;
    let m = -Infinity;
    for (let c = 0; c < V; c++) if (logits[o + c]! > m) m = logits[o + c]!;
    let tail = 0;
    let skipped = false;
    for (let c = 0; c < V; c++) {
      const shifted = logits[o + c]! - m;
      const e = exp(shifted);
      prob[o + c] = e;
      if (!skipped && shifted === 0) skipped = true;
      else tail += e;
    }
    rowLoss[r] = m - logits[o + targets[tOff + r]!]! + log1p(tail);
    for (let c = 0; c < V; c++) prob[o + c] = prob[o + c]! / (1.0 + tail) + 0;
  }
  return { rowLoss, prob };
}
