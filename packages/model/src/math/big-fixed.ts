/**
 * Arbitrary-precision fixed-point arithmetic on BigInt, used by the slow
 * (rare) paths of the correctly rounded functions, by sin/cos/pow, and to
 * build the tables of the fast paths at module load.
 *
 * A real value v is held as an integer V with V ≈ v·2^F ("F fractional
 * bits"); every kernel returns, next to V, a bound `err` (in units of 2^-F)
 * on |V - v·2^F|. `roundInterval` turns such an enclosure into the correctly
 * rounded double when the whole interval rounds to the same double (Ziv's
 * strategy: callers retry with more bits when it does not).
 *
 * Only exact integer operations are used, so results are engine independent.
 * Internal to the math module (../../../../docs/spec/model.md §14).
 */
import { decompose, HI, scaleByPow2 } from './float-bits.ts';

/** A fixed-point approximation V ≈ v·2^F with |V - v·2^F| ≤ err. */
export interface FixedApprox {
  /** The scaled integer V. */
  readonly value: bigint;
  /** Error bound in units of 2^-F. */
  readonly err: bigint;
}

const SCRATCH_B = new ArrayBuffer(8);
const F64B = new Float64Array(SCRATCH_B);
const U32B = new Uint32Array(SCRATCH_B);

/** Number of bits of a non-negative BigInt (0 for 0). */
export function bitLength(n: bigint): number {
  if (n === 0n) return 0;
  // Number(n) is n rounded to nearest: its exponent is the bit length, or one
  // more when rounding carried into the next power of two (checked exactly).
  const v = Number(n);
  if (v < 8.98846567431158e307) {
    F64B[0] = v;
    let b = ((U32B[HI] as number) >>> 20) - 1022;
    if (b > 53 && n < 1n << BigInt(b - 1)) b -= 1;
    return b;
  }
  const s = n.toString(16);
  return (s.length - 1) * 4 + (32 - Math.clz32(parseInt(s.charAt(0), 16)));
}

/**
 * Rounds n·2^sh to the nearest double, ties to even, where n ≥ 0; with
 * `sticky`, the value is taken to be infinitesimally larger than n·2^sh (used
 * for exact rational results whose remainder is not zero). Subnormal results
 * are rounded on the 2^-1074 grid, results of 2^1024 or more give +Infinity.
 */
export function roundScaled(n: bigint, sh: number, sticky: boolean): number {
  if (n === 0n) return 0;
  const b = bitLength(n);
  if (b - 1 + sh > 1023) return Infinity;
  // Bits to drop: keep 53 bits, but never go below the 2^-1074 grid.
  const s = Math.max(b - 53, -1074 - sh);
  if (s <= 0) return scaleByPow2(Number(n), sh); // exact (n < 2^53)
  const bs = BigInt(s);
  let q = n >> bs;
  const rem = n - (q << bs);
  const half = 1n << (bs - 1n);
  if (rem > half || (rem === half && (sticky || (q & 1n) === 1n))) q += 1n;
  if (q === 0n) return 0;
  return scaleByPow2(Number(q), sh + s); // q ≤ 2^53: exact as a Number
}

/**
 * The correctly rounded double of a real known to lie in
 * [(v - err)·2^sh, (v + err)·2^sh], or NaN when that interval contains a
 * rounding boundary (then more precision is needed). Exact: rounding is
 * monotonic, so equal roundings of both ends fix the rounding of every point
 * between them.
 */
export function roundInterval(v: bigint, err: bigint, sh: number): number {
  const lo = v - err;
  const hi = v + err;
  if (lo > 0n) {
    const a = roundScaled(lo, sh, false);
    return a === roundScaled(hi, sh, false) ? a : NaN;
  }
  if (hi < 0n) {
    const a = roundScaled(-hi, sh, false);
    return a === roundScaled(-lo, sh, false) ? -a : NaN;
  }
  return NaN;
}

/**
 * x·2^F for a finite double x, as a fixed-point approximation (exact when x
 * has no bits below 2^-F, otherwise floored with error < 1).
 */
export function toFixed(x: number, F: number): FixedApprox {
  const { mant, exp } = decompose(x);
  const s = exp + F;
  if (s >= 0) return { value: mant << BigInt(s), err: 0n };
  return { value: mant >> BigInt(-s), err: 1n };
}

// ---------------------------------------------------------------------------
// Constants (cached at the highest precision requested so far)

/**
 * atanh(1/n)·2^F = Σ_k 1/((2k+1)·n^(2k+1)) · 2^F for an integer n ≥ 2. The
 * powers are exact floors (chained floor divisions of positive integers) and
 * each term is floored once more, so the result is below the true value by
 * less than 2·(number of terms) + 1 units.
 */
function atanhSeries(n: bigint, F: number): bigint {
  let pw = (1n << BigInt(F)) / n;
  let sum = pw;
  const n2 = n * n;
  for (let k = 1n; ; k += 1n) {
    pw /= n2;
    if (pw === 0n) break;
    sum += pw / (2n * k + 1n);
  }
  return sum;
}

const GUARD = 64;
let ln2Bits = -1;
let ln2Value = 0n;
let piBits = -1;
let piValue = 0n;

/** ln 2 · 2^F with |error| ≤ 2 units. */
export function ln2Fixed(F: number): bigint {
  if (F > ln2Bits) {
    const bits = Math.max(F, 2 * ln2Bits, 512);
    // ln 2 = 2·atanh(1/3); series error < 2^-GUARD+ε after the shift.
    ln2Value = atanhSeries(3n, bits + GUARD + 1) >> BigInt(GUARD);
    ln2Bits = bits;
  }
  return ln2Value >> BigInt(ln2Bits - F);
}

/** π · 2^F with |error| ≤ 2 units. */
export function piFixed(F: number): bigint {
  if (F > piBits) {
    const bits = Math.max(F, 2 * piBits, 1280);
    const G = BigInt(bits + GUARD);
    // Machin: π = 16·atan(1/5) - 4·atan(1/239).
    const a = atanSeries(5n, Number(G) + 4);
    const b = atanSeries(239n, Number(G) + 2);
    piValue = (a - b) >> BigInt(GUARD);
    piBits = bits;
  }
  return piValue >> BigInt(piBits - F);
}

/** atan(1/n)·2^F, error < 2·terms + 1 units. */
function atanSeries(n: bigint, F: number): bigint {
  let pw = (1n << BigInt(F)) / n;
  let sum = pw;
  const n2 = n * n;
  for (let k = 1n; ; k += 1n) {
    pw /= n2;
    if (pw === 0n) break;
    const term = pw / (2n * k + 1n);
    sum = k % 2n === 1n ? sum - term : sum + term;
  }
  return sum;
}

// ---------------------------------------------------------------------------
// Kernels

/**
 * e^r · 2^F for r = R/2^F, |r| ≤ 1, by the Taylor series.
 *
 * With t_0 = 2^F and t_n = trunc(floor(t_(n-1)·R/2^F)/n), the error of t_n
 * against r^n/n!·2^F obeys |ε_n| ≤ |ε_(n-1)|/n + 2, so |ε_n| ≤ 3. The loop
 * stops at the first t_N = 0 (true term ≤ 3 units, remaining tail ≤ that
 * term), hence the total error is at most 3N + 3 units.
 */
export function expFixed(R: bigint, F: number): FixedApprox {
  const bF = BigInt(F);
  const one = 1n << bF;
  let sum = one;
  let term = one;
  let n = 1n;
  for (;;) {
    term = ((term * R) >> bF) / n;
    if (term === 0n) break;
    sum += term;
    n += 1n;
  }
  return { value: sum, err: 3n * n + 3n };
}

/** Both sin r · 2^F and cos r · 2^F for r = R/2^F, |r| ≤ 1 (same bound as {@link expFixed}). */
export function sinCosFixed(R: bigint, F: number): { sin: bigint; cos: bigint; err: bigint } {
  const bF = BigInt(F);
  let cos = 1n << bF;
  let sin = 0n;
  let term = cos;
  let n = 1n;
  for (;;) {
    term = ((term * R) >> bF) / n;
    if (term === 0n) break;
    switch (Number(n % 4n)) {
      case 1:
        sin += term;
        break;
      case 2:
        cos -= term;
        break;
      case 3:
        sin -= term;
        break;
      default:
        cos += term;
    }
    n += 1n;
  }
  return { sin, cos, err: 3n * n + 3n };
}

/**
 * ln(mant·2^exp)·2^F for a positive integer mant.
 *
 * mant·2^exp = y·2^E with y = mant/D ∈ (1/√2, √2]; ln y = 2·atanh(z),
 * z = (mant - D)/(mant + D), |z| ≤ 0.1716, summed as Σ z^(2k+1)/(2k+1).
 * Z carries error < 1, Z² < 2, each power < 1.5 (contraction by z² ≤ 0.03),
 * each term < 2: the atanh sum is within 2K + 3 units (K terms, tail and the
 * 1/(1-z²) ≤ 1.031 amplification of Z's error included), doubled; E·ln2 adds
 * 2|E|.
 */
export function lnFixed(mant: bigint, exp: number, F: number): FixedApprox {
  const b = bitLength(mant);
  let D = 1n << BigInt(b - 1);
  let E = exp + b - 1;
  if (mant * mant > 2n * D * D) {
    D <<= 1n;
    E += 1;
  }
  const bF = BigInt(F);
  const Z = ((mant - D) << bF) / (mant + D);
  const Z2 = (Z * Z) >> bF;
  let pw = Z;
  let sum = Z;
  let k = 1n;
  for (;;) {
    pw = (pw * Z2) >> bF;
    if (pw === 0n || pw === -1n) break;
    sum += pw / (2n * k + 1n);
    k += 1n;
  }
  const value = 2n * sum + BigInt(E) * ln2Fixed(F);
  const absE = BigInt(E < 0 ? -E : E);
  return { value, err: 4n * k + 8n + 2n * absE };
}

/** ln|x|·2^F for a finite nonzero double x. */
export function lnOfDouble(x: number, F: number): FixedApprox {
  const { mant, exp } = decompose(x);
  return lnFixed(mant < 0n ? -mant : mant, exp, F);
}

/**
 * e^(Z/2^F) as an enclosure of the result: V·2^sh with error `err` units
 * (sh = k - F after the reduction Z = k·ln2 + R). `zErr` is the error of Z.
 * Requires |Z/2^F| small enough that k fits a Number (callers check range).
 */
export function expOfFixed(Z: bigint, zErr: bigint, F: number): { value: bigint; err: bigint; sh: number } {
  const L = ln2Fixed(F);
  const k = Z / L; // truncated: |r| < ln 2 + tiny
  const R = Z - k * L;
  const absK = k < 0n ? -k : k;
  const { value, err } = expFixed(R, F);
  // |δR| ≤ zErr + 2|k|; e^r ≤ 2 turns it into ≤ 2·(zErr + 2|k|) + 1 units.
  const rErr = zErr + 2n * absK;
  return { value, err: err + 2n * rErr + 1n, sh: Number(k) - F };
}
