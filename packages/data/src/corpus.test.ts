import { describe, expect, it } from 'vitest';
import { corpusChecksum, isBlankText, isKebabIdentifier, parseCorpus } from './corpus.ts';
import { DATA_ERROR_CODES, type DataErrorCode } from './errors.ts';
import { dataErrorOf } from '../test/helpers.ts';

const enc = new TextEncoder();
const doc = (id: string, text: string, extra = ''): string => `{"id":"${id}","language":"en","provenance_group":"g-${id}","text":${JSON.stringify(text)}${extra}}`;
const corpusOf = (...docs: string[]): Uint8Array => enc.encode(`[${docs.join(',')}]`);

function rejects(bytes: Uint8Array, code: DataErrorCode): ReturnType<typeof dataErrorOf> {
  const error = dataErrorOf(() => parseCorpus(bytes));
  expect(error.code, error.message).toBe(code);
  return error;
}

describe('parseCorpus', () => {
  it('accepts a minimal corpus and keeps texts exactly (no trim, no normalization)', () => {
    const corpus = parseCorpus(corpusOf(doc('en-1', '  e\u0301 \r\n'), doc('en-2', '\ufeff')));
    expect(corpus.documents.map((d) => d.text)).toEqual(['  e\u0301 \r\n', '\ufeff']);
    expect(Array.from(corpus.documents[1]?.bytes ?? [])).toEqual([0xef, 0xbb, 0xbf]);
    expect(corpus.checksum).toBe(corpusChecksum(corpusOf(doc('en-1', '  e\u0301 \r\n'), doc('en-2', '\ufeff'))));
  });

  it('decodes escapes, including surrogate pairs, and accepts JSON whitespace', () => {
    const bytes = enc.encode(' [\t{"id":"a\\u002db","language":"en","provenance_group":"g","text":"\\ud83e\\udd80 \\u00e9\\n\\"\\/"}\r\n]\n');
    const [d] = parseCorpus(bytes).documents;
    expect(d?.id).toBe('a-b');
    expect(d?.text).toBe('🦀 é\n"/');
    expect(Array.from(d?.bytes.subarray(0, 4) ?? [])).toEqual([0xf0, 0x9f, 0xa6, 0x80]);
  });

  it('rejects each kind of malformed JSON the spec lists, with the byte offset', () => {
    const good = doc('a', 'x');
    const head = '[{"id":"a","language":"en","provenance_group":"g","text":';
    // [input, byte offset of the problem]; offsets are computed from the text (ASCII, so index = byte offset).
    const at = (input: string, marker: string, shift = 0): [string, number] => [input, input.indexOf(marker) + shift];
    const cases: [string | Uint8Array, number][] = [
      [new Uint8Array([0xef, 0xbb, 0xbf, ...enc.encode(`[${good}]`)]), 0], // BOM
      [new Uint8Array([0x5b, 0xff, 0x5d]), 1], // invalid UTF-8
      at(`[${good},]`, ',]', 1), // trailing comma in array
      at(`${head}"x",}]`, ',}', 1), // trailing comma in object
      at(`[${good}] // c`, '//'), // comment
      [`/* c */ [${good}]`, 0],
      at(`[${good}] x`, ' x', 1), // trailing data
      [`[${good}]\u00a0`, good.length + 2], // NBSP is not JSON whitespace
      at('[{"id":"a","id":"b","language":"en","provenance_group":"g","text":"x"}]', '"id":"b"'), // duplicate key
      at(`${head}"\\ud800"}]`, '\\ud800'), // lone high surrogate
      at(`${head}"\\udc00x"}]`, '\\udc00'), // lone low surrogate
      at(`${head}"\\ud800\\u0041"}]`, '\\ud800'), // high surrogate + non-low
      at(`${head}"a\tb"}]`, '\t'), // raw control character
      at(`${head}"\\x"}]`, 'x"}'), // bad escape
      [`${head}"x"}`, `${head}"x"}`.length], // truncated
      [`[01]`, 1], // leading zero
      [`[1.]`, 3],
      [`[.5]`, 1],
      [`[+1]`, 1],
      [`[NaN]`, 1],
      [`[{'id':'a'}]`, 2],
      [``, 0],
      ['['.repeat(200) + ']'.repeat(200), 128], // nesting bomb: refused, no stack overflow
    ];
    for (const [input, offset] of cases) {
      const bytes = typeof input === 'string' ? enc.encode(input) : input;
      const error = rejects(bytes, DATA_ERROR_CODES.DATA_CORPUS_INVALID_JSON);
      expect(error.offset, `${error.message} <- ${String(input).slice(0, 40)}`).toBe(offset);
    }
  });

  it('rejects schema violations naming the document and member', () => {
    const cases: [string, number | undefined, string][] = [
      [`{"id":"a"}`, undefined, '(root)'],
      [`["x"]`, 0, ''],
      [`[${doc('a', 'x')},{"id":"b","language":"en","provenance_group":"g","text":"y","extra":"z"}]`, 1, 'extra'],
      [`[{"id":"a","language":"en","provenance_group":"g"}]`, 0, 'text'],
      [`[{"id":"a","language":"en","provenance_group":null,"text":"x"}]`, 0, 'provenance_group'],
      [`[{"id":1,"language":"en","provenance_group":"g","text":"x"}]`, 0, 'id'],
    ];
    for (const [json, documentIndex, field] of cases) {
      const error = rejects(enc.encode(json), DATA_ERROR_CODES.DATA_CORPUS_INVALID_SCHEMA);
      expect(error.documentIndex, json).toBe(documentIndex);
      if (field !== '') expect(error.field, json).toBe(field);
      expect(error.offset).toBeTypeOf('number');
    }
  });

  it('rejects an empty corpus', () => {
    rejects(enc.encode('[]'), DATA_ERROR_CODES.DATA_CORPUS_EMPTY);
    rejects(enc.encode(' [ ] \n'), DATA_ERROR_CODES.DATA_CORPUS_EMPTY);
  });

  it('checks id, language and provenance group as kebab identifiers, in that order', () => {
    for (const bad of ['1en', 'en-', 'en--one', 'En-one', 'en_one', '', '-en', 'én']) {
      const error = rejects(corpusOf(doc('ok', 'a'), doc(bad, 'b')), DATA_ERROR_CODES.DATA_DOCUMENT_INVALID_IDENTIFIER);
      expect([error.documentIndex, error.field], bad).toEqual([1, 'id']);
      expect(error.message).toContain('document 2');
    }
    const language = rejects(enc.encode('[{"id":"a","language":"EN","provenance_group":"G","text":"x"}]'), DATA_ERROR_CODES.DATA_DOCUMENT_INVALID_IDENTIFIER);
    expect(language.field).toBe('language');
    const group = rejects(enc.encode('[{"id":"a","language":"en","provenance_group":"G","text":"x"}]'), DATA_ERROR_CODES.DATA_DOCUMENT_INVALID_IDENTIFIER);
    expect([group.field, group.documentId]).toEqual(['provenance_group', 'a']);
    expect(['en-1', 'a', 'pair-river-dawn', 'x9-0'].every(isKebabIdentifier)).toBe(true);
  });

  it('rejects blank texts by the Unicode White_Space rule, not String.prototype.trim', () => {
    for (const blank of ['', ' ', '\t\n\u000b\u000c\r', '\u0085', '\u00a0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000']) {
      const error = rejects(corpusOf(doc('a', blank)), DATA_ERROR_CODES.DATA_DOCUMENT_EMPTY_TEXT);
      expect([error.documentIndex, error.documentId]).toEqual([0, 'a']);
    }
    // U+FEFF and U+200B are not White_Space: such texts are accepted.
    expect(parseCorpus(corpusOf(doc('a', '\ufeff'), doc('b', '\u200b'))).documents).toHaveLength(2);
    expect(isBlankText('\u0085')).toBe(true);
    expect('\u0085'.trim()).toBe('\u0085');
    expect(isBlankText('\ufeff')).toBe(false);
    expect('\ufeff'.trim()).toBe('');
  });

  it('rejects repeated ids and repeated texts (exact string equality), naming the later document', () => {
    const id = rejects(corpusOf(doc('a', 'x'), doc('b', 'y'), doc('a', 'z')), DATA_ERROR_CODES.DATA_DUPLICATE_DOCUMENT_ID);
    expect([id.documentIndex, id.documentId]).toEqual([2, 'a']);
    const text = rejects(corpusOf(doc('a', 'same'), doc('b', 'same')), DATA_ERROR_CODES.DATA_DUPLICATE_DOCUMENT_TEXT);
    expect([text.documentIndex, text.documentId]).toEqual([1, 'b']);
    // NFC vs NFD and case differences are different texts.
    expect(parseCorpus(corpusOf(doc('a', '\u00e9'), doc('b', 'e\u0301'), doc('c', 'E\u0301'))).documents).toHaveLength(3);
  });

  it('stops at the first failing document in file order', () => {
    const error = dataErrorOf(() => parseCorpus(corpusOf(doc('a', ' '), doc('B', 'x'))));
    expect([error.code, error.documentIndex]).toEqual([DATA_ERROR_CODES.DATA_DOCUMENT_EMPTY_TEXT, 0]);
  });

  it('hashes the exact file bytes: one changed byte changes the checksum', () => {
    const a = corpusOf(doc('a', 'x'));
    const b = enc.encode(`${new TextDecoder().decode(a)}\n`);
    expect(parseCorpus(a).checksum).not.toBe(parseCorpus(b).checksum);
    expect(corpusChecksum(enc.encode('hello'))).toBe('fnv1a64:a430d84680aabd0b');
  });
});
