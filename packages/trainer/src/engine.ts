/**
 * The narrow interface between the job machinery (cadence, persistence,
 * signals, logs) and the numerics (model, optimizer, data order). The job never
 * touches tensors except through a snapshot; the engine never touches files.
 *
 * An engine is two halves: the data order (`@llmcp/data`: windows, batches,
 * the resumable shuffle), which always runs in the trainer, and an
 * {@link EngineCompute} — the model and its optimizer — which runs here (the
 * llmcp engine) or in other processes (the torch engine,
 * ../../../docs/engine-protocol.md). Every call that computes is asynchronous.
 */
import type { AdamWState, CheckpointState, NamedTensor } from '@llmcp/format';
import type { Batch, WindowCoverage } from '@llmcp/data';
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
  update(learningRate: number): Promise<EngineUpdate>;
  /** FNV-1a 64 label over the inputs and targets of the next update batch (without advancing). */
  nextBatchFingerprint(): string;
  /** Number of batches of an evaluation list (after `maxBatches`). */
  evaluationBatches(list: EvaluationList): number;
  /** Mean loss and token count of one evaluation batch (no gradients). */
  evaluateBatch(list: EvaluationList, index: number): Promise<{ readonly loss: number; readonly tokens: number }>;
  /**
   * A private copy of the complete checkpoint state at this step boundary; later
   * updates never touch its buffers.
   *
   * @param step - the step label (equals the optimizer step).
   * @param samplingRngState - the sampling stream state to store.
   */
  snapshot(step: number, samplingRngState: bigint): Promise<CheckpointState>;
  /** Data order, cursor and shuffle RNG state as JSON (restorable). */
  dataState(): JsonValue;
  /** What computes the steps, for the progress display and `run.json`. */
  readonly description: EngineDescription;
  /** Releases worker threads or engine processes, if any. */
  dispose(): Promise<void>;
}

/** What computes a run's steps (recorded in `run.json`, shown at the start). */
export interface EngineDescription {
  readonly kind: 'llmcp' | 'torch';
  /** Ranks in all (1 for the llmcp engine, whose threads never change the bits). */
  readonly worldSize: number;
  /** One line for people: kernels, or torch version, device, precision and BLAS. */
  readonly detail: string;
  /** Process ids of the engine's processes on this node (the torch engine's local ranks, rank 0 first); empty for the llmcp engine. */
  readonly processes: readonly number[];
}

/** The numerics half of an engine: the model and its optimizer, wherever they run. */
export interface EngineCompute {
  readonly parameterCount: number;
  readonly description: EngineDescription;
  /**
   * One update on a batch: forward → backward → finite check → clip → AdamW
   * with this rate → zero-grad (../../../docs/spec/training.md §4). Nothing
   * changes when it fails.
   */
  update(batch: Batch, learningRate: number): Promise<Omit<EngineUpdate, 'tokens'>>;
  /** Mean loss of a batch, no gradients. */
  evaluate(batch: Batch): Promise<number>;
  /** Private copies of the parameters and the AdamW state at this step boundary. */
  state(): Promise<{ readonly parameters: readonly NamedTensor[]; readonly optimizer: AdamWState }>;
  dispose(): Promise<void>;
}
