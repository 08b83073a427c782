import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BpeTokenizer } from './bpe-tokenizer.ts';
import { trainBpe } from './bpe-training.ts';
import { TOKENIZER_ERROR_CODES } from './errors.ts';
import { tokenizerErrorOf } from '../test/helpers.ts';

const ALL_BYTES = Uint8Array.from({ length: 256 }, (_, i) => i);

/** A tokenizer with chained merges over a small alphabet plus some high bytes. */
function sampleTokenizer(): BpeTokenizer {
  const enc = new TextEncoder();
  const docs = ['abracadabra abracadabra', 'aaaaaaaabbbbbbbb', 'река реке рекой', 'caba acab', '\u00ff\u00fe\u00ff\u00fe'].map((t) => enc.encode(t));
  return trainBpe([...docs, Uint8Array.of(0xff, 0xfe, 0xff, 0xfe, 0x00, 0x00, 0x00)], 40).tokenizer;
}

describe('BpeTokenizer.encode / decode', () => {
  it('round-trips arbitrary bytes, including invalid UTF-8 and all 256 byte values', () => {
    const tok = sampleTokenizer();
    expect(Array.from(tok.decode(tok.encode(ALL_BYTES)))).toEqual(Array.from(ALL_BYTES));
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        expect(Array.from(tok.decode(tok.encode(bytes)))).toEqual(Array.from(bytes));
        expect(Array.from(tok.decodeDocument(tok.encodeDocument(bytes)))).toEqual(Array.from(bytes));
      }),
      { numRuns: 500 },
    );
  });

  it('round-trips text drawn from the merge alphabet (where many merges apply)', () => {
    const tok = sampleTokenizer();
    fc.assert(
      fc.property(fc.array(fc.constantFrom('a', 'b', 'r', 'c', 'd', ' ', 'ре', 'к', 'а', '\u00ff'), { maxLength: 80 }), (parts) => {
        const text = parts.join('');
        const ids = tok.encode(text);
        expect(tok.decodeText(ids)).toBe(text);
      }),
      { numRuns: 500 },
    );
  });

  it('gives the same ids as the rank-by-rank reference passes', () => {
    const tok = sampleTokenizer();
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 120 }), fc.uint8Array({ maxLength: 120 }).map((b) => b.map((x) => 97 + (x % 4)))), (bytes) => {
        expect(Array.from(tok.encode(bytes))).toEqual(Array.from(tok.traceEncode(bytes).content));
      }),
      { numRuns: 500 },
    );
  });

  it('encodes the empty input to nothing and the empty document to [BOS, EOS]', () => {
    const tok = sampleTokenizer();
    expect(Array.from(tok.encode(''))).toEqual([]);
    expect(Array.from(tok.encodeDocument(new Uint8Array(0)))).toEqual([0, 1]);
    expect(Array.from(tok.decodeDocument([0, 1]))).toEqual([]);
  });

  it('rejects ids outside the vocabulary, non-integers and control ids with their position', () => {
    const tok = BpeTokenizer.fromPairs([[97, 98]]);
    expect(tokenizerErrorOf(() => tok.decode([100, 259])).position).toBe(1);
    expect(tokenizerErrorOf(() => tok.decode([2.5])).code).toBe(TOKENIZER_ERROR_CODES.TOKENIZER_UNKNOWN_TOKEN);
    expect(tokenizerErrorOf(() => tok.decode([-1])).code).toBe(TOKENIZER_ERROR_CODES.TOKENIZER_UNKNOWN_TOKEN);
    const control = tokenizerErrorOf(() => tok.decode([259, 5, 1]));
    expect(control.code).toBe(TOKENIZER_ERROR_CODES.TOKENIZER_CONTROL_TOKEN_IN_CONTENT);
    expect(control.position).toBe(2);
    expect(tokenizerErrorOf(() => tok.tokenBytes(259)).code).toBe(TOKENIZER_ERROR_CODES.TOKENIZER_UNKNOWN_TOKEN);
    expect(tok.tokenBytes(0)).toEqual(new Uint8Array(0));
  });

  it('refuses to materialise an exponentially long token instead of allocating without bound', () => {
    const pairs: [number, number][] = [[97, 97]];
    for (let r = 1; r < 40; r++) pairs.push([255 + r, 255 + r]);
    const tok = BpeTokenizer.fromPairs(pairs);
    expect(tok.tokenBytes(258 + 10).length).toBe(2 ** 11);
    expect(tokenizerErrorOf(() => tok.decode([258 + 39])).code).toBe(TOKENIZER_ERROR_CODES.TOKENIZER_LIMIT_EXCEEDED);
  });

  it('rejects pair tables that overflow layout version 1 or are malformed', () => {
    expect(() => BpeTokenizer.fromPairs([[1, 2, 3] as unknown as [number, number]])).toThrow(TypeError);
    expect(() => BpeTokenizer.fromPairs([[1, -2]])).toThrow(TypeError);
    expect(() => BpeTokenizer.fromPairs(new Uint32Array(3))).toThrow(TypeError);
    const right = tokenizerErrorOf(() => BpeTokenizer.fromPairs([[97, 256]]));
    expect(right.code).toBe(TOKENIZER_ERROR_CODES.TOKENIZER_UNKNOWN_MERGE_OPERAND);
    expect(right.tokenId).toBe(256);
  });
});
