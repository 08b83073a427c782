import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decoderConfigProblem, type DecoderConfigValues } from './decoder-rules.ts';

/** ../SPEC.md §6.1, first bullet, as listed there (layers, which may be 0, has no rule for a u64). */
const SPEC_ORDER: readonly (readonly [reason: string, holds: (c: { [K in keyof DecoderConfigValues]: bigint | number }) => boolean])[] = [
  ['invalid-vocabulary-size', (c) => BigInt(c.vocabularySize) >= 1n],
  ['invalid-model-width', (c) => BigInt(c.modelWidth) >= 1n],
  ['invalid-heads', (c) => BigInt(c.heads) >= 1n],
  ['width-not-divisible-by-heads', (c) => BigInt(c.modelWidth) % BigInt(c.heads) === 0n],
  ['odd-head-width', (c) => (BigInt(c.modelWidth) / BigInt(c.heads)) % 2n === 0n],
  ['invalid-feed-forward-width', (c) => BigInt(c.feedForwardWidth) >= 1n],
  ['invalid-max-positions', (c) => BigInt(c.maxPositions) >= 1n],
  ['invalid-rope-base', (c) => Number.isFinite(c.ropeBase) && (c.ropeBase as number) > 0],
  ['invalid-rms-epsilon', (c) => Number.isFinite(c.rmsEpsilon) && (c.rmsEpsilon as number) >= 0],
];

const size = fc.constantFrom(0n, 1n, 2n, 3n, 4n, 6n, 8n, (1n << 64n) - 1n);
const real = fc.constantFrom(1e4, 1e-6, 0, -0, -1, Number.NaN, Number.POSITIVE_INFINITY, 5e-324);
const config = fc.record({ vocabularySize: size, modelWidth: size, heads: size, feedForwardWidth: size, layers: size, maxPositions: size, ropeBase: real, rmsEpsilon: real });

describe('decoderConfigProblem', () => {
  it('reports the first broken rule in the order of SPEC §6.1 when several are broken', () => {
    fc.assert(
      fc.property(config, (c) => {
        const first = SPEC_ORDER.find(([, holds]) => !holds(c))?.[0] ?? null;
        expect(decoderConfigProblem(c)?.reason ?? null).toBe(first);
      }),
      { numRuns: 2000, seed: 0x61 },
    );
  });

  it('checks the head width before the feed-forward width and the positions', () => {
    const c = { vocabularySize: 5n, modelWidth: 4n, heads: 3n, feedForwardWidth: 0n, layers: 1n, maxPositions: 0n, ropeBase: 1e4, rmsEpsilon: 1e-6 };
    expect(decoderConfigProblem(c)).toMatchObject({ field: 'heads', reason: 'width-not-divisible-by-heads', expected: 'a divisor of 4', found: '3' });
    expect(decoderConfigProblem({ ...c, heads: 4n })).toMatchObject({ field: 'heads', reason: 'odd-head-width', found: '1' });
    expect(decoderConfigProblem({ ...c, heads: 2n })).toMatchObject({ field: 'feedForwardWidth', reason: 'invalid-feed-forward-width', found: '0' });
  });

  it('refuses fractional and negative number sizes with the size rule of their field', () => {
    const c: DecoderConfigValues = { vocabularySize: 5, modelWidth: 4, heads: 2, feedForwardWidth: 8, layers: 1, maxPositions: 16, ropeBase: 1e4, rmsEpsilon: 1e-6 };
    expect(decoderConfigProblem(c)).toBeNull();
    expect(decoderConfigProblem({ ...c, layers: -1 })).toMatchObject({ field: 'layers', reason: 'invalid-layers', found: '-1' });
    expect(decoderConfigProblem({ ...c, feedForwardWidth: 2.5 })).toMatchObject({ field: 'feedForwardWidth', expected: 'integer >= 1', found: '2.5' });
    expect(decoderConfigProblem({ ...c, modelWidth: 4.5, feedForwardWidth: 0 })).toMatchObject({ field: 'modelWidth', reason: 'invalid-model-width' });
  });
});
