/**
 * The elementwise part of the SwiGLU feed-forward (../../../../docs/spec/model.md §11; ../../../../docs/spec/backward.md
 * §4.6, §4.9): `silu(gate) · up`. The three projections around it are plain
 * matrix products.
 */
import { expInto } from './exp-batch.ts';

/**
 * Forward: branch-wise sigmoid, `silu = gate·σ`, `prod = silu·up`.
 *
 * @param prod - (n) output `silu · up`.
 * @param silu - (n) saved.
 * @param sigma - (n) saved sigmoid (also the scratch of the exp arguments: must not alias gate or up).
 * @param gate - (n) gate projection.
 * @param up - (n) up projection.
 * @param n - number of elements (rows · F).
 */
export function swigluForward(prod: Float64Array, silu: Float64Array, sigma: Float64Array, gate: Float64Array, up: Float64Array, n: number): void {
  // The exp arguments first (−x for x ≥ 0, else x: NaN takes the second branch), in sigma, then exp of all
  // of them in one batch, in place (bit for bit exp(), see exp-batch.ts).
  for (let i = 0; i < n; i++) {
    const x = gate[i] as number;
    sigma[i] = x >= 0 ? -x : x;
  }
  expInto(sigma, 0, sigma, 0, n);
  for (let i = 0; i < n; i++) {
    const x = gate[i] as number;
    const e = sigma[i] as number;
    // σ = 1/(1 + e) for x ≥ 0, e/(1 + e) otherwise: one division either way, its numerator chosen without a branch.
    const s = (x >= 0 ? 1.0 : e) / (1.0 + e);
    sigma[i] = s;
    const y = x * s;
    silu[i] = y;
    prod[i] = y * (up[i] as number);
  }
}

/**
 * Backward of `prod = silu(gate)·up`: `dsilu = 0 + dprod·up`,
 * `dup = 0 + dprod·silu`, `dgate = 0 + dsilu·σ·(1 + x·(1 − σ))`.
 *
 * @param dgate - (n) adjoint of the gate projection (written).
 * @param dup - (n) adjoint of the up projection (written).
 * @param dsilu - (n) adjoint of silu (written; kept for traces).
 * @param dprod - (n) adjoint of the product.
 * @param gate - (n) saved gate projection.
 * @param sigma - (n) saved sigmoid.
 * @param silu - (n) saved silu.
 * @param up - (n) saved up projection.
 * @param n - number of elements.
 */
export function swigluBackward(
  dgate: Float64Array,
  dup: Float64Array,
  dsilu: Float64Array,
  dprod: Float64Array,
  gate: Float64Array,
  sigma: Float64Array,
  silu: Float64Array,
  up: Float64Array,
  n: number,
): void {
  for (let i = 0; i < n; i++) {
    const u = dprod[i] as number;
    const ds = 0 + u * (up[i] as number);
    dsilu[i] = ds;
    dup[i] = 0 + u * (silu[i] as number);
    const s = sigma[i] as number;
    const local = s * (1.0 + (gate[i] as number) * (1.0 - s));
    dgate[i] = 0 + ds * local;
  }
}
