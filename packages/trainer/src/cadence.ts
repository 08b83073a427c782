/**
 * Cadence and schedules of a run: which step boundaries validate and
 * checkpoint, and the learning rate of each update — pure functions of the
 * config.
 */
import { constantSchedule, listSchedule, warmupCosineSchedule, type LearningRateSchedule } from '@llmcp/optim';
import type { TrainerConfig } from './config.ts';

/**
 * The checkpoint cadence M (steps between cadence checkpoints): `checkpoint.every`, else `evaluation.validateEvery`.
 *
 * @param config - the run config.
 * @returns M.
 */
export function checkpointEvery(config: TrainerConfig): number {
  return config.checkpoint.every ?? config.evaluation.validateEvery;
}

/**
 * Whether validation runs after step `step` (step 0, every N, and the last step).
 *
 * @param config - the run config.
 * @param step - a step in [0, steps].
 * @returns true when validation is due.
 */
export function isValidationStep(config: TrainerConfig, step: number): boolean {
  return step === 0 || step % config.evaluation.validateEvery === 0 || step === config.steps;
}

/**
 * Whether a cadence checkpoint (with a sample audit) is due after `step`
 * (every M steps, and the last step; never step 0).
 *
 * @param config - the run config.
 * @param step - a step in [0, steps].
 * @returns true when a cadence checkpoint is due.
 */
export function isCheckpointStep(config: TrainerConfig, step: number): boolean {
  return step > 0 && (step % checkpointEvery(config) === 0 || step === config.steps);
}

const schedules = new WeakMap<TrainerConfig, LearningRateSchedule>();

/**
 * The `@llmcp/optim` schedule of a config (a pure function of the 1-based step).
 *
 * @param config - the run config.
 * @returns the schedule.
 */
export function scheduleOf(config: TrainerConfig): LearningRateSchedule {
  let schedule = schedules.get(config);
  if (schedule === undefined) {
    const s = config.schedule;
    switch (s.kind) {
      case 'constant':
        schedule = constantSchedule(s.rate ?? config.optimizer.learningRate);
        break;
      case 'list':
        schedule = listSchedule(s.rates);
        break;
      case 'warmup-cosine': {
        const peak = s.peak ?? config.optimizer.learningRate;
        schedule = warmupCosineSchedule({ peak, warmupSteps: s.warmupSteps, totalSteps: s.totalSteps ?? config.steps, floor: s.floor ?? peak / 10 });
        break;
      }
    }
    schedules.set(config, schedule);
  }
  return schedule;
}

/**
 * The learning rate of update `step` (1-based).
 *
 * @param config - the run config.
 * @param step - 1-based update step.
 * @returns the rate.
 */
export function learningRateAt(config: TrainerConfig, step: number): number {
  return scheduleOf(config)(step);
}
