/**
 * Correctly rounded e^x (round to nearest, ties to even) for every double x,
 * engine independent (../../../../docs/spec/model.md §14: the reference's exp results equal the
 * correctly rounded values on every fixture argument).
 *
 * Fast path (no allocation, about 40 floating-point operations):
 *
 *   x = k·ln2/128 + r,  k = round(x·128/ln2),  |r| ≤ ln2/256·(1 + 2^-34) < 2^-8.52
 *   e^x = 2^E · T_j · e^r,  k = 128·E + j,  T_j = 2^(j/128) as a double-double
 *   e^r = 1 + r + q,  q = r²/2 + r³/6 + r⁴/24 + r⁵/120 + r⁶/720 (+ |τ| ≤ 2^-72.0)
 *
 * The reduction uses ln2/128 = L1 + L2 + L3 with 35-bit L1, L2 (k·L1, k·L2
 * exact for |k| < 2^18; x - k·L1 exact because both are multiples of 2^-61
 * when k ≠ 0 and |r| < 2^-8), so r = rh + rl is known to ~2^-120.
 * Y = T·(1 + r + q) is assembled as hi + lo with the exact product Th·rh
 * (Dekker, table-side split precomputed) and everything else in lo.
 *
 * Error bound of hi + lo against Y (absolute, Y ∈ [0.997, 2.006]), in units of
 * u = 2^-72:
 *   - q: Estrin in double, the constant 1/2 added last (so one significant
 *     rounding, as with Horner), relative error ≤ 3.01·2^-53 of q ≤ 2^-18.056,
 *     i.e. 5.8u; final rounding of q 1u; truncation τ 1u; the neglected
 *     rh²·rl/2 0.01u; rounding of s = rl + q 1u; all scaled by Th < 2: 17.6u
 *   - roundings of Th·s, of the three additions building L and of lo: 5 × 2u
 *   - the neglected Tl·s ≤ 2^-53·2^-18.05: 1.93u; table (2^-106) and
 *     reduction (2^-112) errors: < 0.01u
 *   total < 29.6u < 2^-67.1.
 * The rounding test compares RN(hi + (lo - ERR)) with RN(hi + (lo + ERR)),
 * ERR = 2^-66 = 64u; the two roundings of lo ∓ ERR add at most
 * 2^-53·(|lo| + ERR) ≤ 4.3u, so [hi + fl(lo - ERR), hi + fl(lo + ERR)]
 * encloses Y (29.6u + 4.3u < 64u) and equal roundings of both ends are the
 * correctly rounded Y (rounding is monotonic). Scaling by 2^E is exact for
 * normal results; results below 2^-1022 are rounded on the subnormal grid
 * with the same enclosure. The test fails with probability about
 * 2·ERR/ulp(Y) ≈ 1.2e-4 (2.4e-4 for Y < 1); then the BigInt path decides.
 *
 * Slow path: BigInt fixed point with 128, 256, … bits (Ziv's strategy),
 * always conclusive for x ≠ 0 because e^x is transcendental.
 */
import { expFixed, expOfFixed, ln2Fixed, roundInterval, roundScaled, toFixed, bitLength } from './big-fixed.ts';
import { decompose, POW2_TABLE } from './float-bits.ts';

/** 2^k at index k + 1074. */
const POW2 = POW2_TABLE;

/** 1.5·2^52: adding and subtracting it rounds a double of magnitude < 2^51 to an integer. */
const SHIFTER = 6755399441055744;
/** Veltkamp splitting constant 2^27 + 1. */
const SPLITTER = 134217729;
/** Rounding-test bound (see the header): 2^-66. */
const ERR = 1.3552527156068805e-20;
/** 2^-50, slack for the two roundings of the subnormal-grid test. */
const SUB_SLACK = 8.881784197001252e-16;
/** 2^52. */
const TWO52 = 4503599627370496;

const C3 = 1 / 6;
const C4 = 1 / 24;
const C5 = 1 / 120;
const C6 = 1 / 720;

const TABLE_BITS = 200;

/** ln2/128 split in three parts (L1, L2: 35 significant bits) and 128/ln2. */
const { L1, L2, L3, INV_L } = splitLn2Over128();
/** T[4j..4j+3] = Th, Tl, and the Veltkamp halves of Th, with Th + Tl ≈ 2^(j/128). */
const T = buildTable();

let slowCalls = 0;

/**
 * e^x, correctly rounded to nearest (ties to even), for every double x.
 *
 * @param x - any double
 * @returns the double nearest to e^x; +Infinity above ≈709.7827, +0 below ≈-745.1332,
 *   NaN for NaN, +Infinity for +Infinity, +0 for -Infinity, exactly 1 for ±0
 * @example
 * ```ts
 * exp(1); // 2.718281828459045
 * ```
 */
export function exp(x: number): number {
  if (!(x < 709.79 && x > -745.2)) return expSpecial(x);
  const kf = x * INV_L + SHIFTER - SHIFTER;
  const k = kf | 0;
  const j = (k & 127) << 2;
  const E = k >> 7;
  // r = rh + rl = x - kf·(L1 + L2 + L3); x - kf·L1 and kf·L2 are exact, twoSum.
  const t1 = x - kf * L1;
  const u = kf * L2;
  const rh = t1 - u;
  const bb = rh - t1;
  const rl = (t1 - (rh - bb)) - (u + bb) - kf * L3;
  // Estrin's scheme (shorter dependency chain than Horner, same error bound:
  // the small terms are summed first, so only the final addition of 0.5
  // rounds significantly, by ≤ 2^-54).
  const r2 = rh * rh;
  const q = r2 * (0.5 + (rh * C3 + r2 * (C4 + rh * C5 + r2 * C6))) + rh * rl;
  const th = T[j] as number;
  const tl = T[j + 1] as number;
  const a1 = T[j + 2] as number;
  const a2 = T[j + 3] as number;
  // ph + pl = th·rh exactly (Dekker).
  const g = rh * SPLITTER;
  const b1 = g - (g - rh);
  const b2 = rh - b1;
  const ph = th * rh;
  const pl = a1 * b1 - ph + a1 * b2 + a2 * b1 + a2 * b2;
  const s = rl + q;
  const low = pl + (tl + (th * s + tl * rh));
  const hi = th + ph;
  const lo = th - hi + ph + low;
  const y = hi + (lo - ERR);
  if (y !== hi + (lo + ERR)) return expSlow(x);
  if (E >= -1021) {
    if (E > 1023) return y * 8.98846567431158e307 * 2;
    return y * (POW2[E + 1074] as number);
  }
  return expTiny(hi, lo, E, x);
}

/** Results below 2^-1021: round Y·2^E on the 2^-1074 grid (Y ≈ hi + lo ± ERR). */
function expTiny(hi0: number, lo0: number, E: number, x: number): number {
  // Normalize so that |lo| ≤ ulp(hi)/2 (fastTwoSum, |hi0| > |lo0|).
  const hi = hi0 + lo0;
  const lo = hi0 - hi + lo0;
  if (E === -1022 && hi >= 1) {
    // A normal result in [2^-1022, 2^-1021): scaling by 2^-1022 is exact.
    const y = hi + (lo - ERR);
    if (y !== hi + (lo + ERR)) return expSlow(x);
    return y * 2.2250738585072014e-308;
  }
  // Z = Y·2^(E+1074) < 2^52·1.003: the result is round(Z)·2^-1074. The scaling
  // is by a normal power of two (E + 1074 ∈ [-2, 52]), hence exact.
  const S = POW2[E + 2148] as number; // 2^(E + 1074)
  const zh = hi * S;
  const zl = lo * S;
  const n0 = Math.floor(zh);
  const f = zh - n0 + zl; // |zl| ≤ ulp(zh)/2 ≤ 1: one rounding, error ≤ 2^-52
  const tol = ERR * S + SUB_SLACK;
  const half = f - 0.5;
  if (Math.abs(half) <= tol || Math.abs(half + 1) <= tol || Math.abs(half - 1) <= tol) return expSlow(x);
  const n = n0 + Math.floor(f + 0.5);
  if (n >= TWO52 * 2) return expSlow(x); // cannot happen (Z < 2^53); kept as a guard
  return n * 5e-324;
}

function expSpecial(x: number): number {
  if (x !== x) return x;
  return x > 0 ? Infinity : 0;
}

/**
 * BigInt evaluation of e^x with increasing precision until the enclosure
 * rounds unambiguously (always reached for x ≠ 0).
 */
export function expSlow(x: number): number {
  slowCalls += 1;
  if (x !== x) return x;
  if (x === 0) return 1;
  if (x >= 709.79) return Infinity;
  if (x <= -745.2) return 0;
  let last = NaN;
  for (let p = 128; p <= 16384; p *= 2) {
    const F = p + 32;
    const X = toFixed(x, F);
    const r = expOfFixed(X.value, X.err, F);
    const y = roundInterval(r.value, r.err, r.sh);
    if (y === y) return y;
    last = roundScaled(r.value, r.sh, false);
  }
  return last; // unreachable for doubles: e^x is never a rounding boundary
}

/** Number of calls that took the BigInt slow path since module load (for benchmarks). */
export function expSlowPathCount(): number {
  return slowCalls;
}

function splitLn2Over128(): { L1: number; L2: number; L3: number; INV_L: number } {
  const F = TABLE_BITS;
  const V = ln2Fixed(F); // ln2·2^F (error ≤ 2 units), so ln2/128 = V·2^-S
  const S = F + 7;
  const d1 = bitLength(V) - 35;
  const m1 = V >> BigInt(d1);
  const rest = V - (m1 << BigInt(d1));
  const d2 = bitLength(rest) - 35;
  const m2 = rest >> BigInt(d2);
  const rest2 = rest - (m2 << BigInt(d2));
  return {
    L1: roundScaled(m1, d1 - S, false), // exact: 35 bits
    L2: roundScaled(m2, d2 - S, false), // exact: 35 bits
    L3: roundScaled(rest2, -S, false),
    // 128/ln2 = 2^S/V; only the choice of k depends on it.
    INV_L: roundScaled((1n << BigInt(S + 64)) / V, -64, false),
  };
}

function buildTable(): Float64Array {
  const F = TABLE_BITS;
  const t = new Float64Array(512);
  const L = ln2Fixed(F);
  for (let j = 0; j < 128; j++) {
    const R = (L * BigInt(j)) >> 7n;
    const { value } = expFixed(R, F);
    const th = roundScaled(value, -F, false);
    const { mant, exp: e } = decompose(th);
    const rest = value - (mant << BigInt(e + F));
    const tl = rest < 0n ? -roundScaled(-rest, -F, false) : roundScaled(rest, -F, false);
    const g = th * SPLITTER;
    const a1 = g - (g - th);
    t[4 * j] = th;
    t[4 * j + 1] = tl;
    t[4 * j + 2] = a1;
    t[4 * j + 3] = th - a1;
  }
  return t;
}

/** The fast path's constants, for kernels that reproduce it operation by operation. */
export interface ExpFastPathConstants {
  readonly L1: number;
  readonly L2: number;
  readonly L3: number;
  readonly INV_L: number;
  readonly SHIFTER: number;
  readonly SPLITTER: number;
  readonly ERR: number;
  readonly C3: number;
  readonly C4: number;
  readonly C5: number;
  readonly C6: number;
  /** A copy of T: T[4j..4j+3] = Th, Tl and the Veltkamp halves of Th. */
  readonly T: Float64Array;
}

/**
 * The constants and table of {@link exp}'s fast path (package-internal: for
 * kernels/wasm-exp.ts, which runs the same operations in SIMD lanes).
 *
 * @returns the values exp uses, T copied.
 */
export function expFastPathConstants(): ExpFastPathConstants {
  return { L1, L2, L3, INV_L, SHIFTER, SPLITTER, ERR, C3, C4, C5, C6, T: T.slice() };
}
