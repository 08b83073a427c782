/**
 * RMSNorm with the reference's reciprocal root `exp(−½·ln(ms + eps))`
 * (../../../../docs/spec/model.md §7; ../../../../docs/spec/backward.md §4.6–4.8 and §5 "RMSNorm backward").
 */
import { expInto, lnInto } from './exp-batch.ts';
import { activeNativeKernels } from './native.ts';
import { disjointViews } from './wasm-assembler.ts';
import { wasmRmsNormBackward, wasmRmsNormScale, wasmRmsNormSums } from './wasm-rmsnorm.ts';

/** Below this many elements (rows · D) a native call does not pay. */
const NATIVE_MIN = 256;

/** What the forward pass of one norm call saves (each buffer holds at least `rows` rows). */
export interface NormForwardValues {
  /** (rows, D) gained output `normalized · g`. */
  readonly out: Float64Array;
  /** (rows, D) `x · inv`, saved for the backward pass. */
  readonly normalized: Float64Array;
  /** (rows) reciprocal root. */
  readonly inv: Float64Array;
  /** (rows) `ms + eps` (the log rule divides by it). */
  readonly st: Float64Array;
  /** (rows) mean square, saved for traces. */
  readonly ms: Float64Array;
}

/** Saved forward values of one norm call and its backward scratch. */
export interface NormActivations extends NormForwardValues {
  /** (rows, D) backward: adjoint of `normalized`, `0 + u · g`. */
  readonly dnormalized: Float64Array;
  /** (rows, 5) backward: adjoints of inv, of `ln(st)·(−½)`, of `ln(st)`, of `st` (= of ms), and of each square element (`dms / D`). */
  readonly rowAdjoints: Float64Array;
}

/**
 * Forward over `rows` rows of width D.
 *
 * @param norm - where the output and the saved values go.
 * @param x - (rows, D) input.
 * @param gain - (D) the gain (a view of the parameters).
 * @param rows - number of rows.
 * @param D - width.
 * @param eps - epsilon.
 */
export function rmsNormForward(norm: NormForwardValues, x: Float64Array, gain: Float64Array, rows: number, D: number, eps: number): void {
  const { out, normalized, inv, st, ms } = norm;
  // The row loops in C when the addon runs (native/elementwise.c; the same operations in the same order).
  const native = rows * D >= NATIVE_MIN ? activeNativeKernels() : null;
  // WebAssembly SIMD in place when the arrays are views of one kernel arena (wasm-rmsnorm.ts: the same operations in the same order).
  const wasm = activeNativeKernels() === null && disjointViews([out, normalized, inv, st, ms, x, gain]);
  if (native === null || native.rmsNormSums(ms, st, x, rows, D, eps) < 0) {
    if (wasm && wasmRmsNormSums(ms, x, rows, D)) for (let r = 0; r < rows; r++) st[r] = (ms[r] as number) + eps;
    else rowSums(ms, st, x, rows, D, eps);
  }
  // iv = exp(ln(t)·(−½)) per row, each step batched over the rows (inv holds the intermediate values).
  lnInto(inv, 0, st, 0, rows);
  for (let r = 0; r < rows; r++) inv[r] = (inv[r] as number) * -0.5;
  expInto(inv, 0, inv, 0, rows);
  if (native !== null && native.rmsNormScale(out, normalized, x, gain, inv, rows, D) >= 0) return;
  if (wasm && wasmRmsNormScale(out, normalized, x, gain, inv, rows, D)) return;
  for (let r = 0; r < rows; r++) {
    const o = r * D;
    const iv = inv[r] as number;
    for (let c = 0; c < D; c++) {
      const n = (x[o + c] as number) * iv;
      normalized[o + c] = n;
      out[o + c] = n * (gain[c] as number);
    }
  }
}

/** The forward's mean squares and `ms + eps`, row by row. */
function rowSums(ms: Float64Array, st: Float64Array, x: Float64Array, rows: number, D: number, eps: number): void {
  for (let r = 0; r < rows; r++) {
    const o = r * D;
    let s = 0;
    for (let c = 0; c < D; c++) {
      const v = x[o + c] as number;
      s += v * v;
    }
    const m = s / D;
    ms[r] = m;
    st[r] = m + eps;
  }
}

/**
 * Backward: adds the normalize contribution and then the two square
 * contributions to `dx` (which already holds the adjoint from later consumers,
 * e.g. the residual), and writes the gain's per-row terms `u · normalized`
 * (summed over the whole batch in row-major order by the caller).
 *
 * @param dx - (rows, D) adjoint of x, accumulated into.
 * @param gainTerms - (rows, D) out: `u[r, c] · normalized[r, c]`.
 * @param norm - the forward's saved values; its `dnormalized` and `rowAdjoints` are written.
 * @param u - (rows, D) adjoint of the gained output.
 * @param x - (rows, D) forward input.
 * @param gain - (D) the gain.
 * @param rows - number of rows.
 * @param D - width.
 */
export function rmsNormBackward(
  dx: Float64Array,
  gainTerms: Float64Array,
  norm: NormActivations,
  u: Float64Array,
  x: Float64Array,
  gain: Float64Array,
  rows: number,
  D: number,
): void {
  const { normalized, inv, st, dnormalized, rowAdjoints } = norm;
  const native = rows * D >= NATIVE_MIN ? activeNativeKernels() : null;
  if (native !== null && native.rmsNormBackward(dx, gainTerms, normalized, inv, st, dnormalized, rowAdjoints, u, x, gain, rows, D) >= 0) return;
  // WebAssembly SIMD in place when every array but the gain terms is a view of one kernel arena (wasm-rmsnorm.ts: the same operations in the same order).
  if (
    activeNativeKernels() === null &&
    disjointViews([dx, dnormalized, rowAdjoints, u, x, gain, inv, st]) &&
    wasmRmsNormBackward(dx, dnormalized, rowAdjoints, u, x, gain, inv, st, rows, D)
  ) {
    for (let i = 0; i < rows * D; i++) gainTerms[i] = (u[i] as number) * (normalized[i] as number);
    return;
  }
  for (let r = 0; r < rows; r++) {
    const o = r * D;
    const iv = inv[r] as number;
    let di = 0;
    for (let c = 0; c < D; c++) {
      const uc = u[o + c] as number;
      gainTerms[o + c] = uc * (normalized[o + c] as number);
      const dn = 0 + uc * (gain[c] as number);
      dnormalized[o + c] = dn;
      di += dn * (x[o + c] as number);
    }
    // exp rule (u·y), constant −0.5, log rule (u / x), add (+eps), mean (/ D): each adjoint is "0 + contribution".
    const dsl = 0 + di * iv;
    const dlg = 0 + dsl * -0.5;
    const dst = 0 + dlg / (st[r] as number);
    const d2 = 0 + dst / D;
    const ra = r * 5;
    rowAdjoints[ra] = di;
    rowAdjoints[ra + 1] = dsl;
    rowAdjoints[ra + 2] = dlg;
    rowAdjoints[ra + 3] = dst;
    rowAdjoints[ra + 4] = d2;
    for (let c = 0; c < D; c++) {
      const xc = x[o + c] as number;
      const sq = d2 * xc;
      dx[o + c] = (dx[o + c] as number) + (dnormalized[o + c] as number) * iv + sq + sq;
    }
  }
}
