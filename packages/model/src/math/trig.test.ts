import { SplitMix64 } from '@llmcp/format';
import { describe, expect, it } from 'vitest';
import { bits, f64 } from '../../test/helpers/bits.ts';
import { drawDoubles, slowPathCalls, slowPathDisagreements } from '../../test/helpers/slow-path.ts';
import { fromWords } from './float-bits.ts';
import { pow } from './pow.ts';
import { cos, sin, sinCosSlow, trigSlowPathCount } from './trig.ts';

/**
 * Correctly rounded results computed independently (mpmath at 600 bits, then
 * exact rounding of the rational value): [x, sin(x), cos(x)] bit patterns.
 * Includes 6381956970095103·2^797, the double closest to a multiple of π/2
 * (the hardest argument reduction), the largest double, and both sides of the
 * fast path's domain limit 2^19.
 */
const SPECIAL: readonly [string, string, string][] = [
    ['3ff0000000000000', '3feaed548f090cee', '3fe14a280fb5068c'], // 1.0
    ['3fe0000000000000', '3fdeaee8744b05f0', '3fec1528065b7d50'], // 0.5
    ['01a56e1fc2f8f359', '01a56e1fc2f8f359', '3ff0000000000000'], // 1e-300
    ['0000000000000001', '0000000000000001', '3ff0000000000000'], // 5e-324
    ['3e50000000000000', '3e50000000000000', '3fefffffffffffff'], // 1.4901161193847656e-08
    ['3ff921fb54442d18', '3ff0000000000000', '3c91a62633145c07'], // 1.5707963267948966
    ['400921fb54442d18', '3ca1a62633145c07', 'bff0000000000000'], // 3.141592653589793
    ['4480f0cf064dd592', 'bfeb453ab76bf397', '3fe0be2cef01c8f4'], // 1e+22
    ['412e848000000000', 'bfd6664b2568d867', '3fedf9df9906d32c'], // 1000000.0
    ['411fffff9999999a', '3fb18004c91c66a4', '3fefecd6389e689d'], // 524287.9
    ['4120000000000000', '3fc57481ec90fde3', '3fef8c1986ca67fa'], // 524288.0
    ['7506ac5b262ca1ff', '3ff0000000000000', 'bc214ae72e6ba22f'], // 5.319372648326541e+255
    ['7e70000000000000', 'bfc460b8ae1c886e', '3fef9785160c8815'], // 1.0715086071862673e+301
    ['7fefffffffffffff', '3f7452fc98b34e97', 'bfefffe62ecfab75'], // 1.7976931348623157e+308
    ['40abb43f705db181', '3fe57098df9ccd82', 'bfe7c175f589b66a'], // 3546.1239041594677
    ['4040800000000000', '3fefff4728416238', 'bf8b30d6d8f65f78'], // 33.0
    ['c01d000000000000', 'bfea56adb62a27b9', '3fe22c6f50dc3fbe'], // -7.25
    ['4059000000000000', 'bfe03425b78c4db8', '3feb981dbf665fdf'], // 100.0
    ['3fe921fb54442d18', '3fe6a09e667f3bcc', '3fe6a09e667f3bcd'], // 0.7853981633974483
];

describe('sin and cos', () => {
  it('are correctly rounded on hand-picked arguments, including huge and tiny ones', () => {
    const wrong: string[] = [];
    for (const [x, s, c] of SPECIAL) {
      if (bits(sin(f64(x))) !== s) wrong.push(`sin(${x}): expected ${s}, found ${bits(sin(f64(x)))}`);
      if (bits(cos(f64(x))) !== c) wrong.push(`cos(${x}): expected ${c}, found ${bits(cos(f64(x)))}`);
      if (bits(sin(-f64(x))) !== bits(-f64(s))) wrong.push(`sin(-${x}) is not -sin(${x})`);
      if (bits(cos(-f64(x))) !== c) wrong.push(`cos(-${x}) is not cos(${x})`);
    }
    expect(wrong).toEqual([]);
  });

  it('keep the sign of zero in sin, give 1 for cos(±0), NaN for infinities and NaN', () => {
    expect(Object.is(sin(0), 0)).toBe(true);
    expect(Object.is(sin(-0), -0)).toBe(true);
    expect(cos(0)).toBe(1);
    expect(cos(-0)).toBe(1);
    for (const x of [Infinity, -Infinity, Number.NaN]) {
      expect(sin(x)).toBeNaN();
      expect(cos(x)).toBeNaN();
    }
  });

  it('agree with their BigInt evaluation on RoPE angles p·inv_freq (head widths 4…128, positions 0…4095)', () => {
    const rng = new SplitMix64(0x726f7065n);
    const wrong: string[] = [];
    for (const d of [4, 8, 16, 32, 64, 128]) {
      for (let i = 0; i < d / 2; i++) {
        const invFreq = pow(10000, (-2 * i) / d);
        for (let n = 0; n < 12; n++) {
          const angle = rng.nextBelow(4096) * invFreq;
          if (angle === 0) continue;
          if (sin(angle) !== sinCosSlow(angle, false)) wrong.push(`sin(${bits(angle)})`);
          if (cos(angle) !== sinCosSlow(angle, true)) wrong.push(`cos(${bits(angle)})`);
        }
      }
    }
    expect(wrong.slice(0, 5)).toEqual([]);
  });

  it('agree with their BigInt evaluation on random arguments of every magnitude', () => {
    const xs = drawDoubles(0x7472696en, 1500 * 4, (rng) => {
      const row = [
        (rng.nextUnit() - 0.5) * 20,
        (rng.nextUnit() - 0.5) * 2 ** 20, // both sides of the fast-path limit 2^19
        (rng.nextUnit() - 0.5) * 2 ** -(60 * rng.nextUnit()),
      ];
      const u = rng.nextU64() & 0x7fefffffffffffffn; // finite bit patterns
      return [...row, fromWords(Number(u >> 32n), Number(u & 0xffffffffn))];
    });
    const fns = [
      { name: 'sin', fast: sin, slow: (x: number) => sinCosSlow(x, false) },
      { name: 'cos', fast: cos, slow: (x: number) => sinCosSlow(x, true) },
    ];
    expect(slowPathDisagreements(fns, xs)).toEqual([]);
  });

  it('need the BigInt path for fewer than 1 in 50 arguments below 2^19', () => {
    const n = 20000;
    const calls = slowPathCalls(trigSlowPathCount, 0x74726933n, n, (rng) => {
      const x = (rng.nextUnit() - 0.5) * 8192;
      sin(x);
      cos(x);
    });
    expect(calls).toBeLessThan((2 * n) / 50);
  });
});
