/**
 * What a busy background thread costs a multi-threaded training step, at each
 * save thread priority (save-priority.ts): `normal`, `low` (nice 10) and
 * `idle` (nice 10 under SCHED_IDLE, the default).
 *
 * One process trains the medium shape (D64/H4/F256/L2, ctx 64, batch 8) on
 * every core, forward + backward + clip + AdamW on the same batch, while a
 * worker thread that lowered its own priority exactly as the save worker does
 * spins in bursts (`--busy` ms on, `--gap` ms off). Each step is classed by
 * whether a burst was running when it started; the slowdown is the mean busy
 * step over the mean quiet step of the same run, so the machine's drift
 * between runs cancels. Priorities are interleaved over `--rounds`, each
 * burst worker fresh (an unprivileged thread cannot raise its priority back).
 *
 * Run: `node --conditions=@llmcp/source --import tsx packages/trainer/bench/save-priority-contention.ts
 * [--rounds 3] [--seconds 8] [--busy 300] [--gap 300] [--threads N]` (Linux; elsewhere the priorities do nothing).
 */
import { availableParallelism, loadavg } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../src/internal/module-worker.ts';
import { SplitMix64, type DecoderConfig } from '@llmcp/format';
import { Decoder, kernelInfo } from '@llmcp/model';
import { AdamW, clipByGlobalNorm } from '@llmcp/optim';
import type { SavePriority } from '../src/save-priority.ts';

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  if (i < 0) return fallback;
  const n = Number(process.argv[i + 1]);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name}: expected a positive number, found ${String(process.argv[i + 1])}`);
  return n;
}

const rounds = option('--rounds', 3);
const seconds = option('--seconds', 8);
const busyMs = option('--busy', 300);
const gapMs = option('--gap', 300);
const threads = option('--threads', availableParallelism());
const PRIORITIES: readonly SavePriority[] = ['normal', 'low', 'idle'];

const config: DecoderConfig = { vocabularySize: 512, modelWidth: 64, heads: 4, feedForwardWidth: 256, layers: 2, maxPositions: 64, ropeBase: 10000, rmsEpsilon: 1e-6 };
const B = 8;
const T = 64;

/** Starts a burst worker at `priority`; resolves with the priority it reached. */
async function startHog(priority: SavePriority, flags: Int32Array): Promise<{ worker: Worker; reached: string }> {
  const worker = startModuleWorker(new URL('./priority-hog.ts', import.meta.url), { priority, flags, busyMs, gapMs });
  const reached = await new Promise<string>((resolve, reject) => {
    worker.once('message', (m: { reached: string }) => resolve(m.reached));
    worker.once('error', reject);
  });
  return { worker, reached };
}

const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

async function main(): Promise<void> {
  const decoder = await Decoder.create(config, { threads });
  try {
    decoder.initialize(1n);
    const rng = new SplitMix64(7n);
    const inputs = Int32Array.from({ length: B * T }, () => rng.nextBelow(config.vocabularySize));
    const targets = Int32Array.from({ length: B * T }, () => rng.nextBelow(config.vocabularySize));
    const batch = { inputs, targets, rows: B, columns: T };
    const opt = new AdamW(decoder, { config: { learningRate: 1e-3, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01 } });
    const step = (): void => {
      decoder.trainStep(batch);
      opt.step({ clip: clipByGlobalNorm(decoder.gradients, 1.0) });
      decoder.zeroGradients();
    };
    for (let i = 0; i < 20; i++) step();
    console.log(
      `save thread priority contention: medium shape, ${threads} training thread(s), kernels ${kernelInfo().kind}, a burst thread ${busyMs} ms on / ${gapMs} ms off, ${seconds} s per run, ${rounds} round(s); load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`,
    );
    const slowdowns = new Map<SavePriority, number[]>(PRIORITIES.map((p) => [p, []]));
    for (let r = 0; r < rounds; r++) {
      for (const priority of PRIORITIES) {
        const flags = new Int32Array(new SharedArrayBuffer(8));
        const { worker, reached } = await startHog(priority, flags);
        const busy: number[] = [];
        const quiet: number[] = [];
        const t0 = performance.now();
        while (performance.now() - t0 < seconds * 1000) {
          const during = Atomics.load(flags, 0) === 1;
          const s = performance.now();
          step();
          (during ? busy : quiet).push(performance.now() - s);
        }
        Atomics.store(flags, 1, 1);
        Atomics.notify(flags, 1);
        await worker.terminate();
        const ratio = mean(busy) / mean(quiet);
        (slowdowns.get(priority) as number[]).push(ratio);
        console.log(
          `  round ${r + 1} ${priority.padEnd(6)} (reached ${reached.padEnd(6)}): busy steps ${String(busy.length).padStart(4)} × ${mean(busy).toFixed(2)} ms, quiet ${String(quiet.length).padStart(4)} × ${mean(quiet).toFixed(2)} ms → ${((ratio - 1) * 100).toFixed(1)}% slower`,
        );
      }
    }
    for (const priority of PRIORITIES) {
      const xs = slowdowns.get(priority) as number[];
      console.log(`${priority}: median slowdown of steps overlapping a busy thread ${((median(xs) - 1) * 100).toFixed(1)}% (range ${((Math.min(...xs) - 1) * 100).toFixed(1)} … ${((Math.max(...xs) - 1) * 100).toFixed(1)}%)`);
    }
    console.log(`load average at the end: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  } finally {
    await decoder.close();
  }
}

await main();
