import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BpeTokenizer } from './bpe-tokenizer.ts';
import { trainBpe } from './bpe-training.ts';
import { TOKENIZER_ERROR_CODES } from './errors.ts';
import { SEARCH_TUNING } from './internal/bpe-backtrack.ts';
import { tokenizerErrorOf } from '../test/helpers.ts';

const ALL_BYTES = Uint8Array.from({ length: 256 }, (_, i) => i);

/** A tokenizer with chained merges over a small alphabet plus some high bytes. */
function sampleTokenizer(): BpeTokenizer {
  const enc = new TextEncoder();
  const docs = ['abracadabra abracadabra', 'aaaaaaaabbbbbbbb', 'река реке рекой', 'caba acab', '\u00ff\u00fe\u00ff\u00fe'].map((t) => enc.encode(t));
  return trainBpe([...docs, Uint8Array.of(0xff, 0xfe, 0xff, 0xfe, 0x00, 0x00, 0x00)], 40).tokenizer;
}

function arbitraryTablesMatchReference(): void {
  // Random valid tables over a tiny alphabet: tokens whose own bytes encode differently, several ids with
  // the same bytes and runs of one id are all common, which is what the token-level search must get right.
  const table = fc.integer({ min: 2, max: 4 }).chain((k) =>
    fc.tuple(
      fc.constant(k),
      fc.array(fc.tuple(fc.nat(), fc.nat()), { minLength: 1, maxLength: 30 }),
      fc.array(fc.uint8Array({ maxLength: 48 }).map((b) => b.map((x) => 97 + (x % k))), { minLength: 1, maxLength: 8 }),
    ),
  );
  fc.assert(
    fc.property(table, ([k, picks, inputs]) => {
      const pairs: [number, number][] = [];
      const seen = new Set<number>();
      for (const [x, y] of picks) {
        const available = k + pairs.length;
        const id = (v: number): number => (v % available < k ? 97 + (v % available) : 256 + (v % available) - k);
        const pair: [number, number] = [id(x), id(y)];
        if (seen.has(pair[0] * 65536 + pair[1])) continue;
        seen.add(pair[0] * 65536 + pair[1]);
        pairs.push(pair);
      }
      const tok = BpeTokenizer.fromPairs(pairs);
      for (const input of inputs) expect(Array.from(tok.encode(input))).toEqual(Array.from(tok.traceEncode(input).content));
    }),
    { numRuns: 500 },
  );
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

  it('gives the same ids as the reference passes for arbitrary merge tables (improper tokens, equal byte strings)', arbitraryTablesMatchReference);

  it('encodes exactly with a vocabulary above 46340 ids and with tokens too long to hold', () => {
    // Above 46340 ids the rank table's integer key would overflow: the general pair table is used.
    const pairs: [number, number][] = [[97, 98], [256, 99], [257, 256], [258, 97]];
    for (let x = 0; x < 256 && pairs.length < 46200; x++) for (let y = 0; y < 256; y++) if (!((x === 97 && y === 98) || x === 97 || y === 97)) pairs.push([x, y]);
    const big = BpeTokenizer.fromPairs(pairs);
    expect(big.vocabularySize).toBeGreaterThan(46340 + 2);
    for (const text of ['abcab abcabcaba', 'ababab\u00ffc', 'xyz abcababca']) expect(Array.from(big.encode(text))).toEqual(Array.from(big.traceEncode(text).content));
    // 2^40-byte tokens: no token-level search; the merge passes still encode exactly.
    const chain: [number, number][] = [[97, 97]];
    for (let r = 1; r < 40; r++) chain.push([255 + r, 255 + r]);
    const long = BpeTokenizer.fromPairs(chain);
    const input = 'a'.repeat(1000) + 'b' + 'a'.repeat(37);
    expect(Array.from(long.encode(input))).toEqual(Array.from(long.traceEncode(input).content));
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

describe('BpeTokenizer.encode, token-level search (built at once instead of after 1 MB)', () => {
  let saved = 0;
  beforeAll(() => {
    saved = SEARCH_TUNING.afterBytes;
    SEARCH_TUNING.afterBytes = 0;
  });
  afterAll(() => {
    SEARCH_TUNING.afterBytes = saved;
  });

  it('gives the same ids as the rank-by-rank reference passes', () => {
    const tok = sampleTokenizer();
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 120 }), fc.uint8Array({ maxLength: 120 }).map((b) => b.map((x) => 97 + (x % 4)))), (bytes) => {
        expect(Array.from(tok.encode(bytes))).toEqual(Array.from(tok.traceEncode(bytes).content));
        expect(Array.from(tok.decode(tok.encode(bytes)))).toEqual(Array.from(bytes));
      }),
      { numRuns: 500 },
    );
  });

  it('gives the same ids as the reference passes for arbitrary merge tables (improper tokens, equal byte strings)', arbitraryTablesMatchReference);

  it('gives the same ids with a vocabulary above 46340 ids (compatibility cache in a Map)', () => {
    const pairs: [number, number][] = [[97, 98], [256, 99], [257, 256], [258, 97], [98, 99], [260, 260]];
    for (let x = 100; x < 256 && pairs.length < 46200; x++) for (let y = 100; y < 256; y++) pairs.push([x, y]);
    for (let x = 0; x < 97 && pairs.length < 46400; x++) for (let y = 0; y < 256; y++) pairs.push([x, y]);
    const big = BpeTokenizer.fromPairs(pairs);
    expect(big.vocabularySize).toBeGreaterThan(46340 + 2);
    for (const text of ['abcab abcabcaba', 'ababab\u00ffcbcbc', 'xyz abcababca', 'abcabcabcabcabcabc']) {
      for (let k = 0; k < 3; k++) expect(Array.from(big.encode(text))).toEqual(Array.from(big.traceEncode(text).content));
    }
  });

  it('gives the same ids once it has learned pairs from earlier merge-pass encodings and given up on new text', () => {
    const enc = new TextEncoder();
    const words = ['the', 'cat', 'sat', 'on', 'a', 'mat', 'кот', 'aaaa', 'abab', 'ba'];
    const text = (seed: number, n: number): Uint8Array => {
      const parts: string[] = [];
      for (let w = 0; w < n; w++) {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        parts.push(words[seed % words.length] as string);
      }
      return enc.encode(parts.join(seed % 3 === 0 ? ' ' : ''));
    };
    const tok = trainBpe([text(1, 800), text(2, 800)], 200).tokenizer;
    for (let round = 0; round < 30; round++) {
      const input = text(100 + round, 5 + round * 7);
      expect(Array.from(tok.encode(input))).toEqual(Array.from(tok.traceEncode(input).content));
    }
  });
});

describe('BpeTokenizer.tokenLength', () => {
  it('is the length of tokenBytes for every id of generated tables (0 for BOS and EOS), and refuses ids outside the vocabulary', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(), fc.nat()), { minLength: 1, maxLength: 40 }), (picks) => {
        const pairs: [number, number][] = [];
        const seen = new Set<number>();
        for (const [x, y] of picks) {
          const available = 256 + pairs.length;
          const pair: [number, number] = [x % available, y % available];
          if (seen.has(pair[0] * 65536 + pair[1])) continue;
          seen.add(pair[0] * 65536 + pair[1]);
          pairs.push(pair);
        }
        const tok = BpeTokenizer.fromPairs(pairs);
        for (let id = 0; id < tok.vocabularySize; id++) expect(tok.tokenLength(id)).toBe(tok.tokenBytes(id).length);
        expect(tokenizerErrorOf(() => tok.tokenLength(tok.vocabularySize)).code).toBe(TOKENIZER_ERROR_CODES.TOKENIZER_UNKNOWN_TOKEN);
      }),
      { numRuns: 100 },
    );
  });

  it('gives the length of a deep merge chain without building it: 64 merges, each of the previous token with itself, spell 2^64 bytes', () => {
    const pairs: [number, number][] = [[97, 97]];
    for (let r = 1; r < 64; r++) pairs.push([255 + r, 255 + r]);
    const tok = BpeTokenizer.fromPairs(pairs);
    expect(tok.tokenLength(tok.vocabularySize - 1)).toBe(2 ** 64);
    expect(tok.tokenLength(2 + 256 + 9)).toBe(2 ** 10);
  });
});
