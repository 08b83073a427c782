/**
 * The corpus, split, tokenizer-training, encoding, window and shuffle parts of
 * the reference's bpe-trace.json, reproduced exactly from the bundled corpus.
 */
import { readFileSync } from 'node:fs';
import { vectorJson } from '../../../tools/fixtures.ts';
import { SplitMix64 } from '@llmcp/format';
import { BpeTokenizer } from '@llmcp/tokenizer';
import { describe, expect, it } from 'vitest';
import { evaluationBatches, gatherBatch } from '../src/batches.ts';
import { parseCorpus, type Corpus } from '../src/corpus.ts';
import { bundledCorpusFiles } from '../src/node.ts';
import { encodeDocuments, trainTokenizerOnTrainSplit, windowLabel, type EncodedDocument } from '../src/pipeline.ts';
import { shuffleInPlace } from '../src/shuffle.ts';
import { PARTITION_NAMES, parseSplitManifest, partitionCorpus, type CorpusPartitions } from '../src/split.ts';
import { UpdateBatches } from '../src/update-batches.ts';
import { causalWindows, windowCount } from '../src/windows.ts';

interface TraceMerge {
  rank: number;
  pair: [number, number];
  count: number;
  replacements: number;
  training_token: number;
  content_pair: [number, number];
  content_token: number;
  bytes_hex: string;
}
interface MergeTable {
  requested_merges: number;
  learned_merges: number;
  tokenizer_vocabulary_size: number;
  encoded_token_counts: Record<'train' | 'validation' | 'test', number>;
  merges: TraceMerge[];
}
interface Trace {
  corpus: { checksum: string; document_count: number; source_order: string[] };
  split: Record<'train' | 'validation' | 'test', string[]>;
  ch03_demo: { corpus_training: { requested_merges: number; learned_merges: number; training_vocabulary_size: number; merges: TraceMerge[]; training_document_ids: string[] } };
  bilingual_training_split: MergeTable & {
    partitions: Record<
      'train' | 'validation' | 'test',
      {
        document_ids: string[];
        encoded_token_count: number;
        documents: { id: string; text_code_points: number; text_utf16_code_units: number; text_utf8_bytes: number; token_count: number; token_ids: number[] }[];
      }
    >;
  };
  bilingual_other_merge_counts: MergeTable[];
  small_training_corpora: { corpus_checksum: string; corpus_json: string; train_ids: string[]; learned_merges: number; requested_merges: number }[];
  causal_windows: {
    bilingual_8_merge_window_counts: { context_length: number; stride: number; windows: Record<'train' | 'validation' | 'test', number> }[];
    ch05_fixture: Ch05;
    ch05_fixture_stride_2: Ch05;
    short_document: { context_length: number; source: number[]; stride: number; window_count: number };
  };
  splitmix64: { seed: number; first_next_u64: string[]; first_next_unit_f64_bits: string[] };
  shuffle_examples: {
    one_document_ten_windows: {
      document_tokens: number[];
      batch_size: number;
      context_length: number;
      rng_state_after_shuffle: string;
      seed: number;
      stride: number;
      window_starts_in_shuffled_order: number[];
    };
    bilingual_train_context3_batch5_seed7: {
      batch_count: number;
      first_two_batches: { inputs: number[]; targets: number[]; windows: string[] }[];
      last_batch_width: number;
      last_batch_windows: string[];
      rng_state_after_shuffle: string;
      window_count: number;
    };
    bilingual_train_context3_batch5_sequential: {
      batch_count: number;
      first_batch_inputs: number[];
      first_batch_targets: number[];
      first_batch_windows: string[];
      last_batch_windows: string[];
    };
  };
}
interface Ch05 {
  context_length: number;
  stride: number;
  source: number[];
  windows: { start: number; input: number[]; target: number[] }[];
  incomplete_tail: { start: number; tokens: number[] };
}

const trace = vectorJson<Trace>('bpe-trace.json');
const [corpusFile, manifestFile] = bundledCorpusFiles('tiny-bilingual');
const corpusBytes = new Uint8Array(readFileSync(corpusFile));
const manifestBytes = new Uint8Array(readFileSync(manifestFile));
const enc = new TextEncoder();

function load(): { corpus: Corpus; partitions: CorpusPartitions } {
  const corpus = parseCorpus(corpusBytes);
  return { corpus, partitions: partitionCorpus(corpus, parseSplitManifest(manifestBytes)) };
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

function mergeRows(merges: readonly { rank: number; left: number; right: number; count: number; replacements: number }[]): unknown[] {
  return merges.map((m) => ({ rank: m.rank, pair: [m.left, m.right], count: m.count, replacements: m.replacements }));
}

function traceRows(merges: readonly TraceMerge[]): unknown[] {
  return merges.map((m) => ({ rank: m.rank, pair: m.pair, count: m.count, replacements: m.replacements }));
}

function encodeAll(tokenizer: BpeTokenizer, partitions: CorpusPartitions): Record<'train' | 'validation' | 'test', EncodedDocument[]> {
  return {
    train: encodeDocuments(tokenizer, partitions.train),
    validation: encodeDocuments(tokenizer, partitions.validation),
    test: encodeDocuments(tokenizer, partitions.test),
  };
}

const total = (docs: readonly EncodedDocument[]): number => docs.reduce((n, d) => n + d.tokens.length, 0);

describe('the bilingual corpus and its split', () => {
  it('has the checksum, document order and partitions of the reference', () => {
    const { corpus, partitions } = load();
    expect(corpusBytes.length).toBe(4785);
    expect(corpus.checksum).toBe(trace.corpus.checksum);
    expect(corpus.checksum).toBe('fnv1a64:723b071980ae8a22');
    expect(corpus.documents.length).toBe(trace.corpus.document_count);
    expect(corpus.documents.map((d) => d.id)).toEqual(trace.corpus.source_order);
    for (const name of PARTITION_NAMES) {
      expect(partitions[name].map((d) => d.id), name).toEqual(trace.split[name]);
      expect(partitions[name].map((d) => d.id), name).toEqual(trace.bilingual_training_split.partitions[name].document_ids);
    }
    expect(partitions.train.map((d) => d.id)).toEqual(trace.ch03_demo.corpus_training.training_document_ids);
  });

  it('keeps every document text exact (code points, UTF-16 units, UTF-8 bytes)', () => {
    const { partitions } = load();
    for (const name of PARTITION_NAMES) {
      trace.bilingual_training_split.partitions[name].documents.forEach((expected, i) => {
        const d = partitions[name][i];
        expect(d?.id).toBe(expected.id);
        expect([...(d?.text ?? '')].length, expected.id).toBe(expected.text_code_points);
        expect(d?.text.length, expected.id).toBe(expected.text_utf16_code_units);
        expect(d?.bytes.length, expected.id).toBe(expected.text_utf8_bytes);
      });
    }
  });
});

describe('BPE training on the train split', () => {
  it('learns the 8-merge table with counts and replacements (ch03, §2.4)', () => {
    const { partitions } = load();
    const result = trainTokenizerOnTrainSplit(partitions, 8);
    const expected = trace.ch03_demo.corpus_training;
    expect(result.learnedMerges).toBe(expected.learned_merges);
    expect(256 + result.learnedMerges).toBe(expected.training_vocabulary_size);
    expect(mergeRows(result.merges)).toEqual(traceRows(expected.merges));
    expect(mergeRows(result.merges)).toEqual(traceRows(trace.bilingual_training_split.merges));
    expect(result.tokenizer.vocabularySize).toBe(trace.bilingual_training_split.tokenizer_vocabulary_size);
    for (const m of expected.merges) {
      expect(hex(result.tokenizer.tokenBytes(m.content_token))).toBe(m.bytes_hex);
      expect(m.content_token).toBe(m.training_token + 2);
    }
  });

  it('learns the 0, 1, 32 and 64 merge tables and their per-partition token counts', () => {
    const { partitions } = load();
    const tables = [...trace.bilingual_other_merge_counts, trace.bilingual_training_split];
    expect(tables.map((t) => t.requested_merges).sort((a, b) => a - b)).toEqual([0, 1, 8, 32, 64]);
    for (const table of tables) {
      const result = trainTokenizerOnTrainSplit(partitions, table.requested_merges);
      const label = `${table.requested_merges} merges`;
      expect(result.learnedMerges, label).toBe(table.learned_merges);
      expect(result.tokenizer.vocabularySize, label).toBe(table.tokenizer_vocabulary_size);
      expect(mergeRows(result.merges), label).toEqual(traceRows(table.merges));
      expect(table.merges.map((m) => hex(result.tokenizer.tokenBytes(m.content_token))), label).toEqual(table.merges.map((m) => m.bytes_hex));
      const encoded = encodeAll(result.tokenizer, partitions);
      for (const name of PARTITION_NAMES) expect(total(encoded[name]), `${label} ${name}`).toBe(table.encoded_token_counts[name]);
    }
  });

  it('encodes every document exactly and decodes each back to its text', () => {
    const { partitions } = load();
    const { tokenizer } = trainTokenizerOnTrainSplit(partitions, 8);
    const encoded = encodeAll(tokenizer, partitions);
    for (const name of PARTITION_NAMES) {
      const expected = trace.bilingual_training_split.partitions[name];
      expect(total(encoded[name]), name).toBe(expected.encoded_token_count);
      expected.documents.forEach((doc, i) => {
        const got = encoded[name][i];
        expect(got?.id).toBe(doc.id);
        expect(got?.tokens.length, doc.id).toBe(doc.token_count);
        expect(Array.from(got?.tokens ?? []), doc.id).toEqual(doc.token_ids);
        expect(enc.encode(tokenizer.decodeText((got?.tokens ?? new Uint32Array()).subarray(1, -1)))).toEqual(partitions[name][i]?.bytes);
        expect(tokenizer.decodeDocument(got?.tokens ?? [])).toEqual(partitions[name][i]?.bytes);
      });
    }
    expect([total(encoded.train), total(encoded.validation), total(encoded.test)]).toEqual([1852, 471, 444]);
  });

  it('checks and trains the small corpora where training stops early', () => {
    for (const c of trace.small_training_corpora) {
      const corpus = parseCorpus(enc.encode(c.corpus_json));
      expect(corpus.checksum).toBe(c.corpus_checksum);
      const partitions = { train: corpus.documents.filter((d) => c.train_ids.includes(d.id)), validation: [], test: [] };
      expect(partitions.train.map((d) => d.id)).toEqual(c.train_ids);
      expect(trainTokenizerOnTrainSplit(partitions, c.requested_merges).learnedMerges).toBe(c.learned_merges);
    }
  });
});

describe('causal windows', () => {
  it('reproduces the ch05 examples at strides 1 and 2, and the too-short document', () => {
    for (const fixture of [trace.causal_windows.ch05_fixture, trace.causal_windows.ch05_fixture_stride_2]) {
      const windows = causalWindows([fixture.source], fixture.context_length, fixture.stride);
      expect(windows.map((w) => w.start)).toEqual(fixture.windows.map((w) => w.start));
      const batch = gatherBatch([fixture.source], windows, fixture.context_length);
      expect([batch.rows, batch.columns]).toEqual([fixture.windows.length, fixture.context_length]);
      expect(Array.from(batch.inputs)).toEqual(fixture.windows.flatMap((w) => w.input));
      expect(Array.from(batch.targets)).toEqual(fixture.windows.flatMap((w) => w.target));
      expect(fixture.incomplete_tail.start).toBe((windows.at(-1)?.start ?? 0) + fixture.stride);
    }
    const short = trace.causal_windows.short_document;
    expect(causalWindows([short.source], short.context_length, short.stride)).toHaveLength(short.window_count);
    expect(windowCount(short.source.length, short.context_length, short.stride)).toBe(short.window_count);
  });

  it('gives the reference window counts of the encoded corpus for every context/stride setting', () => {
    const { partitions } = load();
    const encoded = encodeAll(trainTokenizerOnTrainSplit(partitions, 8).tokenizer, partitions);
    for (const setting of trace.causal_windows.bilingual_8_merge_window_counts) {
      for (const name of PARTITION_NAMES) {
        const tokens = encoded[name].map((d) => d.tokens);
        const windows = causalWindows(tokens, setting.context_length, setting.stride);
        const label = `T=${setting.context_length} S=${setting.stride} ${name}`;
        expect(windows.length, label).toBe(setting.windows[name]);
        expect(tokens.reduce((n, t) => n + windowCount(t.length, setting.context_length, setting.stride), 0), label).toBe(setting.windows[name]);
      }
    }
    const t3 = PARTITION_NAMES.map((name) => causalWindows(encoded[name].map((d) => d.tokens), 3).length);
    expect(t3).toEqual([1828, 465, 438]);
  });
});

describe('SplitMix64 and the Fisher–Yates shuffle', () => {
  it('matches the first raw outputs and unit draws for seed 7', () => {
    const sm = trace.splitmix64;
    const raw = new SplitMix64(BigInt(sm.seed));
    expect(sm.first_next_u64.map(() => `0x${raw.nextU64().toString(16).padStart(16, '0')}`)).toEqual(sm.first_next_u64);
    const unit = new SplitMix64(BigInt(sm.seed));
    const view = new DataView(new ArrayBuffer(8));
    expect(
      sm.first_next_unit_f64_bits.map(() => {
        view.setFloat64(0, unit.nextUnit());
        return `0x${view.getBigUint64(0).toString(16).padStart(16, '0')}`;
      }),
    ).toEqual(sm.first_next_unit_f64_bits);
  });

  it('shuffles one document of ten windows with seed 5', () => {
    const ex = trace.shuffle_examples.one_document_ten_windows;
    const windows = causalWindows([ex.document_tokens], ex.context_length, ex.stride);
    const rng = new SplitMix64(BigInt(ex.seed));
    shuffleInPlace(windows, rng);
    expect(windows.map((w) => w.start)).toEqual(ex.window_starts_in_shuffled_order);
    expect(`0x${rng.state.toString(16).padStart(16, '0')}`).toBe(ex.rng_state_after_shuffle);
    const batches = UpdateBatches.create(windows.length, { batchSize: ex.batch_size, shuffleSeed: BigInt(ex.seed) });
    expect(Array.from(batches.next().windowIndices)).toEqual(ex.window_starts_in_shuffled_order);
  });

  it('shuffles the encoded train windows (T = 3, batch 5) with seed 7 and lists them sequentially', () => {
    const { partitions } = load();
    const train = encodeDocuments(trainTokenizerOnTrainSplit(partitions, 8).tokenizer, partitions.train);
    const tokens = train.map((d) => d.tokens);
    const windows = causalWindows(tokens, 3);
    const shuffledEx = trace.shuffle_examples.bilingual_train_context3_batch5_seed7;
    expect(windows.length).toBe(shuffledEx.window_count);

    const shuffled = windows.slice();
    const rng = new SplitMix64(7n);
    shuffleInPlace(shuffled, rng);
    expect(`0x${rng.state.toString(16).padStart(16, '0')}`).toBe(shuffledEx.rng_state_after_shuffle);
    const batches = evaluationBatches(shuffled, 5);
    expect(batches.length).toBe(shuffledEx.batch_count);
    shuffledEx.first_two_batches.forEach((expected, b) => {
      const batch = batches[b] ?? [];
      expect(batch.map((w) => windowLabel(train, w))).toEqual(expected.windows);
      const gathered = gatherBatch(tokens, batch, 3);
      expect(Array.from(gathered.inputs)).toEqual(expected.inputs);
      expect(Array.from(gathered.targets)).toEqual(expected.targets);
    });
    expect(batches.at(-1)?.length).toBe(shuffledEx.last_batch_width);
    expect(batches.at(-1)?.map((w) => windowLabel(train, w))).toEqual(shuffledEx.last_batch_windows);

    // The same through the resumable iterator over window indices.
    const updates = UpdateBatches.create(windows.length, { batchSize: 5, shuffleSeed: 7n });
    expect(updates.batchCount).toBe(shuffledEx.batch_count);
    expect(Array.from(updates.next().windowIndices, (i) => windowLabel(train, windows[i] ?? { documentIndex: -1, start: -1 }))).toEqual(shuffledEx.first_two_batches[0]?.windows);
    expect(updates.state().rngState).toBe(BigInt(shuffledEx.rng_state_after_shuffle));

    const sequentialEx = trace.shuffle_examples.bilingual_train_context3_batch5_sequential;
    const sequential = evaluationBatches(windows, 5);
    expect(sequential.length).toBe(sequentialEx.batch_count);
    expect(sequential[0]?.map((w) => windowLabel(train, w))).toEqual(sequentialEx.first_batch_windows);
    expect(sequential.at(-1)?.map((w) => windowLabel(train, w))).toEqual(sequentialEx.last_batch_windows);
    const first = gatherBatch(tokens, sequential[0] ?? [], 3);
    expect(Array.from(first.inputs)).toEqual(sequentialEx.first_batch_inputs);
    expect(Array.from(first.targets)).toEqual(sequentialEx.first_batch_targets);
  });

  it('builds the chapter-39 update list: T = 4, seed 39, more than 32 batches of 16, none repeated in 32 updates', () => {
    const { partitions } = load();
    const train = encodeDocuments(trainTokenizerOnTrainSplit(partitions, 8).tokenizer, partitions.train).map((d) => d.tokens);
    const windows = causalWindows(train, 4);
    const updates = UpdateBatches.create(windows.length, { batchSize: 16, shuffleSeed: 39n });
    expect(updates.batchCount).toBeGreaterThan(32);
    const seen = new Set<number>();
    for (let step = 1; step <= 32; step++) {
      const batch = updates.next();
      expect(batch.batchIndex).toBe(step - 1);
      expect(batch.windowIndices.length).toBe(16);
      for (const w of batch.windowIndices) seen.add(w);
    }
    expect(seen.size).toBe(32 * 16);
  });
});
