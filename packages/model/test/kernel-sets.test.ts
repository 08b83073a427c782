/**
 * Every kernel set (scalar: the reference layers; wasm; native) gives the
 * bits of the scalar set on one thread, with 1, 2 and 3 threads, on a
 * realistic shape trained for a few steps, and in cached generation. A set
 * this machine cannot run is skipped with the reason in the test's name
 * (build the addon: node packages/model/native/build.mjs). The rest of the
 * suite runs on whatever `LLMCP_KERNELS` selects (`auto`: native when built),
 * so `LLMCP_KERNELS=scalar|wasm|native pnpm exec vitest run --project model`
 * runs all of it on one set.
 */
import { readFileSync } from 'node:fs';
import { SplitMix64 } from '@llmcp/format';
import { describe, expect, it } from 'vitest';
import { Decoder, generate, type TokenBatch } from '../src/index.ts';
import type { KernelSetName } from '../src/kernels/kernel-set.ts';
import { KERNEL_SETS } from './helpers/kernel-sets.ts';

const bitsOf = (a: Float64Array): string[] => Array.from(new BigUint64Array(a.buffer.slice(a.byteOffset, a.byteOffset + a.byteLength)), (x) => x.toString(16));

function randomBatch(seed: bigint, V: number, B: number, T: number): TokenBatch {
  const rng = new SplitMix64(seed);
  return { inputs: Uint32Array.from({ length: B * T }, () => rng.nextBelow(V)), targets: Uint32Array.from({ length: B * T }, () => rng.nextBelow(V)), rows: B, columns: T };
}

// A realistic shape (odd sizes, several row and column blocks, causal attention) trained for a few steps.
const CONFIG = { vocabularySize: 67, modelWidth: 48, heads: 3, feedForwardWidth: 72, layers: 2, maxPositions: 29, ropeBase: 10000, rmsEpsilon: 1e-6 };

/** Loss, gradient and logit bits of three trainStep calls (parameters nudged between them), and a cached generation. */
async function trace(kernels: KernelSetName, threads: number): Promise<string[]> {
  const model = await Decoder.create(CONFIG, { threads, kernels });
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

describe.each(KERNEL_SETS)('the $name kernel set$skipped', ({ name, missing }) => {
  let reference: string[] | undefined;

  it.skipIf(missing).each([1, 2, 3])('gives the bits of the scalar set on one thread with %i thread(s) (the workers run the decoder\'s set)', async (threads) => {
    reference ??= await trace('scalar', 1);
    const got = await trace(name, threads);
    expect(got.length).toBe(reference.length);
    const first = got.findIndex((b, i) => b !== reference![i]);
    expect(first, `first difference at ${first}: ${got[first]} ≠ ${reference[first]}`).toBe(-1);
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
