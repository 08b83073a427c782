import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SplitMix64 } from './splitmix64.ts';

const MASK = (1n << 64n) - 1n;
function referenceNext(state: bigint): [bigint, bigint] {
  const s = (state + 0x9e3779b97f4a7c15n) & MASK;
  let z = s;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK;
  return [s, z ^ (z >> 31n)];
}

describe('SplitMix64', () => {
  it('reproduces the reference sequence from seed 0', () => {
    const rng = new SplitMix64(0n);
    expect([rng.nextU64(), rng.nextU64(), rng.nextU64(), rng.nextU64()]).toEqual([
      0xe220a8397b1dcdafn,
      0x6e789e6aa1b965f4n,
      0x06c45d188009454fn,
      0xf88bb8a8724c81ecn,
    ]);
  });

  it('continues the golden sampling state with 0x9a8c505971939232', () => {
    const rng = new SplitMix64(0x9e3779b97f4a7c38n);
    expect(rng.nextU64()).toBe(0x9a8c505971939232n);
    expect(rng.state).toBe(0x3c6ef372fe94f84dn);
  });

  it('advance steps the state over any number of draws, forwards and back', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), fc.integer({ min: 0, max: 40 }), fc.integer({ min: 1, max: 1000 }), (seed, draws, bound) => {
        const rng = new SplitMix64(seed);
        for (let i = 0; i < draws; i++) if (i % 2 === 0) rng.nextU64(); else rng.nextUnit();
        expect(SplitMix64.advance(seed, BigInt(draws))).toBe(rng.state);
        expect(SplitMix64.advance(rng.state, -BigInt(draws))).toBe(seed);
        const before = rng.state;
        rng.nextBelow(bound);
        expect(SplitMix64.advance(rng.state, -1n)).toBe(before);
      }),
      { numRuns: 200 },
    );
    expect(() => SplitMix64.advance(-1n, 1n)).toThrow(RangeError);
  });

  it('gives the unit draw of seed 33 exactly', () => {
    expect(new SplitMix64(33n).nextUnit()).toBe(0.1720895724703343);
  });

  it('agrees with a BigInt reference on arbitrary states', () => {
    let seed = 0x0123456789abcdefn;
    for (let k = 0; k < 500; k++) {
      seed = referenceNext(seed)[1];
      const rng = new SplitMix64(seed);
      let s = seed;
      for (let j = 0; j < 4; j++) {
        const [next, out] = referenceNext(s);
        s = next;
        expect(rng.nextU64()).toBe(out);
        expect(rng.state).toBe(s);
      }
    }
  });

  it('draws bounded indices by rejection like training.md §3.1', () => {
    const rng = new SplitMix64(33n);
    const picks: number[] = [];
    for (let i = 19; i >= 1; i--) picks.push(rng.nextBelow(i + 1));
    expect(picks).toEqual([16, 15, 13, 11, 9, 8, 5, 8, 4, 3, 6, 2, 5, 1, 3, 3, 3, 0, 1]);
    expect(rng.state).toBe(0xbe1e08c4728735b0n);
  });

  it('rejects states outside u64', () => {
    expect(() => new SplitMix64(-1n)).toThrow(RangeError);
    expect(() => new SplitMix64(1n << 64n)).toThrow(RangeError);
  });
});
