/**
 * Events a training job reports while it runs (for progress displays, logs and
 * tests). Reporting never affects the training result.
 */

/** Why a checkpoint was written. */
export type CheckpointReason = 'cadence' | 'best' | 'signal' | 'stop' | 'final' | 'pivot' | 'fork';

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
      /** Texts of the sample audit, when one ran. */
      readonly samples: readonly string[] | null;
    }
  | { readonly type: 'signal'; readonly signal: 'SIGTERM' | 'SIGINT' | 'SIGUSR1' | 'abort' }
  | { readonly type: 'stopped'; readonly step: number; readonly reason: string }
  | { readonly type: 'completed'; readonly step: number; readonly bestStep: number | null; readonly bestValidationLoss: number | null };

/** A consumer of {@link TrainerEvent}s. */
export type TrainerEventListener = (event: TrainerEvent) => void;
