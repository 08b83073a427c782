export { SplitMix64 } from './splitmix64.ts';
export { Fnv1a64, fnv1a64, checksumLabel, FNV1A64_OFFSET_BASIS } from './fnv1a64.ts';
export { FormatError, isFormatError, FORMAT_ERROR_CODES, FORMAT_ERROR_CATEGORIES } from './errors.ts';
export type { FormatErrorCode, FormatErrorCategory, FormatErrorContext } from './errors.ts';
export { encodeCheckpoint, checkpointByteSize } from './encode.ts';
export { decodeCheckpoint } from './decode.ts';
export type { DecodeOptions } from './decode.ts';
export { f64ToBits, f64FromBits, f64BitsHex, f64Text, u64Hex, hexBytes, quotedBytes, f64Bytes } from './bits.ts';
export { blockTensorIndex, expectedParameterShapes, modelParameterName, parameterTensorCount, parameterNameProblem } from './parameter-layout.ts';
export type { ParameterShape } from './parameter-layout.ts';
export { decoderConfigProblem } from './decoder-rules.ts';
export { adamwConfigProblem, decayProductProblem, groupsProblem } from './adamw-rules.ts';
export type { AdamWConfigProblem, AdamWField, GroupsProblem, LocatedName } from './adamw-rules.ts';
export type { DecoderConfigProblem, DecoderConfigValues } from './decoder-rules.ts';
export { bpeMergeCountProblem, bpeMergeTableProblem, MAX_BPE_MERGES } from './bpe-rules.ts';
export type { BpeMergeTableProblem } from './bpe-rules.ts';
export { parameterByName, momentsByName, tokenizerVocabularySize } from './named-tensors.ts';
export { compareByteWise, sortByteWise } from './utf8.ts';
export {
  MAGIC,
  FORMAT_VERSION,
  ENDIAN_MARKER,
  FIXED_HEADER_BYTES,
  MAX_HEADER_BYTES,
  CHECKSUM_OFFSET,
  BPE_RECORD_NAME,
  BPE_BASE_VOCABULARY,
  ROLE_TAGS,
  DTYPE_TAGS,
  DTYPE_WIDTHS,
} from './tags.ts';
export type { RecordDType, RecordRole } from './tags.ts';
export type { CheckpointLayout, DecodedCheckpoint, DescriptorLayout } from './layout.ts';
export type { RawDecoderConfig } from './header.ts';
export type {
  AdamWConfig,
  AdamWState,
  BpeTokenizerState,
  CheckpointState,
  DecoderConfig,
  ExactDecoderFields,
  LiteralTokenizerState,
  MomentState,
  NamedTensor,
  ParameterGroups,
  TokenizerState,
} from './types.ts';
