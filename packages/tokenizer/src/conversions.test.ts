import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BpeTokenizer } from './bpe-tokenizer.ts';
import { trainBpe } from './bpe-training.ts';
import { tokenizerFromJSON, tokenizerFromState } from './conversions.ts';
import { TOKENIZER_ERROR_CODES } from './errors.ts';
import { LiteralTokenizer } from './literal-tokenizer.ts';
import { sha256Hex } from './sha256.ts';
import { tokenizerErrorOf } from '../test/helpers.ts';

const enc = new TextEncoder();

function trained(): BpeTokenizer {
  return trainBpe(['At dawn, Mira carries a blue notebook.', 'На рассвете Мира приносит тетрадь.'].map((t) => enc.encode(t)), 24).tokenizer;
}

describe('tokenizerFromState / toState', () => {
  it('round-trips a trained BPE tokenizer to an identical tokenizer and identity', () => {
    const tok = trained();
    const state = tok.toState();
    expect(state.kind).toBe('bpe');
    const back = tokenizerFromState(state);
    expect(back).toBeInstanceOf(BpeTokenizer);
    expect(back.identity()).toBe(tok.identity());
    expect((back as BpeTokenizer).pairs()).toEqual(tok.pairs());
    expect(Array.from(back.encode('Мира carries'))).toEqual(Array.from(tok.encode('Мира carries')));
  });

  it('round-trips a literal tokenizer, including non-UTF-8 pieces', () => {
    const tok = LiteralTokenizer.fromPieces([Uint8Array.of(0xff), Uint8Array.of(0x00), '0', 'ab']);
    const back = tokenizerFromState(tok.toState());
    expect(back).toBeInstanceOf(LiteralTokenizer);
    expect(back.identity()).toBe(tok.identity());
    expect((back as LiteralTokenizer).pieces()).toEqual(tok.pieces());
  });

  it('validates untrusted states like the checkpoint reader does', () => {
    expect(tokenizerErrorOf(() => tokenizerFromState({ kind: 'bpe', pairs: [[256, 97]] })).code).toBe(TOKENIZER_ERROR_CODES.TOKENIZER_UNKNOWN_MERGE_OPERAND);
    expect(tokenizerErrorOf(() => tokenizerFromState({ kind: 'literal', pieces: [] })).code).toBe(TOKENIZER_ERROR_CODES.TOKENIZER_EMPTY_VOCABULARY);
  });
});

describe('toJSON / tokenizerFromJSON', () => {
  it('round-trips both kinds through JSON text to the same identity', () => {
    const bpe = trained();
    const bpeBack = tokenizerFromJSON(JSON.stringify(bpe));
    expect(bpeBack.identity()).toBe(bpe.identity());
    expect(JSON.stringify(bpeBack)).toBe(JSON.stringify(bpe));
    const literal = LiteralTokenizer.fromPieces(['0', '1', Uint8Array.of(0xfe)]);
    const literalBack = tokenizerFromJSON(JSON.stringify(literal));
    expect(literalBack.identity()).toBe(literal.identity());
    expect(JSON.stringify(literal)).toBe('{"format":"llmcp-tokenizer","version":1,"kind":"literal","pieces":["30","31","fe"]}');
  });

  it('uses SHA-256 of the canonical JSON as the identity', () => {
    const tok = BpeTokenizer.fromPairs([
      [32, 208],
      [208, 176],
    ]);
    const canonical = '{"format":"llmcp-tokenizer","version":1,"kind":"bpe","layout":1,"pairs":[[32,208],[208,176]]}';
    expect(JSON.stringify(tok)).toBe(canonical);
    expect(tok.identity()).toBe(`sha256:${sha256Hex(enc.encode(canonical))}`);
  });

  it('gives a different identity to a different merge order with the same vocabulary size', () => {
    const a = BpeTokenizer.fromPairs([
      [97, 98],
      [98, 99],
    ]);
    const b = BpeTokenizer.fromPairs([
      [98, 99],
      [97, 98],
    ]);
    expect(a.vocabularySize).toBe(b.vocabularySize);
    expect(a.identity()).not.toBe(b.identity());
    const literalA = LiteralTokenizer.fromPieces(['x', 'y']);
    const literalB = LiteralTokenizer.fromPieces(['y', 'x']);
    expect(literalA.identity()).not.toBe(literalB.identity());
    expect(literalA.identity()).not.toBe(BpeTokenizer.fromPairs([]).identity());
  });

  it('gives distinct identities to distinct random tables (property)', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.tuple(fc.nat(255), fc.nat(255)), { minLength: 1, maxLength: 8, selector: ([l, r]) => l * 256 + r }), (pairs) => {
        const tok = BpeTokenizer.fromPairs(pairs);
        const reversed = BpeTokenizer.fromPairs([...pairs].reverse());
        expect(tokenizerFromJSON(tok.toJSON()).identity()).toBe(tok.identity());
        if (pairs.length > 1) expect(reversed.identity()).not.toBe(tok.identity());
      }),
    );
  });

  it('rejects malformed JSON with the offending member named', () => {
    const cases: [unknown, string][] = [
      ['{', ''],
      [[], '(root)'],
      [{ format: 'other', version: 1, kind: 'bpe', layout: 1, pairs: [] }, 'format'],
      [{ format: 'llmcp-tokenizer', version: 2, kind: 'bpe', layout: 1, pairs: [] }, 'version'],
      [{ format: 'llmcp-tokenizer', version: 1, kind: 'wordpiece' }, 'kind'],
      [{ format: 'llmcp-tokenizer', version: 1, kind: 'bpe', layout: 1 }, 'pairs'],
      [{ format: 'llmcp-tokenizer', version: 1, kind: 'bpe', layout: 1, pairs: [], extra: 1 }, 'extra'],
      [{ format: 'llmcp-tokenizer', version: 1, kind: 'bpe', layout: 2, pairs: [] }, 'layout'],
      [{ format: 'llmcp-tokenizer', version: 1, kind: 'bpe', layout: 1, pairs: [[97, 98], [97]] }, 'pairs[1]'],
      [{ format: 'llmcp-tokenizer', version: 1, kind: 'bpe', layout: 1, pairs: [[97, 1.5]] }, 'pairs[0][1]'],
      [{ format: 'llmcp-tokenizer', version: 1, kind: 'bpe', layout: 1, pairs: [['97', 98]] }, 'pairs[0][0]'],
      [{ format: 'llmcp-tokenizer', version: 1, kind: 'literal', pieces: ['3g'] }, 'pieces[0]'],
      [{ format: 'llmcp-tokenizer', version: 1, kind: 'literal', pieces: ['AB'] }, 'pieces[0]'],
      [{ format: 'llmcp-tokenizer', version: 1, kind: 'literal', pieces: ['30', ''] }, 'pieces[1]'],
    ];
    for (const [input, field] of cases) {
      const error = tokenizerErrorOf(() => tokenizerFromJSON(input));
      expect(error.code, JSON.stringify(input)).toBe(TOKENIZER_ERROR_CODES.TOKENIZER_INVALID_JSON);
      expect(error.field, JSON.stringify(input)).toBe(field);
    }
    // Well-formed JSON describing an invalid table gets the table's own error.
    expect(tokenizerErrorOf(() => tokenizerFromJSON({ format: 'llmcp-tokenizer', version: 1, kind: 'bpe', layout: 1, pairs: [[97, 98], [97, 98]] })).code).toBe(
      TOKENIZER_ERROR_CODES.TOKENIZER_DUPLICATE_MERGE_PAIR,
    );
  });
});
