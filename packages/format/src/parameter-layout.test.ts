import { describe, expect, it } from 'vitest';
import { expectedParameterShapes, modelParameterName, parameterNameProblem, parameterTensorCount } from './parameter-layout.ts';

const DEMO = { vocabularySize: 5, modelWidth: 4, heads: 2, feedForwardWidth: 4, layers: 1, maxPositions: 2, ropeBase: 10000, rmsEpsilon: 1e-6 };

describe('expectedParameterShapes', () => {
  it('lists the demo model in model order (SPEC §7.1)', () => {
    expect(expectedParameterShapes(DEMO)).toEqual([
      { name: 'token_embedding.weight', shape: [5, 4] },
      { name: 'blocks.0.attention_norm.gain', shape: [4] },
      { name: 'blocks.0.attention.query.weight', shape: [4, 4] },
      { name: 'blocks.0.attention.key.weight', shape: [4, 4] },
      { name: 'blocks.0.attention.value.weight', shape: [4, 4] },
      { name: 'blocks.0.attention.output.weight', shape: [4, 4] },
      { name: 'blocks.0.ffn_norm.gain', shape: [4] },
      { name: 'blocks.0.ffn.gate.weight', shape: [4, 4] },
      { name: 'blocks.0.ffn.up.weight', shape: [4, 4] },
      { name: 'blocks.0.ffn.down.weight', shape: [4, 4] },
      { name: 'final_norm.gain', shape: [4] },
    ]);
  });

  it('has 2 + 9L entries whose names agree with modelParameterName', () => {
    for (const layers of [0, 1, 2, 11]) {
      const shapes = expectedParameterShapes({ ...DEMO, layers, feedForwardWidth: 6 });
      expect(shapes).toHaveLength(parameterTensorCount(layers));
      shapes.forEach((s, i) => expect(s.name).toBe(modelParameterName(i, layers)));
    }
    expect(expectedParameterShapes({ ...DEMO, layers: 0 }).map((s) => s.name)).toEqual(['token_embedding.weight', 'final_norm.gain']);
    expect(() => modelParameterName(11, 1)).toThrow(RangeError);
  });
});

describe('parameterNameProblem', () => {
  it('accepts the layout names and rejects bad syntax (SPEC §6.5)', () => {
    expect(parameterNameProblem('blocks.10.ffn_norm.gain')).toBeUndefined();
    expect(parameterNameProblem('')).toBe('empty-name');
    expect(parameterNameProblem('Final.gain')).toBe('invalid-character');
    expect(parameterNameProblem('a-b')).toBe('invalid-character');
    expect(parameterNameProblem('.a')).toBe('empty-segment');
    expect(parameterNameProblem('a..b')).toBe('empty-segment');
    expect(parameterNameProblem('a.')).toBe('empty-segment');
  });
});
