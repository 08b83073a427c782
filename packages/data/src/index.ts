/**
 * `@llmcp/data`: the data pipeline of llmcp, reference-exact — strict corpus
 * loading, the split manifest, causal windows, batches, and the resumable
 * SplitMix64 shuffle. File-system helpers are in `@llmcp/data/node`.
 */
export { corpusChecksum, isBlankText, isKebabIdentifier, isUnicodeWhiteSpace, parseCorpus } from './corpus.ts';
export type { Corpus, CorpusDocument } from './corpus.ts';
export { PARTITION_NAMES, SPLIT_STRATEGY, parseSplitManifest, partitionCorpus } from './split.ts';
export type { CorpusPartitions, PartitionName, SplitManifest } from './split.ts';
export { causalWindows, packDocuments, windowCount, windowCoverage } from './windows.ts';
export type { WindowCoverage, WindowRef } from './windows.ts';
export { batchCount, evaluationBatches, gatherBatch } from './batches.ts';
export type { Batch } from './batches.ts';
export { shuffleInPlace } from './shuffle.ts';
export type { MutableArrayLike } from './shuffle.ts';
export { UpdateBatches, referenceBatchIndex } from './update-batches.ts';
export type { EpochPolicy, UpdateBatch, UpdateBatchState, UpdateBatchStateJSON, UpdateBatchStateJSONV1, UpdateBatchesOptions } from './update-batches.ts';
export { encodeDocuments, tokenizerTrainingSequences, trainTokenizerOnTrainSplit, windowLabel } from './pipeline.ts';
export type { EncodedDocument } from './pipeline.ts';
export { hashSplit, parseTextCorpus } from './text-corpus.ts';
export type { HashSplitOptions, ResolvedTextDocumentRule, TextCorpus, TextCorpusFile, TextCorpusOptions, TextDocumentRule, TextSource } from './text-corpus.ts';
export { DATA_ERROR_CODES, DataError, isDataError } from './errors.ts';
export type { DataErrorCode, DataErrorContext } from './errors.ts';
export { jsonDepthExceeded, MAX_JSON_DEPTH } from './internal/strict-json.ts';
