/**
 * Correctly rounded natural logarithm (round to nearest, ties to even) for
 * every double, engine independent (../../../../docs/spec/model.md §14).
 *
 * Fast path (no allocation): x = 2^e·z with z ∈ [0.70703125, 1.4140625)
 * taken from the bits, and a 256-entry table indexed by the 8 bits of z's
 * high word below the exponent (intervals of width 2^-9 below 1, 2^-8 above):
 *
 *   ln x = e·ln2 - ln c_i + ln(1 + r),  r = z·c_i - 1,
 *
 * c_i ≈ 1/center_i with 26 significant bits, so z·c_i splits into two exact
 * products (z Veltkamp-split in 26 + 26 bits) and r = rh + rl exactly
 * (twoSum). The two entries next to 1 (z ∈ [1 - 2^-9, 1 + 2^-8)) use c = 1,
 * so near x = 1 the reduction is r = x - 1 exactly and rl = 0.
 * |r| ≤ 2^-8 for those entries ("case A"), |r| ≤ 2^-9·(1 + 2^-16) for all
 * others ("case B", where |ln x| ≥ 2^-9.01 when e = 0).
 *
 *   ln(1 + r) = r - r²/2 + r³·P(r),  P = 1/3 - r/4 + … + r⁶/9 (Taylor)
 *
 * with r² exact (Dekker) and -r²/2 kept as a double-double; the sum is
 * assembled with three fastTwoSums (valid: |e·ln2_hi + lch| ≥ |rh| or it is 0,
 * and |s2| ≥ rh²/2) into s3 + lo.
 *
 * Relative error bound of s3 + lo against ln x (δ = 2^-53):
 *   - truncation: Σ_(n≥10) |r|^n/n ≤ 2^-75.2 relative (A), ≤ 2^-84 absolute
 *     against |ln x| ≥ 2^-9.01 (B)
 *   - r³·P(r) in double: ≤ 3.6δ relative of ≤ |r|³/3, i.e. ≤ 2^-68.8
 *     relative to |r| (A); ≤ 2^-79.6 absolute, 2^-70.6 relative (B)
 *   - neglected r²·rl terms ≤ 2^-80 absolute (B; rl = 0 in A); rl² terms
 *     2^-124; the lo sum, table (2^-106) and ln2 (e·2^-96) errors < 2^-77
 *     relative
 *   total < 2^-68.3 relative.
 * Rounding test: ERR = 2^-67·|s3| (≥ 2.4 × the bound; covers the roundings
 * of lo ∓ ERR, ≤ δ·(|lo| + ERR) with |lo| ≤ 2^-17|s3|). It fails with
 * probability ≈ 2^-14 … 2^-13; the BigInt path (atanh series, Ziv's strategy)
 * decides those cases.
 */
import { bitLength, lnFixed, lnOfDouble, roundInterval, roundScaled } from './big-fixed.ts';
import { decompose, fromWords, HI, POW2_TABLE } from './float-bits.ts';

const SCRATCH = new ArrayBuffer(8);
const F64 = new Float64Array(SCRATCH);
const I32 = new Int32Array(SCRATCH);
const W_HI = HI;
/** 2^k at index k + 1074. */
const POW2 = POW2_TABLE;

const SPLITTER = 134217729;
/** 2^-67: relative rounding-test bound. */
const ERR_REL = 6.776263578034403e-21;
/** 2^54, to scale subnormal arguments. */
const TWO54 = 18014398509481984;
/** High word of the start of the reduced range, 0x3FE6A000 ↔ 0.70703125. */
const OFF = 0x3fe6a000;

const P3 = 1 / 3;
const P4 = -1 / 4;
const P5 = 1 / 5;
const P6 = -1 / 6;
const P7 = 1 / 7;
const P8 = -1 / 8;
const P9 = 1 / 9;

const TABLE_BITS = 200;

/** ln2 with 42 significant bits (e·LN2_HI exact for |e| < 2^11) and the rest. */
const { LN2_HI, LN2_LO } = splitLn2();
/** TBL[3i..3i+2] = c_i, and -ln(c_i) as hi, lo. */
const TBL = buildTable();

let slowCalls = 0;

/**
 * Natural logarithm, correctly rounded to nearest (ties to even), for every double.
 *
 * @param x - any double
 * @returns the double nearest to ln x; -Infinity for ±0, NaN for x < 0 and NaN,
 *   +Infinity for +Infinity, +0 for 1
 * @example
 * ```ts
 * ln(2); // 0.6931471805599453
 * ```
 */
export function ln(x: number): number {
  F64[0] = x;
  let hx = I32[W_HI] as number;
  let e = 0;
  let xn = x;
  if (hx < 0x00100000 || hx >= 0x7ff00000) {
    if (!(x > 0) || x === Infinity) return lnSpecial(x);
    xn = x * TWO54; // subnormal: scale into the normal range (exact)
    F64[0] = xn;
    hx = I32[W_HI] as number;
    e = -54;
  }
  const tmp = hx - OFF;
  const eb = tmp >> 20; // -1022 … 1024
  const i3 = ((tmp >> 12) & 255) * 3;
  const z = xn * (POW2[1074 - eb] as number); // exact: z = xn·2^-eb ∈ [0.70703125, 1.4140625)
  e += eb;
  const c = TBL[i3] as number;
  // rh + rl = z·c - 1 exactly.
  const g = z * SPLITTER;
  const z1 = g - (g - z);
  const z2 = z - z1;
  const a = z1 * c - 1; // exact: z1·c has ≤ 52 bits and lies in [1/2, 2]
  const b = z2 * c; // exact: ≤ 52 bits
  const rh = a + b;
  const bv = rh - a;
  const rl = a - (rh - bv) + (b - bv);
  // rh² = sh + sl exactly (Dekker).
  const g2 = rh * SPLITTER;
  const r1 = g2 - (g2 - rh);
  const r2 = rh - r1;
  const sh = rh * rh;
  const sl = r1 * r1 - sh + 2 * r1 * r2 + r2 * r2;
  const hh = 0.5 * sh;
  const hl = 0.5 * sl + rh * rl;
  // Estrin's scheme; P ≈ 1/3 is formed by one final addition of a small sum
  // (|sum| ≤ 2^-9.9, so its own roundings are ≤ 2^-63): as accurate as Horner.
  const r4 = sh * sh;
  const q = sh * rh * (P3 + (rh * P4 + (sh * (P5 + rh * P6) + r4 * (P7 + rh * P8 + sh * P9))));
  const eh = e * LN2_HI;
  const lch = TBL[i3 + 1] as number;
  const s1 = eh + lch;
  const t1 = eh - s1 + lch;
  const s2 = s1 + rh;
  const t2 = s1 - s2 + rh;
  const s3 = s2 - hh;
  const t3 = s2 - s3 - hh;
  const lo = t1 + t2 + t3 + (e * LN2_LO + (TBL[i3 + 2] as number)) + (rl - hl) + q;
  const err = ERR_REL * Math.abs(s3);
  const y = s3 + (lo - err);
  if (y !== s3 + (lo + err)) return lnSlow(x);
  return y;
}

function lnSpecial(x: number): number {
  if (x !== x) return x;
  if (x === 0) return -Infinity;
  if (x < 0) return NaN;
  return Infinity;
}

/** BigInt evaluation of ln x (x > 0 finite) with increasing precision (Ziv). */
export function lnSlow(x: number): number {
  slowCalls += 1;
  if (!(x > 0) || x === Infinity) return lnSpecial(x);
  if (x === 1) return 0;
  let last = NaN;
  for (let p = 128; p <= 16384; p *= 2) {
    const F = p + 32;
    const { value, err } = lnOfDouble(x, F);
    const y = roundInterval(value, err, -F);
    if (y === y) return y;
    last = value < 0n ? -roundScaled(-value, -F, false) : roundScaled(value, -F, false);
  }
  return last; // unreachable for doubles: ln x (x ≠ 1) is never a rounding boundary
}

/** Number of calls that took the BigInt slow path since module load (for benchmarks). */
export function lnSlowPathCount(): number {
  return slowCalls;
}

function splitLn2(): { LN2_HI: number; LN2_LO: number } {
  const F = TABLE_BITS;
  const { value: V } = lnFixed(2n, 0, F);
  const d = bitLength(V) - 42;
  const m = V >> BigInt(d);
  const rest = V - (m << BigInt(d));
  return { LN2_HI: roundScaled(m, d - F, false), LN2_LO: roundScaled(rest, -F, false) };
}

function buildTable(): Float64Array {
  const F = TABLE_BITS;
  const t = new Float64Array(256 * 3);
  for (let i = 0; i < 256; i++) {
    const start = fromWords(OFF + i * 0x1000, 0);
    const end = fromWords(OFF + (i + 1) * 0x1000, 0);
    if (start === 1 || end === 1) {
      t[3 * i] = 1;
      continue; // -ln 1 = 0
    }
    // c = 1/center rounded to 26 significant bits.
    const { mant, exp } = decompose((start + end) / 2);
    const s = 25 + bitLength(mant);
    const cm = ((1n << BigInt(s + 1)) / mant + 1n) >> 1n;
    const c = roundScaled(cm, -s - exp, false);
    // -ln c = ln(mant'/2^…) negated: ln c via the BigInt kernel.
    const { mant: m2, exp: e2 } = decompose(c);
    const { value } = lnFixed(m2, e2, F);
    const neg = -value;
    const hi = neg < 0n ? -roundScaled(-neg, -F, false) : roundScaled(neg, -F, false);
    const { mant: hm, exp: he } = decompose(hi);
    const rest = neg - (hm << BigInt(he + F));
    const lo = rest < 0n ? -roundScaled(-rest, -F, false) : roundScaled(rest, -F, false);
    t[3 * i] = c;
    t[3 * i + 1] = hi;
    t[3 * i + 2] = lo;
  }
  return t;
}

/** A copy of the reduction table (c_i, -ln c_i hi, lo for i = 0 … 255), for tests. */
export function lnTableForTests(): Float64Array {
  return TBL.slice();
}

/** The fast path's constants, for kernels that reproduce it operation by operation. */
export interface LnFastPathConstants {
  readonly SPLITTER: number;
  readonly ERR_REL: number;
  /** High word of the start of the reduced range. */
  readonly OFF: number;
  readonly P3: number;
  readonly P4: number;
  readonly P5: number;
  readonly P6: number;
  readonly P7: number;
  readonly P8: number;
  readonly P9: number;
  readonly LN2_HI: number;
  readonly LN2_LO: number;
  /** A copy of TBL: TBL[3i..3i+2] = c_i, and -ln(c_i) as hi, lo. */
  readonly TBL: Float64Array;
}

/**
 * The constants and table of {@link ln}'s fast path (package-internal: for
 * kernels/wasm-ln.ts, which runs the same operations in SIMD lanes).
 *
 * @returns the values ln uses, TBL copied.
 */
export function lnFastPathConstants(): LnFastPathConstants {
  return { SPLITTER, ERR_REL, OFF, P3, P4, P5, P6, P7, P8, P9, LN2_HI, LN2_LO, TBL: TBL.slice() };
}
