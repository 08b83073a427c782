import { describe, expect, it } from 'vitest';
import { parseConfig } from './config.ts';
import { isSizePresetName, SIZE_PRESETS, sizePresetConfigInput } from './presets.ts';

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
