import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TOKENIZER_ERROR_CODES } from './errors.ts';
import { decodeUtf8Strict, isWellFormedString, toUtf8Bytes, utf8ValidUpTo } from './utf8.ts';
import { tokenizerErrorOf } from '../test/helpers.ts';

const fatal = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
function fatalOk(bytes: Uint8Array): boolean {
  try {
    fatal.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

describe('utf8ValidUpTo', () => {
  it('reports the longest valid prefix for ill-formed sequences', () => {
    const cases: [number[], number][] = [
      [[0x61, 0x62], 2],
      [[0xff, 0xfe], 0],
      [[0xe2, 0x82], 0],
      [[0x61, 0xc0, 0x80], 1], // overlong
      [[0xe0, 0x80, 0x80], 0], // overlong 3-byte
      [[0xed, 0xa0, 0x80], 0], // surrogate U+D800
      [[0xed, 0x9f, 0xbf], 3], // U+D7FF
      [[0xf4, 0x8f, 0xbf, 0xbf], 4], // U+10FFFF
      [[0xf4, 0x90, 0x80, 0x80], 0], // above U+10FFFF
      [[0xf0, 0x9f, 0xa6, 0x80, 0x80], 4], // crab, then a stray continuation byte
      [[0xef, 0xbb, 0xbf, 0x61], 4], // BOM is valid text
    ];
    for (const [bytes, expected] of cases) expect(utf8ValidUpTo(Uint8Array.from(bytes)), bytes.join(' ')).toBe(expected);
  });

  it('agrees with the fatal TextDecoder on arbitrary bytes, and its prefix always decodes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const valid = utf8ValidUpTo(bytes);
        expect(valid === bytes.length).toBe(fatalOk(bytes));
        expect(fatalOk(bytes.subarray(0, valid))).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('decodeUtf8Strict', () => {
  it('keeps a leading BOM and never substitutes U+FFFD', () => {
    expect(decodeUtf8Strict(Uint8Array.from([0xef, 0xbb, 0xbf, 0x41]))).toBe('\ufeffA');
    const error = tokenizerErrorOf(() => decodeUtf8Strict(Uint8Array.from([0x41, 0x42, 0xff])));
    expect(error.code).toBe(TOKENIZER_ERROR_CODES.TOKENIZER_INVALID_UTF8);
    expect(error.offset).toBe(2);
    expect(error.message).toContain('at byte 2');
  });
});

describe('toUtf8Bytes', () => {
  it('refuses strings with unpaired surrogates instead of encoding U+FFFD', () => {
    expect(isWellFormedString('a\ud83e\udd80b')).toBe(true);
    expect(isWellFormedString('a\ud800')).toBe(false);
    expect(isWellFormedString('\udc00a')).toBe(false);
    expect(() => toUtf8Bytes('x\ud800y')).toThrow(TypeError);
    expect(Array.from(toUtf8Bytes('é'))).toEqual([0xc3, 0xa9]);
  });
});
