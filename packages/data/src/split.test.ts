import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseCorpus } from './corpus.ts';
import { DATA_ERROR_CODES, type DataErrorCode } from './errors.ts';
import { bundledCorpusFiles } from './node.ts';
import { parseSplitManifest, partitionCorpus, type SplitManifest } from './split.ts';
import { dataErrorOf } from '../test/helpers.ts';

const enc = new TextEncoder();
const [corpusFile, manifestFile] = bundledCorpusFiles('tiny-bilingual');
const corpus = parseCorpus(new Uint8Array(readFileSync(corpusFile)));
const manifestText = readFileSync(manifestFile, 'utf8');
const manifest = parseSplitManifest(enc.encode(manifestText));

function withManifest(change: Partial<SplitManifest>): SplitManifest {
  return { ...manifest, ...change };
}

function rejectsSplit(m: SplitManifest, code: DataErrorCode): ReturnType<typeof dataErrorOf> {
  const error = dataErrorOf(() => partitionCorpus(corpus, m));
  expect(error.code, error.message).toBe(code);
  return error;
}

function manifestJson(replace: (text: string) => string): Uint8Array {
  return enc.encode(replace(manifestText));
}

describe('parseSplitManifest', () => {
  it('reads the shipped manifest', () => {
    expect(manifest.schemaVersion).toBe(1);
    expect(manifest.corpusChecksum).toBe('fnv1a64:723b071980ae8a22');
    expect(manifest.strategy).toBe('fixed-paired-document-holdout-v1');
    expect([manifest.train.length, manifest.validation.length, manifest.test.length]).toEqual([8, 2, 2]);
  });

  it('accepts only plain unsigned 32-bit integers as schema_version', () => {
    for (const bad of ['1.0', '1e0', '-0', '"1"', '-1', '4294967296', 'null', '1E0']) {
      const error = dataErrorOf(() => parseSplitManifest(manifestJson((t) => t.replace('"schema_version": 1', `"schema_version": ${bad}`))));
      expect(error.code, bad).toBe(DATA_ERROR_CODES.DATA_SPLIT_INVALID_SCHEMA);
      expect(error.field, bad).toBe('schema_version');
    }
    for (const ok of ['0', '2', '4294967295']) {
      expect(parseSplitManifest(manifestJson((t) => t.replace('"schema_version": 1', `"schema_version": ${ok}`))).schemaVersion).toBe(Number(ok));
    }
  });

  it('rejects unknown, missing, repeated and mistyped members', () => {
    const schema: [(t: string) => string, string][] = [
      [(t) => t.replace('"strategy"', '"extra": 1, "strategy"'), 'extra'],
      [(t) => t.replace(/"strategy": "[^"]*",/, ''), 'strategy'],
      [(t) => t.replace('"train": [', '"train": [1, '), 'train[0]'],
      [(t) => t.replace(/"test": \[[^\]]*\]/, '"test": "en-winter-window"'), 'test'],
      [(t) => t.replace(/"corpus_checksum": "[^"]*"/, '"corpus_checksum": null'), 'corpus_checksum'],
    ];
    for (const [edit, field] of schema) {
      const error = dataErrorOf(() => parseSplitManifest(manifestJson(edit)));
      expect([error.code, error.field]).toEqual([DATA_ERROR_CODES.DATA_SPLIT_INVALID_SCHEMA, field]);
    }
    const repeated = dataErrorOf(() => parseSplitManifest(manifestJson((t) => t.replace('"strategy"', '"test": [], "strategy"'))));
    expect(repeated.code).toBe(DATA_ERROR_CODES.DATA_SPLIT_INVALID_JSON);
    expect(dataErrorOf(() => parseSplitManifest(enc.encode('[]'))).code).toBe(DATA_ERROR_CODES.DATA_SPLIT_INVALID_SCHEMA);
    expect(dataErrorOf(() => parseSplitManifest(enc.encode('{,}'))).offset).toBe(1);
  });
});

describe('partitionCorpus', () => {
  it('divides the bilingual corpus 8 / 2 / 2 in source order', () => {
    const p = partitionCorpus(corpus, manifest);
    expect(p.train.map((d) => d.id)).toEqual(manifest.train);
    expect(p.validation.map((d) => d.id)).toEqual(['en-night-station', 'ru-night-station']);
    expect(p.test.map((d) => d.id)).toEqual(['en-winter-window', 'ru-winter-window']);
  });

  it('checks version, strategy and checksum first, in that order', () => {
    rejectsSplit(withManifest({ schemaVersion: 2, strategy: 'x', corpusChecksum: 'y' }), DATA_ERROR_CODES.DATA_SPLIT_UNSUPPORTED_VERSION);
    rejectsSplit(withManifest({ strategy: 'random-v1', corpusChecksum: 'y' }), DATA_ERROR_CODES.DATA_SPLIT_UNSUPPORTED_STRATEGY);
    const checksum = rejectsSplit(withManifest({ corpusChecksum: 'fnv1a64:0000000000000000' }), DATA_ERROR_CODES.DATA_SPLIT_CHECKSUM_MISMATCH);
    expect(checksum.message).toContain('fnv1a64:723b071980ae8a22');
  });

  it('refuses a corpus whose bytes changed (one more newline)', () => {
    const changed = parseCorpus(new Uint8Array([...readFileSync(corpusFile), 0x0a]));
    expect(dataErrorOf(() => partitionCorpus(changed, manifest)).code).toBe(DATA_ERROR_CODES.DATA_SPLIT_CHECKSUM_MISMATCH);
  });

  it('rejects empty partitions and lists out of source order or repeating an id', () => {
    const empty = rejectsSplit(withManifest({ validation: [] }), DATA_ERROR_CODES.DATA_SPLIT_EMPTY_PARTITION);
    expect(empty.partition).toBe('validation');
    const order = rejectsSplit(withManifest({ test: ['ru-winter-window', 'en-winter-window'] }), DATA_ERROR_CODES.DATA_SPLIT_ORDER);
    expect([order.partition, order.documentId]).toEqual(['test', 'en-winter-window']);
    const twice = rejectsSplit(withManifest({ test: ['en-winter-window', 'en-winter-window', 'ru-winter-window'] }), DATA_ERROR_CODES.DATA_SPLIT_ORDER);
    expect(twice.documentId).toBe('en-winter-window');
    // The order check skips unknown ids; the unknown id is reported by the next step.
    const unknown = rejectsSplit(withManifest({ test: ['en-winter-window', 'zz-unknown', 'ru-winter-window'] }), DATA_ERROR_CODES.DATA_SPLIT_UNKNOWN_DOCUMENT);
    expect([unknown.partition, unknown.documentId]).toEqual(['test', 'zz-unknown']);
  });

  it('rejects ids in two lists, uncovered documents and split provenance groups', () => {
    const both = rejectsSplit(withManifest({ test: ['en-river-dawn', 'en-winter-window', 'ru-winter-window'] }), DATA_ERROR_CODES.DATA_SPLIT_REPEATED_DOCUMENT);
    expect([both.partition, both.documentId]).toEqual(['test', 'en-river-dawn']);
    const uncovered = rejectsSplit(withManifest({ test: ['en-winter-window'] }), DATA_ERROR_CODES.DATA_SPLIT_UNCOVERED_DOCUMENT);
    expect(uncovered.documentId).toBe('ru-winter-window');
    const group = rejectsSplit(
      withManifest({ validation: ['en-night-station', 'ru-night-station', 'en-winter-window'], test: ['ru-winter-window'] }),
      DATA_ERROR_CODES.DATA_SPLIT_GROUP_SPLIT,
    );
    expect(group.message).toContain('pair-winter-window');
    expect(group.message).toContain('validation and test');
  });
});
