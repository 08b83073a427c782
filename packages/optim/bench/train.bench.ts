/**
 * Training throughput of the decoder (forward + backward + clip + AdamW +
 * zero-grad per update) on random tokens, for the fixture, small and medium
 * configurations, with 1 and 2 threads; plus a CPU-profile breakdown of where
 * one thread's time goes. Run: `pnpm bench train` (or
 * `pnpm exec tsx --conditions=@llmcp/source packages/optim/bench/train.bench.ts`).
 *
 * Options (env): LLMCP_BENCH_QUICK=1 → fewer updates; LLMCP_BENCH_CONFIGS=medium,small → subset.
 */
import { readFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { availableParallelism } from 'node:os';
import { SplitMix64, type DecoderConfig } from '@llmcp/format';
import { Decoder, FIXTURE_DECODER_CONFIG, type TokenBatch } from '@llmcp/model';
import { median, randomBatch, trainingStep } from './training-step.ts';

interface BenchConfig {
  readonly name: string;
  readonly config: DecoderConfig;
  readonly context: number;
  readonly batch: number;
}

const CONFIGS: BenchConfig[] = [
  { name: 'fixture', config: FIXTURE_DECODER_CONFIG, context: 2, batch: 2 },
  {
    name: 'small',
    config: { vocabularySize: 256, modelWidth: 32, heads: 2, feedForwardWidth: 128, layers: 2, maxPositions: 32, ropeBase: 10000, rmsEpsilon: 1e-6 },
    context: 32,
    batch: 8,
  },
  {
    name: 'medium',
    config: { vocabularySize: 512, modelWidth: 64, heads: 4, feedForwardWidth: 256, layers: 2, maxPositions: 64, ropeBase: 10000, rmsEpsilon: 1e-6 },
    context: 64,
    batch: 8,
  },
];

const quick = process.env.LLMCP_BENCH_QUICK === '1';
const only = process.env.LLMCP_BENCH_CONFIGS?.split(',');

async function measure(c: BenchConfig, threads: number): Promise<{ tokensPerSecond: number; msPerUpdate: number; bestMs: number; updates: number; cpuMsPerUpdate: number; adamwMs: number }> {
  const model = await Decoder.create(c.config, { threads });
  try {
    model.initialize(1n);
    const step = trainingStep(model);
    const rng = new SplitMix64(7n);
    const batches = Array.from({ length: 8 }, () => randomBatch(rng, c.config.vocabularySize, c.batch, c.context));
    const tokens = c.batch * c.context;
    // Aim for ~2 s of measurement per configuration (at least 7 updates).
    const warm = c.name === 'fixture' ? 200 : 3;
    const times: number[] = [];
    const cpu: number[] = [];
    const adamw: number[] = [];
    let i = 0;
    const update = (): void => {
      adamw.push(step(batches[i++ % batches.length] as TokenBatch).adamwMs);
    };
    for (let w = 0; w < warm; w++) update();
    adamw.length = 0;
    const budgetMs = quick ? 400 : 2000;
    const start = performance.now();
    while (times.length < 7 || (performance.now() - start < budgetMs && times.length < 5000)) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      update();
      times.push(performance.now() - t0);
      const c1 = process.cpuUsage(c0);
      cpu.push((c1.user + c1.system) / 1000);
    }
    const ms = median(times);
    return { tokensPerSecond: (tokens * 1000) / ms, msPerUpdate: ms, bestMs: Math.min(...times), updates: times.length, cpuMsPerUpdate: median(cpu), adamwMs: median(adamw) };
  } finally {
    await model.close();
  }
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  hitCount?: number;
  children?: number[];
}

/** Self time per function of `updates` single-thread updates, grouped into the kernels a reader cares about. */
async function profile(c: BenchConfig, updates: number): Promise<[string, number][]> {
  const model = new Decoder(c.config);
  model.initialize(1n);
  const train = trainingStep(model);
  const rng = new SplitMix64(7n);
  const batch = randomBatch(rng, c.config.vocabularySize, c.batch, c.context);
  const step = (): void => {
    train(batch);
  };
  for (let w = 0; w < 3; w++) step();
  const session = new Session();
  session.connect();
  const post = (method: string, params?: object): Promise<unknown> =>
    new Promise((resolve, reject) => session.post(method, params ?? {}, (err, res) => (err ? reject(err) : resolve(res))));
  await post('Profiler.enable');
  await post('Profiler.setSamplingInterval', { interval: 200 });
  await post('Profiler.start');
  for (let u = 0; u < updates; u++) step();
  const { profile: p } = (await post('Profiler.stop')) as { profile: { nodes: ProfileNode[] } };
  session.disconnect();
  const groups = new Map<string, number>();
  let total = 0;
  const group = (fn: string, url: string): string => {
    if (url.startsWith('wasm://') || fn === 'gemm' || fn === 'gemmSimd' || fn === 'gemmScalar' || fn === 'copyRows') return 'matmul (gemm: SIMD kernel + copies)';
    if (fn === 'transpose') return 'transposes';
    if (url.includes('/math/')) return 'exp/ln (math module)';
    if (fn === 'attentionForward' || fn === 'attentionBackward') return 'attention softmax + glue';
    if (fn === 'crossEntropyForward' || fn === 'crossEntropyBackward') return 'cross-entropy (softmax)';
    if (fn === 'swigluForward' || fn === 'swigluBackward') return 'SwiGLU elementwise';
    if (fn.startsWith('rmsNorm')) return 'RMSNorm';
    if (fn === 'step' && url.includes('adamw')) return 'AdamW';
    if (fn === 'clipByGlobalNorm') return 'gradient norm';
    if (url.includes('batch-reduce') || fn === 'runPhase') return 'batch reductions';
    if (fn === '(garbage collector)') return 'GC';
    if (fn === '(idle)' || fn === '(program)') return 'other (runtime)';
    if (process.env.LLMCP_BENCH_DEBUG === '1') process.stderr.write(`other: ${fn} ${url}\n`);
    return 'other';
  };
  for (const n of p.nodes) {
    const hits = n.hitCount ?? 0;
    if (hits === 0) continue;
    total += hits;
    const g = group(n.callFrame.functionName, n.callFrame.url);
    groups.set(g, (groups.get(g) ?? 0) + hits);
  }
  return [...groups.entries()].map(([k, v]) => [k, (100 * v) / total] as [string, number]).sort((a, b) => b[1] - a[1]);
}

const results: string[] = [];
const load = (): string => {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {
    return 'n/a';
  }
};
process.stdout.write(`decoder training throughput (forward + backward + clip + AdamW + zero-grad), random tokens; load average ${load()}, ${availableParallelism()} cores\n`);
for (const c of CONFIGS) {
  if (only && !only.includes(c.name)) continue;
  for (const threads of [1, 2]) {
    const r = await measure(c, threads);
    const perCpu = (c.batch * c.context * 1000) / r.cpuMsPerUpdate;
    const line =
      `${c.name.padEnd(8)} threads=${threads}  ${r.tokensPerSecond.toFixed(0).padStart(8)} tokens/s  ` +
      `(median of ${r.updates} updates after warm-up: ${r.msPerUpdate.toFixed(3)} ms wall, best ${r.bestMs.toFixed(3)} ms = ${((c.batch * c.context * 1000) / r.bestMs).toFixed(0)} tokens/s; ` +
      `${r.cpuMsPerUpdate.toFixed(3)} ms CPU = ${perCpu.toFixed(0)} tokens per CPU-second; AdamW ${r.adamwMs.toFixed(3)} ms)`;
    results.push(line);
    process.stdout.write(`${line}\n`);
  }
}
process.stdout.write(`load average after: ${load()}\n`);
if (!only || only.includes('medium')) {
  const medium = CONFIGS.find((c) => c.name === 'medium') as BenchConfig;
  const breakdown = await profile(medium, quick ? 5 : 20);
  process.stdout.write('\nmedium, 1 thread: share of CPU samples\n');
  for (const [k, v] of breakdown) process.stdout.write(`  ${k.padEnd(28)} ${v.toFixed(1).padStart(5)} %\n`);
}
