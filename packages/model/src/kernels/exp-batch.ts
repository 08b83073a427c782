/**
 * Batched e^x and ln x for the kernel sets: `out[outOff + i] = exp(x[xOff + i])`
 * for i < n, bit for bit the exp() of ../math/exp.ts (correctly rounded), for
 * the softmax and sigmoid loops of the forward pass; and batched ln
 * ({@link batchLn}) for RMSNorm's reciprocal roots.
 *
 * A batch kernel (native/exp.c through the addon, or the WebAssembly SIMD
 * kernel of wasm-exp.ts) runs the fast path of exp.ts on several lanes — the
 * same IEEE operations in the same order, no fused multiply-add, with
 * exp.ts's own constants and table ({@link expConstants}). Lanes it cannot
 * finish (out of range, NaN, ±Infinity, an inconclusive rounding test,
 * subnormal results, E = 1024) come back as undecided indices and are
 * computed here by exp() itself. Which kernel runs is the kernel set's
 * choice; without one it is a plain loop over exp().
 */
import { exp, expFastPathConstants } from '../math/exp.ts';
import { ln } from '../math/ln.ts';
import type { NativeAddon } from './native.ts';
import { wasmLnAvailable, wasmLnInto } from './wasm-ln.ts';

/**
 * A batch kernel: computes the lanes it can decide (`out[outOff + i]`, bit for
 * bit exp()) and writes the indices i of the others, ascending, to
 * `undecided[0 … count−1]`, leaving `out[outOff + i] = x[xOff + i]` for them
 * (so an in-place call keeps their arguments). `undecided` holds at least n.
 */
export type ExpBatchKernel = (out: Float64Array, outOff: number, x: Float64Array, xOff: number, n: number, undecided: Int32Array) => number;

/** Below this many elements the WebAssembly ln kernel is not called. */
const WASM_LN_MIN = 4;

/** ln2/128 in three parts and 128/ln2, then the 512-entry table (see {@link expConstants}). */
let constants: Float64Array | undefined;
/** Reusable undecided-index buffer (grown as needed). */
let undecided = new Int32Array(1024);

/**
 * A reusable buffer of at least `n` undecided indices (this thread's; its contents last until the next call).
 * @param n - indices needed.
 * @returns the buffer.
 */
export function undecidedIndices(n: number): Int32Array {
  if (undecided.length < n) undecided = new Int32Array(Math.max(n, 2 * undecided.length));
  return undecided;
}

/**
 * `out[outOff + i] = exp(x[xOff + i])` for `0 ≤ i < n`, bit for bit: through
 * `kernel`, its undecided lanes by exp(); or, with no kernel, a loop over
 * exp(). `out` and `x` may be the same elements (in place); other overlaps
 * are not allowed.
 *
 * @param kernel - a batch kernel, or null.
 * @param out - results.
 * @param outOff - offset of the first result.
 * @param x - arguments.
 * @param xOff - offset of the first argument.
 * @param n - number of elements.
 * @throws RangeError (native kernel) when a view is out of bounds or out and x overlap partially.
 */
export function batchExp(kernel: ExpBatchKernel | null, out: Float64Array, outOff: number, x: Float64Array, xOff: number, n: number): void {
  batched(kernel, exp, out, outOff, x, xOff, n);
}

/**
 * `out[outOff + i] = ln(x[xOff + i])` for `0 ≤ i < n`, bit for bit ln() of
 * ../math/ln.ts: the WebAssembly SIMD kernel (wasm-ln.ts) where it runs, the
 * lanes it leaves undecided (x ≤ 0, subnormal, NaN, ±Infinity, an
 * inconclusive rounding test) by ln() itself; else a loop over ln(). Same
 * aliasing rule as {@link batchExp}.
 *
 * @param out - results.
 * @param outOff - offset of the first result.
 * @param x - arguments.
 * @param xOff - offset of the first argument.
 * @param n - number of elements.
 */
export function batchLn(out: Float64Array, outOff: number, x: Float64Array, xOff: number, n: number): void {
  batched(n >= WASM_LN_MIN && wasmLnAvailable() ? wasmLnInto : null, ln, out, outOff, x, xOff, n);
}

/** `out[outOff + i] = f(x[xOff + i])` through a batch kernel of f (its undecided lanes by f itself), or a loop over f. */
function batched(kernel: ExpBatchKernel | null, f: (v: number) => number, out: Float64Array, outOff: number, x: Float64Array, xOff: number, n: number): void {
  if (kernel === null) {
    for (let i = 0; i < n; i++) out[outOff + i] = f(x[xOff + i] as number);
    return;
  }
  const und = undecidedIndices(n);
  const count = kernel(out, outOff, x, xOff, n, und);
  for (let k = 0; k < count; k++) {
    const i = und[k] as number;
    out[outOff + i] = f(x[xOff + i] as number);
  }
}

/**
 * The addon's exp as a batch kernel (with exp.ts's constants).
 * @param native - the addon.
 * @returns the kernel.
 */
export function nativeExpKernel(native: NativeAddon): ExpBatchKernel {
  const C = expConstants();
  return (out, outOff, x, xOff, n, und) => native.exp(out, outOff, x, xOff, n, und, C);
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
