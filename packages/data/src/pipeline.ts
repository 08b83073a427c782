/**
 * Glue between the corpus, the tokenizer and the windows: which documents
 * feed tokenizer training, and encoded documents with their ids.
 */
import { trainBpe, type BpeTrainingResult, type Tokenizer, type TrainBpeOptions } from '@llmcp/tokenizer';
import type { CorpusDocument } from './corpus.ts';
import type { CorpusPartitions } from './split.ts';
import type { WindowRef } from './windows.ts';

/** A document encoded by a tokenizer (document form: BOS/EOS for BPE). */
export interface EncodedDocument {
  /** The document id. */
  readonly id: string;
  /** The token ids. */
  readonly tokens: Uint32Array;
}

/**
 * Encodes documents one by one in the document form (`[BOS] + content + [EOS]`
 * for BPE). Documents are never joined.
 *
 * @param tokenizer - any llmcp tokenizer.
 * @param documents - documents with their UTF-8 bytes.
 * @returns one encoded document per input, in order.
 * @throws TokenizerError when a literal tokenizer cannot spell a document.
 */
export function encodeDocuments(tokenizer: Tokenizer, documents: readonly Pick<CorpusDocument, 'id' | 'bytes'>[]): EncodedDocument[] {
  return documents.map((d) => ({ id: d.id, tokens: tokenizer.encodeDocument(d.bytes) }));
}

/**
 * The BPE training input of a split corpus: the UTF-8 bytes of the **train**
 * partition's documents, in source order (../../../docs/spec/tokenizer-and-data.md §2.1).
 * Validation and test documents never influence the merges.
 *
 * @param partitions - from `partitionCorpus`.
 * @returns one byte sequence per training document.
 */
export function tokenizerTrainingSequences(partitions: CorpusPartitions): Uint8Array[] {
  return partitions.train.map((d) => d.bytes);
}

/**
 * Learns BPE merges from the train partition only.
 *
 * @param partitions - from `partitionCorpus`.
 * @param requestedMerges - merges to learn.
 * @param options - passed to `trainBpe`.
 * @returns the training result (tokenizer, merges with counts, learned count).
 * @throws TokenizerError `TOKENIZER_MERGE_REQUEST_TOO_LARGE`.
 */
export function trainTokenizerOnTrainSplit(partitions: CorpusPartitions, requestedMerges: number, options: TrainBpeOptions = {}): BpeTrainingResult {
  return trainBpe(tokenizerTrainingSequences(partitions), requestedMerges, options);
}

/**
 * The conventional name of a window, `<document id>@<start>`.
 *
 * @param documents - the documents the window list was built from.
 * @param window - a window.
 * @returns e.g. `en-river-dawn@0`.
 */
export function windowLabel(documents: readonly { readonly id: string }[], window: WindowRef): string {
  return `${documents[window.documentIndex]?.id ?? `#${window.documentIndex}`}@${window.start}`;
}
