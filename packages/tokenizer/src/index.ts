/**
 * `@llmcp/tokenizer`: literal and byte-level BPE tokenizers, byte-exact with
 * the reference implementation (../../../docs/spec/tokenizer-and-data.md §2–3), with BPE
 * training, checkpoint/JSON conversions, a SHA-256 identity, and strict UTF-8.
 * Browser-safe.
 */
export { BpeTokenizer, MAX_PAIR_INDEX_SIZE } from './bpe-tokenizer.ts';
export type { BpeEncodeApplication, BpeEncodeTrace, BpePairList } from './bpe-tokenizer.ts';
export { trainBpe, traceBpeTraining } from './bpe-training.ts';
export type { BpeMerge, BpeTrainingResult, BpeTrainingRound, BpeTrainingTrace, TrainBpeOptions } from './bpe-training.ts';
export { LiteralTokenizer } from './literal-tokenizer.ts';
export { tokenizerFromJSON, tokenizerFromState } from './conversions.ts';
export type { AnyTokenizer } from './conversions.ts';
export { TOKENIZER_ERROR_CODES, TokenizerError, isTokenizerError } from './errors.ts';
export type { TokenizerErrorCode, TokenizerErrorContext } from './errors.ts';
export { Sha256, sha256, sha256Hex, toHex } from './sha256.ts';
export { decodeUtf8Strict, isWellFormedString, toUtf8Bytes, utf8ValidUpTo } from './utf8.ts';
export {
  BOS_ID,
  BYTE_TOKEN_OFFSET,
  EOS_ID,
  FIRST_MERGE_TOKEN_ID,
  FIRST_MERGE_TRAINING_ID,
  MAX_DECODED_BYTES,
  MAX_LAYOUT_MERGES,
  MAX_REQUESTED_MERGES,
  TOKENIZER_LAYOUT_VERSION,
} from './tokenizer.ts';
export type { BpeTokenizerJSON, LiteralTokenizerJSON, Tokenizer, TokenizerJSON } from './tokenizer.ts';
