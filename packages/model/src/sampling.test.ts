import { SplitMix64 } from '@llmcp/format';
import { describe, expect, it } from 'vitest';
import { FIXTURE_DECODER_CONFIG } from './config.ts';
import { Decoder } from './decoder.ts';
import { isModelError } from './errors.ts';
import { generate, sampleToken, selectToken, tokenDistribution } from './sampling.ts';

function code(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return isModelError(e) ? e.code : `not a ModelError: ${String(e)}`;
  }
  return undefined;
}

describe('tokenDistribution', () => {
  it('ranks by logit, ties by smaller id, and keeps the lower id at a tied top-k boundary', () => {
    const d = tokenDistribution([0, 1, 1, 2], { kind: 'temperature', temperature: 1, topK: 2 });
    expect(d.ranking).toEqual([3, 1, 2, 0]);
    expect(d.retained).toEqual([3, 1]);
    expect(d.probabilities[2]).toBe(0);
    expect(d.probabilities[0]).toBe(0);
  });

  it('puts all mass on the top id for greedy and for top-k = 1', () => {
    for (const mode of [{ kind: 'greedy' } as const, { kind: 'temperature', temperature: 0.7, topK: 1 } as const]) {
      expect(Array.from(tokenDistribution([0.5, 2.75, 2.75, -3], mode).probabilities)).toEqual([0, 1, 0, 0]);
    }
  });

  it('rejects invalid modes and non-finite logits with typed errors', () => {
    expect(code(() => tokenDistribution([0, 1], { kind: 'temperature', temperature: 0, topK: 1 }))).toBe('MODEL_INVALID_SAMPLING');
    expect(code(() => tokenDistribution([0, 1], { kind: 'temperature', temperature: Infinity, topK: 1 }))).toBe('MODEL_INVALID_SAMPLING');
    expect(code(() => tokenDistribution([0, 1], { kind: 'temperature', temperature: 1, topK: 3 }))).toBe('MODEL_INVALID_SAMPLING');
    expect(code(() => tokenDistribution([0, 1], { kind: 'temperature', temperature: 1, topK: 0 }))).toBe('MODEL_INVALID_SAMPLING');
    expect(code(() => tokenDistribution([0, 1], { kind: 'beam' } as never))).toBe('MODEL_INVALID_SAMPLING');
    expect(code(() => tokenDistribution([0, NaN], { kind: 'greedy' }))).toBe('MODEL_NON_FINITE');
    expect(code(() => tokenDistribution([], { kind: 'greedy' }))).toBe('MODEL_INVALID_SAMPLING');
  });
});

describe('selectToken', () => {
  it('walks ids with positive probability in id order and closes the last interval at 1.0', () => {
    const p = [0.25, 0, 0.5, 0.25];
    expect(selectToken(p, 0)).toEqual({ token: 0, start: 0, end: 0.25 });
    expect(selectToken(p, 0.25)).toEqual({ token: 2, start: 0.25, end: 0.75 });
    expect(selectToken(p, 0.9999999999999999)).toEqual({ token: 3, start: 0.75, end: 1 });
    expect(code(() => selectToken([0, 0], 0.5))).toBe('MODEL_INVALID_SAMPLING');
  });
});

describe('sampleToken', () => {
  it('consumes exactly one draw for temperature sampling and none for greedy', () => {
    const rng = new SplitMix64(36n);
    sampleToken([0, 1], { kind: 'greedy' }, rng);
    expect(rng.state).toBe(36n);
    const out = sampleToken([0, 1], { kind: 'temperature', temperature: 1, topK: 2 }, rng);
    expect(rng.state).toBe(36n + 0x9e3779b97f4a7c15n);
    expect(out.draw?.unit).toBe(Number(out.draw!.raw >> 11n) / 2 ** 53);
  });
});

describe('generate', () => {
  const model = new Decoder({ ...FIXTURE_DECODER_CONFIG, maxPositions: 8 });
  model.initialize(33n);

  it('stops after the end-of-sequence id, before the token limit', () => {
    const greedyNext = sampleToken(model.nextTokenLogits([0]), { kind: 'greedy' }, new SplitMix64(0n)).token;
    const out = generate(model, { prompt: [0], mode: { kind: 'greedy' }, rng: new SplitMix64(0n), maxNewTokens: 5, endOfSequence: greedyNext });
    expect(out.tokens).toEqual([greedyNext]);
    expect(out.stopReason).toBe('end-of-sequence');
  });

  it('stops at the new-token limit, and at the context limit when the prefix outgrows maxPositions', () => {
    const rng = new SplitMix64(1n);
    const limited = generate(model, { prompt: [1, 2], mode: { kind: 'temperature', temperature: 1, topK: 5 }, rng, maxNewTokens: 3 });
    expect(limited.tokens).toHaveLength(3);
    expect(limited.stopReason).toBe('max-new-tokens');
    expect(limited.steps.map((s) => s.prefix.length)).toEqual([2, 3, 4]);
    const long = generate(model, { prompt: [1, 2, 3, 4, 0, 1, 2], mode: { kind: 'greedy' }, rng, maxNewTokens: 9 });
    expect(long.tokens).toHaveLength(2);
    expect(long.stopReason).toBe('context-limit');
  });

  it('rejects bad limits and prompts', () => {
    const rng = new SplitMix64(1n);
    const mode = { kind: 'greedy' } as const;
    expect(code(() => generate(model, { prompt: [0], mode, rng, maxNewTokens: 0 }))).toBe('MODEL_INVALID_SAMPLING');
    expect(code(() => generate(model, { prompt: [0], mode, rng, maxNewTokens: 1, endOfSequence: 5 }))).toBe('MODEL_INVALID_SAMPLING');
    expect(code(() => generate(model, { prompt: [], mode, rng, maxNewTokens: 1 }))).toBe('MODEL_CONTEXT_TOO_LONG');
    expect(code(() => generate(model, { prompt: [9], mode, rng, maxNewTokens: 1 }))).toBe('MODEL_TOKEN_OUT_OF_RANGE');
  });
});
