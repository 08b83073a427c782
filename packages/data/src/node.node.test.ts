import { mkdtempSync, mkdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DATA_ERROR_CODES } from './errors.ts';
import { bundledCorpusFiles, loadSplitCorpus, loadTextCorpus, readCorpusFile } from './node.ts';
import { dataErrorOfAsync } from '../test/helpers.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'llmcp-data-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('bundledCorpusFiles / loadSplitCorpus', () => {
  it('loads the shipped bilingual corpus and split', async () => {
    const files = bundledCorpusFiles('tiny-bilingual');
    expect(files.every((f) => existsSync(f))).toBe(true);
    expect(existsSync(path.join(path.dirname(files[0]), 'LICENSE-NOTE.md'))).toBe(true);
    const { corpus, partitions } = await loadSplitCorpus(...files);
    expect(corpus.checksum).toBe('fnv1a64:723b071980ae8a22');
    expect([partitions.train.length, partitions.validation.length, partitions.test.length]).toEqual([8, 2, 2]);
  });

  it('reports unreadable files as DATA_IO with the path', async () => {
    const missing = path.join(dir, 'missing.json');
    const error = await dataErrorOfAsync(() => readCorpusFile(missing));
    expect([error.code, error.path]).toEqual([DATA_ERROR_CODES.DATA_IO, missing]);
    expect(error.cause).toBeInstanceOf(Error);
  });
});

describe('loadTextCorpus', () => {
  it('reads one file, or every .txt and .jsonl below a folder (sorted, hidden entries skipped)', async () => {
    const root = path.join(dir, 'stories');
    mkdirSync(path.join(root, 'part2'), { recursive: true });
    mkdirSync(path.join(root, '.hidden'), { recursive: true });
    writeFileSync(path.join(root, 'b.txt'), 'Bee.\n\nBird.\n');
    writeFileSync(path.join(root, 'part2', 'a.txt'), 'Ant.');
    writeFileSync(path.join(root, 'notes.md'), 'not a corpus file');
    writeFileSync(path.join(root, 'c.jsonl'), '{"text":"Cat."}\n');
    writeFileSync(path.join(root, '.hidden', 'x.txt'), 'hidden');
    const corpus = await loadTextCorpus(root);
    expect(corpus.documents.map((d) => d.id)).toEqual(['b.txt#1', 'b.txt#2', 'c.jsonl#1', 'part2/a.txt#1']);
    const single = await loadTextCorpus(path.join(root, 'b.txt'), { documents: 'file' });
    expect(single.documents.map((d) => [d.id, d.text])).toEqual([['b.txt', 'Bee.\n\nBird.\n']]);
  });

  it('rejects folders without .txt or .jsonl files and missing paths', async () => {
    const empty = path.join(dir, 'empty');
    mkdirSync(empty);
    const none = await dataErrorOfAsync(() => loadTextCorpus(empty));
    expect([none.code, none.message]).toEqual([DATA_ERROR_CODES.DATA_TEXT_CORPUS_INVALID, `folder ${empty} contains no .txt or .jsonl files`]);
    expect((await dataErrorOfAsync(() => loadTextCorpus(path.join(dir, 'nope')))).code).toBe(DATA_ERROR_CODES.DATA_IO);
  });
});
