export { SplitMix64 } from './splitmix64.ts';
export { Fnv1a64, fnv1a64, checksumLabel, FNV1A64_OFFSET_BASIS } from './fnv1a64.ts';
export type {
  AdamWConfig,
  AdamWState,
  BpeTokenizerState,
  CheckpointState,
  DecoderConfig,
  LiteralTokenizerState,
  MomentState,
  NamedTensor,
  ParameterGroups,
  TokenizerState,
} from './types.ts';
