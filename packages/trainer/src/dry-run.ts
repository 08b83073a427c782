/**
 * A dry run (`planRun`, `llmcp train --dry-run`): reads and tokenizes the
 * corpus, builds the model, measures a few updates and an evaluation batch on
 * that throwaway engine, and estimates memory and time — writing nothing.
 */
import { learningRateAt } from './cadence.ts';
import type { TrainerConfig } from './config.ts';
import { prepareInputs } from './inputs.ts';
import type { TorchEngineOptions } from './torch-engine.ts';
import { createEngine } from './llmcp-engine.ts';
import { runPlanOf, type RunPlan } from './run-plan.ts';

/** A dry run's plan with its measurements. */
export interface DryRunPlan extends RunPlan {
  /** Updates measured (after one untimed warm-up update). */
  readonly measuredSteps: number;
  /** Median milliseconds of a measured update. */
  readonly stepMs: number;
  /** Milliseconds of one evaluation pass (validation, and the training loss when configured), from a measured batch. */
  readonly evaluationPassMs: number;
  /** Estimated seconds of one epoch of updates. */
  readonly estimatedSecondsPerEpoch: number;
  /** Estimated seconds of the whole run: its updates and every evaluation pass (checkpoints are written in the background). */
  readonly estimatedSecondsTotal: number;
  /**
   * Peak resident memory of this process after preparing the inputs and measuring, plus one more copy of the
   * parameters and both AdamW moments (a checkpoint being saved in the background): what the run needs.
   */
  readonly peakMemoryBytes: number;
}

/** Options of {@link planRun}. */
export interface PlanRunOptions {
  /** Updates to time (default 3; one more untimed update warms up first). */
  readonly measureSteps?: number;
  /** The clock, in milliseconds (default `performance.now`). */
  readonly now?: () => number;
  /** This process's peak resident memory in bytes (default `process.resourceUsage().maxRSS` × 1024). */
  readonly peakResidentBytes?: () => number;
  /** This machine's settings for a torch engine (a config with `engine.kind` torch measures its steps there). */
  readonly torch?: TorchEngineOptions;
}

/**
 * A dry run: reads and tokenizes the corpus, builds the model and its data
 * order, runs a few updates and one evaluation batch of each list on that
 * throwaway engine, and returns the plan with time and memory estimates.
 * Nothing is written.
 *
 * @param config - the run config.
 * @param options - how many updates to measure; the clock and memory probe (tests).
 * @returns the plan.
 * @throws TrainerError as `trainRun` would before it writes anything (inputs, config).
 * @example
 * ```ts
 * const plan = await planRun(config);
 * console.log(plan.coveredTokens / plan.trainingTokens, plan.estimatedSecondsPerEpoch);
 * ```
 */
export async function planRun(config: TrainerConfig, options: PlanRunOptions = {}): Promise<DryRunPlan> {
  const now = options.now ?? ((): number => performance.now());
  const peak = options.peakResidentBytes ?? ((): number => process.resourceUsage().maxRSS * 1024);
  const measureSteps = Math.max(1, Math.min(options.measureSteps ?? 3, config.steps));
  const inputs = await prepareInputs(config, {});
  const engine = await createEngine(config, inputs, { torch: options.torch ?? {} });
  try {
    const plan = runPlanOf(config, inputs, engine);
    await engine.update(learningRateAt(config, 1));
    const times: number[] = [];
    for (let i = 0; i < measureSteps; i += 1) {
      const t0 = now();
      await engine.update(learningRateAt(config, Math.min(config.steps, i + 2)));
      times.push(now() - t0);
    }
    times.sort((a, b) => a - b);
    const stepMs = times[Math.floor(times.length / 2)] as number;
    let evaluationPassMs = 0;
    for (const list of ['validation', 'training'] as const) {
      const batches = engine.evaluationBatches(list);
      if (batches === 0) continue;
      const t0 = now();
      await engine.evaluateBatch(list, 0);
      evaluationPassMs += (now() - t0) * batches;
    }
    const estimatedSecondsPerEpoch = (plan.stepsPerEpoch * stepMs) / 1000;
    const estimatedSecondsTotal = (config.steps * stepMs + plan.evaluation.passes * evaluationPassMs) / 1000;
    const saveCopyBytes = 3 * 8 * engine.parameterCount;
    return { ...plan, measuredSteps: measureSteps, stepMs, evaluationPassMs, estimatedSecondsPerEpoch, estimatedSecondsTotal, peakMemoryBytes: peak() + saveCopyBytes };
  } finally {
    await engine.dispose();
  }
}
