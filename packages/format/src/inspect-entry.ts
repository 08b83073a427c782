/**
 * `@llmcp/format/inspect`: reading a checkpoint's layout for people and tools
 * — what each byte range holds (also of a damaged file, as far as it parses),
 * the text report, comparisons of two files, the BPE merges spelled out. The
 * codec entry (`@llmcp/format`) stays small: decode, encode and the rules;
 * this entry is browser-safe like it.
 */
export { inspectCheckpoint, formatErrorData } from './inspect.ts';
export type { CheckpointInspection, InspectedDescriptor, InspectedField, InspectedTokenizer, InspectionError, RecordSlice } from './inspect.ts';
export { diffCheckpoints, locateByteDifferences, byteDifferenceText, tensorDifferenceText } from './checkpoint-diff.ts';
export type { CheckpointDiff, DiffLabels, FieldDifference, TensorDifference, TensorKind, TensorDiffStatus, DiffInspections, ByteDifference, ByteDifferences, ByteRegionKind, LocateOptions } from './checkpoint-diff.ts';
export { renderInspection } from './inspect-text.ts';
export type { InspectionStyle, RenderInspectionOptions } from './inspect-text.ts';
export { prefixSpans } from './inspect-prefix.ts';
export type { PrefixSpan } from './inspect-prefix.ts';
export { spellBpeMerges, MAX_SPELLED_BYTES } from './bpe-merges.ts';
export type { SpelledMerge, SpelledMerges } from './bpe-merges.ts';
