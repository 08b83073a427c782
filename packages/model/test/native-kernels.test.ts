/**
 * The golden vectors and the thread-count invariance under the native kernels
 * (native/kernels.c) and under the WebAssembly kernels, in one process: the
 * same checks, the same bits. Skipped, with a message, when the addon is not
 * built (no C compiler at install). The rest of the suite runs under whatever
 * `LLMCP_KERNELS` selects (`auto`: native when built), so
 * `LLMCP_KERNELS=native pnpm exec vitest run --project model` runs all of it natively.
 */
import { readFileSync } from 'node:fs';
import { SplitMix64 } from '@llmcp/format';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Decoder, generate, kernelInfo, setKernels, type KernelChoice, type TokenBatch } from '../src/index.ts';
import { loadNativeKernels } from '../src/kernels/native.ts';
import { firstMismatch } from './helpers/bits.ts';
import { forwardTraceChecks } from './helpers/forward-trace.ts';

const load = loadNativeKernels();
const available = load.addon !== null;
/** Skipped tests say why in their name (build the addon: node packages/model/native/build.mjs). */
const SKIPPED = available ? '' : ` — skipped: ${load.error ?? 'addon not built'}`;
const KINDS: KernelChoice[] = available ? ['native', 'wasm'] : ['wasm'];

afterEach(() => setKernels('auto'));

const bitsOf = (a: Float64Array): string[] => Array.from(new BigUint64Array(a.buffer.slice(a.byteOffset, a.byteOffset + a.byteLength)), (x) => x.toString(16));

function randomBatch(seed: bigint, V: number, B: number, T: number): TokenBatch {
  const rng = new SplitMix64(seed);
  return { inputs: Uint32Array.from({ length: B * T }, () => rng.nextBelow(V)), targets: Uint32Array.from({ length: B * T }, () => rng.nextBelow(V)), rows: B, columns: T };
}

describe.each(KINDS)('forward-trace.json under setKernels(%s)', (kind) => {
  it('reproduces every activation, adjoint and gradient bit for bit', () => {
    setKernels(kind);
    expect(kernelInfo().kind.startsWith(kind === 'native' ? 'native-' : 'wasm') || kernelInfo().kind === 'js-scalar').toBe(true);
    const checks = forwardTraceChecks();
    expect(checks.length).toBe(120);
    expect(checks.map((c) => firstMismatch(c.name, c.actual, c.expected)).find((m) => m !== null) ?? null).toBeNull();
  });
});

// A realistic shape (odd sizes, several row and column blocks, causal attention) trained for a few steps.
const CONFIG = { vocabularySize: 67, modelWidth: 48, heads: 3, feedForwardWidth: 72, layers: 2, maxPositions: 29, ropeBase: 10000, rmsEpsilon: 1e-6 };

/** Loss, gradient and logit bits of three trainStep calls (parameters nudged between them), and a cached generation. */
async function trace(kind: KernelChoice, threads: number): Promise<string[]> {
  setKernels(kind);
  const model = await Decoder.create(CONFIG, { threads });
  try {
    model.initialize(17n);
    const out: string[] = [];
    for (let step = 0; step < 3; step++) {
      const batch = randomBatch(BigInt(step + 40), CONFIG.vocabularySize, 5, 29);
      out.push(...bitsOf(Float64Array.of(model.trainStep(batch))), ...bitsOf(model.gradients));
      for (let i = 0; i < model.parameters.length; i++) (model.parameters[i] as number) -= 0.05 * (model.gradients[i] as number);
    }
    out.push(...bitsOf(model.logits([1, 2, 3, 5, 8, 13, 21])));
    const g = generate(model, { prompt: [3, 1, 4], mode: { kind: 'temperature', temperature: 0.9, topK: 5 }, rng: new SplitMix64(7n), maxNewTokens: 12 });
    out.push(g.tokens.join(','));
    return out;
  } finally {
    await model.close();
  }
}

describe.skipIf(!available)(`native kernels with worker threads${SKIPPED}`, () => {
  let reference: string[] | undefined;
  afterAll(() => setKernels('auto'));

  it.each([1, 2, 3])('gives the bits of the single-threaded WebAssembly kernels with %i thread(s) (workers follow setKernels)', async (threads) => {
    reference ??= await trace('wasm', 1);
    const native = await trace('native', threads);
    expect(native.length).toBe(reference.length);
    const first = native.findIndex((b, i) => b !== reference![i]);
    expect(first, `first difference at ${first}: ${native[first]} ≠ ${reference[first]}`).toBe(-1);
  });
});

describe('the published native sources', () => {
  it('include every file kernels.c includes, so a registry install can build the addon', () => {
    const root = new URL('../', import.meta.url);
    const files = (JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { files: string[] }).files;
    const included = [...readFileSync(new URL('native/kernels.c', root), 'utf8').matchAll(/^#include "([^"]+)"/gm)].map((m) => `native/${m[1] as string}`);
    expect(included.length).toBeGreaterThan(0);
    for (const source of ['native/kernels.c', ...included]) expect(files, source).toContain(source);
  });
});
