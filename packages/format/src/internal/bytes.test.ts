import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { firstDifference } from './bytes.ts';

function reference(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return i;
  return -1;
}

describe('firstDifference', () => {
  it('finds the first differing byte exactly, at any alignment, including -0 vs +0 and NaN payloads', () => {
    const words = fc.constantFrom(0, 0x80, 0x7f, 0xf8, 0xff, 1);
    fc.assert(
      fc.property(fc.array(words, { maxLength: 80 }), fc.nat({ max: 7 }), fc.nat({ max: 7 }), fc.option(fc.nat({ max: 79 })), (bytes, offA, offB, flip) => {
        const hostA = new Uint8Array(bytes.length + offA);
        const hostB = new Uint8Array(bytes.length + offB);
        hostA.set(bytes, offA);
        hostB.set(bytes, offB);
        const a = hostA.subarray(offA);
        const b = hostB.subarray(offB);
        if (flip !== null && flip < b.length) b[flip] = (b[flip] as number) ^ 0x80;
        expect(firstDifference(a, b)).toBe(reference(a, b));
      }),
      { numRuns: 3000, seed: 5 },
    );
  });

  it('tells +0 from -0 and equal NaN bits from different ones', () => {
    const f = (v: number): Uint8Array => new Uint8Array(Float64Array.of(v).buffer);
    expect(firstDifference(f(0), f(-0))).toBe(7);
    expect(firstDifference(f(Number.NaN), f(Number.NaN))).toBe(-1);
    const nan2 = f(Number.NaN);
    nan2[0] = 1;
    expect(firstDifference(f(Number.NaN), nan2)).toBe(0);
  });
});
