/**
 * One llmcp measurement process of `pnpm bench:peers` (tools/bench-peers):
 * full training steps (forward + backward + clip + AdamW + zero-grad) on the
 * SAME batch every step, timed after a warm-up; prints one `RESULT {json}`
 * line. Not a `*.bench.ts` script: `pnpm bench` does not run it on its own.
 *
 * Usage: `node --conditions=@llmcp/source --import tsx packages/optim/bench/peer-step.ts '<spec json>'`
 * with spec `{ config, context, batch, threads, warmup, warmupMs?, minSteps, budgetMs, dump }` (or `@file`
 * holding it): untimed steps until at least `warmup` of them and `warmupMs` milliseconds (default 0) have gone
 * by, then timed ones until at least `minSteps` of them and `budgetMs` milliseconds.
 * With `dump` (a path prefix) the initial parameters (`.params.f64`, model
 * order, little-endian f64), the batch (`.inputs.i32`, `.targets.i32`) and the
 * loss of the first step are written, so a peer implementation can start from
 * the same weights and check its step-1 loss.
 *
 * The kernels in use are whatever `LLMCP_KERNELS` selects; `kernelInfo()` of
 * `@llmcp/model` is reported when the package has it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { SplitMix64, type DecoderConfig } from '@llmcp/format';
import * as model from '@llmcp/model';
import { median, randomBatch, trainingStep } from './training-step.ts';

interface PeerSpec {
  readonly config: DecoderConfig;
  readonly context: number;
  readonly batch: number;
  readonly threads: number;
  readonly warmup: number;
  /** Milliseconds of untimed steps at least (the warm-up also takes `warmup` steps at least). */
  readonly warmupMs?: number;
  readonly minSteps: number;
  readonly budgetMs: number;
  readonly dump: string | null;
}

async function main(): Promise<void> {
  const arg = process.argv[2] ?? '{}';
  const spec = JSON.parse(arg.startsWith('@') ? readFileSync(arg.slice(1), 'utf8') : arg) as PeerSpec;
  const info = (model as Record<string, unknown>)['kernelInfo'];
  const kernels = typeof info === 'function' ? (info as () => unknown)() : null;
  const decoder = await model.Decoder.create(spec.config, { threads: spec.threads });
  try {
    decoder.initialize(1n);
    const batch = randomBatch(new SplitMix64(7n), spec.config.vocabularySize, spec.batch, spec.context);
    if (spec.dump !== null) {
      writeFileSync(`${spec.dump}.params.f64`, new Uint8Array(decoder.parameters.slice().buffer));
      writeFileSync(`${spec.dump}.inputs.i32`, new Uint8Array((batch.inputs as Int32Array).buffer));
      writeFileSync(`${spec.dump}.targets.i32`, new Uint8Array((batch.targets as Int32Array).buffer));
    }
    const train = trainingStep(decoder);
    const losses: number[] = [];
    const step = (): void => {
      losses.push(train(batch).loss);
    };
    const warm = performance.now();
    for (let w = 0; w < spec.warmup || performance.now() - warm < (spec.warmupMs ?? 0); w++) step();
    const times: number[] = [];
    const cpu: number[] = [];
    const start = performance.now();
    while (times.length < spec.minSteps || performance.now() - start < spec.budgetMs) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      step();
      times.push(performance.now() - t0);
      const c1 = process.cpuUsage(c0);
      cpu.push((c1.user + c1.system) / 1000);
    }
    const ms = median(times);
    const result = {
      implementation: 'llmcp',
      threads: spec.threads,
      parameters: decoder.parameters.length,
      tokensPerSecond: (spec.batch * spec.context * 1000) / ms,
      msPerStep: ms,
      // Process CPU time per step (all threads): survives a busy machine better than wall time.
      cpuMsPerStep: median(cpu),
      steps: times.length,
      firstLoss: losses[0],
      kernels,
      kernelsEnv: process.env['LLMCP_KERNELS'] ?? null,
    };
    process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
  } finally {
    await decoder.close();
  }
}

await main();
