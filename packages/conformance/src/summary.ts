/**
 * An implementation-neutral, JSON-able summary of a decoded checkpoint:
 * every scalar as an exact bit pattern or decimal string, every tensor as the
 * FNV-1a 64 of its little-endian bytes. Two implementations agree on a file
 * exactly when their summaries are equal.
 */
import { checksumLabel, f64BitsHex, f64Bytes, fnv1a64, hexBytes, u64Hex, type CheckpointState } from '@llmcp/format';

/** Summary of one tensor. */
export interface TensorSummary {
  readonly name: string;
  readonly shape: readonly number[];
  /** `fnv1a64:%016x` of the values as little-endian f64 bytes. */
  readonly fnv1a64: string;
}

/** JSON-able summary of a checkpoint state (see {@link summarizeCheckpoint}). */
export interface CheckpointSummary {
  readonly tokenizer: { readonly kind: 'literal'; readonly piecesHex: readonly string[] } | { readonly kind: 'bpe'; readonly pairs: readonly (readonly [number, number])[] };
  readonly decoder: {
    readonly vocabularySize: number;
    readonly modelWidth: number;
    readonly heads: number;
    readonly feedForwardWidth: number;
    readonly layers: number;
    readonly maxPositions: number;
    readonly ropeBaseBits: string;
    readonly rmsEpsilonBits: string;
  };
  readonly optimizer: {
    readonly learningRateBits: string;
    readonly beta1Bits: string;
    readonly beta2Bits: string;
    readonly epsilonBits: string;
    readonly weightDecayBits: string;
    readonly groups: { readonly decay: readonly string[]; readonly noDecay: readonly string[] } | null;
    readonly step: string;
    readonly beta1PowerBits: string;
    readonly beta2PowerBits: string;
    /** Moments in sorted name order (file order). */
    readonly moments: readonly { readonly name: string; readonly shape: readonly number[]; readonly first: string; readonly second: string }[];
  };
  readonly selectedStep: string;
  /** `0x` + 16 hex digits. */
  readonly samplingRngState: string;
  readonly parameters: readonly TensorSummary[];
}

/**
 * FNV-1a label of f64 values as little-endian bytes.
 * @param values - tensor data.
 * @returns `fnv1a64:%016x`.
 */
export function tensorHash(values: Float64Array): string {
  return checksumLabel(fnv1a64(f64Bytes(values)));
}

/**
 * Summarizes a decoded state.
 * @param state - from any implementation, in `@llmcp/format`'s state shape.
 * @returns the summary.
 */
export function summarizeCheckpoint(state: CheckpointState): CheckpointSummary {
  const d = state.decoder;
  const o = state.optimizer;
  return {
    tokenizer: state.tokenizer.kind === 'literal' ? { kind: 'literal', piecesHex: state.tokenizer.pieces.map((p) => hexBytes(p)) } : { kind: 'bpe', pairs: state.tokenizer.pairs.map(([l, r]) => [l, r] as const) },
    decoder: {
      vocabularySize: d.vocabularySize,
      modelWidth: d.modelWidth,
      heads: d.heads,
      feedForwardWidth: d.feedForwardWidth,
      layers: d.layers,
      maxPositions: d.maxPositions,
      ropeBaseBits: f64BitsHex(d.ropeBase),
      rmsEpsilonBits: f64BitsHex(d.rmsEpsilon),
    },
    optimizer: {
      learningRateBits: f64BitsHex(o.config.learningRate),
      beta1Bits: f64BitsHex(o.config.beta1),
      beta2Bits: f64BitsHex(o.config.beta2),
      epsilonBits: f64BitsHex(o.config.epsilon),
      weightDecayBits: f64BitsHex(o.config.weightDecay),
      groups: o.groups === null ? null : { decay: [...o.groups.decay], noDecay: [...o.groups.noDecay] },
      step: o.step.toString(),
      beta1PowerBits: f64BitsHex(o.beta1Power),
      beta2PowerBits: f64BitsHex(o.beta2Power),
      moments: o.moments.map((m) => ({ name: m.name, shape: [...m.shape], first: tensorHash(m.first), second: tensorHash(m.second) })),
    },
    selectedStep: state.selectedStep.toString(),
    samplingRngState: u64Hex(state.samplingRngState),
    parameters: state.parameters.map((p) => ({ name: p.name, shape: [...p.shape], fnv1a64: tensorHash(p.data) })),
  };
}
