export { AdamW, NO_DECAY_GAINS } from './adamw.ts';
export type { AdamWOptions, AdamWStepOptions, NoDecayRule, OptimizableModel } from './adamw.ts';
export { clipByGlobalNorm } from './clip.ts';
export type { ClipResult, GradientTransform } from './clip.ts';
export { constantSchedule, createSchedule, listSchedule, warmupCosineSchedule } from './schedule.ts';
export type { LearningRateSchedule, ScheduleSpec } from './schedule.ts';
export { OPTIM_ERROR_CODES, OptimError, isOptimError } from './errors.ts';
export type { OptimErrorCode, OptimErrorContext } from './errors.ts';
