/**
 * The matrix product in JavaScript: `C (=|+=) A · B` on views (or `Aᵀ · B`
 * with A stored transposed), with the flags of gemm-flags.ts — the product of
 * the kernel sets when no faster kernel takes it (small products, a fixed
 * memory without room for copies), and the tests' yardstick for the
 * WebAssembly and native kernels.
 *
 * Every output element is an independent dot product accumulated from +0.0 in
 * increasing order of the contracted index k (../../../../docs/spec/model.md §8).
 * The 4 × 4 register blocks only change which dot products run side by side,
 * never the order of the additions inside one of them, so the bits equal the
 * naive triple loop's.
 *
 * Reference: llm.c `matmul_forward` (the loop-tiling idea; here with a fixed
 * summation order instead of OpenMP reductions).
 */
import type { Matrix } from '../reference/matrix.ts';
import { GEMM_ADD, GEMM_LOWER_K, GEMM_LOWER_OUT, GEMM_TRANS_A, GEMM_UPPER_K } from './gemm-flags.ts';

/** Scratch for A under {@link GEMM_TRANS_A}, transposed first (this thread's, grown as needed). */
let transposed = new Float64Array(0);

/**
 * `c[i, j] (=|+=) Σ_k a[i, k]·b[k, j]` for the rows and columns of c, k in
 * increasing order from +0.0 (with {@link GEMM_TRANS_A}: `a` is stored
 * transposed, `a[k, i]`; with {@link GEMM_ADD}: the sum is added to c; the
 * causal flags restrict j or k, see gemm-flags.ts).
 *
 * @param c - (M, N) output.
 * @param a - (M, K) left operand, or (K, M) with {@link GEMM_TRANS_A}.
 * @param b - (K, N) right operand.
 * @param flags - bitwise OR of the flags of gemm-flags.ts.
 */
export function gemmJs(c: Matrix, a: Matrix, b: Matrix, flags: number): void {
  if ((flags & GEMM_TRANS_A) === 0) {
    blocked(c, a, b, flags);
    return;
  }
  const K = a.rows;
  const M = a.columns;
  if (transposed.length < M * K) transposed = new Float64Array(M * K);
  transpose({ data: transposed, offset: 0, rows: M, columns: K, stride: K }, a);
  blocked(c, { data: transposed, offset: 0, rows: M, columns: K, stride: K }, b, flags & ~GEMM_TRANS_A);
}

/** {@link gemmJs} on A as stored: 4 × 4 register blocks, each accumulator one output's in-order dot product; leftover rows four columns at a time. */
function blocked(c: Matrix, a: Matrix, b: Matrix, flags: number): void {
  const { data: C, offset: cOff, stride: ldc, rows: M, columns: N } = c;
  const { data: A, offset: aOff, stride: lda, columns: K } = a;
  const { data: B, offset: bOff, stride: ldb } = b;
  const add = (flags & GEMM_ADD) !== 0;
  const lowerOut = (flags & GEMM_LOWER_OUT) !== 0;
  const lowerK = (flags & GEMM_LOWER_K) !== 0;
  const upperK = (flags & GEMM_UPPER_K) !== 0;
  let i = 0;
  for (; i + 3 < M; i += 4) {
    const jEnd = lowerOut ? Math.min(N, i + 4) : N;
    const kBeg = upperK ? i : 0;
    const kEnd = lowerK ? Math.min(K, i + 4) : K;
    const a0 = aOff + i * lda;
    const a1 = a0 + lda;
    const a2 = a1 + lda;
    const a3 = a2 + lda;
    const c0 = cOff + i * ldc;
    const c1 = c0 + ldc;
    const c2 = c1 + ldc;
    const c3 = c2 + ldc;
    let j = 0;
    for (; j + 3 < jEnd; j += 4) {
      let s00 = 0, s01 = 0, s02 = 0, s03 = 0;
      let s10 = 0, s11 = 0, s12 = 0, s13 = 0;
      let s20 = 0, s21 = 0, s22 = 0, s23 = 0;
      let s30 = 0, s31 = 0, s32 = 0, s33 = 0;
      let bk = bOff + kBeg * ldb + j;
      for (let k = kBeg; k < kEnd; k++) {
        const w0 = B[bk] as number;
        const w1 = B[bk + 1] as number;
        const w2 = B[bk + 2] as number;
        const w3 = B[bk + 3] as number;
        bk += ldb;
        let x = A[a0 + k] as number;
        s00 += x * w0; s01 += x * w1; s02 += x * w2; s03 += x * w3;
        x = A[a1 + k] as number;
        s10 += x * w0; s11 += x * w1; s12 += x * w2; s13 += x * w3;
        x = A[a2 + k] as number;
        s20 += x * w0; s21 += x * w1; s22 += x * w2; s23 += x * w3;
        x = A[a3 + k] as number;
        s30 += x * w0; s31 += x * w1; s32 += x * w2; s33 += x * w3;
      }
      if (add) {
        (C[c0 + j] as number) += s00; (C[c0 + j + 1] as number) += s01; (C[c0 + j + 2] as number) += s02; (C[c0 + j + 3] as number) += s03;
        (C[c1 + j] as number) += s10; (C[c1 + j + 1] as number) += s11; (C[c1 + j + 2] as number) += s12; (C[c1 + j + 3] as number) += s13;
        (C[c2 + j] as number) += s20; (C[c2 + j + 1] as number) += s21; (C[c2 + j + 2] as number) += s22; (C[c2 + j + 3] as number) += s23;
        (C[c3 + j] as number) += s30; (C[c3 + j + 1] as number) += s31; (C[c3 + j + 2] as number) += s32; (C[c3 + j + 3] as number) += s33;
      } else {
        C[c0 + j] = s00; C[c0 + j + 1] = s01; C[c0 + j + 2] = s02; C[c0 + j + 3] = s03;
        C[c1 + j] = s10; C[c1 + j + 1] = s11; C[c1 + j + 2] = s12; C[c1 + j + 3] = s13;
        C[c2 + j] = s20; C[c2 + j + 1] = s21; C[c2 + j + 2] = s22; C[c2 + j + 3] = s23;
        C[c3 + j] = s30; C[c3 + j + 1] = s31; C[c3 + j + 2] = s32; C[c3 + j + 3] = s33;
      }
    }
    for (; j < jEnd; j++) {
      let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      let bk = bOff + kBeg * ldb + j;
      for (let k = kBeg; k < kEnd; k++) {
        const w = B[bk] as number;
        bk += ldb;
        s0 += (A[a0 + k] as number) * w;
        s1 += (A[a1 + k] as number) * w;
        s2 += (A[a2 + k] as number) * w;
        s3 += (A[a3 + k] as number) * w;
      }
      if (add) {
        (C[c0 + j] as number) += s0; (C[c1 + j] as number) += s1; (C[c2 + j] as number) += s2; (C[c3 + j] as number) += s3;
      } else {
        C[c0 + j] = s0; C[c1 + j] = s1; C[c2 + j] = s2; C[c3 + j] = s3;
      }
    }
  }
  for (; i < M; i++) {
    const jEnd = lowerOut ? Math.min(N, i + 1) : N;
    const kBeg = upperK ? i : 0;
    const kEnd = lowerK ? Math.min(K, i + 1) : K;
    const a0 = aOff + i * lda;
    const c0 = cOff + i * ldc;
    let j = 0;
    // Four outputs of the row at a time (one row times a matrix: cached decoding), each its own accumulator.
    for (; j + 3 < jEnd; j += 4) {
      let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      let bk = bOff + kBeg * ldb + j;
      for (let k = kBeg; k < kEnd; k++) {
        const x = A[a0 + k] as number;
        s0 += x * (B[bk] as number);
        s1 += x * (B[bk + 1] as number);
        s2 += x * (B[bk + 2] as number);
        s3 += x * (B[bk + 3] as number);
        bk += ldb;
      }
      if (add) {
        (C[c0 + j] as number) += s0; (C[c0 + j + 1] as number) += s1; (C[c0 + j + 2] as number) += s2; (C[c0 + j + 3] as number) += s3;
      } else {
        C[c0 + j] = s0; C[c0 + j + 1] = s1; C[c0 + j + 2] = s2; C[c0 + j + 3] = s3;
      }
    }
    for (; j < jEnd; j++) {
      let s = 0;
      let bk = bOff + kBeg * ldb + j;
      for (let k = kBeg; k < kEnd; k++) {
        s += (A[a0 + k] as number) * (B[bk] as number);
        bk += ldb;
      }
      if (add) (C[c0 + j] as number) += s;
      else C[c0 + j] = s;
    }
  }
}

/**
 * `dst[s, r] = src[r, s]`: values moved, never computed, so the bits are
 * those of any order. Eight source rows at a time: each column of such a
 * band is written as eight adjacent values of one destination row, so every
 * cache line written is filled at once (a row at a time, each store would
 * land on another line; about 4× slower on the decoder's weights).
 *
 * @param dst - (S, R) destination.
 * @param src - (R, S) source.
 */
export function transpose(dst: Matrix, src: Matrix): void {
  const { data: D, offset: dOff, stride: ldd } = dst;
  const { data: S0, offset: sOff, stride: lds, rows: R, columns: S } = src;
  let r = 0;
  for (; r + 7 < R; r += 8) {
    const s0 = sOff + r * lds;
    let d = dOff + r;
    for (let s = 0; s < S; s++) {
      let i = s0 + s;
      D[d] = S0[i] as number;
      i += lds;
      D[d + 1] = S0[i] as number;
      i += lds;
      D[d + 2] = S0[i] as number;
      i += lds;
      D[d + 3] = S0[i] as number;
      i += lds;
      D[d + 4] = S0[i] as number;
      i += lds;
      D[d + 5] = S0[i] as number;
      i += lds;
      D[d + 6] = S0[i] as number;
      i += lds;
      D[d + 7] = S0[i] as number;
      d += ldd;
    }
  }
  for (; r < R; r++) {
    const s0 = sOff + r * lds;
    let d = dOff + r;
    for (let s = 0; s < S; s++) {
      D[d] = S0[s0 + s] as number;
      d += ldd;
    }
  }
}
