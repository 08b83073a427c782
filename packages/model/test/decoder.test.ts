import { SplitMix64 } from '@llmcp/format';
import { afterAll, describe, expect, it } from 'vitest';
import { Decoder, FIXTURE_DECODER_CONFIG, generate, isModelError, parameterLayout, type TokenBatch } from '../src/index.ts';
import { openKernels, resolveKernels } from '../src/kernels/kernel-choice.ts';
import { modelViews, namedViews, tensorAt } from '../src/layout.ts';
import { decoderForward } from '../src/reference/model.ts';
import { checkGradient, randomValues } from './helpers/gradcheck.ts';

const SMALL = { vocabularySize: 7, modelWidth: 8, heads: 2, feedForwardWidth: 12, layers: 2, maxPositions: 6, ropeBase: 10000, rmsEpsilon: 1e-6 };

function randomBatch(seed: bigint, V: number, B: number, T: number): TokenBatch {
  const rng = new SplitMix64(seed);
  const inputs = Uint32Array.from({ length: B * T }, () => rng.nextBelow(V));
  const targets = Uint32Array.from({ length: B * T }, () => rng.nextBelow(V));
  return { inputs, targets, rows: B, columns: T };
}

function small(): Decoder {
  const model = new Decoder(SMALL);
  model.initialize(5n);
  // Gains away from 1.0 so that their gradients are exercised in general position.
  for (const e of model.layout.entries) if (e.kind === 'gain') model.parameters.set(randomValues(e.length, e.offset + 1).map((g) => 1 + g / 3), e.offset);
  return model;
}

function expectModelError(fn: () => unknown, code: string): void {
  try {
    fn();
  } catch (e) {
    expect(isModelError(e), String(e)).toBe(true);
    expect((e as { code: string }).code).toBe(code);
    return;
  }
  throw new Error(`expected ${code}, nothing was thrown`);
}

const bitsOf = (a: Float64Array): string[] => Array.from(a, (x) => new DataView(Float64Array.of(x).buffer).getBigUint64(0, true).toString(16));

describe('Decoder.trainStep', () => {
  it('gives every parameter the central-difference gradient of the batch loss (2 layers, 3 sequences)', () => {
    const model = small();
    const batch = randomBatch(9n, SMALL.vocabularySize, 3, 5);
    model.trainStep(batch);
    const analytic = model.gradients.slice();
    const indices = Array.from({ length: model.layout.size }, (_, i) => i).filter((i) => i % 7 === 0 || i < 12 || i >= model.layout.size - 8);
    expect(checkGradient('gradient', () => model.evaluateLoss(batch), model.parameters, analytic, indices)).toBeNull();
  });

  it('returns the same loss bits as evaluateLoss, and the last logits row equals nextTokenLogits', () => {
    const model = small();
    const batch = randomBatch(3n, SMALL.vocabularySize, 2, 6);
    expect(Object.is(model.trainStep(batch), model.evaluateLoss(batch))).toBe(true);
    const prefix = Array.from(batch.inputs).slice(0, 4);
    const all = model.logits(prefix);
    expect(bitsOf(model.nextTokenLogits(prefix))).toEqual(bitsOf(all.subarray(3 * SMALL.vocabularySize)));
  });

  it('replaces the stored gradients by default and adds to them with accumulate', () => {
    const model = small();
    const a = randomBatch(1n, SMALL.vocabularySize, 2, 4);
    const b = randomBatch(2n, SMALL.vocabularySize, 2, 4);
    model.trainStep(a);
    const ga = model.gradients.slice();
    model.trainStep(b);
    const gb = model.gradients.slice();
    model.trainStep(a);
    expect(bitsOf(model.gradients)).toEqual(bitsOf(ga));
    model.trainStep(b, { accumulate: true });
    expect(bitsOf(model.gradients)).toEqual(bitsOf(ga.map((x, i) => x + gb[i]!)));
  });

  it('does not depend on what else is in the batch except through the documented reductions', () => {
    // One sequence alone vs. the same sequence first in a batch: its logits are identical.
    const model = small();
    const batch = randomBatch(4n, SMALL.vocabularySize, 3, 5);
    const first = Array.from(batch.inputs).slice(0, 5);
    model.trainStep(batch);
    expect(bitsOf(model.logits(first))).toEqual(bitsOf(model.logits(first)));
  });

  it('rejects bad batches with typed errors and leaves the gradients alone', () => {
    const model = small();
    model.trainStep(randomBatch(1n, SMALL.vocabularySize, 1, 3));
    const before = model.gradients.slice();
    expectModelError(() => model.trainStep({ inputs: [0, 1], targets: [1], rows: 1, columns: 2 }), 'MODEL_INVALID_BATCH');
    expectModelError(() => model.trainStep({ inputs: [0, 1], targets: [1, 2], rows: 0, columns: 2 }), 'MODEL_INVALID_BATCH');
    expectModelError(() => model.trainStep({ inputs: [0, 7], targets: [1, 2], rows: 1, columns: 2 }), 'MODEL_TOKEN_OUT_OF_RANGE');
    expectModelError(() => model.trainStep({ inputs: [0, 1], targets: [1, 1.5], rows: 1, columns: 2 }), 'MODEL_TOKEN_OUT_OF_RANGE');
    expectModelError(() => model.trainStep({ inputs: new Array(7).fill(0), targets: new Array(7).fill(0), rows: 1, columns: 7 }), 'MODEL_CONTEXT_TOO_LONG');
    expectModelError(() => model.logits([]), 'MODEL_INVALID_BATCH');
    expect(bitsOf(model.gradients)).toEqual(bitsOf(before));
  });

  it('rejects a non-finite loss and commits nothing', () => {
    const model = small();
    model.trainStep(randomBatch(1n, SMALL.vocabularySize, 1, 3));
    const before = model.gradients.slice();
    model.parameter('final_norm.gain').fill(1e300);
    model.parameter('token_embedding.weight').fill(1e10);
    try {
      model.trainStep(randomBatch(1n, SMALL.vocabularySize, 1, 3));
      throw new Error('expected MODEL_NON_FINITE');
    } catch (e) {
      expect(isModelError(e) && e.code === 'MODEL_NON_FINITE').toBe(true);
    }
    expect(bitsOf(model.gradients)).toEqual(bitsOf(before));
  });
});

describe('Decoder parameters and checkpoints', () => {
  it('lays out 2 + 9L tensors in model order, 144 scalars for the fixture', () => {
    const layout = parameterLayout(FIXTURE_DECODER_CONFIG);
    expect(layout.size).toBe(144);
    expect(layout.entries.map((e) => e.name)).toEqual([
      'token_embedding.weight',
      'blocks.0.attention_norm.gain',
      'blocks.0.attention.query.weight',
      'blocks.0.attention.key.weight',
      'blocks.0.attention.value.weight',
      'blocks.0.attention.output.weight',
      'blocks.0.ffn_norm.gain',
      'blocks.0.ffn.gate.weight',
      'blocks.0.ffn.up.weight',
      'blocks.0.ffn.down.weight',
      'final_norm.gain',
    ]);
    expect(layout.entries.map((e) => e.offset)).toEqual([0, 20, 24, 40, 56, 72, 88, 92, 108, 124, 140]);
  });

  it('initializes from seed 33 as model.md §4 says and draws exactly 132 values', () => {
    const model = new Decoder(FIXTURE_DECODER_CONFIG);
    const rng = new SplitMix64(33n);
    model.initialize(rng);
    expect(model.parameters[0]).toBe(-0.5354754858570419);
    expect(Array.from(model.parameter('final_norm.gain'))).toEqual([1, 1, 1, 1]);
    expect(rng.state).toBe((33n + 132n * 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn);
  });

  it('exposes checkpoint tensors as zero-copy views and loads them back', () => {
    const model = small();
    const tensors = model.toCheckpointParameters();
    expect(tensors.map((t) => t.name)).toEqual(model.layout.entries.map((e) => e.name));
    tensors[0]!.data[0] = 0.25;
    expect(model.parameters[0]).toBe(0.25);
    const copy = Decoder.fromCheckpoint({ decoder: SMALL, parameters: tensors.map((t) => ({ ...t, data: t.data.slice() })) });
    expect(bitsOf(copy.parameters)).toEqual(bitsOf(model.parameters));
  });

  it('refuses mismatched tensors and copies nothing', () => {
    const model = small();
    const before = model.parameters.slice();
    const good = model.toCheckpointParameters().map((t) => ({ ...t, data: t.data.map(() => 0.5) }));
    expectModelError(() => model.loadParameters(good.slice(1)), 'MODEL_PARAMETER_MISMATCH');
    expectModelError(() => model.loadParameters([good[1]!, good[0]!, ...good.slice(2)]), 'MODEL_PARAMETER_MISMATCH');
    expectModelError(() => model.loadParameters(good.map((t, i) => (i === 3 ? { ...t, shape: [t.shape[1]!, t.shape[0]!, 1] } : t))), 'MODEL_PARAMETER_MISMATCH');
    expectModelError(() => model.loadParameters(good.map((t, i) => (i === 5 ? { ...t, data: t.data.map((x, j) => (j === 2 ? NaN : x)) } : t))), 'MODEL_NON_FINITE');
    expect(bitsOf(model.parameters)).toEqual(bitsOf(before));
    expectModelError(() => model.parameter('nope'), 'MODEL_PARAMETER_MISMATCH');
  });

  it('rejects invalid configurations with the offending field', () => {
    for (const [field, bad] of [
      ['heads', { ...SMALL, heads: 3 }],
      ['heads', { ...SMALL, heads: 8 }],
      ['vocabularySize', { ...SMALL, vocabularySize: 0 }],
      ['layers', { ...SMALL, layers: -1 }],
      ['ropeBase', { ...SMALL, ropeBase: Number.NaN }],
      ['rmsEpsilon', { ...SMALL, rmsEpsilon: -1 }],
      ['maxPositions', { ...SMALL, maxPositions: 1.5 }],
    ] as const) {
      try {
        new Decoder(bad);
        throw new Error(`accepted ${field}`);
      } catch (e) {
        expect(isModelError(e) && e.code === 'MODEL_INVALID_CONFIG' && e.field === field, String(e)).toBe(true);
      }
    }
  });
});

describe('Decoder maxPositions', () => {
  // A config may declare far more positions than any input uses (the format accepts up to 2^53 − 1):
  // the RoPE tables cover only the positions actually run, with the same values per position.
  const HUGE = { ...SMALL, maxPositions: 2 ** 40 };

  it('builds RoPE tables only for the positions a forward pass uses', () => {
    const engine = openKernels(HUGE, resolveKernels()).workspace;
    const half = engine.headWidth / 2;
    expect(engine.rope.cosines.length).toBe(0);
    const model = new Decoder(HUGE);
    model.initialize(5n);
    engine.prepare(model.parameters, -1);
    const forward = (tokens: number[]): void => decoderForward(openKernels(HUGE, 'scalar'), engine.state(tokens.length), { tokens, offset: 0, targets: null, logitsFrom: 0 });
    forward([1, 2, 3]);
    expect(engine.rope.cosines.length).toBeGreaterThanOrEqual(3 * half);
    expect(engine.rope.cosines.length).toBeLessThanOrEqual(2 * 3 * half);
    expect(engine.rope.sines.length).toBe(engine.rope.cosines.length);
    forward([1, 2, 3, 4, 5, 6, 0, 1, 2]);
    expect(engine.rope.cosines.length).toBeLessThanOrEqual(2 * 9 * half);
  });

  it('gives the bits of a model with a small maxPositions when it declares 2^40 positions', () => {
    const huge = new Decoder(HUGE);
    const small6 = new Decoder(SMALL);
    huge.initialize(5n);
    small6.initialize(5n);
    const batch = randomBatch(4n, SMALL.vocabularySize, 2, 6);
    expect(Object.is(huge.trainStep(batch), small6.trainStep(batch))).toBe(true);
    expect(bitsOf(huge.gradients)).toEqual(bitsOf(small6.gradients));
    // Growing one position at a time (generation) gives the same logits as a fresh model.
    for (let T = 1; T <= 6; T++) expect(bitsOf(huge.logits(Array.from(batch.inputs).slice(0, T)))).toEqual(bitsOf(small6.logits(Array.from(batch.inputs).slice(0, T))));
    const mode = { kind: 'temperature', temperature: 1, topK: 4 } as const;
    const a = generate(huge, { prompt: [1], mode, rng: new SplitMix64(9n), maxNewTokens: 5 });
    const b = generate(small6, { prompt: [1], mode, rng: new SplitMix64(9n), maxNewTokens: 5 });
    expect(a.tokens).toEqual(b.tokens);
    expect(a.stopReason).toBe('max-new-tokens');
  });

  it('reports a sequence whose activations cannot be allocated as MODEL_CONTEXT_TOO_LONG and keeps working', () => {
    const model = new Decoder(HUGE);
    model.initialize(5n);
    const short = model.logits([1, 2, 3]);
    // 2^16 positions: the (H, T, T) attention weights exceed the largest typed array.
    const tokens = new Uint32Array(2 ** 16);
    try {
      model.nextTokenLogits(tokens);
      throw new Error('accepted');
    } catch (e) {
      expect(isModelError(e) && e.code === 'MODEL_CONTEXT_TOO_LONG' && e.field === 'columns', String(e)).toBe(true);
    }
    expect(bitsOf(model.logits([1, 2, 3]))).toEqual(bitsOf(short));
  });

  it('trains with worker threads on a model declaring 2^40 positions', async () => {
    const one = new Decoder(HUGE);
    const two = await Decoder.create(HUGE, { threads: 2 });
    try {
      one.initialize(3n);
      two.initialize(3n);
      const batch = randomBatch(12n, SMALL.vocabularySize, 4, 5);
      expect(two.trainStep(batch)).toBe(one.trainStep(batch));
      expect(bitsOf(two.gradients)).toEqual(bitsOf(one.gradients));
    } finally {
      await two.close();
    }
  });
});

describe('Decoder threads', () => {
  const opened: Decoder[] = [];
  afterAll(async () => {
    await Promise.all(opened.map((m) => m.close()));
  });

  it.each([
    [2, 256 * 1024 * 1024],
    [3, 256 * 1024 * 1024],
    [2, 0],
  ])('gives the bits of one thread with %i threads (partial budget %i bytes)', async (threads, partialMemoryBytes) => {
    const config = { ...SMALL, maxPositions: 16 };
    const batch = randomBatch(11n, config.vocabularySize, 8, 16);
    const one = new Decoder(config);
    one.initialize(3n);
    const many = await Decoder.create(config, { threads, partialMemoryBytes });
    opened.push(many);
    many.initialize(3n);
    for (let i = 0; i < 3; i++) {
      expect(many.trainStep(batch)).toBe(one.trainStep(batch));
      expect(bitsOf(many.gradients)).toEqual(bitsOf(one.gradients));
      expect(many.evaluateLoss(batch)).toBe(one.evaluateLoss(batch));
    }
    const stats = many.parallelStats();
    expect(stats.threads).toBe(threads);
    expect(stats.waveSize).toBe(partialMemoryBytes === 0 ? threads : 8);
    expect(stats.workerSequences).toBeGreaterThan(0);
  });

  it('reports a closed decoder', async () => {
    const m = await Decoder.create(SMALL, { threads: 2 });
    await m.close();
    expectModelError(() => m.trainStep(randomBatch(1n, SMALL.vocabularySize, 1, 2)), 'MODEL_CLOSED');
  });
});

describe('layout views', () => {
  it('tensorAt names the tensor of every flat index (a linear scan agrees), and nothing outside', () => {
    const layout = parameterLayout(SMALL);
    let e = 0;
    for (let i = 0; i < layout.size; i++) {
      while (i >= layout.entries[e]!.offset + layout.entries[e]!.length) e++;
      expect(tensorAt(layout, i)).toBe(layout.entries[e]);
    }
    expect(tensorAt(layout, -1)).toBeUndefined();
    expect(tensorAt(layout, layout.size)).toBeUndefined();
  });

  it('namedViews and modelViews are live views of the flat array at the layout offsets', () => {
    const model = small();
    const named = namedViews(model.layout, model.parameters);
    expect(named.map((t) => t.name)).toEqual(model.layout.entries.map((t) => t.name));
    for (const t of named) expect(t.data).toEqual(model.parameter(t.name));
    const views = modelViews(model.layout, model.parameters);
    expect(views.blocks[1]!.down).toEqual(model.parameter('blocks.1.ffn.down.weight'));
    expect(views.finalNorm).toEqual(model.parameter('final_norm.gain'));
    views.blocks[0]!.query[3] = 0.25;
    expect(model.parameter('blocks.0.attention.query.weight')[3]).toBe(0.25);
  });
});
