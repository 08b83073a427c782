/**
 * Training jobs: start a run (`trainRun`), resume one (`resumeRun`), and the
 * loop they share — updates, the cadence of validation and checkpoints, best
 * selection, stop/checkpoint requests, the loss log and background saves.
 *
 * Order at every step boundary s (after update s, or s = 0 at the start):
 * 1. validation, if due at s and not done yet (../../../docs/spec/training.md §7; interruptible
 *    between batches); a strictly lower validation loss makes s the best;
 * 2. the cadence checkpoint with its sample audit, if due at s and not done;
 *    a new best is published in the same save;
 * 3. a pending stop → checkpoint (if s is not saved yet) and return; a pending
 *    SIGUSR1 → checkpoint (if s is not saved yet) and continue;
 * 4. at the step budget: done; otherwise update s + 1 and append its loss record.
 * Requests only add checkpoints; they never change what is computed, so an
 * interrupted and resumed run produces the same bytes as an uninterrupted one.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { SplitMix64, u64Hex } from '@llmcp/format';
import { kernelInfo } from '@llmcp/model';
import { CheckpointSaver, type SaveMode } from './background-saver.ts';
import { savePriorityFromEnv } from './save-priority.ts';
import { isCheckpointStep, isValidationStep, learningRateAt } from './cadence.ts';
import { parseConfig, readRecordedConfig, type TrainerConfig } from './config.ts';
import { diffConfig, isPolicyField, isStepBudgetChange, RESUME_CHANGEABLE_FIELDS } from './config-diff.ts';
import type { TrainingEngine, EvaluationList } from './engine.ts';
import { TrainerError, isTrainerError, publicErrors, toTrainerError } from './errors.ts';
import type { CheckpointReason, TrainerEvent, TrainerEventListener } from './events.ts';
import type { EvaluationRecord, InputIdentity, Job } from './job.ts';
import { EMPTY_LOSS_LOG, LossLog, planLossLogResume, type LossLogResumePlan } from './loss-log.ts';
import { appendRunEvent, readRunManifest, type EngineRecord, type ProvenanceRecord, type RunEvent } from './run-manifest.ts';
import {
  applyRetention,
  writesSnapshot,
  assertRunEntries,
  checkpointEvidence,
  checkpointsDir,
  chooseCheckpoint,
  copyCheckpointDirectory,
  publishSlot,
  readSlotJob,
  resumeCandidates,
  RUN_FILES,
  stepSlotName,
  verifySlot,
  type CheckpointEvidence,
  type SlotReport,
  type VerifiedSlot,
} from './run-directory.ts';
import { encodeSampleAudit, type SaveRequest, type SaveResult } from './save.ts';
import { MAX_TEXT_FILE_BYTES, readRegularFileSync, writeFileAtomic } from '@llmcp/format/node';
import { exitAtOnce, RunControl, yieldToEventLoop } from './signals.ts';
import { canonicalDigest } from './internal/canonical-json.ts';
import { makeDirectories, removeLeftovers } from './internal/durable-fs.ts';
import { acquireRunLock, type RunLock } from './internal/run-lock.ts';
import { assertNewRunDirectory, createRunDirectory, type NewRunDirectory } from './internal/new-run-directory.ts';
import { createEngine, dataOrderOf, nextBatchFingerprintOf, type EngineFaults } from './llmcp-engine.ts';
import type { TorchEngineOptions } from './torch-engine.ts';
import { withEngine, type EngineOverrides } from './engine-settings.ts';
import { diffInputs, implementationIdentity, prepareInputs, type PreparedInputs } from './inputs.ts';
import { auditSettingsOf, runSampleAudit, type SampleAudit } from './sample-audit.ts';
import { pivotHeldRun } from './pivot.ts';
import { runPlanOf } from './run-plan.ts';
import { describeStepBudgetChange, type StepBudgetChange } from './step-budget.ts';
import { parentLink, type LineageStep } from './checkpoint-manifest.ts';
import { removeLineageLeftovers } from './lineage-store.ts';
import type { LineageParent } from './provenance.ts';
import type { SigningKey } from './signing-key.ts';

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
  /** This machine's settings for a torch engine (interpreter, local ranks, rendezvous); never part of the config. */
  readonly torch?: TorchEngineOptions;
  /** The clock of `checkpoint.everyMinutes`, in milliseconds (default `performance.now`); tests drive it. */
  readonly now?: () => number;
  /**
   * Signs every checkpoint's provenance manifest (`loadSigningKey`; `--sign-key`). Without it the manifests are
   * written unsigned (their hashes and lineage are still checked). The key is never written anywhere.
   */
  readonly signingKey?: SigningKey | null;
}

/** Options of {@link trainRun}. */
export interface TrainRunOptions extends TrainingOptions {
  /** Directory of the new run (created; must not hold a run yet). */
  readonly runDir: string;
  /** The validated config (see `parseConfig` / `loadConfig`). */
  readonly config: TrainerConfig;
}

/**
 * Deliberately broken resumes, for negative-control tests only
 * ({@link resumeRunWithFaults}): each drops one piece of state so the test can
 * show the final bytes then differ.
 */
export interface ResumeFaults extends EngineFaults {
  /** Re-seed the sampling stream from the config instead of restoring it. */
  readonly reseedSampling?: boolean;
}

/** Options of {@link resumeRun}. */
export interface ResumeRunOptions extends TrainingOptions {
  /**
   * The config to continue with; refused unless equal to the recorded one,
   * except for the step budget (see `steps`). Default: the recorded config.
   */
  readonly config?: TrainerConfig;
  /**
   * The step budget to train to (default: `config.steps`, else the recorded
   * budget). When the budget is the only difference from the recorded config,
   * the resume applies it as a recorded pivot of `steps` (run.json, archive)
   * and reports it (`budgetChange`, a `budget-changed` event); it may not be
   * below the checkpoint's step.
   */
  readonly steps?: number;
  /** Model worker threads (default: `config.threads`, else the recorded value); never a config change, the bits do not depend on it. */
  readonly threads?: number;
  /** Engine fields to continue with (`--engine`, `--nproc`, …), over the config's; a change is refused unless applied by a pivot. */
  readonly engine?: EngineOverrides | null;
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
  /**
   * Pieces of the resumed step that its checkpoint says were due but that a
   * crash left missing (a step snapshot, the sample audit's `samples.json`,
   * `latest/`, `best/`, the `completed` event), completed before going on.
   */
  readonly repaired: readonly string[];
  /**
   * What left the `repaired` pieces undone: a crash (or a kill), or — when run.json's last event before this resume
   * is a fork or a pivot — that operation, which leaves them to the first resume after it. Null when nothing was repaired.
   */
  readonly repairedAfter: 'crash' | 'fork' | 'pivot' | null;
  /** The step-budget change this resume applied as a pivot, or null. */
  readonly budgetChange: StepBudgetChange | null;
  /**
   * Training records (steps) of `loss.jsonl` beyond the resumed checkpoint
   * that the resume cut (a crash lost those steps; they are recomputed
   * identically). 0 for a fresh start.
   */
  readonly lossRecordsCut: number;
}

/**
 * Where the job stands at the boundary after update `step`. `validated` and
 * `cadenceCheckpointDone` are written to job.json as `phase.validated` and
 * `phase.audited`.
 */
interface JobState {
  step: number;
  /** The validation due at `step` has run (true when none is due). */
  validated: boolean;
  /** The cadence checkpoint (with its sample audit) due at `step` was submitted (true when none is due). */
  cadenceCheckpointDone: boolean;
  evaluations: EvaluationRecord[];
  best: { step: number; validationLoss: number } | null;
  samplingState: bigint;
  lastAuditStep: number | null;
  latestValid: boolean;
  bestValid: boolean;
  /** The {@link phaseKey} of what latest/ holds (null when unknown): a stop or SIGUSR1 checkpoint is skipped when it equals the current one. */
  latestHoldsPhase: string | null;
}

interface JobContext {
  readonly runDir: string;
  readonly config: TrainerConfig;
  readonly configDigest: string;
  readonly identity: InputIdentity;
  readonly engine: TrainingEngine;
  readonly lossLog: LossLog;
  readonly saver: CheckpointSaver;
  readonly lock: RunLock;
  readonly control: RunControl;
  readonly emit: (event: TrainerEvent) => void;
  readonly runId: string;
  readonly pivots: number;
  readonly state: JobState;
  auditInFlight: boolean;
  lastSave: SaveResult | null;
  /** The clock of `checkpoint.everyMinutes`, and when `latest/` was last saved by it. */
  readonly now: () => number;
  latestSavedAt: number;
}

const nowIso = (): string => new Date().toISOString();

/** What run.json records of the engine that computes a segment of the run. */
function engineRecord(engine: TrainingEngine): EngineRecord {
  return { kind: engine.description.kind, worldSize: engine.description.worldSize };
}

/** What run.json records of the manifests of a segment of the run: written, and by which key (its hint) or unsigned. */
function provenanceRecord(options: TrainingOptions): ProvenanceRecord {
  return { manifests: true, signer: options.signingKey?.hint ?? null };
}

/** The torch engine's settings with its start-up lines reported as events. */
function engineOptions(options: TrainingOptions): TorchEngineOptions {
  const listener = options.onEvent;
  const own = options.torch ?? {};
  if (listener === undefined) return own;
  return {
    ...own,
    onStatus: (line) => {
      own.onStatus?.(line);
      try {
        listener({ type: 'engine-status', message: line });
      } catch {
        // a failing listener never affects training
      }
    },
  };
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

/** Identifies a step boundary and the work done at it (job.json's `step` and `phase`). */
function phaseKey(step: number, phase: { readonly validated: boolean; readonly audited: boolean }): string {
  return `${step}:${phase.validated}:${phase.audited}`;
}

/** The job.json `phase` of a state. */
function phaseOf(state: JobState): { validated: boolean; audited: boolean } {
  return { validated: state.validated, audited: state.cadenceCheckpointDone };
}

/** What a checkpoint publishes: its slots, and whether the sample audit runs with it (cadence checkpoints). */
interface CheckpointSpec {
  readonly slots: { latest: boolean; best: boolean; step: boolean };
  readonly withAudit: boolean;
}

async function saveCheckpoint(ctx: JobContext, reason: CheckpointReason, spec: CheckpointSpec): Promise<void> {
  const { slots, withAudit } = spec;
  const started = performance.now();
  if (ctx.auditInFlight) {
    // The stream continues from the state after the last audit, which the save reports.
    const last = await ctx.saver.flush();
    ctx.auditInFlight = false;
    if (last !== null) ctx.state.samplingState = BigInt(last.samplingNextState);
  }
  const { state, config, engine } = ctx;
  const audit = withAudit ? auditSettingsOf(config) : null;
  const snapshot = await engine.snapshot(state.step, state.samplingState);
  const samplingHex = u64Hex(state.samplingState);
  const request: SaveRequest = {
    runDir: ctx.runDir,
    state: snapshot,
    job: {
      step: state.step,
      phase: { validated: state.validated, audited: state.cadenceCheckpointDone || withAudit },
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
    retention: { keepSteps: config.checkpoint.keepSteps, keepEvery: config.checkpoint.keepEvery },
    latestIsValid: state.latestValid,
    bestIsValid: state.bestValid,
  };
  // Never publish into a run that another process has taken over (its lock no longer names this one).
  ctx.lock.assertHeld();
  await ctx.saver.submit(request);
  if (audit !== null) {
    ctx.auditInFlight = true;
    state.lastAuditStep = state.step;
  }
  if (slots.latest) {
    ctx.latestSavedAt = ctx.now();
    state.latestValid = true;
    state.latestHoldsPhase = phaseKey(state.step, { validated: state.validated, audited: state.cadenceCheckpointDone || withAudit });
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
      const r = await engine.evaluateBatch(list, i);
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
        // Its own record in loss.jsonl, right after the step's training record (covered by the next checkpoint's position).
        ctx.lossLog.appendEvaluation(record);
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
        const cadence = isCheckpointStep(config, state.step) && !state.cadenceCheckpointDone;
        if (improved && !cadence) await saveCheckpoint(ctx, 'best', { slots: { latest: false, best: true, step: false }, withAudit: false });
        if (cadence) {
          await saveCheckpoint(ctx, state.step === config.steps ? 'final' : 'cadence', { slots: { latest: true, best: improved, step: true }, withAudit: true });
          state.cadenceCheckpointDone = true;
        }
      }
    }
    if (state.validated && isCheckpointStep(config, state.step) && !state.cadenceCheckpointDone) {
      await saveCheckpoint(ctx, state.step === config.steps ? 'final' : 'cadence', { slots: { latest: true, best: false, step: true }, withAudit: true });
      state.cadenceCheckpointDone = true;
    }
    const finished = state.step >= config.steps && state.validated && state.cadenceCheckpointDone;
    if (control.stopRequested !== null && !finished) {
      if (state.latestHoldsPhase !== phaseKey(state.step, phaseOf(state))) await saveCheckpoint(ctx, 'stop', { slots: { latest: true, best: false, step: false }, withAudit: false });
      return { status: 'stopped', reason: control.stopRequested };
    }
    if (control.takeCheckpointRequest() && state.latestHoldsPhase !== phaseKey(state.step, phaseOf(state))) {
      await saveCheckpoint(ctx, 'signal', { slots: { latest: true, best: false, step: false }, withAudit: false });
    }
    // Cadence by time: like SIGUSR1, latest/ only and no sample audit, so it never changes what is computed.
    const minutes = config.checkpoint.everyMinutes;
    if (minutes !== null && !finished && ctx.now() - ctx.latestSavedAt >= minutes * 60_000 && state.latestHoldsPhase !== phaseKey(state.step, phaseOf(state))) {
      await saveCheckpoint(ctx, 'time', { slots: { latest: true, best: false, step: false }, withAudit: false });
    }
    if (ctx.saver.failure !== null) await ctx.saver.flush();
    if (finished) return { status: 'completed', reason: null };

    const step = state.step + 1;
    const learningRate = learningRateAt(config, step);
    const started = performance.now();
    let update;
    try {
      update = await engine.update(learningRate);
    } catch (e) {
      if (isTrainerError(e)) throw e;
      // Nothing of the failed update was applied or logged; the last checkpoint stays the resume point.
      throw new TrainerError(toTrainerError(e).code, `update ${step} failed: ${(e as Error).message}`, { step, cause: e });
    }
    const stepMs = performance.now() - started;
    state.step = step;
    ctx.saver.stepDone();
    state.validated = !isValidationStep(config, step);
    state.cadenceCheckpointDone = !isCheckpointStep(config, step);
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
  /** Pieces of the resumed step that were due but missing, and were completed before training went on. */
  readonly repaired: readonly string[];
  readonly repairedAfter: RunResult['repairedAfter'];
  readonly budgetChange: StepBudgetChange | null;
  readonly lossRecordsCut: number;
  /** The checkpoint the trajectory continues (the resumed slot), or null for a fresh model: the parent of the first save. */
  readonly lineageHead: LineageParent | null;
  /** How the head continued its own parent (its manifest's lineage), or null when it has none. */
  readonly headLineage: LineageStep | null;
}

/** How a resumed slot continued its own parent, as its manifest says (null: no manifest, or none of llmcp's lineage). */
function headLineageOf(lineage: { readonly via: LineageStep['via']; readonly parent: LineageStep['parent'] } | null): LineageStep | null {
  return lineage === null ? null : { via: lineage.via, parent: lineage.parent };
}

/** The newest evaluation of a job (for the progress display of a resumed run), or null. */
function lastValidationOf(evaluations: readonly EvaluationRecord[]): { step: number; validationLoss: number } | null {
  const last = evaluations.at(-1);
  return last === undefined ? null : { step: last.step, validationLoss: last.validationLoss };
}

/** Refuses a bad `LLMCP_SAVE_PRIORITY` for background saves before anything touches the disk (the saver reads it again). */
function checkSaveSettings(options: TrainingOptions): void {
  if ((options.saveMode ?? 'worker') === 'worker') savePriorityFromEnv();
}

async function executeJob(setup: JobSetup, options: TrainingOptions, lock: RunLock): Promise<RunResult> {
  const emit = emitter(options.onEvent);
  const now = options.now ?? ((): number => performance.now());
  const control = new RunControl();
  control.onRequest = (what) => emit({ type: 'signal', signal: what });
  if (options.signal !== undefined) control.followAbortSignal(options.signal);
  let saver: CheckpointSaver | null = null;
  // The newest checkpoint known to be complete: what a resume will use after an exit without a stop checkpoint.
  let lastSaved: { slot: string; step: number } | null = setup.resumedFrom === null ? null : { slot: setup.resumedFrom, step: setup.state.step };
  if (options.handleSignals === true) {
    control.installProcessHandlers((code) => {
      const inFlight = saver?.busy === true;
      emit({ type: 'exiting', signal: 'SIGINT', resumeSlot: lastSaved?.slot ?? null, resumeStep: lastSaved?.step ?? null, saveInFlight: inFlight, description: describeExitAtOnce(lastSaved, inFlight) });
      exitAtOnce(code, inFlight ? () => (saver as CheckpointSaver).abandon() : null);
    });
  }
  const ctx: JobContext = {
    runDir: setup.runDir,
    config: setup.config,
    configDigest: canonicalDigest(setup.config),
    identity: setup.inputs.identity,
    engine: setup.engine,
    lossLog: setup.lossLog,
    saver: new CheckpointSaver(options.saveMode ?? 'worker', {
      onSaved: (result) => {
        if (lastSaved === null || result.step >= lastSaved.step) lastSaved = { slot: result.slots.includes('latest') ? 'latest' : (result.slots[0] ?? 'latest'), step: result.step };
        emit({
          type: 'checkpoint-saved',
          step: result.step,
          slots: result.slots,
          saveMs: result.durationMs,
          saveThread: ctx.saver.thread ?? 'normal',
          samples: result.audit?.samples.map((s) => s.text ?? '') ?? null,
        });
      },
      hadCheckpoint: setup.resumedFrom !== null,
      // Half a validation interval: a save starved by other work finishes before the next one can be due.
      hurryAfterSteps: Math.max(1, Math.floor(setup.config.evaluation.validateEvery / 2)),
      provenance: { key: options.signingKey ?? null, head: setup.lineageHead, headLineage: setup.headLineage },
    }),
    lock,
    control,
    emit,
    runId: setup.runId,
    pivots: setup.pivots,
    state: setup.state,
    auditInFlight: false,
    lastSave: null,
    now,
    latestSavedAt: now(),
  };
  saver = ctx.saver;
  emit({
    type: 'start',
    runDir: setup.runDir,
    resumedFrom: setup.resumedFrom,
    step: setup.state.step,
    totalSteps: setup.config.steps,
    parameterCount: setup.engine.parameterCount,
    vocabularySize: setup.engine.vocabularySize,
    tokensPerStep: setup.engine.tokensPerStep,
    kernels: kernelInfo().kind,
    engine: setup.engine.description.detail,
    engineProcesses: setup.engine.description.processes,
    lastValidation: lastValidationOf(setup.state.evaluations),
    best: setup.state.best === null ? null : { ...setup.state.best },
    plan: runPlanOf(setup.config, setup.inputs, setup.engine),
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
    lock();
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
    repaired: setup.repaired,
    repairedAfter: setup.repairedAfter,
    budgetChange: setup.budgetChange,
    lossRecordsCut: setup.lossRecordsCut,
  };
}

/**
 * The one line of a second Ctrl-C: no stop checkpoint, and the checkpoint a
 * resume will use (the newest save this process saw complete, or the one it
 * resumed from).
 *
 * @param lastSaved - the newest complete save, or null.
 * @param saveInFlight - whether a save is being written.
 * @returns the line (no newline).
 */
function describeExitAtOnce(lastSaved: { readonly slot: string; readonly step: number } | null, saveInFlight: boolean): string {
  const head = 'second Ctrl-C: exited at once without a stop checkpoint; ';
  const inFlight = saveInFlight ? ' (or the checkpoint that was being saved, if its publication had finished)' : '';
  if (lastSaved === null) return `${head}no checkpoint was saved yet, so a resume starts the run over from step 0${inFlight}`;
  return `${head}a resume will use ${lastSaved.slot} (step ${lastSaved.step})${inFlight}`;
}

/**
 * The setup of a job that trains a fresh model from step 0 (a new run, or a restart of one that never checkpointed):
 * nothing resumed, nothing repaired, no parent checkpoint.
 */
function freshStart(
  run: Pick<JobSetup, 'runDir' | 'config' | 'inputs' | 'engine' | 'lossLog' | 'runId'>,
  lossRecordsCut: number,
): JobSetup {
  return {
    ...run,
    pivots: 0,
    state: freshState(run.config),
    resumedFrom: null,
    loadReport: null,
    repaired: [],
    repairedAfter: null,
    budgetChange: null,
    lossRecordsCut,
    lineageHead: null,
    headLineage: null,
  };
}

function freshState(config: TrainerConfig): JobState {
  return {
    step: 0,
    validated: false,
    cadenceCheckpointDone: true,
    evaluations: [],
    best: null,
    samplingState: initialSamplingState(config),
    lastAuditStep: null,
    latestValid: true,
    bestValid: true,
    latestHoldsPhase: null,
  };
}

/** Whether a slot is absent or verifies (a damaged one must not become a backup). */
async function slotVerifies(runDir: string, slot: string): Promise<boolean> {
  if (!existsSync(path.join(checkpointsDir(runDir), slot))) return true;
  try {
    await verifySlot(runDir, slot);
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
    checkSaveSettings(options);
    // Refused before any work, nothing written: a file in the way, a run already there, a folder inside another run.
    assertNewRunDirectory(runDir, 'run directory');
    // Inputs and engine first: a bad corpus, tokenizer or config leaves nothing behind on disk.
    const inputs = await prepareInputs(config, {});
    const engine = await createEngine(config, inputs, { torch: engineOptions(options) });
    let created: NewRunDirectory | null = null;
    let started = false;
    try {
      // Created and locked the one way every new run is (a creator that loses the race touches nothing).
      created = createRunDirectory(runDir, 'run directory');
      const runId = randomUUID();
      makeDirectories(checkpointsDir(runDir));
      const lossLog = LossLog.create(path.join(runDir, RUN_FILES.lossLog));
      await appendRunEvent(runDir, runId, {
        event: 'created',
        time: nowIso(),
        configDigest: canonicalDigest(config),
        steps: config.steps,
        config,
        engine: engineRecord(engine),
        provenance: provenanceRecord(options),
      });
      started = true;
      return await executeJob(
        freshStart({ runDir, config, inputs, engine, lossLog, runId }, 0),
        options,
        created.lock,
      );
    } catch (e) {
      if (!started) {
        await engine.dispose();
        created?.abandon();
      }
      created?.lock();
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

/** Options of {@link planResume}. */
export interface PlanResumeOptions {
  /** Config keys that may differ (pivot); default none. When any other key differs, the refusal names every differing key. */
  readonly allowedChanges?: (key: string) => boolean;
  /** What run.json and best/ prove about the run's checkpoints (default: read them). */
  readonly evidence?: CheckpointEvidence;
}

/**
 * Loads and checks everything a resume needs, changing nothing on disk: the
 * checkpoint (with fallback), the implementation version, the config, every
 * input identity, and the loss log.
 *
 * @param runDir - the run directory.
 * @param requested - the config the caller wants to continue with, or a function of the recorded one (default: the recorded one).
 * @param options - the keys that may change, the checkpoint evidence.
 * @returns the plan.
 * @throws TrainerError naming every changed field or input.
 */
export async function planResume(
  runDir: string,
  requested?: TrainerConfig | ((recorded: TrainerConfig) => TrainerConfig),
  options: PlanResumeOptions = {},
): Promise<ResumePlan> {
  const allowedChanges = options.allowedChanges ?? ((): boolean => false);
  const evidence = options.evidence ?? checkpointEvidence(runDir, readRunManifest(runDir));
  const { chosen, report } = await chooseCheckpoint(runDir, evidence);
  const job: Job = chosen.job;
  const implementation = implementationIdentity();
  if (implementation.id !== job.inputs.implementation.id) {
    throw new TrainerError(
      'TRAINER_IMPLEMENTATION_CHANGED',
      `${chosen.slot} was written by implementation ${job.inputs.implementation.id}, this is ${implementation.id}; the numerics may differ, so the run cannot resume bit-exactly`,
      { slot: chosen.slot, fields: ['inputs.implementation'] },
    );
  }
  const config = typeof requested === 'function' ? requested(job.config) : (requested ?? job.config);
  const changed = diffConfig(job.config, config);
  if (changed.some((k) => !allowedChanges(k))) throw configChangedError(runDir, changed, chosen.slot);
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
 * The refusal of a resume whose config differs: every differing field, and
 * how to apply them (a pivot for policy fields; a new run or fork otherwise).
 *
 * @param runDir - the run directory.
 * @param changed - every differing config key.
 * @param slot - the chosen slot, if any.
 * @returns the error.
 */
function configChangedError(runDir: string, changed: readonly string[], slot: string | null): TrainerError {
  const fixed = changed.filter((k) => !isPolicyField(k));
  const how =
    fixed.length === 0
      ? `a resume changes only the step budget by itself; apply ${changed.length === 1 ? 'this change' : 'these changes'} with a pivot (pivotRun, or llmcp pivot ${runDir} --config <file> --change ${changed.join(',')}), then resume`
      : `${fixed.join(', ')} cannot change in an existing run (not policy fields); resume with the recorded settings, or start a new run`;
  return new TrainerError('TRAINER_CONFIG_CHANGED', `the config differs from the one ${runDir} was trained with: ${changed.join(', ')} changed; ${how}`, {
    ...(slot === null ? {} : { slot }),
    fields: [...changed],
  });
}

/**
 * What a resume asks for: the caller's config (or the recorded one) with the requested budget and threads.
 *
 * @param options - the resume options.
 * @returns the requested config as a function of the recorded one.
 */
function requestedConfig(options: ResumeRunOptions): (recorded: TrainerConfig) => TrainerConfig {
  return (recorded) => {
    const base = withEngine(options.config ?? recorded, options.engine ?? null);
    const steps = options.steps ?? base.steps;
    const threads = options.threads ?? base.threads;
    if (steps === base.steps && threads === base.threads) return base;
    // Validated again: a budget can make the config invalid (a list schedule too short, warm-up beyond the end).
    return parseConfig({ ...base, steps, threads });
  };
}

/**
 * Resumes a run from its newest verified checkpoint and trains on. Everything
 * is checked before anything changes on disk: a refused resume leaves the
 * directory exactly as it was. A run killed before its first checkpoint
 * restarts from step 0 (recorded in run.json) — but only when nothing in the
 * run (run.json, best/) shows that it ever had a checkpoint: missing slots
 * are refused, never mistaken for a fresh run.
 *
 * Work that the chosen checkpoint says was done at its step but that a crash
 * left unfinished (the step snapshot, best/, the sample audit's
 * samples.json, latest/ and the `completed` event of a finished run) is
 * completed first, idempotently, and listed in `repaired`.
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
  return publicErrors(() => resumeRunUnwrapped(runDir, options, {}));
}

/**
 * {@link resumeRun} with deliberately broken restores, for negative-control
 * tests only (`@llmcp/trainer/testing`): each fault drops one piece of state
 * so a test can show that the final bytes then differ.
 *
 * @param runDir - the run directory.
 * @param options - as for {@link resumeRun}.
 * @param faults - the pieces of state to drop.
 * @returns the outcome.
 */
export async function resumeRunWithFaults(runDir: string, options: ResumeRunOptions, faults: ResumeFaults): Promise<RunResult> {
  return publicErrors(() => resumeRunUnwrapped(runDir, options, faults));
}

async function resumeRunUnwrapped(runDir: string, options: ResumeRunOptions, faults: ResumeFaults): Promise<RunResult> {
  checkSaveSettings(options);
  if (!existsSync(path.join(runDir, RUN_FILES.manifest))) {
    throw new TrainerError('TRAINER_RUN_INVALID', `${runDir} is not a run directory (no run.json)`, { path: runDir });
  }
  const lock = acquireRunLock(runDir);
  try {
    assertRunEntries(runDir);
    let manifest = readRunManifest(runDir);
    let evidence = checkpointEvidence(runDir, manifest);
    if (resumeCandidates(runDir).length === 0) {
      if (evidence.blocksRestart !== null) {
        const where = existsSync(checkpointsDir(runDir)) ? 'checkpoints/ holds no latest, latest.backup or step_N slot' : 'checkpoints/ is missing';
        throw new TrainerError(
          'TRAINER_NO_CHECKPOINT',
          `${runDir} has no checkpoint to resume from (${where}), although ${evidence.blocksRestart}; refusing to start it over, which would discard its history. Restore the missing checkpoints, or start a new run`,
          { path: runDir, ...(evidence.floor === null ? {} : { step: evidence.floor.step }) },
        );
      }
      return await restartRun(runDir, options, lock);
    }
    let plan = await planResume(runDir, requestedConfig(options), { allowedChanges: (k) => RESUME_CHANGEABLE_FIELDS.includes(k), evidence });
    let budgetChange: StepBudgetChange | null = null;
    let cutBeforeResume: LossLogResumePlan | null = null;
    // What the choice of checkpoint found (refused slots) is reported from the first look, before any pivot.
    const loadReport = plan.report;
    const recorded = plan.chosen.job.config;
    if (isStepBudgetChange(diffConfig(recorded, plan.config))) {
      if (plan.config.steps < plan.chosen.job.step) {
        throw new TrainerError(
          'TRAINER_CONFIG_INVALID',
          `a step budget of ${plan.config.steps} is below the step ${plan.chosen.job.step} of ${plan.chosen.slot}; a run is never cut back behind its checkpoint (fork an earlier step snapshot instead)`,
          { slot: plan.chosen.slot, fields: ['steps'] },
        );
      }
      // The budget alone changed: a recorded pivot of `steps` (checked fully before it writes), then the resume proper.
      // The pivot cuts the loss records a crash left beyond the checkpoint; this resume reports them (the plan after it sees none).
      cutBeforeResume = plan.lossPlan;
      const pivot = await pivotHeldRun(runDir, {
        config: plan.config,
        changes: [...RESUME_CHANGEABLE_FIELDS],
        reason: `step budget changed from ${recorded.steps} to ${plan.config.steps} on resume`,
        signingKey: options.signingKey ?? null,
      });
      budgetChange = {
        step: pivot.step,
        fromSteps: recorded.steps,
        toSteps: plan.config.steps,
        pivot: pivot.pivot,
        description: describeStepBudgetChange(recorded, plan.config, pivot.step),
      };
      emitter(options.onEvent)({ type: 'budget-changed', ...budgetChange });
      manifest = readRunManifest(runDir);
      evidence = checkpointEvidence(runDir, manifest);
      plan = await planResume(runDir, plan.config, { evidence });
    }
    const job = plan.chosen.job;
    // The data order first, alone: its next batch must be the one the job recorded, and a finished run needs no engine.
    const order = dataOrderOf(plan.config, plan.inputs, faults.dropShuffleState === true ? null : job.data);
    const next = nextBatchFingerprintOf(order, plan.config);
    if (faults.dropShuffleState !== true && next !== job.nextBatch) {
      throw new TrainerError(
        'TRAINER_RESTORE_MISMATCH',
        `the restored data order yields next batch ${next}, but ${plan.chosen.slot} recorded ${String(job.nextBatch)}`,
        { slot: plan.chosen.slot, fields: ['data', 'nextBatch'] },
      );
    }
    const complete = job.step >= plan.config.steps && job.phase.validated && job.phase.audited;
    // A run that trains on starts its engine before anything on disk changes: an engine that cannot start (the torch
    // engine on a machine without PyTorch) refuses the resume with the directory as it was. A finished run needs none.
    const engine = complete ? null : await createEngine(plan.config, plan.inputs, { restore: { state: plan.chosen.state, data: job.data }, faults, torch: engineOptions(options), order });
    // Everything verified: from here on the resume changes the directory.
    removeLeftovers(checkpointsDir(runDir));
    removeLineageLeftovers(runDir);
    let repaired: string[];
    try {
      repaired = await completeDueWork(plan, evidence, complete);
    } catch (e) {
      await engine?.dispose();
      throw e;
    }
    const runId = manifest?.runId ?? job.run.id;
    const lastEvent = manifest?.events.at(-1)?.event;
    const repairedAfter: RunResult['repairedAfter'] = repaired.length === 0 ? null : lastEvent === 'forked-from' ? 'fork' : lastEvent === 'pivot' && budgetChange === null ? 'pivot' : 'crash';
    if (engine === null) {
      const last = manifest?.events.at(-1);
      if (!(last?.event === 'completed' && last.step === job.step)) {
        await appendRunEvent(runDir, runId, {
          event: 'completed',
          time: nowIso(),
          step: job.step,
          bestStep: job.best?.step ?? null,
          bestValidationLoss: job.best?.validationLoss ?? null,
        });
        repaired.push('completed event');
      }
      lock();
      return {
        status: 'already-complete',
        runDir,
        step: job.step,
        totalSteps: plan.config.steps,
        stopReason: null,
        best: job.best,
        resumedFrom: plan.chosen.slot,
        loadReport,
        lastSave: null,
        repaired,
        repairedAfter,
        budgetChange,
        lossRecordsCut: 0,
      };
    }
    const lossLog = LossLog.resume(plan.lossPlan, job.evaluations.some((e) => e.step === job.step));
    await appendRunEvent(runDir, runId, {
      event: 'resumed',
      time: nowIso(),
      slot: plan.chosen.slot,
      step: job.step,
      orphanedLossRecords: (cutBeforeResume ?? plan.lossPlan).orphanedRecords,
      orphanedLossSha256: (cutBeforeResume ?? plan.lossPlan).orphanedSha256,
      refused: loadReport.filter((r) => r.status === 'refused').map((r) => ({ slot: r.slot, reason: r.reason ?? '' })),
      ...(repaired.length === 0 ? {} : { repaired }),
      engine: engineRecord(engine),
      provenance: provenanceRecord(options),
    });
    const state: JobState = {
      step: job.step,
      validated: job.phase.validated,
      cadenceCheckpointDone: job.phase.audited,
      evaluations: [...job.evaluations],
      best: job.best,
      samplingState: faults.reseedSampling === true ? initialSamplingState(plan.config) : BigInt(job.sampling.nextState),
      lastAuditStep: job.sampling.lastAuditStep,
      latestValid: plan.chosen.slot === 'latest' || plan.report.find((r) => r.slot === 'latest')?.status !== 'refused',
      bestValid: await slotVerifies(runDir, 'best'),
      latestHoldsPhase: plan.chosen.slot === 'latest' ? phaseKey(job.step, job.phase) : null,
    };
    return await executeJob(
      {
        runDir,
        config: plan.config,
        inputs: plan.inputs,
        engine,
        lossLog,
        runId,
        pivots: job.run.pivots,
        state,
        resumedFrom: plan.chosen.slot,
        loadReport,
        repaired,
        repairedAfter,
        budgetChange,
        lossRecordsCut: (cutBeforeResume ?? plan.lossPlan).orphanedRecords,
        lineageHead: parentLink(job, plan.chosen.manifest?.parsed.digest ?? null),
        headLineage: headLineageOf(plan.chosen.manifest?.parsed.lineage ?? null),
      },
      options,
      lock,
    );
  } catch (e) {
    lock();
    throw e;
  }
}

/**
 * Completes what the chosen checkpoint's save was due to write at its step but
 * a crash cut short. Each piece is rebuilt from the verified checkpoint
 * itself, so doing it twice changes nothing.
 */
async function completeDueWork(plan: ResumePlan, evidence: CheckpointEvidence, complete: boolean): Promise<string[]> {
  const { runDir, chosen, config, report } = plan;
  const job = chosen.job;
  const repaired: string[] = [];
  const publishCopy = async (slot: string, keepBackup: boolean, currentIsValid: boolean): Promise<void> => {
    const tmp = copyCheckpointDirectory(runDir, chosen.dir, slot);
    publishSlot(runDir, { tmpDir: tmp, slot }, { keepBackup, currentIsValid });
    repaired.push(slot);
  };
  // The chosen checkpoint's own step had its sample audit (a pivot at that step does not count).
  const auditedAtStep = job.sampling.lastAuditStep === job.step && evidence.pivotStep !== job.step;
  // A cadence checkpoint publishes a step snapshot with latest/.
  const retention = { keepSteps: config.checkpoint.keepSteps, keepEvery: config.checkpoint.keepEvery };
  if (isCheckpointStep(config, job.step) && auditedAtStep && writesSnapshot(retention, job.step)) {
    const slot = stepSlotName(job.step);
    if (chosen.slot !== slot && readSlotJob(runDir, slot)?.digest !== job.digest) await publishCopy(slot, false, false);
  }
  // Retention runs after the snapshot it follows; a crash in between leaves one snapshot too many.
  if (config.checkpoint.keepSteps > 0 || config.checkpoint.keepEvery !== null) {
    const removal = await applyRetention(runDir, retention, chosen.slot);
    if (removal.removed.length > 0) repaired.push(`retention (${removal.removed.join(', ')})`);
  }
  if (job.best !== null && job.best.step === job.step && chosen.slot !== 'best' && readSlotJob(runDir, 'best')?.step !== job.step) {
    await publishCopy('best', true, await slotVerifies(runDir, 'best'));
  }
  if (complete && chosen.slot !== 'latest') {
    await publishCopy('latest', true, report.find((r) => r.slot === 'latest')?.status !== 'refused' && existsSync(path.join(checkpointsDir(runDir), 'latest')));
  }
  const settings = auditSettingsOf(config);
  if (settings !== null && auditedAtStep) {
    const file = path.join(runDir, RUN_FILES.samples);
    let current: Partial<SampleAudit> | null = null;
    try {
      current = JSON.parse(new TextDecoder().decode(readRegularFileSync(file, { maxBytes: MAX_TEXT_FILE_BYTES, what: 'samples.json' }))) as Partial<SampleAudit>;
    } catch {
      current = null;
    }
    if (current?.step !== job.step || current.rngState !== job.sampling.checkpointState || current.rngStateAfter !== job.sampling.nextState) {
      const audit = runSampleAudit(chosen.state, settings, job.step);
      if (audit.rngStateAfter !== job.sampling.nextState) {
        throw new TrainerError(
          'TRAINER_RESTORE_MISMATCH',
          `the sample audit of step ${job.step} regenerated from ${chosen.slot} ends in sampling state ${audit.rngStateAfter}, but the checkpoint recorded ${job.sampling.nextState}`,
          { slot: chosen.slot, fields: ['sampling.nextState'] },
        );
      }
      await writeFileAtomic(file, encodeSampleAudit(audit));
      repaired.push(RUN_FILES.samples);
    }
  }
  return repaired;
}

async function restartRun(runDir: string, options: ResumeRunOptions, lock: RunLock): Promise<RunResult> {
  const manifest = readRunManifest(runDir);
  const created = manifest?.events.find((e): e is Extract<RunEvent, { event: 'created' }> => e.event === 'created');
  if (manifest === null || created?.config === undefined) {
    throw new TrainerError('TRAINER_NO_CHECKPOINT', `${runDir} has no checkpoint and no recorded config to restart from`, { path: runDir });
  }
  const recorded = readRecordedConfig(created.config);
  const config = requestedConfig(options)(recorded);
  const changed = diffConfig(recorded, config);
  if (changed.length > 0) {
    // Nothing was checkpointed, so there is nothing to pivot: the run starts over with the config it was created with.
    throw new TrainerError(
      'TRAINER_CONFIG_CHANGED',
      `the config differs from the one ${runDir} was started with: ${changed.join(', ')} changed; it has no checkpoint yet, so it restarts only with its recorded config (or start a new run)`,
      { fields: changed },
    );
  }
  const lossPlan = planLossLogResume(path.join(runDir, RUN_FILES.lossLog), EMPTY_LOSS_LOG);
  const inputs = await prepareInputs(config, {});
  const engine = await createEngine(config, inputs, { torch: engineOptions(options) });
  removeLeftovers(checkpointsDir(runDir));
  removeLineageLeftovers(runDir);
  makeDirectories(checkpointsDir(runDir));
  const lossLog = LossLog.resume(lossPlan);
  await appendRunEvent(runDir, manifest.runId, {
    event: 'restarted',
    time: nowIso(),
    reason: 'no checkpoint was written before the run stopped',
    orphanedLossRecords: lossPlan.orphanedRecords,
    orphanedLossSha256: lossPlan.orphanedSha256,
    engine: engineRecord(engine),
    provenance: provenanceRecord(options),
  });
  return executeJob(
    freshStart({ runDir, config, inputs, engine, lossLog, runId: manifest.runId }, lossPlan.orphanedRecords),
    options,
    lock,
  );
}
