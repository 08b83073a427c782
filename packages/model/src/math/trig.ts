/**
 * Correctly rounded sine and cosine for every double (../../../../docs/spec/model.md §9.2 RoPE
 * tables, §14). Speed is secondary (tables are built once per layer).
 *
 * Fast path (|x| < 2^19, about 80 floating-point operations): Cody–Waite
 * reduction x = k·π/2 + r with π/2 = P1 + P2 + P3 + P4 (33-bit P1…P3, so
 * k·Pi and x - k·P1 are exact for |k| < 2^20), r = rh + rl as a double-double
 * with absolute error ≤ 2^-103; then r = a + d, a = i/64, |d| ≤ 1/128 + ε,
 *   sin r = sin a·cos d + cos a·sin d,  cos r = cos a·cos d - sin a·sin d
 * with sin a, cos a from a table of double-doubles (i = -51 … 51), the
 * leading products cos a·dh and sin a·dh exact (Dekker), and
 * sin d - d, cos d - 1 by Taylor polynomials in double (|d| ≤ 2^-7:
 * truncation below 2^-81 resp. 2^-91).
 *
 * Relative error of hi + lo (the result before the final rounding), δ = 2^-53:
 *   - reduction: exact for k = 0; for k ≠ 0 the absolute error is ≤ 2^-103.4
 *     and the fast path requires |rh| ≥ 2^-30, so ≤ 2^-72.7 relative
 *     (|sin r| ≥ 2|r|/π, cos r ≥ 0.7); table entries 2^-106;
 *   - neglected rl·d²/2 terms: ≤ δ·d²/2·π/2 ≤ 2^-68.3;
 *   - sin d - d and cos d - 1 (|cm| ≤ 2^-15.9, |sm| ≤ 2^-21.6): about 2δ
 *     relative each, weighted by sin a or cos a against a result of at least
 *     |sin a|/2 or 0.7: ≤ 2^-66;
 *   - the five roundings summing lo, whose partial sums stay below 2^-13.5 of
 *     the result: ≤ 2^-63.9;
 *   total < 2^-63 (the largest error seen on 300,000 random arguments was
 *   2^-65.8). The rounding test uses ERR = 2^-61·|hi| (a 4× margin, which
 *   also covers the roundings of lo ∓ ERR); it fails for about 1% of
 *   arguments, and those (and every |x| ≥ 2^19) go to the BigInt evaluation.
 *
 * Slow path in BigInt fixed point (Ziv's strategy: 128, 256, … bits until
 * the enclosure rounds unambiguously):
 *  - x = mant·2^exp exactly; reduction x = q·π/2 + r with π/2 known to
 *    G = F + max(0, log2|x|) + 16 fractional bits (a Payne–Hanek-style exact
 *    reduction: the error of q·π/2 stays below 2^-(F+14) for every |x| up to
 *    2^1024);
 *  - sin r and cos r by their Taylor series, |r| ≤ π/4 + ε;
 *  - the quadrant q mod 4 selects ±sin r or ±cos r.
 * For |x| < 1 the fixed-point position F grows with -log2|x|, so tiny
 * arguments keep full relative precision. sin x and cos x are transcendental
 * for every double x ≠ 0, so they are never a rounding boundary and the loop
 * always ends.
 */
import { bitLength, piFixed, roundInterval, roundScaled, sinCosFixed } from './big-fixed.ts';
import { decompose } from './float-bits.ts';

const SHIFTER = 6755399441055744;
const SPLITTER = 134217729;
/** 2^-61: relative rounding-test bound. */
const ERR_REL = 4.336808689942018e-19;
/** 2^-30: below this |r| (for k ≠ 0) the absolute reduction error is too large. */
const R_MIN = 9.313225746154785e-10;
/** Fast-path domain |x| < 2^19. */
const FAST_MAX = 524288;
const TABLE_BITS = 300;
const S3 = -1 / 6;
const S5 = 1 / 120;
const S7 = -1 / 5040;
const S9 = 1 / 362880;
const C4 = 1 / 24;
const C6 = -1 / 720;
const C8 = 1 / 40320;

const { P1, P2, P3, P4, TWO_OVER_PI } = splitHalfPi();
/** TAB[8(i+51) …]: sin a hi, lo, cos a hi, lo, Veltkamp halves of sin a hi and cos a hi, for a = i/64. */
const TAB = buildTable();

let slowCalls = 0;

/**
 * Sine, correctly rounded to nearest (ties to even), for every double.
 *
 * @param x - any double (radians)
 * @returns the double nearest to sin x; ±0 for ±0, NaN for ±Infinity and NaN
 * @example
 * ```ts
 * sin(1); // 0.8414709848078965
 * ```
 */
export function sin(x: number): number {
  if (x === 0 || x !== x) return x;
  if (x === Infinity || x === -Infinity) return NaN;
  if (x < FAST_MAX && x > -FAST_MAX) {
    const y = trigFast(x, false);
    if (y === y) return y;
  }
  return sinCosSlow(x, false);
}

/**
 * Cosine, correctly rounded to nearest (ties to even), for every double.
 *
 * @param x - any double (radians)
 * @returns the double nearest to cos x; 1 for ±0, NaN for ±Infinity and NaN
 * @example
 * ```ts
 * cos(1); // 0.5403023058681398
 * ```
 */
export function cos(x: number): number {
  if (x === 0) return 1;
  if (x !== x) return x;
  if (x === Infinity || x === -Infinity) return NaN;
  if (x < FAST_MAX && x > -FAST_MAX) {
    const y = trigFast(x, true);
    if (y === y) return y;
  }
  return sinCosSlow(x, true);
}

/** Nearest integer to a/b (b > 0), ties away from zero. */
function roundDiv(a: bigint, b: bigint): bigint {
  let q = a / b;
  const r2 = 2n * (a - q * b);
  if (r2 >= b) q += 1n;
  else if (r2 <= -b) q -= 1n;
  return q;
}

/**
 * Double-double evaluation of sin x or cos x for |x| < 2^19 (see the header);
 * NaN when the rounding test is inconclusive.
 */
function trigFast(x: number, wantCos: boolean): number {
  const kf = x * TWO_OVER_PI + SHIFTER - SHIFTER;
  // r = x - kf·(P1 + P2 + P3 + P4) as rh + rl.
  const t = x - kf * P1; // exact
  const u2 = kf * P2; // exact
  const ra = t - u2;
  let bv = ra - t;
  const e1 = t - (ra - bv) - (u2 + bv);
  const u3 = kf * P3; // exact
  const rb = ra - u3;
  bv = rb - ra;
  const e2 = ra - (rb - bv) - (u3 + bv);
  const rc = e1 + e2 - kf * P4;
  const rh = rb + rc;
  const rl = rb - rh + rc;
  if (kf !== 0 && Math.abs(rh) < R_MIN) return NaN;
  const fi = rh * 64 + SHIFTER - SHIFTER;
  const base = ((fi | 0) + 51) << 3;
  const dh = rh - fi * 0.015625; // exact
  const d2 = dh * dh;
  const sm = dh * d2 * (S3 + d2 * (S5 + d2 * (S7 + d2 * S9)));
  const cm = d2 * (-0.5 + d2 * (C4 + d2 * (C6 + d2 * C8))) - dh * rl;
  const sa = TAB[base] as number;
  const sal = TAB[base + 1] as number;
  const ca = TAB[base + 2] as number;
  const cal = TAB[base + 3] as number;
  const g = dh * SPLITTER;
  const h1 = g - (g - dh);
  const h2 = dh - h1;
  const quadrant = (kf | 0) & 3;
  // sin x = ±sin r (quadrant 0, 2) or ±cos r (1, 3); cos x = ±cos r (0, 2) or ∓sin r (1, 3).
  const useSinR = wantCos ? (quadrant & 1) === 1 : (quadrant & 1) === 0;
  let hi: number;
  let lo: number;
  const sd = rl + sm; // sin d - dh
  if (useSinR) {
    const a1 = TAB[base + 6] as number;
    const a2 = ca - a1;
    const ph = ca * dh;
    const pl = a1 * h1 - ph + a1 * h2 + a2 * h1 + a2 * h2;
    hi = sa + ph;
    lo = sa - hi + ph + (pl + (sal + (cal * dh + (ca * sd + sa * cm))));
  } else {
    const a1 = TAB[base + 4] as number;
    const a2 = sa - a1;
    const ph = sa * dh;
    const pl = a1 * h1 - ph + a1 * h2 + a2 * h1 + a2 * h2;
    hi = ca - ph;
    lo = ca - hi - ph - (pl - (cal - (sal * dh + (sa * sd - ca * cm))));
  }
  const negate = wantCos ? quadrant === 1 || quadrant === 2 : quadrant >= 2;
  const err = ERR_REL * Math.abs(hi);
  const y = hi + (lo - err);
  if (y !== hi + (lo + err)) return NaN;
  return negate ? -y : y;
}

/** BigInt evaluation of sin x or cos x (x finite, nonzero) with increasing precision (Ziv). */
export function sinCosSlow(x: number, wantCos: boolean): number {
  slowCalls += 1;
  const { mant, exp } = decompose(x);
  const mag = exp + bitLength(mant < 0n ? -mant : mant); // 2^(mag-1) ≤ |x| < 2^mag
  let last = NaN;
  for (let p = 128; p <= 16384; p *= 2) {
    const F = p + 32 + Math.max(0, -mag);
    const G = F + Math.max(0, mag) + 16;
    // π/2·2^G, error ≤ 2 units (piFixed error ≤ 2 at G + 1 bits, halved, floored).
    const halfPi = piFixed(G + 1) >> 2n;
    const s = exp + G;
    let X: bigint;
    let xErr: bigint;
    if (s >= 0) {
      X = mant << BigInt(s);
      xErr = 0n;
    } else {
      X = mant >> BigInt(-s);
      xErr = 1n;
    }
    const q = roundDiv(X, halfPi);
    const R = X - q * halfPi; // |error| ≤ xErr + 2|q| (units 2^-G)
    const absQ = q < 0n ? -q : q;
    const shift = BigInt(G - F);
    const RF = R >> shift;
    const rErr = ((xErr + 2n * absQ) >> shift) + 2n;
    const t = sinCosFixed(RF, F);
    const err = t.err + rErr; // |d sin/dr|, |d cos/dr| ≤ 1
    const quadrant = Number(((q % 4n) + 4n) % 4n);
    let v: bigint;
    if (wantCos) v = quadrant === 0 ? t.cos : quadrant === 1 ? -t.sin : quadrant === 2 ? -t.cos : t.sin;
    else v = quadrant === 0 ? t.sin : quadrant === 1 ? t.cos : quadrant === 2 ? -t.sin : -t.cos;
    const y = roundInterval(v, err, -F);
    if (y === y) return y;
    last = v < 0n ? -roundScaled(-v, -F, false) : roundScaled(v, -F, false);
  }
  return last; // unreachable: sin/cos of a nonzero double is never a rounding boundary
}

/** Number of calls that took the BigInt slow path since module load (for benchmarks). */
export function trigSlowPathCount(): number {
  return slowCalls;
}

function splitHalfPi(): { P1: number; P2: number; P3: number; P4: number; TWO_OVER_PI: number } {
  const F = TABLE_BITS;
  const V = piFixed(F + 1) >> 2n; // π/2·2^F
  const parts: number[] = [];
  let rest = V;
  for (let n = 0; n < 3; n++) {
    const d = bitLength(rest) - 33;
    const m = rest >> BigInt(d);
    parts.push(roundScaled(m, d - F, false)); // exact: 33 bits
    rest -= m << BigInt(d);
  }
  parts.push(roundScaled(rest, -F, false));
  return {
    P1: parts[0] as number,
    P2: parts[1] as number,
    P3: parts[2] as number,
    P4: parts[3] as number,
    TWO_OVER_PI: roundScaled((1n << BigInt(F + 64)) / V, -64, false),
  };
}

function buildTable(): Float64Array {
  const F = TABLE_BITS;
  const t = new Float64Array(103 * 8);
  const split = (v: bigint): [number, number] => {
    const neg = v < 0n;
    const a = neg ? -v : v;
    const hi = roundScaled(a, -F, false);
    const { mant, exp } = decompose(hi);
    const rest = a - (mant << BigInt(exp + F));
    const lo = rest < 0n ? -roundScaled(-rest, -F, false) : roundScaled(rest, -F, false);
    return neg ? [-hi, -lo] : [hi, lo];
  };
  for (let i = -51; i <= 51; i++) {
    const b = (i + 51) * 8;
    if (i === 0) {
      t[b + 2] = 1;
      t[b + 6] = 1;
      continue;
    }
    const { sin: sv, cos: cv } = sinCosFixed((BigInt(i) << BigInt(F)) / 64n, F);
    const [sh, sl] = split(sv);
    const [ch, cl] = split(cv);
    const gs = sh * SPLITTER;
    const gc = ch * SPLITTER;
    t[b] = sh;
    t[b + 1] = sl;
    t[b + 2] = ch;
    t[b + 3] = cl;
    t[b + 4] = gs - (gs - sh);
    t[b + 6] = gc - (gc - ch);
  }
  return t;
}
