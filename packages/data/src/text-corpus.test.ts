import { describe, expect, it } from 'vitest';
import { corpusChecksum } from './corpus.ts';
import { DATA_ERROR_CODES } from './errors.ts';
import { hashSplit, parseTextCorpus } from './text-corpus.ts';
import { dataErrorOf } from '../test/helpers.ts';

const enc = new TextEncoder();
const source = (path: string, text: string | Uint8Array): { path: string; bytes: Uint8Array } => ({ path, bytes: typeof text === 'string' ? enc.encode(text) : text });

describe('parseTextCorpus', () => {
  it('splits paragraphs at blank lines, normalizes line endings, drops a BOM', () => {
    const corpus = parseTextCorpus([source('b.txt', '\ufeffOne line.\r\nSecond line.\r\n \t\r\n\r\nNext story.\rEnd.\n'), source('a.txt', 'Alpha.')], { documents: 'paragraphs' });
    expect(corpus.documents.map((d) => [d.id, d.text])).toEqual([
      ['a.txt#1', 'Alpha.'],
      ['b.txt#1', 'One line.\nSecond line.'],
      ['b.txt#2', 'Next story.\nEnd.'],
    ]);
    expect(corpus.documents.map((d) => d.index)).toEqual([0, 1, 2]);
    expect(corpus.files.map((f) => [f.path, f.documentCount])).toEqual([
      ['a.txt', 1],
      ['b.txt', 2],
    ]);
    expect(corpus.files[0]?.checksum).toBe(corpusChecksum(enc.encode('Alpha.')));
    expect(corpus.documents[1]?.bytes).toEqual(enc.encode('One line.\nSecond line.'));
  });

  it('offers line and whole-file rules and keeps repeated texts', () => {
    const text = 'x\n\u0085\ny\nx\n';
    expect(parseTextCorpus([source('t.txt', text)], { documents: 'paragraphs' }).documents.map((d) => d.text)).toEqual(['x', 'y\nx']);
    expect(parseTextCorpus([source('t.txt', text)], { documents: 'lines' }).documents.map((d) => d.text)).toEqual(['x', 'y', 'x']);
    expect(parseTextCorpus([source('t.txt', text)], { documents: 'file' }).documents.map((d) => [d.id, d.text])).toEqual([['t.txt', text]]);
  });

  it('chooses by default, per file: JSON Lines for .jsonl, paragraphs where blank lines separate text, else one document per line', () => {
    const corpus = parseTextCorpus([
      source('verses.txt', 'In the beginning.\nAnd the earth.\n'),
      source('chapters.txt', 'One.\nTwo.\n\nThree.\n'),
      source('leading.txt', '\n\nx\ny\n\n'),
      source('records.jsonl', '{"text":"first","id":1}\n\n{"text":" "}\n{"text":"second\\nline"}\n'),
    ]);
    expect(corpus.documents.map((d) => [d.id, d.text])).toEqual([
      ['chapters.txt#1', 'One.\nTwo.'],
      ['chapters.txt#2', 'Three.'],
      ['leading.txt#1', 'x'],
      ['leading.txt#2', 'y'],
      ['records.jsonl#1', 'first'],
      ['records.jsonl#2', 'second\nline'],
      ['verses.txt#1', 'In the beginning.'],
      ['verses.txt#2', 'And the earth.'],
    ]);
    expect(corpus.files.map((f) => [f.path, f.documents, f.documentCount, f.skippedRecords])).toEqual([
      ['chapters.txt', 'paragraphs', 2, 0],
      ['leading.txt', 'lines', 2, 0],
      ['records.jsonl', 'jsonl', 2, 1],
      ['verses.txt', 'lines', 2, 0],
    ]);
    expect(parseTextCorpus([source('t.jsonl', '{"text":"a"}')], { documents: 'lines' }).documents[0]?.text).toBe('{"text":"a"}');
    expect(parseTextCorpus([source('t.txt', '{"text":"a"}')], { documents: 'jsonl' }).documents[0]?.text).toBe('a');
  });

  it('refuses a JSON Lines record that is not JSON or has no string text, naming the file and line', () => {
    for (const [text, message] of [
      ['{"text":"ok"}\n{"text":', /records\.jsonl, line 2: not JSON/],
      ['{"text":"ok"}\n\n[1]', /records\.jsonl, line 3: expected an object with a string member "text"/],
      ['{"body":"x"}', /line 1: expected an object/],
      ['{"text":7}', /line 1: expected an object/],
    ] as const) {
      const error = dataErrorOf(() => parseTextCorpus([source('records.jsonl', text)]));
      expect([error.code, error.path]).toEqual([DATA_ERROR_CODES.DATA_TEXT_CORPUS_INVALID, 'records.jsonl']);
      expect(error.message).toMatch(message);
    }
    expect(() => parseTextCorpus([source('a.txt', 'x')], { documents: 'sentences' as never })).toThrow(RangeError);
  });

  it('has a checksum over paths, lengths and exact bytes, independent of input order', () => {
    const a = parseTextCorpus([source('a.txt', 'x'), source('b.txt', 'y')]);
    const b = parseTextCorpus([source('b.txt', 'y'), source('a.txt', 'x')]);
    expect(a.checksum).toBe(b.checksum);
    expect(parseTextCorpus([source('a.txt', 'x'), source('c.txt', 'y')]).checksum).not.toBe(a.checksum);
    expect(parseTextCorpus([source('a.txt', 'x\r\n')]).checksum).not.toBe(parseTextCorpus([source('a.txt', 'x\n')]).checksum);
  });

  it('rejects invalid UTF-8 with the file and byte offset, repeated paths and empty corpora', () => {
    const bad = dataErrorOf(() => parseTextCorpus([source('ok.txt', 'fine'), source('bad.txt', Uint8Array.of(0x61, 0x62, 0xc3, 0x28))]));
    expect([bad.code, bad.path, bad.offset]).toEqual([DATA_ERROR_CODES.DATA_TEXT_CORPUS_INVALID, 'bad.txt', 2]);
    expect(dataErrorOf(() => parseTextCorpus([source('a.txt', 'x'), source('a.txt', 'y')])).path).toBe('a.txt');
    expect(dataErrorOf(() => parseTextCorpus([source('a.txt', ' \n\n\u3000')])).code).toBe(DATA_ERROR_CODES.DATA_TEXT_CORPUS_INVALID);
    expect(dataErrorOf(() => parseTextCorpus([])).code).toBe(DATA_ERROR_CODES.DATA_TEXT_CORPUS_INVALID);
  });
});

describe('hashSplit', () => {
  it('assigns each group by its name alone, keeping source order', () => {
    const text = Array.from({ length: 400 }, (_, i) => `Story number ${i}.`).join('\n\n');
    const corpus = parseTextCorpus([source('s.txt', text)]);
    const split = hashSplit(corpus, { validationFraction: 0.1, testFraction: 0.05 });
    const total = split.train.length + split.validation.length + split.test.length;
    expect(total).toBe(400);
    expect(split.validation.length).toBeGreaterThan(15);
    expect(split.validation.length).toBeLessThan(70);
    expect(split.test.length).toBeGreaterThan(5);
    expect(split.test.length).toBeLessThan(45);
    for (const part of [split.train, split.validation, split.test]) expect(part.map((d) => d.index)).toEqual([...part.map((d) => d.index)].sort((a, b) => a - b));
    // Adding documents does not move existing ones.
    const grown = hashSplit(parseTextCorpus([source('s.txt', `${text}\n\nOne more.`)]), { validationFraction: 0.1, testFraction: 0.05 });
    expect(grown.validation.map((d) => d.id).filter((id) => id !== 's.txt#401')).toEqual(split.validation.map((d) => d.id));
    expect(() => hashSplit(corpus, { validationFraction: 0.7, testFraction: 0.5 })).toThrow(RangeError);
    expect(hashSplit(corpus, { validationFraction: 0 }).train).toHaveLength(400);
  });
});
