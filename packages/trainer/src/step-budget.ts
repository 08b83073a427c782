/**
 * Changing a run's step budget on resume (`resumeRun(dir, { steps })`,
 * `llmcp resume --steps`, the trainer app's `--steps`): the sentence that
 * says what the change does to the learning-rate schedule. The rule of what a
 * resume may change (`RESUME_CHANGEABLE_FIELDS`, `isStepBudgetChange`) lives
 * with the other config-difference rules in config-diff.ts.
 *
 * A resume continues with the recorded config. The single exception is the
 * step budget: when `steps` is the *only* field that differs, the resume
 * applies it as a recorded pivot of `steps` (run.json event `pivot`, the old
 * config archived, exactly as `pivotRun` with `changes: ['steps']`) and trains
 * on. Every other difference — also `steps` together with anything else — is
 * refused with `TRAINER_CONFIG_CHANGED` naming every differing field; those
 * go through an explicit pivot. Fields that callers derive from the budget
 * (the cadence and warm-up of a size preset) are the caller's business: they
 * keep the values the run was started with, so they do not differ.
 */
import { learningRateAt } from './cadence.ts';
import type { TrainerConfig } from './config.ts';

/** A step-budget change a resume applied (also the `budget-changed` event). */
export interface StepBudgetChange {
  /** The checkpoint step it was applied at. */
  readonly step: number;
  readonly fromSteps: number;
  readonly toSteps: number;
  /** The pivot number recorded in run.json. */
  readonly pivot: number;
  /** `extending from 60 to 90 steps; the schedule now …` (one line, no newline). */
  readonly description: string;
}

const rate = (x: number): string => String(Number(x.toPrecision(6)));

/**
 * Says what a step-budget change does: from and to, and exactly how the
 * learning-rate schedule continues after the checkpoint step.
 *
 * @param before - the recorded config.
 * @param after - the config with the new budget.
 * @param step - the checkpoint step the change applies at.
 * @returns one line, e.g. `extending from 60 to 90 steps; the warmup-cosine schedule now decays over 90 steps instead of 60: update 61 uses learning rate 0.00412 (update 60 used 0.001), reaching the floor 0.001 at step 90`.
 */
export function describeStepBudgetChange(before: TrainerConfig, after: TrainerConfig, step: number): string {
  const from = before.steps;
  const to = after.steps;
  const head = `${to >= from ? 'extending' : 'shortening'} from ${from} to ${to} steps`;
  if (step >= to) return `${head}; no updates remain after step ${step}`;
  const next = learningRateAt(after, step + 1);
  const prev = step > 0 ? ` (update ${step} used ${rate(learningRateAt(before, step))})` : '';
  const s = after.schedule;
  switch (s.kind) {
    case 'constant':
      return `${head}; the schedule is constant: updates ${step + 1} to ${to} use learning rate ${rate(next)}`;
    case 'list':
      return `${head}; the list schedule continues with its own rates: update ${step + 1} uses ${rate(next)}${prev}`;
    case 'warmup-cosine': {
      const floor = s.floor ?? (s.peak ?? after.optimizer.learningRate) / 10;
      if (s.totalSteps !== null) {
        return `${head}; the warmup-cosine schedule is unchanged (it spans totalSteps ${s.totalSteps}): update ${step + 1} uses learning rate ${rate(next)}${prev}${s.totalSteps < to ? `, the floor ${rate(floor)} from step ${s.totalSteps} on` : ''}`;
      }
      const warm = step < s.warmupSteps ? `warm-up continues to step ${s.warmupSteps}, then it ` : 'it ';
      return `${head}; the warmup-cosine schedule now spans ${to} steps instead of ${from}: ${warm}decays by cosine from the new position, so update ${step + 1} uses learning rate ${rate(next)}${prev}, reaching the floor ${rate(floor)} at step ${to}`;
    }
  }
}
