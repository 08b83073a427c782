/**
 * The narrow interface between the job machinery (cadence, persistence,
 * signals, logs) and the numerics (model, optimizer, data order). The job never
 * touches tensors except through a snapshot; the engine never touches files.
 */
import type { CheckpointState } from '@llmcp/format';
import type { WindowCoverage } from '@llmcp/data';
import type { JsonValue } from './internal/canonical-json.ts';

/** Which evaluation window list. */
export type EvaluationList = 'validation' | 'training';

/** The outcome of one update step. */
export interface EngineUpdate {
  /** Mean loss of the batch (before the update). */
  readonly loss: number;
  /** Global gradient norm before clipping (../../../docs/spec/training.md §5). */
  readonly gradientNorm: number;
  readonly clipped: boolean;
  /** Target tokens in the batch. */
  readonly tokens: number;
}

/** The batches of each evaluation list: evaluated (after `evaluation.maxBatches`) and available. */
export type EngineEvaluationLists = Readonly<Record<EvaluationList, { readonly batches: number; readonly available: number }>>;

/** A training engine: model + optimizer + data order. */
export interface TrainingEngine {
  readonly parameterCount: number;
  readonly vocabularySize: number;
  /** Target tokens in a full update batch. */
  readonly tokensPerStep: number;
  /** What the update windows reach of the train partition's tokens. */
  readonly coverage: WindowCoverage;
  /** Update batches in one epoch (one pass over the update windows). */
  readonly stepsPerEpoch: number;
  /** Batches of each evaluation list, evaluated and available. */
  readonly evaluationLists: EngineEvaluationLists;
  /**
   * Runs one update on the next batch of the data order (forward → backward →
   * finite check → clip → AdamW → zero-grad) and advances the cursor.
   *
   * @param learningRate - this step's rate.
   */
  update(learningRate: number): EngineUpdate;
  /** FNV-1a 64 label over the inputs and targets of the next update batch (without advancing). */
  nextBatchFingerprint(): string;
  /** Number of batches of an evaluation list (after `maxBatches`). */
  evaluationBatches(list: EvaluationList): number;
  /** Mean loss and token count of one evaluation batch (no gradients). */
  evaluateBatch(list: EvaluationList, index: number): { readonly loss: number; readonly tokens: number };
  /**
   * A private copy of the complete checkpoint state at this step boundary; later
   * updates never touch its buffers.
   *
   * @param step - the step label (equals the optimizer step).
   * @param samplingRngState - the sampling stream state to store.
   */
  snapshot(step: number, samplingRngState: bigint): CheckpointState;
  /** Data order, cursor and shuffle RNG state as JSON (restorable). */
  dataState(): JsonValue;
  /** Releases worker threads, if any. */
  dispose(): Promise<void>;
}
