/**
 * The checks that src/math's correctly rounded functions (exp, ln, sin, cos) and the batch kernels built on
 * them share: hand-picked bit patterns from an independent evaluation, agreement of the fast path with the
 * function's own BigInt evaluation on generated arguments, and which arguments (and how many) the fast path
 * hands on to the BigInt one.
 */
import { SplitMix64 } from '@llmcp/format';
import { bits, f64 } from './bits.ts';

type Scalar = (x: number) => number;

/** A function under test: its fast path (the exported function) and its BigInt evaluation. */
export interface FastAndSlow {
  readonly name: string;
  readonly fast: Scalar;
  readonly slow: Scalar;
}

/** One message per row [x, f(x)] (bit patterns) of `table` that `f` misses. */
export function missedRoundings(name: string, f: Scalar, table: readonly (readonly [string, string])[]): string[] {
  return table.filter(([x, y]) => bits(f(f64(x))) !== y).map(([x, y]) => `${name}(${x}): expected ${y}, found ${bits(f(f64(x)))}`);
}

/** The first n arguments of the rows `row` draws, one after the other, from SplitMix64(seed) (a row holds one or more). */
export function drawDoubles(seed: bigint, n: number, row: (rng: SplitMix64) => readonly number[]): Float64Array {
  const rng = new SplitMix64(seed);
  const xs = new Float64Array(n);
  for (let i = 0; i < n; ) {
    const r = row(rng);
    if (r.length === 0) throw new RangeError('drawDoubles: a row holds no argument');
    xs.set(r.slice(0, n - i), i);
    i += r.length;
  }
  return xs;
}

/** The first five arguments of `xs` on which a fast path and its BigInt evaluation differ (`Object.is`). */
export function slowPathDisagreements(fns: readonly FastAndSlow[], xs: Iterable<number>): string[] {
  const wrong: string[] = [];
  for (const x of xs) {
    for (const { name, fast, slow } of fns) {
      const a = fast(x);
      const b = slow(x);
      if (!Object.is(a, b)) wrong.push(`${name}(${bits(x)}): fast ${bits(a)}, BigInt ${bits(b)}`);
    }
  }
  return wrong.slice(0, 5);
}

/** Whether `f(x)` took the BigInt path (`slowCount`, the function's count of such calls, moved). */
export function takesSlowPath(f: Scalar, slowCount: () => number, x: number): boolean {
  const before = slowCount();
  f(x);
  return slowCount() !== before;
}

/** How many of n calls `call(rng)` (rng SplitMix64(seed)) sent to the BigInt path counted by `slowCount`. */
export function slowPathCalls(slowCount: () => number, seed: bigint, n: number, call: (rng: SplitMix64) => void): number {
  const rng = new SplitMix64(seed);
  const before = slowCount();
  for (let i = 0; i < n; i++) call(rng);
  return slowCount() - before;
}

/** The first `most` arguments `draw(rng)` (rng SplitMix64(seed)) gives, in 3 000 000 tries, on which `f` takes its BigInt path. */
export function slowPathArguments(f: Scalar, slowCount: () => number, seed: bigint, most: number, draw: (rng: SplitMix64) => number): number[] {
  const rng = new SplitMix64(seed);
  const slow: number[] = [];
  for (let i = 0; i < 3_000_000 && slow.length < most; i++) {
    const x = draw(rng);
    if (takesSlowPath(f, slowCount, x)) slow.push(x);
  }
  return slow;
}
