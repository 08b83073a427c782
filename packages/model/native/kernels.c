/*
 * llmcp native kernels: an optional Node-API addon with the matrix products of
 * @llmcp/model, bit for bit the same as the WebAssembly and JavaScript kernels.
 *
 * The rule that keeps the bits (../../../docs/spec/model.md §1, §8): every output element C[i, j]
 * is one dot product accumulated from +0.0 in increasing k, each term an IEEE
 * multiply rounded on its own and then an IEEE add. A vector lane is one
 * output's accumulator and never meets another lane, so any vector width and
 * any register blocking give the same bits; what must never happen is a fused
 * multiply-add or a reassociated sum. Hence: explicit `mul` then `add`
 * intrinsics, compiled with -ffp-contract=off (GCC contracts intrinsics into
 * FMA otherwise) and never -ffast-math.
 *
 * Paths, chosen at run time per thread (__builtin_cpu_supports): AVX-512F
 * (8 rows × 3 zmm = 24 columns of accumulators), AVX2 (1 row × 12 ymm = 48
 * columns, B read as memory operands of the multiplies; 6 × 8 unpacked for
 * one row or tiny products), and plain C. Build: native/build.mjs.
 */
#define NAPI_VERSION 8
#include <node_api.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(_M_X64)
#define LLMCP_X86 1
#include <immintrin.h>
#endif

/* Flag bits: the values of src/kernels/gemm-flags.ts, reported as `gemmFlags` (native.ts refuses an addon whose
   values differ). */
#define F_ADD 1
#define F_LOWER_OUT 2
#define F_LOWER_K 4
#define F_UPPER_K 8
/* A is stored transposed, [K, M]: A[i, k] at a + k·lda + i (GEMM_TRANS_A). */
#define F_TRANS_A 16

enum { PATH_SCALAR = 0, PATH_AVX2 = 1, PATH_AVX512 = 2 };
static const char *const PATH_NAMES[] = {"scalar", "avx2", "avx512"};

typedef struct {
  double *c;
  const double *a;
  const double *b;
  /* A[i, k] at a + i·ars + k·aks: (lda, 1), or (1, lda) with F_TRANS_A. */
  ptrdiff_t ldc, ars, aks, ldb;
  int M, N, K, flags;
} gemm_args;

static int imin(int x, int y) { return x < y ? x : y; }

/*
 * The calling thread's limits of the packed AVX2 path, in doubles (0: the defaults, PT256 and AKEEP256): tests set
 * small ones (setBlocking) to reach several column blocks, and A packed again at each, with products they can afford.
 */
static _Thread_local double t_pt256 = 0, t_akeep256 = 0;

/* ── plain C ───────────────────────────────────────────────────────────── */

/* One row block's causal bounds, the same rule as the other kernels (see gemm.ts). */
static void block_bounds(const gemm_args *g, int i0, int rows, int *jEnd, int *kBeg, int *kEnd) {
  *jEnd = (g->flags & F_LOWER_OUT) ? imin(g->N, i0 + rows) : g->N;
  *kBeg = (g->flags & F_UPPER_K) ? i0 : 0;
  *kEnd = (g->flags & F_LOWER_K) ? imin(g->K, i0 + rows) : g->K;
}

static void gemm_scalar(const gemm_args *g) {
  const int add = g->flags & F_ADD;
  for (int i = 0; i < g->M; i++) {
    int jEnd, kBeg, kEnd;
    block_bounds(g, i, 1, &jEnd, &kBeg, &kEnd);
    const double *a = g->a + i * g->ars;
    double *c = g->c + i * g->ldc;
    for (int j = 0; j < jEnd; j++) {
      double s = 0.0;
      const double *b = g->b + (ptrdiff_t)kBeg * g->ldb + j;
      for (int k = kBeg; k < kEnd; k++) {
        double p = a[k * g->aks] * *b;
        s = s + p;
        b += g->ldb;
      }
      if (add) c[j] = c[j] + s;
      else c[j] = s;
    }
  }
}

#ifdef LLMCP_X86

/* ── AVX-512F ──────────────────────────────────────────────────────────── */

#define MR512 8
#define NV512 3

/*
 * broadcast(*p) · v, one rounded multiply per lane (vmulpd with an embedded {1to8} broadcast: the broadcast
 * costs no shuffle, which lifts this kernel from ~75% to ~97% of the mul/add ceiling on Zen 4). GCC does not
 * fold _mm512_set1_pd into the multiply when the broadcast feeds several products, hence the asm.
 */
#if defined(__GNUC__) && !defined(LLMCP_NO_ASM)
#define MUL_BCAST512(p, v)                                                                                            \
  __extension__({                                                                                                     \
    __m512d r_;                                                                                                       \
    __asm__("vmulpd %1%{1to8%}, %2, %0" : "=v"(r_) : "m"(*(p)), "v"(v));                                              \
    r_;                                                                                                               \
  })
#else
#define MUL_BCAST512(p, v) _mm512_mul_pd(_mm512_set1_pd(*(p)), (v))
#endif

/*
 * The end of every AVX-512 micro-kernel: the finished sums of an MR × NV block into C (`C + sum` under F_ADD: the
 * old C is added last), the last vector's lanes masked.
 */
#define STORE_C512(MR, NV)                                                                                            \
  _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                                           \
    double *cp = c + r * ldc;                                                                                       \
    _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) {                                                         \
      const __mmask8 m = v == NV - 1 ? mask : (__mmask8)0xff;                                                       \
      __m512d out = acc[r][v];                                                                                      \
      if (add) out = _mm512_add_pd(_mm512_maskz_loadu_pd(m, cp + 8 * v), out);                                     \
      _mm512_mask_storeu_pd(cp + 8 * v, m, out);                                                                    \
    }                                                                                                               \
  }

/*
 * One MR × (NV·8) block: rows i0 … i0+MR−1 of A (from `a`, stride lda),
 * columns of B from `b`; the last vector's lanes are masked by `mask`.
 * k is the innermost loop of every accumulator; each lane is one output.
 */
#define DEFINE_MK512(MR, NV)                                                                                          \
  __attribute__((target("avx512f"))) static void mk512_##MR##_##NV(const double *a, ptrdiff_t ars, ptrdiff_t aks,   \
                                                                    const double *b, ptrdiff_t ldb, double *c,       \
                                                                    ptrdiff_t ldc, int kBeg, int kEnd, __mmask8 mask, \
                                                                    int add) {                                       \
    __m512d acc[MR][NV];                                                                                              \
    _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++)       \
        acc[r][v] = _mm512_setzero_pd();                                                                              \
    const double *bp = b + (ptrdiff_t)kBeg * ldb;                                                                     \
    const double *ap = a + (ptrdiff_t)kBeg * aks;                                                                     \
    for (int k = kBeg; k < kEnd; k++) {                                                                               \
      __m512d bv[NV];                                                                                                 \
      _Pragma("GCC unroll 3") for (int v = 0; v < NV - 1; v++) bv[v] = _mm512_loadu_pd(bp + 8 * v);                 \
      bv[NV - 1] = _mm512_maskz_loadu_pd(mask, bp + 8 * (NV - 1));                                                  \
      _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                                         \
        _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) {                                                       \
          const __m512d p = MUL_BCAST512(ap + r * ars, bv[v]);                                                        \
          acc[r][v] = _mm512_add_pd(acc[r][v], p);                                                                    \
        }                                                                                                             \
      }                                                                                                               \
      bp += ldb;                                                                                                      \
      ap += aks;                                                                                                      \
    }                                                                                                                 \
    STORE_C512(MR, NV);                                                                                               \
  }

#define DEFINE_MK512_ROW(MR) DEFINE_MK512(MR, 1) DEFINE_MK512(MR, 2) DEFINE_MK512(MR, 3)
DEFINE_MK512_ROW(1)
DEFINE_MK512_ROW(2)
DEFINE_MK512_ROW(3)
DEFINE_MK512_ROW(4)
DEFINE_MK512_ROW(5)
DEFINE_MK512_ROW(6)
DEFINE_MK512_ROW(7)
DEFINE_MK512_ROW(8)

typedef void (*mk512_fn)(const double *, ptrdiff_t, ptrdiff_t, const double *, ptrdiff_t, double *, ptrdiff_t, int, int, __mmask8,
                         int);
#define MK512_ROW(MR) {mk512_##MR##_1, mk512_##MR##_2, mk512_##MR##_3}
static const mk512_fn MK512[MR512][NV512] = {MK512_ROW(1), MK512_ROW(2), MK512_ROW(3), MK512_ROW(4),
                                             MK512_ROW(5), MK512_ROW(6), MK512_ROW(7), MK512_ROW(8)};

__attribute__((target("avx512f"))) static void gemm_avx512_direct(const gemm_args *g) {
  const int add = g->flags & F_ADD;
  const int W = 8 * NV512;
  /* Column panels outside, row blocks inside: a K × 24 panel of B stays in L1 across the row blocks. */
  for (int j0 = 0; j0 < g->N; j0 += W) {
    for (int i0 = 0; i0 < g->M; i0 += MR512) {
      const int rows = imin(MR512, g->M - i0);
      int jEnd, kBeg, kEnd;
      block_bounds(g, i0, rows, &jEnd, &kBeg, &kEnd);
      if (j0 >= jEnd) continue;
      const int w = imin(W, jEnd - j0);
      const int nv = (w + 7) / 8;
      const int last = w - 8 * (nv - 1);
      const __mmask8 mask = (__mmask8)((1u << last) - 1u);
      MK512[rows - 1][nv - 1](g->a + i0 * g->ars, g->ars, g->aks, g->b + j0, g->ldb, g->c + i0 * g->ldc + j0, g->ldc,
                              kBeg, kEnd, mask, add);
    }
  }
}

/*
 * A is read in place (8 rows of A, or one 8-wide line of A^T or of a packed A^T panel, per k): one software
 * prefetch per k, PF512 steps of k ahead, for row k mod MR (each row's next line once every 8 k without TRANS_A;
 * the line of step k + PF512 with it).
 */
#ifndef PF512
#define PF512 32
#endif
#ifdef LLMCP_NO_PREFETCH
#define PREFETCH_A512(p) ((void)0)
#else
#define PREFETCH_A512(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#endif

/*
 * The packed kernels: B comes from a contiguous, 64-byte aligned panel (row stride `ldbp` = 8·NV or more, zero
 * beyond N), n = kEnd − kBeg steps from A (already offset to k = kBeg). The running sums start at +0.0
 * (`pin` NULL) or continue from the partial tile `pin` (row stride ldp, written by the previous K block); they
 * end in the partial tile `pout`, or (pout NULL) in C: C = s, or C = C_old + s under `add` — C_old is added
 * last, never accumulated from. The order of the additions of every output is the order of the direct kernels.
 */
#define DEFINE_MKP512(MR, NV)                                                                                         \
  __attribute__((target("avx512f"))) static void mkp512_##MR##_##NV(                                                  \
      const double *a, ptrdiff_t ars, ptrdiff_t aks, const double *bp, ptrdiff_t ldbp, int n, const double *pin,      \
      double *pout, ptrdiff_t ldp, double *c, ptrdiff_t ldc, __mmask8 mask, int add) {                                \
    __m512d acc[MR][NV];                                                                                              \
    if (pin == NULL) {                                                                                                \
      _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++)     \
          acc[r][v] = _mm512_setzero_pd();                                                                            \
    } else {                                                                                                          \
      _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++)     \
          acc[r][v] = _mm512_load_pd(pin + r * ldp + 8 * v);                                                          \
    }                                                                                                                 \
    const double *ap = a;                                                                                             \
    for (int k = 0; k < n; k++) {                                                                                     \
      __m512d bv[NV];                                                                                                 \
      PREFETCH_A512(ap + (k % MR) * ars + PF512 * aks);                                                               \
      _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) bv[v] = _mm512_load_pd(bp + 8 * v);                      \
      _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                                         \
        _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) {                                                       \
          const __m512d p = MUL_BCAST512(ap + r * ars, bv[v]);                                                        \
          acc[r][v] = _mm512_add_pd(acc[r][v], p);                                                                    \
        }                                                                                                             \
      }                                                                                                               \
      bp += ldbp;                                                                                                     \
      ap += aks;                                                                                                      \
    }                                                                                                                 \
    if (pout != NULL) {                                                                                               \
      _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++)     \
          _mm512_store_pd(pout + r * ldp + 8 * v, acc[r][v]);                                                         \
      return;                                                                                                         \
    }                                                                                                                 \
    STORE_C512(MR, NV);                                                                                               \
  }

#define DEFINE_MKP512_ROW(MR) DEFINE_MKP512(MR, 1) DEFINE_MKP512(MR, 2) DEFINE_MKP512(MR, 3)
DEFINE_MKP512_ROW(1)
DEFINE_MKP512_ROW(2)
DEFINE_MKP512_ROW(3)
DEFINE_MKP512_ROW(4)
DEFINE_MKP512_ROW(5)
DEFINE_MKP512_ROW(6)
DEFINE_MKP512_ROW(7)
DEFINE_MKP512_ROW(8)

typedef void (*mkp512_fn)(const double *, ptrdiff_t, ptrdiff_t, const double *, ptrdiff_t, int, const double *, double *,
                          ptrdiff_t, double *, ptrdiff_t, __mmask8, int);
#define MKP512_ROW(MR) {mkp512_##MR##_1, mkp512_##MR##_2, mkp512_##MR##_3}
static const mkp512_fn MKP512[MR512][NV512] = {MKP512_ROW(1), MKP512_ROW(2), MKP512_ROW(3), MKP512_ROW(4),
                                               MKP512_ROW(5), MKP512_ROW(6), MKP512_ROW(7), MKP512_ROW(8)};

/* K block of the packed path: a KC512 × 24 panel of B (24 KB) stays in L1 across the row blocks. */
#ifndef KC512
#define KC512 128
#endif
#ifndef MC512
#define MC512 128
#endif
/* Products of at most ROWS512 rows (4 row blocks) or at most SMALL512 multiply-adds run unpacked. */
#ifndef ROWS512
#define ROWS512 32
#endif
#ifndef SMALL512
#define SMALL512 131072.0
#endif

/*
 * Rows kb … kb+n−1, columns j0 … j0+w−1 of B into the panel `bp` (row stride 8·pv, zero beyond w): contiguous
 * and aligned, so the kernel's loads neither cross pages every row (B rows are often 1–16 KB apart) nor collide
 * in the same L1 sets.
 */
__attribute__((target("avx512f"))) static void pack_b512(const double *b, ptrdiff_t ldb, int n, int w, double *bp) {
  const int pv = (w + 7) / 8;
  const __mmask8 lastMask = (__mmask8)((1u << (w - 8 * (pv - 1))) - 1u);
  for (int k = 0; k < n; k++) {
    const double *src = b + (ptrdiff_t)k * ldb;
    double *dst = bp + (ptrdiff_t)k * 8 * pv;
    for (int v = 0; v < pv - 1; v++) _mm512_store_pd(dst + 8 * v, _mm512_loadu_pd(src + 8 * v));
    _mm512_store_pd(dst + 8 * (pv - 1), _mm512_maskz_loadu_pd(lastMask, src + 8 * (pv - 1)));
  }
}

/*
 * Rows 0 … n−1 of A^T (A stored [K, M], F_TRANS_A; row stride lda), columns 0 … m−1, into 8-row micro-panels
 * `ap` (micro-panel q at ap + q·8·n, 8 values per k, zero beyond m): one aligned line per k instead of one line
 * lda·8 bytes (often a page or more) apart.
 */
__attribute__((target("avx512f"))) static void pack_at512(const double *a, ptrdiff_t lda, int n, int m, double *ap) {
  const int q = (m + 7) / 8;
  const __mmask8 lastMask = (__mmask8)((1u << (m - 8 * (q - 1))) - 1u);
  for (int k = 0; k < n; k++) {
    const double *src = a + (ptrdiff_t)k * lda;
    for (int v = 0; v < q - 1; v++) _mm512_store_pd(ap + ((ptrdiff_t)v * n + k) * 8, _mm512_loadu_pd(src + 8 * v));
    _mm512_store_pd(ap + ((ptrdiff_t)(q - 1) * n + k) * 8, _mm512_maskz_loadu_pd(lastMask, src + 8 * (q - 1)));
  }
}

/*
 * Per-thread scratch of the packed path (the B panel, the partial tile, the packed A^T), 64-byte aligned, grown on
 * demand and kept for the thread's next products; freed when the thread exits (the key's destructor).
 */
#include <pthread.h>
#include <stdlib.h>
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_key_ok;
static _Thread_local double *t_scratch;
static _Thread_local size_t t_scratch_len;

static void scratch_key_init(void) { scratch_key_ok = pthread_key_create(&scratch_key, free) == 0; }

/* At least n doubles of this thread's scratch, or NULL when no memory is left (the caller then runs unpacked). */
static double *scratch(size_t n) {
  if (n <= t_scratch_len) return t_scratch;
  pthread_once(&scratch_once, scratch_key_init);
  if (!scratch_key_ok) return NULL;
  free(t_scratch);
  t_scratch = NULL;
  t_scratch_len = 0;
  pthread_setspecific(scratch_key, NULL);
  const size_t bytes = (n * sizeof(double) + 4095) & ~(size_t)4095;
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes) != 0) return NULL;
  t_scratch = (double *)p;
  t_scratch_len = bytes / sizeof(double);
  pthread_setspecific(scratch_key, p);
  return t_scratch;
}

/*
 * The packed path (more than ROWS512 rows, more than SMALL512 multiply-adds). Loops, outside in: row chunks of
 * MC512 rows, K blocks of KC512, column panels of 24, row blocks of 8. Each (chunk, K block, panel) of B is packed
 * once and reused by the chunk's row blocks (which also prefetch the next panel's rows of B, and C before the last
 * K block writes it); under F_TRANS_A with three panels or more the chunk's A^T is packed per K block too.
 * A row block whose k range spans several K blocks carries its running sums in the partial tile P (M × 24·panels,
 * as large as C; not C itself: under F_ADD the finished sum is added to C_old last), so every output still sums its
 * products from +0.0 in increasing k. The causal bounds are block_bounds', per row block; an empty k range gives
 * s = +0.0 (written in the first K block).
 */
__attribute__((target("avx512f"))) static void gemm_avx512(const gemm_args *g) {
  const int M = g->M, N = g->N, K = g->K;
  /* Few row blocks to reuse a packed panel, or a product so small that its operands are hot in L1. */
  if (M <= ROWS512 || (double)M * N * K <= SMALL512) {
    gemm_avx512_direct(g);
    return;
  }
  const int add = g->flags & F_ADD;
  const int W = 8 * NV512, kc = KC512;
  const ptrdiff_t ldp = ((ptrdiff_t)N + W - 1) / W * W;
  /* A^T is packed too when three panels or more reuse it (its rows are lda·8 bytes apart: a page or more per k). */
  const int packA = (g->flags & F_TRANS_A) && N > 2 * W;
  const size_t pSize = K > kc ? (size_t)M * (size_t)ldp : 0;
  double *const bp = scratch((size_t)kc * W + pSize + (packA ? (size_t)MC512 * kc : 0));
  if (bp == NULL) {
    gemm_avx512_direct(g);
    return;
  }
  double *const P = bp + (size_t)kc * W;
  double *const Ap = P + pSize;
  /* Row chunks of MC512 rows outermost: the chunk's A (MC512 × KC512, 128 KB) stays in L2 across the panels. */
  for (int ic = 0; ic < M; ic += MC512) {
    const int icEnd = imin(M, ic + MC512);
    const int blocks = (icEnd - ic + MR512 - 1) / MR512;
    int kb = 0;
    do { /* one pass at least: with K = 0 it writes the empty sums */
      const int n = K - kb < kc ? K - kb : kc;
      /* Each row block prefetches its share of the next panel's rows of B (packed next, read with stride ldb). */
      const int pfRows = (n + blocks - 1) / blocks;
      if (packA) pack_at512(g->a + (ptrdiff_t)kb * g->aks + ic, g->aks, n, icEnd - ic, Ap);
      for (int j0 = 0; j0 < N; j0 += W) {
        const int pv = (imin(W, N - j0) + 7) / 8;
        const int nextW = N - j0 > W ? imin(W, N - j0 - W) : 0;
        int packed = 0;
        for (int i0 = ic; i0 < icEnd; i0 += MR512) {
          if (nextW > 0) {
            const int r0 = (i0 - ic) / MR512 * pfRows, r1 = imin(n, r0 + pfRows);
            for (int r = r0; r < r1; r++) {
              const double *q = g->b + (ptrdiff_t)(kb + r) * g->ldb + j0 + W;
              for (int v = 0; v < nextW; v += 8) _mm_prefetch((const char *)(q + v), _MM_HINT_T0);
              _mm_prefetch((const char *)(q + nextW - 1), _MM_HINT_T0);
            }
          }
          const int rows = imin(MR512, M - i0);
          int jEnd, kBeg, kEnd, k0, k1, first, last;
          block_bounds(g, i0, rows, &jEnd, &kBeg, &kEnd);
          if (j0 >= jEnd) continue;
          if (kBeg >= kEnd) {
            if (kb != 0) continue;
            k0 = k1 = kb;
            first = last = 1;
          } else {
            k0 = kBeg > kb ? kBeg : kb;
            k1 = kEnd < kb + n ? kEnd : kb + n;
            if (k0 >= k1) continue;
            first = kBeg >= kb;
            last = kEnd <= kb + n;
          }
          if (k1 > k0 && !packed) {
            pack_b512(g->b + (ptrdiff_t)kb * g->ldb + j0, g->ldb, n, imin(W, N - j0), bp);
            packed = 1;
          }
          const int w = imin(W, jEnd - j0);
          const int nv = (w + 7) / 8;
          const __mmask8 mask = (__mmask8)((1u << (w - 8 * (nv - 1))) - 1u);
          double *const tile = P + (ptrdiff_t)i0 * ldp + j0;
          double *const c = g->c + i0 * g->ldc + j0;
          if (last)
            for (int r = 0; r < rows; r++) {
              for (int v = 0; v < w; v += 8) __builtin_prefetch(c + r * g->ldc + v, 1, 3);
            }
          const double *const a = packA ? Ap + ((ptrdiff_t)(i0 - ic) * n + (ptrdiff_t)(k0 - kb) * 8)
                                        : g->a + i0 * g->ars + (ptrdiff_t)k0 * g->aks;
          MKP512[rows - 1][nv - 1](a, packA ? 1 : g->ars, packA ? 8 : g->aks,
                                   bp + (ptrdiff_t)(k0 - kb) * 8 * pv, 8 * pv, k1 - k0, first ? NULL : tile,
                                   last ? NULL : tile, ldp, c, g->ldc, mask, add);
        }
      }
      kb += n;
    } while (kb < K);
  }
}

/* ── AVX2 ──────────────────────────────────────────────────────────────── */

#define MR256 6
/* The mask of a vector's first `lanes` lanes (1 … 4). */
#define LANES256(lanes) _mm256_set_epi64x((lanes) > 3 ? -1 : 0, (lanes) > 2 ? -1 : 0, (lanes) > 1 ? -1 : 0, -1)
#define NV256 2

#define DEFINE_MK256(MR, NV)                                                                                          \
  __attribute__((target("avx2"))) static void mk256_##MR##_##NV(const double *a, ptrdiff_t ars, ptrdiff_t aks,      \
                                                                 const double *b, ptrdiff_t ldb, double *c,          \
                                                                 ptrdiff_t ldc, int kBeg, int kEnd, __m256i mask,    \
                                                                 int add) {                                          \
    __m256d acc[MR][NV];                                                                                              \
    _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++)       \
        acc[r][v] = _mm256_setzero_pd();                                                                              \
    const double *bp = b + (ptrdiff_t)kBeg * ldb;                                                                     \
    const double *ap = a + (ptrdiff_t)kBeg * aks;                                                                     \
    for (int k = kBeg; k < kEnd; k++) {                                                                               \
      __m256d bv[NV];                                                                                                 \
      _Pragma("GCC unroll 3") for (int v = 0; v < NV - 1; v++) bv[v] = _mm256_loadu_pd(bp + 4 * v);                 \
      bv[NV - 1] = _mm256_maskload_pd(bp + 4 * (NV - 1), mask);                                                     \
      _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                                         \
        const __m256d x = _mm256_broadcast_sd(ap + r * ars);                                                          \
        _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) {                                                       \
          const __m256d p = _mm256_mul_pd(x, bv[v]);                                                                  \
          acc[r][v] = _mm256_add_pd(acc[r][v], p);                                                                    \
        }                                                                                                             \
      }                                                                                                               \
      bp += ldb;                                                                                                      \
      ap += aks;                                                                                                      \
    }                                                                                                                 \
    const __m256i full = _mm256_set1_epi64x(-1);                                                                      \
    _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                                           \
      double *cp = c + r * ldc;                                                                                       \
      _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) {                                                         \
        const __m256i m = v == NV - 1 ? mask : full;                                                                  \
        __m256d out = acc[r][v];                                                                                      \
        if (add) out = _mm256_add_pd(_mm256_maskload_pd(cp + 4 * v, m), out);                                        \
        _mm256_maskstore_pd(cp + 4 * v, m, out);                                                                      \
      }                                                                                                               \
    }                                                                                                                 \
  }

#define DEFINE_MK256_ROW(MR) DEFINE_MK256(MR, 1) DEFINE_MK256(MR, 2)
DEFINE_MK256_ROW(1)
DEFINE_MK256_ROW(2)
DEFINE_MK256_ROW(3)
DEFINE_MK256_ROW(4)
DEFINE_MK256_ROW(5)
DEFINE_MK256_ROW(6)

typedef void (*mk256_fn)(const double *, ptrdiff_t, ptrdiff_t, const double *, ptrdiff_t, double *, ptrdiff_t, int, int, __m256i,
                         int);
#define MK256_ROW(MR) {mk256_##MR##_1, mk256_##MR##_2}
static const mk256_fn MK256[MR256][NV256] = {MK256_ROW(1), MK256_ROW(2), MK256_ROW(3),
                                             MK256_ROW(4), MK256_ROW(5), MK256_ROW(6)};

/*
 * The direct AVX2 path: 6 × 8 tiles reading A and B in place, for products of one row (a matrix-vector product,
 * bound by reading B) or at most SMALL256 multiply-adds.
 */
__attribute__((target("avx2"))) static void gemm_avx2_direct(const gemm_args *g) {
  const int add = g->flags & F_ADD;
  const int W = 4 * NV256;
  for (int j0 = 0; j0 < g->N; j0 += W) {
    for (int i0 = 0; i0 < g->M; i0 += MR256) {
      const int rows = imin(MR256, g->M - i0);
      int jEnd, kBeg, kEnd;
      block_bounds(g, i0, rows, &jEnd, &kBeg, &kEnd);
      if (j0 >= jEnd) continue;
      const int w = imin(W, jEnd - j0);
      const int nv = (w + 3) / 4;
      const int last = w - 4 * (nv - 1);
      const __m256i mask = LANES256(last);
      MK256[rows - 1][nv - 1](g->a + i0 * g->ars, g->ars, g->aks, g->b + j0, g->ldb, g->c + i0 * g->ldc + j0, g->ldc,
                              kBeg, kEnd, mask, add);
    }
  }
}

/*
 * The packed AVX2 kernels: one row of A against a 48-column panel of B, 12 ymm accumulators. On Zen 2/3 a vector
 * multiply and a vector add issue on separate pipes, two of each per cycle, but the floating-point unit takes at
 * most four instructions a cycle, a load or broadcast into a register counting as one, and the core loads at most
 * two vectors a cycle; a multiply that reads its B vector from memory (a memory operand) costs no extra instruction
 * slot. So per k: one broadcast of A, 12 multiplies each reading its vector of the packed B panel from L1, 12 adds —
 * 25 slots and 13 loads for 24 operations (at best 92% of the mul/add ceiling; the direct 6 × 8 tile, which keeps B
 * in registers, pays 8 loads into registers for 24 operations: 75%). 12 accumulators, the broadcast and the product
 * take 14 of the 16 ymm registers. GCC would load a vector read more than once into a register, hence the multiply
 * with a memory operand in asm (MUL_MEM256).
 *
 * A 48-column panel of KC256 = 64 steps of k is 24 KB and stays in L1 while every row of a chunk runs against it.
 * Each row's sums start at +0.0 (its first K block) or continue from its row of the partial tile P, and end in P or,
 * after its last K block, in C: C = s, or C = C_old + s under F_ADD (C_old is added last, never accumulated from) —
 * every output one dot product summed in increasing k, the order of the scalar reference.
 */
#define NVP256 12
#define WP256 (4 * NVP256)
#if defined(__GNUC__) && !defined(LLMCP_NO_ASM)
#define MUL_MEM256(x, p)                                                                                              \
  __extension__({                                                                                                     \
    __m256d r_;                                                                                                       \
    __asm__("vmulpd %2, %1, %0" : "=x"(r_) : "x"(x), "m"(*(const __m256d *)(p)));                                    \
    r_;                                                                                                               \
  })
#else
#define MUL_MEM256(x, p) _mm256_mul_pd((x), _mm256_load_pd(p))
#endif

/* K block of the packed AVX2 path (a KC256 × 48 panel of B: 24 KB). */
#ifndef KC256
#define KC256 64
#endif
/* Rows per chunk: each panel of B is packed once per chunk. */
#ifndef MC256
#define MC256 256
#endif
/*
 * Doubles of the partial tiles per chunk (MC256 × the column block's width: 576 KB, 6 panels at 256 rows, N 288). The
 * column block is the unit that reads the chunk's A once; a panel's tile streams from L2 or L3 row after row as its
 * rows run. At 192 KB (two panels, all in L2) N 256 took three column blocks, so three passes over the chunk's A: head
 * dx (K 4096, an 8 MB A) 5–7 % slower, ffn down 2–3 %. At 3 MB (32 panels) the products alone ran as fast or 1 %
 * faster, but an xl training step 1 % slower: tiles that large stream through L3 and push out what the step reads next.
 */
#ifndef PT256
#define PT256 73728
#endif
/*
 * Products of at most ROWS256 rows or at most SMALL256 multiply-adds run unpacked. Two rows already gain from the
 * panels (N 4096, K 256: 5.4 against 3.4 GMAC/s at 2 rows, 13.8 against 8.5 at 12); one row is bound by reading B.
 */
#ifndef ROWS256
#define ROWS256 1
#endif
#ifndef SMALL256
#define SMALL256 4096.0
#endif

/* One panel of one K block, run by a chunk's rows. */
typedef struct {
  int kb, n;                /* the K block: steps kb … kb+n−1 */
  int ic, j0, wp;           /* chunk's first row, panel's first column and width */
  const double *panel;      /* the packed panel, row k − kb at + (k − kb)·ldbp */
  ptrdiff_t ldbp;
  const double *at;         /* the chunk's A for the K block: A[i, k] at at + (i − ic)·ldat + k − kb (packed or in place) */
  ptrdiff_t ldat;
  double *P;                /* the panel's partial tile: row i − ic, column j − j0 at + (i − ic)·WP256 + j − j0 */
  const double *next;       /* the rows of B the next panel packs (row r at + r·ldb, nextW wide), NULL if none */
  int nextRows, nextW;
  int prefetchA;            /* 1: each row fetches the next row's run of A in place into L1 (A too large for L2) */
  int prefetchC;            /* in the last K block, each row fetches the row of C this many rows on for writing (0: none) */
} panel256;

/* The pieces of a row against a panel, NV vectors of it, shared by the two kernels below. */
/* The row's sums start at +0.0 (its first K block) or continue from its row of the partial tile. */
#define ROW_START256(NV, acc, first, pt)                                                                              \
  if (first) {                                                                                                        \
    _Pragma("GCC unroll 12") for (int v = 0; v < NV; v++) acc[v] = _mm256_setzero_pd();                              \
  } else {                                                                                                            \
    _Pragma("GCC unroll 12") for (int v = 0; v < NV; v++) acc[v] = _mm256_load_pd((pt) + 4 * v);                    \
  }
/* Fetches: row r of the chunk fetches row r of the next panel's B into L2 (its packing then reads no farther); the
 * next row's run of A in place (aNext, n steps) into L1 when A is read from L3 at every panel (+4 % for the xl value
 * mix). */
#define ROW_FETCH256(J, r, aNext, n)                                                                                  \
  if ((J)->next != NULL && (r) < (J)->nextRows) {                                                                     \
    const double *q_ = (J)->next + (ptrdiff_t)(r) * g->ldb;                                                           \
    for (int v = 0; v < (J)->nextW; v += 8) _mm_prefetch((const char *)(q_ + v), _MM_HINT_T1);                       \
    _mm_prefetch((const char *)(q_ + (J)->nextW - 1), _MM_HINT_T1);                                                   \
  }                                                                                                                   \
  if ((aNext) != NULL)                                                                                                \
    for (int q = 0; q < (n); q += 8) _mm_prefetch((const char *)((aNext) + q), _MM_HINT_T0);
/* n steps: acc += A's value (ap, one per step, broadcast) × the panel's row (bp, ldbp apart). */
#define ROW_SUMS256(NV, acc, ap, bp, n, ldbp)                                                                         \
  _Pragma("GCC unroll 2") for (int k = 0; k < (n); k++) {                                                            \
    const __m256d x = _mm256_broadcast_sd((ap)++);                                                                    \
    _Pragma("GCC unroll 12") for (int v = 0; v < NV; v++) acc[v] = _mm256_add_pd(acc[v], MUL_MEM256(x, (bp) + 4 * v)); \
    (bp) += (ldbp);                                                                                                   \
  }
/* The row's sums to its row of the partial tile (not its last K block), or to C: C = s, or C_old + s under F_ADD, the
 * last vector's lanes masked unless full. */
#define ROW_END256(NV, acc, last, pt, c, add, full, mask)                                                             \
  if (!(last)) {                                                                                                      \
    _Pragma("GCC unroll 12") for (int v = 0; v < NV; v++) _mm256_store_pd((pt) + 4 * v, acc[v]);                    \
  } else {                                                                                                            \
    _Pragma("GCC unroll 12") for (int v = 0; v < NV - 1; v++) {                                                      \
      __m256d out = acc[v];                                                                                           \
      if (add) out = _mm256_add_pd(_mm256_loadu_pd((c) + 4 * v), out);                                                \
      _mm256_storeu_pd((c) + 4 * v, out);                                                                             \
    }                                                                                                                 \
    __m256d out = acc[NV - 1];                                                                                        \
    if (full) {                                                                                                       \
      if (add) out = _mm256_add_pd(_mm256_loadu_pd((c) + 4 * (NV - 1)), out);                                         \
      _mm256_storeu_pd((c) + 4 * (NV - 1), out);                                                                      \
    } else {                                                                                                          \
      if (add) out = _mm256_add_pd(_mm256_maskload_pd((c) + 4 * (NV - 1), mask), out);                                \
      _mm256_maskstore_pd((c) + 4 * (NV - 1), mask, out);                                                             \
    }                                                                                                                 \
  }

/*
 * Rows i0 … i1−1 of a causal product against one panel, NV vectors of it (the rows' width w, from the panel's and
 * the causal bounds, has ⌈w/4⌉ = NV). Each row's causal bounds are block_bounds' for one row.
 */
#define DEFINE_MKP256(NV)                                                                                             \
  __attribute__((target("avx2"))) static void mkp256_##NV(const gemm_args *g, const panel256 *J, int i0, int i1) { \
    const int add = g->flags & F_ADD;                                                                                 \
    for (int i = i0; i < i1; i++) {                                                                                   \
      int jEnd, kBeg, kEnd, k0, k1, first, last;                                                                      \
      block_bounds(g, i, 1, &jEnd, &kBeg, &kEnd);                                                                     \
      if (kBeg >= kEnd) {                                                                                             \
        if (J->kb != 0) continue;                                                                                     \
        k0 = k1 = J->kb;                                                                                              \
        first = last = 1;                                                                                             \
      } else {                                                                                                        \
        k0 = kBeg > J->kb ? kBeg : J->kb;                                                                             \
        k1 = kEnd < J->kb + J->n ? kEnd : J->kb + J->n;                                                               \
        if (k0 >= k1) continue;                                                                                       \
        first = kBeg >= J->kb;                                                                                        \
        last = kEnd <= J->kb + J->n;                                                                                  \
      }                                                                                                               \
      double *const pt = J->P + (ptrdiff_t)(i - J->ic) * WP256;                                                       \
      double *const c = g->c + i * g->ldc + J->j0;                                                                    \
      __m256d acc[NV];                                                                                                \
      ROW_START256(NV, acc, first, pt)                                                                                \
      const double *ap = J->at + (ptrdiff_t)(i - J->ic) * J->ldat + (k0 - J->kb);                                    \
      const double *bp = J->panel + (ptrdiff_t)(k0 - J->kb) * J->ldbp;                                                \
      ROW_FETCH256(J, i - J->ic, J->prefetchA && i + 1 < i1 ? ap + J->ldat : NULL, k1 - k0)                           \
      ROW_SUMS256(NV, acc, ap, bp, k1 - k0, J->ldbp)                                                                  \
      const int lastLanes = imin(J->wp, jEnd - J->j0) - 4 * (NV - 1);                                                 \
      ROW_END256(NV, acc, last, pt, c, add, lastLanes == 4, LANES256(lastLanes))                                      \
    }                                                                                                                 \
  }

/*
 * Rows i0 … i1−1 of a product with no causal flag against one panel of NV vectors: every row has the whole K block
 * and the whole panel, so nothing is decided per row. (The row's work outside its loop is most of what a product
 * loses to its loop; this kernel against mkp256's per-row bounds: +1.5–4 % on the xl products.)
 */
#define DEFINE_MKQ256(NV)                                                                                             \
  __attribute__((target("avx2,prfchw"))) static void mkq256_##NV(const gemm_args *g, const panel256 *J, int i0, int i1) { \
    const int add = g->flags & F_ADD, first = J->kb == 0, last = J->kb + J->n >= g->K, n = J->n;                      \
    const ptrdiff_t ldat = J->ldat, ldc = g->ldc, ldbp = J->ldbp;                                                     \
    const double *ar = J->at + (ptrdiff_t)(i0 - J->ic) * ldat;                                                        \
    double *pt = J->P + (ptrdiff_t)(i0 - J->ic) * WP256;                                                              \
    double *c = g->c + i0 * ldc + J->j0;                                                                              \
    const int lastLanes = J->wp - 4 * (NV - 1), full = lastLanes == 4;                                                \
    const __m256i mask = LANES256(lastLanes);                                                                         \
    const int cFetchEnd = J->prefetchC ? i1 - J->prefetchC : i0;                                                      \
    for (int i = i0; i < i1; i++, ar += ldat, pt += WP256, c += ldc) {                                                \
      __m256d acc[NV];                                                                                                \
      ROW_START256(NV, acc, first, pt)                                                                                \
      ROW_FETCH256(J, i - J->ic, J->prefetchA && i + 1 < i1 ? ar + ldat : NULL, n)                                    \
      /* In the last K block, the row of C J->prefetchC rows on, for writing (a large C's lines come from memory:      \
       * +1 % at 256 × 4096). */                                                                                     \
      if (last && i < cFetchEnd) {                                                                                    \
        const double *q = c + J->prefetchC * ldc;                                                                     \
        for (int v = 0; v < J->wp; v += 8) __builtin_prefetch(q + v, 1, 3);                                           \
        __builtin_prefetch(q + J->wp - 1, 1, 3);                                                                      \
      }                                                                                                               \
      const double *ap = ar, *bp = J->panel;                                                                          \
      ROW_SUMS256(NV, acc, ap, bp, n, ldbp)                                                                           \
      ROW_END256(NV, acc, last, pt, c, add, full, mask)                                                                \
    }                                                                                                                 \
  }

#define DEFINE_PANEL_KERNELS256(NV) DEFINE_MKP256(NV) DEFINE_MKQ256(NV)
DEFINE_PANEL_KERNELS256(1)
DEFINE_PANEL_KERNELS256(2)
DEFINE_PANEL_KERNELS256(3)
DEFINE_PANEL_KERNELS256(4)
DEFINE_PANEL_KERNELS256(5)
DEFINE_PANEL_KERNELS256(6)
DEFINE_PANEL_KERNELS256(7)
DEFINE_PANEL_KERNELS256(8)
DEFINE_PANEL_KERNELS256(9)
DEFINE_PANEL_KERNELS256(10)
DEFINE_PANEL_KERNELS256(11)
DEFINE_PANEL_KERNELS256(12)

typedef void (*mkp256_fn)(const gemm_args *, const panel256 *, int, int);
static const mkp256_fn MKP256[NVP256] = {mkp256_1, mkp256_2, mkp256_3, mkp256_4,  mkp256_5,  mkp256_6,
                                         mkp256_7, mkp256_8, mkp256_9, mkp256_10, mkp256_11, mkp256_12};
static const mkp256_fn MKQ256[NVP256] = {mkq256_1, mkq256_2, mkq256_3, mkq256_4,  mkq256_5,  mkq256_6,
                                         mkq256_7, mkq256_8, mkq256_9, mkq256_10, mkq256_11, mkq256_12};

#ifndef PFA256
#define PFA256 262144.0
#endif
#ifndef PFC256
#define PFC256 2097152.0
#endif
#ifndef AKEEP256
#define AKEEP256 4194304.0
#endif
#ifndef PFB256
#define PFB256 6
#endif
/*
 * Rows 0 … n−1, columns 0 … w−1 (w ≥ 1) of a matrix (row r at src + r·lds) into `dst`, rows ldd apart (ldd a multiple
 * of 4, dst 32-byte aligned), each row zero from w to the next multiple of 4: B's panels (ldd = 4·⌈w/4⌉) and the K
 * blocks of A stored by rows (ldd = KC256 + 8).
 */
__attribute__((target("avx2"))) static void pack_rows256(const double *src, ptrdiff_t lds, int n, int w, double *dst, ptrdiff_t ldd) {
  const int pv = (w + 3) / 4;
  const __m256i lastMask = LANES256(w - 4 * (pv - 1));
  for (int k = 0; k < n; k++) {
    const double *s = src + (ptrdiff_t)k * lds;
    double *d = dst + (ptrdiff_t)k * ldd;
    /* The row PFB256 ahead (rows are often far apart, beyond what the hardware prefetcher follows). */
    if (k + PFB256 < n) {
      const double *ahead = s + PFB256 * lds;
      for (int v = 0; v < w; v += 8) _mm_prefetch((const char *)(ahead + v), _MM_HINT_T0);
      _mm_prefetch((const char *)(ahead + w - 1), _MM_HINT_T0);
    }
    for (int v = 0; v < pv - 1; v++) _mm256_store_pd(d + 4 * v, _mm256_loadu_pd(s + 4 * v));
    _mm256_store_pd(d + 4 * (pv - 1), _mm256_maskload_pd(s + 4 * (pv - 1), lastMask));
  }
}

/* dst (4 rows ldd apart) = the 4 × 4 block at src (rows lds apart) transposed, in registers. */
__attribute__((target("avx2"))) static inline void transpose4x4_256(double *dst, ptrdiff_t ldd, const double *src, ptrdiff_t lds) {
  const __m256d r0 = _mm256_loadu_pd(src), r1 = _mm256_loadu_pd(src + lds);
  const __m256d r2 = _mm256_loadu_pd(src + 2 * lds), r3 = _mm256_loadu_pd(src + 3 * lds);
  const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
  const __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
  _mm256_storeu_pd(dst, _mm256_permute2f128_pd(t0, t2, 0x20));
  _mm256_storeu_pd(dst + ldd, _mm256_permute2f128_pd(t1, t3, 0x20));
  _mm256_storeu_pd(dst + 2 * ldd, _mm256_permute2f128_pd(t0, t2, 0x31));
  _mm256_storeu_pd(dst + 3 * ldd, _mm256_permute2f128_pd(t1, t3, 0x31));
}

/*
 * Rows 0 … m−1 of A, stored transposed (F_TRANS_A: A[i, k] at at + k·lda + i), steps 0 … K−1, into row-major `ap`
 * (row i at ap + i·ldap): each row of A contiguous along k, as pack_rows256 packs A stored by rows. Reads each run of
 * A^T once, in order, four steps at a time. Values moved (and shuffled), never computed. The rows are rows
 * i0 … i0+m−1 of the product and the steps kOff … kOff+K−1 (for the causal flags).
 */
__attribute__((target("avx2"))) static void pack_at256(const double *at, ptrdiff_t lda, int K, int m, double *ap, ptrdiff_t ldap,
                                                       int i0, int kOff, int flags) {
  const int m4 = m & ~3, K4 = K & ~3;
  for (int k0 = 0; k0 < K4; k0 += 4) {
    const double *src = at + (ptrdiff_t)k0 * lda;
    /*
     * 4 × 4 blocks: four steps of four rows in, transposed in registers, four rows of four steps out; under the
     * causal contraction flags only the blocks some of whose rows contract (row i0 + i, step kOff + k: k ≥ i0 + i
     * under F_UPPER_K, k ≤ i0 + i under F_LOWER_K — the kernels' one-row bounds, so they read nothing else).
     */
    for (int i = 0; i < m4; i += 4) {
      if (((flags & F_UPPER_K) && i0 + i > kOff + k0 + 3) || ((flags & F_LOWER_K) && kOff + k0 > i0 + i + 3)) continue;
      transpose4x4_256(ap + (ptrdiff_t)i * ldap + k0, ldap, src + i, lda);
    }
    for (int i = m4; i < m; i++)
      for (int k = 0; k < 4; k++) ap[(ptrdiff_t)i * ldap + k0 + k] = src[(ptrdiff_t)k * lda + i];
  }
  for (int k = K4; k < K; k++)
    for (int i = 0; i < m; i++) ap[(ptrdiff_t)i * ldap + k] = at[(ptrdiff_t)k * lda + i];
}

/*
 * Where panel p of np = ⌈w/48⌉ starts in a block of w columns: p·w/np rounded up to a multiple of 4 (w itself for
 * p = np), so that no panel is wider than 48 columns.
 */
static int panel_start(int p, int np, int w) {
  if (p >= np) return w;
  return (int)(((int64_t)p * w + (int64_t)np * 4 - 1) / ((int64_t)np * 4)) * 4;
}

/*
 * The packed AVX2 path (more than ROWS256 rows and more than SMALL256 multiply-adds). Loops, outside in: row chunks of
 * MC256 rows, column blocks of whole panels (with several K blocks: as many as PT256 doubles of the chunk's partial
 * tiles allow), K blocks of KC256 (the chunk's A for the block packed at its first use, see below),
 * panels of at most 48 columns (all of them as even as multiples of 4 go: no narrow, latency-bound last panel; each
 * packed once per chunk, then L1-resident), the chunk's rows (in runs of rows with the same vector count: only the
 * causal output bound changes it). The causal bounds are block_bounds' for each row; an empty k range gives s = +0.0
 * (written in the first K block). Each panel has its own partial tile, rows 48 doubles apart, the column block's tiles
 * one after the other, so that a panel's rows stream their partial sums contiguously (one tile for the block, rows its
 * width apart, cost 0.5–1 % at two panels, up to 3 % at six).
 *
 * A is packed (A^T always; A stored by rows when three panels or more read it and its rows lie farther apart than
 * packed rows): each K block's rows KC256 + 8 doubles apart, one block after the other, so that every panel streams A
 * contiguously instead of one run per row a row stride apart (2–32 KB for the xl products: the same L1 and L2 sets, a
 * new page every row or two). +0–3.5 % on the xl products; head dx (K 4096) 2–4 % more from packing each block at its
 * first use rather than all of them before the first panel.
 *
 * Measured on Zen 2 and not kept (within noise or slower on the xl products and the training step's, M 2048):
 * chunks of 128, 192, 384 or 512 rows; panels of 13 vectors; the panels in reverse order every other K block; two
 * steps' A from one 128-bit broadcast and in-lane permutes, or tiles of 2 rows × 24 columns (72–80 % of the ceiling in
 * the loop alone, against 89 % for this one); fetching what the next packing of A reads while the current block's rows
 * run, under every hint: the packing's wait (2–6 % of a product with a large A) moved into the rows, which are bound
 * by their loads, and they lost 0.5–1.5 % more.
 */
__attribute__((target("avx2"))) static void gemm_avx2(const gemm_args *g) {
  const int M = g->M, N = g->N, K = g->K;
  if (M <= ROWS256 || (double)M * N * K <= SMALL256) {
    gemm_avx2_direct(g);
    return;
  }
  const int kc = KC256, W = WP256;
  const int mc = imin(M, MC256);
  /* ⌈N/48⌉ panels, as even as multiples of 4 columns go (N = 256: 44 + 44 + 40 + 44 + 44 + 40), none wider than 48. */
  const int panels = (N + W - 1) / W;
  /* Column blocks of whole panels: with one K block no partial tile, so one block; else the partial tile's budget. */
  const double ptBudget = t_pt256 > 0 ? t_pt256 : PT256, keepBudget = t_akeep256 > 0 ? t_akeep256 : AKEEP256;
  const double npFit = ptBudget / mc / W;
  const int npMax = K <= kc ? panels : npFit < 1 ? 1 : npFit > panels ? panels : (int)npFit;
  const int colBlocks = (panels + npMax - 1) / npMax;
  const int npb = (panels + colBlocks - 1) / colBlocks;
  /* A stored by rows is packed when three panels or more read it and its rows are farther apart than packed rows. */
  const int transA = (g->flags & F_TRANS_A) != 0, packA = transA || (panels > 2 && g->ars > kc + 8);
  const ptrdiff_t ldat = kc + 8; /* a line more than the K block: rows spread over L1's sets */
  const int nkb = (K + kc - 1) / kc;
  const ptrdiff_t atBlock = (ptrdiff_t)mc * ldat;
  /* The packed blocks are kept for the later column blocks (up to AKEEP256 doubles), else packed again at each. */
  const int keepA = packA && colBlocks > 1 && (double)nkb * atBlock <= keepBudget;
  const size_t panelSize = (size_t)kc * W, pSize = K > kc ? (size_t)npb * mc * W : 0,
               aSize = !packA ? 0 : keepA ? (size_t)nkb * atBlock : (size_t)atBlock;
  double *const Bp = scratch(panelSize + pSize + aSize);
  if (Bp == NULL) {
    gemm_avx2_direct(g);
    return;
  }
  double *const P = Bp + panelSize;
  double *const At = P + pSize;
  /* A chunk's A in place larger than PFA256 bytes is read from L3 at every panel: each row fetches the next row's run. */
  const int prefetchA = !packA && (double)mc * K * 8 > PFA256;
  /* A C larger than PFC256 bytes comes from memory: each row of the last K block fetches a later row's for writing. */
  const int prefetchC = (double)M * N * 8 > PFC256 ? 2 : 0;
  for (int ic = 0; ic < M; ic += mc) {
    const int icEnd = imin(M, ic + mc);
    for (int p0 = 0; p0 < panels; p0 += npb) {
      const int p1 = imin(panels, p0 + npb);
      int kb = 0;
      do { /* one pass at least: with K = 0 it writes the empty sums */
        const int n = K - kb < kc ? K - kb : kc;
        double *const atb = At + (keepA ? (kb / kc) * atBlock : 0);
        if (packA && n > 0 && (p0 == 0 || !keepA)) {
          if (transA)
            pack_at256(g->a + ic + (ptrdiff_t)kb * g->aks, g->aks, n, icEnd - ic, atb, ldat, ic, kb, g->flags);
          else
            pack_rows256(g->a + (ptrdiff_t)ic * g->ars + kb, g->ars, icEnd - ic, n, atb, ldat);
        }
        const double *const aBlock = packA ? atb : g->a + (ptrdiff_t)ic * g->ars + kb;
        const ptrdiff_t ldaBlock = packA ? ldat : g->ars;
        for (int p = p0; p < p1; p++) {
          const int j0 = panel_start(p, panels, N), wp = panel_start(p + 1, panels, N) - j0;
          /* The panel packed next: the block's next panel, else the next K block's first, else the next block's. */
          int nkb = kb, np_ = p + 1;
          if (np_ == p1) {
            np_ = p0;
            nkb = kb + n;
            if (nkb >= K) np_ = p1, nkb = 0;
          }
          const int nj0 = np_ < panels ? panel_start(np_, panels, N) : 0, nn = imin(kc, K - nkb);
          const double *next = np_ < panels && nn > 0 && (np_ != p || nkb != kb) ? g->b + (ptrdiff_t)nkb * g->ldb + nj0 : NULL;
          panel256 J = {kb, n, ic, j0, wp, Bp, 4 * ((wp + 3) / 4), aBlock, ldaBlock, P + (ptrdiff_t)(p - p0) * mc * W,
                        next, nn, next != NULL ? panel_start(np_ + 1, panels, N) - nj0 : 0, prefetchA, prefetchC};
          if (n > 0) pack_rows256(g->b + (ptrdiff_t)kb * g->ldb + j0, g->ldb, n, wp, Bp, 4 * ((wp + 3) / 4));
          if (!(g->flags & (F_LOWER_OUT | F_LOWER_K | F_UPPER_K))) {
            MKQ256[(wp + 3) / 4 - 1](g, &J, ic, icEnd);
            continue;
          }
          /* Runs of rows with the same vector count (all the chunk's rows but near a causal output bound). */
          int i = ic;
          while (i < icEnd) {
            int jEnd, kBeg, kEnd;
            block_bounds(g, i, 1, &jEnd, &kBeg, &kEnd);
            if (j0 >= jEnd) {
              i++;
              continue;
            }
            const int nv = (imin(wp, jEnd - j0) + 3) / 4;
            int i1 = i + 1;
            if (g->flags & F_LOWER_OUT) {
              while (i1 < icEnd && (imin(wp, imin(N, i1 + 1) - j0) + 3) / 4 == nv) i1++;
            } else {
              i1 = icEnd;
            }
            MKP256[nv - 1](g, &J, i, i1);
            i = i1;
          }
        }
        kb += n;
      } while (kb < K);
    }
  }
}

#endif /* LLMCP_X86 */

/* ── path selection ────────────────────────────────────────────────────── */

static int best_path(void) {
#ifdef LLMCP_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return PATH_AVX512;
  if (__builtin_cpu_supports("avx2")) return PATH_AVX2;
#endif
  return PATH_SCALAR;
}

/* Per thread: worker threads each choose for themselves (tests force a path on one thread). */
static _Thread_local int t_path = -1;

static int current_path(void) {
  if (t_path < 0) t_path = best_path();
  return t_path;
}

static void run_gemm(const gemm_args *g) {
  if (g->M <= 0 || g->N <= 0) return;
  switch (current_path()) {
#ifdef LLMCP_X86
    case PATH_AVX512:
      gemm_avx512(g);
      return;
    case PATH_AVX2:
      gemm_avx2(g);
      return;
#endif
    default:
      gemm_scalar(g);
  }
}

/* ── ceiling microbenchmark: independent multiply-then-add chains ─────── */

#ifdef LLMCP_X86
#define CHAINS 12
/*
 * 12 accumulator chains acc_c = acc_c + x·y_c in named registers; the empty asm
 * makes x opaque each iteration, so the products cannot be hoisted out of the loop.
 */
#define PEAK_BODY(VT, SET1, ZERO, MUL, ADD, LANES, STORE, CONSTRAINT)                                               \
  VT x = SET1(1.0000001);                                                                                           \
  VT y0 = SET1(1e-9), y1 = SET1(2e-9), y2 = SET1(3e-9), y3 = SET1(4e-9), y4 = SET1(5e-9), y5 = SET1(6e-9);           \
  VT y6 = SET1(7e-9), y7 = SET1(8e-9), y8 = SET1(9e-9), y9 = SET1(1e-8), y10 = SET1(1.1e-8), y11 = SET1(1.2e-8);     \
  VT a0 = ZERO(), a1 = ZERO(), a2 = ZERO(), a3 = ZERO(), a4 = ZERO(), a5 = ZERO();                                  \
  VT a6 = ZERO(), a7 = ZERO(), a8 = ZERO(), a9 = ZERO(), a10 = ZERO(), a11 = ZERO();                                \
  for (int64_t n = 0; n < iters; n++) {                                                                             \
    __asm__ volatile("" : "+" CONSTRAINT(x));                                                                       \
    a0 = ADD(a0, MUL(x, y0)); a1 = ADD(a1, MUL(x, y1)); a2 = ADD(a2, MUL(x, y2));                                    \
    a3 = ADD(a3, MUL(x, y3)); a4 = ADD(a4, MUL(x, y4)); a5 = ADD(a5, MUL(x, y5));                                    \
    a6 = ADD(a6, MUL(x, y6)); a7 = ADD(a7, MUL(x, y7)); a8 = ADD(a8, MUL(x, y8));                                    \
    a9 = ADD(a9, MUL(x, y9)); a10 = ADD(a10, MUL(x, y10)); a11 = ADD(a11, MUL(x, y11));                              \
  }                                                                                                                 \
  VT t = ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7)));                                         \
  t = ADD(t, ADD(ADD(a8, a9), ADD(a10, a11)));                                                                      \
  double out[LANES];                                                                                                \
  STORE(out, t);                                                                                                    \
  return out[0];

__attribute__((target("avx512f"))) static double peak_avx512(int64_t iters) {
  PEAK_BODY(__m512d, _mm512_set1_pd, _mm512_setzero_pd, _mm512_mul_pd, _mm512_add_pd, 8, _mm512_storeu_pd, "v")
}
__attribute__((target("avx2"))) static double peak_avx2(int64_t iters) {
  PEAK_BODY(__m256d, _mm256_set1_pd, _mm256_setzero_pd, _mm256_mul_pd, _mm256_add_pd, 4, _mm256_storeu_pd, "x")
}
#endif

/* Lanes per chain-step of each path (MACs per inner iteration of its peak loop). */
static double peak_run(int path, int64_t iters, double *macs) {
  switch (path) {
#ifdef LLMCP_X86
    case PATH_AVX512:
      *macs = (double)iters * CHAINS * 8;
      return peak_avx512(iters);
    case PATH_AVX2:
      *macs = (double)iters * CHAINS * 4;
      return peak_avx2(iters);
#endif
    default: {
      double x = 1.0000001;
      const double y0 = 1e-9, y1 = 2e-9, y2 = 3e-9, y3 = 4e-9, y4 = 5e-9, y5 = 6e-9, y6 = 7e-9, y7 = 8e-9;
      double a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
      for (int64_t n = 0; n < iters; n++) {
        __asm__ volatile("" : "+x"(x));
        a0 = a0 + x * y0;
        a1 = a1 + x * y1;
        a2 = a2 + x * y2;
        a3 = a3 + x * y3;
        a4 = a4 + x * y4;
        a5 = a5 + x * y5;
        a6 = a6 + x * y6;
        a7 = a7 + x * y7;
        __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(a6), "+x"(a7));
      }
      *macs = (double)iters * 8;
      return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    }
  }
}

/* ── Node-API glue ─────────────────────────────────────────────────────── */

#define MAX_DIM 2147483647.0
#define MAX_OFFSET 9007199254740991.0

/* A typed array of the wanted element type (`kind` names it in the TypeError otherwise). */
static int get_typed_array(napi_env env, napi_value v, napi_typedarray_type want, const char *kind, void **data,
                           size_t *length, const char *what) {
  napi_typedarray_type type;
  void *p = NULL;
  if (napi_get_typedarray_info(env, v, &type, length, &p, NULL, NULL) != napi_ok || type != want) {
    char msg[96];
    snprintf(msg, sizeof msg, "llmcp kernels: %s must be a%s %s", what, kind[0] == 'I' ? "n" : "", kind);
    napi_throw_type_error(env, NULL, msg);
    return 0;
  }
  *data = p;
  return 1;
}

static int get_f64_array(napi_env env, napi_value v, double **data, size_t *length, const char *what) {
  return get_typed_array(env, v, napi_float64_array, "Float64Array", (void **)data, length, what);
}

static int get_i32_array(napi_env env, napi_value v, int32_t **data, size_t *length, const char *what) {
  return get_typed_array(env, v, napi_int32_array, "Int32Array", (void **)data, length, what);
}

static int get_int(napi_env env, napi_value v, double max, int64_t *out, const char *what) {
  double d;
  if (napi_get_value_double(env, v, &d) != napi_ok || !(d >= 0 && d <= max) || d != (double)(int64_t)d) {
    char msg[112];
    snprintf(msg, sizeof msg, "llmcp kernels: %s must be a non-negative integer", what);
    napi_throw_range_error(env, NULL, msg);
    return 0;
  }
  *out = (int64_t)d;
  return 1;
}

/* Element [rows−1, cols−1] of a (rows, cols) view at `off` with stride `ld` must be inside the array. */
static int check_extent(napi_env env, size_t length, int64_t off, int64_t ld, int64_t rows, int64_t cols, const char *what) {
  if (rows == 0 || cols == 0) return 1;
  if (rows > 1 && ld < cols) {
    char msg[112];
    snprintf(msg, sizeof msg, "llmcp kernels: the row stride of %s is smaller than its width", what);
    napi_throw_range_error(env, NULL, msg);
    return 0;
  }
  const int64_t end = off + (rows - 1) * ld + cols; /* < 2^53 + 2^62: no overflow */
  if (end > (int64_t)length) {
    char msg[160];
    snprintf(msg, sizeof msg, "llmcp kernels: %s needs %lld elements, the array has %llu", what, (long long)end,
             (unsigned long long)length);
    napi_throw_range_error(env, NULL, msg);
    return 0;
  }
  return 1;
}

/* Batched correctly rounded exp (exp.ts's fast path per lane) and its Node-API function exp(). */
#include "exp.c"
/* The element-wise loops of SwiGLU, the cross-entropy, RMSNorm, RoPE and the attention softmax (uses run_exp). */
#include "elementwise.c"

/*
 * gemm(C, cOff, ldc, A, aOff, lda, B, bOff, ldb, M, N, K, flags): the semantics of gemm() in gemm.ts, and of
 * gemmTransA() with flag 16 (A stored [K, M]).
 */
static napi_value js_gemm(napi_env env, napi_callback_info info) {
  size_t argc = 13;
  napi_value argv[13];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
  if (argc < 13) {
    napi_throw_type_error(env, NULL, "llmcp kernels: gemm takes 13 arguments");
    return NULL;
  }
  double *C, *A, *B;
  size_t cLen, aLen, bLen;
  int64_t cOff, ldc, aOff, lda, bOff, ldb, M, N, K, flags;
  if (!get_f64_array(env, argv[0], &C, &cLen, "C") || !get_int(env, argv[1], MAX_OFFSET, &cOff, "cOff") ||
      !get_int(env, argv[2], MAX_DIM, &ldc, "ldc") || !get_f64_array(env, argv[3], &A, &aLen, "A") ||
      !get_int(env, argv[4], MAX_OFFSET, &aOff, "aOff") || !get_int(env, argv[5], MAX_DIM, &lda, "lda") ||
      !get_f64_array(env, argv[6], &B, &bLen, "B") || !get_int(env, argv[7], MAX_OFFSET, &bOff, "bOff") ||
      !get_int(env, argv[8], MAX_DIM, &ldb, "ldb") || !get_int(env, argv[9], MAX_DIM, &M, "M") ||
      !get_int(env, argv[10], MAX_DIM, &N, "N") || !get_int(env, argv[11], MAX_DIM, &K, "K") ||
      !get_int(env, argv[12], 31, &flags, "flags"))
    return NULL;
  const int transA = (flags & F_TRANS_A) != 0;
  if (!check_extent(env, cLen, cOff, ldc, M, N, "C") ||
      !check_extent(env, aLen, aOff, lda, transA ? K : M, transA ? M : K, "A") ||
      !check_extent(env, bLen, bOff, ldb, K, N, "B"))
    return NULL;
  gemm_args g = {C + cOff, A + aOff, B + bOff, (ptrdiff_t)ldc, transA ? 1 : (ptrdiff_t)lda, transA ? (ptrdiff_t)lda : 1,
                 (ptrdiff_t)ldb, (int)M, (int)N, (int)K, (int)flags};
  run_gemm(&g);
  return NULL;
}

/* ── transpose ─────────────────────────────────────────────────────────── */

/*
 * dst[s·ldd + r] = src[r·lds + s] for the R × S source: values moved, never computed, so every path gives the same
 * bits. The decoder's weights are transposed once per update (the input adjoints multiply by Wᵀ).
 */
static void transpose_scalar(double *dst, ptrdiff_t ldd, const double *src, ptrdiff_t lds, int R, int S, int r0, int s0) {
  for (int r = r0; r < R; r++)
    for (int s = 0; s < S; s++) dst[(ptrdiff_t)s * ldd + r] = src[(ptrdiff_t)r * lds + s];
  for (int r = 0; r < r0; r++)
    for (int s = s0; s < S; s++) dst[(ptrdiff_t)s * ldd + r] = src[(ptrdiff_t)r * lds + s];
}

#ifdef LLMCP_X86
/* 4 × 4 blocks transposed in registers (transpose4x4_256, as pack_at256 packs Aᵀ). */
__attribute__((target("avx2"))) static void transpose_avx2(double *dst, ptrdiff_t ldd, const double *src, ptrdiff_t lds, int R,
                                                           int S) {
  const int R4 = R & ~3, S4 = S & ~3;
  for (int r = 0; r < R4; r += 4) {
    const double *a = src + (ptrdiff_t)r * lds;
    for (int s = 0; s < S4; s += 4) transpose4x4_256(dst + (ptrdiff_t)s * ldd + r, ldd, a + s, lds);
  }
  transpose_scalar(dst, ldd, src, lds, R, S, R4, S4);
}
#endif

/*
 * transpose(dst, dOff, ldd, src, sOff, lds, R, S) → 0, or −1 when the two spans overlap (the caller transposes in
 * JavaScript): dst (S × R, rows ldd apart) = src (R × S, rows lds apart)ᵀ.
 */
static napi_value js_transpose(napi_env env, napi_callback_info info) {
  napi_value argv[8];
  if (!ew_args(env, info, 8, argv, "transpose")) return NULL;
  double *D, *S0;
  size_t dLen, sLen;
  int64_t dOff, ldd, sOff, lds, R, S;
  if (!get_f64_array(env, argv[0], &D, &dLen, "dst") || !get_int(env, argv[1], MAX_OFFSET, &dOff, "dOff") ||
      !get_int(env, argv[2], MAX_DIM, &ldd, "ldd") || !get_f64_array(env, argv[3], &S0, &sLen, "src") ||
      !get_int(env, argv[4], MAX_OFFSET, &sOff, "sOff") || !get_int(env, argv[5], MAX_DIM, &lds, "lds") ||
      !get_int(env, argv[6], MAX_DIM, &R, "R") || !get_int(env, argv[7], MAX_DIM, &S, "S"))
    return NULL;
  if (!check_extent(env, dLen, dOff, ldd, S, R, "dst") || !check_extent(env, sLen, sOff, lds, R, S, "src")) return NULL;
  if (R == 0 || S == 0) return ew_int(env, 0);
  double *d = D + dOff;
  const double *s = S0 + sOff;
  const char *dEnd = (const char *)(d + (S - 1) * ldd + R), *sEnd = (const char *)(s + (R - 1) * lds + S);
  if ((const char *)d < sEnd && (const char *)s < dEnd) return ew_int(env, -1);
#ifdef LLMCP_X86
  if (current_path() != PATH_SCALAR) {
    transpose_avx2(d, (ptrdiff_t)ldd, s, (ptrdiff_t)lds, (int)R, (int)S);
  } else
#endif
    transpose_scalar(d, (ptrdiff_t)ldd, s, (ptrdiff_t)lds, (int)R, (int)S, 0, 0);
  return ew_int(env, 0);
}

static int path_by_name(napi_env env, napi_value v, int *path) {
  char name[16];
  size_t n = 0;
  if (napi_get_value_string_utf8(env, v, name, sizeof name, &n) != napi_ok) return 0;
  for (int p = 0; p < 3; p++)
    if (strcmp(name, PATH_NAMES[p]) == 0) {
      *path = p;
      return 1;
    }
  return 0;
}

static int path_supported(int path) { return path <= best_path(); }

/* path(): the calling thread's path name. */
static napi_value js_path(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value out;
  napi_create_string_utf8(env, PATH_NAMES[current_path()], NAPI_AUTO_LENGTH, &out);
  return out;
}

/* supported(): the best path this CPU runs. */
static napi_value js_best(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value out;
  napi_create_string_utf8(env, PATH_NAMES[best_path()], NAPI_AUTO_LENGTH, &out);
  return out;
}

/* setPath(name): forces the calling thread's path (tests); 'best' restores the default. Returns the previous name. */
static napi_value js_set_path(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  const int previous = current_path();
  int path;
  char name[16];
  size_t n = 0;
  if (argc >= 1 && napi_get_value_string_utf8(env, argv[0], name, sizeof name, &n) == napi_ok && strcmp(name, "best") == 0) {
    t_path = best_path();
  } else if (argc < 1 || !path_by_name(env, argv[0], &path) || !path_supported(path)) {
    napi_throw_range_error(env, NULL, "llmcp kernels: setPath takes 'best', 'scalar', or a vector path this CPU supports");
    return NULL;
  } else {
    t_path = path;
  }
  napi_value out;
  napi_create_string_utf8(env, PATH_NAMES[previous], NAPI_AUTO_LENGTH, &out);
  return out;
}

/*
 * setBlocking(partialTile, keptA): the calling thread's limits of the packed AVX2 path in doubles (tests): the partial
 * tiles of a row chunk (PT256) and the packed A kept for later column blocks (AKEEP256); 0 restores a default.
 */
static napi_value js_set_blocking(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int64_t pt, keep;
  if (argc < 2) {
    napi_throw_type_error(env, NULL, "llmcp kernels: setBlocking takes (partialTile, keptA)");
    return NULL;
  }
  if (!get_int(env, argv[0], MAX_OFFSET, &pt, "partialTile") || !get_int(env, argv[1], MAX_OFFSET, &keep, "keptA")) return NULL;
  t_pt256 = (double)pt;
  t_akeep256 = (double)keep;
  return NULL;
}

/* peak(name, iterations): { macs, seconds } of independent multiply-then-add chains on that path. */
static napi_value js_peak(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int path;
  int64_t iters;
  if (argc < 2 || !path_by_name(env, argv[0], &path) || !path_supported(path)) {
    napi_throw_range_error(env, NULL, "llmcp kernels: peak takes a path this CPU supports");
    return NULL;
  }
  if (!get_int(env, argv[1], MAX_OFFSET, &iters, "iterations")) return NULL;
  struct timespec t0, t1;
  double macs = 0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  volatile double sink = peak_run(path, iters, &macs);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  (void)sink;
  const double seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  napi_value out, vm, vs;
  napi_create_object(env, &out);
  napi_create_double(env, macs, &vm);
  napi_create_double(env, seconds, &vs);
  napi_set_named_property(env, out, "macs", vm);
  napi_set_named_property(env, out, "seconds", vs);
  return out;
}

static napi_value init(napi_env env, napi_value exports) {
  static const struct {
    const char *name;
    napi_callback fn;
  } fns[] = {{"gemm", js_gemm}, {"path", js_path}, {"bestPath", js_best}, {"setPath", js_set_path},
               {"setBlocking", js_set_blocking},
               {"peak", js_peak},
               {"exp", js_exp},
               {"swigluForward", js_swiglu_forward},
               {"swigluBackward", js_swiglu_backward},
               {"crossEntropyShifts", js_ce_shifts},
               {"crossEntropyRows", js_ce_rows},
               {"rmsNormSums", js_rms_sums},
               {"rmsNormScale", js_rms_scale},
               {"rmsNormBackward", js_rms_backward},
               {"crossEntropyBackward", js_ce_backward},
               {"attentionSoftmax", js_att_softmax},
               {"attentionSoftmaxRows", js_att_softmax_rows},
               {"attentionSoftmaxBackward", js_att_softmax_backward},
               {"rope", js_rope},
               {"transpose", js_transpose}};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    napi_value f;
    if (napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].fn, NULL, &f) != napi_ok) return NULL;
    if (napi_set_named_property(env, exports, fns[i].name, f) != napi_ok) return NULL;
  }
  static const struct {
    const char *name;
    uint32_t value;
  } flags[] = {{"add", F_ADD}, {"lowerOut", F_LOWER_OUT}, {"lowerK", F_LOWER_K}, {"upperK", F_UPPER_K}, {"transA", F_TRANS_A}};
  napi_value flagObject;
  if (napi_create_object(env, &flagObject) != napi_ok) return NULL;
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
    napi_value v;
    napi_create_uint32(env, flags[i].value, &v);
    napi_set_named_property(env, flagObject, flags[i].name, v);
  }
  napi_set_named_property(env, exports, "gemmFlags", flagObject);
  napi_value version;
  napi_create_uint32(env, 4, &version);
  napi_set_named_property(env, exports, "abiVersion", version);
  return exports;
}

NAPI_MODULE_INIT() { return init(env, exports); }
