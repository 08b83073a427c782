import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareByteWise, decodeUtf8Strict, encodeUtf8Strict, sortByteWise } from './utf8.ts';

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return (a[i] as number) - (b[i] as number);
  return a.length - b.length;
}

describe('compareByteWise', () => {
  it('orders like a comparison of the UTF-8 bytes for any strings', () => {
    const enc = new TextEncoder();
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
        expect(Math.sign(compareByteWise(a, b))).toBe(Math.sign(compareBytes(enc.encode(a), enc.encode(b))));
      }),
      { numRuns: 2000, seed: 8 },
    );
  });

  it('puts U+FFFD before U+1F600 (unlike UTF-16 order) and "." before "_"', () => {
    expect(sortByteWise(['\u{1F600}', '\uFFFD'])).toEqual(['\uFFFD', '\u{1F600}']);
    expect(['\u{1F600}', '\uFFFD'].sort()).toEqual(['\u{1F600}', '\uFFFD']);
    expect(sortByteWise(['blocks.0.attention_norm.gain', 'blocks.0.attention.key.weight'])).toEqual(['blocks.0.attention.key.weight', 'blocks.0.attention_norm.gain']);
    expect(sortByteWise(['blocks.2.x', 'blocks.10.x'])).toEqual(['blocks.10.x', 'blocks.2.x']);
    expect(compareByteWise('ab', 'ab')).toBe(0);
    expect(compareByteWise('a', 'ab')).toBeLessThan(0);
  });
});

describe('decodeUtf8Strict / encodeUtf8Strict', () => {
  it('rejects invalid UTF-8 and lone surrogates, keeps a BOM', () => {
    expect(decodeUtf8Strict(Uint8Array.of(0x74, 0xff))).toBeUndefined();
    expect(decodeUtf8Strict(Uint8Array.of(0xed, 0xa0, 0x80))).toBeUndefined(); // encoded surrogate
    expect(decodeUtf8Strict(Uint8Array.of(0xef, 0xbb, 0xbf, 0x61))).toBe('\uFEFFa');
    expect(encodeUtf8Strict('\uD800x')).toBeUndefined();
    expect(Array.from(encodeUtf8Strict('\u{1F600}') ?? [])).toEqual([0xf0, 0x9f, 0x98, 0x80]);
  });
});
