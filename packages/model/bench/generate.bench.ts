/**
 * Generation speed, key/value cache against the uncached path (ch37–ch38),
 * for the medium configuration (V512/D64/H4/F256/L2) at context 64 and 512:
 * tokens/s (wall clock and per CPU-second) from a one-token prompt to the
 * context limit, greedy (so only the logits path differs; sampling is the
 * same code on both). Both paths give identical tokens (checked here too).
 * The scaling table shows the cached cost growing linearly in the generated
 * length (per-token time roughly constant), the uncached one quadratically.
 * Run: `pnpm bench generate`.
 */
import { SplitMix64, type DecoderConfig } from '@llmcp/format';
import { Decoder, generate } from '../src/index.ts';

const MEDIUM = { vocabularySize: 512, modelWidth: 64, heads: 4, feedForwardWidth: 256, layers: 2, ropeBase: 10000, rmsEpsilon: 1e-6 };

interface Timing {
  tokens: number[];
  wall: number;
  cpu: number;
}

function run(model: Decoder, newTokens: number, cache: boolean): Timing {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const out = generate(model, { prompt: [1], mode: { kind: 'greedy' }, rng: new SplitMix64(1n), maxNewTokens: newTokens, cache });
  const wall = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  return { tokens: out.tokens, wall, cpu: (c.user + c.system) / 1e6 };
}

function best(model: Decoder, newTokens: number, cache: boolean, rounds: number): Timing {
  let b: Timing | null = null;
  for (let r = 0; r < rounds; r++) {
    const t = run(model, newTokens, cache);
    if (b === null || t.wall < b.wall) b = t;
  }
  return b!;
}

const rate = (n: number, s: number): string => (n / s).toFixed(0).padStart(8);

process.stdout.write('generation, medium config V512/D64/H4/F256/L2, greedy, prompt of 1 token (best of rounds)\n');
for (const context of [64, 512]) {
  const config: DecoderConfig = { ...MEDIUM, maxPositions: context };
  const model = new Decoder(config);
  model.initialize(7n);
  const n = context; // one-token prompt + context new tokens: the last is appended without a forward
  run(model, Math.min(n, 32), true); // warm-up
  run(model, Math.min(n, 32), false);
  const cached = best(model, n, true, context <= 64 ? 7 : 3);
  const plain = best(model, n, false, context <= 64 ? 5 : 1);
  const same = cached.tokens.length === plain.tokens.length && cached.tokens.every((t, i) => t === plain.tokens[i]);
  process.stdout.write(
    `  context ${String(context).padStart(3)}: ${n} tokens  cached ${rate(n, cached.wall)} tok/s (${rate(n, cached.cpu)} per CPU-s)` +
      `   uncached ${rate(n, plain.wall)} tok/s (${rate(n, plain.cpu)} per CPU-s)   ×${(plain.wall / cached.wall).toFixed(1)}   same tokens: ${same}\n`,
  );
}

process.stdout.write('scaling in generated length (context 512): time for n new tokens, µs per token\n');
{
  const model = new Decoder({ ...MEDIUM, maxPositions: 512 });
  model.initialize(7n);
  let previous: number | null = null;
  for (const n of [64, 128, 256, 512]) {
    const t = best(model, n, true, 3);
    const ratio = previous === null ? '' : `   ×${(t.wall / previous).toFixed(2)} for ×2 tokens`;
    process.stdout.write(`  cached   n ${String(n).padStart(3)}: ${(t.wall * 1000).toFixed(1).padStart(8)} ms  ${((t.wall / n) * 1e6).toFixed(0).padStart(6)} µs/token${ratio}\n`);
    previous = t.wall;
  }
  previous = null;
  for (const n of [64, 128, 256]) {
    const t = best(model, n, false, 1);
    const ratio = previous === null ? '' : `   ×${(t.wall / previous).toFixed(2)} for ×2 tokens`;
    process.stdout.write(`  uncached n ${String(n).padStart(3)}: ${(t.wall * 1000).toFixed(1).padStart(8)} ms  ${((t.wall / n) * 1e6).toFixed(0).padStart(6)} µs/token${ratio}\n`);
    previous = t.wall;
  }
}
