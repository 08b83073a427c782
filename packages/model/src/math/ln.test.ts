import { describe, expect, it } from 'vitest';
import { drawDoubles, missedRoundings, slowPathCalls, slowPathDisagreements } from '../../test/helpers/slow-path.ts';
import { fromWords } from './float-bits.ts';
import { ln, lnSlow, lnSlowPathCount, lnTableForTests } from './ln.ts';

/**
 * Correctly rounded results computed independently (mpmath at 600 bits, then
 * exact rounding of the rational value): [x, ln(x)] bit patterns.
 */
const SPECIAL: readonly [string, string][] = [
    ['0000000000000001', 'c0874385446d71c3'], // ln(5e-324)
    ['000012688b70e62b', 'c0864e69394d9508'], // ln(1e-310)
    ['0010000000000000', 'c086232bdd7abcd2'], // ln(2.2250738585072014e-308)
    ['7fefffffffffffff', '40862e42fefa39ef'], // ln(1.7976931348623157e+308)
    ['3ff0000000000001', '3cafffffffffffff'], // ln(1.0000000000000002)
    ['3fefffffffffffff', 'bca0000000000000'], // ln(0.9999999999999999)
    ['4000000000000000', '3fe62e42fefa39ef'], // ln(2.0)
    ['3fe0000000000000', 'bfe62e42fefa39ef'], // ln(0.5)
    ['4024000000000000', '40026bb1bbb55516'], // ln(10.0)
    ['4005bf0a8b145769', '3ff0000000000000'], // ln(2.718281828459045)
    ['3fe6a09e667f3bcd', 'bfd62e42fefa39ee'], // ln(0.7071067811865476)
    ['3ff6a09e667f3bcd', '3fd62e42fefa39f0'], // ln(1.4142135623730951)
    ['3ff0000100000000', '3eafffff00000aab'], // ln(1.0000009536743164)
    ['3fefffffff800000', 'be10000000200000'], // ln(0.9999999990686774)
    ['4008000000000000', '3ff193ea7aad030b'], // ln(3.0)
    ['7e37e43c8800759c', '4085963447f87fb5'], // ln(1e+300)
    ['01a56e1fc2f8f359', 'c085963447f87fb5'], // ln(1e-300)
    ['3fefe00000000000', 'bf70080559588b35'], // ln(0.99609375)
    ['3ff0100000000000', '3f6ff00aa2b10bc0'], // ln(1.00390625)
    ['3ff0200000000000', '3f7fe02a6b106789'], // ln(1.0078125)
];

describe('ln', () => {
  it('is correctly rounded for subnormal, extreme and near-1 arguments', () => {
    expect(missedRoundings('ln', ln, SPECIAL)).toEqual([]);
  });

  it('returns -Infinity for ±0, NaN below 0 and for NaN, +Infinity for +Infinity, +0 for 1', () => {
    expect(ln(0)).toBe(-Infinity);
    expect(ln(-0)).toBe(-Infinity);
    expect(ln(-1)).toBeNaN();
    expect(ln(-5e-324)).toBeNaN();
    expect(ln(-Infinity)).toBeNaN();
    expect(ln(Number.NaN)).toBeNaN();
    expect(ln(Infinity)).toBe(Infinity);
    expect(Object.is(ln(1), 0)).toBe(true);
  });

  it('agrees with its BigInt evaluation on random arguments over the whole range', () => {
    const xs = drawDoubles(0x6c6e3031n, 4000 * 4, (rng) => {
      const u = rng.nextU64() & 0x7fffffffffffffffn; // any positive bit pattern (incl. subnormals)
      const x = fromWords(Number(u >> 32n), Number(u & 0xffffffffn));
      return [
        x,
        1 + (rng.nextUnit() - 0.5) * 2 ** -(52 * rng.nextUnit()), // near 1
        4 * rng.nextUnit(), // RMSNorm range
        0.70703125 + 0.70703125 * rng.nextUnit(), // every table interval
      ];
    });
    const finite = xs.filter((x) => x !== Infinity && x === x);
    expect(slowPathDisagreements([{ name: 'ln', fast: ln, slow: lnSlow }], finite)).toEqual([]);
  });

  it('needs the BigInt path for fewer than 1 in 1000 arguments', () => {
    const n = 200000;
    expect(slowPathCalls(lnSlowPathCount, 0x6c6e3032n, n, (rng) => ln(rng.nextUnit() * 8))).toBeLessThan(n / 1000);
  });

  it('has a reduction table on which the error analysis holds', () => {
    // Entries: [c, -ln c hi, -ln c lo] for z in [start, start + width).
    const table = lnTableForTests();
    for (let i = 0; i < 256; i++) {
      const start = fromWords(0x3fe6a000 + i * 0x1000, 0);
      const end = fromWords(0x3fe6a000 + (i + 1) * 0x1000, 0);
      const c = table[3 * i] as number;
      const rMax = Math.max(Math.abs(start * c - 1), Math.abs(end * c - 1));
      if (start === 1 || end === 1) {
        // c = 1 next to 1: |r| ≤ 2^-8 and r = z - 1 exactly
        expect(c).toBe(1);
        expect(rMax).toBeLessThanOrEqual(2 ** -8);
      } else {
        // |r| ≤ 2^-9(1 + 2^-16), and |ln c| > |r| so that the fastTwoSum s1 + rh is exact
        expect(rMax).toBeLessThanOrEqual(2 ** -9 * (1 + 2 ** -16));
        expect(Math.abs(table[3 * i + 1] as number)).toBeGreaterThan(rMax);
        // c has at most 26 significant bits
        const scaled = c * 2 ** 25;
        expect(scaled / 2 ** Math.floor(Math.log2(scaled) - 25) % 1).toBe(0);
      }
    }
  });
});
