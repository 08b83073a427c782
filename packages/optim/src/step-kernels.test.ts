/**
 * The AdamW step (WebAssembly SIMD and pure-JavaScript paths) and the clip
 * against straightforward scalar references of ../../../docs/spec/training.md §5/§6.3, bit for
 * bit, over generated layouts (0..5000 parameters, odd and even tensors) and
 * values (subnormals, ±0, huge, non-finite), every gradient transform.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { SplitMix64 } from '@llmcp/format';
import { Decoder, type CallSetSpec, type ParameterEntry, type ParameterLayout } from '@llmcp/model';
import { AdamW } from './adamw.ts';
import { clipByGlobalNorm, type GradientTransform } from './clip.ts';
import { isOptimError } from './errors.ts';
import { AdamWKernel, optimSimdActive, setOptimSimd } from './internal/simd.ts';

afterEach(() => {
  setOptimSimd(true);
});

/** A layout of tensors with these lengths; every third is a `.gain` (no decay). */
function layoutOf(lengths: readonly number[]): ParameterLayout {
  const entries: ParameterEntry[] = [];
  let offset = 0;
  lengths.forEach((length, i) => {
    entries.push({ name: `t${i}.${i % 3 === 2 ? 'gain' : 'weight'}`, shape: [length], offset, length, kind: i % 3 === 2 ? 'gain' : 'weight' } as ParameterEntry);
    offset += length;
  });
  return { entries, size: offset, embedding: 0, blocks: [], finalNorm: 0, indexByName: new Map(entries.map((e, i) => [e.name, i])) };
}

const U64 = new BigUint64Array(1);
const F64 = new Float64Array(U64.buffer);
const bitsOf = (a: Float64Array): bigint[] => Array.from(new BigUint64Array(a.slice().buffer));

/**
 * A value drawn from a mix: ordinary (|x| < scale), tiny, subnormal, ±0,
 * huge (up to 10^maxExp), near 1 and, with probability `nonFinite`, NaN or ±∞.
 */
function drawValue(rng: SplitMix64, scale: number, maxExp: number, nonFinite = 0): number {
  if (nonFinite > 0 && rng.nextUnit() < nonFinite) return [NaN, Infinity, -Infinity][rng.nextBelow(3)]!;
  const pick = rng.nextBelow(100);
  const sign = rng.nextBelow(2) === 0 ? 1 : -1;
  if (pick < 75) return sign * scale * rng.nextUnit();
  if (pick < 80) return sign * 1e-300 * rng.nextUnit();
  if (pick < 85) {
    U64[0] = rng.nextU64() & 0x000fffffffffffffn; // subnormal (or +0)
    return sign * F64[0]!;
  }
  if (pick < 90) return sign * 0;
  if (pick < 95) return sign * (1 + rng.nextUnit()) * 10 ** (100 + rng.nextBelow(maxExp - 99));
  return sign * (1 + rng.nextUnit());
}

interface Case {
  readonly layout: ParameterLayout;
  readonly W: Float64Array;
  readonly G: Float64Array;
  readonly M: Float64Array;
  readonly V: Float64Array;
}

function makeCase(lengths: readonly number[], seed: bigint, wild: boolean): Case {
  const layout = layoutOf(lengths);
  const n = layout.size;
  const rng = new SplitMix64(seed);
  // wild: huge values only as large as keep most updates finite; in a quarter of the cases, rare non-finite gradients
  const nonFinite = wild && rng.nextBelow(4) === 0 ? 1 / 2000 : 0;
  const W = Float64Array.from({ length: n }, () => (wild ? drawValue(rng, 1, 300) : rng.nextUnit() - 0.5));
  const G = Float64Array.from({ length: n }, () => (wild ? drawValue(rng, 1e-2, 100, nonFinite) : (rng.nextUnit() - 0.5) * 1e-2));
  const M = Float64Array.from({ length: n }, () => (wild ? drawValue(rng, 1e-3, 200) : (rng.nextUnit() - 0.5) * 1e-3));
  const V = Float64Array.from({ length: n }, () => (wild ? Math.abs(drawValue(rng, 1e-6, 200)) : rng.nextUnit() * 1e-6));
  return { layout, W, G, M, V };
}

interface Hyper {
  readonly learningRate: number;
  readonly beta1: number;
  readonly beta2: number;
  readonly epsilon: number;
  readonly weightDecay: number;
}

/** ../../../docs/spec/training.md §6.3 for one step, element by element; returns the first non-finite index (then nothing is written). */
function referenceStep(c: Case, h: Hyper, t: GradientTransform, lr: number, powers: { b1: number; b2: number }): number {
  const b1pow = powers.b1 * h.beta1;
  const b2pow = powers.b2 * h.beta2;
  const n = c.layout.size;
  const W2 = new Float64Array(n);
  const M2 = new Float64Array(n);
  const V2 = new Float64Array(n);
  for (const e of c.layout.entries) {
    const wd = e.name.endsWith('.gain') ? 0.0 : h.weightDecay;
    for (let i = e.offset; i < e.offset + e.length; i++) {
      const raw = c.G[i]!;
      const g = t.kind === 'none' ? raw : t.kind === 'uniform' ? raw * t.multiplier : (raw / t.divisor) * t.factor;
      const m = h.beta1 * c.M[i]! + (1.0 - h.beta1) * g;
      const v = h.beta2 * c.V[i]! + (1.0 - h.beta2) * (g * g);
      const direction = m / (1.0 - b1pow) / (Math.sqrt(v / (1.0 - b2pow)) + h.epsilon);
      const w = c.W[i]! - lr * direction - lr * wd * c.W[i]!;
      if (!Number.isFinite(w) || !Number.isFinite(m) || !Number.isFinite(v) || !Number.isFinite(direction)) return i;
      W2[i] = w;
      M2[i] = m;
      V2[i] = v;
    }
  }
  c.W.set(W2);
  c.M.set(M2);
  c.V.set(V2);
  powers.b1 = b1pow;
  powers.b2 = b2pow;
  return -1;
}

const hyper = fc.record({
  learningRate: fc.constantFrom(0.04, 0.01, 1e-3, 0.5),
  beta1: fc.constantFrom(0.9, 0.5, 0.99),
  beta2: fc.constantFrom(0.999, 0.95, 0.9999),
  epsilon: fc.constantFrom(1e-8, 1e-12, 1e-300, 0.5),
  weightDecay: fc.constantFrom(0.01, 0.0, 0.1),
});

const transform: fc.Arbitrary<GradientTransform> = fc.oneof(
  fc.constant({ kind: 'none' } as const),
  fc.constantFrom(0.5, 1e-3, 3.0000000000000004, 5e-324).map((multiplier) => ({ kind: 'uniform', multiplier }) as const),
  fc.constantFrom([1e300, 1e-10], [3.5, 1e-320], [1e-5, 7]).map(([divisor, factor]) => ({ kind: 'scaled', divisor: divisor!, factor: factor! }) as const),
);

/** Tensor lengths summing to at most 5000 (0 tensors allowed), odd and even. */
const lengths = fc.array(fc.oneof(fc.integer({ min: 1, max: 7 }), fc.integer({ min: 1, max: 1500 })), { minLength: 0, maxLength: 12 }).map((ls) => {
  const out: number[] = [];
  let total = 0;
  for (const l of ls) {
    if (total + l > 5000) continue;
    out.push(l);
    total += l;
  }
  return out;
});

/** @returns a copy of `a` on a SharedArrayBuffer. */
function sharedCopy(a: Float64Array): Float64Array {
  const b = new Float64Array(new SharedArrayBuffer(a.byteLength));
  b.set(a);
  return b;
}

/**
 * Runs `steps` AdamW steps on a copy of the case with the SIMD kernel on or
 * off, its blocks shared out among the threads of `threads` if given; the
 * outcome of each.
 */
function runOptimizer(c: Case, h: Hyper, steps: readonly { lr: number; t: GradientTransform }[], simd: boolean, threads?: Decoder): { outcomes: (string | null)[]; W: bigint[]; M: bigint[]; V: bigint[] } {
  setOptimSimd(simd);
  let shared = 0;
  const lent = threads === undefined ? {} : { threads: threads.threads, shareCalls: (spec: CallSetSpec) => (shared++, threads.shareCalls(spec)) };
  // With threads, the arrays on SharedArrayBuffers like a threaded decoder's: its threads copy the inputs in and the new parameters out.
  const copy = (a: Float64Array): Float64Array => (threads === undefined ? a.slice() : sharedCopy(a));
  const model = { layout: c.layout, parameters: copy(c.W), gradients: copy(c.G), ...lent };
  const opt = new AdamW(model, { config: h, groups: c.layout.entries.length === 0 ? null : (name) => name.endsWith('.gain') });
  // the path under test is the one taken
  expect(AdamWKernel.create({ G: model.gradients, W: model.parameters, tensors: c.layout.entries }) !== null).toBe(simd);
  expect(shared).toBe(simd && threads !== undefined ? 1 : 0);
  opt.first.set(c.M);
  opt.second.set(c.V);
  const outcomes: (string | null)[] = [];
  for (const s of steps) {
    const before = [bitsOf(model.parameters), bitsOf(opt.first), bitsOf(opt.second), opt.stepCount, opt.beta1Power, opt.beta2Power];
    try {
      const clip = { normBefore: 0, normAfter: 0, clipped: s.t.kind !== 'none', multiplier: 1, largestAbs: 0, scaledSumOfSquares: 1, root: 1, transform: s.t };
      opt.step({ learningRate: s.lr, clip });
      outcomes.push(null);
    } catch (e) {
      if (!isOptimError(e) || e.code !== 'OPTIM_NON_FINITE_UPDATE') throw e;
      outcomes.push(`${e.tensorName}[${e.index}]`);
      // nothing changed
      expect([bitsOf(model.parameters), bitsOf(opt.first), bitsOf(opt.second), opt.stepCount, opt.beta1Power, opt.beta2Power]).toEqual(before);
    }
  }
  return { outcomes, W: bitsOf(model.parameters), M: bitsOf(opt.first), V: bitsOf(opt.second) };
}

function runReference(c0: Case, h: Hyper, steps: readonly { lr: number; t: GradientTransform }[]): { outcomes: (string | null)[]; W: bigint[]; M: bigint[]; V: bigint[] } {
  const c = { ...c0, W: c0.W.slice(), M: c0.M.slice(), V: c0.V.slice() };
  const powers = { b1: 1.0, b2: 1.0 };
  const outcomes = steps.map((s) => {
    const bad = referenceStep(c, h, s.t, s.lr, powers);
    if (bad < 0) return null;
    const e = [...c.layout.entries].reverse().find((x) => x.offset <= bad)!;
    return `${e.name}[${bad - e.offset}]`;
  });
  return { outcomes, W: bitsOf(c.W), M: bitsOf(c.M), V: bitsOf(c.V) };
}

/** A decoder small enough to start quickly: only its threads are lent to the optimizer. */
const TINY = { vocabularySize: 11, modelWidth: 8, heads: 2, feedForwardWidth: 12, layers: 1, maxPositions: 8, ropeBase: 10000, rmsEpsilon: 1e-6 };

const FIVE = { G: new Float64Array(5), W: new Float64Array(5), tensors: [{ offset: 0, length: 5 }] };

describe('AdamW step kernels', () => {
  it('has the WebAssembly SIMD kernel in Node', () => {
    expect(optimSimdActive()).toBe(true);
    expect(AdamWKernel.create(FIVE)).not.toBeNull();
    setOptimSimd(false);
    expect(optimSimdActive()).toBe(false);
    expect(AdamWKernel.create(FIVE)).toBeNull();
  });

  it('gives the reference bits on both paths over generated layouts, values and transforms', () => {
    const tally = [
      [0, 0],
      [0, 0],
    ];
    const steps = fc.array(fc.record({ lr: fc.constantFrom(0.04, 1e-3, 0.3), t: transform }), { minLength: 1, maxLength: 3 });
    fc.assert(
      fc.property(lengths, fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), fc.boolean(), hyper, steps, (ls, seed, wild, h, st) => {
        const c = makeCase(ls, seed, wild);
        const want = runReference(c, h, st);
        tally[wild ? 1 : 0]![want.outcomes[0] === null ? 0 : 1]! += 1;
        expect(runOptimizer(c, h, st, true)).toEqual(want);
        expect(runOptimizer(c, h, st, false)).toEqual(want);
      }),
      { numRuns: 120, seed: 20261201 },
    );
    // the generated cases exercise successful steps with ordinary and wild values, and refused ones
    expect([tally[0]![0]! > 0, tally[1]![0]! > 0, tally[1]![1]! > 0]).toEqual([true, true, true]);
  });

  it("gives the reference bits with the blocks shared out among a decoder's 2 and 3 threads, and names the first non-finite element", async () => {
    const decoders = [await Decoder.create(TINY, { threads: 2 }), await Decoder.create(TINY, { threads: 3 })];
    try {
      const steps = fc.array(fc.record({ lr: fc.constantFrom(0.04, 1e-3, 0.3), t: transform }), { minLength: 1, maxLength: 3 });
      let refused = 0;
      fc.assert(
        fc.property(lengths, fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), fc.boolean(), hyper, steps, (ls, seed, wild, h, st) => {
          const c = makeCase(ls, seed, wild);
          const want = runReference(c, h, st);
          if (want.outcomes.some((o) => o !== null)) refused++;
          for (const d of decoders) expect(runOptimizer(c, h, st, true, d)).toEqual(want);
        }),
        { numRuns: 60, seed: 20261206 },
      );
      expect(refused).toBeGreaterThan(0);
    } finally {
      await Promise.all(decoders.map((d) => d.close()));
    }
  });

  it('keeps the WebAssembly update on this thread when no shared memory can be had', async () => {
    const decoder = await Decoder.create(TINY, { threads: 2 });
    const api = (globalThis as unknown as { WebAssembly: { Memory: new (d: { initial: number; shared?: boolean }) => object } }).WebAssembly;
    const Memory = api.Memory;
    let refused = 0;
    api.Memory = new Proxy(Memory, {
      construct(target, args: [{ initial: number; shared?: boolean }]) {
        if (args[0].shared === true) {
          refused++;
          throw new RangeError('out of memory (test)');
        }
        return Reflect.construct(target, args) as object;
      },
    });
    try {
      const c = makeCase([700, 1500, 3, 64], 71n, false);
      const h = { learningRate: 0.04, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01 };
      const st = [{ lr: 0.04, t: { kind: 'none' } as const }, { lr: 0.01, t: { kind: 'uniform', multiplier: 0.5 } as const }];
      let shared = 0;
      const model = { layout: c.layout, parameters: c.W.slice(), gradients: c.G.slice(), threads: 2, shareCalls: (spec: CallSetSpec) => (shared++, decoder.shareCalls(spec)) };
      const opt = new AdamW(model, { config: h, groups: (name) => name.endsWith('.gain') });
      expect(refused).toBeGreaterThan(0);
      expect(shared).toBe(0);
      opt.first.set(c.M);
      opt.second.set(c.V);
      for (const s of st) opt.step({ learningRate: s.lr, clip: { normBefore: 0, normAfter: 0, clipped: s.t.kind !== 'none', multiplier: 1, largestAbs: 0, scaledSumOfSquares: 1, root: 1, transform: s.t } });
      const want = runReference(c, h, st);
      expect({ W: bitsOf(model.parameters), M: bitsOf(opt.first), V: bitsOf(opt.second) }).toEqual({ W: want.W, M: want.M, V: want.V });
      // the kernel's memory, not the JavaScript loop's arrays
      expect(opt.first.buffer.byteLength).toBeGreaterThan(opt.first.byteLength);
    } finally {
      api.Memory = Memory;
      await decoder.close();
    }
  });

  it('names the tensor and index of an injected non-finite value and changes nothing', () => {
    fc.assert(
      fc.property(
        lengths.filter((ls) => ls.length > 0),
        fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
        fc.nat(),
        fc.constantFrom('G', 'W', 'M', 'V'),
        fc.constantFrom(NaN, Infinity, -Infinity, 1e200),
        transform,
        (ls, seed, where, arr, value, t) => {
          const c = makeCase(ls, seed, false);
          const at = where % c.layout.size;
          if (value === 1e200 && arr !== 'G') return; // only a huge gradient overflows (g * g)
          if (value === 1e200 && t.kind === 'scaled' && t.factor < 1) return; // (g / divisor) * factor stays finite
          if (value === 1e200 && t.kind === 'uniform' && t.multiplier < 1e-100) return;
          c[arr][at] = value;
          const e = [...c.layout.entries].reverse().find((x) => x.offset <= at)!;
          const h = { learningRate: 0.04, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01 };
          for (const simd of [true, false]) {
            const got = runOptimizer(c, h, [{ lr: 0.04, t }], simd);
            expect(got.outcomes).toEqual([`${e.name}[${at - e.offset}]`]);
            expect([got.W, got.M, got.V]).toEqual([bitsOf(c.W), bitsOf(c.M), bitsOf(c.V)]);
          }
        },
      ),
      { numRuns: 150, seed: 33 },
    );
  });
});

/** ../../../docs/spec/training.md §5's scaled sum of squares, as the reference loops it. */
function referenceNorm(g: Float64Array): { scale: number; ssq: number; bad: number } {
  let scale = 0.0;
  let ssq = 1.0;
  for (let i = 0; i < g.length; i++) {
    const a = Math.abs(g[i]!);
    if (!(a < Infinity)) return { scale, ssq, bad: i };
    if (a === 0) continue;
    if (scale < a) {
      ssq = 1.0 + ssq * (scale / a) * (scale / a);
      scale = a;
    } else {
      ssq = ssq + (a / scale) * (a / scale);
    }
  }
  return { scale, ssq, bad: -1 };
}

describe('clipByGlobalNorm', () => {
  it.each([true, false])('gives the reference scale and scaled sum bit for bit, and names the first non-finite element (WebAssembly: %s)', (simd) => {
    setOptimSimd(simd);
    fc.assert(
      // up to 20,000 values: several of the WebAssembly kernel's 8192-value chunks
      fc.property(fc.integer({ min: 0, max: 20_000 }), fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), fc.boolean(), (n, seed, nonFinite) => {
        const rng = new SplitMix64(seed);
        const g = Float64Array.from({ length: n }, () => drawValue(rng, 1e-2, 308, nonFinite ? 1 / 5000 : 0));
        const want = referenceNorm(g);
        let got: { scale: number; ssq: number; bad: number };
        try {
          const r = clipByGlobalNorm(g, 0.35);
          got = { scale: r.largestAbs, ssq: r.scaledSumOfSquares, bad: -1 };
        } catch (e) {
          if (!isOptimError(e) || e.code !== 'OPTIM_NON_FINITE_GRADIENT') throw e;
          got = { scale: want.scale, ssq: want.ssq, bad: e.index ?? -2 };
        }
        expect(bitsOf(Float64Array.of(got.scale, got.ssq))).toEqual(bitsOf(Float64Array.of(want.scale, want.ssq)));
        expect(got.bad).toBe(want.bad);
      }),
      { numRuns: 200, seed: 35 },
    );
  });
});
