import { describe, expect, it } from 'vitest';
import { f64 } from '../../test/helpers/bits.ts';
import { drawDoubles, missedRoundings, slowPathCalls, slowPathDisagreements } from '../../test/helpers/slow-path.ts';
import { exp, expSlow, expSlowPathCount } from './exp.ts';
import { fromWords } from './float-bits.ts';

/**
 * Correctly rounded results computed independently (mpmath at 600 bits, then
 * exact rounding of the rational value): [x, exp(x)] bit patterns.
 */
const BOUNDARIES: readonly [string, string][] = [
    ['3ff0000000000000', '4005bf0a8b145769'], // exp(1.0)
    ['bff0000000000000', '3fd78b56362cef38'], // exp(-1.0)
    ['3fe0000000000000', '3ffa61298e1e069c'], // exp(0.5)
    ['3ca0000000000000', '3ff0000000000001'], // exp(1.1102230246251565e-16)
    ['bc90000000000000', '3ff0000000000000'], // exp(-5.551115123125783e-17)
    ['bc90000000000001', '3fefffffffffffff'], // exp(-5.551115123125784e-17)
    ['3c90000000000000', '3ff0000000000000'], // exp(5.551115123125783e-17)
    ['0000000000000001', '3ff0000000000000'], // exp(5e-324)
    ['8000000000000001', '3ff0000000000000'], // exp(-5e-324)
    ['01a56e1fc2f8f359', '3ff0000000000000'], // exp(1e-300)
    ['40862e42fefa39ee', '7feffffffffffb2a'], // exp(709.7827128933839)
    ['40862e42fefa39ef', '7fefffffffffff2a'], // exp(709.782712893384)
    ['40862e42fefa39f0', '7ff0000000000000'], // exp(709.7827128933841)
    ['40862e3d70a3d70a', '7fefe9ce5c4c52b4'], // exp(709.78)
    ['c0874910d52d3053', '0000000000000000'], // exp(-745.1332191019413)
    ['c0874910d52d3052', '0000000000000000'], // exp(-745.1332191019412)
    ['c0874910d52d3051', '0000000000000001'], // exp(-745.1332191019411)
    ['c087480000000000', '0000000000000001'], // exp(-745.0)
    ['c0874385446d71c3', '0000000000000001'], // exp(-744.4400719213812)
    ['c087200000000000', '0000000000000055'], // exp(-740.0)
    ['c086840000000000', '00000005cf08fff0'], // exp(-720.5)
    ['c086300000000000', '00033802fd28b3c3'], // exp(-710.0)
    ['c086232bdd7abcd3', '000ffffffffffe7c'], // exp(-708.3964185322642)
    ['c086232bdd7abcd2', '001000000000007c'], // exp(-708.3964185322641)
    ['c086232bdd7abcd1', '001000000000027c'], // exp(-708.396418532264)
    ['c086233333333333', '000ff15b469edf89'], // exp(-708.4)
    ['c086231eb851eb85', '00101a5ff6ed496b'], // exp(-708.39)
    ['4059000000000000', '48f3494a9b171bf5'], // exp(100.0)
    ['c059000000000000', '36ea8c1f14e2af5d'], // exp(-100.0)
    ['3fe62e42fefa39ef', '4000000000000000'], // exp(0.6931471805599453)
    ['4034000000000000', '41bceb088b68e804'], // exp(20.0)
];

describe('exp', () => {
  it('is correctly rounded at the overflow, underflow and subnormal thresholds and near 0', () => {
    expect(missedRoundings('exp', exp, BOUNDARIES)).toEqual([]);
  });

  it('returns 1 for ±0, NaN for NaN, +Infinity and +0 for the infinities', () => {
    expect(Object.is(exp(0), 1)).toBe(true);
    expect(Object.is(exp(-0), 1)).toBe(true);
    expect(exp(Number.NaN)).toBeNaN();
    expect(exp(Infinity)).toBe(Infinity);
    expect(Object.is(exp(-Infinity), 0)).toBe(true);
    expect(exp(1e308)).toBe(Infinity);
    expect(Object.is(exp(-1e308), 0)).toBe(true);
    expect(Object.is(exp(-4.49423283715579e307), 0)).toBe(true);
  });

  it('underflows to +0 exactly below ln(2^-1075) and gives subnormals above it', () => {
    // 0xc0874910d52d3052 is the largest double with e^x < 2^-1075.
    expect(Object.is(exp(f64('c0874910d52d3052')), 0)).toBe(true);
    expect(exp(f64('c0874910d52d3051'))).toBe(5e-324);
    for (let x = -745.13; x < -708.3; x += 0.37) {
      const y = exp(x);
      expect(y).toBe(expSlow(x));
      expect(y).toBeGreaterThan(0);
    }
  });

  it('agrees with its BigInt evaluation on random arguments over the whole range', () => {
    const xs = drawDoubles(0x65787031n, 4000 * 5, (rng) => {
      const row = [
        -745.2 + 1455 * rng.nextUnit(), // whole finite-result range
        -745.2 + 37 * rng.nextUnit(), // subnormal results
        (rng.nextUnit() - 0.5) * 2 ** -(60 * rng.nextUnit()), // near 0
        (rng.nextUnit() - 0.5) * 40, // softmax / SiLU range
      ];
      const u = rng.nextU64(); // any bit pattern
      return [...row, fromWords(Number(u >> 32n), Number(u & 0xffffffffn))];
    });
    expect(slowPathDisagreements([{ name: 'exp', fast: exp, slow: expSlow }], xs)).toEqual([]);
  });

  it('needs the BigInt path for fewer than 1 in 1000 arguments', () => {
    const n = 200000;
    expect(slowPathCalls(expSlowPathCount, 0x65787032n, n, (rng) => exp((rng.nextUnit() - 0.5) * 60))).toBeLessThan(n / 1000);
  });
});
