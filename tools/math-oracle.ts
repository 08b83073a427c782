/**
 * An independent, rigorous high-precision oracle for llmcp's deterministic
 * math (`exp`, `ln`, `sin`, `cos`, `pow` of @llmcp/model), used by
 * tools/verify-math.ts and its test.
 *
 * Interval arithmetic on dyadic numbers: a value is an interval
 * [lo·2^e, hi·2^e] with BigInt endpoints; every operation rounds the lower
 * end down and the upper end up, and every truncated series adds an explicit
 * bound for its tail, so the true value always lies inside the interval.
 * A candidate double is then judged against the rounding boundaries
 * (midpoints between neighbouring doubles) around it: "ok" when the whole
 * interval lies strictly between them, "wrong" when the interval lies
 * outside, "undecided" otherwise (then the caller retries with more bits).
 *
 * It shares no code and no constant with packages/model/src/math, and uses
 * different methods on purpose:
 *   - e from Σ 1/k!; e^x = e^n · (e^(f/2^R))^(2^R), n = round(x);
 *   - ln x by Newton's iteration on this exp from a double start, closed by
 *     an a-posteriori bound: ρ = x·e^-y - 1, ln x ∈ y + ρ ± ρ²;
 *   - π by Gauss's formula 48·atan(1/18) + 32·atan(1/57) − 20·atan(1/239);
 *   - sin/cos by their Taylor series after an exact reduction by π/2;
 *   - x^y = e^(y·ln x) with the interval of y·ln x carried through.
 * Special values (NaN, infinities, zeros, C99 pow cases) are judged by the
 * rules of C99 Annex F written out here.
 */

/** A closed interval [lo·2^e, hi·2^e] (lo ≤ hi). */
export interface Interval {
  readonly lo: bigint;
  readonly hi: bigint;
  readonly e: number;
}

/** The verdict on a candidate result. */
export type Verdict = 'ok' | 'wrong' | 'undecided';

// ---------------------------------------------------------------------------
// Integer helpers

const view = new DataView(new ArrayBuffer(8));

function absBig(n: bigint): bigint {
  return n < 0n ? -n : n;
}

/**
 * Bit length of |n|, or one more (the exponent of the nearest double, which
 * may have rounded up to the next power of two). Only used to choose
 * normalization shifts and loop ends, where one extra bit is harmless.
 */
function bitLen(n: bigint): number {
  const v = Number(n < 0n ? -n : n);
  if (v === 0) return 0;
  if (v < 8.98846567431158e307) {
    view.setFloat64(0, v);
    return (view.getUint16(0) >> 4) - 1022;
  }
  return (n < 0n ? -n : n).toString(2).length;
}

function ceilShift(n: bigint, s: number): bigint {
  return -(-n >> BigInt(s));
}

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return q * b > a ? q - 1n : q;
}

function ceilDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return q * b < a ? q + 1n : q;
}

// ---------------------------------------------------------------------------
// Dyadic numbers and intervals

/** x = m·2^e exactly, for a finite double. */
export function dyadicOf(x: number): { m: bigint; e: number } {
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const neg = bits >> 63n === 1n;
  const be = Number((bits >> 52n) & 0x7ffn);
  let m = bits & 0xfffffffffffffn;
  let e: number;
  if (be === 0) e = -1074;
  else {
    m |= 1n << 52n;
    e = be - 1075;
  }
  return { m: neg ? -m : m, e };
}

function point(m: bigint, e: number): Interval {
  return { lo: m, hi: m, e };
}

function pointOf(x: number): Interval {
  const { m, e } = dyadicOf(x);
  return point(m, e);
}

const ONE: Interval = point(1n, 0);

function magnitude(a: Interval): number {
  // a ⊂ (-2^t, 2^t) with t = e + bitLen(max |end|)
  const m = absBig(a.lo) > absBig(a.hi) ? a.lo : a.hi;
  return a.e + bitLen(m);
}

function norm(a: Interval, P: number): Interval {
  const b = Math.max(bitLen(a.lo), bitLen(a.hi));
  if (b <= P + 2) return a;
  const s = b - P;
  return { lo: a.lo >> BigInt(s), hi: ceilShift(a.hi, s), e: a.e + s };
}

function coarsen(a: Interval, e2: number): Interval {
  if (a.e >= e2) return a;
  const s = e2 - a.e;
  return { lo: a.lo >> BigInt(s), hi: ceilShift(a.hi, s), e: e2 };
}

function add(a0: Interval, b0: Interval, P: number): Interval {
  const floorE = Math.max(magnitude(a0), magnitude(b0)) - 2 * P - 16;
  const a = coarsen(a0, floorE);
  const b = coarsen(b0, floorE);
  const e = Math.min(a.e, b.e);
  const sa = BigInt(a.e - e);
  const sb = BigInt(b.e - e);
  return norm({ lo: (a.lo << sa) + (b.lo << sb), hi: (a.hi << sa) + (b.hi << sb), e }, P);
}

function neg(a: Interval): Interval {
  return { lo: -a.hi, hi: -a.lo, e: a.e };
}

function sub(a: Interval, b: Interval, P: number): Interval {
  return add(a, neg(b), P);
}

function mul(a: Interval, b: Interval, P: number): Interval {
  let lo: bigint;
  let hi: bigint;
  if (a.lo >= 0n && b.lo >= 0n) {
    lo = a.lo * b.lo;
    hi = a.hi * b.hi;
  } else {
    const p = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi];
    lo = p.reduce((x, y) => (y < x ? y : x));
    hi = p.reduce((x, y) => (y > x ? y : x));
  }
  return norm({ lo, hi, e: a.e + b.e }, P);
}

function divInt(a: Interval, n: bigint, P: number): Interval {
  const s = Math.max(0, P + bitLen(n) + 4 - Math.max(bitLen(a.lo), bitLen(a.hi)));
  const bs = BigInt(s);
  return norm({ lo: floorDiv(a.lo << bs, n), hi: ceilDiv(a.hi << bs, n), e: a.e - s }, P);
}

function recip(a: Interval, P: number): Interval {
  if (a.lo <= 0n && a.hi >= 0n) throw new RangeError('reciprocal of an interval containing 0');
  if (a.hi < 0n) return neg(recip(neg(a), P));
  const k = P + 2 * bitLen(a.hi) + 8;
  const num = 1n << BigInt(k);
  return norm({ lo: floorDiv(num, a.hi), hi: ceilDiv(num, a.lo), e: -a.e - k }, P);
}

/** [-r, r] where r bounds |a|. */
function radiusOf(a: Interval): Interval {
  const r = absBig(a.lo) > absBig(a.hi) ? absBig(a.lo) : absBig(a.hi);
  return { lo: -r, hi: r, e: a.e };
}

/** The midpoint of a as an exact dyadic point and the half-width (as a radius interval). */
function split(a: Interval): { mid: Interval; rad: Interval } {
  const s = a.lo + a.hi; // midpoint = s/2
  return { mid: point(s, a.e - 1), rad: { lo: -(a.hi - a.lo), hi: a.hi - a.lo, e: a.e - 1 } };
}

/** Exact comparison of m1·2^e1 and m2·2^e2: -1, 0 or 1. */
function cmp(m1: bigint, e1: number, m2: bigint, e2: number): number {
  const e = Math.min(e1, e2);
  const a = m1 << BigInt(e1 - e);
  const b = m2 << BigInt(e2 - e);
  return a < b ? -1 : a > b ? 1 : 0;
}

// ---------------------------------------------------------------------------
// Constants

const powerCache = new Map<number, Interval[]>();

/** e^(2^j) for j = 0 … 11 (by repeated squaring of e), cached per precision. */
function ePowers(P: number): Interval[] {
  let table = powerCache.get(P);
  if (!table) {
    table = [eConst(P + 16)];
    for (let j = 1; j < 12; j++) table.push(mul(table[j - 1] as Interval, table[j - 1] as Interval, P + 16));
    powerCache.set(P, table);
  }
  return table;
}

const eCache = new Map<number, Interval>();

/** e = Σ 1/k!, the tail after term k bounded by that term. */
function eConst(P: number): Interval {
  const cached = eCache.get(P);
  if (cached) return cached;
  let sum = ONE;
  let t = ONE;
  for (let k = 1n; ; k += 1n) {
    t = divInt(t, k, P + 8);
    sum = add(sum, t, P + 8);
    if (magnitude(t) < -(P + 16)) break;
  }
  sum = add(sum, { lo: 0n, hi: t.hi, e: t.e }, P); // tail Σ_(j>k) 1/j! < 1/k!
  eCache.set(P, sum);
  return sum;
}

/** atan(1/n)·2^F as [lower, upper] (alternating series, tail ≤ first omitted term). */
function atanInverse(n: bigint, F: number): [bigint, bigint] {
  const one = 1n << BigInt(F);
  let lo = 0n;
  let hi = 0n;
  let pw = n;
  const n2 = n * n;
  for (let k = 0n; ; k += 1n) {
    const den = (2n * k + 1n) * pw;
    const tLo = one / den;
    const tHi = tLo + 1n;
    if (k % 2n === 0n) {
      lo += tLo;
      hi += tHi;
    } else {
      lo -= tHi;
      hi -= tLo;
    }
    if (tLo === 0n) break;
    pw *= n2;
  }
  return [lo - 1n, hi + 1n];
}

let piBits = 0;
let piLo = 0n;
let piHi = 0n;

/** π as an interval with F fractional bits (Gauss: π/4 = 12·atan(1/18) + 8·atan(1/57) − 5·atan(1/239)). */
function piConst(F: number): Interval {
  if (F > piBits) {
    const bits = Math.max(F, 2 * piBits, 1600);
    const [a0, a1] = atanInverse(18n, bits);
    const [b0, b1] = atanInverse(57n, bits);
    const [c0, c1] = atanInverse(239n, bits);
    piLo = 48n * a0 + 32n * b0 - 20n * c1;
    piHi = 48n * a1 + 32n * b1 - 20n * c0;
    piBits = bits;
  }
  const s = piBits - F;
  return { lo: piLo >> BigInt(s), hi: ceilShift(piHi, s), e: -F };
}

// ---------------------------------------------------------------------------
// Functions on intervals

const REDUCTION = 12;

/** e^p for an exact dyadic point p = m·2^e with |p| < 2000. */
function expPoint(m: bigint, e: number, P: number): Interval {
  const W = P + 24;
  let n: bigint;
  let fm: bigint;
  let fe: number;
  if (e >= 0) {
    n = m << BigInt(e);
    fm = 0n;
    fe = 0;
  } else {
    n = (m + (1n << BigInt(-e - 1))) >> BigInt(-e); // round(p)
    fm = m - (n << BigInt(-e));
    fe = e;
  }
  // e^|f| = (e^g)^(2^R), g = |f|/2^R ≤ 2^-13, in fixed point with F fractional
  // bits: lower bounds rounded down, upper bounds rounded up, all terms ≥ 0.
  const F = W + REDUCTION + 8;
  const bF = BigInt(F);
  const fa = fm < 0n ? -fm : fm;
  const sh = fe + F - REDUCTION;
  const gLo = sh >= 0 ? fa << BigInt(sh) : fa >> BigInt(-sh);
  const gHi = sh >= 0 ? gLo : ceilShift(fa, -sh);
  const one = 1n << bF;
  let tLo = one;
  let tHi = one;
  let sLo = one;
  let sHi = one;
  for (let k = 1n; ; k += 1n) {
    tLo = ((tLo * gLo) >> bF) / k;
    tHi = ceilDiv(ceilShift(tHi * gHi, F), k);
    sLo += tLo;
    sHi += tHi;
    if (tHi <= 1n) break;
  }
  sHi += tHi; // tail after the last term ≤ that term (g ≤ 2^-13)
  for (let i = 0; i < REDUCTION; i++) {
    sLo = (sLo * sLo) >> bF;
    sHi = ceilShift(sHi * sHi, F);
  }
  let acc: Interval = norm({ lo: sLo, hi: sHi, e: -F }, W);
  if (fm < 0n) acc = recip(acc, W);
  if (n === 0n) return norm(acc, P);
  // e^|n| as a product of cached e^(2^j)
  const powers = ePowers(W);
  let k = absBig(n);
  let en = ONE;
  for (let j = 0; k > 0n; j++, k >>= 1n) {
    if ((k & 1n) === 1n) en = mul(en, powers[j] as Interval, W);
  }
  acc = n < 0n ? mul(acc, recip(en, W), W) : mul(acc, en, W);
  return norm(acc, P);
}

/** e^z for an interval z (|z| < 2000): e^mid·[1 - w, 1 + 2w] with w the half-width (w ≤ 2^-10). */
function expInterval(z: Interval, P: number): Interval {
  const { mid, rad } = split(z);
  const base = expPoint(mid.lo, mid.e, P);
  if (rad.hi === 0n) return base;
  if (magnitude(rad) > -10) throw new RangeError('exp of a wide interval');
  const w = { lo: 0n, hi: rad.hi, e: rad.e };
  const factor: Interval = add(ONE, { lo: -w.hi, hi: 2n * w.hi, e: w.e }, P + 8);
  return mul(base, factor, P);
}

/** ln x for a finite double x > 0 (Newton on expPoint, a-posteriori enclosure). */
function lnOf(x: number, P: number): Interval {
  const X = pointOf(x);
  let y = pointOf(Math.log(x)); // start only (52 bits); correctness comes from the final bound
  // Newton doubles the correct bits: enough steps that the final ρ² is below 2^-P.
  const schedule: number[] = [];
  for (let bits = 104; bits < P; bits *= 2) schedule.push(Math.min(P, bits) + 16);
  schedule.push(Math.min(P, 104 * 2 ** schedule.length) + 16);
  for (const prec of schedule) {
    const rho = sub(mul(X, expPoint(-y.lo, y.e, prec), prec), ONE, prec);
    y = add(y, split(rho).mid, prec + 64);
    y = split(y).mid; // keep y an exact point
  }
  const rho = sub(mul(X, expPoint(-y.lo, y.e, P + 16), P + 16), ONE, P + 16);
  if (magnitude(rho) > -2) throw new RangeError('ln: Newton did not converge');
  // ln x = y + ln(1 + ρ), |ln(1 + ρ) - ρ| ≤ ρ² for |ρ| ≤ 1/2
  const r = radiusOf(rho);
  const rho2 = mul({ lo: 0n, hi: r.hi, e: r.e }, { lo: 0n, hi: r.hi, e: r.e }, P);
  return add(add(y, rho, P + 16), radiusOf(rho2), P);
}

/** sin and cos of a finite double x. */
function sinCosOf(x: number, P: number): { sin: Interval; cos: Interval } {
  const W = P + 24;
  const X = pointOf(x);
  const mag = magnitude(X);
  let r = X;
  let q = 0n;
  if (mag >= 0) {
    // |x| ≥ 1/2 … reduce by π/2 with F fractional bits: error ≤ |q|·2^-F
    const F = W + 32 + mag;
    const pi = piConst(F + 1);
    const halfPi: Interval = { lo: pi.lo, hi: pi.hi, e: pi.e - 1 };
    const xs = X.lo << BigInt(X.e + F + 2); // x·2^(F+2), exact (X.e ≥ -53 here); halfPi = hm·2^-(F+2)
    const hm = (halfPi.lo + halfPi.hi) >> 1n;
    q = floorDiv(2n * xs + hm, 2n * hm);
    // The difference cancels about mag bits: subtract at W + mag bits.
    r = sub(X, mul(point(q, 0), halfPi, W + mag + 8), W + mag + 8);
  }
  if (magnitude(r) > 1) throw new RangeError(`sin/cos: reduction of ${x} failed`);
  // Taylor at the midpoint rm of r in fixed point (F fractional bits, relative
  // to |r| for tiny r), |rm|^k/k! bounded below/above; then widened by the
  // radius of r (|sin'|, |cos'| ≤ 1). sin is odd: computed for |rm|.
  const { mid, rad } = split(r);
  const F = W + 8 + Math.max(0, -magnitude(r));
  const bF = BigInt(F);
  const sh = mid.e + F;
  const ra = mid.lo < 0n ? -mid.lo : mid.lo;
  const gLo = sh >= 0 ? ra << BigInt(sh) : ra >> BigInt(-sh);
  const gHi = sh >= 0 ? gLo : ceilShift(ra, -sh);
  const one = 1n << bF;
  let tLo = one;
  let tHi = one;
  let sLo = 0n;
  let sHi = 0n;
  let cLo = one;
  let cHi = one;
  for (let k = 1n; ; k += 1n) {
    tLo = ((tLo * gLo) >> bF) / k;
    tHi = ceilDiv(ceilShift(tHi * gHi, F), k);
    switch (Number(k % 4n)) {
      case 1:
        sLo += tLo;
        sHi += tHi;
        break;
      case 2:
        cLo -= tHi;
        cHi -= tLo;
        break;
      case 3:
        sLo -= tHi;
        sHi -= tLo;
        break;
      default:
        cLo += tLo;
        cHi += tHi;
    }
    if (tHi <= 1n) break; // tail ≤ last term (|r| < 1)
  }
  const radF = rad.hi === 0n ? 0n : ceilShift(rad.hi, -(rad.e + F)) + 1n;
  const spread = tHi + radF;
  let s: Interval = norm({ lo: sLo - spread, hi: sHi + spread, e: -F }, P);
  const c: Interval = norm({ lo: cLo - spread, hi: cHi + spread, e: -F }, P);
  if (mid.lo < 0n) s = neg(s);
  switch (Number(((q % 4n) + 4n) % 4n)) {
    case 0:
      return { sin: s, cos: c };
    case 1:
      return { sin: c, cos: neg(s) };
    case 2:
      return { sin: neg(s), cos: neg(c) };
    default:
      return { sin: neg(c), cos: s };
  }
}

// ---------------------------------------------------------------------------
// Judging a candidate

/** The doubles next to a finite positive double d (bit-pattern neighbours), as dyadics; null past the largest. */
function neighbours(d: number): { below: { m: bigint; e: number }; above: { m: bigint; e: number } | null } {
  view.setFloat64(0, d);
  const bits = view.getBigUint64(0);
  view.setBigUint64(0, bits - 1n);
  const below = dyadicOf(view.getFloat64(0));
  view.setBigUint64(0, bits + 1n);
  const up = view.getFloat64(0);
  return { below, above: up === Infinity ? null : dyadicOf(up) };
}

/** Is the true value (inside v) rounded to nearest equal to the candidate c? */
export function judge(c: number, v: Interval): Verdict {
  if (c !== c) return 'wrong';
  if (c < 0 || Object.is(c, -0)) return judge(-c, neg(v));
  // Rounding boundaries around c ≥ 0: (lower, upper), as m·2^e (null = none).
  let lower: { m: bigint; e: number } | null;
  let upper: { m: bigint; e: number } | null;
  if (c === 0) {
    // (the sign of a zero result is judged by the caller)
    lower = { m: -1n, e: -1075 };
    upper = { m: 1n, e: -1075 };
  } else if (c === Infinity) {
    lower = { m: (1n << 54n) - 1n, e: 970 }; // 2^1024 - 2^970
    upper = null;
  } else {
    const { m, e } = dyadicOf(c);
    const { below, above } = neighbours(c);
    lower = { m: m * 2n ** BigInt(Math.max(0, e - below.e)) + below.m * 2n ** BigInt(Math.max(0, below.e - e)), e: Math.min(e, below.e) - 1 };
    upper = above
      ? { m: m * 2n ** BigInt(Math.max(0, e - above.e)) + above.m * 2n ** BigInt(Math.max(0, above.e - e)), e: Math.min(e, above.e) - 1 }
      : { m: (1n << 54n) - 1n, e: 970 };
  }
  const lowOk = lower === null || cmp(v.lo, v.e, lower.m, lower.e) > 0;
  const highOk = upper === null || cmp(v.hi, v.e, upper.m, upper.e) < 0;
  if (lowOk && highOk) return 'ok';
  const entirelyBelow = lower !== null && cmp(v.hi, v.e, lower.m, lower.e) < 0;
  const entirelyAbove = upper !== null && cmp(v.lo, v.e, upper.m, upper.e) > 0;
  return entirelyBelow || entirelyAbove ? 'wrong' : 'undecided';
}

/**
 * Runs `attempt` at 160, 400 and 1200 bits until the verdict is decided (the
 * hardest double cases of these functions need about 120 bits).
 */
function decide(attempt: (P: number) => Verdict): Verdict {
  let last: Verdict = 'undecided';
  for (const P of [160, 400, 1200]) {
    last = attempt(P);
    if (last !== 'undecided') return last;
  }
  return last;
}

function sameDouble(a: number, b: number): Verdict {
  return Object.is(a, b) ? 'ok' : 'wrong';
}

/** Verdict on a claimed correctly rounded e^x. */
export function checkExp(x: number, y: number): Verdict {
  if (x !== x) return y !== y ? 'ok' : 'wrong';
  if (x === Infinity) return sameDouble(y, Infinity);
  if (x === -Infinity) return sameDouble(y, 0);
  if (x > 1000) return sameDouble(y, Infinity); // e^1000 > 2^1442
  if (x < -1000) return sameDouble(y, 0); // e^-1000 < 2^-1442
  if (Object.is(y, -0)) return 'wrong';
  const { m, e } = dyadicOf(x);
  return decide((P) => judge(y, expPoint(m, e, P)));
}

/** Verdict on a claimed correctly rounded ln x. */
export function checkLn(x: number, y: number): Verdict {
  if (x !== x || x < 0 || x === -Infinity) return y !== y ? 'ok' : 'wrong';
  if (x === 0) return sameDouble(y, -Infinity);
  if (x === Infinity) return sameDouble(y, Infinity);
  if (x === 1) return sameDouble(y, 0);
  return decide((P) => judge(y, lnOf(x, P)));
}

/** Verdict on a claimed correctly rounded sin x (`wantCos` false) or cos x. */
export function checkSinCos(x: number, y: number, wantCos: boolean): Verdict {
  if (x !== x || x === Infinity || x === -Infinity) return y !== y ? 'ok' : 'wrong';
  if (x === 0) return wantCos ? sameDouble(y, 1) : sameDouble(y, x);
  return decide((P) => {
    const r = sinCosOf(x, P);
    return judge(y, wantCos ? r.cos : r.sin);
  });
}

/** C99 Annex F pow for the cases it fixes; undefined for finite x > 0 (or x < 0 with integer y), y finite nonzero. */
function powSpecial(x: number, y: number): number | undefined {
  const isInt = Number.isInteger(y);
  const odd = isInt && Math.abs(y % 2) === 1;
  if (y === 0) return 1;
  if (x === 1) return 1;
  if (x !== x || y !== y) return NaN;
  if (y === Infinity || y === -Infinity) {
    const ax = Math.abs(x);
    if (ax === 1) return 1;
    if (ax < 1) return y > 0 ? 0 : Infinity;
    return y > 0 ? Infinity : 0;
  }
  if (x === 0) {
    if (y > 0) return odd ? x : 0;
    return odd ? (Object.is(x, -0) ? -Infinity : Infinity) : Infinity;
  }
  if (x === Infinity) return y > 0 ? Infinity : 0;
  if (x === -Infinity) {
    if (y > 0) return odd ? -Infinity : Infinity;
    return odd ? -0 : 0;
  }
  if (x < 0 && !isInt) return NaN;
  return undefined;
}

/** Verdict on a claimed correctly rounded x^y (C99 special values). */
export function checkPow(x: number, y: number, z: number): Verdict {
  const special = powSpecial(x, y);
  if (special !== undefined) return special !== special ? (z !== z ? 'ok' : 'wrong') : sameDouble(z, special);
  const negate = x < 0 && Math.abs(y % 2) === 1;
  if (negate !== (z < 0 || Object.is(z, -0))) return 'wrong';
  const ax = Math.abs(x);
  const az = Math.abs(z);
  const Y = pointOf(y);
  return decide((P) => {
    const L = lnOf(ax, P + 16 + Math.max(0, magnitude(Y)));
    const Z = mul(Y, L, P + 16);
    // Far outside the finite range: e^Z ≥ e^745.2 > 2^1075 or ≤ e^-745.2 < 2^-1075.
    if (cmp(Z.lo, Z.e, 746n, 0) > 0) return sameDouble(az, Infinity);
    if (cmp(Z.hi, Z.e, -746n, 0) < 0) return sameDouble(az, 0);
    if (magnitude(Z) > 11) return 'undecided';
    return judge(az, expInterval(Z, P));
  });
}
