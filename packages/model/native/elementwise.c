/*
 * The element-wise loops of the training step, in C: SwiGLU (src/kernels/swiglu.ts), the cross-entropy
 * (cross-entropy.ts), RMSNorm's row loops (rmsnorm.ts), RoPE (rope.ts) and attention's causal softmax
 * (attention.ts). Included by kernels.c after exp.c (it uses run_exp and the Node-API helpers). Every one is a
 * required member of the addon (native.ts refuses an addon lacking one).
 *
 * Every element runs exactly the IEEE operations of the TypeScript kernel, in the same order: the loops are
 * written element by element and compiled per path (AVX-512F, AVX2, plain C) with -O3 -ffp-contract=off, so the
 * compiler may only vectorise them across independent elements (no fused multiply-add, no reassociation: that
 * needs -ffast-math, which is never used). Sums that run along a row (the cross-entropy tail) stay one scalar
 * chain in index order. Elements whose exp the batch kernel leaves undecided are not finished here: their
 * indices are returned and the TypeScript wrapper finishes them with exp() itself (the softmax kernels are split
 * in two calls around that), which gives the same bits. Each function returns −1 without writing when two of its
 * arrays overlap (the wrappers then run their TypeScript loops).
 */

/* Elements per block: the exp arguments of a block are exponentiated while the block is still in L1. */
#define EW_BLOCK 512

#define EW_PATHS(DEF)                                                                                                 \
  DEF(scalar, )                                                                                                       \
  DEF(avx2, __attribute__((target("avx2"))))                                                                          \
  DEF(avx512, __attribute__((target("avx512f"))))

/* SwiGLU forward, before the exp: a = x ≥ 0 ? −x : x (NaN takes the second branch). */
#define DEF_SWF_ARG(P, ATTR)                                                                                          \
  ATTR static void swf_arg_##P(double *restrict a, const double *restrict gate, int64_t n) {                         \
    for (int64_t i = 0; i < n; i++) {                                                                                 \
      const double x = gate[i];                                                                                       \
      a[i] = x >= 0 ? -x : x;                                                                                         \
    }                                                                                                                 \
  }
EW_PATHS(DEF_SWF_ARG)

/* SwiGLU forward, after the exp (sigma holds e): σ = (x ≥ 0 ? 1 : e) / (1 + e), silu = x·σ, prod = silu·up. */
#define DEF_SWF_TAIL(P, ATTR)                                                                                         \
  ATTR static void swf_tail_##P(double *restrict prod, double *restrict silu, double *restrict sigma,                \
                                const double *restrict gate, const double *restrict up, int64_t n) {                  \
    for (int64_t i = 0; i < n; i++) {                                                                                 \
      const double x = gate[i];                                                                                       \
      const double e = sigma[i];                                                                                      \
      const double s = (x >= 0 ? 1.0 : e) / (1.0 + e);                                                                \
      sigma[i] = s;                                                                                                   \
      const double y = x * s;                                                                                         \
      silu[i] = y;                                                                                                    \
      prod[i] = y * up[i];                                                                                            \
    }                                                                                                                 \
  }
EW_PATHS(DEF_SWF_TAIL)

/* SwiGLU backward: dsilu = 0 + u·up, dup = 0 + u·silu, dgate = 0 + dsilu·(σ·(1 + x·(1 − σ))). */
#define DEF_SWB(P, ATTR)                                                                                              \
  ATTR static void swb_##P(double *restrict dgate, double *restrict dup, double *restrict dsilu,                     \
                           const double *restrict dprod, const double *restrict gate, const double *restrict sigma,   \
                           const double *restrict silu, const double *restrict up, int64_t n) {                       \
    for (int64_t i = 0; i < n; i++) {                                                                                 \
      const double u = dprod[i];                                                                                      \
      const double ds = 0 + u * up[i];                                                                                \
      dsilu[i] = ds;                                                                                                  \
      dup[i] = 0 + u * silu[i];                                                                                       \
      const double s = sigma[i];                                                                                      \
      const double local = s * (1.0 + gate[i] * (1.0 - s));                                                          \
      dgate[i] = 0 + ds * local;                                                                                      \
    }                                                                                                                 \
  }
EW_PATHS(DEF_SWB)

/* Cross-entropy, one row: shifts z − m into p; then (after the exp) p / (1 + tail) + 0. */
#define DEF_CE(P, ATTR)                                                                                               \
  ATTR static void ce_shift_##P(double *restrict p, const double *restrict z, double m, int64_t n) {                 \
    for (int64_t c = 0; c < n; c++) p[c] = z[c] - m;                                                                  \
  }                                                                                                                   \
  ATTR static void ce_scale_##P(double *restrict p, double den, int64_t n) {                                         \
    for (int64_t c = 0; c < n; c++) p[c] = p[c] / den + 0;                                                            \
  }
EW_PATHS(DEF_CE)

#ifdef LLMCP_X86
#define EW_DISPATCH(NAME, ...)                                                                                        \
  do {                                                                                                                \
    switch (current_path()) {                                                                                         \
      case PATH_AVX512:                                                                                               \
        NAME##_avx512(__VA_ARGS__);                                                                                   \
        break;                                                                                                        \
      case PATH_AVX2:                                                                                                 \
        NAME##_avx2(__VA_ARGS__);                                                                                     \
        break;                                                                                                        \
      default:                                                                                                        \
        NAME##_scalar(__VA_ARGS__);                                                                                   \
    }                                                                                                                 \
  } while (0)
#else
#define EW_DISPATCH(NAME, ...) NAME##_scalar(__VA_ARGS__)
#endif

/* The arrays of one call: a pointer and an element count each (after the offset). */
typedef struct {
  const void *p;
  size_t bytes;
} ew_span;

/* Whether any two of the spans share a byte (the kernels run on disjoint arrays only). */
static int ew_any_overlap(const ew_span *s, int k) {
  for (int a = 0; a < k; a++)
    for (int b = a + 1; b < k; b++)
      if (exp_overlap(s[a].p, s[a].bytes, s[b].p, s[b].bytes)) return 1;
  return 0;
}

/* Reads `count` Float64Arrays from argv (names for the errors) and checks that each holds `need[k]` elements. */
static int ew_f64_args(napi_env env, const napi_value *argv, int count, const char *const *names, const int64_t *need,
                       double **a, ew_span *spans) {
  for (int k = 0; k < count; k++) {
    size_t len;
    if (!get_f64_array(env, argv[k], &a[k], &len, names[k])) return 0;
    if (!check_extent(env, len, 0, 1, 1, need[k], names[k])) return 0;
    spans[k].p = a[k];
    spans[k].bytes = (size_t)need[k] * sizeof(double);
  }
  return 1;
}

/* The row's maximum by the TypeScript loops' scan `z > m` from −∞. */
static inline double ew_row_max(const double *z, int64_t n) {
  double m = -__builtin_inf();
  for (int64_t c = 0; c < n; c++) m = z[c] > m ? z[c] : m;
  return m;
}

/*
 * exp in place on one row p[0 … n−1], element `at` of its array onwards: its undecided indices, made relative to
 * the array, go ascending to und; returns their count.
 */
static inline int64_t ew_row_exp(double *p, int64_t n, int32_t *und, int64_t at, const double *C) {
  const int64_t c = run_exp(p, p, n, und, C);
  for (int64_t t = 0; t < c; t++) und[t] += (int32_t)at;
  return c;
}

/* The softmax tail of one row: Σ p[c] in order, skipping the first c whose shift z[c] − m is exactly zero. */
static inline double ew_tail(const double *p, const double *z, double m, int64_t n) {
  double tail = 0;
  int64_t c = 0;
  for (; c < n && z[c] - m != 0; c++) tail += p[c];
  for (c++; c < n; c++) tail += p[c];
  return tail;
}

/*
 * swigluForward(prod, silu, sigma, gate, up, n, undecided, constants) → count: swiglu.ts's forward on elements
 * 0 … n−1 (offset 0, all arrays disjoint), except the `count` indices written ascending to undecided (their exp
 * was undecided), whose outputs the caller computes. undecided holds n. Returns −1, writing nothing, when two
 * of the arrays overlap (the caller then runs the TypeScript loop).
 */
static napi_value js_swiglu_forward(napi_env env, napi_callback_info info) {
  napi_value argv[8];
  if (!ew_args(env, info, 8, argv, "swigluForward")) return NULL;
  double *prod, *silu, *sigma, *gate, *up, *C;
  int32_t *und;
  size_t lp, ls, lg, lx, lu, lund;
  int64_t n;
  if (!get_f64_array(env, argv[0], &prod, &lp, "prod") || !get_f64_array(env, argv[1], &silu, &ls, "silu") ||
      !get_f64_array(env, argv[2], &sigma, &lg, "sigma") || !get_f64_array(env, argv[3], &gate, &lx, "gate") ||
      !get_f64_array(env, argv[4], &up, &lu, "up") || !get_int(env, argv[5], MAX_DIM, &n, "n") ||
      !get_i32_array(env, argv[6], &und, &lund, "undecided") || !ew_constants(env, argv[7], &C))
    return NULL;
  if (!check_extent(env, lp, 0, n, 1, n, "prod") || !check_extent(env, ls, 0, n, 1, n, "silu") ||
      !check_extent(env, lg, 0, n, 1, n, "sigma") || !check_extent(env, lx, 0, n, 1, n, "gate") ||
      !check_extent(env, lu, 0, n, 1, n, "up") || !check_extent(env, lund, 0, n, 1, n, "undecided"))
    return NULL;
  const size_t b = (size_t)n * sizeof(double);
  const ew_span spans[] = {{prod, b}, {silu, b}, {sigma, b}, {gate, b}, {up, b}, {und, (size_t)n * 4}, {C, 8 * EXP_C_LENGTH}};
  if (ew_any_overlap(spans, 7)) return ew_int(env, -1);
  int64_t count = 0;
  for (int64_t i0 = 0; i0 < n; i0 += EW_BLOCK) {
    const int64_t m = n - i0 < EW_BLOCK ? n - i0 : EW_BLOCK;
    EW_DISPATCH(swf_arg, sigma + i0, gate + i0, m);
    const int64_t c = m > 0 ? run_exp(sigma + i0, sigma + i0, m, und + count, C) : 0;
    for (int64_t t = 0; t < c; t++) und[count + t] += (int32_t)i0;
    count += c;
    EW_DISPATCH(swf_tail, prod + i0, silu + i0, sigma + i0, gate + i0, up + i0, m);
  }
  return ew_int(env, count);
}

/* swigluBackward(dgate, dup, dsilu, dprod, gate, sigma, silu, up, n) → 0: swiglu.ts's backward (offset 0); −1,
 * writing nothing, when two of the arrays overlap. */
static napi_value js_swiglu_backward(napi_env env, napi_callback_info info) {
  napi_value argv[9];
  if (!ew_args(env, info, 9, argv, "swigluBackward")) return NULL;
  static const char *const names[8] = {"dgate", "dup", "dsilu", "dprod", "gate", "sigma", "silu", "up"};
  double *a[8];
  size_t len[8];
  int64_t n;
  for (int k = 0; k < 8; k++)
    if (!get_f64_array(env, argv[k], &a[k], &len[k], names[k])) return NULL;
  if (!get_int(env, argv[8], MAX_DIM, &n, "n")) return NULL;
  ew_span spans[8];
  for (int k = 0; k < 8; k++) {
    if (!check_extent(env, len[k], 0, n, 1, n, names[k])) return NULL;
    spans[k].p = a[k];
    spans[k].bytes = (size_t)n * sizeof(double);
  }
  if (ew_any_overlap(spans, 8)) return ew_int(env, -1);
  if (n > 0) EW_DISPATCH(swb, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], n);
  return ew_int(env, 0);
}

/*
 * crossEntropyShifts(prob, logits, stats, rows, V, undecided, constants) → count: cross-entropy.ts's first two
 * steps on rows 0 … rows−1 (offset 0, disjoint): stats[2r] = m (the scan `z > m`), prob = exp(z − m); the
 * `count` element indices whose exp was undecided are written ascending to undecided (room for rows·V), their
 * prob holding the shift, for the caller to finish with exp(). −1, writing nothing, when arrays overlap.
 */
static napi_value js_ce_shifts(napi_env env, napi_callback_info info) {
  napi_value argv[7];
  if (!ew_args(env, info, 7, argv, "crossEntropyShifts")) return NULL;
  double *prob, *logits, *stats, *C;
  int32_t *und;
  size_t lp, ll, ls, lu;
  int64_t rows, V;
  if (!get_f64_array(env, argv[0], &prob, &lp, "prob") || !get_f64_array(env, argv[1], &logits, &ll, "logits") ||
      !get_f64_array(env, argv[2], &stats, &ls, "stats") || !get_int(env, argv[3], MAX_DIM, &rows, "rows") ||
      !get_int(env, argv[4], MAX_DIM, &V, "V") || !get_i32_array(env, argv[5], &und, &lu, "undecided") ||
      !ew_constants(env, argv[6], &C))
    return NULL;
  if (!check_extent(env, lp, 0, V, rows, V, "prob") || !check_extent(env, ll, 0, V, rows, V, "logits") ||
      !check_extent(env, ls, 0, 2, rows, 2, "stats") || !check_extent(env, lu, 0, 1, 1, rows * V, "undecided"))
    return NULL;
  const size_t b = (size_t)(rows * V) * sizeof(double);
  const ew_span spans[] = {{prob, b}, {logits, b}, {stats, (size_t)rows * 16}, {und, (size_t)(rows * V) * 4}, {C, 8 * EXP_C_LENGTH}};
  if (ew_any_overlap(spans, 5)) return ew_int(env, -1);
  int64_t count = 0;
  for (int64_t r = 0; r < rows && V > 0; r++) {
    const double *z = logits + r * V;
    double *p = prob + r * V;
    const double m = ew_row_max(z, V);
    stats[2 * r] = m;
    EW_DISPATCH(ce_shift, p, z, m, V);
    count += ew_row_exp(p, V, und + count, r * V, C);
  }
  return ew_int(env, count);
}

/*
 * crossEntropyRows(prob, logits, stats, rows, V) → 0: the rest of cross-entropy.ts's forward, after
 * crossEntropyShifts (prob = exp(z − m) everywhere): stats[2r + 1] = tail (the sum in order, the first exactly
 * zero shift skipped), prob = prob / (1 + tail) + 0. −1, writing nothing, when arrays overlap.
 */
static napi_value js_ce_rows(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  if (!ew_args(env, info, 5, argv, "crossEntropyRows")) return NULL;
  int64_t rows, V;
  if (!get_int(env, argv[3], MAX_DIM, &rows, "rows") || !get_int(env, argv[4], MAX_DIM, &V, "V")) return NULL;
  static const char *const names[3] = {"prob", "logits", "stats"};
  const int64_t need[3] = {rows * V, rows * V, 2 * rows};
  double *a[3];
  ew_span spans[3];
  if (!ew_f64_args(env, argv, 3, names, need, a, spans)) return NULL;
  if (ew_any_overlap(spans, 3)) return ew_int(env, -1);
  double *prob = a[0], *stats = a[2];
  const double *logits = a[1];
  for (int64_t r = 0; r < rows && V > 0; r++) {
    const double *z = logits + r * V;
    double *p = prob + r * V;
    /* The shift is tested, not its exp; the first exact zero is skipped, the others summed in order. */
    const double tail = ew_tail(p, z, stats[2 * r], V);
    stats[2 * r + 1] = tail;
    EW_DISPATCH(ce_scale, p, 1.0 + tail, V);
  }
  return ew_int(env, 0);
}

/* RMSNorm (src/kernels/rmsnorm.ts): the row loops around the batched ln/exp. */
#define DEF_RMS(P, ATTR)                                                                                              \
  ATTR static void rms_norm_##P(double *restrict out, double *restrict nrm, const double *restrict x,               \
                                const double *restrict gain, double iv, int64_t D) {                                  \
    for (int64_t c = 0; c < D; c++) {                                                                                 \
      const double v = x[c] * iv;                                                                                     \
      nrm[c] = v;                                                                                                     \
      out[c] = v * gain[c];                                                                                           \
    }                                                                                                                 \
  }                                                                                                                   \
  ATTR static void rms_back_a_##P(double *restrict gt, double *restrict dn, const double *restrict u,               \
                                  const double *restrict nrm, const double *restrict gain, int64_t D) {               \
    for (int64_t c = 0; c < D; c++) {                                                                                 \
      gt[c] = u[c] * nrm[c];                                                                                          \
      dn[c] = 0 + u[c] * gain[c];                                                                                     \
    }                                                                                                                 \
  }                                                                                                                   \
  ATTR static void rms_back_c_##P(double *restrict dx, const double *restrict dn, const double *restrict x,         \
                                  double iv, double d2, int64_t D) {                                                  \
    for (int64_t c = 0; c < D; c++) {                                                                                 \
      const double sq = d2 * x[c];                                                                                    \
      dx[c] = dx[c] + dn[c] * iv + sq + sq;                                                                           \
    }                                                                                                                 \
  }
EW_PATHS(DEF_RMS)

/*
 * rmsNormSums(ms, st, x, rows, D, eps) → 0: rmsnorm.ts's first forward loop (ms[r] = Σ x² / D in order,
 * st[r] = ms[r] + eps); −1, writing nothing, when two arrays overlap.
 */
static napi_value js_rms_sums(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  if (!ew_args(env, info, 6, argv, "rmsNormSums")) return NULL;
  int64_t rows, D;
  double eps;
  if (!get_int(env, argv[3], MAX_DIM, &rows, "rows") || !get_int(env, argv[4], MAX_DIM, &D, "D")) return NULL;
  if (napi_get_value_double(env, argv[5], &eps) != napi_ok) {
    napi_throw_type_error(env, NULL, "llmcp kernels: eps must be a number");
    return NULL;
  }
  static const char *const names[3] = {"ms", "st", "x"};
  const int64_t need[3] = {rows, rows, rows * D};
  double *a[3];
  ew_span spans[3];
  if (!ew_f64_args(env, argv, 3, names, need, a, spans)) return NULL;
  if (ew_any_overlap(spans, 3)) return ew_int(env, -1);
  for (int64_t r = 0; r < rows; r++) {
    const double *xr = a[2] + r * D;
    double s = 0;
    for (int64_t c = 0; c < D; c++) s += xr[c] * xr[c];
    const double m = s / (double)D;
    a[0][r] = m;
    a[1][r] = m + eps;
  }
  return ew_int(env, 0);
}

/*
 * rmsNormScale(out, normalized, x, gain, inv, rows, D) → 0: rmsnorm.ts's last forward loop; −1, writing
 * nothing, when two arrays overlap.
 */
static napi_value js_rms_scale(napi_env env, napi_callback_info info) {
  napi_value argv[7];
  if (!ew_args(env, info, 7, argv, "rmsNormScale")) return NULL;
  int64_t rows, D;
  if (!get_int(env, argv[5], MAX_DIM, &rows, "rows") || !get_int(env, argv[6], MAX_DIM, &D, "D")) return NULL;
  static const char *const names[5] = {"out", "normalized", "x", "gain", "inv"};
  const int64_t need[5] = {rows * D, rows * D, rows * D, rows > 0 ? D : 0, rows};
  double *a[5];
  ew_span spans[5];
  if (!ew_f64_args(env, argv, 5, names, need, a, spans)) return NULL;
  if (ew_any_overlap(spans, 5)) return ew_int(env, -1);
  for (int64_t r = 0; r < rows && D > 0; r++) EW_DISPATCH(rms_norm, a[0] + r * D, a[1] + r * D, a[2] + r * D, a[3], a[4][r], D);
  return ew_int(env, 0);
}

/*
 * rmsNormBackward(dx, gainTerms, normalized, inv, st, dnormalized, rowAdjoints, u, x, gain, rows, D) → 0:
 * rmsnorm.ts's backward (the sum di in order, one scalar chain per row); −1, writing nothing, when two arrays
 * overlap.
 */
static napi_value js_rms_backward(napi_env env, napi_callback_info info) {
  napi_value argv[12];
  if (!ew_args(env, info, 12, argv, "rmsNormBackward")) return NULL;
  int64_t rows, D;
  if (!get_int(env, argv[10], MAX_DIM, &rows, "rows") || !get_int(env, argv[11], MAX_DIM, &D, "D")) return NULL;
  static const char *const names[10] = {"dx", "gainTerms", "normalized", "inv", "st", "dnormalized", "rowAdjoints", "u", "x", "gain"};
  const int64_t RD = rows * D;
  const int64_t need[10] = {RD, RD, RD, rows, rows, RD, 5 * rows, RD, RD, rows > 0 ? D : 0};
  double *a[10];
  ew_span spans[10];
  if (!ew_f64_args(env, argv, 10, names, need, a, spans)) return NULL;
  if (ew_any_overlap(spans, 10)) return ew_int(env, -1);
  double *dx = a[0], *gt = a[1], *dn = a[5], *ra = a[6];
  const double *nrm = a[2], *inv = a[3], *st = a[4], *u = a[7], *x = a[8], *gain = a[9];
  for (int64_t r = 0; r < rows; r++) {
    const int64_t o = r * D;
    const double iv = inv[r];
    if (D > 0) EW_DISPATCH(rms_back_a, gt + o, dn + o, u + o, nrm + o, gain, D);
    double di = 0;
    for (int64_t c = 0; c < D; c++) di += dn[o + c] * x[o + c];
    const double dsl = 0 + di * iv;
    const double dlg = 0 + dsl * -0.5;
    const double dst = 0 + dlg / st[r];
    const double d2 = 0 + dst / (double)D;
    ra[5 * r] = di;
    ra[5 * r + 1] = dsl;
    ra[5 * r + 2] = dlg;
    ra[5 * r + 3] = dst;
    ra[5 * r + 4] = d2;
    if (D > 0) EW_DISPATCH(rms_back_c, dx + o, dn + o, x + o, iv, d2, D);
  }
  return ew_int(env, 0);
}

/* Cross-entropy backward (cross-entropy.ts): g = p (minus 1 at the target) times k, canonical +0. */
#define DEF_CEB(P, ATTR)                                                                                              \
  ATTR static void ceb_##P(double *restrict d, const double *restrict p, double k, int64_t V) {                      \
    for (int64_t c = 0; c < V; c++) d[c] = p[c] * k + 0;                                                              \
  }
EW_PATHS(DEF_CEB)

/*
 * crossEntropyBackward(dlogits, prob, targets, tOff, rows, V, k) → 0: cross-entropy.ts's backward (targets an
 * Int32Array read at tOff + r; every target in [0, V)); −1, writing nothing, when arrays overlap or a target is
 * out of range.
 */
static napi_value js_ce_backward(napi_env env, napi_callback_info info) {
  napi_value argv[7];
  if (!ew_args(env, info, 7, argv, "crossEntropyBackward")) return NULL;
  int64_t tOff, rows, V;
  double k;
  int32_t *tg;
  size_t tLen;
  if (!get_i32_array(env, argv[2], &tg, &tLen, "targets") || !get_int(env, argv[3], MAX_OFFSET, &tOff, "tOff") ||
      !get_int(env, argv[4], MAX_DIM, &rows, "rows") || !get_int(env, argv[5], MAX_DIM, &V, "V"))
    return NULL;
  if (napi_get_value_double(env, argv[6], &k) != napi_ok) {
    napi_throw_type_error(env, NULL, "llmcp kernels: k must be a number");
    return NULL;
  }
  if (!check_extent(env, tLen, tOff, 1, 1, rows, "targets")) return NULL;
  static const char *const names[2] = {"dlogits", "prob"};
  const int64_t need[2] = {rows * V, rows * V};
  double *a[2];
  ew_span spans[3];
  if (!ew_f64_args(env, argv, 2, names, need, a, spans)) return NULL;
  spans[2].p = tg + tOff;
  spans[2].bytes = (size_t)rows * 4;
  if (ew_any_overlap(spans, 3)) return ew_int(env, -1);
  for (int64_t r = 0; r < rows; r++)
    if (tg[tOff + r] < 0 || tg[tOff + r] >= V) return ew_int(env, -1);
  for (int64_t r = 0; r < rows; r++) {
    const int64_t o = r * V;
    const int32_t y = tg[tOff + r];
    EW_DISPATCH(ceb, a[0] + o, a[1] + o, k, V);
    const double g = a[1][o + y] - 1.0;
    a[0][o + y] = g * k + 0;
  }
  return ew_int(env, 0);
}

/* Attention's causal softmax (attention.ts), one row: scaled scores in place, then the shifts. */
#define DEF_ATT(P, ATTR)                                                                                              \
  ATTR static void att_scale_##P(double *restrict s, double scale, int64_t n) {                                      \
    for (int64_t j = 0; j < n; j++) s[j] = s[j] * scale;                                                              \
  }                                                                                                                   \
  ATTR static void att_zero_##P(double *restrict p, int64_t n) {                                                     \
    for (int64_t j = 0; j < n; j++) p[j] = 0;                                                                         \
  }                                                                                                                   \
  ATTR static void att_back_##P(double *restrict draw, const double *restrict dp, const double *restrict p, double w, \
                                double scale, int64_t n) {                                                            \
    for (int64_t j = 0; j < n; j++) {                                                                                 \
      const double ds = p[j] * (dp[j] - w) + 0;                                                                       \
      draw[j] = 0 + ds * scale;                                                                                       \
    }                                                                                                                 \
  }
EW_PATHS(DEF_ATT)

/*
 * attentionSoftmax(prob, pOff, S, T, scale, rowMax, undecided, constants) → count: attention.ts's forward softmax
 * of one head up to the exp: S (T, T) raw scores scaled in place on and below the diagonal, rowMax[i] their
 * maximum, prob[pOff + i·T + j] = exp(s − m) (+0 for j > i); the `count` indices i·T + j whose exp was undecided
 * are written ascending to undecided (room for T·T), their prob holding the shift, for the caller to finish with
 * exp(). −1, writing nothing, when arrays overlap.
 */
static napi_value js_att_softmax(napi_env env, napi_callback_info info) {
  napi_value argv[8];
  if (!ew_args(env, info, 8, argv, "attentionSoftmax")) return NULL;
  double *prob, *S, *M, *C, scale;
  int32_t *und;
  size_t lp, ls, lm, lu;
  int64_t pOff, T;
  if (!get_f64_array(env, argv[0], &prob, &lp, "prob") || !get_int(env, argv[1], MAX_OFFSET, &pOff, "pOff") ||
      !get_f64_array(env, argv[2], &S, &ls, "S") || !get_int(env, argv[3], MAX_DIM, &T, "T") ||
      !get_f64_array(env, argv[5], &M, &lm, "rowMax") || !get_i32_array(env, argv[6], &und, &lu, "undecided") ||
      !ew_constants(env, argv[7], &C))
    return NULL;
  if (napi_get_value_double(env, argv[4], &scale) != napi_ok) {
    napi_throw_type_error(env, NULL, "llmcp kernels: scale must be a number");
    return NULL;
  }
  if (!check_extent(env, lp, pOff, T, T, T, "prob") || !check_extent(env, ls, 0, T, T, T, "S") ||
      !check_extent(env, lm, 0, 1, 1, T, "rowMax") || !check_extent(env, lu, 0, 1, 1, T * T, "undecided"))
    return NULL;
  double *pr = prob + pOff;
  const ew_span spans[] = {{pr, (size_t)(T * T) * 8}, {S, (size_t)(T * T) * 8}, {M, (size_t)T * 8}, {und, (size_t)(T * T) * 4}, {C, 8 * EXP_C_LENGTH}};
  if (ew_any_overlap(spans, 5)) return ew_int(env, -1);
  int64_t count = 0;
  for (int64_t i = 0; i < T; i++) {
    double *s = S + i * T;
    double *p = pr + i * T;
    const int64_t n = i + 1;
    EW_DISPATCH(att_scale, s, scale, n);
    const double m = ew_row_max(s, n);
    M[i] = m;
    EW_DISPATCH(ce_shift, p, s, m, n);
    if (n < T) EW_DISPATCH(att_zero, p + n, T - n);
    count += ew_row_exp(p, n, und + count, i * T, C);
  }
  return ew_int(env, count);
}

/*
 * attentionSoftmaxRows(prob, pOff, S, T, rowMax) → 0: the rest of attention.ts's forward softmax after
 * attentionSoftmax (prob = exp(s − m) on and below the diagonal): per row the tail (in order, the first exactly
 * zero shift skipped) and prob / (1 + tail) + 0. −1, writing nothing, when arrays overlap.
 */
static napi_value js_att_softmax_rows(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  if (!ew_args(env, info, 5, argv, "attentionSoftmaxRows")) return NULL;
  double *prob, *S, *M;
  size_t lp, ls, lm;
  int64_t pOff, T;
  if (!get_f64_array(env, argv[0], &prob, &lp, "prob") || !get_int(env, argv[1], MAX_OFFSET, &pOff, "pOff") ||
      !get_f64_array(env, argv[2], &S, &ls, "S") || !get_int(env, argv[3], MAX_DIM, &T, "T") ||
      !get_f64_array(env, argv[4], &M, &lm, "rowMax"))
    return NULL;
  if (!check_extent(env, lp, pOff, T, T, T, "prob") || !check_extent(env, ls, 0, T, T, T, "S") ||
      !check_extent(env, lm, 0, 1, 1, T, "rowMax"))
    return NULL;
  double *pr = prob + pOff;
  const ew_span spans[] = {{pr, (size_t)(T * T) * 8}, {S, (size_t)(T * T) * 8}, {M, (size_t)T * 8}};
  if (ew_any_overlap(spans, 3)) return ew_int(env, -1);
  for (int64_t i = 0; i < T; i++) {
    const double *s = S + i * T;
    double *p = pr + i * T;
    const int64_t n = i + 1;
    const double tail = ew_tail(p, s, M[i], n);
    EW_DISPATCH(ce_scale, p, 1.0 + tail, n);
  }
  return ew_int(env, 0);
}

/*
 * attentionSoftmaxBackward(draw, dp, prob, pOff, T, scale) → 0: attention.ts's softmax rule and scale of one
 * head (w = Σ dp·p in order per row; draw = 0 + (p·(dp − w) + 0)·scale for j ≤ i, +0 beyond); −1, writing
 * nothing, when arrays overlap.
 */
static napi_value js_att_softmax_backward(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  if (!ew_args(env, info, 6, argv, "attentionSoftmaxBackward")) return NULL;
  double *draw, *dp, *prob, scale;
  size_t ld, ldp, lp;
  int64_t pOff, T;
  if (!get_f64_array(env, argv[0], &draw, &ld, "draw") || !get_f64_array(env, argv[1], &dp, &ldp, "dp") ||
      !get_f64_array(env, argv[2], &prob, &lp, "prob") || !get_int(env, argv[3], MAX_OFFSET, &pOff, "pOff") ||
      !get_int(env, argv[4], MAX_DIM, &T, "T"))
    return NULL;
  if (napi_get_value_double(env, argv[5], &scale) != napi_ok) {
    napi_throw_type_error(env, NULL, "llmcp kernels: scale must be a number");
    return NULL;
  }
  if (!check_extent(env, ld, 0, T, T, T, "draw") || !check_extent(env, ldp, 0, T, T, T, "dp") ||
      !check_extent(env, lp, pOff, T, T, T, "prob"))
    return NULL;
  const double *pr = prob + pOff;
  const ew_span spans[] = {{draw, (size_t)(T * T) * 8}, {dp, (size_t)(T * T) * 8}, {pr, (size_t)(T * T) * 8}};
  if (ew_any_overlap(spans, 3)) return ew_int(env, -1);
  for (int64_t i = 0; i < T; i++) {
    const int64_t o = i * T;
    double w = 0;
    for (int64_t j = 0; j <= i; j++) w += dp[o + j] * pr[o + j];
    EW_DISPATCH(att_back, draw + o, dp + o, pr + o, w, scale, i + 1);
    if (i + 1 < T) EW_DISPATCH(att_zero, draw + o + i + 1, T - i - 1);
  }
  return ew_int(env, 0);
}

/* RoPE (rope.ts): every head's adjacent pairs of one row rotated by the row's angles, canonical +0. */
#define DEF_ROPE(P, ATTR)                                                                                             \
  ATTR static void rope_row_##P(double *restrict dst, const double *restrict src, const double *restrict cs,        \
                                const double *restrict sn, int64_t D, int64_t half, int back) {                       \
    for (int64_t h0 = 0; h0 < D; h0 += 2 * half) {                                                                    \
      if (back) {                                                                                                     \
        for (int64_t i = 0; i < half; i++) {                                                                          \
          const double c = cs[i], s = sn[i], gl = src[h0 + 2 * i], gr = src[h0 + 2 * i + 1];                          \
          dst[h0 + 2 * i] = gl * c + gr * s + 0;                                                                      \
          dst[h0 + 2 * i + 1] = -gl * s + gr * c + 0;                                                                 \
        }                                                                                                             \
      } else {                                                                                                        \
        for (int64_t i = 0; i < half; i++) {                                                                          \
          const double c = cs[i], s = sn[i], l = src[h0 + 2 * i], r = src[h0 + 2 * i + 1];                            \
          dst[h0 + 2 * i] = l * c - r * s + 0;                                                                        \
          dst[h0 + 2 * i + 1] = l * s + r * c + 0;                                                                    \
        }                                                                                                             \
      }                                                                                                               \
    }                                                                                                                 \
  }
EW_PATHS(DEF_ROPE)

/*
 * rope(dst, src, cosines, sines, T, D, headWidth, back) → 0: rope.ts's ropeForward (back 0) or ropeBackward
 * (back 1) on rows 0 … T−1; −1, writing nothing, when arrays overlap.
 */
static napi_value js_rope(napi_env env, napi_callback_info info) {
  napi_value argv[8];
  if (!ew_args(env, info, 8, argv, "rope")) return NULL;
  int64_t T, D, hw, back;
  if (!get_int(env, argv[4], MAX_DIM, &T, "T") || !get_int(env, argv[5], MAX_DIM, &D, "D") ||
      !get_int(env, argv[6], MAX_DIM, &hw, "headWidth") || !get_int(env, argv[7], 1, &back, "back"))
    return NULL;
  if (hw < 2 || hw % 2 != 0 || D % hw != 0) {
    napi_throw_range_error(env, NULL, "llmcp kernels: rope needs an even head width dividing D");
    return NULL;
  }
  const int64_t half = hw / 2;
  static const char *const names[4] = {"dst", "src", "cosines", "sines"};
  const int64_t need[4] = {T * D, T * D, T * half, T * half};
  double *a[4];
  ew_span spans[4];
  if (!ew_f64_args(env, argv, 4, names, need, a, spans)) return NULL;
  if (ew_any_overlap(spans, 4)) return ew_int(env, -1);
  for (int64_t t = 0; t < T; t++)
    EW_DISPATCH(rope_row, a[0] + t * D, a[1] + t * D, a[2] + t * half, a[3] + t * half, D, half, (int)back);
  return ew_int(env, 0);
}
