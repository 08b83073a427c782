/**
 * Training jobs: start a run (`trainRun`), resume one (`resumeRun`), and the
 * loop they share — updates, the cadence of validation and checkpoints, best
 * selection, stop/checkpoint requests, the loss log and background saves.
 *
 * Order at every step boundary s (after update s, or s = 0 at the start):
 * 1. validation, if due at s and not done yet (training.md §7; interruptible
 *    between batches); a strictly lower validation loss makes s the best;
 * 2. the cadence checkpoint with its sample audit, if due at s and not done;
 *    a new best is published in the same save;
 * 3. a pending stop → checkpoint (if s is not saved yet) and return; a pending
 *    SIGUSR1 → checkpoint (if s is not saved yet) and continue;
 * 4. at the step budget: done; otherwise update s + 1 and append its loss record.
 * Requests only add checkpoints; they never change what is computed, so an
 * interrupted and resumed run produces the same bytes as an uninterrupted one.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { SplitMix64, u64Hex } from '@llmcp/format';
import { CheckpointSaver, type SaveMode } from './background-saver.ts';
import { diffConfig, isCheckpointStep, isValidationStep, learningRateAt, type TrainerConfig } from './config.ts';
import type { TrainingEngine, EvaluationList } from './engine.ts';
import { TrainerError, isTrainerError, publicErrors, toTrainerError } from './errors.ts';
import type { CheckpointReason, TrainerEvent, TrainerEventListener } from './events.ts';
import { JOB_FORMAT, type EvaluationRecord, type InputIdentity, type Job } from './job.ts';
import { EMPTY_LOSS_LOG, LossLog, planLossLogResume, type LossLogResumePlan } from './loss-log.ts';
import { appendRunEvent, readRunManifest, type RunEvent } from './run-manifest.ts';
import { checkpointsDir, chooseCheckpoint, listSlots, resumeCandidates, RUN_FILES, verifySlot, type SlotReport, type VerifiedSlot } from './run-directory.ts';
import type { SaveRequest, SaveResult } from './save.ts';
import { RunControl, yieldToEventLoop } from './signals.ts';
import { canonicalDigest } from './internal/canonical-json.ts';
import { removeLeftovers } from './internal/durable-fs.ts';
import { acquireRunLock } from './internal/run-lock.ts';
import { createEngine, type EngineFaults } from './llmcp-engine.ts';
import { diffInputs, implementationIdentity, prepareInputs, type PreparedInputs } from './inputs.ts';
import type { SampleAuditSettings } from './sample-audit.ts';

/** Options shared by every operation that trains. */
export interface TrainingOptions {
  /** Receives progress events. */
  readonly onEvent?: TrainerEventListener;
  /** Aborting it stops the run like SIGTERM (finish the step, checkpoint, return). */
  readonly signal?: AbortSignal;
  /** Install SIGTERM/SIGINT/SIGUSR1 handlers for the duration of the run (apps and the CLI). Default false. */
  readonly handleSignals?: boolean;
  /** `worker` (default): saves run in a worker thread; `inline`: on the training thread. */
  readonly saveMode?: SaveMode;
}

/** Options of {@link trainRun}. */
export interface TrainRunOptions extends TrainingOptions {
  /** Directory of the new run (created; must not hold a run yet). */
  readonly runDir: string;
  /** The validated config (see `parseConfig` / `loadConfig`). */
  readonly config: TrainerConfig;
}

/**
 * Deliberately broken resumes, for negative-control tests only: each drops one
 * piece of state so the test can show the final bytes then differ.
 */
export interface ResumeFaults extends EngineFaults {
  /** Re-seed the sampling stream from the config instead of restoring it. */
  readonly reseedSampling?: boolean;
}

/** Options of {@link resumeRun}. */
export interface ResumeRunOptions extends TrainingOptions {
  /** The config to continue with; refused unless equal to the recorded one. Default: the recorded config. */
  readonly config?: TrainerConfig;
  /** Negative-control faults (tests only). */
  readonly faults?: ResumeFaults;
}

/** The outcome of a training call. */
export interface RunResult {
  /** `completed`: reached the step budget; `stopped`: a stop request checkpointed and returned; `already-complete`: nothing to do. */
  readonly status: 'completed' | 'stopped' | 'already-complete';
  readonly runDir: string;
  readonly step: number;
  readonly totalSteps: number;
  readonly stopReason: string | null;
  readonly best: { readonly step: number; readonly validationLoss: number } | null;
  /** The slot resumed from (null for a fresh start). */
  readonly resumedFrom: string | null;
  /** How the resume slot was chosen (null for a fresh start). */
  readonly loadReport: readonly SlotReport[] | null;
  /** The last checkpoint written by this call. */
  readonly lastSave: SaveResult | null;
}

interface JobState {
  step: number;
  validated: boolean;
  audited: boolean;
  evaluations: EvaluationRecord[];
  best: { step: number; validationLoss: number } | null;
  samplingState: bigint;
  lastAuditStep: number | null;
  latestValid: boolean;
  bestValid: boolean;
  savedLatest: string | null;
}

interface JobContext {
  readonly runDir: string;
  readonly config: TrainerConfig;
  readonly configDigest: string;
  readonly identity: InputIdentity;
  readonly engine: TrainingEngine;
  readonly lossLog: LossLog;
  readonly saver: CheckpointSaver;
  readonly control: RunControl;
  readonly emit: (event: TrainerEvent) => void;
  readonly runId: string;
  readonly pivots: number;
  readonly state: JobState;
  auditInFlight: boolean;
  lastSave: SaveResult | null;
}

const nowIso = (): string => new Date().toISOString();

function auditSettings(config: TrainerConfig): SampleAuditSettings | null {
  const s = config.sampling;
  if (s.count === 0) return null;
  return { prompt: s.prompt, count: s.count, maxNewTokens: s.maxNewTokens, temperature: s.temperature, topK: s.topK };
}

/**
 * The sampling stream's initial state: the seed as the raw state, then
 * `discard` draws thrown away (the golden fixture: seed 35, one discarded draw).
 *
 * @param config - the run config.
 * @returns the raw state.
 */
export function initialSamplingState(config: TrainerConfig): bigint {
  const rng = new SplitMix64(BigInt(config.sampling.seed));
  for (let i = 0; i < config.sampling.discard; i += 1) rng.nextU64();
  return rng.state;
}

function phaseKey(state: { readonly step: number; readonly validated: boolean; readonly audited: boolean }): string {
  return `${state.step}:${state.validated}:${state.audited}`;
}

async function saveCheckpoint(
  ctx: JobContext,
  reason: CheckpointReason,
  slots: { latest: boolean; best: boolean; step: boolean },
  withAudit: boolean,
): Promise<void> {
  const started = performance.now();
  if (ctx.auditInFlight) {
    // The stream continues from the state after the last audit, which the save reports.
    const last = await ctx.saver.flush();
    ctx.auditInFlight = false;
    if (last !== null) ctx.state.samplingState = BigInt(last.samplingNextState);
  }
  const { state, config, engine } = ctx;
  const audit = withAudit ? auditSettings(config) : null;
  const snapshot = engine.snapshot(state.step, state.samplingState);
  const samplingHex = u64Hex(state.samplingState);
  const request: SaveRequest = {
    runDir: ctx.runDir,
    state: snapshot,
    job: {
      format: JOB_FORMAT,
      step: state.step,
      phase: { validated: state.validated, audited: state.audited || withAudit },
      config,
      configDigest: ctx.configDigest,
      inputs: ctx.identity,
      data: engine.dataState(),
      schedule: { step: state.step, nextLearningRate: state.step < config.steps ? learningRateAt(config, state.step + 1) : null },
      evaluations: [...state.evaluations],
      best: state.best,
      sampling: { checkpointState: samplingHex, nextState: audit === null ? samplingHex : null, lastAuditStep: audit === null ? state.lastAuditStep : state.step },
      lossLog: ctx.lossLog.position(),
      nextBatch: engine.nextBatchFingerprint(),
      run: { id: ctx.runId, pivots: ctx.pivots },
    },
    slots,
    audit,
    keepSteps: config.checkpoint.keepSteps,
    latestIsValid: state.latestValid,
    bestIsValid: state.bestValid,
  };
  await ctx.saver.submit(request);
  if (audit !== null) {
    ctx.auditInFlight = true;
    state.lastAuditStep = state.step;
  }
  if (slots.latest) {
    state.latestValid = true;
    state.savedLatest = phaseKey({ ...state, audited: state.audited || withAudit });
  }
  if (slots.best) state.bestValid = true;
  ctx.emit({ type: 'checkpoint', step: state.step, reason, blockedMs: performance.now() - started });
}

async function evaluate(ctx: JobContext): Promise<EvaluationRecord | null> {
  const { engine, config, state } = ctx;
  const lists: EvaluationList[] = config.evaluation.trainingLoss ? ['training', 'validation'] : ['validation'];
  const means: Partial<Record<EvaluationList, number>> = {};
  for (const list of lists) {
    const batches = engine.evaluationBatches(list);
    ctx.emit({ type: 'evaluation-start', step: state.step, list, batches });
    let weighted = 0;
    let tokens = 0;
    for (let i = 0; i < batches; i += 1) {
      await yieldToEventLoop();
      if (ctx.control.stopRequested !== null) {
        ctx.emit({ type: 'evaluation-aborted', step: state.step, list, batchesDone: i });
        return null;
      }
      const r = engine.evaluateBatch(list, i);
      weighted += r.loss * r.tokens;
      tokens += r.tokens;
      ctx.emit({ type: 'evaluation-batch', step: state.step, list, index: i, batches });
    }
    const mean = weighted / tokens;
    if (!Number.isFinite(mean)) throw new TrainerError('TRAINER_NON_FINITE', `${list} loss at step ${state.step} is ${mean}`, { step: state.step });
    means[list] = mean;
  }
  return { step: state.step, validationLoss: means.validation as number, trainingLoss: means.training ?? null };
}

async function runLoop(ctx: JobContext): Promise<{ status: 'completed' | 'stopped'; reason: string | null }> {
  const { config, state, engine, control } = ctx;
  for (;;) {
    if (isValidationStep(config, state.step) && !state.validated) {
      const record = await evaluate(ctx);
      if (record !== null) {
        state.evaluations.push(record);
        state.validated = true;
        const improved = state.best === null || record.validationLoss < state.best.validationLoss;
        if (improved) state.best = { step: state.step, validationLoss: record.validationLoss };
        const best = state.best as { step: number; validationLoss: number };
        ctx.emit({
          type: 'evaluation',
          step: state.step,
          validationLoss: record.validationLoss,
          trainingLoss: record.trainingLoss,
          bestStep: best.step,
          bestValidationLoss: best.validationLoss,
          improved,
        });
        const cadence = isCheckpointStep(config, state.step) && !state.audited;
        if (improved && !cadence) await saveCheckpoint(ctx, 'best', { latest: false, best: true, step: false }, false);
        if (cadence) {
          await saveCheckpoint(ctx, state.step === config.steps ? 'final' : 'cadence', { latest: true, best: improved, step: true }, true);
          state.audited = true;
        }
      }
    }
    if (state.validated && isCheckpointStep(config, state.step) && !state.audited) {
      await saveCheckpoint(ctx, state.step === config.steps ? 'final' : 'cadence', { latest: true, best: false, step: true }, true);
      state.audited = true;
    }
    const finished = state.step >= config.steps && state.validated && state.audited;
    if (control.stopRequested !== null && !finished) {
      if (state.savedLatest !== phaseKey(state)) await saveCheckpoint(ctx, 'stop', { latest: true, best: false, step: false }, false);
      return { status: 'stopped', reason: control.stopRequested };
    }
    if (control.takeCheckpointRequest() && state.savedLatest !== phaseKey(state)) {
      await saveCheckpoint(ctx, 'signal', { latest: true, best: false, step: false }, false);
    }
    if (ctx.saver.failure !== null) await ctx.saver.flush();
    if (finished) return { status: 'completed', reason: null };

    const step = state.step + 1;
    const learningRate = learningRateAt(config, step);
    const started = performance.now();
    let update;
    try {
      update = engine.update(learningRate);
    } catch (e) {
      if (isTrainerError(e)) throw e;
      // Nothing of the failed update was applied or logged; the last checkpoint stays the resume point.
      throw new TrainerError(toTrainerError(e).code, `update ${step} failed: ${(e as Error).message}`, { step, cause: e });
    }
    const stepMs = performance.now() - started;
    state.step = step;
    state.validated = !isValidationStep(config, step);
    state.audited = !isCheckpointStep(config, step);
    const record = { step, loss: update.loss, learningRate, gradientNorm: update.gradientNorm, clipped: update.clipped, tokens: update.tokens };
    ctx.lossLog.append(
      record,
      config.log.timing ? { tokensPerSecond: stepMs > 0 ? (update.tokens * 1000) / stepMs : 0, stepMs, time: nowIso() } : null,
    );
    ctx.emit({ type: 'step', ...record, totalSteps: config.steps, stepMs });
    await yieldToEventLoop();
  }
}

function emitter(listener: TrainerEventListener | undefined): (event: TrainerEvent) => void {
  if (listener === undefined) return () => {};
  return (event) => {
    try {
      listener(event);
    } catch {
      // a failing listener never affects training
    }
  };
}

interface JobSetup {
  readonly runDir: string;
  readonly config: TrainerConfig;
  readonly inputs: PreparedInputs;
  readonly engine: TrainingEngine;
  readonly lossLog: LossLog;
  readonly runId: string;
  readonly pivots: number;
  readonly state: JobState;
  readonly resumedFrom: string | null;
  readonly loadReport: readonly SlotReport[] | null;
}

async function executeJob(setup: JobSetup, options: TrainingOptions, release: () => void): Promise<RunResult> {
  const emit = emitter(options.onEvent);
  const control = new RunControl();
  control.onRequest = (what) => emit({ type: 'signal', signal: what });
  if (options.signal !== undefined) control.followAbortSignal(options.signal);
  if (options.handleSignals === true) control.installProcessHandlers();
  const ctx: JobContext = {
    runDir: setup.runDir,
    config: setup.config,
    configDigest: canonicalDigest(setup.config),
    identity: setup.inputs.identity,
    engine: setup.engine,
    lossLog: setup.lossLog,
    saver: new CheckpointSaver(options.saveMode ?? 'worker', (result) => {
      emit({ type: 'checkpoint-saved', step: result.step, slots: result.slots, saveMs: result.durationMs, samples: result.audit?.samples.map((s) => s.text ?? '') ?? null });
    }),
    control,
    emit,
    runId: setup.runId,
    pivots: setup.pivots,
    state: setup.state,
    auditInFlight: false,
    lastSave: null,
  };
  emit({
    type: 'start',
    runDir: setup.runDir,
    resumedFrom: setup.resumedFrom,
    step: setup.state.step,
    totalSteps: setup.config.steps,
    parameterCount: setup.engine.parameterCount,
    vocabularySize: setup.engine.vocabularySize,
    tokensPerStep: setup.engine.tokensPerStep,
  });
  let outcome: { status: 'completed' | 'stopped'; reason: string | null };
  try {
    outcome = await runLoop(ctx);
    ctx.lastSave = await ctx.saver.flush();
  } finally {
    try {
      await ctx.saver.close().catch(() => {});
    } finally {
      control.dispose();
      setup.lossLog.close();
      await setup.engine.dispose();
    }
  }
  const { state } = ctx;
  try {
    if (outcome.status === 'stopped') {
      await appendRunEvent(setup.runDir, setup.runId, { event: 'stopped', time: nowIso(), step: state.step, reason: outcome.reason ?? 'stop' });
      emit({ type: 'stopped', step: state.step, reason: outcome.reason ?? 'stop' });
    } else {
      await appendRunEvent(setup.runDir, setup.runId, {
        event: 'completed',
        time: nowIso(),
        step: state.step,
        bestStep: state.best?.step ?? null,
        bestValidationLoss: state.best?.validationLoss ?? null,
      });
      emit({ type: 'completed', step: state.step, bestStep: state.best?.step ?? null, bestValidationLoss: state.best?.validationLoss ?? null });
    }
  } finally {
    release();
  }
  return {
    status: outcome.status,
    runDir: setup.runDir,
    step: state.step,
    totalSteps: setup.config.steps,
    stopReason: outcome.reason,
    best: state.best,
    resumedFrom: setup.resumedFrom,
    loadReport: setup.loadReport,
    lastSave: ctx.lastSave,
  };
}

function freshState(config: TrainerConfig): JobState {
  return {
    step: 0,
    validated: false,
    audited: true,
    evaluations: [],
    best: null,
    samplingState: initialSamplingState(config),
    lastAuditStep: null,
    latestValid: true,
    bestValid: true,
    savedLatest: null,
  };
}

/** Whether a slot is absent or verifies (a damaged one must not become a backup). */
function slotVerifies(runDir: string, slot: string): boolean {
  if (!existsSync(path.join(checkpointsDir(runDir), slot))) return true;
  try {
    verifySlot(runDir, slot);
    return true;
  } catch {
    return false;
  }
}

/**
 * Starts a new run in `runDir` and trains it to its step budget (or until a
 * stop request, after which it checkpoints and returns).
 *
 * @param options - run directory, config, events, signals.
 * @returns the outcome.
 * @throws TrainerError `TRAINER_RUN_INVALID` when `runDir` already holds a run; input, save or numeric errors.
 * @example
 * ```ts
 * const config = loadConfig('train.json');
 * const result = await trainRun({ runDir: 'runs/a', config, handleSignals: true });
 * ```
 */
export async function trainRun(options: TrainRunOptions): Promise<RunResult> {
  return publicErrors(async () => {
    const { runDir, config } = options;
    const occupied = (): boolean => existsSync(path.join(runDir, RUN_FILES.manifest)) || listSlots(runDir).length > 0;
    if (occupied()) {
      throw new TrainerError('TRAINER_RUN_INVALID', `${runDir} already holds a run; resume it (resumeRun) or choose another directory`, { path: runDir });
    }
    // Inputs and engine first: a bad corpus, tokenizer or config leaves nothing behind on disk.
    const inputs = await prepareInputs(config, {});
    const engine = await createEngine(config, inputs, null, {});
    let release: () => void = () => {};
    const createdDir = !existsSync(runDir);
    let started = false;
    try {
      mkdirSync(runDir, { recursive: true });
      release = acquireRunLock(runDir);
      if (occupied()) throw new TrainerError('TRAINER_RUN_INVALID', `${runDir} already holds a run (created concurrently)`, { path: runDir });
      const runId = randomUUID();
      mkdirSync(checkpointsDir(runDir), { recursive: true });
      const lossLog = LossLog.create(path.join(runDir, RUN_FILES.lossLog));
      await appendRunEvent(runDir, runId, { event: 'created', time: nowIso(), configDigest: canonicalDigest(config), steps: config.steps, config });
      started = true;
      return await executeJob(
        { runDir, config, inputs, engine, lossLog, runId, pivots: 0, state: freshState(config), resumedFrom: null, loadReport: null },
        options,
        release,
      );
    } catch (e) {
      if (!started) {
        await engine.dispose();
        if (createdDir) rmSync(runDir, { recursive: true, force: true });
      }
      release();
      throw e;
    }
  });
}

/** A verified resume point with everything checked, before anything is changed on disk. */
export interface ResumePlan {
  readonly runDir: string;
  readonly chosen: VerifiedSlot;
  readonly report: readonly SlotReport[];
  readonly config: TrainerConfig;
  readonly inputs: PreparedInputs;
  readonly lossPlan: LossLogResumePlan;
}

/**
 * Loads and checks everything a resume needs, changing nothing on disk: the
 * checkpoint (with fallback), the implementation version, the config, every
 * input identity, and the loss log.
 *
 * @param runDir - the run directory.
 * @param requested - the config the caller wants to continue with (default: the recorded one).
 * @param allowedChanges - config keys that may differ (pivot); default none.
 * @returns the plan.
 * @throws TrainerError naming every changed field or input.
 */
export async function planResume(runDir: string, requested: TrainerConfig | undefined, allowedChanges: (key: string) => boolean = () => false): Promise<ResumePlan> {
  const { chosen, report } = chooseCheckpoint(runDir);
  const job: Job = chosen.job;
  const implementation = implementationIdentity();
  if (implementation.id !== job.inputs.implementation.id) {
    throw new TrainerError(
      'TRAINER_IMPLEMENTATION_CHANGED',
      `${chosen.slot} was written by implementation ${job.inputs.implementation.id}, this is ${implementation.id}; the numerics may differ, so the run cannot resume bit-exactly`,
      { slot: chosen.slot, fields: ['inputs.implementation'] },
    );
  }
  const config = requested ?? job.config;
  const changed = diffConfig(job.config, config).filter((k) => !allowedChanges(k));
  if (changed.length > 0) {
    throw new TrainerError('TRAINER_CONFIG_CHANGED', `the config differs from the one ${runDir} was trained with: ${changed.join(', ')} changed`, {
      slot: chosen.slot,
      fields: changed,
    });
  }
  const inputs = await prepareInputs(config, { tokenizerState: chosen.state.tokenizer });
  const inputChanges = diffInputs(job.inputs, inputs.identity);
  if (inputChanges.length > 0) {
    throw new TrainerError(
      'TRAINER_INPUT_CHANGED',
      `training inputs differ from the ones ${runDir} was trained with: ${inputChanges.join('; ')}`,
      { slot: chosen.slot, fields: inputChanges.map((c) => c.split(':')[0] ?? c) },
    );
  }
  const lossPlan = planLossLogResume(path.join(runDir, RUN_FILES.lossLog), job.lossLog);
  return { runDir, chosen, report, config, inputs, lossPlan };
}

/**
 * Resumes a run from its newest verified checkpoint and trains on. Everything
 * is checked before anything changes on disk: a refused resume leaves the
 * directory exactly as it was. A run killed before its first checkpoint
 * restarts from step 0 (recorded in run.json).
 *
 * @param runDir - the run directory.
 * @param options - config to continue with (must equal the recorded one), events, signals.
 * @returns the outcome (`already-complete` when the budget was reached before).
 * @throws TrainerError `TRAINER_CONFIG_CHANGED`, `TRAINER_INPUT_CHANGED`, `TRAINER_IMPLEMENTATION_CHANGED`, `TRAINER_NO_CHECKPOINT`, `TRAINER_LOSS_LOG_INVALID`, `TRAINER_RESTORE_MISMATCH`, …
 * @example
 * ```ts
 * const result = await resumeRun('runs/a', { handleSignals: true });
 * console.log(result.resumedFrom, result.step);
 * ```
 */
export async function resumeRun(runDir: string, options: ResumeRunOptions = {}): Promise<RunResult> {
  return publicErrors(() => resumeRunUnwrapped(runDir, options));
}

async function resumeRunUnwrapped(runDir: string, options: ResumeRunOptions): Promise<RunResult> {
  if (!existsSync(path.join(runDir, RUN_FILES.manifest))) {
    throw new TrainerError('TRAINER_RUN_INVALID', `${runDir} is not a run directory (no run.json)`, { path: runDir });
  }
  const release = acquireRunLock(runDir);
  try {
    if (resumeCandidates(runDir).length === 0) return await restartRun(runDir, options, release);
    const plan = await planResume(runDir, options.config);
    const faults = options.faults ?? {};
    const job = plan.chosen.job;
    const engine = await createEngine(plan.config, plan.inputs, { state: plan.chosen.state, data: job.data }, faults);
    const next = engine.nextBatchFingerprint();
    if (faults.dropShuffleState !== true && next !== job.nextBatch) {
      await engine.dispose();
      throw new TrainerError(
        'TRAINER_RESTORE_MISMATCH',
        `the restored data order yields next batch ${next}, but ${plan.chosen.slot} recorded ${String(job.nextBatch)}`,
        { slot: plan.chosen.slot, fields: ['data', 'nextBatch'] },
      );
    }
    if (job.step >= plan.config.steps && job.phase.validated && job.phase.audited) {
      await engine.dispose();
      release();
      return {
        status: 'already-complete',
        runDir,
        step: job.step,
        totalSteps: plan.config.steps,
        stopReason: null,
        best: job.best,
        resumedFrom: plan.chosen.slot,
        loadReport: plan.report,
        lastSave: null,
      };
    }
    const manifest = readRunManifest(runDir);
    // Everything verified: from here on the resume changes the directory.
    removeLeftovers(checkpointsDir(runDir));
    const lossLog = LossLog.resume(plan.lossPlan);
    const runId = manifest?.runId ?? job.run.id;
    await appendRunEvent(runDir, runId, {
      event: 'resumed',
      time: nowIso(),
      slot: plan.chosen.slot,
      step: job.step,
      orphanedLossRecords: plan.lossPlan.orphanedRecords,
      orphanedLossSha256: plan.lossPlan.orphanedSha256,
      refused: plan.report.filter((r) => r.status === 'refused').map((r) => ({ slot: r.slot, reason: r.reason ?? '' })),
    });
    const state: JobState = {
      step: job.step,
      validated: job.phase.validated,
      audited: job.phase.audited,
      evaluations: [...job.evaluations],
      best: job.best,
      samplingState: faults.reseedSampling === true ? initialSamplingState(plan.config) : BigInt(job.sampling.nextState),
      lastAuditStep: job.sampling.lastAuditStep,
      latestValid: plan.chosen.slot === 'latest' || plan.report.find((r) => r.slot === 'latest')?.status !== 'refused',
      bestValid: slotVerifies(runDir, 'best'),
      savedLatest: plan.chosen.slot === 'latest' ? phaseKey({ step: job.step, ...job.phase }) : null,
    };
    return await executeJob(
      { runDir, config: plan.config, inputs: plan.inputs, engine, lossLog, runId, pivots: job.run.pivots, state, resumedFrom: plan.chosen.slot, loadReport: plan.report },
      options,
      release,
    );
  } catch (e) {
    release();
    throw e;
  }
}

async function restartRun(runDir: string, options: ResumeRunOptions, release: () => void): Promise<RunResult> {
  const manifest = readRunManifest(runDir);
  const created = manifest?.events.find((e): e is Extract<RunEvent, { event: 'created' }> => e.event === 'created');
  const recorded = created?.config;
  if (manifest === null || recorded === undefined) {
    throw new TrainerError('TRAINER_NO_CHECKPOINT', `${runDir} has no checkpoint and no recorded config to restart from`, { path: runDir });
  }
  const config = options.config ?? recorded;
  const changed = diffConfig(recorded, config);
  if (changed.length > 0) {
    throw new TrainerError('TRAINER_CONFIG_CHANGED', `the config differs from the one ${runDir} was started with: ${changed.join(', ')} changed`, { fields: changed });
  }
  const lossPlan = planLossLogResume(path.join(runDir, RUN_FILES.lossLog), EMPTY_LOSS_LOG);
  const inputs = await prepareInputs(config, {});
  const engine = await createEngine(config, inputs, null, {});
  removeLeftovers(checkpointsDir(runDir));
  mkdirSync(checkpointsDir(runDir), { recursive: true });
  const lossLog = LossLog.resume(lossPlan);
  await appendRunEvent(runDir, manifest.runId, {
    event: 'restarted',
    time: nowIso(),
    reason: 'no checkpoint was written before the run stopped',
    orphanedLossRecords: lossPlan.orphanedRecords,
    orphanedLossSha256: lossPlan.orphanedSha256,
  });
  return executeJob(
    { runDir, config, inputs, engine, lossLog, runId: manifest.runId, pivots: 0, state: freshState(config), resumedFrom: null, loadReport: null },
    options,
    release,
  );
}
