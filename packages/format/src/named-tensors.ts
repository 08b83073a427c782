/**
 * Lookups on a checkpoint state that tool authors need often.
 */
import { BPE_BASE_VOCABULARY } from './tags.ts';
import type { CheckpointState, MomentState, NamedTensor, TokenizerState } from './types.ts';

/**
 * The model parameter called `name`.
 * @param state - a checkpoint state.
 * @param name - e.g. `token_embedding.weight`.
 * @returns the tensor, or `undefined` when there is none.
 * @example
 * ```ts
 * parameterByName(decodeCheckpoint(bytes), 'final_norm.gain')?.data; // Float64Array(4)
 * ```
 */
export function parameterByName(state: CheckpointState, name: string): NamedTensor | undefined {
  return state.parameters.find((p) => p.name === name);
}

/**
 * The AdamW moments of the parameter called `name`.
 * @param state - a checkpoint state.
 * @param name - a parameter name.
 * @returns first and second moments, or `undefined` (always at step 0).
 */
export function momentsByName(state: CheckpointState, name: string): MomentState | undefined {
  return state.optimizer.moments.find((m) => m.name === name);
}

/**
 * Number of token ids a tokenizer defines: the piece count for a literal
 * tokenizer, 258 + merges for byte-level BPE (../SPEC.md §5.2).
 * @param tokenizer - a tokenizer state.
 * @returns the vocabulary size.
 */
export function tokenizerVocabularySize(tokenizer: TokenizerState): number {
  return tokenizer.kind === 'literal' ? tokenizer.pieces.length : BPE_BASE_VOCABULARY + tokenizer.pairs.length;
}
