/**
 * Batched e^x: `out[outOff + i] = exp(x[xOff + i])` for i < n, bit for bit the
 * exp() of ../math/exp.ts (correctly rounded), for the softmax and sigmoid
 * loops of the forward pass; and batched ln ({@link lnInto}) for RMSNorm's
 * reciprocal roots.
 *
 * With the native addon (native.ts) the fast path of exp.ts runs in C on 8, 4
 * or 1 lanes (native/exp.c) — the same IEEE operations in the same order, no
 * fused multiply-add, with exp.ts's own constants and table
 * ({@link expConstants}). Lanes the fast path cannot finish (out of range, NaN,
 * ±Infinity, an inconclusive rounding test, subnormal results, E = 1024) come
 * back as undecided indices and are computed here by exp() itself. Without the
 * addon the WebAssembly SIMD kernel (wasm-exp.ts: the same fast path in f64x2
 * lanes) does the same, and without WebAssembly SIMD it is a plain loop over
 * exp().
 */
import { exp, expFastPathConstants } from '../math/exp.ts';
import { ln } from '../math/ln.ts';
import { activeNativeKernels } from './native.ts';
import { wasmExpAvailable, wasmExpInto } from './wasm-exp.ts';
import { wasmLnAvailable, wasmLnInto } from './wasm-ln.ts';

/**
 * A batch kernel: computes the lanes it can decide (`out[outOff + i]`, bit for
 * bit exp()) and writes the indices i of the others, ascending, to
 * `undecided[0 … count−1]`, leaving `out[outOff + i] = x[xOff + i]` for them
 * (so an in-place call keeps their arguments). `undecided` holds at least n.
 */
export type ExpBatchKernel = (out: Float64Array, outOff: number, x: Float64Array, xOff: number, n: number, undecided: Int32Array) => number;

/** Below this many elements one native call (~0.3 µs) costs more than the exp() loop saves (~20 ns an element). */
const NATIVE_MIN = 32;
/** The WebAssembly kernel is a plain call: it pays from a few elements on (about 1.7× the loop at 4, 2× from 16). */
const WASM_MIN = 4;

/** ln2/128 in three parts and 128/ln2, then the 512-entry table (see {@link expConstants}). */
let constants: Float64Array | undefined;
/** Reusable undecided-index buffer (grown as needed). */
let undecided = new Int32Array(1024);

/**
 * `out[outOff + i] = exp(x[xOff + i])` for `0 ≤ i < n`, bit for bit. `out` and
 * `x` may be the same elements (in place); other overlaps are not allowed.
 *
 * @param out - results.
 * @param outOff - offset of the first result.
 * @param x - arguments.
 * @param xOff - offset of the first argument.
 * @param n - number of elements.
 * @throws RangeError (native path) when a view is out of bounds or out and x overlap partially.
 */
export function expInto(out: Float64Array, outOff: number, x: Float64Array, xOff: number, n: number): void {
  const kernel = batchKernel(n);
  if (kernel === null) {
    for (let i = 0; i < n; i++) out[outOff + i] = exp(x[xOff + i] as number);
    return;
  }
  if (undecided.length < n) undecided = new Int32Array(Math.max(n, 2 * undecided.length));
  const und = undecided;
  const count = kernel(out, outOff, x, xOff, n, und);
  for (let k = 0; k < count; k++) {
    const i = und[k] as number;
    out[outOff + i] = exp(x[xOff + i] as number);
  }
}

/**
 * `out[outOff + i] = ln(x[xOff + i])` for `0 ≤ i < n`, bit for bit ln() of
 * ../math/ln.ts: the WebAssembly SIMD kernel (wasm-ln.ts) where it runs, the
 * lanes it leaves undecided (x ≤ 0, subnormal, NaN, ±Infinity, an
 * inconclusive rounding test) by ln() itself; else a loop over ln(). Same
 * aliasing rule as {@link expInto}.
 *
 * @param out - results.
 * @param outOff - offset of the first result.
 * @param x - arguments.
 * @param xOff - offset of the first argument.
 * @param n - number of elements.
 */
export function lnInto(out: Float64Array, outOff: number, x: Float64Array, xOff: number, n: number): void {
  if (n < WASM_MIN || !wasmLnAvailable()) {
    for (let i = 0; i < n; i++) out[outOff + i] = ln(x[xOff + i] as number);
    return;
  }
  if (undecided.length < n) undecided = new Int32Array(Math.max(n, 2 * undecided.length));
  const und = undecided;
  const count = wasmLnInto(out, outOff, x, xOff, n, und);
  for (let k = 0; k < count; k++) {
    const i = und[k] as number;
    out[outOff + i] = ln(x[xOff + i] as number);
  }
}

let nativeKernel: ExpBatchKernel | undefined;
let nativeKernelOf: unknown;

/**
 * The batch kernel of this thread for a batch of n, or null for the exp() loop.
 * @param n - batch size (small batches are cheaper in the loop).
 * @returns the kernel or null.
 */
function batchKernel(n: number): ExpBatchKernel | null {
  const native = activeNativeKernels();
  if (native !== null) {
    if (n < NATIVE_MIN) return null;
    if (nativeKernelOf !== native || nativeKernel === undefined) {
      const C = expConstants();
      nativeKernel = (out, outOff, x, xOff, n, und) => native.exp(out, outOff, x, xOff, n, und, C);
      nativeKernelOf = native;
    }
    return nativeKernel;
  }
  return n >= WASM_MIN && wasmExpAvailable() ? wasmExpInto : null;
}

/**
 * The constants of exp.ts's fast path, in the layout native/exp.c reads:
 * `[L1, L2, L3, INV_L, T[0 … 511]]` with ln2/128 = L1 + L2 + L3, INV_L =
 * 128/ln2 and T[4j … 4j+3] = Th, Tl and the Veltkamp halves of Th (taken from
 * exp.ts itself, so they are the very doubles exp() uses). The other literals
 * (SHIFTER, SPLITTER, ERR, C3 … C6) are written in exp.c as the same decimal
 * strings.
 *
 * @returns the shared array (do not modify).
 */
export function expConstants(): Float64Array {
  if (constants !== undefined) return constants;
  const k = expFastPathConstants();
  const c = new Float64Array(4 + k.T.length);
  c[0] = k.L1;
  c[1] = k.L2;
  c[2] = k.L3;
  c[3] = k.INV_L;
  c.set(k.T, 4);
  constants = c;
  return c;
}
