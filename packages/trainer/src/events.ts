/**
 * Events a training job reports while it runs (for progress displays, logs and
 * tests). Reporting never affects the training result.
 */
import type { SaveThread } from './background-saver.ts';
import type { RunPlan } from './run-plan.ts';

/** Why a checkpoint was written. */
export type CheckpointReason = 'cadence' | 'best' | 'signal' | 'time' | 'stop' | 'final' | 'pivot' | 'fork';

/** A progress event. */
export type TrainerEvent =
  | {
      readonly type: 'start';
      readonly runDir: string;
      /** The slot resumed from, or null for a fresh run. */
      readonly resumedFrom: string | null;
      readonly step: number;
      readonly totalSteps: number;
      readonly parameterCount: number;
      readonly vocabularySize: number;
      readonly tokensPerStep: number;
      /** The matrix-product kernels the model runs (`kernelInfo().kind` of @llmcp/model: 'native-avx512', 'wasm-simd', …; never changes bits). */
      readonly kernels?: string;
      /** What computes the steps, in one line (`llmcp f64, native-avx2 kernels`; `torch 1.13.0, 2 ranks, cpu f64, libopenblasp-r0.3.21.so`). */
      readonly engine?: string;
      /** Process ids of the engine's processes on this node (the torch engine's local ranks, rank 0 first). */
      readonly engineProcesses?: readonly number[];
      /** The newest validation result of the job so far (on a resume, from its job state), or null. */
      readonly lastValidation: { readonly step: number; readonly validationLoss: number } | null;
      /** The best validation result so far (on a resume, from its job state), or null. */
      readonly best: { readonly step: number; readonly validationLoss: number } | null;
      /** What the run trains on and how it validates (`describeRunPlan` prints it). */
      readonly plan?: RunPlan;
    }
  | {
      readonly type: 'step';
      readonly step: number;
      readonly totalSteps: number;
      readonly loss: number;
      readonly learningRate: number;
      readonly gradientNorm: number;
      readonly clipped: boolean;
      readonly tokens: number;
      readonly stepMs: number;
    }
  /** A line about the engine while it starts (e.g. the command other nodes run to join the torch engine). */
  | { readonly type: 'engine-status'; readonly message: string }
  | { readonly type: 'evaluation-start'; readonly step: number; readonly list: 'validation' | 'training'; readonly batches: number }
  | { readonly type: 'evaluation-batch'; readonly step: number; readonly list: 'validation' | 'training'; readonly index: number; readonly batches: number }
  | { readonly type: 'evaluation-aborted'; readonly step: number; readonly list: 'validation' | 'training'; readonly batchesDone: number }
  | {
      readonly type: 'evaluation';
      readonly step: number;
      readonly validationLoss: number;
      readonly trainingLoss: number | null;
      readonly bestStep: number;
      readonly bestValidationLoss: number;
      readonly improved: boolean;
    }
  | {
      readonly type: 'checkpoint';
      readonly step: number;
      readonly reason: CheckpointReason;
      /** Milliseconds the training thread was blocked (snapshot copy, waiting for a previous save). */
      readonly blockedMs: number;
    }
  | {
      readonly type: 'checkpoint-saved';
      readonly step: number;
      readonly slots: readonly string[];
      /** Milliseconds of the save itself (encode, audit, writes), off the training path when background. */
      readonly saveMs: number;
      /** Where the save ran: `inline` (the training thread) or the save thread's priority (`idle`, `low`, `normal`; see `LLMCP_SAVE_PRIORITY`). */
      readonly saveThread: SaveThread;
      /** Texts of the sample audit, when one ran. */
      readonly samples: readonly string[] | null;
    }
  | { readonly type: 'signal'; readonly signal: 'SIGTERM' | 'SIGINT' | 'SIGUSR1' | 'abort' }
  | {
      /** A resume applied a new step budget as a recorded pivot (before training goes on). */
      readonly type: 'budget-changed';
      readonly step: number;
      readonly fromSteps: number;
      readonly toSteps: number;
      readonly pivot: number;
      /** `extending from 60 to 90 steps; the schedule now …` (one line). */
      readonly description: string;
    }
  | {
      /** A second Ctrl-C: the process exits at once, without a stop checkpoint (the last event of the run). */
      readonly type: 'exiting';
      readonly signal: 'SIGINT';
      /** The checkpoint a resume will use (the newest save seen complete), or null when none was saved. */
      readonly resumeSlot: string | null;
      readonly resumeStep: number | null;
      /** A save was in flight (it is abandoned; if it had published, a resume uses it instead). */
      readonly saveInFlight: boolean;
      /** The one line to print, e.g. `second Ctrl-C: exited at once without a stop checkpoint; a resume will use latest (step 40)`. */
      readonly description: string;
    }
  | { readonly type: 'stopped'; readonly step: number; readonly reason: string }
  | { readonly type: 'completed'; readonly step: number; readonly bestStep: number | null; readonly bestValidationLoss: number | null };

/** A consumer of {@link TrainerEvent}s. */
export type TrainerEventListener = (event: TrainerEvent) => void;
