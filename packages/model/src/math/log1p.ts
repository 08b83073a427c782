/**
 * ln(1 + x) by the fdlibm algorithm (s_log1p.c, Sun Microsystems 1993,
 * freely redistributable; the algorithm of the reference's libm and of V8's
 * Math.log1p in Node 20). It is NOT correctly rounded: the reference's
 * results are reproduced only by following the same operations in the same
 * order, which this port does (../../../../docs/spec/model.md §14, ../../../../docs/spec/training.md §11 item 2).
 *
 * Method (from fdlibm):
 *  1. Argument reduction: find k and f with 1 + x = 2^k·(1 + f),
 *     √2/2 < 1 + f < √2. For k ≠ 0, u = 1 + x is rounded, so a correction
 *     c = ((1 + x) - u)/u is carried (log(1+x) - log(u) ≈ c/u).
 *  2. With s = f/(2 + f), log(1 + f) = 2s + s·R(s²), R a degree-7 polynomial
 *     in z = s² (Remez, error < 2^-58.45); computed as
 *     f - (hfsq - s·(hfsq + R)), hfsq = f²/2.
 *  3. log1p(x) = k·ln2_hi + (f - (hfsq - (s·(hfsq + R) + (k·ln2_lo + c)))).
 * Special cases: x < -1 → NaN, x = -1 → -Infinity, +Infinity → +Infinity,
 * NaN → NaN, ±0 → ±0, |x| < 2^-54 → x.
 */
import { fromWords, HI, POW2_TABLE } from './float-bits.ts';

const SCRATCH = new ArrayBuffer(8);
const F64 = new Float64Array(SCRATCH);
const I32 = new Int32Array(SCRATCH);
const W_HI = HI;
/** 2^k at index k + 1074. */
const POW2 = POW2_TABLE;

const LN2_HI = fromWords(0x3fe62e42, 0xfee00000); // 6.93147180369123816490e-01
const LN2_LO = fromWords(0x3dea39ef, 0x35793c76); // 1.90821492927058770002e-10
const LP1 = fromWords(0x3fe55555, 0x55555593); // 6.666666666666735130e-01
const LP2 = fromWords(0x3fd99999, 0x9997fa04); // 3.999999999940941908e-01
const LP3 = fromWords(0x3fd24924, 0x94229359); // 2.857142874366239149e-01
const LP4 = fromWords(0x3fcc71c5, 0x1d8e78af); // 2.222219843214978396e-01
const LP5 = fromWords(0x3fc74664, 0x96cb03de); // 1.818357216161805012e-01
const LP6 = fromWords(0x3fc39a09, 0xd078c69f); // 1.531383769920937332e-01
const LP7 = fromWords(0x3fc2f112, 0xdf3e5244); // 1.479819860511658591e-01
/** The literal 0.66666666666666666 of s_log1p.c: 2/3 rounded, the same double as this shortest spelling. */
const TWO_THIRDS = 0.6666666666666666;

/** The signed high word of a double. */
function highWord(v: number): number {
  F64[0] = v;
  return I32[W_HI] as number;
}

/**
 * ln(1 + x) by the fdlibm algorithm: bit-identical to the reference's log1p
 * and to Node 20's Math.log1p (not correctly rounded, error < 1 ulp).
 *
 * @param x - any double
 * @returns ln(1 + x) as fdlibm computes it; NaN for x < -1 and NaN,
 *   -Infinity for -1, +Infinity for +Infinity, x itself for |x| < 2^-54
 * @example
 * ```ts
 * log1p(1e-10); // 9.999999999500001e-11
 * ```
 */
export function log1p(x: number): number {
  const hx = highWord(x);
  const ax = hx & 0x7fffffff;
  let k = 1;
  let f = 0;
  let c = 0;
  let hu = 0;
  if (hx < 0x3fda827a) {
    // 1 + x < √2
    if (ax >= 0x3ff00000) {
      // x ≤ -1.0
      return x === -1 ? -Infinity : NaN;
    }
    if (ax < 0x3e200000) {
      // |x| < 2^-29
      if (ax < 0x3c900000) return x; // |x| < 2^-54
      return x - x * x * 0.5;
    }
    if (hx > 0 || hx <= (0xbfd2bec4 | 0)) {
      // √2/2 ≤ 1 + x < √2
      k = 0;
      f = x;
      hu = 1;
    }
  }
  if (hx >= 0x7ff00000) return x + x;
  if (k !== 0) {
    let u: number;
    if (hx < 0x43400000) {
      u = 1.0 + x;
      hu = highWord(u);
      k = (hu >> 20) - 1023;
      c = k > 0 ? 1.0 - (u - x) : x - (u - 1.0); // correction term
      c /= u;
    } else {
      u = x;
      hu = highWord(u);
      k = (hu >> 20) - 1023;
      c = 0;
    }
    hu &= 0x000fffff;
    // fdlibm sets u's exponent field (SET_HIGH_WORD(u, hu | 0x3ff00000), or
    // 0x3fe00000 for u/2); u is a normal number with exponent k, so scaling
    // by 2^-k (resp. 2^-(k+1)) gives exactly the same double.
    if (hu < 0x6a09e) {
      u *= POW2[1074 - k] as number; // normalize u
    } else {
      k += 1;
      u *= POW2[1074 - k] as number; // normalize u/2
      hu = (0x00100000 - hu) >> 2;
    }
    f = u - 1.0;
  }
  const hfsq = 0.5 * f * f;
  if (hu === 0) {
    // |f| < 2^-20
    if (f === 0) {
      if (k === 0) return 0;
      c += k * LN2_LO;
      return k * LN2_HI + c;
    }
    const R = hfsq * (1.0 - TWO_THIRDS * f);
    if (k === 0) return f - R;
    return k * LN2_HI - (R - (k * LN2_LO + c) - f);
  }
  const s = f / (2.0 + f);
  const z = s * s;
  const R = z * (LP1 + z * (LP2 + z * (LP3 + z * (LP4 + z * (LP5 + z * (LP6 + z * LP7))))));
  if (k === 0) return f - (hfsq - s * (hfsq + R));
  return k * LN2_HI - (hfsq - (s * (hfsq + R) + (k * LN2_LO + c)) - f);
}
