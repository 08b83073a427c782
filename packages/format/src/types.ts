/**
 * The decoded, plain-data form of an LLMCP35 v1 checkpoint (../SPEC.md §1).
 *
 * Conventions: every u64 that can legitimately exceed 2^53 (steps, the RNG
 * state, raw header fields in layout evidence) is a `bigint`; dimensions of a
 * valid checkpoint are bounded by the file size and are plain `number`s. The
 * two decoder fields the file size does not bound (`maxPositions`, and
 * `feedForwardWidth` of a 0-layer model) may hold any u64: above 2^53 − 1
 * their exact value is in {@link DecoderConfig.exact} (../SPEC.md §15.2).
 * Tensors are row-major `Float64Array`s whose element bit patterns are
 * preserved exactly (including −0).
 */

/** A literal tokenizer: token id i spells `pieces[i]` (non-empty, pairwise distinct byte strings). */
export interface LiteralTokenizerState {
  readonly kind: 'literal';
  readonly pieces: readonly Uint8Array[];
}

/**
 * A byte-level BPE tokenizer: merge rank r joins `pairs[r]` (left, right) in
 * the *training id space* (0–255 bytes, 256 + r for merge r). The final
 * vocabulary is 258 + pairs.length (two control ids, ../SPEC.md §5.2).
 */
export interface BpeTokenizerState {
  readonly kind: 'bpe';
  readonly pairs: readonly (readonly [number, number])[];
}

/** The tokenizer stored in a checkpoint. */
export type TokenizerState = LiteralTokenizerState | BpeTokenizerState;

/**
 * Exact values of the decoder fields that exceed 2^53 − 1 (../SPEC.md §15.2).
 * Each property is present only when its field is above
 * `Number.MAX_SAFE_INTEGER`; it is then a `bigint` in [2^53, 2^64 − 1].
 */
export interface ExactDecoderFields {
  readonly feedForwardWidth?: bigint;
  readonly maxPositions?: bigint;
}

/** Decoder configuration (../SPEC.md §4, §6.1). */
export interface DecoderConfig {
  readonly vocabularySize: number;
  readonly modelWidth: number;
  readonly heads: number;
  /** F; above 2^53 − 1 (possible only with 0 layers) `Number(exact.feedForwardWidth)`, never a safe integer. */
  readonly feedForwardWidth: number;
  readonly layers: number;
  /** Context capacity; above 2^53 − 1 `Number(exact.maxPositions)`, never a safe integer. */
  readonly maxPositions: number;
  readonly ropeBase: number;
  readonly rmsEpsilon: number;
  /**
   * The exact u64 value of `feedForwardWidth` / `maxPositions` where it
   * exceeds 2^53 − 1 (../SPEC.md §15.2); absent otherwise (the decoder omits it
   * when both fields are safe integers). The number field then holds the
   * nearest double, which is never a safe integer, so code that requires
   * safe integers (e.g. `@llmcp/model`) refuses such a configuration, while
   * the encoder writes the exact value. The encoder requires the number field
   * to equal `Number(exact.<field>)`, so a configuration spread with a new
   * value and a stale `exact` is refused instead of written wrongly.
   */
  readonly exact?: ExactDecoderFields;
}

/** A named f64 tensor, row-major; `data.length` equals the product of `shape` (1 for rank 0). */
export interface NamedTensor {
  readonly name: string;
  readonly shape: readonly number[];
  readonly data: Float64Array;
}

/** AdamW hyper-parameters as stored (the *base* learning rate). */
export interface AdamWConfig {
  readonly learningRate: number;
  readonly beta1: number;
  readonly beta2: number;
  readonly epsilon: number;
  readonly weightDecay: number;
}

/** Parameter groups: only `decay` names receive weight decay. */
export interface ParameterGroups {
  readonly decay: readonly string[];
  readonly noDecay: readonly string[];
}

/** First and second AdamW moments of one parameter. */
export interface MomentState {
  readonly name: string;
  readonly shape: readonly number[];
  readonly first: Float64Array;
  readonly second: Float64Array;
}

/**
 * Complete AdamW state. `moments` may be given in any order to the encoder
 * (it writes them sorted byte-wise by name); the decoder returns file order,
 * which for a valid file is that sorted order. Empty at step 0.
 */
export interface AdamWState {
  readonly config: AdamWConfig;
  readonly groups: ParameterGroups | null;
  readonly step: bigint;
  readonly beta1Power: number;
  readonly beta2Power: number;
  readonly moments: readonly MomentState[];
}

/** Everything one LLMCP35 v1 file holds. */
export interface CheckpointState {
  readonly tokenizer: TokenizerState;
  readonly decoder: DecoderConfig;
  /** Model parameters in model order (../SPEC.md §7). */
  readonly parameters: readonly NamedTensor[];
  readonly optimizer: AdamWState;
  /** Step label of the saved state; equals `optimizer.step`. */
  readonly selectedStep: bigint;
  /** Raw SplitMix64 state before the next sampling draw. */
  readonly samplingRngState: bigint;
}
