/**
 * RMSNorm with the reference's reciprocal root `exp(−½·ln(ms + eps))`
 * (../../../../docs/spec/model.md §7; ../../../../docs/spec/backward.md §4.6–4.8 and §5 "RMSNorm backward").
 */
import { exp, ln } from '../math/index.ts';

/**
 * Forward over `rows` rows of width D.
 *
 * @param out - (rows, D) gained output `normalized · g`.
 * @param normalized - (rows, D) `x · inv`, saved for the backward pass.
 * @param inv - (rows) reciprocal root, saved.
 * @param st - (rows) `ms + eps`, saved (the log rule divides by it).
 * @param ms - (rows) mean square, saved for traces.
 * @param x - (rows, D) input.
 * @param params - flat parameters.
 * @param gOff - offset of the gain (D) in `params`.
 * @param rows - number of rows.
 * @param D - width.
 * @param eps - epsilon.
 */
export function rmsNormForward(
  out: Float64Array,
  normalized: Float64Array,
  inv: Float64Array,
  st: Float64Array,
  ms: Float64Array,
  x: Float64Array,
  params: Float64Array,
  gOff: number,
  rows: number,
  D: number,
  eps: number,
): void {
  for (let r = 0; r < rows; r++) {
    const o = r * D;
    let s = 0;
    for (let c = 0; c < D; c++) {
      const v = x[o + c];
      s += v * v;
    }
    const m = s / D;
    const t = m + eps;
    const iv = exp(ln(t) * -0.5);
    ms[r] = m;
    st[r] = t;
    inv[r] = iv;
    for (let c = 0; c < D; c++) {
      const n = x[o + c] * iv;
      normalized[o + c] = n;
      out[o + c] = n * params[gOff + c];
    }
  }
}

/**
 * Backward: adds the normalize contribution and then the two square
 * contributions to `dx` (which already holds the adjoint from later consumers,
 * e.g. the residual), and writes the gain's per-row terms `u · normalized`
 * (summed over the whole batch in row-major order by the caller).
 *
 * @param dx - (rows, D) adjoint of x, accumulated into.
 * @param gainTerms - (rows, D) `u[r, c] · normalized[r, c]`, from offset `gtOff`.
 * @param gtOff - offset of the first gain term.
 * @param dnormalized - (rows, D) scratch/trace: adjoint of the normalized value, `0 + u · g`.
 * @param rowAdjoints - (rows, 5) trace: adjoints of inv, of `ln(st)·(−½)`, of `ln(st)`, of `st` (= of ms), and of each square element (`dms / D`).
 * @param u - (rows, D) adjoint of the gained output.
 * @param x - (rows, D) forward input.
 * @param normalized - (rows, D) saved.
 * @param inv - (rows) saved.
 * @param st - (rows) saved.
 * @param params - flat parameters.
 * @param gOff - offset of the gain.
 * @param rows - number of rows.
 * @param D - width.
 */
export function rmsNormBackward(
  dx: Float64Array,
  gainTerms: Float64Array,
  gtOff: number,
  dnormalized: Float64Array,
  rowAdjoints: Float64Array,
  u: Float64Array,
  x: Float64Array,
  normalized: Float64Array,
  inv: Float64Array,
  st: Float64Array,
  params: Float64Array,
  gOff: number,
  rows: number,
  D: number,
): void {
  for (let r = 0; r < rows; r++) {
    const o = r * D;
    const iv = inv[r];
    let di = 0;
    for (let c = 0; c < D; c++) {
      const uc = u[o + c];
      gainTerms[gtOff + o + c] = uc * normalized[o + c];
      const dn = 0 + uc * params[gOff + c];
      dnormalized[o + c] = dn;
      di += dn * x[o + c];
    }
    // exp rule (u·y), constant −0.5, log rule (u / x), add (+eps), mean (/ D): each adjoint is "0 + contribution".
    const dsl = 0 + di * iv;
    const dlg = 0 + dsl * -0.5;
    const dst = 0 + dlg / st[r];
    const d2 = 0 + dst / D;
    const ra = r * 5;
    rowAdjoints[ra] = di;
    rowAdjoints[ra + 1] = dsl;
    rowAdjoints[ra + 2] = dlg;
    rowAdjoints[ra + 3] = dst;
    rowAdjoints[ra + 4] = d2;
    for (let c = 0; c < D; c++) {
      const xc = x[o + c];
      const sq = d2 * xc;
      dx[o + c] = dx[o + c] + dnormalized[o + c] * iv + sq + sq;
    }
  }
}
