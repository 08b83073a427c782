/**
 * The elementwise part of the SwiGLU feed-forward (../../../../docs/spec/model.md §11; ../../../../docs/spec/backward.md
 * §4.6, §4.9): `silu(gate) · up`. The three projections around it are plain
 * matrix products.
 */
import { exp } from '../math/exp.ts';
import { expConstants, expInto } from './exp-batch.ts';
import { activeNativeKernels } from './native.ts';
import { disjointViews } from './wasm-assembler.ts';
import { wasmSwigluBackward, wasmSwigluForward } from './wasm-swiglu.ts';

/** Below this many elements the native call (~0.3 µs) does not pay. */
const NATIVE_MIN = 64;
/** Below this many elements the WebAssembly kernel's copies (arrays outside a kernel arena) do not pay. */
const WASM_MIN = 8;
/** Reusable undecided-index buffer of the native forward (grown as needed). */
let undecided = new Int32Array(1024);

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
  const native = activeNativeKernels();
  if (native !== null && n >= NATIVE_MIN) {
    // The same loops in C, in L1-sized blocks (native/elementwise.c); the elements whose exp it left undecided
    // are finished here, the TypeScript way (exp() itself).
    if (undecided.length < n) undecided = new Int32Array(Math.max(n, 2 * undecided.length));
    const und = undecided;
    const count = native.swigluForward(prod, silu, sigma, gate, up, n, und, expConstants());
    if (count >= 0) {
      for (let k = 0; k < count; k++) forwardElement(prod, silu, sigma, gate, up, und[k] as number);
      return;
    }
  } else if (native === null && n >= WASM_MIN && disjointViews([prod, silu, sigma, gate, up])) {
    // One WebAssembly SIMD pass (wasm-swiglu.ts: in place when every array is a view of one kernel arena, else
    // chunks copied in, computed, copied out; the arrays must not share elements), the undecided elements (and,
    // in place, the last of an odd n) finished here.
    if (undecided.length < n) undecided = new Int32Array(Math.max(n, 2 * undecided.length));
    const und = undecided;
    const count = wasmSwigluForward(prod, silu, sigma, gate, up, n, und);
    if (count >= 0) {
      for (let k = 0; k < count; k++) forwardElement(prod, silu, sigma, gate, up, und[k] as number);
      return;
    }
  }
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

/** One element of {@link swigluForward}, with exp() (the same operations as the batched loops). */
function forwardElement(prod: Float64Array, silu: Float64Array, sigma: Float64Array, gate: Float64Array, up: Float64Array, i: number): void {
  const x = gate[i] as number;
  const e = exp(x >= 0 ? -x : x);
  const s = (x >= 0 ? 1.0 : e) / (1.0 + e);
  sigma[i] = s;
  const y = x * s;
  silu[i] = y;
  prod[i] = y * (up[i] as number);
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
  const native = activeNativeKernels();
  let done = 0;
  if (native !== null) {
    if (n >= NATIVE_MIN && native.swigluBackward(dgate, dup, dsilu, dprod, gate, sigma, silu, up, n) >= 0) return;
  } else if (n >= WASM_MIN && disjointViews([dgate, dup, dsilu, dprod, gate, sigma, silu, up])) {
    // WebAssembly SIMD (wasm-swiglu.ts): all of them, or all but the last of an odd n in a kernel arena.
    done = Math.max(0, wasmSwigluBackward(dgate, dup, dsilu, dprod, gate, sigma, silu, up, n));
  }
  for (let i = done; i < n; i++) {
    const u = dprod[i] as number;
    const ds = 0 + u * (up[i] as number);
    dsilu[i] = ds;
    dup[i] = 0 + u * (silu[i] as number);
    const s = sigma[i] as number;
    const local = s * (1.0 + (gate[i] as number) * (1.0 - s));
    dgate[i] = 0 + ds * local;
  }
}
