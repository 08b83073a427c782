/**
 * Diagnostic counters of the WebAssembly matrix-product path of this thread
 * (gemm.ts, kernel-arena.ts, the decoder pass): how many f64 values were
 * copied into or out of a kernel's memory around products, and how often a
 * product fell back to the scalar kernel because its copies did not fit a
 * fixed kernel memory; and how many values the WebAssembly SwiGLU kernels
 * copied through their own memory (wasm-swiglu.ts; none for arrays in a kernel
 * arena). For tests and benchmarks; counting costs one addition per product
 * or chunk.
 */

/** The counters (mutable; reset with {@link resetGemmCounters}). */
export interface GemmCounters {
  /** Operand values (A, B, and C of an accumulating product) copied into a kernel memory. */
  operandsIn: number;
  /** Result values copied out of a kernel memory. */
  resultsOut: number;
  /** Products run on the scalar kernel because a fixed kernel memory had no room for their copies. */
  scalarFallbacks: number;
  /** Weight-gradient values copied between the decoder pass's resident accumulator and the gradient slots. */
  gradientValues: number;
  /** Parameter values copied into a kernel arena (the decoder pass's resident snapshot, once per parameter version). */
  parameterValues: number;
  /** Bytes of the kernel arena memories opened on this thread. */
  arenaBytes: number;
  /**
   * Values copied into or out of the WebAssembly element-wise kernels' own memory (SwiGLU, the cross-entropy
   * forward: arrays outside a kernel arena; the attention softmax's batched exp when its kernel declines).
   */
  elementwiseValues: number;
  /** Elements the WebAssembly SwiGLU, cross-entropy, attention softmax and RMSNorm kernels computed in place in a kernel arena (nothing copied). */
  elementwiseInPlace: number;
  /** Weight values the WebAssembly transpose moved in place in a kernel arena (wasm-transpose.ts: the decoder pass's transposed weights). */
  transposedInPlace: number;
  /** Products whose lower rows this thread offered to another thread (gemm.ts `setProductOffer`; parallel/help.ts). */
  offeredProducts: number;
}

/** This thread's counters. */
export const gemmCounters: GemmCounters = { operandsIn: 0, resultsOut: 0, scalarFallbacks: 0, gradientValues: 0, parameterValues: 0, arenaBytes: 0, elementwiseValues: 0, elementwiseInPlace: 0, transposedInPlace: 0, offeredProducts: 0 };

/** Sets every counter of this thread to 0. */
export function resetGemmCounters(): void {
  gemmCounters.operandsIn = 0;
  gemmCounters.resultsOut = 0;
  gemmCounters.scalarFallbacks = 0;
  gemmCounters.gradientValues = 0;
  gemmCounters.parameterValues = 0;
  gemmCounters.arenaBytes = 0;
  gemmCounters.elementwiseValues = 0;
  gemmCounters.elementwiseInPlace = 0;
  gemmCounters.transposedInPlace = 0;
  gemmCounters.offeredProducts = 0;
}
