import { describe, expect, it } from 'vitest';
import { bits, f64 } from '../../test/helpers/bits.ts';
import { pow } from './pow.ts';

/**
 * pow(10000, (-2·i)/d) for i = 0 … d/2 - 1 (the RoPE inverse frequencies),
 * correctly rounded by mpmath at 600 bits: concatenated bit patterns.
 */
const ROPE: Record<number, string> = {
  4: '3ff00000000000003f847ae147ae147b',
  8: '3ff00000000000003fb999999999999a3f847ae147ae147b3f50624dd2f1a9fc',
  16: '3ff00000000000003fd43d136248490f3fb999999999999a3fa030dc4ea03a723f847ae147ae147b3f69e7c6e43390b73f50624dd2f1a9fc3f34b96be9c2da2c',
  32: '3ff00000000000003fe1feb33c1c381e3fd43d136248490f3fc6c310e3769f3f3fb999999999999a3faccab8602d26973fa030dc4ea03a723f9235a71c5ee5cc3f847ae147ae147b3f77089380241edf3f69e7c6e43390b73f5d22a4fa316fac3f50624dd2f1a9fc3f426d42cce9b24c3f34b96be9c2da2c3f274eea61c12623',
  64: '3ff00000000000003fe7ff2224115d9a3fe1feb33c1c381e3fdafd1354c40d503fd43d136248490f3fce5a84719edcd23fc6c310e3769f3f3fc111aedafb9a9d3fb999999999999a3fb33281b6744ae13faccab8602d26973fa59742aa36710d3fa030dc4ea03a723f984869f47f170f3f9235a71c5ee5cc3f8b4f7e2b2c2a953f847ae147ae147b3f7eb735f0ba11683f77089380241edf3f7145ceee91f40b3f69e7c6e43390b73f636d219065ac0c3f5d22a4fa316fac3f55d931bc2355443f50624dd2f1a9fc3f4892918d61a7873f426d42cce9b24c3f3ba2e4b0e986773f34b96be9c2da2c3f2f150280a2ace03f274eea61c126233f217a8e301c4436',
  128: '3ff00000000000003febb5fad00ab22c3fe7ff2224115d9a3fe4c7bbfcc7c63c3fe1feb33c1c381e3fdf2a79d6b34ac73fdafd1354c40d503fd75f034d79e9653fd43d136248490f3fd186a0714c181b3fce5a84719edcd23fca48fda581eeb93fc6c310e3769f3f3fc3b607ff6227d83fc111aedafb9a9d3fbd8ffaadd33b093fb999999999999a3fb62b2f0cd55b563fb33281b6744ae13fb09fc9970638303faccab8602d26973fa8eec7def5d56c3fa59742aa36710d3fa2b2690ac7edea3fa030dc4ea03a723f9c0a9a4ee026923f984869f47f170f3f9507315134befa3f9235a71c5ee5cc3f8f89a66569d95a3f8b4f7e2b2c2a953f87a66224a8fc073f847ae147ae147b3f81bc25a3dde2ac3f7eb735f0ba11683f7a99428b3d26b33f77089380241edf3f73f2397f2b11233f7145ceee91f40b3f6dea41aad97caa3f69e7c6e43390b73f666ee1d8b3520e3f636d219065ac0c3f60d28dda9098c83f5d22a4fa316fac3f593aeb8454ade23f55d931bc2355443f52eb81b6ed966c3f50624dd2f1a9fc3f4c603c396304463f4892918d61a7873f4547686f641ef63f426d42cce9b24c3f3fe9f59844e8383f3ba2e4b0e986773f37ee9aef1463bb3f34b96be9c2da2c3f31f24e46f5db3e3f2f150280a2ace03f2aea7c90e75ada3f274eea61c126233f242f22d043be4e3f217a8e301c44363f1e459c57e28a47',
};

/** [x, y, pow(x, y)] correctly rounded by mpmath at 600 bits. */
const SPECIAL: readonly [string, string, string][] = [
    ['40c3880000000000', 'bfe0000000000000', '3f847ae147ae147b'], // pow(10000.0, -0.5)
    ['40c3880000000000', 'bfc0000000000000', '3fd43d136248490f'], // pow(10000.0, -0.125)
    ['40c3880000000000', 'bfec000000000000', '3f34b96be9c2da2c'], // pow(10000.0, -0.875)
    ['40c3880000000000', 'bfa0000000000000', '3fe7ff2224115d9a'], // pow(10000.0, -0.03125)
    ['40c3880000000000', 'bfef000000000000', '3f217a8e301c4436'], // pow(10000.0, -0.96875)
    ['40c3880000000000', 'bf90000000000000', '3febb5fad00ab22c'], // pow(10000.0, -0.015625)
    ['40c3880000000000', 'bfef800000000000', '3f1e459c57e28a47'], // pow(10000.0, -0.984375)
    ['4000000000000000', '3fe0000000000000', '3ff6a09e667f3bcd'], // pow(2.0, 0.5)
    ['4024000000000000', 'c000000000000000', '3f847ae147ae147b'], // pow(10.0, -2.0)
    ['3ff0000000000001', '430c6bf526340000', '3ff3fa60615291ee'], // pow(1.0000000000000002, 1000000000000000.0)
    ['3fefffffffffffff', 'c35aa535d3d0c000', '403bf5009fc35df1'], // pow(0.9999999999999999, -3e+16)
    ['4008000000000000', '4044000000000000', '43e517168a4523fd'], // pow(3.0, 40.0)
    ['401c000000000000', 'bfe0000000000000', '3fd83091e6a7f7e7'], // pow(7.0, -0.5)
    ['01a56e1fc2f8f359', '3ff8000000000000', '0000000000000000'], // pow(1e-300, 1.5)
    ['4004000000000000', '4072c80000000000', '58c2e34f399a87bc'], // pow(2.5, 300.5)
    ['3fb999999999999a', '4074300000000000', '0000000000000002'], // pow(0.1, 323.0)
];

describe('pow', () => {
  it('is correctly rounded for every RoPE inverse frequency of head widths 4…128', () => {
    const wrong: string[] = [];
    let count = 0;
    for (const [d, hexes] of Object.entries(ROPE)) {
      const width = Number(d);
      for (let i = 0; i < width / 2; i++) {
        const expected = hexes.slice(16 * i, 16 * i + 16);
        const found = bits(pow(10000, (-2 * i) / width));
        count += 1;
        if (found !== expected) wrong.push(`pow(10000, -2·${i}/${width}): expected ${expected}, found ${found}`);
      }
    }
    expect(count).toBe(126);
    expect(wrong).toEqual([]);
  });

  it('is correctly rounded on hand-picked arguments (near 1, large, subnormal and underflowing results)', () => {
    const wrong = SPECIAL.filter(([x, y, z]) => bits(pow(f64(x), f64(y))) !== z).map(
      ([x, y, z]) => `pow(${x}, ${y}): expected ${z}, found ${bits(pow(f64(x), f64(y)))}`,
    );
    expect(wrong).toEqual([]);
  });

  it('computes exact powers exactly, rounding ties to even', () => {
    expect(pow(9, 0.5)).toBe(3);
    expect(pow(4, 1.5)).toBe(8);
    expect(pow(6561, 0.125)).toBe(3); // 3^8
    expect(pow(2, -1074)).toBe(5e-324);
    expect(Object.is(pow(2, -1075), 0)).toBe(true); // 2^-1075: the tie between 0 and 2^-1074 rounds to even
    expect(pow(2, -1075.5)).toBe(0);
    expect(pow(0.5, 1074)).toBe(5e-324);
    expect(pow(2, 1023)).toBe(8.98846567431158e307);
    expect(pow(2, 1024)).toBe(Infinity);
    expect(pow(3, 33)).toBe(5559060566555523); // exact, 53 bits
    expect(pow(3, 34)).toBe(16677181699666568); // 3^34 = …569 is a midpoint: ties to even
    expect(pow(-3, 3)).toBe(-27);
    expect(pow(-2, -3)).toBe(-0.125);
    expect(pow(10, 22)).toBe(1e22);
    expect(pow(10, -2)).toBe(0.01);
    // (2^27 + 1)^2 = 2^54 + 2^28 + 1 is a midpoint-free 55-bit value: rounds down
    expect(pow(134217729, 2)).toBe(18014398777917440);
    // (2^26 + 1)^2 = 2^52 + 2^27 + 1: exact
    expect(pow(67108865, 2)).toBe(4503599761588225);
  });

  it('follows the C99 special cases (not Math.pow for ±1 with NaN or infinite exponents)', () => {
    const nan = Number.NaN;
    const cases: [number, number, number][] = [
      [nan, 0, 1],
      [nan, -0, 1],
      [1, nan, 1],
      [1, Infinity, 1],
      [-1, Infinity, 1],
      [-1, -Infinity, 1],
      [nan, 1, nan],
      [2, nan, nan],
      [-2, 0.5, nan],
      [-8, 1 / 3, nan],
      [0, -1, Infinity],
      [-0, -1, -Infinity],
      [-0, -2, Infinity],
      [0, -0.5, Infinity],
      [-0, -Infinity, Infinity],
      [0, 3, 0],
      [-0, 3, -0],
      [-0, 2, 0],
      [-0, 0.5, 0],
      [0.5, -Infinity, Infinity],
      [2, -Infinity, 0],
      [0.5, Infinity, 0],
      [-2, Infinity, Infinity],
      [-Infinity, -3, -0],
      [-Infinity, -2, 0],
      [-Infinity, 3, -Infinity],
      [-Infinity, 2.5, Infinity],
      [Infinity, -1, 0],
      [Infinity, 0.5, Infinity],
      [-2, 1025, -Infinity],
      [-0.5, 1075, -0],
      [-2, 3, -8],
      [10, 400, Infinity],
      [10, -400, 0],
      [1.0000000000000002, 1e300, Infinity],
      [0.9999999999999999, 1e300, 0],
    ];
    const wrong = cases.filter(([x, y, z]) => !Object.is(pow(x, y), z)).map(([x, y, z]) => `pow(${x}, ${y}): expected ${z}, found ${pow(x, y)}`);
    expect(wrong).toEqual([]);
  });
});
