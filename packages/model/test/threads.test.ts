/**
 * The threaded batch pass: the calling thread's in-order prefix, the reduction
 * of the workers' partials and the sliced finishing of the adjoint give the
 * bits of one thread for every generated shape, thread count, wave size and
 * reduction path — and, with the claims fixed (ThreadTuning.frontShare), for every split of
 * every wave between the calling thread and the workers, on repeated shapes
 * (the buffers a step reuses hold what the last one left).
 */
import { SplitMix64, type DecoderConfig } from '@llmcp/format';
import fc from 'fast-check';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Decoder, parameterLayout, type ParameterLayout, type TokenBatch } from '../src/index.ts';
import { allocateBatchBuffers, finishSlice, firstNonFinite, type BatchBuffers, reduceGainsAndEmbedding, reducePartial, reducePartials, reduceSlices, reduceWork } from '../src/internal/batch-reduce.ts';
import { gemmCounters } from '../src/internal/gemm-counters.ts';
import { fixedMemory } from '../src/kernels/wasm-assembler.ts';
import { createWasmFold } from '../src/kernels/wasm-fold.ts';
import { kernelChoice, setKernels } from '../src/kernels/kernel-choice.ts';
import type { KernelChoice } from '../src/kernels/kernel-set.ts';
import { AVAILABLE_SETS } from './helpers/kernel-sets.ts';
import type { ThreadTuning } from '../src/parallel/tuning.ts';
import { bits, firstMismatch } from './helpers/bits.ts';
import { refuseSharedMemories } from './helpers/shared-memory.ts';

/** The calling thread's kernel choice when the file started (restored after each test). */
const initialKernels = kernelChoice();

/** The tuning of every threaded decoder of this file (each test sets what it needs; cleared after each). */
const tuning: ThreadTuning = {};

const bitsOf = (a: Float64Array): string[] => Array.from(a, (x) => new DataView(Float64Array.of(x).buffer).getBigUint64(0, true).toString(16));

function randomBatch(rng: SplitMix64, V: number, B: number, T: number): TokenBatch {
  const inputs = Uint32Array.from({ length: B * T }, () => rng.nextBelow(V));
  const targets = Uint32Array.from({ length: B * T }, () => rng.nextBelow(V));
  return { inputs, targets, rows: B, columns: T };
}

/** Values of mixed signs and magnitudes, with signed zeros, so that every rounding and sign rule shows. */
function mixedValues(rng: SplitMix64, n: number): Float64Array {
  return Float64Array.from({ length: n }, () => {
    const k = rng.nextBelow(10);
    if (k === 0) return -0;
    if (k === 1) return 0;
    return (rng.nextBelow(2) === 0 ? -1 : 1) * (1 + rng.nextBelow(1 << 20) / 7) * 2 ** (rng.nextBelow(40) - 20);
  });
}

function generatedConfig(rng: SplitMix64): DecoderConfig {
  const heads = 1 + rng.nextBelow(2);
  return {
    vocabularySize: 3 + rng.nextBelow(14),
    modelWidth: heads * 2 * (1 + rng.nextBelow(2)),
    heads,
    feedForwardWidth: 2 + rng.nextBelow(12),
    layers: 1 + rng.nextBelow(2),
    maxPositions: 7,
    ropeBase: 10000,
    rmsEpsilon: 1e-6,
  };
}

/** The finishing of the adjoint as one thread does it (../../../docs/spec/backward.md §4.4, §4.6): gains, then the embedding lookup part. */
function referenceFinish(adjoint: Float64Array, buffers: BatchBuffers, layout: ParameterLayout, tokens: ArrayLike<number>, D: number): void {
  const n = buffers.rows * buffers.columns;
  const gains = [...layout.blocks.flatMap((b) => [b.attentionNorm, b.ffnNorm]), layout.finalNorm];
  gains.forEach((off, g) => {
    for (let c = 0; c < D; c++) {
      let sum = 0;
      for (let r = 0; r < n; r++) sum += buffers.gainTerms[g * n * D + r * D + c] as number;
      adjoint[off + c] = sum;
    }
  });
  const lookup = new Float64Array(buffers.lookup.length);
  for (let r = 0; r < n; r++) for (let c = 0; c < D; c++) (lookup[(tokens[r] as number) * D + c] as number) += buffers.dx0[r * D + c] as number;
  for (let i = 0; i < lookup.length; i++) adjoint[layout.embedding + i] = (adjoint[layout.embedding + i] as number) + (lookup[i] as number);
}

describe('batch reduction pieces', () => {
  it('reducePartials adds the slots in slot order, like one reducePartial per slot: in JavaScript, with the WebAssembly fold, and with both', () => {
    const rng = new SplitMix64(41n);
    // An odd P and odd split points: the fold's pairs and its last element alone, at odd and even offsets.
    const P = 5001;
    const memory = fixedMemory(Math.ceil((10 * P * 8) / 65536), true);
    const fold = createWasmFold(memory);
    expect(fold).not.toBeNull();
    /** Ten P-element places in the fold's memory, at odd element offsets. */
    const place = (k: number): Float64Array => new Float64Array(memory.buffer, (1 + k * P) * 8, P);
    // runs of 4, 2 and 1 slots per pass, after a copied first slot or not
    for (const [fromSlot, toSlot, first] of [
      [0, 5, true],
      [2, 5, false],
      [1, 2, false],
      [0, 1, true],
      [3, 3, false],
      [0, 9, true],
      [1, 8, false],
      [0, 7, false],
      [2, 6, true],
    ] as const) {
      const partials = mixedValues(rng, 9 * P);
      // NaN, infinities and huge values whose sums overflow, at generated places.
      for (let k = 0; k < 12; k++) partials[rng.nextBelow(9 * P)] = [Number.NaN, Infinity, -Infinity, 1.7e308, -1.7e308][rng.nextBelow(5)] as number;
      const start = mixedValues(rng, P);
      const expected = start.slice();
      for (let s = fromSlot; s < toSlot; s++) reducePartial(expected, partials, s * P, first && s === fromSlot, 0, P);
      const n = toSlot - fromSlot;
      const own = (k: number): Float64Array => partials.subarray((fromSlot + k) * P, (fromSlot + k + 1) * P);
      // Every slot in the fold's memory; every other one (groups partly outside it add in JavaScript); none.
      for (const [where, inMemory] of [
        ['all', (_k: number) => true],
        ['some', (k: number) => k % 2 === 1],
        ['none', (_k: number) => false],
      ] as const) {
        const got = place(9);
        got.set(start);
        const slots = Array.from({ length: n }, (_, k) => {
          if (!inMemory(k)) return own(k);
          const p = place(k);
          p.set(own(k));
          return p;
        });
        const folded = [reducePartials(got, slots, first, 0, 1233, fold), reducePartials(got, slots, first, 1233, P, fold)];
        expect(firstMismatch(`slots ${fromSlot}…${toSlot - 1}, ${where} in the fold's memory`, got, Array.from(expected, bits))).toBeNull();
        // With every slot in its memory the fold adds every slot after a copied first one; with none, none.
        if (where !== 'some') expect(folded).toEqual(Array(2).fill(where === 'all' ? (first ? n - 1 : n) : 0));
      }
    }
  });

  it('firstNonFinite finds the first NaN or infinity of any range, wherever it falls in a block of eight', () => {
    const special = [Number.NaN, Infinity, -Infinity];
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 70 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 2 })), { maxLength: 4 }),
        fc.nat(),
        fc.nat(),
        fc.integer(),
        (n, bad, a, b, seed) => {
          const rng = new SplitMix64(BigInt(seed >>> 0));
          const values = mixedValues(rng, n);
          for (const [at, kind] of bad) if (n > 0) values[at % n] = special[kind] as number;
          const from = n === 0 ? 0 : a % (n + 1);
          const to = from + (n === 0 ? 0 : b % (n - from + 1));
          let expected = -1;
          for (let i = from; i < to && expected < 0; i++) if (!Number.isFinite(values[i])) expected = i;
          expect(firstNonFinite(values, from, to)).toBe(expected);
          if (from === 0 && to === n) expect(firstNonFinite(values)).toBe(expected);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it("cuts a reduction into D-aligned slices of about equal work, whatever the shape, partials and finishing (each within one row's work of an even share)", () => {
    const rng = new SplitMix64(43n);
    for (let trial = 0; trial < 200; trial++) {
      const config = generatedConfig(rng);
      const layout = parameterLayout(config);
      const D = config.modelWidth;
      const slices = 1 + rng.nextBelow(5);
      const partials = rng.nextBelow(9);
      const finish = partials === 0 || rng.nextBelow(2) === 0;
      const n = 1 + rng.nextBelow(600);
      const cuts = reduceSlices(layout, D, slices, partials, finish, n);
      expect(cuts.length).toBe(slices + 1);
      expect([cuts[0], cuts[slices]]).toEqual([0, layout.size]);
      // The work of elements [a, b): the whole reduction's work of a layout cut down to them, entry by entry.
      const work = (a: number, b: number): number => {
        let w = 0;
        for (const e of layout.entries) {
          const lo = Math.max(a, e.offset);
          const hi = Math.min(b, e.offset + e.length);
          if (lo < hi) w += reduceWork({ ...layout, entries: [{ ...e, length: hi - lo }] }, partials, finish, n);
        }
        return w;
      };
      const total = reduceWork(layout, partials, finish, n);
      expect(work(0, layout.size)).toBeCloseTo(total, 6);
      const widest = Math.max(...layout.entries.map((e) => work(e.offset, e.offset + D)));
      for (let s = 0; s < slices; s++) {
        const [from, to] = [cuts[s] as number, cuts[s + 1] as number];
        expect(from % D).toBe(0);
        expect(to).toBeGreaterThanOrEqual(from);
        expect(Math.abs(work(from, to) - total / slices)).toBeLessThanOrEqual(widest * (1 + 1e-9));
      }
    }
  });

  it('finishSlice over D-aligned slices gives the bits of the whole finishing and the first non-finite element', () => {
    const rng = new SplitMix64(42n);
    for (let trial = 0; trial < 12; trial++) {
      // from trial 6 on, even widths of 8 to 26 (eight gain columns at a time in registers, then the rest one by one)
      const config = trial < 6 ? generatedConfig(rng) : { ...generatedConfig(rng), heads: 1, modelWidth: 8 + 2 * rng.nextBelow(10) };
      const { modelWidth: D, vocabularySize: V, layers } = config;
      const layout = parameterLayout(config);
      const B = 1 + rng.nextBelow(4);
      const T = 1 + rng.nextBelow(6);
      const n = B * T;
      const buffers = allocateBatchBuffers(layout, layers, D, B, T, 0, false);
      buffers.gainTerms.set(mixedValues(rng, buffers.gainTerms.length));
      buffers.dx0.set(mixedValues(rng, buffers.dx0.length));
      const tokens = Uint32Array.from({ length: n }, () => rng.nextBelow(V));
      const start = mixedValues(rng, layout.size);
      const expected = start.slice();
      referenceFinish(expected, buffers, layout, tokens, D);
      const whole = start.slice();
      reduceGainsAndEmbedding(whole, buffers, layout, tokens, n, D, V, new Float64Array(V * D));
      expect(bitsOf(whole)).toEqual(bitsOf(expected));
      const rows = layout.size / D;
      const slices = 1 + rng.nextBelow(5);
      const got = start.slice();
      for (let i = 0; i < slices; i++) finishSlice(got, buffers, layout, tokens, n, D, D * Math.floor((rows * i) / slices), D * Math.floor((rows * (i + 1)) / slices));
      expect(bitsOf(got)).toEqual(bitsOf(expected));
      const bad = rng.nextBelow(layout.size);
      got[bad] = Infinity;
      const found: number[] = [];
      for (let i = 0; i < slices; i++) {
        const from = D * Math.floor((rows * i) / slices);
        const to = D * Math.floor((rows * (i + 1)) / slices);
        const copy = got.slice();
        // Only the scan is looked at here: finishing again changes the values, not where the infinity is.
        found.push(finishSlice(copy, buffers, layout, tokens, n, D, from, to));
      }
      const isGain = layout.entries.some((e) => e.kind === 'gain' && bad >= e.offset && bad < e.offset + e.length);
      expect(found.filter((x) => x >= 0)).toEqual(isGain ? [] : [bad]);
    }
  });
});

/** A model small enough that a step takes well under a millisecond. */
const TINY: DecoderConfig = { vocabularySize: 11, modelWidth: 8, heads: 2, feedForwardWidth: 12, layers: 2, maxPositions: 8, ropeBase: 10000, rmsEpsilon: 1e-6 };

/** One single-thread decoder and threaded ones (2 and 3 threads; the default wave, and waves of 2 and 3 sequences: slots = max(threads, budget / (workers · P))), all initialized from `seed`. */
async function decoders(config: DecoderConfig, seed: bigint): Promise<{ one: Decoder; many: Decoder[] }> {
  const P = parameterLayout(config).size;
  const one = new Decoder(config);
  const many = [
    await Decoder.create(config, { tuning, threads: 2 }),
    await Decoder.create(config, { tuning, threads: 3 }),
    await Decoder.create(config, { tuning, threads: 2, partialMemoryBytes: 0 }),
    await Decoder.create(config, { tuning, threads: 3, partialMemoryBytes: 3 * 8 * P }),
  ];
  for (const m of [one, ...many]) m.initialize(seed);
  return { one, many };
}

describe('threaded training', () => {
  const opened: Decoder[] = [];
  afterEach(() => {
    for (const key of Object.keys(tuning) as (keyof ThreadTuning)[]) delete tuning[key];
    setKernels(initialKernels);
  });
  afterAll(async () => {
    await Promise.all(opened.map((m) => m.close()));
  });

  /** A decoder on `threads` threads (closed after the file), initialized from `seed`. */
  async function threaded(config: DecoderConfig, threads: number, seed: bigint): Promise<Decoder> {
    const m = await Decoder.create(config, { tuning, threads });
    opened.push(m);
    m.initialize(seed);
    return m;
  }

  /** A decoder on this thread and one with a worker thread, both initialized from `seed`. */
  async function withWorker(config: DecoderConfig, seed: bigint): Promise<{ one: Decoder; m: Decoder }> {
    const one = new Decoder(config);
    one.initialize(seed);
    return { one, m: await threaded(config, 2, seed) };
  }

  it('gives the bits of one thread on generated configs and batches, with 2 and 3 threads, waves and both reduction paths', async () => {
    const rng = new SplitMix64(43n);
    for (let c = 0; c < 2; c++) {
      const config = generatedConfig(rng);
      const { one, many } = await decoders(config, BigInt(7 + c));
      try {
        for (let step = 0; step < 4; step++) {
          // Every reduction by the calling thread alone, or every one split over the threads.
          tuning.reduceLocalElements = step % 2 === 0 ? Infinity : 0;
          const batch = randomBatch(rng, config.vocabularySize, 1 + rng.nextBelow(9), 1 + rng.nextBelow(7));
          const accumulate = step === 3;
          const loss = one.trainStep(batch, { accumulate });
          const expected = bitsOf(one.gradients);
          for (const m of many) {
            expect(m.trainStep(batch, { accumulate })).toBe(loss);
            expect(bitsOf(m.gradients)).toEqual(expected);
          }
          const evaluation = one.evaluateLoss(batch);
          for (const m of many) expect(m.evaluateLoss(batch)).toBe(evaluation);
        }
      } finally {
        await Promise.all(many.map((m) => m.close()));
      }
    }
  });

  it('writes the gradients only when every slice of the reduction is finished and finite: a fault in any one slice leaves them all alone, and the next step gives the bits of one thread', async () => {
    const rng = new SplitMix64(44n);
    const config = generatedConfig(rng);
    const { one, many } = await decoders(config, 17n);
    try {
      // Every reduction split over the threads: a slice per thread.
      tuning.reduceLocalElements = 0;
      let step = 0;
      for (const m of many) {
        for (let slice = 0; slice < m.threads; slice++) {
          for (const throws of [false, true]) {
            const batch = randomBatch(rng, config.vocabularySize, 1 + rng.nextBelow(6), 1 + rng.nextBelow(7));
            const accumulate = step++ % 2 === 1;
            const before = Array.from(m.gradients, bits);
            tuning.faultSlice = slice;
            tuning.faultThrows = throws;
            let thrown: unknown = null;
            try {
              m.trainStep(batch, { accumulate });
            } catch (e) {
              thrown = e;
            }
            tuning.faultSlice = -1;
            const what = `${m.threads} threads, fault in slice ${slice} (${throws ? 'throws' : 'not finite'})`;
            // The calling thread's own fault comes as it was thrown; a worker's as MODEL_WORKER_FAILED; a non-finite element by name.
            const code = (thrown as { code?: string } | null)?.code ?? (thrown instanceof Error ? 'thrown' : String(thrown));
            expect(code, what).toBe(!throws ? 'MODEL_NON_FINITE' : slice === 0 ? 'thrown' : 'MODEL_WORKER_FAILED');
            expect(firstMismatch(`${what}: gradients`, m.gradients, before)).toBeNull();
            // No thread is left waiting: the decoder trains on, with the bits of one thread.
            const loss = one.trainStep(batch, { accumulate });
            expect(m.trainStep(batch, { accumulate }), what).toBe(loss);
            expect(firstMismatch(`${what}: the next step's gradients`, m.gradients, Array.from(one.gradients, bits))).toBeNull();
          }
        }
      }
    } finally {
      await Promise.all(many.map((m) => m.close()));
    }
  });

  it('clears the gradients to +0.0 on 2 and 3 threads, where they sit in a shared WebAssembly memory of their own', async () => {
    const rng = new SplitMix64(46n);
    const config = generatedConfig(rng);
    const { many } = await decoders(config, 19n);
    try {
      for (const m of many) {
        // Whole WebAssembly pages: the memory.fill path (kernels/wasm-clear.ts), not an ordinary SharedArrayBuffer.
        expect(m.gradients.buffer.byteLength % 65536).toBe(0);
        m.trainStep(randomBatch(rng, config.vocabularySize, 3, 5));
        m.gradients[0] = -0;
        m.gradients[m.gradients.length - 1] = NaN;
        expect(m.gradients.some((x) => x !== 0)).toBe(true);
        m.zeroGradients();
        expect(m.gradients.findIndex((x) => !Object.is(x, 0))).toBe(-1);
      }
    } finally {
      await Promise.all(many.map((m) => m.close()));
    }
  });

  // Which thread runs which sequence is timing otherwise (on these shapes the calling thread often runs all before a worker wakes).
  // The sets that open arenas (the scalar set's products are never split).
  const kinds: KernelChoice[] = AVAILABLE_SETS.filter((k) => k !== 'scalar');
  it.each(kinds)('gives the bits of one thread for every split of every wave between the calling thread and the workers (%s kernels)', async (kind) => {
    setKernels(kind);
    const rng = new SplitMix64(kind === 'wasm' ? 45n : 46n);
    for (let c = 0; c < 2; c++) {
      const config = generatedConfig(rng);
      const { one, many } = await decoders(config, BigInt(11 + c));
      try {
        // The extremes first (the workers run everything; the calling thread does), then generated splits per wave.
        const plans: ((wave: number, n: number) => number)[] = [() => 0, (_w, n) => n, (w, n) => (w % 2 === 0 ? 0 : n), (w, n) => (w % 2 === 0 ? n : 0)];
        let shape = [0, 0] as [number, number];
        for (let step = 0; step < 10; step++) {
          const picks = Array.from({ length: 16 }, () => rng.nextBelow(1 << 16));
          const plan = plans[step] ?? ((w: number, n: number) => (picks[w % 16] as number) % (n + 1));
          tuning.reduceLocalElements = step % 3 === 0 ? Infinity : 0;
          // One shape for five steps (as in training: the buffers, and what the last step left in them, are reused), then another.
          if (step % 5 === 0) shape = [2 + rng.nextBelow(8), 1 + rng.nextBelow(7)];
          const batch = randomBatch(rng, config.vocabularySize, shape[0], shape[1]);
          const accumulate = step % 4 === 3;
          tuning.frontShare = null;
          const loss = one.trainStep(batch, { accumulate });
          const expected = Array.from(one.gradients, bits);
          const evaluation = one.evaluateLoss(batch);
          tuning.frontShare = plan;
          for (const m of many) {
            const before = m.parallelStats().workerSequences;
            expect(m.trainStep(batch, { accumulate })).toBe(loss);
            expect(firstMismatch(`step ${step}, ${m.threads} threads, gradients`, m.gradients, expected)).toBeNull();
            // The plan was followed: the workers ran exactly the sequences it left them (waves of the decoder's slot count).
            const slots = m.parallelStats().waveSize;
            let workers = 0;
            for (let start = 0, w = 0; start < batch.rows; start += slots, w++) {
              const n = Math.min(batch.rows, start + slots) - start;
              workers += n - Math.max(0, Math.min(n, plan(w, n)));
            }
            expect(m.parallelStats().workerSequences - before).toBe(workers);
            expect(m.evaluateLoss(batch)).toBe(evaluation);
          }
        }
      } finally {
        await Promise.all(many.map((m) => m.close()));
      }
    }
  });

  // One test per kernel set and generated config: every offered product is a hand-over between threads, and on a busy
  // machine each costs a scheduler wake-up (one test of two configs, six steps of 2–9 sequences, ran 87 s at load 20 and
  // failed its 60 s timeout). Each of these hands over about a fifth of that: every product of both modes (the calling
  // thread runs all sequences; the workers do) twice, on 2 and 3 threads with both partial-memory layouts, with
  // accumulation, then unforced help — what the single test proved, for each config on its own.
  const helpCases = kinds.flatMap((kind) => [0, 1].map((c) => [kind, c] as const));
  it.each(helpCases)('gives the bits of one thread when other threads compute the lower rows of every product (help forced; the calling thread, or the workers, run all sequences; %s kernels, generated config %i)', async (kind, c) => {
    // Forced, the lower rows of every product whose operands are all in the running thread's kernel arena are offered and left to a thread with no sequence.
    // With the native kernels too: a threaded decoder's passes then open their arenas on the shared memories, and the helpers run the native kernels there.
    setKernels(kind);
    tuning.helpForce = true;
    const rng = new SplitMix64((kind === 'wasm' ? 49n : 52n) + 1000n * BigInt(c));
    const config = generatedConfig(rng);
    const { one, many } = await decoders(config, BigInt(13 + c));
    try {
      for (let step = 0; step < 4; step++) {
        const callerRunsAll = step % 2 === 0;
        // More sequences than the 3-thread decoders' threads, so each mode runs several per thread.
        const batch = randomBatch(rng, config.vocabularySize, 2 + rng.nextBelow(4), 5 + rng.nextBelow(3));
        const accumulate = step === 3;
        tuning.frontShare = null;
        const loss = one.trainStep(batch, { accumulate });
        const expected = Array.from(one.gradients, bits);
        tuning.frontShare = callerRunsAll ? (_w, n) => n : () => 0;
        for (const m of many) {
          const helped = m.parallelStats().helpedProducts;
          const offered = gemmCounters.offeredProducts;
          expect(m.trainStep(batch, { accumulate })).toBe(loss);
          expect(firstMismatch(`step ${step}, ${m.threads} threads, ${callerRunsAll ? 'the calling thread runs all' : 'the workers run all'}: gradients`, m.gradients, expected)).toBeNull();
          const byOthers = m.parallelStats().helpedProducts - helped;
          expect(byOthers).toBeGreaterThan(0);
          // The calling thread's offers are counted here (the workers' in their own threads): every one was computed by a worker.
          if (callerRunsAll) expect(byOthers).toBe(gemmCounters.offeredProducts - offered);
          else expect(gemmCounters.offeredProducts).toBe(offered);
        }
      }
      // Not forced: the bits, whoever helps whom.
      tuning.helpForce = false;
      tuning.frontShare = null;
      const batch = randomBatch(rng, config.vocabularySize, 9, 7);
      const loss = one.trainStep(batch);
      for (const m of many) {
        expect(m.trainStep(batch)).toBe(loss);
        expect(bitsOf(m.gradients)).toEqual(bitsOf(one.gradients));
      }
    } finally {
      await Promise.all(many.map((m) => m.close()));
    }
  });

  it("offers the calling thread's products again after a longer sequence moved its arena off the shared memory", async () => {
    setKernels('wasm');
    tuning.helpForce = true;
    tuning.frontShare = (_w, n) => n;
    const { one, m } = await withWorker(TINY, 19n);
    const rng = new SplitMix64(51n);
    const train = (): void => {
      const batch = randomBatch(rng, TINY.vocabularySize, 3, 4);
      const helped = m.parallelStats().helpedProducts;
      const offered = gemmCounters.offeredProducts;
      expect(m.trainStep(batch)).toBe(one.trainStep(batch));
      expect(bitsOf(m.gradients)).toEqual(bitsOf(one.gradients));
      expect(gemmCounters.offeredProducts - offered).toBeGreaterThan(0);
      expect(m.parallelStats().helpedProducts - helped).toBe(gemmCounters.offeredProducts - offered);
    };
    train();
    // Eight positions: more than the shared memories were made for (four).
    const tokens = Array.from({ length: 8 }, () => rng.nextBelow(TINY.vocabularySize));
    expect(bitsOf(m.logits(tokens))).toEqual(bitsOf(one.logits(tokens)));
    train();
  });

  it('refuses a claim plan that gives no number, and trains as before afterwards', async () => {
    const config = generatedConfig(new SplitMix64(47n));
    const { one, many } = await decoders(config, 5n);
    try {
      const batch = randomBatch(new SplitMix64(48n), config.vocabularySize, 4, 5);
      const loss = one.trainStep(batch);
      const expected = Array.from(one.gradients, bits);
      for (const m of many) {
        tuning.frontShare = () => Number.NaN;
        expect(() => m.trainStep(batch)).toThrow(RangeError);
        tuning.frontShare = null;
        expect(m.trainStep(batch)).toBe(loss);
        expect(firstMismatch(`${m.threads} threads after a refused plan`, m.gradients, expected)).toBeNull();
      }
    } finally {
      await Promise.all(many.map((m) => m.close()));
    }
  });

  it('writes and reduces partials only for the sequences the worker threads ran', async () => {
    const config = TINY;
    const one = new Decoder(config);
    one.initialize(3n);
    for (const threads of [2, 3]) {
      const m = await threaded(config, threads, 3n);
      const rng = new SplitMix64(44n);
      for (let step = 0; step < 5; step++) {
        const batch = randomBatch(rng, config.vocabularySize, 8, 8);
        expect(m.trainStep(batch)).toBe(one.trainStep(batch));
        expect(bitsOf(m.gradients)).toEqual(bitsOf(one.gradients));
      }
      const stats = m.parallelStats();
      // The calling thread's sequences went straight into the gradient, in order; only the workers' needed a partial.
      expect(stats.partialSequences).toBe(stats.workerSequences);
      expect(stats.partialSequences).toBeLessThanOrEqual(5 * 8);
    }
    expect(one.parallelStats().partialSequences).toBe(0);
  });

  it("adds the workers' partials into the adjoint with the WebAssembly fold on every thread, also after new batch buffers: both are in the first worker's memory", async () => {
    const config = TINY;
    const { one, m } = await withWorker(config, 4n);
    // The worker runs every sequence; the reduction by the calling thread alone, or by both threads, each over its slice.
    tuning.frontShare = () => 0;
    const rng = new SplitMix64(52n);
    // A new batch shape gives new batch buffers in the same memories (the worker gets them in a message, as copies of the buffer objects).
    for (const [B, T, alone] of [[5, 6, true], [5, 6, false], [4, 6, false], [4, 5, true], [5, 6, false]] as const) {
      tuning.reduceLocalElements = alone ? Infinity : 0;
      const batch = randomBatch(rng, config.vocabularySize, B, T);
      const folded = m.parallelStats().foldedPartials;
      expect(m.trainStep(batch)).toBe(one.trainStep(batch));
      expect(bitsOf(m.gradients)).toEqual(bitsOf(one.gradients));
      // Sequence 0's partial is copied, the other B − 1 are added through the fold: by each thread that reduces.
      expect(m.parallelStats().foldedPartials - folded).toBe((alone ? 1 : 2) * (B - 1));
    }
    expect(one.parallelStats().foldedPartials).toBe(0);
  });

  it('counts the time the calling thread waits for the workers (none without them)', async () => {
    const config = TINY;
    const { one, m } = await withWorker(config, 9n);
    // The workers run every sequence: the calling thread has nothing to do but wait for them. Its clock moves
    // 1 ms at every look, so that each wait counts (a wall clock may read the same twice).
    tuning.frontShare = () => 0;
    let now = 0;
    tuning.clock = () => ++now;
    const rng = new SplitMix64(48n);
    let last = m.parallelStats().waitMs;
    for (let step = 0; step < 3; step++) {
      const batch = randomBatch(rng, config.vocabularySize, 4, 8);
      expect(m.trainStep(batch)).toBe(one.trainStep(batch));
      const waited = m.parallelStats().waitMs;
      expect(waited).toBeGreaterThan(last);
      last = waited;
    }
    expect(one.parallelStats().waitMs).toBe(0);
  });

  it("gives the bits of one thread when the workers' shared arena memories cannot be made (the partials go through the batch buffers)", async () => {
    const config = TINY;
    // This thread only: the decoder makes the workers' memories here, the workers use what they are given.
    const memories = refuseSharedMemories(() => true);
    try {
      const one = new Decoder(config);
      one.initialize(5n);
      for (const threads of [2, 3]) {
        const m = await threaded(config, threads, 5n);
        tuning.frontShare = (_wave, n) => n >> 1;
        const rng = new SplitMix64(47n);
        for (let step = 0; step < 3; step++) {
          const batch = randomBatch(rng, config.vocabularySize, 6 + step, 8 - step);
          expect(m.trainStep(batch)).toBe(one.trainStep(batch));
          expect(bitsOf(m.gradients)).toEqual(bitsOf(one.gradients));
        }
        expect(m.parallelStats().partialSequences).toBeGreaterThan(0);
      }
      expect(memories.refused()).toBeGreaterThan(0);
    } finally {
      memories.restore();
    }
  });

  it("makes the workers' memories without the adjoint when the first worker's cannot also hold it: the same bits, the partials added in JavaScript, the help still there", async () => {
    const config = TINY;
    setKernels('wasm');
    // The second shared memory of the first set asked for (the first worker's, with the adjoint) is refused, as a memory too large would be.
    const memories = refuseSharedMemories((n) => n === 2);
    try {
      const { one, m } = await withWorker(config, 6n);
      // The calling thread runs every sequence and leaves the lower rows of each product to the worker: only products in the shared memories are.
      tuning.frontShare = (_wave, n) => n;
      tuning.helpForce = true;
      const rng = new SplitMix64(53n);
      for (let step = 0; step < 2; step++) {
        const batch = randomBatch(rng, config.vocabularySize, 4, 6);
        expect(m.trainStep(batch)).toBe(one.trainStep(batch));
        expect(bitsOf(m.gradients)).toEqual(bitsOf(one.gradients));
      }
      tuning.frontShare = () => 0;
      tuning.helpForce = false;
      const batch = randomBatch(rng, config.vocabularySize, 4, 6);
      expect(m.trainStep(batch)).toBe(one.trainStep(batch));
      expect(bitsOf(m.gradients)).toEqual(bitsOf(one.gradients));
      expect(m.parallelStats().helpedProducts).toBeGreaterThan(0);
      expect(m.parallelStats().partialSequences).toBeGreaterThan(0);
      expect(m.parallelStats().foldedPartials).toBe(0);
      // The refused memory and the set made again without it.
      expect(memories.asked()).toBeGreaterThanOrEqual(4);
    } finally {
      memories.restore();
    }
  });
});
