/**
 * `@llmcp/data/node`: reading corpora, manifests and plain-text folders from
 * the file system, and the path of the bundled tiny bilingual corpus.
 */
import type { Stats } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isFormatError } from '@llmcp/format';
import { MAX_FILE_BYTES, MAX_TEXT_FILE_BYTES, readRegularFile } from '@llmcp/format/node';
import { parseCorpus, type Corpus } from './corpus.ts';
import { DATA_ERROR_CODES, DataError } from './errors.ts';
import { parseSplitManifest, partitionCorpus, type CorpusPartitions, type SplitManifest } from './split.ts';
import { parseTextCorpus, type TextCorpus, type TextCorpusOptions, type TextSource } from './text-corpus.ts';

/**
 * Reads a whole input file under the input rule (`@llmcp/format/node`): a
 * regular file — a FIFO, socket, device or directory is refused, never
 * opened or waited on — of at most `maxBytes`.
 */
async function readBytes(file: string, what: string, maxBytes: number = MAX_FILE_BYTES): Promise<Uint8Array> {
  try {
    return await readRegularFile(file, { maxBytes, what });
  } catch (cause) {
    // The input rule's message names the file and what is wrong with it (its kind, its size).
    throw new DataError(DATA_ERROR_CODES.DATA_IO, isFormatError(cause) ? cause.message : `cannot read ${what} ${file}: ${(cause as Error).message}`, { path: file, cause });
  }
}

/**
 * Reads and strictly parses a JSON corpus file (checksum over its exact bytes).
 * @param file - path of the corpus JSON.
 * @returns the corpus.
 * @throws DataError `DATA_IO` or any `parseCorpus` error.
 */
export async function readCorpusFile(file: string): Promise<Corpus> {
  return parseCorpus(await readBytes(file, 'corpus'));
}

/** A corpus with its manifest, validated and divided. */
export interface SplitCorpus {
  /** The corpus. */
  readonly corpus: Corpus;
  /** The parsed manifest. */
  readonly manifest: SplitManifest;
  /** Train / validation / test documents. */
  readonly partitions: CorpusPartitions;
}

/**
 * Reads a JSON corpus and its split manifest and validates them together
 * (../../../docs/spec/tokenizer-and-data.md §1).
 *
 * @param corpusFile - path of the corpus JSON.
 * @param manifestFile - path of `splits.json`.
 * @returns corpus, manifest and partitions.
 * @throws DataError `DATA_IO`, any corpus or split error.
 * @example
 * ```ts
 * const { corpus, partitions } = await loadSplitCorpus(...bundledCorpusFiles('tiny-bilingual'));
 * ```
 */
export async function loadSplitCorpus(corpusFile: string, manifestFile: string): Promise<SplitCorpus> {
  const corpus = await readCorpusFile(corpusFile);
  const manifest = parseSplitManifest(await readBytes(manifestFile, 'split manifest'));
  return { corpus, manifest, partitions: partitionCorpus(corpus, manifest) };
}

/** Corpora shipped inside this package. */
export type BundledCorpus = 'tiny-bilingual';

/**
 * Absolute paths of a corpus shipped with the package (the reference's tiny
 * bilingual corpus and its split manifest, MIT; see its ../corpora/tiny-bilingual/LICENSE-NOTE.md).
 *
 * @param name - `'tiny-bilingual'`.
 * @returns `[corpusFile, manifestFile]`.
 */
export function bundledCorpusFiles(name: BundledCorpus): [string, string] {
  if (name !== 'tiny-bilingual') throw new RangeError(`unknown bundled corpus ${String(name)}`);
  // src/node.ts and dist/node.js are both one level below the package root.
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'corpora', name);
  return [path.join(root, 'tiny-bilingual-corpus.json'), path.join(root, 'splits.json')];
}

async function collectTextFiles(root: string, relative: string, out: string[]): Promise<void> {
  const entries = await readdir(path.join(root, relative), { withFileTypes: true });
  for (const entry of entries) {
    if (entry.name.startsWith('.')) continue;
    const rel = relative === '' ? entry.name : `${relative}/${entry.name}`;
    if (entry.isDirectory()) await collectTextFiles(root, rel, out);
    else if (entry.isFile() && (entry.name.endsWith('.txt') || entry.name.endsWith('.jsonl'))) out.push(rel);
  }
}

/**
 * Loads a plain-text corpus: one file (any name), or every `*.txt` and
 * `*.jsonl` file below a folder (recursively; hidden entries and symbolic
 * links skipped), divided into documents by the rule of `parseTextCorpus`
 * (default `'auto'`: JSON Lines for `.jsonl` files, else paragraphs where a
 * file has blank lines, else one document per line).
 *
 * @param target - a file or a folder.
 * @param options - the document rule.
 * @returns the corpus with its files and checksum.
 * @throws DataError `DATA_IO`, `DATA_TEXT_CORPUS_INVALID` (no `.txt` or `.jsonl` files, invalid UTF-8, a bad JSON Lines record, no documents).
 * @example
 * ```ts
 * const corpus = await loadTextCorpus('stories/', { documents: 'paragraphs' });
 * ```
 */
export async function loadTextCorpus(target: string, options: TextCorpusOptions = {}): Promise<TextCorpus> {
  let info: Stats;
  try {
    info = await stat(target);
  } catch (cause) {
    throw new DataError(DATA_ERROR_CODES.DATA_IO, `cannot read ${target}: ${(cause as Error).message}`, { path: target, cause });
  }
  const sources: TextSource[] = [];
  if (info.isDirectory()) {
    const files: string[] = [];
    try {
      await collectTextFiles(target, '', files);
    } catch (cause) {
      throw new DataError(DATA_ERROR_CODES.DATA_IO, `cannot list ${target}: ${(cause as Error).message}`, { path: target, cause });
    }
    if (files.length === 0) throw new DataError(DATA_ERROR_CODES.DATA_TEXT_CORPUS_INVALID, `folder ${target} contains no .txt or .jsonl files`, { path: target });
    // Each file is decoded as one string: at most MAX_TEXT_FILE_BYTES.
    for (const rel of files) sources.push({ path: rel, bytes: await readBytes(path.join(target, ...rel.split('/')), 'corpus file', MAX_TEXT_FILE_BYTES) });
  } else {
    sources.push({ path: path.basename(target), bytes: await readBytes(target, 'corpus file', MAX_TEXT_FILE_BYTES) });
  }
  return parseTextCorpus(sources, options);
}
