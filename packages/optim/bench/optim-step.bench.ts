/**
 * Cost per parameter element of one AdamW step and of `clipByGlobalNorm`, for
 * the medium (164,160) and large (1,311,872) bench models: the WebAssembly
 * SIMD path against the pure-JavaScript one (`setOptimSimd(false)`), and
 * optionally against a baseline implementation, measured interleaved (one
 * round runs every variant once, in rotating order) in CPU time. Prints the
 * median ns per element of each variant and the median of the per-round
 * ratios to the first variant.
 *
 * Run: `pnpm bench optim-step`, or
 * `node --conditions=@llmcp/source --import tsx packages/optim/bench/optim-step.bench.ts`.
 * Options (env): LLMCP_BENCH_ROUNDS (default 9); LLMCP_BENCH_CONFIGS=medium,large;
 * LLMCP_BENCH_NO_CLIP=1 → AdamW steps without the clip transform (else a uniform multiplier);
 * LLMCP_OPTIM_BASELINE=/path/to/module.ts — a module exporting `AdamW` and
 * `clipByGlobalNorm` (e.g. the HEAD sources copied elsewhere), listed first.
 */
import { SplitMix64, type DecoderConfig } from '@llmcp/format';
import { parameterLayout, type ParameterLayout } from '@llmcp/model';
import { AdamW, clipByGlobalNorm } from '../src/index.ts';
import { setOptimSimd } from '../src/internal/simd.ts';

interface Implementation {
  readonly name: string;
  readonly AdamW: typeof AdamW;
  readonly clipByGlobalNorm: typeof clipByGlobalNorm;
  readonly simd: boolean;
}

const CONFIGS: Record<string, DecoderConfig> = {
  medium: { vocabularySize: 512, modelWidth: 64, heads: 4, feedForwardWidth: 256, layers: 2, maxPositions: 64, ropeBase: 10000, rmsEpsilon: 1e-6 },
  large: { vocabularySize: 2048, modelWidth: 128, heads: 4, feedForwardWidth: 512, layers: 4, maxPositions: 128, ropeBase: 10000, rmsEpsilon: 1e-6 },
};
const ADAMW = { learningRate: 0.01, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01 };

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

function cpuMs(f: () => void): number {
  const t0 = process.cpuUsage();
  f();
  const d = process.cpuUsage(t0);
  return (d.user + d.system) / 1000;
}

function fakeModel(layout: ParameterLayout, seed: bigint): { layout: ParameterLayout; parameters: Float64Array; gradients: Float64Array } {
  const rng = new SplitMix64(seed);
  const n = layout.size;
  const parameters = new Float64Array(n);
  const gradients = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    parameters[i] = (rng.nextUnit() - 0.5) * 0.1;
    gradients[i] = (rng.nextUnit() - 0.5) * 1e-3;
  }
  return { layout, parameters, gradients };
}

async function implementations(): Promise<Implementation[]> {
  const list: Implementation[] = [];
  const baseline = process.env.LLMCP_OPTIM_BASELINE;
  if (baseline !== undefined && baseline !== '') {
    const m = (await import(baseline)) as { AdamW: typeof AdamW; clipByGlobalNorm: typeof clipByGlobalNorm };
    list.push({ name: 'baseline', AdamW: m.AdamW, clipByGlobalNorm: m.clipByGlobalNorm, simd: false });
  }
  list.push({ name: 'js', AdamW, clipByGlobalNorm, simd: false });
  list.push({ name: 'simd', AdamW, clipByGlobalNorm, simd: true });
  return list;
}

function report(label: string, n: number, impls: readonly Implementation[], ms: number[][], per: number): void {
  const ns = (x: number): number => (x * 1e6) / (n * per);
  const cells = impls.map((im, v) => {
    const ratios = (ms[v] as number[]).map((x, r) => x / ((ms[0] as number[])[r] as number));
    return `${im.name} ${ns(median(ms[v] as number[])).toFixed(2)} ns/el (×${median(ratios).toFixed(3)})`;
  });
  console.log(`${label.padEnd(16)} ${cells.join('  ')}`);
}

async function main(): Promise<void> {
  const rounds = Number(process.env.LLMCP_BENCH_ROUNDS ?? 9);
  const names = (process.env.LLMCP_BENCH_CONFIGS ?? 'medium,large').split(',');
  const impls = await implementations();
  console.log(`optim step bench, ${rounds} interleaved rounds, CPU time; loadavg ${(await import('node:os')).loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  for (const name of names) {
    const layout = parameterLayout(CONFIGS[name] as DecoderConfig);
    const n = layout.size;
    const per = Math.max(1, Math.round(2_000_000 / n));
    const setups = impls.map((im) => {
      setOptimSimd(im.simd);
      const model = fakeModel(layout, 5n);
      return { model, opt: new im.AdamW(model, { config: ADAMW }) };
    });
    const adamMs: number[][] = impls.map(() => []);
    const clipMs: number[][] = impls.map(() => []);
    for (let r = -1; r < rounds; r++) {
      for (let j = 0; j < impls.length; j++) {
        const v = (j + Math.max(r, 0)) % impls.length;
        const im = impls[v] as Implementation;
        const { model, opt } = setups[v] as (typeof setups)[number];
        setOptimSimd(im.simd);
        const clipT = cpuMs(() => {
          for (let k = 0; k < per; k++) im.clipByGlobalNorm(model.gradients, 1e-4, layout);
        });
        const clip = im.clipByGlobalNorm(model.gradients, 1e-4, layout);
        const adamT = cpuMs(() => {
          for (let k = 0; k < per; k++) opt.step({ learningRate: 0.01, ...(process.env.LLMCP_BENCH_NO_CLIP === '1' ? {} : { clip }) });
        });
        if (r >= 0) {
          (adamMs[v] as number[]).push(adamT);
          (clipMs[v] as number[]).push(clipT);
        }
      }
    }
    setOptimSimd(true);
    console.log(`${name}: ${n} parameters, ${per} calls per timing`);
    report('  AdamW step', n, impls, adamMs, per);
    report('  clip', n, impls, clipMs, per);
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
