/**
 * Central-difference gradient checks ([STYLE §19](../../../../docs/STYLE.md)): the analytic gradient of a
 * scalar function must match `(f(x + h) − f(x − h)) / 2h` within a stated
 * tolerance. h = 1e-5 gives a truncation error of order h²·f''' ≈ 1e-10 and a
 * rounding error of order 1e-16·|f| / h ≈ 1e-11 for the O(1) functions used
 * here, so a tolerance of 1e-6·(1 + |g|) is loose enough never to flake and
 * tight enough to catch any wrong term.
 */
export const STEP = 1e-5;
export const TOLERANCE = 1e-6;

/** Deterministic pseudo-random values in [-1, 1). */
export function randomValues(n: number, seed: number): Float64Array {
  let s = seed >>> 0 || 1;
  return Float64Array.from({ length: n }, () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return (s / 2 ** 32) * 2 - 1;
  });
}

/**
 * Compares `analytic[i]` with the central difference of `f` in `x[i]` for
 * the given indices (all when omitted); returns the worst violation message or null.
 */
export function checkGradient(
  name: string,
  f: () => number,
  x: Float64Array,
  analytic: ArrayLike<number>,
  indices: readonly number[] = Array.from({ length: x.length }, (_, i) => i),
): string | null {
  for (const i of indices) {
    const saved = x[i]!;
    x[i] = saved + STEP;
    const plus = f();
    x[i] = saved - STEP;
    const minus = f();
    x[i] = saved;
    const numeric = (plus - minus) / (2 * STEP);
    const a = analytic[i]!;
    if (!(Math.abs(a - numeric) <= TOLERANCE * (1 + Math.abs(a)))) {
      return `${name}[${i}]: analytic ${a}, central difference ${numeric}`;
    }
  }
  return null;
}

/**
 * {@link checkGradient} for several inputs of one function: `checks[name]` is [x, analytic]; returns the
 * messages of the inputs that fail (empty when all match).
 */
export function gradientMismatches(f: () => number, checks: Readonly<Record<string, readonly [Float64Array, ArrayLike<number>]>>): string[] {
  return Object.entries(checks).flatMap(([name, [x, analytic]]) => checkGradient(name, f, x, analytic) ?? []);
}

/** Σ w_i · y_i. */
export function dot(w: ArrayLike<number>, y: ArrayLike<number>, n: number = w.length): number {
  let s = 0;
  for (let i = 0; i < n; i++) s += w[i]! * y[i]!;
  return s;
}
