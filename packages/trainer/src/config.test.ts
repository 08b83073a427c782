import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isCheckpointStep, isValidationStep, learningRateAt } from './cadence.ts';
import { defaultEvaluationBatches, defaultThreads, loadConfig, MAX_THREADS, parseConfig } from './config.ts';
import { diffConfig, isPolicyField } from './config-diff.ts';
import { adamwConfigProblem, decoderConfigProblem } from '@llmcp/format';
import { isTrainerError } from './errors.ts';
import { tempDir } from '../test/helpers/run-fixture.ts';
import { CH33_CONFIG_INPUT, ch33Config } from './presets.ts';

const minimal = { data: { source: { kind: 'text', path: 'stories.txt' } } };

function refusal(input: unknown): { code: string; message: string; fields: readonly string[] } {
  try {
    parseConfig(input);
  } catch (e) {
    if (!isTrainerError(e)) throw e;
    return { code: e.code, message: e.message, fields: e.fields ?? [] };
  }
  throw new Error('expected the config to be refused');
}

describe('parseConfig', () => {
  it('fills every default for a minimal config', () => {
    const c = parseConfig(minimal);
    expect(c.steps).toBe(2000);
    expect(c.model).toEqual({ width: 64, heads: 4, feedForwardWidth: 256, layers: 2, maxPositions: null, ropeBase: 10000, rmsEpsilon: 1e-6, initSeed: 1 });
    expect(c.tokenizer).toEqual({ kind: 'bpe', merges: 256, requireAll: false });
    expect(c.schedule).toEqual({ kind: 'warmup-cosine', peak: null, warmupSteps: 100, floor: null, totalSteps: null });
    expect(c.data.source).toEqual({ kind: 'text', path: 'stories.txt', documents: 'auto', validationFraction: 0.05, testFraction: 0 });
    expect(c.log.timing).toBe(true);
    expect(c.checkpoint).toEqual({ every: null, keepSteps: 3, keepEvery: null, everyMinutes: null });
  });

  it('packs a text source (stride = context) and keeps windows inside documents for the other sources, unless told', () => {
    const text = parseConfig({ ...minimal, data: { ...minimal.data, contextLength: 32 } });
    expect([text.data.windows, text.data.stride]).toEqual(['packed', 32]);
    expect([ch33Config().data.windows, ch33Config().data.stride]).toEqual(['documents', 1]);
    const corpus = parseConfig({ data: { source: { kind: 'corpus', corpus: 'c.json', split: 's.json' } } });
    expect([corpus.data.windows, corpus.data.stride]).toEqual(['documents', 1]);
    const told = parseConfig({ data: { ...minimal.data, windows: 'documents', stride: 3 } });
    expect([told.data.windows, told.data.stride]).toEqual(['documents', 3]);
    expect(refusal({ data: { ...minimal.data, windows: 'sliding' } }).fields).toEqual(['data.windows']);
  });

  it('budgets a validation pass to a quarter of the windows trained between validations, and null evaluates everything', () => {
    const c = parseConfig({ ...minimal, data: { ...minimal.data, batchSize: 8 }, evaluation: { validateEvery: 100, batchSize: 32 } });
    expect(c.evaluation.maxBatches).toBe(7); // ceil(100 × 8 / 4 / 32)
    expect(defaultEvaluationBatches({ validateEvery: 1, updateBatchSize: 1, evaluationBatchSize: 64 })).toBe(1);
    expect(parseConfig({ ...minimal, evaluation: { maxBatches: null } }).evaluation.maxBatches).toBeNull();
    expect(parseConfig({ ...minimal, evaluation: { maxBatches: 3 } }).evaluation.maxBatches).toBe(3);
  });

  it('keeps every N-th snapshot only on the checkpoint cadence, and checkpoints by time only for a positive number of minutes', () => {
    expect(parseConfig({ ...minimal, evaluation: { validateEvery: 10 }, checkpoint: { every: 20, keepEvery: 100 } }).checkpoint.keepEvery).toBe(100);
    expect(refusal({ ...minimal, evaluation: { validateEvery: 10 }, checkpoint: { every: 20, keepEvery: 30 } }).message).toContain('config.checkpoint.keepEvery: expected a multiple of the checkpoint cadence (20 steps), found 30');
    expect(parseConfig({ ...minimal, checkpoint: { everyMinutes: 0.5 } }).checkpoint.everyMinutes).toBe(0.5);
    expect(refusal({ ...minimal, checkpoint: { everyMinutes: 0 } }).fields).toEqual(['checkpoint.everyMinutes']);
  });

  it('defaults threads to this machine\'s cores (at most MAX_THREADS), and threads is never a difference', () => {
    const c = parseConfig(minimal);
    expect(c.threads).toBe(Math.min(MAX_THREADS, availableParallelism()));
    expect(c.threads).toBe(defaultThreads());
    expect(diffConfig(c, { ...c, threads: c.threads + 1 })).toEqual([]);
    expect(refusal({ ...minimal, threads: MAX_THREADS + 1 }).fields).toEqual(['threads']);
  });

  it('refuses an unknown key and names it', () => {
    const r = refusal({ ...minimal, model: { widht: 32 } });
    expect(r.code).toBe('TRAINER_CONFIG_INVALID');
    expect(r.message).toContain('config.model.widht: unknown key');
  });

  it('refuses a bad value and names the key with expected and found', () => {
    const r = refusal({ ...minimal, optimizer: { beta1: 1.5 } });
    expect(r.message).toMatch(/config\.optimizer\.beta1: .*1/);
    expect(r.fields).toContain('optimizer.beta1');
  });

  it('refuses a wrong type and an unknown source kind', () => {
    expect(refusal({ ...minimal, steps: '10' }).message).toContain('config.steps');
    expect(refusal({ data: { source: { kind: 'web' } } }).message).toContain('config.data.source.kind');
  });

  it('checks cross-field rules: heads, positions, list length, cadence', () => {
    expect(refusal({ ...minimal, model: { width: 30, heads: 4 } }).message).toContain('config.model.heads');
    expect(refusal({ ...minimal, model: { width: 6, heads: 2 } }).message).toContain('head width 3');
    expect(refusal({ ...minimal, model: { maxPositions: 8 } }).message).toContain('config.model.maxPositions');
    expect(refusal({ ...minimal, model: { maxPositions: 2 ** 40 } }).message).toMatch(/config\.model\.maxPositions: .*at most 65536/);
    expect(parseConfig({ ...minimal, model: { maxPositions: 65_536 } }).model.maxPositions).toBe(65_536);
    expect(refusal({ ...minimal, steps: 3, schedule: { kind: 'list', rates: [0.1, 0.1] } }).message).toContain('config.schedule.rates');
    expect(refusal({ ...minimal, evaluation: { validateEvery: 4 }, checkpoint: { every: 6 } }).message).toContain('config.checkpoint.every');
  });

  it('keeps f64 values exact', () => {
    const c = ch33Config();
    expect(c.schedule.kind === 'list' && c.schedule.rates[2]).toBe(0.025);
    expect(c.model.rmsEpsilon).toBe(1e-6);
  });
});

describe('loadConfig', () => {
  it('resolves relative paths against the config file and reports bad JSON with the path', () => {
    const dir = tempDir('llmcp-config-');
    const file = path.join(dir, 'train.json');
    writeFileSync(file, JSON.stringify({ data: { source: { kind: 'corpus', corpus: 'c.json', split: 'sub/s.json' } } }));
    const c = loadConfig(file);
    expect(c.data.source).toEqual({ kind: 'corpus', corpus: path.join(dir, 'c.json'), split: path.join(dir, 'sub', 's.json') });
    writeFileSync(file, '{ "steps": 3, }');
    expect(() => loadConfig(file)).toThrow(/not valid JSON/);
    expect(() => loadConfig(path.join(dir, 'missing.json'))).toThrow(/cannot read the config file .*missing\.json: it does not exist/);
  });
});

describe('diffConfig', () => {
  it('lists changed dotted keys and ignores file locations and threads', () => {
    const a = ch33Config();
    const input = JSON.parse(JSON.stringify(CH33_CONFIG_INPUT));
    const b = parseConfig({ ...input, threads: 2, optimizer: { ...input.optimizer, clipNorm: 0.5 }, sampling: { ...input.sampling, prompt: '1' } });
    expect(diffConfig(a, b)).toEqual(['optimizer.clipNorm', 'sampling.prompt']);
    expect(diffConfig(a, ch33Config())).toEqual([]);
    const c = parseConfig({ data: { source: { kind: 'corpus', corpus: '/a/c.json', split: '/a/s.json' } } });
    const d = parseConfig({ data: { source: { kind: 'corpus', corpus: '/b/c.json', split: '/b/s.json' } } });
    expect(diffConfig(c, d)).toEqual([]);
  });

  it('classifies policy fields', () => {
    expect(isPolicyField('schedule.rates')).toBe(true);
    expect(isPolicyField('steps')).toBe(true);
    expect(isPolicyField('model.width')).toBe(false);
    expect(isPolicyField('sampling.seed')).toBe(false);
    expect(isPolicyField('data.batchSize')).toBe(false);
  });
});

describe('cadence', () => {
  it('validates at 0, every N and the last step; checkpoints every M and at the last step', () => {
    const c = ch33Config();
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8].filter((s) => isValidationStep(c, s))).toEqual([0, 2, 4, 6, 8]);
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8].filter((s) => isCheckpointStep(c, s))).toEqual([8]);
  });

  it('gives each step its scheduled rate', () => {
    const c = ch33Config();
    expect([1, 2, 3, 8].map((s) => learningRateAt(c, s))).toEqual([0.04, 0.04, 0.025, 0.008]);
  });
});

describe('config rules shared with the format', () => {
  it('reports the decoder-shape and AdamW problems of @llmcp/format, word for word', () => {
    const shape = decoderConfigProblem({ vocabularySize: 1, modelWidth: 30, heads: 4, feedForwardWidth: 256, layers: 2, maxPositions: 64, ropeBase: 10000, rmsEpsilon: 1e-6 });
    expect(refusal({ ...minimal, model: { width: 30, heads: 4 } }).message).toContain(`config.model.heads: ${shape?.message}`);
    const decay = adamwConfigProblem({ learningRate: 0.5, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 4 });
    expect(decay?.reason).toBe('invalid-decay-product');
    expect(refusal({ ...minimal, optimizer: { learningRate: 0.5, weightDecay: 4 } }).message).toContain(`config.optimizer.weightDecay: expected ${decay?.expected}, found 2`);
  });
});
