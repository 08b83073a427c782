/**
 * The flags of the matrix product `C (=|+=) A · B` (gemm.ts), the one home of
 * their values for every kernel that reads them: the JavaScript loops, the
 * WebAssembly kernel (wasm-gemm.ts) and the native addon, whose
 * native/kernels.c defines the same numbers as `F_*` and reports them
 * (`gemmFlags`): native.ts refuses an addon whose values differ.
 */

/** `C = C + A·B` (the contribution is summed from +0.0 first, then added): "previous + contribution" of the tape. */
export const GEMM_ADD = 1;
/**
 * Causal output: row i needs only columns j ≤ i. The entries above the
 * diagonal are left unspecified (whole column blocks are computed, and the
 * SIMD path copies its scratch back); callers must never read them.
 */
export const GEMM_LOWER_OUT = 2;
/**
 * Causal contraction from the start: row i contracts k ≤ i only. Rows are
 * processed in blocks, so a few terms with k > i are included; they must be
 * exactly +0.0 in A (masked probabilities), which leaves every sum unchanged
 * (an accumulator started at +0.0 is never −0.0, and x + ±0 = x).
 */
export const GEMM_LOWER_K = 4;
/**
 * Causal contraction to the end: row i contracts k ≥ i only; terms with k < i
 * inside a row block must be exactly +0.0 in A (see {@link GEMM_LOWER_K}).
 */
export const GEMM_UPPER_K = 8;
/** A is stored transposed, [K, M]: A[i, k] at `aOff + k·lda + i` (a weight gradient's activation read as it is). */
export const GEMM_TRANS_A = 16;

/** Every flag by the name the addon reports it under (native/kernels.c `gemmFlags`). */
export const GEMM_FLAGS: Readonly<Record<'add' | 'lowerOut' | 'lowerK' | 'upperK' | 'transA', number>> = {
  add: GEMM_ADD,
  lowerOut: GEMM_LOWER_OUT,
  lowerK: GEMM_LOWER_K,
  upperK: GEMM_UPPER_K,
  transA: GEMM_TRANS_A,
};
