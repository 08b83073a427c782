/**
 * The tokenizer parts of the reference's bpe-trace.json, reproduced exactly
 * (the corpus-level parts are in @llmcp/data's tests).
 */
import { describe, expect, it } from 'vitest';
import { BpeTokenizer } from '../src/bpe-tokenizer.ts';
import { traceBpeTraining, trainBpe } from '../src/bpe-training.ts';
import { TOKENIZER_ERROR_CODES, type TokenizerErrorCode } from '../src/errors.ts';
import { BOS_ID, EOS_ID } from '../src/tokenizer.ts';
// Browser-safe tests read the vector as a JSON module from the fixture home (tools/fixtures.test.ts checks its SHA-256).
import rawTrace from '../../conformance/fixtures/vectors/bpe-trace.json';
import { bytesToHex, hexToBytes, tokenizerErrorOf } from './helpers.ts';

interface TraceMerge {
  rank: number;
  pair: [number, number];
  count: number;
  replacements: number;
  training_token: number;
  content_pair?: [number, number];
  content_token?: number;
  bytes_hex: string;
}
interface EncodeCase {
  id: string;
  input_hex: string;
  input_utf8: string | null;
  initial_content_tokens: number[];
  applications: { rank: number; replacements: number; after: number[] }[];
  content_tokens: number[];
  document_tokens: number[];
  pieces_hex: string[];
  utf8_decode: { ok: boolean; kind?: string; valid_up_to?: number };
}
interface DecodeErrorCase {
  id: string;
  decode: 'content' | 'document';
  ids: number[];
  error: { kind: string; position?: number; token_id?: number; length?: number; found?: number };
}
interface Trace {
  ch03_demo: {
    corpus_training: { requested_merges: number; learned_merges: number; training_vocabulary_size: number; merges: TraceMerge[] };
    document_barrier: { candidate_pairs: number; documents: string[] };
    two_round_fixture: {
      requested_merges: number;
      documents: { id: string; text: string }[];
      merges: (TraceMerge & { candidates_in_pair_order: { pair: [number, number]; count: number; winner: boolean }[] })[];
      stages: { index: number; sequences: number[][] }[];
    };
  };
  ch04_demo: {
    layout: { vocabulary_size: number; bos: number; eos: number; byte_token_range: [number, number]; merge_token_range: [number, number]; version: number };
    encode_cases: EncodeCase[];
    noncanonical_decode: { bytes_hex: string; ids: number[]; canonical_reencoding: number[] };
    decode_errors: DecodeErrorCase[];
  };
  bilingual_training_split: { merges: TraceMerge[]; tokenizer_vocabulary_size: number };
  pair_table_tokenizers: { pairs: [number, number][]; vocabulary_size: number; cases: EncodeCase[] }[];
  invalid_pair_tables: { pairs: [number, number][]; error: { kind: string; rank: number; token_id?: number; left?: number; right?: number } }[];
  small_training_corpora: {
    requested_merges: number;
    learned_merges: number;
    training_vocabulary_size: number;
    tokenizer_vocabulary_size: number;
    corpus_json: string;
    final_training_sequences: number[][];
    merges: TraceMerge[];
    train_ids: string[];
  }[];
}

const trace = rawTrace as unknown as Trace;
const enc = new TextEncoder();

const ERROR_KINDS: Record<string, TokenizerErrorCode> = {
  ControlTokenInContent: TOKENIZER_ERROR_CODES.TOKENIZER_CONTROL_TOKEN_IN_CONTENT,
  UnknownToken: TOKENIZER_ERROR_CODES.TOKENIZER_UNKNOWN_TOKEN,
  DocumentTooShort: TOKENIZER_ERROR_CODES.TOKENIZER_DOCUMENT_TOO_SHORT,
  ExpectedBos: TOKENIZER_ERROR_CODES.TOKENIZER_EXPECTED_BOS,
  ExpectedEos: TOKENIZER_ERROR_CODES.TOKENIZER_EXPECTED_EOS,
  InteriorControlToken: TOKENIZER_ERROR_CODES.TOKENIZER_INTERIOR_CONTROL_TOKEN,
  UnknownMergeOperand: TOKENIZER_ERROR_CODES.TOKENIZER_UNKNOWN_MERGE_OPERAND,
  DuplicateMergePair: TOKENIZER_ERROR_CODES.TOKENIZER_DUPLICATE_MERGE_PAIR,
};

function eightMergeTokenizer(): BpeTokenizer {
  return BpeTokenizer.fromPairs(trace.bilingual_training_split.merges.map((m) => m.pair));
}

function checkEncodeCase(tok: BpeTokenizer, c: EncodeCase): void {
  const input = hexToBytes(c.input_hex);
  if (c.input_utf8 !== null) expect(bytesToHex(enc.encode(c.input_utf8)), c.id).toBe(c.input_hex);
  const traced = tok.traceEncode(input);
  expect(Array.from(traced.initial), `${c.id} initial`).toEqual(c.initial_content_tokens);
  expect(
    traced.applications.map((a) => ({ rank: a.rank, replacements: a.replacements, after: Array.from(a.after) })),
    `${c.id} applications`,
  ).toEqual(c.applications);
  expect(Array.from(traced.content), `${c.id} traced content`).toEqual(c.content_tokens);
  expect(Array.from(tok.encode(input)), `${c.id} content`).toEqual(c.content_tokens);
  expect(Array.from(tok.encodeDocument(input)), `${c.id} document`).toEqual(c.document_tokens);
  if (c.input_utf8 !== null) expect(Array.from(tok.encode(c.input_utf8)), `${c.id} from text`).toEqual(c.content_tokens);
  expect(
    c.content_tokens.map((id) => bytesToHex(tok.tokenBytes(id))),
    `${c.id} pieces`,
  ).toEqual(c.pieces_hex);
  expect(bytesToHex(tok.decode(c.content_tokens)), `${c.id} decode`).toBe(c.input_hex);
  expect(bytesToHex(tok.decodeDocument(c.document_tokens)), `${c.id} decodeDocument`).toBe(c.input_hex);
  if (c.utf8_decode.ok) {
    const text = tok.decodeText(c.content_tokens);
    expect(bytesToHex(enc.encode(text)), `${c.id} text`).toBe(c.input_hex);
  } else {
    const error = tokenizerErrorOf(() => tok.decodeText(c.content_tokens));
    expect(error.code).toBe(TOKENIZER_ERROR_CODES.TOKENIZER_INVALID_UTF8);
    expect(error.offset, `${c.id} valid_up_to`).toBe(c.utf8_decode.valid_up_to);
  }
}

describe('trainBpe on the ch03 fixtures', () => {
  it('reproduces the two-round aaa/aba fixture: winners, counts, replacements, candidates and stages', () => {
    const fixture = trace.ch03_demo.two_round_fixture;
    const docs = fixture.documents.map((d) => enc.encode(d.text));
    const result = trainBpe(docs, fixture.requested_merges, { keepSequences: true });
    expect(result.merges.map((m) => ({ rank: m.rank, pair: [m.left, m.right], count: m.count, replacements: m.replacements }))).toEqual(
      fixture.merges.map((m) => ({ rank: m.rank, pair: m.pair, count: m.count, replacements: m.replacements })),
    );
    expect(fixture.merges.map((m) => bytesToHex(result.tokenizer.tokenBytes(m.training_token + 2)))).toEqual(fixture.merges.map((m) => m.bytes_hex));
    expect(result.sequences?.map((s) => Array.from(s))).toEqual(fixture.stages.at(-1)?.sequences);

    const traced = traceBpeTraining(docs, fixture.requested_merges);
    expect(traced.initialSequences).toEqual(fixture.stages[0]?.sequences);
    traced.rounds.forEach((round, r) => {
      const expected = fixture.merges[r];
      expect(round.candidates.map((c) => ({ pair: [c.left, c.right], count: c.count, winner: c.left === round.left && c.right === round.right }))).toEqual(
        expected?.candidates_in_pair_order,
      );
      expect(round.sequencesAfter).toEqual(fixture.stages[r + 1]?.sequences);
    });
  });

  it('never forms a pair across documents (document barrier)', () => {
    const docs = trace.ch03_demo.document_barrier.documents.map((d) => enc.encode(d));
    expect(traceBpeTraining(docs, 1).rounds).toHaveLength(trace.ch03_demo.document_barrier.candidate_pairs);
    expect(trainBpe(docs, 1).learnedMerges).toBe(0);
  });

  it('stops early on the small corpora where fewer merges are learned than requested', () => {
    for (const c of trace.small_training_corpora) {
      const documents = JSON.parse(c.corpus_json) as { id: string; text: string }[];
      const train = c.train_ids.map((id) => enc.encode(documents.find((d) => d.id === id)?.text ?? ''));
      const result = trainBpe(train, c.requested_merges, { keepSequences: true });
      expect(result.learnedMerges).toBe(c.learned_merges);
      expect(256 + result.learnedMerges).toBe(c.training_vocabulary_size);
      expect(result.tokenizer.vocabularySize).toBe(c.tokenizer_vocabulary_size);
      expect(result.merges.map((m) => ({ rank: m.rank, pair: [m.left, m.right], count: m.count, replacements: m.replacements }))).toEqual(
        c.merges.map((m) => ({ rank: m.rank, pair: m.pair, count: m.count, replacements: m.replacements })),
      );
      expect(c.merges.map((m) => bytesToHex(result.tokenizer.tokenBytes(m.content_token ?? -1)))).toEqual(c.merges.map((m) => m.bytes_hex));
      expect(result.sequences?.map((s) => Array.from(s))).toEqual(c.final_training_sequences);
    }
  });
});

describe('BpeTokenizer on the ch04 fixtures', () => {
  it('has the layout version 1 id ranges', () => {
    const tok = eightMergeTokenizer();
    const layout = trace.ch04_demo.layout;
    expect(tok.vocabularySize).toBe(layout.vocabulary_size);
    expect([tok.bosId, tok.eosId]).toEqual([layout.bos, layout.eos]);
    expect([BOS_ID, EOS_ID]).toEqual([layout.bos, layout.eos]);
    expect(layout.byte_token_range).toEqual([2, 257]);
    expect(layout.merge_token_range).toEqual([258, 258 + tok.mergeCount - 1]);
    for (const m of trace.bilingual_training_split.merges) {
      expect(tok.mergeRank(m.pair[0], m.pair[1])).toBe(m.rank);
      expect(bytesToHex(tok.tokenBytes(m.content_token ?? -1))).toBe(m.bytes_hex);
      expect(m.content_pair).toEqual([m.pair[0] + 2, m.pair[1] + 2]);
    }
  });

  it('reproduces every encode case: initial ids, each applied rank, content, document, pieces, text view', () => {
    const tok = eightMergeTokenizer();
    expect(trace.ch04_demo.encode_cases.length).toBeGreaterThan(10);
    for (const c of trace.ch04_demo.encode_cases) checkEncodeCase(tok, c);
  });

  it('decodes the non-canonical [34, 259] and re-encodes it canonically', () => {
    const tok = eightMergeTokenizer();
    const nc = trace.ch04_demo.noncanonical_decode;
    const bytes = tok.decode(nc.ids);
    expect(bytesToHex(bytes)).toBe(nc.bytes_hex);
    expect(Array.from(tok.encode(bytes))).toEqual(nc.canonical_reencoding);
  });

  it('rejects every decode error case with the reference kind and position', () => {
    const tok = eightMergeTokenizer();
    for (const c of trace.ch04_demo.decode_errors) {
      const error = tokenizerErrorOf(() => (c.decode === 'content' ? tok.decode(c.ids) : tok.decodeDocument(c.ids)));
      expect(error.code, c.id).toBe(ERROR_KINDS[c.error.kind]);
      if (c.error.position !== undefined) expect(error.position, c.id).toBe(c.error.position);
      if (c.error.token_id !== undefined) expect(error.tokenId, c.id).toBe(c.error.token_id);
      if (c.error.found !== undefined) expect(error.tokenId, c.id).toBe(c.error.found);
      if (c.error.length !== undefined) expect(error.length, c.id).toBe(c.error.length);
    }
  });
});

describe('BpeTokenizer.fromPairs on explicit pair tables', () => {
  it('reproduces the chained, repeated, rank-order and byte-only tables', () => {
    for (const table of trace.pair_table_tokenizers) {
      const tok = BpeTokenizer.fromPairs(table.pairs);
      expect(tok.vocabularySize).toBe(table.vocabulary_size);
      for (const c of table.cases) checkEncodeCase(tok, c);
    }
  });

  it('rejects the invalid tables with the reference error', () => {
    for (const table of trace.invalid_pair_tables) {
      const error = tokenizerErrorOf(() => BpeTokenizer.fromPairs(table.pairs));
      expect(error.code).toBe(ERROR_KINDS[table.error.kind]);
      expect(error.rank).toBe(table.error.rank);
      if (table.error.token_id !== undefined) expect(error.tokenId).toBe(table.error.token_id);
      if (table.error.left !== undefined) expect(error.message).toContain(`(${table.error.left}, ${table.error.right})`);
    }
  });
});
