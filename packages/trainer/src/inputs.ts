/**
 * Training inputs: documents (from a reference JSON corpus with its split
 * manifest, plain text, or inline), the tokenizer, the encoded partitions, and
 * the identity of each — what a resume compares before it continues.
 *
 * Identities: the corpus is the SHA-256 of the corpus file's exact bytes (JSON
 * corpora) or, for text and inline sources, of the documents as the trainer
 * reads them (for each: id UTF-8, 0x00, byte length as u64 LE, the bytes); the
 * split is the SHA-256 of the manifest bytes, or of the canonical partition id
 * lists; the tokenizer is its canonical identity (`@llmcp/tokenizer`), which
 * differs for a changed merge order or piece list even at the same vocabulary
 * size; the implementation is the numerics version of every component.
 */
import type { TokenizerState } from '@llmcp/format';
import { MAX_FILE_BYTES, MAX_TEXT_FILE_BYTES } from '@llmcp/format/node';
import { MATH_VERSION } from '@llmcp/model';
import { decodeUtf8Strict, LiteralTokenizer, tokenizerFromJSON, tokenizerFromState, type AnyTokenizer } from '@llmcp/tokenizer';
import { hashSplit, parseCorpus, parseSplitManifest, partitionCorpus, trainTokenizerOnTrainSplit, type CorpusDocument, type CorpusPartitions, type TextCorpusFile } from '@llmcp/data';
import { loadTextCorpus } from '@llmcp/data/node';
import { createHash } from 'node:crypto';
import type { TrainerConfig } from './config.ts';
import { TrainerError } from './errors.ts';
import type { InputIdentity } from './job.ts';
import { canonicalDigest, sha256Hex } from './internal/canonical-json.ts';
import { readInputFile } from './internal/input-file.ts';

/**
 * Version of the trainer's own numerics: the update loop's event order, the
 * token-weighted evaluation mean, the data order and epoch policy, the sample
 * audit. Bump it whenever any of them may change a bit.
 */
export const TRAINER_NUMERICS_VERSION = 'llmcp-trainer/1';

/** The checkpoint format the trainer writes. */
export const CHECKPOINT_FORMAT_VERSION = 'LLMCP35/1';

/** Encoded documents of each partition, in source order. */
export interface EncodedPartitions {
  readonly train: readonly Uint32Array[];
  readonly validation: readonly Uint32Array[];
  readonly test: readonly Uint32Array[];
}

/** Everything the engine needs from the inputs, and their identity. */
export interface PreparedInputs {
  readonly tokenizer: AnyTokenizer;
  readonly partitions: EncodedPartitions;
  /** Document ids of each partition, in the order of `partitions`. */
  readonly documentIds: { readonly train: readonly string[]; readonly validation: readonly string[]; readonly test: readonly string[] };
  readonly identity: InputIdentity;
  /** The files of a text source (the rule each was divided by, its documents and skipped records); empty for other sources. */
  readonly textFiles: readonly TextCorpusFile[];
}

/**
 * The implementation identity of this build.
 *
 * @returns math, format and trainer numerics versions and their combined id.
 */
export function implementationIdentity(): InputIdentity['implementation'] {
  return {
    id: `${TRAINER_NUMERICS_VERSION}+${MATH_VERSION}+${CHECKPOINT_FORMAT_VERSION}`,
    math: MATH_VERSION,
    format: CHECKPOINT_FORMAT_VERSION,
    trainer: TRAINER_NUMERICS_VERSION,
  };
}

function readBytes(file: string, what: string, maxBytes: number = MAX_FILE_BYTES): Uint8Array {
  // The input rule, whichever route named the file (`--corpus`, a config file, `--set`): a FIFO or device is refused.
  return readInputFile(file, { what, code: 'TRAINER_INPUT_INVALID', maxBytes });
}

function documentsDigest(documents: readonly { readonly id: string; readonly bytes: Uint8Array }[]): string {
  const hash = createHash('sha256');
  const enc = new TextEncoder();
  const len = new Uint8Array(8);
  const view = new DataView(len.buffer);
  for (const d of documents) {
    view.setBigUint64(0, BigInt(d.bytes.length), true);
    hash.update(enc.encode(d.id)).update(Uint8Array.of(0)).update(len).update(d.bytes);
  }
  return `sha256:${hash.digest('hex')}`;
}

function partitionDigest(partitions: CorpusPartitions, extra: Record<string, unknown>): string {
  return canonicalDigest({
    ...extra,
    train: partitions.train.map((d) => d.id),
    validation: partitions.validation.map((d) => d.id),
    test: partitions.test.map((d) => d.id),
  });
}

interface LoadedSource {
  readonly partitions: CorpusPartitions;
  readonly textFiles?: readonly TextCorpusFile[];
  readonly corpus: InputIdentity['corpus'];
  readonly splitSha256: string;
}

function wrapInputError<T>(what: string, f: () => T, file?: string): T {
  try {
    return f();
  } catch (cause) {
    if (cause instanceof TrainerError) throw cause;
    throw new TrainerError('TRAINER_INPUT_INVALID', `invalid ${what}: ${(cause as Error).message}`, { cause, ...(file === undefined ? {} : { path: file }) });
  }
}

async function loadSource(config: TrainerConfig): Promise<LoadedSource> {
  const source = config.data.source;
  switch (source.kind) {
    case 'corpus': {
      const corpusBytes = readBytes(source.corpus, 'corpus');
      const splitBytes = readBytes(source.split, 'split manifest');
      const corpus = wrapInputError('corpus', () => parseCorpus(corpusBytes), source.corpus);
      const manifest = wrapInputError('split manifest', () => parseSplitManifest(splitBytes), source.split);
      const partitions = wrapInputError('split manifest', () => partitionCorpus(corpus, manifest), source.split);
      return {
        partitions,
        corpus: { sha256: `sha256:${sha256Hex(corpusBytes)}`, documents: corpus.documents.length },
        splitSha256: `sha256:${sha256Hex(splitBytes)}`,
      };
    }
    case 'text': {
      let corpus;
      try {
        corpus = await loadTextCorpus(source.path, { documents: source.documents });
      } catch (cause) {
        throw new TrainerError('TRAINER_INPUT_INVALID', `invalid text corpus: ${(cause as Error).message}`, { cause, path: source.path });
      }
      const partitions = hashSplit(corpus, { validationFraction: source.validationFraction, testFraction: source.testFraction });
      return {
        partitions,
        textFiles: corpus.files,
        corpus: { sha256: documentsDigest(corpus.documents), documents: corpus.documents.length },
        splitSha256: partitionDigest(partitions, { strategy: 'hash-split', validationFraction: source.validationFraction, testFraction: source.testFraction }),
      };
    }
    case 'inline': {
      const enc = new TextEncoder();
      const documents: CorpusDocument[] = source.documents.map((d, index) => ({
        index,
        id: d.id,
        language: 'und',
        provenanceGroup: d.id,
        text: d.text,
        bytes: enc.encode(d.text),
      }));
      const ids = new Set<string>();
      for (const d of documents) {
        if (ids.has(d.id)) throw new TrainerError('TRAINER_CONFIG_INVALID', `inline document id ${d.id} is repeated`, { fields: ['data.source.documents'] });
        ids.add(d.id);
      }
      const pick = (p: string): CorpusDocument[] => documents.filter((_, i) => source.documents[i]?.partition === p);
      const partitions: CorpusPartitions = { train: pick('train'), validation: pick('validation'), test: pick('test') };
      return {
        partitions,
        corpus: { sha256: documentsDigest(documents), documents: documents.length },
        splitSha256: partitionDigest(partitions, { strategy: 'inline' }),
      };
    }
  }
}

/** Why a partition is empty, and what to change. */
function emptyPartition(config: TrainerConfig, name: 'train' | 'validation', documents: number): TrainerError {
  const source = config.data.source;
  let why: string;
  let fields: string[];
  if (source.kind === 'text') {
    const fraction = name === 'validation' ? source.validationFraction : 1 - source.validationFraction - source.testFraction;
    why =
      `the text corpus gave ${documents} document${documents === 1 ? '' : 's'} (data.source.documents '${source.documents}'), and the hash split by document sent none to ${name} (its share ${fraction}). ` +
      (documents < 20
        ? "Each document goes to one partition whole: divide the text into more documents (--set data.source.documents=lines for one record per line, or blank lines between paragraphs)"
        : `Raise data.source.${name === 'validation' ? 'validationFraction' : 'validationFraction and testFraction less'}`);
    fields = ['data.source.documents', 'data.source.validationFraction'];
  } else if (source.kind === 'corpus') {
    why = `the split manifest ${source.split} lists no ${name} documents; list some there`;
    fields = ['data.source.split'];
  } else {
    why = `no inline document has partition '${name}'; give one`;
    fields = ['data.source.documents'];
  }
  return new TrainerError('TRAINER_INPUT_INVALID', `the ${name} partition is empty: ${why}`, { fields });
}

function buildTokenizer(config: TrainerConfig, partitions: CorpusPartitions, recorded: TokenizerState | undefined): AnyTokenizer {
  const t = config.tokenizer;
  switch (t.kind) {
    case 'literal':
      return wrapInputError('literal tokenizer', () => LiteralTokenizer.fromPieces(t.pieces));
    case 'file': {
      // Text: strict UTF-8 (TOKENIZER_INVALID_UTF8 with the offset), at most the longest string the engine holds.
      const bytes = readBytes(t.path, 'tokenizer file', MAX_TEXT_FILE_BYTES);
      return wrapInputError('tokenizer file', () => tokenizerFromJSON(decodeUtf8Strict(bytes)), t.path);
    }
    case 'bpe': {
      // A resumed run uses the tokenizer stored with its weights; the corpus identity covers how it was learned.
      if (recorded !== undefined) return wrapInputError('stored tokenizer', () => tokenizerFromState(recorded));
      const result = trainTokenizerOnTrainSplit(partitions, t.merges);
      if (t.requireAll && result.learnedMerges < t.merges) {
        throw new TrainerError('TRAINER_INPUT_INVALID', `BPE learned ${result.learnedMerges} of the ${t.merges} requested merges (tokenizer.requireAll is set)`, {
          fields: ['tokenizer.merges'],
        });
      }
      return result.tokenizer;
    }
  }
}

/**
 * Loads and checks the inputs of a config: documents, split, tokenizer
 * (trained on the train partition for `bpe`), encoded partitions, identities.
 *
 * @param config - the run config.
 * @param options - `tokenizerState`: the tokenizer stored in the checkpoint being resumed.
 * @returns the prepared inputs.
 * @throws TrainerError `TRAINER_INPUT_INVALID` for unreadable or invalid inputs.
 */
export async function prepareInputs(config: TrainerConfig, options: { readonly tokenizerState?: TokenizerState }): Promise<PreparedInputs> {
  const source = await loadSource(config);
  const { partitions } = source;
  for (const name of ['train', 'validation'] as const) {
    if (partitions[name].length === 0) throw emptyPartition(config, name, source.corpus.documents);
  }
  const tokenizer = buildTokenizer(config, partitions, options.tokenizerState);
  const encode = (docs: readonly CorpusDocument[]): Uint32Array[] =>
    docs.map((d) => wrapInputError(`document ${d.id}`, () => tokenizer.encodeDocument(d.bytes)));
  const encoded: EncodedPartitions = { train: encode(partitions.train), validation: encode(partitions.validation), test: encode(partitions.test) };
  return {
    tokenizer,
    partitions: encoded,
    documentIds: { train: partitions.train.map((d) => d.id), validation: partitions.validation.map((d) => d.id), test: partitions.test.map((d) => d.id) },
    textFiles: source.textFiles ?? [],
    identity: {
      corpus: source.corpus,
      split: { sha256: source.splitSha256, train: partitions.train.length, validation: partitions.validation.length, test: partitions.test.length },
      tokenizer: { identity: tokenizer.identity(), vocabularySize: tokenizer.vocabularySize },
      implementation: implementationIdentity(),
    },
  };
}

/**
 * The identity of the tokenizer a config learns from its train partition
 * (without encoding any document): what a report compares with the stored
 * tokenizer to show that it saw the train partition only.
 *
 * @param config - the run config.
 * @returns the learned tokenizer's canonical identity.
 * @throws TrainerError `TRAINER_INPUT_INVALID` for unreadable or invalid inputs.
 */
export async function learnedTokenizerIdentity(config: TrainerConfig): Promise<string> {
  const source = await loadSource(config);
  return buildTokenizer(config, source.partitions, undefined).identity();
}

/**
 * What differs between a recorded and a current input identity.
 *
 * @param recorded - from the checkpoint's job.
 * @param current - from {@link prepareInputs}.
 * @returns human-readable differences (`corpus: …`), empty when equal.
 */
export function diffInputs(recorded: InputIdentity, current: InputIdentity): string[] {
  const out: string[] = [];
  if (recorded.corpus.sha256 !== current.corpus.sha256) {
    out.push(
      `corpus: content changed (${recorded.corpus.documents} → ${current.corpus.documents} documents; sha256 ${recorded.corpus.sha256.slice(7, 19)}… → ${current.corpus.sha256.slice(7, 19)}…)`,
    );
  }
  if (recorded.split.sha256 !== current.split.sha256) out.push(`split: changed (sha256 ${recorded.split.sha256.slice(7, 19)}… → ${current.split.sha256.slice(7, 19)}…)`);
  if (recorded.tokenizer.identity !== current.tokenizer.identity) {
    out.push(
      `tokenizer: identity changed (vocabulary ${recorded.tokenizer.vocabularySize} → ${current.tokenizer.vocabularySize}; ${recorded.tokenizer.identity.slice(0, 19)}… → ${current.tokenizer.identity.slice(0, 19)}…)`,
    );
  }
  if (recorded.implementation.id !== current.implementation.id) out.push(`implementation: ${recorded.implementation.id} → ${current.implementation.id}`);
  return out;
}
