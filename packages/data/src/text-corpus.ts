/**
 * Plain-text corpora for real use (the JSON corpus remains the
 * reference-exact path). Reading files is in the `@llmcp/data/node` entry;
 * this module turns file bytes into documents.
 *
 * Document rule (documented in the README):
 *
 * 1. Each file must be strict UTF-8. A leading byte-order mark is dropped.
 *    CRLF and lone CR line endings become LF.
 * 2. `'paragraphs'`: a document is a maximal run of non-blank lines,
 *    joined with LF (no trailing LF); blank lines (empty or only Unicode
 *    White_Space) separate documents. `'lines'`: every non-blank line is a
 *    document. `'file'`: each file is one document (skipped when blank).
 *    `'jsonl'`: JSON Lines, one JSON object per non-blank line whose string
 *    member `text` is the document (other members are ignored; a record whose
 *    text is blank is skipped and counted in `skippedRecords`). `'auto'`
 *    (default), per file: `'jsonl'` for a `.jsonl` file, else `'paragraphs'`
 *    when the file has a blank line between two non-blank ones, else `'lines'`
 *    (one record per line); `files[].documents` says which rule each file got.
 * 3. Ids are `<path>#<n>` (n counts the file's documents from 1), or `<path>`
 *    under `'file'`; `path` is the file's path relative to the corpus root with
 *    `/` separators. Language is `und`; each document is its own provenance
 *    group. Repeated texts are kept (unlike the JSON corpus).
 * 4. Files are taken in code-unit order of their paths. The corpus checksum is
 *    FNV-1a 64 over, per file in that order: the path's UTF-8 bytes, one 0x00
 *    byte, the file length as u64 little-endian, and the file's exact bytes.
 */
import { checksumLabel, Fnv1a64 } from '@llmcp/format';
import { sha256, utf8ValidUpTo } from '@llmcp/tokenizer';
import { corpusChecksum, isBlankText, type Corpus, type CorpusDocument } from './corpus.ts';
import { DATA_ERROR_CODES, DataError } from './errors.ts';
import type { CorpusPartitions } from './split.ts';

/** How a text file is divided into documents. */
export type TextDocumentRule = 'auto' | 'paragraphs' | 'lines' | 'file' | 'jsonl';

/** The rules {@link TextDocumentRule} `'auto'` chooses from, per file. */
export type ResolvedTextDocumentRule = Exclude<TextDocumentRule, 'auto'>;

const RULES: readonly TextDocumentRule[] = ['auto', 'paragraphs', 'lines', 'file', 'jsonl'];

/** Options of {@link parseTextCorpus} and `loadTextCorpus`. */
export interface TextCorpusOptions {
  /** Default `'auto'`. */
  readonly documents?: TextDocumentRule;
}

/** One input file. */
export interface TextSource {
  /** Path relative to the corpus root, `/`-separated (used in ids and the checksum). */
  readonly path: string;
  /** The file's exact bytes. */
  readonly bytes: Uint8Array;
}

/** One file of a text corpus. */
export interface TextCorpusFile {
  /** Relative path. */
  readonly path: string;
  /** Size in bytes. */
  readonly byteLength: number;
  /** FNV-1a 64 label of the file's exact bytes. */
  readonly checksum: string;
  /** Documents taken from this file. */
  readonly documentCount: number;
  /** The rule the file was divided by (what `'auto'` chose for it). */
  readonly documents: ResolvedTextDocumentRule;
  /** Records that held no text and were skipped (JSON Lines records whose `text` is blank); 0 for the other rules. */
  readonly skippedRecords: number;
}

/** A plain-text corpus: a {@link Corpus} plus its files. */
export interface TextCorpus extends Corpus {
  /** The files in the order they were read. */
  readonly files: readonly TextCorpusFile[];
}

const DECODER = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const ENCODER = new TextEncoder();

/** Whether a text has a blank line between two non-blank lines (then `'auto'` reads it as paragraphs). */
function hasParagraphBreak(lines: readonly string[]): boolean {
  let seenText = false;
  let blankAfterText = false;
  for (const line of lines) {
    if (isBlankText(line)) {
      if (seenText) blankAfterText = true;
    } else {
      if (blankAfterText) return true;
      seenText = true;
    }
  }
  return false;
}

function jsonLinesDocuments(lines: readonly string[], path: string): { texts: string[]; skipped: number } {
  const texts: string[] = [];
  let skipped = 0;
  lines.forEach((line, i) => {
    if (isBlankText(line)) return;
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch (cause) {
      throw new DataError(DATA_ERROR_CODES.DATA_TEXT_CORPUS_INVALID, `JSON Lines file ${path}, line ${i + 1}: not JSON (${(cause as Error).message})`, { path, position: i + 1, cause });
    }
    const text = typeof record === 'object' && record !== null && !Array.isArray(record) ? (record as Record<string, unknown>).text : undefined;
    if (typeof text !== 'string') {
      throw new DataError(DATA_ERROR_CODES.DATA_TEXT_CORPUS_INVALID, `JSON Lines file ${path}, line ${i + 1}: expected an object with a string member "text"`, { path, position: i + 1, field: 'text' });
    }
    if (isBlankText(text)) skipped += 1;
    else texts.push(text);
  });
  return { texts, skipped };
}

function splitDocuments(text: string, rule: TextDocumentRule, path: string): { rule: ResolvedTextDocumentRule; texts: string[]; skipped: number } {
  if (rule === 'file') return { rule, texts: isBlankText(text) ? [] : [text], skipped: 0 };
  const lines = text.split('\n');
  const resolved: ResolvedTextDocumentRule = rule !== 'auto' ? rule : path.endsWith('.jsonl') ? 'jsonl' : hasParagraphBreak(lines) ? 'paragraphs' : 'lines';
  if (resolved === 'jsonl') return { rule: resolved, ...jsonLinesDocuments(lines, path) };
  if (resolved === 'lines') return { rule: resolved, texts: lines.filter((line) => !isBlankText(line)), skipped: 0 };
  const out: string[] = [];
  let run: string[] = [];
  for (const line of lines) {
    if (isBlankText(line)) {
      if (run.length > 0) out.push(run.join('\n'));
      run = [];
    } else run.push(line);
  }
  if (run.length > 0) out.push(run.join('\n'));
  return { rule: 'paragraphs', texts: out, skipped: 0 };
}

/**
 * Builds a corpus from text files by the documented rule.
 *
 * @param sources - the files (any order; they are sorted by path).
 * @param options - the document rule.
 * @returns the corpus with per-file information.
 * @throws DataError `DATA_TEXT_CORPUS_INVALID` for invalid UTF-8 (with `path`, `offset`),
 *   repeated paths, a JSON Lines line that is not an object with a string `text` (with `path`, `position`: the
 *   1-based line), or a corpus without documents.
 */
export function parseTextCorpus(sources: readonly TextSource[], options: TextCorpusOptions = {}): TextCorpus {
  const rule = options.documents ?? 'auto';
  if (!RULES.includes(rule)) throw new RangeError(`documents must be one of ${RULES.map((r) => `'${r}'`).join(', ')}, got ${String(rule)}`);
  const sorted = [...sources].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const hash = new Fnv1a64();
  const documents: CorpusDocument[] = [];
  const files: TextCorpusFile[] = [];
  let byteLength = 0;
  for (let f = 0; f < sorted.length; f++) {
    const { path, bytes } = sorted[f] as TextSource;
    if (f > 0 && (sorted[f - 1] as TextSource).path === path) {
      throw new DataError(DATA_ERROR_CODES.DATA_TEXT_CORPUS_INVALID, `text corpus names the file ${path} twice`, { path });
    }
    const valid = utf8ValidUpTo(bytes);
    if (valid !== bytes.length) {
      throw new DataError(DATA_ERROR_CODES.DATA_TEXT_CORPUS_INVALID, `text file ${path} is not valid UTF-8 at byte ${valid}`, { path, offset: valid });
    }
    const framing = new Uint8Array(8);
    new DataView(framing.buffer).setBigUint64(0, BigInt(bytes.length), true);
    hash.update(ENCODER.encode(path)).update(Uint8Array.of(0)).update(framing).update(bytes);
    byteLength += bytes.length;
    const hasBom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
    const text = DECODER.decode(hasBom ? bytes.subarray(3) : bytes).replace(/\r\n?/g, '\n');
    const split = splitDocuments(text, rule, path);
    split.texts.forEach((t, n) => {
      const id = rule === 'file' ? path : `${path}#${n + 1}`;
      documents.push({ index: documents.length, id, language: 'und', provenanceGroup: id, text: t, bytes: ENCODER.encode(t) });
    });
    files.push({ path, byteLength: bytes.length, checksum: corpusChecksum(bytes), documentCount: split.texts.length, documents: split.rule, skippedRecords: split.skipped });
  }
  if (documents.length === 0) {
    throw new DataError(DATA_ERROR_CODES.DATA_TEXT_CORPUS_INVALID, `text corpus has no documents (${sorted.length} file(s), all blank)`, {});
  }
  return { documents, checksum: checksumLabel(hash.digest()), byteLength, files };
}

/** Options of {@link hashSplit}. */
export interface HashSplitOptions {
  /** Share of provenance groups held out for validation, in [0, 1]. */
  readonly validationFraction: number;
  /** Share of provenance groups held out for test, in [0, 1]. */
  readonly testFraction?: number;
}

/**
 * A deterministic hold-out for corpora without a manifest: each provenance
 * group goes to test when u < testFraction, to validation when
 * u < testFraction + validationFraction, else to train, where u is the first
 * 53 bits (big-endian) of SHA-256 of the group name's UTF-8, divided by 2^53
 * (FNV-1a's top bits spread similar names poorly). A group's
 * partition depends only on its name, so adding documents never moves
 * existing ones. Partitions keep source order and may be empty.
 *
 * @param corpus - any corpus.
 * @param options - the fractions.
 * @returns the partitions.
 * @throws RangeError for fractions outside [0, 1] or summing above 1.
 */
export function hashSplit(corpus: Corpus, options: HashSplitOptions): CorpusPartitions {
  const validation = options.validationFraction;
  const test = options.testFraction ?? 0;
  if (!(validation >= 0 && validation <= 1) || !(test >= 0 && test <= 1) || validation + test > 1) {
    throw new RangeError(`hashSplit fractions must be in [0, 1] and sum to at most 1, got validation ${validation}, test ${test}`);
  }
  const out: Record<'train' | 'validation' | 'test', CorpusDocument[]> = { train: [], validation: [], test: [] };
  for (const d of corpus.documents) {
    const digest = sha256(ENCODER.encode(d.provenanceGroup));
    const view = new DataView(digest.buffer, digest.byteOffset, 8);
    const u = (view.getUint32(0) * 2 ** 21 + (view.getUint32(4) >>> 11)) / 2 ** 53;
    if (u < test) out.test.push(d);
    else if (u < test + validation) out.validation.push(d);
    else out.train.push(d);
  }
  return out;
}
