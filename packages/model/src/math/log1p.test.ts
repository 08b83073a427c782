import { describe, expect, it } from 'vitest';
import { fromWords } from './float-bits.ts';
import { log1p } from './log1p.ts';

describe('log1p', () => {
  it('follows fdlibm on special values', () => {
    expect(log1p(-1)).toBe(-Infinity);
    expect(log1p(-1.5)).toBeNaN();
    expect(log1p(-Infinity)).toBeNaN();
    expect(log1p(Number.NaN)).toBeNaN();
    expect(log1p(Infinity)).toBe(Infinity);
    expect(Object.is(log1p(0), 0)).toBe(true);
    expect(Object.is(log1p(-0), -0)).toBe(true);
    expect(log1p(5e-324)).toBe(5e-324);
    expect(log1p(2 ** -55)).toBe(2 ** -55); // |x| < 2^-54: x itself
  });

  it('is not correctly rounded where fdlibm is not (|x| < 2^-29 uses x - x·x·0.5)', () => {
    // x = 0x3e10aa39d90b97c2: ln(1 + x) rounds to 0x3e10aa39d8e8e0b5 (mpmath,
    // 300 bits), fdlibm drops the x³/3 term and returns one ulp less.
    const x = fromWords(0x3e10aa39, 0xd90b97c2);
    expect(log1p(x)).toBe(fromWords(0x3e10aa39, 0xd8e8e0b4));
  });
});
