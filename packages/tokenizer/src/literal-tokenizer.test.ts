import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TOKENIZER_ERROR_CODES } from './errors.ts';
import { LiteralTokenizer } from './literal-tokenizer.ts';
import { tokenizerErrorOf } from '../test/helpers.ts';

describe('LiteralTokenizer', () => {
  it('encodes the ch33 digits fixture and decodes it back', () => {
    const tok = LiteralTokenizer.fromPieces(['0', '1', '2', '3', '4']);
    expect(tok.vocabularySize).toBe(5);
    expect(Array.from(tok.encode('012340123401'))).toEqual([0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1]);
    expect(tok.decodeText([2, 3, 4])).toBe('234');
    expect([tok.bosId, tok.eosId]).toEqual([null, null]);
    expect(Array.from(tok.encodeDocument('01'))).toEqual([0, 1]);
  });

  it('matches greedily, leftmost-longest, without backtracking', () => {
    const tok = LiteralTokenizer.fromPieces(['a', 'ab', 'abc', 'c', 'cd']);
    expect(Array.from(tok.encode('abcab'))).toEqual([2, 1]);
    expect(Array.from(tok.encode('aab'))).toEqual([0, 1]);
    const noBacktrack = LiteralTokenizer.fromPieces(['ab', 'abc', 'cd']);
    const error = tokenizerErrorOf(() => noBacktrack.encode('abcd'));
    expect(error.code).toBe(TOKENIZER_ERROR_CODES.TOKENIZER_UNENCODABLE);
    expect(error.offset).toBe(3);
  });

  it('accepts non-UTF-8 pieces and round-trips any byte string over its pieces', () => {
    const pieces = [Uint8Array.of(0xff), Uint8Array.of(0x00), Uint8Array.of(0xff, 0x00, 0x01), Uint8Array.of(0x01)];
    const tok = LiteralTokenizer.fromPieces(pieces);
    fc.assert(
      fc.property(fc.array(fc.nat(3), { maxLength: 50 }), (ids) => {
        const bytes = tok.decode(ids);
        expect(Array.from(tok.decode(tok.encode(bytes)))).toEqual(Array.from(bytes));
      }),
    );
    const invalid = tokenizerErrorOf(() => tok.decodeText([0]));
    expect(invalid.code).toBe(TOKENIZER_ERROR_CODES.TOKENIZER_INVALID_UTF8);
    expect(invalid.offset).toBe(0);
  });

  it('rejects empty vocabularies, empty pieces and repeated spellings', () => {
    expect(tokenizerErrorOf(() => LiteralTokenizer.fromPieces([])).code).toBe(TOKENIZER_ERROR_CODES.TOKENIZER_EMPTY_VOCABULARY);
    const empty = tokenizerErrorOf(() => LiteralTokenizer.fromPieces(['a', '']));
    expect([empty.code, empty.tokenId]).toEqual([TOKENIZER_ERROR_CODES.TOKENIZER_EMPTY_PIECE, 1]);
    const repeated = tokenizerErrorOf(() => LiteralTokenizer.fromPieces(['a', 'b', new Uint8Array([0x61])]));
    expect([repeated.code, repeated.tokenId]).toEqual([TOKENIZER_ERROR_CODES.TOKENIZER_DUPLICATE_PIECE, 2]);
  });

  it('rejects ids outside the vocabulary with their position', () => {
    const tok = LiteralTokenizer.fromPieces(['x', 'y']);
    const error = tokenizerErrorOf(() => tok.decode([0, 1, 2]));
    expect([error.code, error.position, error.tokenId]).toEqual([TOKENIZER_ERROR_CODES.TOKENIZER_UNKNOWN_TOKEN, 2, 2]);
    expect(tokenizerErrorOf(() => tok.tokenBytes(-1)).code).toBe(TOKENIZER_ERROR_CODES.TOKENIZER_UNKNOWN_TOKEN);
  });

  it('does not share its piece buffers with the caller', () => {
    const piece = Uint8Array.of(0x61);
    const tok = LiteralTokenizer.fromPieces([piece, 'b']);
    piece[0] = 0x62;
    expect(tok.decodeText([0])).toBe('a');
    const copy = tok.pieces();
    (copy[0] as Uint8Array)[0] = 0x7a;
    expect(tok.decodeText([0])).toBe('a');
  });
});

describe('LiteralTokenizer.tokenLength', () => {
  it('is the length of each piece, and refuses ids outside the vocabulary', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.uint8Array({ minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 20, selector: (b) => Array.from(b).join(',') }), (pieces) => {
        const tok = LiteralTokenizer.fromPieces(pieces);
        pieces.forEach((p, id) => expect(tok.tokenLength(id)).toBe(p.length));
        for (const bad of [-1, pieces.length, 0.5]) expect(tokenizerErrorOf(() => tok.tokenLength(bad)).code).toBe(TOKENIZER_ERROR_CODES.TOKENIZER_UNKNOWN_TOKEN);
      }),
      { numRuns: 100 },
    );
  });
});
