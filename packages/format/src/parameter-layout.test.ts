import { describe, expect, it } from 'vitest';
import { blockTensorIndex, expectedParameterShapes, modelParameterName, parameterNameProblem, parameterTensorCount } from './parameter-layout.ts';

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
    // blockTensorIndex names the same index as the layout, for every tensor of every block.
    for (let l = 0; l < 3; l++) for (let k = 0; k < 9; k++) expect(modelParameterName(blockTensorIndex(l, k), 3)).toBe(expectedParameterShapes({ ...DEMO, layers: 3 })[1 + 9 * l + k]?.name);
    expect(modelParameterName(blockTensorIndex(3, 0), 3)).toBe('final_norm.gain');
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
