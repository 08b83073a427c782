/**
 * Soak (LLMCP_SOAK=1, `pnpm soak --only splits`): training at the medium
 * benchmark shape with worker threads gives the bits of one thread, step
 * after step, for generated splits of every wave between the calling thread
 * and the workers (ThreadTuning.frontShare) and for free claims under a thread that burns
 * the cores in random bursts (so the free splits vary as well). Both kernel
 * sets, 2 and 3 threads, the default wave and waves of `threads` sequences.
 * Every eighth step every weight-gradient product is computed by a thread
 * other than the one running its sequence (help forced, WebAssembly kernels).
 * The parameters move between steps (plain SGD on the single-thread
 * gradients), so the checks see changing values, not one batch repeated.
 * The bounded slice of the same checks in `pnpm test` is threads.test.ts.
 *
 * LLMCP_SOAK_SIZE scales the steps per combination (1 → 400).
 */
import { Worker } from 'node:worker_threads';
import { SplitMix64 } from '@llmcp/format';
import { afterEach, describe, expect, it } from 'vitest';
import { Decoder, parameterLayout, type TokenBatch } from '../src/index.ts';
import { kernelChoice, setKernels } from '../src/kernels/kernel-choice.ts';
import type { KernelChoice } from '../src/kernels/kernel-set.ts';
import { AVAILABLE_SETS } from './helpers/kernel-sets.ts';
import type { ThreadTuning } from '../src/parallel/tuning.ts';
import { bits, firstMismatch } from './helpers/bits.ts';

const SOAK = process.env['LLMCP_SOAK'] === '1';
const SIZE = Number(process.env['LLMCP_SOAK_SIZE'] ?? 1);
const STEPS = Math.max(8, Math.round(400 * SIZE));
const CONFIG = { vocabularySize: 512, modelWidth: 64, heads: 4, feedForwardWidth: 256, layers: 2, maxPositions: 64, ropeBase: 10000, rmsEpsilon: 1e-6 };
const B = 8;
const T = 64;
/** The calling thread's kernel choice when the file started (restored after each test). */
const initialKernels = kernelChoice();
/** The sets that open arenas (the scalar set's products are never split). */
const kinds: KernelChoice[] = AVAILABLE_SETS.filter((k) => k !== 'scalar');

/** A thread that spins in bursts of 0–8 ms with pauses of 0–8 ms (its own generator) until told to stop. */
function startBurster(seed: number): { stop: () => Promise<void> } {
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const code = `
    const { workerData } = require('node:worker_threads');
    const flag = workerData.flag;
    let s = workerData.seed >>> 0;
    const next = () => ((s = (s * 1103515245 + 12345) >>> 0) % 9);
    while (Atomics.load(flag, 0) === 0) {
      const until = Date.now() + next();
      while (Date.now() < until) {}
      Atomics.wait(flag, 0, 0, next());
    }`;
  const worker = new Worker(code, { eval: true, workerData: { flag, seed } });
  return {
    stop: async () => {
      Atomics.store(flag, 0, 1);
      Atomics.notify(flag, 0);
      await worker.terminate();
    },
  };
}

describe.skipIf(!SOAK)(`threaded training at the medium shape, ${STEPS} steps per combination (soak: LLMCP_SOAK=1)`, () => {
  /** The tuning of the threaded decoders (the claims and the help of each step). */
  const tuning: ThreadTuning = {};
  afterEach(() => {
    tuning.frontShare = null;
    tuning.helpForce = false;
    setKernels(initialKernels);
  });

  for (const kind of kinds) {
    for (const threads of [2, 3]) {
      it(`gives the bits of one thread with ${kind} kernels and ${threads} threads, fixed and free splits`, async () => {
        setKernels(kind);
        const P = parameterLayout(CONFIG).size;
        const one = new Decoder(CONFIG);
        const many = [await Decoder.create(CONFIG, { tuning, threads }), await Decoder.create(CONFIG, { tuning, threads, partialMemoryBytes: threads * 8 * P })];
        const burster = startBurster(threads * 7 + (kind === 'wasm' ? 1 : 0));
        const rng = new SplitMix64(BigInt(0x5b1 + threads) + (kind === 'wasm' ? 100n : 0n));
        let fixed = 0;
        let free = 0;
        try {
          for (const m of [one, ...many]) m.initialize(33n);
          for (let step = 0; step < STEPS; step++) {
            const batch: TokenBatch = {
              inputs: Uint32Array.from({ length: B * T }, () => rng.nextBelow(CONFIG.vocabularySize)),
              targets: Uint32Array.from({ length: B * T }, () => rng.nextBelow(CONFIG.vocabularySize)),
              rows: B,
              columns: T,
            };
            const picks = Array.from({ length: 8 }, () => rng.nextBelow(1 << 16));
            // Every eighth step from the second: every weight-gradient product computed by another thread (help forced; the calling thread runs all, or the workers do).
            const forced = step % 8 === 1;
            const plan = step % 4 === 3 ? null : forced ? (_w: number, n: number): number => (step % 16 === 1 ? n : 0) : (w: number, n: number): number => (picks[w % 8] as number) % (n + 1);
            tuning.frontShare = null;
            tuning.helpForce = false;
            const loss = one.trainStep(batch);
            const expected = Array.from(one.gradients, bits);
            tuning.frontShare = plan;
            tuning.helpForce = forced;
            for (const m of many) {
              expect(m.trainStep(batch), `step ${step}, wave ${m.parallelStats().waveSize}: loss`).toBe(loss);
              expect(firstMismatch(`step ${step}, wave ${m.parallelStats().waveSize}, ${plan === null ? 'free claims' : 'fixed split'}: gradients`, m.gradients, expected)).toBeNull();
            }
            if (plan === null) free++;
            else fixed++;
            // Plain SGD from the single thread's gradients, written into every decoder.
            const p = one.parameters;
            const g = one.gradients;
            for (let i = 0; i < p.length; i++) p[i] = (p[i] as number) - 0.05 * (g[i] as number);
            for (const m of many) m.parameters.set(p);
          }
          expect(fixed + free).toBe(STEPS);
          // The workers took part (free claims included): a split the soak never made would prove nothing.
          for (const m of many) expect(m.parallelStats().workerSequences).toBeGreaterThan(0);
        } finally {
          tuning.frontShare = null;
          tuning.helpForce = false;
          await burster.stop();
          await Promise.all(many.map((m) => m.close()));
        }
      }, 3_600_000);
    }
  }
});
