/**
 * The one matrix-product kernel of the decoder: `C = A · B` with A row-major
 * [M, K] and B row-major [K, N].
 *
 * Every output element is an independent dot product accumulated from +0.0 in
 * increasing order of the contracted index k (../../../../docs/spec/model.md §1 "sum in order", §8).
 * Blocking and vector lanes only change which dot products run side by side,
 * never the order of the additions inside one of them, so the bits equal the
 * naive triple loop. Two implementations give identical bits: a WebAssembly
 * SIMD kernel (wasm-gemm.ts, ~4× faster) used whenever the runtime supports
 * it, and the register-blocked scalar loop below (and the native kernels,
 * native.ts, when they are active).
 *
 * The SIMD kernel reads and writes its own memory. Operands that already live
 * there — views of a kernel arena (kernel-arena.ts: the decoder pass keeps its
 * activations, adjoints, weights and gradient accumulator in one) — are used
 * where they are, as A, B or C; the others are copied into scratch after
 * the arena (or after the pinned operands of the thread's default instance),
 * and a non-resident C back out. internal/gemm-counters.ts counts the copies.
 *
 * Reference: llm.c `matmul_forward` (the loop-tiling idea; here with a fixed
 * summation order instead of OpenMP reductions).
 */
import { gemmCounters } from '../internal/gemm-counters.ts';
import { GEMM_ADD, GEMM_LOWER_K, GEMM_LOWER_OUT, GEMM_TRANS_A as TRANS_A, GEMM_UPPER_K } from './gemm-flags.ts';
import { openKernelArena, residentKernel, type KernelArena, type SharedArenaMemory } from './kernel-arena.ts';
import { activeNativeKernels, type NativeAddon } from './native.ts';
import { createWasmGemm, ensureWasmCapacity, type WasmGemm } from './wasm-gemm.ts';

/**
 * Which implementation {@link gemm} uses: 'auto' — the SIMD kernel for
 * products large enough to pay for the copies, when the runtime has
 * WebAssembly SIMD; 'scalar' — always the JavaScript loop; 'simd' — the SIMD
 * kernel for every product (when available). All three give identical bits.
 */
export type GemmBackend = 'auto' | 'scalar' | 'simd';

let backend: GemmBackend = 'auto';
let wasm: WasmGemm | null | undefined;

/**
 * Another thread that may compute part of a product meanwhile
 * (parallel/help.ts: a thread with no sequence left in a training phase).
 * Element offsets are into the memory whose buffer is {@link buffer}.
 */
export interface ProductOffer {
  /** The buffer of the memory an offered product's operands must all be in. */
  readonly buffer: unknown;
  /**
   * Offers the kernel call `gemm(c, ldc, a, lda, b, ldb, M, N, K, flags)` on that memory.
   * @returns true when it is offered: then {@link settle} must be called before its operands change.
   */
  offer(c: number, ldc: number, a: number, lda: number, b: number, ldb: number, M: number, N: number, K: number, flags: number): boolean;
  /** @returns true when another thread computed the offered product, false when it was taken back (the caller computes it). */
  settle(): boolean;
}

/** This thread's offer, while it runs the sequences of a training phase (parallel/batch-pass.ts). */
let productOffer: ProductOffer | null = null;

/**
 * Sets where this thread offers the lower rows of its products (null: nowhere).
 * @param offer - the offer, or null.
 */
export function setProductOffer(offer: ProductOffer | null): void {
  productOffer = offer;
}

/** Flags under which an output row depends on its index (masked products): such products are not split. */
const ROW_DEPENDENT = GEMM_LOWER_OUT | GEMM_LOWER_K | GEMM_UPPER_K;

/**
 * Chooses the matrix-product implementation of the calling thread (worker
 * threads keep 'auto'). Every choice gives identical bits; this exists for
 * tests and benchmarks.
 * @param b - 'auto', 'scalar' or 'simd'.
 * @throws RangeError for another value.
 */
export function setGemmBackend(b: GemmBackend): void {
  if (b !== 'auto' && b !== 'scalar' && b !== 'simd') throw new RangeError(`gemm backend must be 'auto', 'scalar' or 'simd', found ${String(b)}`);
  backend = b;
}

/** @returns the calling thread's {@link setGemmBackend} choice. */
export function gemmBackend(): GemmBackend {
  return backend;
}

/** @returns whether matrix products on this thread use the WebAssembly SIMD kernel (for large products under 'auto'). */
export function usesSimdGemm(): boolean {
  if (wasm === undefined) wasm = createWasmGemm();
  return backend !== 'scalar' && wasm !== null;
}

/** @returns bytes of the memory of this thread's default SIMD kernel instance (pinned operands and copy scratch; 0 before it exists): a diagnostic. */
export function gemmScratchBytes(): number {
  return wasm === undefined || wasm === null ? 0 : wasm.memory.buffer.byteLength;
}

/** Products smaller than this (M·N·K) stay in JavaScript: copying in and out would cost more than it saves. */
const SIMD_MIN_WORK = 2048;

/**
 * `C[i, j] (=|+=) Σ_k A[i, k] · B[k, j]` for i < M, j < N, k < K (k ascending, from +0.0).
 *
 * Element (i, j) of C is at `cOff + i·ldc + j`; A[i, k] at `aOff + i·lda + k`;
 * B[k, j] at `bOff + k·ldb + j`.
 *
 * @param C - output.
 * @param cOff - offset of C[0, 0].
 * @param ldc - row stride of C.
 * @param A - left operand.
 * @param aOff - offset of A[0, 0].
 * @param lda - row stride of A.
 * @param B - right operand.
 * @param bOff - offset of B[0, 0].
 * @param ldb - row stride of B.
 * @param M - rows of C.
 * @param N - columns of C.
 * @param K - contracted length.
 * @param flags - bitwise OR of {@link GEMM_ADD}, {@link GEMM_LOWER_OUT}, {@link GEMM_LOWER_K}, {@link GEMM_UPPER_K}.
 */
export function gemm(
  C: Float64Array,
  cOff: number,
  ldc: number,
  A: Float64Array,
  aOff: number,
  lda: number,
  B: Float64Array,
  bOff: number,
  ldb: number,
  M: number,
  N: number,
  K: number,
  flags: number,
): void {
  if (backend === 'auto') {
    // The native kernels (native.ts) work on the arrays in place: no copies, so no size threshold.
    const native = activeNativeKernels();
    if (native !== null) {
      nativeProduct(native, C, cOff, ldc, A, aOff, lda, B, bOff, ldb, M, N, K, flags);
      return;
    }
  }
  if (backend !== 'scalar') {
    // Operands in a kernel arena: that arena's kernel, whatever the size (nothing resident is copied).
    const r = residentKernel(C) ?? residentKernel(A) ?? residentKernel(B);
    if (r !== undefined) {
      gemmSimd(r, C, cOff, ldc, A, aOff, lda, B, bOff, ldb, M, N, K, flags);
      return;
    }
  }
  if (backend === 'simd' || (backend === 'auto' && M * N * K >= SIMD_MIN_WORK)) {
    if (wasm === undefined) wasm = createWasmGemm();
    if (wasm !== null) {
      gemmSimd(wasm, C, cOff, ldc, A, aOff, lda, B, bOff, ldb, M, N, K, flags);
      return;
    }
  }
  gemmScalar(C, cOff, ldc, A, aOff, lda, B, bOff, ldb, M, N, K, flags);
}

/**
 * A kernel arena for the operands of this thread's products (kernel-arena.ts):
 * when products on this thread run on the WebAssembly SIMD kernel, and, while
 * the native kernels are active, only on a `shared` memory — they read any
 * array in place, so there the arena serves only to put the operands where
 * a thread with no sequence left can compute rows of the products
 * (parallel/help.ts). None under {@link setGemmBackend}('scalar'), nor
 * without WebAssembly SIMD.
 *
 * @param elements - the views' total size (the memory is sized once: the arena never grows).
 * @param shared - a shared memory to open it on (kernel-arena.ts {@link openKernelArena}), instead of a new one.
 * @returns the arena, or null (use ordinary arrays; also when `shared` is too small).
 */
export function gemmArena(elements: number, shared?: SharedArenaMemory): KernelArena | null {
  if (backend === 'scalar' || (shared === undefined && activeNativeKernels() !== null)) return null;
  if (wasm === undefined) wasm = createWasmGemm();
  if (wasm === null) return null;
  return openKernelArena(elements, shared);
}

/** Copies `rows` rows of `width` values (source row stride `lds`) to contiguous `dst` rows (destination stride `ldd`). */
function copyRows(dst: Float64Array, dOff: number, ldd: number, src: Float64Array, sOff: number, lds: number, rows: number, width: number): void {
  if (lds === width && ldd === width) {
    dst.set(src.subarray(sOff, sOff + rows * width), dOff);
    return;
  }
  // Short strided rows (attention head slices): a plain loop, no view allocation per row.
  for (let r = 0; r < rows; r++) {
    const s0 = sOff + r * lds;
    const d0 = dOff + r * ldd;
    for (let c = 0; c < width; c++) dst[d0 + c] = src[s0 + c] as number;
  }
}

/** Offset of row `h` of A (stored transposed under {@link TRANS_A}: then a column). */
function rowOfA(a: number, lda: number, h: number, flags: number): number {
  return (flags & TRANS_A) !== 0 ? a + h : a + h * lda;
}

/**
 * Offers the lower rows of an M-row product whose operands are all in the
 * offer's memory (element offsets `c`, `a`, `b` there): from about half, a
 * multiple of four (the WebAssembly kernel's row tile). Any split gives the
 * same bits: each output is one whole dot product either way.
 *
 * @returns the first offered row h (then the caller computes rows 0 … h−1 and settles), or 0 when nothing was offered.
 */
function offerLowerRows(offer: ProductOffer, c: number, ldc: number, a: number, lda: number, b: number, ldb: number, M: number, N: number, K: number, flags: number): number {
  const h = ((M >> 1) + 3) & ~3;
  if (h === 0 || h >= M || !offer.offer(c + h * ldc, ldc, rowOfA(a, lda, h, flags), lda, b, ldb, M - h, N, K, flags)) return 0;
  gemmCounters.offeredProducts++;
  return h;
}

/**
 * The native kernels on {@link gemm}'s operands, in place. While this thread
 * offers products (a training phase, parallel/help.ts) and all three
 * operands are views of the offer's memory (the threaded decoder's kernel
 * arena), the lower rows are offered to a thread with no sequence left, as
 * on the WebAssembly path ({@link gemmSimd}); the helper computes them with
 * its own kernels, which give the same bits.
 */
function nativeProduct(
  native: NativeAddon,
  C: Float64Array,
  cOff: number,
  ldc: number,
  A: Float64Array,
  aOff: number,
  lda: number,
  B: Float64Array,
  bOff: number,
  ldb: number,
  M: number,
  N: number,
  K: number,
  flags: number,
): void {
  const offer = productOffer;
  if (offer !== null && (flags & ROW_DEPENDENT) === 0 && C.buffer === offer.buffer && A.buffer === offer.buffer && B.buffer === offer.buffer) {
    const h = offerLowerRows(offer, C.byteOffset / 8 + cOff, ldc, A.byteOffset / 8 + aOff, lda, B.byteOffset / 8 + bOff, ldb, M, N, K, flags);
    if (h > 0) {
      native.gemm(C, cOff, ldc, A, aOff, lda, B, bOff, ldb, h, N, K, flags);
      if (!offer.settle()) native.gemm(C, cOff + h * ldc, ldc, A, rowOfA(aOff, lda, h, flags), lda, B, bOff, ldb, M - h, N, K, flags);
      return;
    }
  }
  native.gemm(C, cOff, ldc, A, aOff, lda, B, bOff, ldb, M, N, K, flags);
}

// The WebAssembly kernel on {@link gemm}'s operands: resident operands (views
// of a fixed instance's arena) and pinned operands (see pinGemmOperand, the
// default instance) are read where they already are in the module's memory,
// a resident C written in place; the others are copied into the scratch after
// the arena or the pinned region, a non-resident C back out.
function gemmSimd(
  w: WasmGemm,
  C: Float64Array,
  cOff: number,
  ldc: number,
  A: Float64Array,
  aOff: number,
  lda: number,
  B: Float64Array,
  bOff: number,
  ldb: number,
  M: number,
  N: number,
  K: number,
  flags: number,
): void {
  const transA = (flags & TRANS_A) !== 0;
  const fixed = w.fixed;
  let pa: number, pb: number, pc: number;
  if (fixed) {
    const own = w.view.buffer;
    pa = A.buffer === own ? A.byteOffset / 8 : -1;
    pb = B.buffer === own ? B.byteOffset / 8 : -1;
    pc = C.buffer === own ? C.byteOffset / 8 : -1;
  } else {
    pa = pinnedBase(w, A);
    pb = pinnedBase(w, B);
    pc = -1;
    if (pinnedBase(w, C) >= 0) unpin(C); // written here: its pinned copy would go stale
  }
  let end = fixed ? w.scratchBase : pinnedEnd;
  const a = pa >= 0 ? pa + aOff : end;
  const la = pa >= 0 ? lda : transA ? M : K;
  if (pa < 0) end += M * K;
  const b = pb >= 0 ? pb + bOff : end;
  const lb = pb >= 0 ? ldb : N;
  if (pb < 0) end += K * N;
  const c = pc >= 0 ? pc + cOff : end;
  const lc = pc >= 0 ? ldc : N;
  if (pc < 0) end += M * N;
  if (fixed) {
    if (end > w.view.length) {
      // A fixed memory never grows (its views would be detached): the scalar kernel, same bits.
      gemmCounters.scalarFallbacks++;
      gemmScalarFlags(C, cOff, ldc, A, aOff, lda, B, bOff, ldb, M, N, K, flags);
      return;
    }
  } else {
    ensureWasmCapacity(w, end);
  }
  const offer = productOffer;
  if (offer !== null && pa >= 0 && pb >= 0 && pc >= 0 && (flags & ROW_DEPENDENT) === 0 && w.view.buffer === offer.buffer) {
    // Every operand where it is: the lower rows (from a multiple of the kernel's four-row tile) may go to another thread, each output still one whole dot product.
    const h = offerLowerRows(offer, c, lc, a, la, b, lb, M, N, K, flags);
    if (h > 0) {
      w.run(c, lc, a, la, b, lb, h, N, K, flags);
      if (!offer.settle()) w.run(c + h * lc, lc, rowOfA(a, la, h, flags), la, b, lb, M - h, N, K, flags);
      return;
    }
  }
  const view = w.view;
  if (pa < 0) {
    if (transA) copyRows(view, a, M, A, aOff, lda, K, M);
    else copyRows(view, a, K, A, aOff, lda, M, K);
    gemmCounters.operandsIn += M * K;
  }
  if (pb < 0) {
    copyRows(view, b, N, B, bOff, ldb, K, N);
    gemmCounters.operandsIn += K * N;
  }
  if (pc < 0 && (flags & GEMM_ADD) !== 0) {
    copyRows(view, c, N, C, cOff, ldc, M, N);
    gemmCounters.operandsIn += M * N;
  }
  w.run(c, lc, a, la, b, lb, M, N, K, flags);
  if (pc < 0) {
    copyRows(C, cOff, ldc, view, c, N, M, N);
    gemmCounters.resultsOut += M * N;
  }
}

/** {@link gemmScalar} for the kernel flags, {@link TRANS_A} included (through the transposed scratch). */
function gemmScalarFlags(
  C: Float64Array,
  cOff: number,
  ldc: number,
  A: Float64Array,
  aOff: number,
  lda: number,
  B: Float64Array,
  bOff: number,
  ldb: number,
  M: number,
  N: number,
  K: number,
  flags: number,
): void {
  if ((flags & TRANS_A) === 0) {
    gemmScalar(C, cOff, ldc, A, aOff, lda, B, bOff, ldb, M, N, K, flags);
    return;
  }
  if (transposed.length < M * K) transposed = new Float64Array(M * K);
  transpose(transposed, 0, K, A, aOff, lda, K, M);
  gemmScalar(C, cOff, ldc, transposed, 0, K, B, bOff, ldb, M, N, K, flags & ~TRANS_A);
}

/**
 * The scalar implementation of {@link gemm} (same parameters, same bits):
 * 4 × 4 register blocks, each accumulator one output's in-order dot product.
 */
export function gemmScalar(
  C: Float64Array,
  cOff: number,
  ldc: number,
  A: Float64Array,
  aOff: number,
  lda: number,
  B: Float64Array,
  bOff: number,
  ldb: number,
  M: number,
  N: number,
  K: number,
  flags: number,
): void {
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
    for (let j = 0; j < jEnd; j++) {
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
 * Transposes an R × S block: `dst[dOff + s·ldd + r] = src[sOff + r·lds + s]`.
 *
 * Eight source rows at a time: each column `s` of such a band is read from
 * the eight rows and written as eight adjacent values of one destination row,
 * so every cache line written is filled at once (a row at a time, each store
 * would land on another line; about 4× slower on the decoder's weights).
 * Values are moved, never computed: the bits are those of any order.
 *
 * @param dst - destination.
 * @param dOff - offset of dst[0, 0].
 * @param ldd - row stride of dst (≥ R).
 * @param src - source.
 * @param sOff - offset of src[0, 0].
 * @param lds - row stride of src (≥ S).
 * @param R - rows of src.
 * @param S - columns of src.
 */
export function transpose(dst: Float64Array, dOff: number, ldd: number, src: Float64Array, sOff: number, lds: number, R: number, S: number): void {
  let r = 0;
  for (; r + 7 < R; r += 8) {
    const s0 = sOff + r * lds;
    let d = dOff + r;
    for (let s = 0; s < S; s++) {
      let i = s0 + s;
      dst[d] = src[i] as number;
      i += lds;
      dst[d + 1] = src[i] as number;
      i += lds;
      dst[d + 2] = src[i] as number;
      i += lds;
      dst[d + 3] = src[i] as number;
      i += lds;
      dst[d + 4] = src[i] as number;
      i += lds;
      dst[d + 5] = src[i] as number;
      i += lds;
      dst[d + 6] = src[i] as number;
      i += lds;
      dst[d + 7] = src[i] as number;
      d += ldd;
    }
  }
  for (; r < R; r++) {
    const s0 = sOff + r * lds;
    let d = dOff + r;
    for (let s = 0; s < S; s++) {
      dst[d] = src[s0 + s] as number;
      d += ldd;
    }
  }
}

/**
 * One row times a matrix: `y[o] = Σ_i x[i]·W[i, o]` for o < N, each output
 * accumulated from +0.0 in increasing i — the bits of a row of {@link gemm}
 * (the single-row path of cached decoding; no copies).
 *
 * @param y - (N) output.
 * @param x - (K) input row.
 * @param W - right operand, row-major [K, N] from `wOff`.
 * @param wOff - offset of W[0, 0].
 * @param N - outputs.
 * @param K - contracted length.
 */
export function rowTimesMatrix(y: Float64Array, x: Float64Array, W: Float64Array, wOff: number, N: number, K: number): void {
  if (backend === 'auto') {
    const native = activeNativeKernels();
    if (native !== null) {
      native.gemm(y, 0, N, x, 0, K, W, wOff, N, 1, N, K, 0);
      return;
    }
  }
  // Four outputs at a time, each its own register accumulator (the order inside each is i ascending).
  let o = 0;
  for (; o + 3 < N; o += 4) {
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    let w = wOff + o;
    for (let i = 0; i < K; i++) {
      const xi = x[i] as number;
      s0 += xi * (W[w] as number);
      s1 += xi * (W[w + 1] as number);
      s2 += xi * (W[w + 2] as number);
      s3 += xi * (W[w + 3] as number);
      w += N;
    }
    y[o] = s0;
    y[o + 1] = s1;
    y[o + 2] = s2;
    y[o + 3] = s3;
  }
  for (; o < N; o++) {
    let s = 0;
    let w = wOff + o;
    for (let i = 0; i < K; i++) {
      s += (x[i] as number) * (W[w] as number);
      w += N;
    }
    y[o] = s;
  }
}

/** Scratch of {@link gemmTransA} when the operand must be transposed first. */
let transposed = new Float64Array(0);

/**
 * `C[i, j] (=|+=) Σ_k A[k, i] · B[k, j]` — {@link gemm} with A stored
 * transposed ([K, M]: A[k, i] at `aOff + k·lda + i`), e.g. a weight gradient
 * `Σ_t x[t, i]·dy[t, o]` read straight from the (T, in) activation. Same
 * sums, same order, same bits as transposing A and calling {@link gemm}; the
 * WebAssembly kernel reads this layout itself (no transpose), the other
 * kernels get the transposed copy.
 *
 * @param C - output.
 * @param cOff - offset of C[0, 0].
 * @param ldc - row stride of C.
 * @param A - left operand, stored [K, M].
 * @param aOff - offset of A[0, 0].
 * @param lda - row stride of the stored A (≥ M).
 * @param B - right operand [K, N].
 * @param bOff - offset of B[0, 0].
 * @param ldb - row stride of B.
 * @param M - rows of C.
 * @param N - columns of C.
 * @param K - contracted length.
 * @param flags - as for {@link gemm}.
 */
export function gemmTransA(
  C: Float64Array,
  cOff: number,
  ldc: number,
  A: Float64Array,
  aOff: number,
  lda: number,
  B: Float64Array,
  bOff: number,
  ldb: number,
  M: number,
  N: number,
  K: number,
  flags: number,
): void {
  if (backend === 'auto') {
    // The native kernels read the transposed layout in place too (native/kernels.c, flag TRANS_A).
    const native = activeNativeKernels();
    if (native !== null) {
      nativeProduct(native, C, cOff, ldc, A, aOff, lda, B, bOff, ldb, M, N, K, flags | TRANS_A);
      return;
    }
  }
  if (backend !== 'scalar') {
    const r = residentKernel(C) ?? residentKernel(A) ?? residentKernel(B);
    if (r !== undefined) {
      gemmSimd(r, C, cOff, ldc, A, aOff, lda, B, bOff, ldb, M, N, K, flags | TRANS_A);
      return;
    }
  }
  if (backend === 'simd' || (backend === 'auto' && M * N * K >= SIMD_MIN_WORK)) {
    if (wasm === undefined) wasm = createWasmGemm();
    if (wasm !== null) {
      gemmSimd(wasm, C, cOff, ldc, A, aOff, lda, B, bOff, ldb, M, N, K, flags | TRANS_A);
      return;
    }
  }
  if (transposed.length < M * K) transposed = new Float64Array(M * K);
  transpose(transposed, 0, K, A, aOff, lda, K, M);
  gemm(C, cOff, ldc, transposed, 0, K, B, bOff, ldb, M, N, K, flags);
}

/**
 * {@link gemmTransA}`(C, …)` beside an independent product, `meanwhile` — a
 * layer's weight gradient beside its input adjoint (linear.ts). While this
 * thread offers products (the end of a wave, parallel/help.ts), all three
 * operands are views of the offer's memory and the product is not masked, it
 * is offered whole to a thread with no sequence left before `meanwhile` runs
 * (whose own products are then not split: one offer at a time), and settled
 * after it: computed by the helper's kernels, which give the same bits, or
 * taken back and computed here. Otherwise `meanwhile` runs first, then the
 * product here.
 */
export function gemmTransABeside(
  C: Float64Array,
  cOff: number,
  ldc: number,
  A: Float64Array,
  aOff: number,
  lda: number,
  B: Float64Array,
  bOff: number,
  ldb: number,
  M: number,
  N: number,
  K: number,
  flags: number,
  meanwhile: () => void,
): void {
  const offer = productOffer;
  const handed =
    offer !== null &&
    (flags & ROW_DEPENDENT) === 0 &&
    C.buffer === offer.buffer &&
    A.buffer === offer.buffer &&
    B.buffer === offer.buffer &&
    offer.offer(C.byteOffset / 8 + cOff, ldc, A.byteOffset / 8 + aOff, lda, B.byteOffset / 8 + bOff, ldb, M, N, K, flags | TRANS_A);
  if (handed) gemmCounters.offeredProducts++;
  meanwhile();
  if (!handed || !offer.settle()) gemmTransA(C, cOff, ldc, A, aOff, lda, B, bOff, ldb, M, N, K, flags);
}

// ── Pinned operands: read in place from the WebAssembly kernel's memory ──

/** Pinned arrays of this thread, their element offsets in the kernel's memory, and the end of the pinned region. */
const pinArrays: Float64Array[] = [];
const pinBases: number[] = [];
let pinnedEnd = 0;
/** At most this many pinned arrays (two per decoder: parameters and transposed weights); beyond, all are dropped. */
const MAX_PINS = 8;

/**
 * The pin holding `X`: the pinned array itself, or one whose elements `X` is a
 * view of (a `subarray` of the parameters or of the transposed weights, as the
 * decoder's per-tensor views are), or −1.
 */
function pinIndex(X: Float64Array): number {
  for (let p = 0; p < pinArrays.length; p++) if (pinArrays[p] === X) return p;
  if (pinArrays.length === 0) return -1;
  const buffer = X.buffer;
  const start = X.byteOffset;
  for (let p = 0; p < pinArrays.length; p++) {
    const P = pinArrays[p] as Float64Array;
    if (P.buffer === buffer && start >= P.byteOffset && start + X.byteLength <= P.byteOffset + P.byteLength) return p;
  }
  return -1;
}

/** Element offset of X[0] in the kernel's memory when `X` is pinned (or a view inside a pinned array), else −1. */
function pinnedBase(w: WasmGemm, X: Float64Array): number {
  void w;
  const p = pinIndex(X);
  if (p < 0) return -1;
  return (pinBases[p] as number) + (X.byteOffset - (pinArrays[p] as Float64Array).byteOffset) / 8;
}

/** Drops the pin holding `X` (the pinned array itself, or the one `X` is a view of). */
function unpin(X: Float64Array): void {
  const p = pinIndex(X);
  if (p < 0) return;
  pinArrays.splice(p, 1);
  pinBases.splice(p, 1);
}

/** Resident snapshots of ordinary arrays (the decoder pass's parameter copy), by the source's buffer. */
const mirrors = new WeakMap<ArrayBufferLike, { readonly source: Float64Array; readonly copy: Float64Array; readonly where: (index: number) => number }>();

/**
 * Records that `copy` (a view of a kernel arena) holds a snapshot of
 * `source`, which products read instead of `source` (the decoder pass's
 * resident parameters). Only {@link pinnedOffset} consults it.
 *
 * @param source - an ordinary array.
 * @param copy - its resident snapshot.
 * @param where - the index in `copy` of `source[index]` (default: the same index; the snapshot may pad rows).
 */
export function recordResidentCopy(source: Float64Array, copy: Float64Array, where: (index: number) => number = (index) => index): void {
  mirrors.set(source.buffer, { source, copy, where });
}

/**
 * Where `X` is read from by the WebAssembly kernel on this thread: the element
 * offset of `X[0]` in a kernel's memory when `X` is a view of a kernel arena,
 * when `X` (or an array `X` is a `subarray` of) is pinned, or when it has a
 * resident snapshot there ({@link recordResidentCopy}); else −1. A diagnostic
 * for tests and benchmarks.
 *
 * @param X - an operand array or view.
 * @returns the offset, or −1 when `X` would be copied per product.
 */
export function pinnedOffset(X: Float64Array): number {
  if (residentKernel(X) !== undefined) return X.byteOffset / 8;
  const m = mirrors.get(X.buffer);
  if (m !== undefined && X.byteOffset >= m.source.byteOffset && X.byteOffset + X.byteLength <= m.source.byteOffset + m.source.byteLength) {
    return m.copy.byteOffset / 8 + m.where((X.byteOffset - m.source.byteOffset) / 8);
  }
  return wasm === undefined || wasm === null ? -1 : pinnedBase(wasm, X);
}

/**
 * Copies `X` into the WebAssembly kernel's memory once, so that products
 * reading it (as A or B) on this thread use that copy instead of copying
 * their block on every call: "pack once per step" for the weights. The copy
 * is a snapshot: the caller must pin again after every change of `X` (the
 * decoder pass does it whenever it refreshes its transposed weights). Views
 * of `X` (`X.subarray(…)`) are read through the pin too, so per-tensor views
 * of the parameters keep the in-place reads.
 * Without WebAssembly SIMD, or while another kernel serves {@link gemm}, any
 * earlier pin of `X` is dropped instead. Bits are unaffected either way.
 *
 * @param X - an operand array (parameters, transposed weights).
 */
export function pinGemmOperand(X: Float64Array): void {
  if (backend === 'scalar' || activeNativeKernels() !== null) {
    unpin(X);
    return;
  }
  if (wasm === undefined) wasm = createWasmGemm();
  if (wasm === null) return;
  let p = pinArrays.indexOf(X); // the array itself: a view of a pinned array is pinned through it
  if (p >= 0 && (p + 1 < pinArrays.length ? (pinBases[p + 1] as number) : pinnedEnd) - (pinBases[p] as number) < X.length) {
    unpin(X);
    p = -1;
  }
  if (p < 0) {
    if (pinArrays.length >= MAX_PINS) {
      pinArrays.length = 0;
      pinBases.length = 0;
      pinnedEnd = 0;
    }
    pinArrays.push(X);
    pinBases.push(pinnedEnd);
    p = pinArrays.length - 1;
    pinnedEnd += X.length;
  }
  ensureWasmCapacity(wasm, pinnedEnd);
  wasm.view.set(X, pinBases[p] as number);
}
