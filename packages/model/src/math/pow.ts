/**
 * Correctly rounded x^y (round to nearest, ties to even) for every pair of
 * doubles, with the special values of C99/IEEE 754 pow (the reference's libm;
 * ../../../../docs/spec/model.md §9.2 uses pow(base, -2i/d) for the RoPE frequencies).
 *
 * Note the two places where C pow differs from JavaScript's Math.pow (and
 * this follows C): pow(1, y) = 1 and pow(-1, ±Infinity) = 1 for every y,
 * including NaN; Math.pow gives NaN there.
 *
 * Evaluation:
 *  - exact cases: x^y is computed exactly with BigInt and rounded once when
 *    it is a dyadic rational that could be a rounding boundary (x a power of
 *    two with e·y an integer; y a positive integer ≤ 64; y = M/2^k, k ≤ 5,
 *    0 < M ≤ 64, x = a^(2^k)·2^e with 2^k | e). Every other x^y is either
 *    irrational or a rational that is not a midpoint, so Ziv's strategy ends;
 *  - otherwise e^(y·ln x) in BigInt fixed point (128, 256, … bits): ln x
 *    with enough bits that y·ln x is known to 2^-(F+20), then exp, both with
 *    tracked error bounds; overflow and underflow are decided first from
 *    y·ln x estimated in double (a 2^-51 relative estimate: |y·ln x| > 760
 *    means far beyond either threshold).
 */
import { bitLength, expOfFixed, lnOfDouble, roundInterval, roundScaled } from './big-fixed.ts';
import { decompose, pow2 } from './float-bits.ts';
import { ln } from './ln.ts';

/**
 * x raised to the power y, correctly rounded to nearest (ties to even).
 *
 * @param x - the base, any double
 * @param y - the exponent, any double
 * @returns the double nearest to x^y, with C99 special values (pow(x, ±0) = 1,
 *   pow(1, y) = 1, pow(-1, ±Infinity) = 1, NaN for a negative finite x with a
 *   non-integer y, signed zeros and infinities for ±0 and ±Infinity)
 * @example
 * ```ts
 * pow(10000, -0.5); // 0.01
 * ```
 */
export function pow(x: number, y: number): number {
  if (y === 0) return 1;
  if (x === 1) return 1;
  if (x !== x || y !== y) return NaN;
  const yIsInt = Number.isInteger(y);
  const yIsOdd = yIsInt && y % 2 !== 0;
  if (y === Infinity || y === -Infinity) {
    const ax = Math.abs(x);
    if (ax === 1) return 1;
    return ax < 1 === y > 0 ? 0 : Infinity;
  }
  if (x === 0) {
    if (y < 0) return yIsOdd ? 1 / x : Infinity;
    return yIsOdd ? x : 0;
  }
  if (x === Infinity) return y < 0 ? 0 : Infinity;
  if (x === -Infinity) {
    if (y < 0) return yIsOdd ? -0 : 0;
    return yIsOdd ? -Infinity : Infinity;
  }
  if (x < 0) {
    if (!yIsInt) return NaN;
    const r = powPositive(-x, y);
    return yIsOdd ? -r : r;
  }
  return powPositive(x, y);
}

/** Odd part and power of two of a positive BigInt: n = odd·2^tz. */
function oddPart(n: bigint): { odd: bigint; tz: number } {
  let tz = 0;
  let v = n;
  while ((v & 0xffffffffn) === 0n) {
    v >>= 32n;
    tz += 32;
  }
  while ((v & 1n) === 0n) {
    v >>= 1n;
    tz += 1;
  }
  return { odd: v, tz };
}

/** floor(√n) for n ≥ 0 (Newton's method on integers). */
function isqrt(n: bigint): bigint {
  if (n < 2n) return n;
  let x = 1n << BigInt((bitLength(n) >> 1) + 1);
  for (;;) {
    const y = (x + n / x) >> 1n;
    if (y >= x) return x;
    x = y;
  }
}

/** x^y for finite x > 0, x ≠ 1, finite y ≠ 0. */
function powPositive(x: number, y: number): number {
  if (y === 1) return x;
  const dx = decompose(x);
  const { odd: m, tz: tx } = oddPart(dx.mant);
  const e = dx.exp + tx; // x = m·2^e, m odd
  const dy = decompose(y);
  const yNeg = dy.mant < 0n;
  const { odd: M, tz: ty } = oddPart(yNeg ? -dy.mant : dy.mant);
  const ky = dy.exp + ty; // |y| = M·2^ky, M odd
  const exact = exactPow(m, e, yNeg, M, ky, y);
  if (exact === exact) return exact;
  // Overflow / underflow from a double estimate (relative error ≤ 2^-51.9).
  const zEst = y * ln(x);
  if (!(Math.abs(zEst) <= 760)) return zEst > 0 ? Infinity : 0;
  // Here |y| ≤ 761/|ln x| < 2^63 (|ln x| ≥ 2^-53 for doubles x ≠ 1).
  const yMag = dy.exp + bitLength(yNeg ? -dy.mant : dy.mant); // |y| < 2^yMag
  let last = NaN;
  for (let p = 128; p <= 16384; p *= 2) {
    const F = p + 32;
    const FL = F + 24 + Math.max(0, yMag);
    const L = lnOfDouble(x, FL);
    // Z = y·ln x·2^F = mant_y·L·2^(exp_y - FL + F)
    const shift = dy.exp - FL + F;
    const prod = dy.mant * L.value;
    const absMant = yNeg ? -dy.mant : dy.mant;
    let Z: bigint;
    let zErr: bigint;
    if (shift >= 0) {
      Z = prod << BigInt(shift);
      zErr = (absMant * L.err) << BigInt(shift);
    } else {
      Z = prod >> BigInt(-shift);
      zErr = ((absMant * L.err) >> BigInt(-shift)) + 2n;
    }
    const r = expOfFixed(Z, zErr, F);
    const v = roundInterval(r.value, r.err, r.sh);
    if (v === v) return v;
    last = roundScaled(r.value, r.sh, false);
  }
  return last; // unreachable: non-exact cases are never rounding boundaries
}

/**
 * x^y computed exactly when it is a dyadic rational with a small odd part
 * (the only way x^y can be a rounding boundary), else NaN.
 * x = m·2^e (m odd), |y| = M·2^ky (M odd), y itself passed for magnitude.
 */
function exactPow(m: bigint, e: number, yNeg: boolean, M: bigint, ky: number, y: number): number {
  if (m === 1n) {
    // x = 2^e: x^y = 2^(e·y), dyadic iff e·y is an integer.
    const P = e * y; // exact when |P| ≤ 2^53; beyond that only its sign and size matter
    if (!Number.isInteger(P)) return NaN;
    if (P > 1023) return Infinity;
    if (P < -1074) return 0; // 2^-1075 is the tie between 0 and 2^-1074: ties to even (0)
    return pow2(P);
  }
  if (yNeg) return NaN; // 2^(…)/odd^n with odd > 1 is not dyadic: never a boundary
  if (ky >= 0) {
    // positive integer y
    if (y > 64) return NaN; // m^y odd with > 100 bits: never a boundary
    return roundScaled(m ** BigInt(y), e * y, false);
  }
  const k = -ky;
  if (k > 5 || M > 64n) return NaN;
  const d = 1 << k;
  if (e % d !== 0) return NaN; // 2^(e·M/2^k) irrational (M odd)
  let a = m;
  for (let i = 0; i < k; i++) {
    const s = isqrt(a);
    if (s * s !== a) return NaN; // not a perfect 2^k-th power: irrational
    a = s;
  }
  const n = Number(M);
  return roundScaled(a ** M, (e / d) * n, false);
}
