import { describe, expect, it } from 'vitest';
import { CH33_FIXTURE } from '@llmcp/optim';
import { parseConfig } from './config.ts';
import { CH33_CONFIG_INPUT, ch33Config, isSizePresetName, SIZE_PRESETS, sizePresetConfigInput } from './presets.ts';

describe('the ch33 preset', () => {
  it('is the ch33 fixture of @llmcp/optim as a trainer config, field for field', () => {
    // Written out once here (the preset itself is built from CH33_FIXTURE): a change to either shows up.
    expect(CH33_CONFIG_INPUT).toEqual({
      steps: 8,
      data: {
        source: {
          kind: 'inline',
          documents: [
            { id: 'train-a', partition: 'train', text: '012340123401' },
            { id: 'train-b', partition: 'train', text: '234012340123' },
            { id: 'validation-a', partition: 'validation', text: '012340123' },
            { id: 'validation-b', partition: 'validation', text: '000000000' },
          ],
        },
        contextLength: 2,
        windows: 'documents',
        stride: 1,
        batchSize: 2,
        shuffle: { seed: 33, epochs: 'repeat' },
      },
      tokenizer: { kind: 'literal', pieces: ['0', '1', '2', '3', '4'] },
      model: { width: 4, heads: 2, feedForwardWidth: 4, layers: 1, maxPositions: 2, ropeBase: 10000, rmsEpsilon: 1e-6, initSeed: 33 },
      optimizer: { learningRate: 0.04, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01, groups: 'gain-no-decay', clipNorm: 0.35 },
      schedule: { kind: 'list', rates: [0.04, 0.04, 0.025, 0.025, 0.015, 0.015, 0.008, 0.008] },
      evaluation: { validateEvery: 2, batchSize: 4, stride: 1, trainingLoss: true, trainingBatchSize: 5, maxBatches: null },
      checkpoint: { every: 8, keepSteps: 3, keepEvery: null, everyMinutes: null },
      sampling: { seed: 35, discard: 1, prompt: '0', count: 1, maxNewTokens: 4, temperature: 1, topK: 3 },
      log: { timing: false },
      threads: 1,
    });
  });

  it('follows CH33_FIXTURE: documents, model, optimizer, rates and evaluation steps', () => {
    const config = ch33Config();
    const text = (tokens: readonly number[]): string => tokens.map((t) => CH33_FIXTURE.literalPieces[t]).join('');
    const documents = config.data.source.kind === 'inline' ? config.data.source.documents : [];
    expect(documents).toEqual([
      ...CH33_FIXTURE.documents.train.map((d) => ({ id: d.id, partition: 'train', text: text(d.tokens) })),
      ...CH33_FIXTURE.documents.validation.map((d) => ({ id: d.id, partition: 'validation', text: text(d.tokens) })),
    ]);
    expect(config.tokenizer).toEqual({ kind: 'literal', pieces: [...CH33_FIXTURE.literalPieces] });
    const d = CH33_FIXTURE.decoder;
    expect(config.model).toEqual({ width: d.modelWidth, heads: d.heads, feedForwardWidth: d.feedForwardWidth, layers: d.layers, maxPositions: d.maxPositions, ropeBase: d.ropeBase, rmsEpsilon: d.rmsEpsilon, initSeed: Number(CH33_FIXTURE.initSeed) });
    expect(config.optimizer).toMatchObject({ ...CH33_FIXTURE.adamw, clipNorm: CH33_FIXTURE.maxGradientNorm });
    expect(config.schedule).toEqual({ kind: 'list', rates: [...CH33_FIXTURE.learningRates] });
    expect(config.steps).toBe(CH33_FIXTURE.learningRates.length);
    const validated = Array.from({ length: config.steps + 1 }, (_, s) => s).filter((s) => s === 0 || s % config.evaluation.validateEvery === 0 || s === config.steps);
    expect(validated).toEqual([...CH33_FIXTURE.validationSteps]);
    expect([config.data.shuffle.seed, config.sampling.seed, config.sampling.discard]).toEqual([Number(CH33_FIXTURE.shuffleSeed), Number(CH33_FIXTURE.samplingSeed), CH33_FIXTURE.samplingDiscard]);
  });
});

describe('sizePresetConfigInput', () => {
  it('builds a valid config for every size, with the size\'s model and budget', () => {
    for (const [name, size] of Object.entries(SIZE_PRESETS)) {
      if (!isSizePresetName(name)) throw new Error(name);
      const config = parseConfig(sizePresetConfigInput({ source: { kind: 'text', path: '/corpus.txt' }, size: name }));
      expect(config.model).toMatchObject({ width: size.width, heads: size.heads, feedForwardWidth: size.feedForwardWidth, layers: size.layers });
      expect(config.data.contextLength).toBe(size.contextLength);
      expect(config.steps).toBe(size.steps);
      expect(config.evaluation.validateEvery).toBe(size.validateEvery);
      expect(config.checkpoint.every).toBe(size.checkpointEvery);
    }
  });

  it('fits validation and checkpoint cadence to a short step budget', () => {
    const config = parseConfig(sizePresetConfigInput({ source: { kind: 'text', path: '/c.txt' }, size: 'tiny', steps: 30, timing: false }));
    expect([config.steps, config.evaluation.validateEvery, config.checkpoint.every, config.log.timing]).toEqual([30, 30, 30, false]);
  });
});

describe('isSizePresetName', () => {
  it('knows tiny, small and medium only', () => {
    expect(['tiny', 'small', 'medium', 'huge', 'toString'].map(isSizePresetName)).toEqual([true, true, true, false, false]);
  });
});
