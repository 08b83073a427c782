/*
 * Batched correctly rounded e^x: the fast path of src/math/exp.ts, operation by operation, on 8 (AVX-512F),
 * 4 (AVX2) or 1 (plain C) lanes. Included by kernels.c (a unity build) after its path selection and Node-API helpers.
 *
 * Every lane performs exactly the IEEE double operations of exp.ts's fast path, in the same order, each
 * multiply and add rounded on its own (explicit intrinsics, -ffp-contract=off, never -ffast-math), with the
 * same constants: L1, L2, L3, INV_L and the 512-entry table T are passed in from JavaScript
 * (src/kernels/exp-batch.ts), so they are the very doubles exp.ts uses. A lane is finished here only when
 * exp.ts would return `y · 2^E` from its fast path (argument in range, rounding test conclusive,
 * −1021 ≤ E ≤ 1023); any other lane (NaN, ±Inf, out of range, failed rounding test, subnormal result,
 * E = 1024) is left undecided: its input is stored unchanged in `out` (so an in-place call keeps it) and its
 * index is appended to `undecided`, for the JavaScript wrapper to finish with exp() itself.
 */

/* Layout of the constants array passed from JavaScript: L1, L2, L3, INV_L, then T[0 … 511]. */
#define EXP_C_L1 0
#define EXP_C_L2 1
#define EXP_C_L3 2
#define EXP_C_INV_L 3
#define EXP_C_TABLE 4
#define EXP_C_LENGTH 516

/* The literals of exp.ts (the same decimal strings: the same doubles). */
#define EXP_SHIFTER 6755399441055744.0
#define EXP_SPLITTER 134217729.0
#define EXP_ERR 1.3552527156068805e-20
#define EXP_C3 (1.0 / 6.0)
#define EXP_C4 (1.0 / 24.0)
#define EXP_C5 (1.0 / 120.0)
#define EXP_C6 (1.0 / 720.0)
#define EXP_HI 709.79
#define EXP_LO (-745.2)
/* −1021 ≤ E = k >> 7 ≤ 1023  ⇔  −1021·128 ≤ k ≤ 1023·128 + 127 (k = kf, an exact integer in range). */
#define EXP_KF_MIN (-130688.0)
#define EXP_KF_MAX 131071.0

/* 2^E for −1022 ≤ E ≤ 1023, from its bits (equal to POW2_TABLE[E + 1074] of float-bits.ts). */
static double exp_pow2(int E) {
  const uint64_t bits = (uint64_t)(E + 1023) << 52;
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

/* Plain C: exp.ts line by line. Returns the number of undecided indices appended (from `base`). */
static int64_t exp_scalar(double *out, const double *x, int64_t n, int32_t *undecided, int64_t base, const double *C) {
  const double L1 = C[EXP_C_L1], L2 = C[EXP_C_L2], L3 = C[EXP_C_L3], INV_L = C[EXP_C_INV_L];
  const double *T = C + EXP_C_TABLE;
  int64_t count = 0;
  for (int64_t i = 0; i < n; i++) {
    const double xi = x[i];
    if (!(xi < EXP_HI && xi > EXP_LO)) {
      out[i] = xi;
      undecided[count++] = (int32_t)(base + i);
      continue;
    }
    const double kf = xi * INV_L + EXP_SHIFTER - EXP_SHIFTER;
    const int k = (int)kf;
    const int j = (k & 127) << 2;
    const int E = k >> 7;
    const double t1 = xi - kf * L1;
    const double u = kf * L2;
    const double rh = t1 - u;
    const double bb = rh - t1;
    const double rl = (t1 - (rh - bb)) - (u + bb) - kf * L3;
    const double r2 = rh * rh;
    const double q = r2 * (0.5 + (rh * EXP_C3 + r2 * (EXP_C4 + rh * EXP_C5 + r2 * EXP_C6))) + rh * rl;
    const double th = T[j], tl = T[j + 1], a1 = T[j + 2], a2 = T[j + 3];
    const double g = rh * EXP_SPLITTER;
    const double b1 = g - (g - rh);
    const double b2 = rh - b1;
    const double ph = th * rh;
    const double pl = a1 * b1 - ph + a1 * b2 + a2 * b1 + a2 * b2;
    const double s = rl + q;
    const double low = pl + (tl + (th * s + tl * rh));
    const double hi = th + ph;
    const double lo = th - hi + ph + low;
    const double y = hi + (lo - EXP_ERR);
    if (y != hi + (lo + EXP_ERR) || E < -1021 || E > 1023) {
      out[i] = xi;
      undecided[count++] = (int32_t)(base + i);
      continue;
    }
    out[i] = y * exp_pow2(E);
  }
  return count;
}

#ifdef LLMCP_X86

/*
 * The lanes' arithmetic of exp_avx512 and exp_avx2, exp_scalar's operations in its order, for the intrinsic
 * prefix P (_mm512 or _mm256) and vector type V of the doubles; IP, VI and BITS (_mm256, __m256i, 256 or _mm,
 * __m128i, 128) are those of the 32-bit lanes of k.
 * - EXP_VEC_CONSTANTS: the constants, broadcast; the table T; the mask and the exponent bias of the k lanes.
 * - EXP_VEC_REDUCE: from the argument xv, kf (k as a double), k, the table offset j = 4·(k & 127), E = k >> 7,
 *   the reduced argument rh + rl = x − kf·(L1 + L2 + L3) and the polynomial q.
 * - EXP_VEC_RESULT: with the table row (th, tl, a1, a2), the candidate y and its rounding-test twin y2 (th·rh
 *   exactly by Dekker's split, then the sums).
 */
#define EXP_VEC_CONSTANTS(P, V, IP, VI)                                                                               \
  const V L1 = P##_set1_pd(C[EXP_C_L1]), L2 = P##_set1_pd(C[EXP_C_L2]), L3 = P##_set1_pd(C[EXP_C_L3]);                \
  const V INV_L = P##_set1_pd(C[EXP_C_INV_L]);                                                                        \
  const V SH = P##_set1_pd(EXP_SHIFTER), SPL = P##_set1_pd(EXP_SPLITTER), ERR = P##_set1_pd(EXP_ERR);                 \
  const V C3 = P##_set1_pd(EXP_C3), C4 = P##_set1_pd(EXP_C4), C5 = P##_set1_pd(EXP_C5);                               \
  const V C6 = P##_set1_pd(EXP_C6), HALF = P##_set1_pd(0.5);                                                          \
  const V HI = P##_set1_pd(EXP_HI), LO = P##_set1_pd(EXP_LO);                                                         \
  const V KMIN = P##_set1_pd(EXP_KF_MIN), KMAX = P##_set1_pd(EXP_KF_MAX);                                             \
  const double *T = C + EXP_C_TABLE;                                                                                  \
  const VI M127 = IP##_set1_epi32(127), BIAS = IP##_set1_epi32(1023)

#define EXP_VEC_REDUCE(P, V, IP, VI, BITS)                                                                            \
  const V kf = P##_sub_pd(P##_add_pd(P##_mul_pd(xv, INV_L), SH), SH);                                                 \
  const VI k = P##_cvttpd_epi32(kf);                                                                                  \
  const VI j = IP##_slli_epi32(IP##_and_si##BITS(k, M127), 2);                                                        \
  const VI E = IP##_srai_epi32(k, 7);                                                                                 \
  const V t1 = P##_sub_pd(xv, P##_mul_pd(kf, L1));                                                                    \
  const V u = P##_mul_pd(kf, L2);                                                                                     \
  const V rh = P##_sub_pd(t1, u);                                                                                     \
  const V bb = P##_sub_pd(rh, t1);                                                                                    \
  const V rl = P##_sub_pd(P##_sub_pd(P##_sub_pd(t1, P##_sub_pd(rh, bb)), P##_add_pd(u, bb)), P##_mul_pd(kf, L3));     \
  const V r2 = P##_mul_pd(rh, rh);                                                                                    \
  /* C4 + rh·C5 + r2·C6, then rh·C3 + r2·(…) */                                                                       \
  const V p456 = P##_add_pd(P##_add_pd(C4, P##_mul_pd(rh, C5)), P##_mul_pd(r2, C6));                                  \
  const V p3 = P##_add_pd(P##_mul_pd(rh, C3), P##_mul_pd(r2, p456));                                                  \
  const V q = P##_add_pd(P##_mul_pd(r2, P##_add_pd(HALF, p3)), P##_mul_pd(rh, rl))

#define EXP_VEC_RESULT(P, V)                                                                                          \
  const V g = P##_mul_pd(rh, SPL);                                                                                    \
  const V b1 = P##_sub_pd(g, P##_sub_pd(g, rh));                                                                      \
  const V b2 = P##_sub_pd(rh, b1);                                                                                    \
  const V ph = P##_mul_pd(th, rh);                                                                                    \
  /* a1·b1 − ph + a1·b2 + a2·b1 + a2·b2, left to right */                                                             \
  V pl = P##_sub_pd(P##_mul_pd(a1, b1), ph);                                                                          \
  pl = P##_add_pd(pl, P##_mul_pd(a1, b2));                                                                            \
  pl = P##_add_pd(pl, P##_mul_pd(a2, b1));                                                                            \
  pl = P##_add_pd(pl, P##_mul_pd(a2, b2));                                                                            \
  const V s = P##_add_pd(rl, q);                                                                                      \
  const V low = P##_add_pd(pl, P##_add_pd(tl, P##_add_pd(P##_mul_pd(th, s), P##_mul_pd(tl, rh))));                    \
  const V hi = P##_add_pd(th, ph);                                                                                    \
  const V lo = P##_add_pd(P##_add_pd(P##_sub_pd(th, hi), ph), low);                                                   \
  const V y = P##_add_pd(hi, P##_sub_pd(lo, ERR));                                                                    \
  const V y2 = P##_add_pd(hi, P##_add_pd(lo, ERR))

/* ── AVX-512F: 8 lanes ──────────────────────────────────────────────── */

__attribute__((target("avx512f"))) static int64_t exp_avx512(double *out, const double *x, int64_t n, int32_t *undecided,
                                                              const double *C) {
  EXP_VEC_CONSTANTS(_mm512, __m512d, _mm256, __m256i);
  int64_t count = 0;
  for (int64_t i = 0; i < n; i += 8) {
    const int64_t left = n - i;
    const __mmask8 m = left >= 8 ? (__mmask8)0xff : (__mmask8)((1u << left) - 1u);
    const __m512d xv = _mm512_maskz_loadu_pd(m, x + i);
    __mmask8 ok = _mm512_cmp_pd_mask(xv, HI, _CMP_LT_OQ) & _mm512_cmp_pd_mask(xv, LO, _CMP_GT_OQ);
    EXP_VEC_REDUCE(_mm512, __m512d, _mm256, __m256i, 256);
    /* Each lane's table row (Th, Tl, a1, a2) in one 256-bit load, then an 8 × 4 transpose (cheaper than 4 gathers). */
    int32_t jj[8];
    _mm256_storeu_si256((__m256i *)jj, j);
    const __m512d z0 = _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_loadu_pd(T + jj[0])), _mm256_loadu_pd(T + jj[4]), 1);
    const __m512d z1 = _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_loadu_pd(T + jj[1])), _mm256_loadu_pd(T + jj[5]), 1);
    const __m512d z2 = _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_loadu_pd(T + jj[2])), _mm256_loadu_pd(T + jj[6]), 1);
    const __m512d z3 = _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_loadu_pd(T + jj[3])), _mm256_loadu_pd(T + jj[7]), 1);
    const __m512d lo01 = _mm512_unpacklo_pd(z0, z1), hi01 = _mm512_unpackhi_pd(z0, z1);
    const __m512d lo23 = _mm512_unpacklo_pd(z2, z3), hi23 = _mm512_unpackhi_pd(z2, z3);
    const __m512i PA = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0), PB = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
    const __m512d th = _mm512_permutex2var_pd(lo01, PA, lo23);
    const __m512d a1 = _mm512_permutex2var_pd(lo01, PB, lo23);
    const __m512d tl = _mm512_permutex2var_pd(hi01, PA, hi23);
    const __m512d a2 = _mm512_permutex2var_pd(hi01, PB, hi23);
    EXP_VEC_RESULT(_mm512, __m512d);
    ok &= _mm512_cmp_pd_mask(y, y2, _CMP_EQ_OQ) & _mm512_cmp_pd_mask(kf, KMIN, _CMP_GE_OQ) &
          _mm512_cmp_pd_mask(kf, KMAX, _CMP_LE_OQ);
    const __m512i e64 = _mm512_slli_epi64(_mm512_cvtepi32_epi64(_mm256_add_epi32(E, BIAS)), 52);
    const __m512d r = _mm512_mul_pd(y, _mm512_castsi512_pd(e64));
    _mm512_mask_storeu_pd(out + i, m, _mm512_mask_blend_pd(ok, xv, r));
    unsigned rest = (unsigned)(m & (__mmask8)~ok);
    while (rest != 0) {
      undecided[count++] = (int32_t)(i + __builtin_ctz(rest));
      rest &= rest - 1;
    }
  }
  return count;
}

/* ── AVX2: 4 lanes; the last n mod 4 elements by the plain C loop ────── */

__attribute__((target("avx2"))) static int64_t exp_avx2(double *out, const double *x, int64_t n, int32_t *undecided,
                                                         const double *C) {
  EXP_VEC_CONSTANTS(_mm256, __m256d, _mm, __m128i);
  int64_t count = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d xv = _mm256_loadu_pd(x + i);
    __m256d ok = _mm256_and_pd(_mm256_cmp_pd(xv, HI, _CMP_LT_OQ), _mm256_cmp_pd(xv, LO, _CMP_GT_OQ));
    EXP_VEC_REDUCE(_mm256, __m256d, _mm, __m128i, 128);
    /* Each lane's table row (Th, Tl, a1, a2) in one load, then a 4 × 4 transpose (cheaper than 4 gathers). */
    int32_t jj[4];
    _mm_storeu_si128((__m128i *)jj, j);
    const __m256d z0 = _mm256_loadu_pd(T + jj[0]), z1 = _mm256_loadu_pd(T + jj[1]);
    const __m256d z2 = _mm256_loadu_pd(T + jj[2]), z3 = _mm256_loadu_pd(T + jj[3]);
    const __m256d lo01 = _mm256_unpacklo_pd(z0, z1), hi01 = _mm256_unpackhi_pd(z0, z1);
    const __m256d lo23 = _mm256_unpacklo_pd(z2, z3), hi23 = _mm256_unpackhi_pd(z2, z3);
    const __m256d th = _mm256_permute2f128_pd(lo01, lo23, 0x20);
    const __m256d a1 = _mm256_permute2f128_pd(lo01, lo23, 0x31);
    const __m256d tl = _mm256_permute2f128_pd(hi01, hi23, 0x20);
    const __m256d a2 = _mm256_permute2f128_pd(hi01, hi23, 0x31);
    EXP_VEC_RESULT(_mm256, __m256d);
    ok = _mm256_and_pd(ok, _mm256_cmp_pd(y, y2, _CMP_EQ_OQ));
    ok = _mm256_and_pd(ok, _mm256_and_pd(_mm256_cmp_pd(kf, KMIN, _CMP_GE_OQ), _mm256_cmp_pd(kf, KMAX, _CMP_LE_OQ)));
    const __m256i e64 = _mm256_slli_epi64(_mm256_cvtepi32_epi64(_mm_add_epi32(E, BIAS)), 52);
    const __m256d r = _mm256_mul_pd(y, _mm256_castsi256_pd(e64));
    _mm256_storeu_pd(out + i, _mm256_blendv_pd(xv, r, ok));
    unsigned rest = (unsigned)(~_mm256_movemask_pd(ok) & 15);
    while (rest != 0) {
      undecided[count++] = (int32_t)(i + __builtin_ctz(rest));
      rest &= rest - 1;
    }
  }
  return count + exp_scalar(out + i, x + i, n - i, undecided + count, i, C);
}

#endif /* LLMCP_X86 */

static int64_t run_exp(double *out, const double *x, int64_t n, int32_t *undecided, const double *C) {
  if (n <= 0) return 0;
  switch (current_path()) {
#ifdef LLMCP_X86
    case PATH_AVX512:
      return exp_avx512(out, x, n, undecided, C);
    case PATH_AVX2:
      return exp_avx2(out, x, n, undecided, C);
#endif
    default:
      return exp_scalar(out, x, n, undecided, 0, C);
  }
}

/* ── Node-API: exp(out, outOff, x, xOff, n, undecided, constants) → count ── */

/* get_f64_array, get_i32_array, get_int, check_extent, MAX_OFFSET and MAX_DIM: the glue of kernels.c (included after it). */

/* Whether the byte ranges [a, a + na) and [b, b + nb) share a byte. */
static int exp_overlap(const void *a, size_t na, const void *b, size_t nb) {
  const uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
  return na != 0 && nb != 0 && pa < pb + nb && pb < pa + na;
}

/* ew_int, ew_args, ew_constants: the glue of the Node-API functions here and in elementwise.c (included after). */
static napi_value ew_int(napi_env env, int64_t v) {
  napi_value r;
  napi_create_int64(env, v, &r);
  return r;
}

static int ew_args(napi_env env, napi_callback_info info, size_t want, napi_value *argv, const char *name) {
  size_t argc = want;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return 0;
  if (argc < want) {
    char msg[96];
    snprintf(msg, sizeof msg, "llmcp kernels: %s takes %d arguments", name, (int)want);
    napi_throw_type_error(env, NULL, msg);
    return 0;
  }
  return 1;
}

static int ew_constants(napi_env env, napi_value v, double **C) {
  size_t len;
  if (!get_f64_array(env, v, C, &len, "constants")) return 0;
  if (len != EXP_C_LENGTH) {
    napi_throw_range_error(env, NULL, "llmcp kernels: constants must have 516 elements (L1, L2, L3, INV_L, T)");
    return 0;
  }
  return 1;
}

/*
 * exp(out, outOff, x, xOff, n, undecided, constants): out[outOff + i] = exp(x[xOff + i]) for the lanes decided
 * here; returns the number of undecided indices i (relative to the offsets, ascending) written to
 * undecided[0 …], whose out elements hold x[xOff + i] unchanged. `out` and `x` may be the same elements (in
 * place) but must not overlap otherwise; undecided must hold n indices; constants is exp-batch.ts's array.
 */
static napi_value js_exp(napi_env env, napi_callback_info info) {
  napi_value argv[7];
  if (!ew_args(env, info, 7, argv, "exp")) return NULL;
  double *out, *x, *C;
  int32_t *und;
  size_t outLen, xLen, undLen;
  int64_t outOff, xOff, n;
  if (!get_f64_array(env, argv[0], &out, &outLen, "out") || !get_int(env, argv[1], MAX_OFFSET, &outOff, "outOff") ||
      !get_f64_array(env, argv[2], &x, &xLen, "x") || !get_int(env, argv[3], MAX_OFFSET, &xOff, "xOff") ||
      !get_int(env, argv[4], MAX_DIM, &n, "n") || !get_i32_array(env, argv[5], &und, &undLen, "undecided") ||
      !ew_constants(env, argv[6], &C))
    return NULL;
  if (!check_extent(env, outLen, outOff, n, 1, n, "out") || !check_extent(env, xLen, xOff, n, 1, n, "x")) return NULL;
  if ((int64_t)undLen < n) {
    napi_throw_range_error(env, NULL, "llmcp kernels: undecided must have at least n elements");
    return NULL;
  }
  double *o = out + outOff;
  const double *xi = x + xOff;
  const size_t bytes = (size_t)n * sizeof(double);
  if ((o != xi && exp_overlap(o, bytes, xi, bytes)) || exp_overlap(und, (size_t)n * sizeof(int32_t), o, bytes) ||
      exp_overlap(und, (size_t)n * sizeof(int32_t), xi, bytes) || exp_overlap(C, sizeof(double) * EXP_C_LENGTH, o, bytes)) {
    napi_throw_range_error(env, NULL, "llmcp kernels: exp's out and x must be the same elements or disjoint (and undecided, constants disjoint from them)");
    return NULL;
  }
  return ew_int(env, run_exp(o, xi, n, und, C));
}
