/**
 * Learning-rate schedules: pure functions of the 1-based update number, so a
 * resumed run needs only the step to continue bit for bit.
 */
import { cos } from '@llmcp/model';
import { OptimError } from './errors.ts';

/** The learning rate of update `step` (1-based: the first update is step 1). */
export type LearningRateSchedule = (step: number) => number;

/** A JSON-serializable schedule definition (what a run config stores). */
export type ScheduleSpec =
  | { readonly kind: 'list'; readonly rates: readonly number[] }
  | { readonly kind: 'constant'; readonly rate: number }
  | {
      readonly kind: 'warmup-cosine';
      readonly peak: number;
      readonly warmupSteps: number;
      readonly totalSteps: number;
      readonly floor?: number;
    };

function checkStep(step: number): void {
  if (!Number.isSafeInteger(step) || step < 1) {
    throw new OptimError('OPTIM_SCHEDULE_STEP', `schedule step: expected an integer ≥ 1, found ${String(step)}`, { field: 'step' });
  }
}

function checkRate(rate: unknown, field: string): number {
  if (typeof rate !== 'number' || !Number.isFinite(rate) || !(rate > 0)) {
    throw new OptimError('OPTIM_INVALID_SCHEDULE', `${field}: expected a finite learning rate > 0, found ${String(rate)}`, { field });
  }
  return rate;
}

/**
 * A per-step list (../../../docs/spec/training.md §4): step k uses `rates[k − 1]`; no warm-up, no
 * interpolation. The fixture's list is 0.04, 0.04, 0.025, 0.025, 0.015, 0.015, 0.008, 0.008.
 *
 * @param rates - one finite rate > 0 per update.
 * @returns the schedule; asking for a step past the list throws `OPTIM_SCHEDULE_STEP`.
 * @throws OptimError `OPTIM_INVALID_SCHEDULE` for an empty list or a bad rate.
 * @example
 * ```ts
 * listSchedule([0.04, 0.025])(2); // 0.025
 * ```
 */
export function listSchedule(rates: readonly number[]): LearningRateSchedule {
  if (!Array.isArray(rates) || rates.length === 0) throw new OptimError('OPTIM_INVALID_SCHEDULE', 'list schedule: expected at least one rate', { field: 'rates' });
  const list = Object.freeze(rates.map((r, i) => checkRate(r, `rates[${i}]`)));
  return (step) => {
    checkStep(step);
    if (step > list.length) {
      throw new OptimError('OPTIM_SCHEDULE_STEP', `list schedule: step ${step} is past its ${list.length} rates`, { field: 'step', step });
    }
    return list[step - 1] as number;
  };
}

/**
 * The same rate at every step.
 * @param rate - a finite rate > 0.
 * @returns the schedule.
 * @throws OptimError `OPTIM_INVALID_SCHEDULE` for a bad rate.
 * @example
 * ```ts
 * constantSchedule(3e-3)(1000); // 0.003
 * ```
 */
export function constantSchedule(rate: number): LearningRateSchedule {
  const r = checkRate(rate, 'rate');
  return (step) => {
    checkStep(step);
    return r;
  };
}

/**
 * Linear warm-up then cosine decay. For step s (1-based), warm-up length W,
 * total length N, peak p and floor f:
 *
 * - s ≤ W: `(p · s) / W`;
 * - W < s < N: `f + (p − f) · (0.5 · (1 + cos(π · (s − W) / (N − W))))`;
 * - s ≥ N: `f`.
 *
 * Every operation is a single IEEE operation and `cos` is the package's
 * deterministic, correctly rounded one, so the rates are identical on every
 * machine and engine.
 *
 * @param options - peak rate, warm-up steps (≥ 0), total steps (> warm-up), floor (> 0 and ≤ peak; default peak / 10,
 *   since AdamW needs a positive rate at every step).
 * @returns the schedule.
 * @throws OptimError `OPTIM_INVALID_SCHEDULE`.
 * @example
 * ```ts
 * const lr = warmupCosineSchedule({ peak: 3e-3, warmupSteps: 100, totalSteps: 2000, floor: 3e-4 });
 * lr(50); // 0.0015
 * ```
 */
export function warmupCosineSchedule(options: { readonly peak: number; readonly warmupSteps: number; readonly totalSteps: number; readonly floor?: number }): LearningRateSchedule {
  const peak = checkRate(options.peak, 'peak');
  const floor = options.floor ?? peak / 10;
  if (typeof floor !== 'number' || !Number.isFinite(floor) || !(floor > 0) || floor > peak) {
    throw new OptimError('OPTIM_INVALID_SCHEDULE', `floor: expected a finite number in (0, peak], found ${String(floor)}`, { field: 'floor' });
  }
  const W = options.warmupSteps;
  const N = options.totalSteps;
  if (!Number.isSafeInteger(W) || W < 0) throw new OptimError('OPTIM_INVALID_SCHEDULE', `warmupSteps: expected an integer ≥ 0, found ${String(W)}`, { field: 'warmupSteps' });
  if (!Number.isSafeInteger(N) || N <= W) {
    throw new OptimError('OPTIM_INVALID_SCHEDULE', `totalSteps: expected an integer > warmupSteps (${W}), found ${String(N)}`, { field: 'totalSteps' });
  }
  return (step) => {
    checkStep(step);
    if (step <= W) return (peak * step) / W;
    if (step >= N) return floor;
    const progress = (step - W) / (N - W);
    return floor + (peak - floor) * (0.5 * (1 + cos(Math.PI * progress)));
  };
}

/**
 * A schedule from its JSON definition.
 * @param spec - list, constant or warmup-cosine.
 * @returns the schedule.
 * @throws OptimError `OPTIM_INVALID_SCHEDULE`.
 */
export function createSchedule(spec: ScheduleSpec): LearningRateSchedule {
  switch (spec?.kind) {
    case 'list':
      return listSchedule(spec.rates);
    case 'constant':
      return constantSchedule(spec.rate);
    case 'warmup-cosine':
      return warmupCosineSchedule(spec);
    default:
      throw new OptimError('OPTIM_INVALID_SCHEDULE', `schedule kind: expected 'list', 'constant' or 'warmup-cosine', found ${JSON.stringify((spec as { kind?: unknown } | null)?.kind)}`, {
        field: 'kind',
      });
  }
}
