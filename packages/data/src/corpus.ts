/**
 * The JSON corpus, loaded with the reference's strict rules
 * (../../../docs/spec/tokenizer-and-data.md §1.1–1.4).
 */
import { checksumLabel, fnv1a64 } from '@llmcp/format';
import { DATA_ERROR_CODES, DataError } from './errors.ts';
import { parseStrictJson, StrictJsonError, type JsonNode } from './internal/strict-json.ts';

/** One accepted document. Its text is exactly the decoded JSON string: never trimmed or normalized. */
export interface CorpusDocument {
  /** 0-based position in the corpus (source order). */
  readonly index: number;
  /** Stable identity, a kebab identifier. */
  readonly id: string;
  /** Language tag, a kebab identifier. */
  readonly language: string;
  /** Group of documents that are translations of each other. */
  readonly provenanceGroup: string;
  /** The text. */
  readonly text: string;
  /** The UTF-8 bytes of `text` (what tokenizers see). */
  readonly bytes: Uint8Array;
}

/** An accepted corpus. */
export interface Corpus {
  /** Documents in source (file) order. */
  readonly documents: readonly CorpusDocument[];
  /** `fnv1a64:<16 hex>` over the exact file bytes (§1.4). */
  readonly checksum: string;
  /** Size of the file in bytes. */
  readonly byteLength: number;
}

/**
 * The corpus checksum: FNV-1a 64 over the exact bytes of the file, as a label.
 *
 * @param bytes - the file's bytes, as read (never a re-serialization).
 * @returns `fnv1a64:<16 lowercase hex digits>`.
 * @example
 * ```ts
 * corpusChecksum(new TextEncoder().encode('hello')); // 'fnv1a64:a430d84680aabd0b'
 * ```
 */
export function corpusChecksum(bytes: Uint8Array): string {
  return checksumLabel(fnv1a64(bytes));
}

/**
 * Whether `value` is a lowercase ASCII kebab identifier (§1.3): non-empty,
 * `-`-separated non-empty parts of `a`–`z` and `0`–`9`, starting with a letter.
 *
 * @param value - any string.
 * @returns true for e.g. `en-1`, false for `1en`, `en-`, `en--one`, `En-one`, `en_one`, ``.
 */
export function isKebabIdentifier(value: string): boolean {
  return /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/.test(value);
}

/**
 * Whether a code point is Unicode White_Space, the reference's set (§1.3):
 * U+0009–U+000D, U+0020, U+0085, U+00A0, U+1680, U+2000–U+200A, U+2028,
 * U+2029, U+202F, U+205F, U+3000. (U+FEFF is not; `String.prototype.trim`
 * disagrees on U+FEFF and U+0085.)
 *
 * @param codePoint - a code point.
 * @returns true when it is White_Space.
 */
export function isUnicodeWhiteSpace(codePoint: number): boolean {
  return (
    (codePoint >= 0x09 && codePoint <= 0x0d) ||
    codePoint === 0x20 ||
    codePoint === 0x85 ||
    codePoint === 0xa0 ||
    codePoint === 0x1680 ||
    (codePoint >= 0x2000 && codePoint <= 0x200a) ||
    codePoint === 0x2028 ||
    codePoint === 0x2029 ||
    codePoint === 0x202f ||
    codePoint === 0x205f ||
    codePoint === 0x3000
  );
}

/**
 * Whether a text is empty after removing White_Space at both ends, i.e. it
 * has no non-White_Space character (§1.3 rule 2).
 *
 * @param text - any string.
 * @returns true when the text is blank.
 */
export function isBlankText(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    if (!isUnicodeWhiteSpace(text.charCodeAt(i))) return false;
  }
  return true;
}

const MEMBERS = ['id', 'language', 'provenance_group', 'text'] as const;
const ENCODER = new TextEncoder();

function schemaError(message: string, node: JsonNode, context: { documentIndex?: number; field?: string }): DataError {
  return new DataError(DATA_ERROR_CODES.DATA_CORPUS_INVALID_SCHEMA, `invalid corpus JSON at byte ${node.offset}: ${message}`, { ...context, offset: node.offset });
}

/**
 * Parses and checks a corpus file exactly as the reference does: strict JSON
 * (§1.2), then the document checks of §1.3 in file order (identifiers, blank
 * text, repeated id, repeated text; the first failure stops loading), and the
 * checksum of the exact bytes (§1.4).
 *
 * @param bytes - the corpus file's bytes.
 * @returns the documents in source order with the checksum.
 * @throws DataError `DATA_CORPUS_INVALID_JSON` (with `offset`), `DATA_CORPUS_INVALID_SCHEMA`,
 *   `DATA_CORPUS_EMPTY`, `DATA_DOCUMENT_INVALID_IDENTIFIER`, `DATA_DOCUMENT_EMPTY_TEXT`,
 *   `DATA_DUPLICATE_DOCUMENT_ID`, `DATA_DUPLICATE_DOCUMENT_TEXT` (with `documentIndex`, `documentId`).
 * @example
 * ```ts
 * const corpus = parseCorpus(new TextEncoder().encode('[{"id":"a","language":"en","provenance_group":"g","text":"hi"}]'));
 * corpus.documents[0]?.text; // 'hi'
 * ```
 */
export function parseCorpus(bytes: Uint8Array): Corpus {
  let root: JsonNode;
  try {
    root = parseStrictJson(bytes);
  } catch (e) {
    if (e instanceof StrictJsonError) {
      throw new DataError(DATA_ERROR_CODES.DATA_CORPUS_INVALID_JSON, `invalid corpus JSON at byte ${e.offset}: ${e.message}`, { offset: e.offset, cause: e });
    }
    throw e;
  }
  if (root.kind !== 'array') throw schemaError(`expected a top-level array of documents, found ${root.kind}`, root, { field: '(root)' });
  const raw: { id: string; language: string; provenanceGroup: string; text: string; offset: number }[] = [];
  root.items.forEach((item, index) => {
    if (item.kind !== 'object') throw schemaError(`document ${index + 1}: expected an object, found ${item.kind}`, item, { documentIndex: index });
    const values: Partial<Record<(typeof MEMBERS)[number], string>> = {};
    for (const member of item.members) {
      if (!(MEMBERS as readonly string[]).includes(member.key)) {
        throw schemaError(`document ${index + 1}: unknown member ${JSON.stringify(member.key)} (expected only ${MEMBERS.join(', ')})`, member.value, { documentIndex: index, field: member.key });
      }
      if (member.value.kind !== 'string') {
        throw schemaError(`document ${index + 1}: member ${member.key} must be a string, found ${member.value.kind}`, member.value, { documentIndex: index, field: member.key });
      }
      values[member.key as (typeof MEMBERS)[number]] = member.value.value;
    }
    for (const name of MEMBERS) {
      if (values[name] === undefined) throw schemaError(`document ${index + 1}: missing member ${name}`, item, { documentIndex: index, field: name });
    }
    raw.push({ id: values.id as string, language: values.language as string, provenanceGroup: values.provenance_group as string, text: values.text as string, offset: item.offset });
  });
  if (raw.length === 0) throw new DataError(DATA_ERROR_CODES.DATA_CORPUS_EMPTY, 'corpus contains no documents (expected a non-empty array)', { offset: root.offset });

  const ids = new Map<string, number>();
  const texts = new Map<string, number>();
  const documents: CorpusDocument[] = [];
  raw.forEach((d, index) => {
    const where = { documentIndex: index, documentId: d.id, offset: d.offset };
    const fields: [string, string][] = [
      ['id', d.id],
      ['language', d.language],
      ['provenance_group', d.provenanceGroup],
    ];
    for (const [field, value] of fields) {
      if (!isKebabIdentifier(value)) {
        throw new DataError(
          DATA_ERROR_CODES.DATA_DOCUMENT_INVALID_IDENTIFIER,
          `document ${index + 1} (at byte ${d.offset}) ${field} ${JSON.stringify(value)} must be lowercase ASCII kebab case (a-z, 0-9, single '-' between parts, starting with a letter)`,
          { ...where, field },
        );
      }
    }
    if (isBlankText(d.text)) {
      throw new DataError(DATA_ERROR_CODES.DATA_DOCUMENT_EMPTY_TEXT, `document ${index + 1} (${d.id}) text is empty after removing surrounding whitespace`, { ...where, field: 'text' });
    }
    const earlierId = ids.get(d.id);
    if (earlierId !== undefined) {
      throw new DataError(DATA_ERROR_CODES.DATA_DUPLICATE_DOCUMENT_ID, `duplicate document ID ${d.id}: document ${index + 1} repeats document ${earlierId + 1}`, { ...where, field: 'id' });
    }
    ids.set(d.id, index);
    const earlierText = texts.get(d.text);
    if (earlierText !== undefined) {
      throw new DataError(DATA_ERROR_CODES.DATA_DUPLICATE_DOCUMENT_TEXT, `duplicate document text: document ${index + 1} (${d.id}) repeats the text of document ${earlierText + 1}`, {
        ...where,
        field: 'text',
      });
    }
    texts.set(d.text, index);
    documents.push({ index, id: d.id, language: d.language, provenanceGroup: d.provenanceGroup, text: d.text, bytes: ENCODER.encode(d.text) });
  });
  return { documents, checksum: corpusChecksum(bytes), byteLength: bytes.length };
}
