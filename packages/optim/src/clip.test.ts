import { describe, expect, it } from 'vitest';
import { Decoder, FIXTURE_DECODER_CONFIG } from '@llmcp/model';
import { code } from '../test/helpers/errors.ts';
import { clipByGlobalNorm } from './clip.ts';
import { isOptimError } from './errors.ts';

describe('clipByGlobalNorm', () => {
  it('computes the norm with the scaled sum of squares and skips zeros', () => {
    const r = clipByGlobalNorm(Float64Array.of(0, 3, -0, -4), 10);
    expect(r.largestAbs).toBe(4);
    expect(r.scaledSumOfSquares).toBe(1 + (3 / 4) * (3 / 4));
    expect(r.root).toBe(Math.sqrt(1 + (3 / 4) * (3 / 4)));
    expect(r.normBefore).toBe(4 * Math.sqrt(1.5625));
    expect(r.clipped).toBe(false);
    expect(r.normAfter).toBe(r.normBefore);
    expect(r.transform).toEqual({ kind: 'none' });
  });

  it('clips with the multiplier (maxNorm / scale) / root when scale > maxNorm / root', () => {
    const r = clipByGlobalNorm(Float64Array.of(3, 4), 1);
    expect(r.clipped).toBe(true);
    expect(r.multiplier).toBe(1 / 4 / Math.sqrt(1.5625));
    expect(r.normAfter).toBe(1);
    expect(r.transform).toEqual({ kind: 'uniform', multiplier: r.multiplier });
  });

  it('reports norm 0 and no clipping for all-zero gradients', () => {
    const r = clipByGlobalNorm(new Float64Array(5), 0.35);
    expect(r).toMatchObject({ normBefore: 0, clipped: false, multiplier: 1, transform: { kind: 'none' } });
  });

  it('falls back to (g / scale) · (maxNorm / root) when the multiplier underflows', () => {
    const r = clipByGlobalNorm(Float64Array.of(1e300), 1e-300);
    expect(r.multiplier).toBe(0);
    expect(r.transform).toEqual({ kind: 'scaled', divisor: 1e300, factor: 1e-300 });
  });

  it('caps an overflowing norm at the largest finite value', () => {
    const r = clipByGlobalNorm(Float64Array.of(1.5e308, 1.5e308), 1);
    expect(r.normBefore).toBe(Number.MAX_VALUE);
  });

  it('names the first non-finite gradient element', () => {
    const model = new Decoder(FIXTURE_DECODER_CONFIG);
    model.gradient('blocks.0.ffn.up.weight')[5] = NaN;
    try {
      clipByGlobalNorm(model.gradients, 0.35, model.layout);
      throw new Error('accepted NaN');
    } catch (e) {
      expect(isOptimError(e) && e.code === 'OPTIM_NON_FINITE_GRADIENT' && e.tensorName === 'blocks.0.ffn.up.weight' && e.index === 5).toBe(true);
    }
    expect(code(() => clipByGlobalNorm(Float64Array.of(Infinity), 1))).toBe('OPTIM_NON_FINITE_GRADIENT');
  });

  it('rejects a threshold that is not finite and positive', () => {
    for (const bad of [0, -1, NaN, Infinity]) expect(code(() => clipByGlobalNorm(Float64Array.of(1), bad))).toBe('OPTIM_INVALID_CLIP');
  });
});
