/**
 * Pivot and fork: policy changes from a checkpoint.
 *
 * A pivot changes declared policy fields of a run in place, from its latest
 * verified checkpoint: `samples.json`, the old config and the old job go to
 * `archive/pivot-<n>/`; weights, moments, data order, evaluation history, best
 * and the loss history continue; `run.json` records it. Resume the run to
 * train under the new policy.
 *
 * A fork copies a chosen verified checkpoint into a new run directory with its
 * own config (declared policy changes only) and a new run id, with the loss log
 * up to that step; both runs' `run.json` record the lineage.
 */
import { copyFileSync, existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { decodeCheckpoint, encodeCheckpoint, type CheckpointState } from '@llmcp/format';
import { isCheckpointStep, isValidationStep, learningRateAt } from './cadence.ts';
import type { TrainerConfig } from './config.ts';
import { currentDataState } from './llmcp-engine.ts';
import { diffConfig, isPolicyDeclaration, isPolicyField } from './config-diff.ts';
import { TrainerError, publicErrors } from './errors.ts';
import { encodeJob, JOB_FORMAT, sealJob, type Job } from './job.ts';
import { copyLossLogPrefix, LossLog, planLossLogResume } from './loss-log.ts';
import { appendRunEvent, requireRunManifest } from './run-manifest.ts';
import { assertRunEntries, checkpointEvidence, checkpointsDir, chooseCheckpoint, listSlots, RUN_FILES, verifySlot, writeSlot, type SlotReport, type VerifiedSlot } from './run-directory.ts';
import { canonicalDigest, canonicalJson } from './internal/canonical-json.ts';
import { fsyncDirectory, makeDirectories, makeTempDirectory, removeLeftovers } from './internal/durable-fs.ts';
import { acquireRunLock } from './internal/run-lock.ts';
import { assertNewRunDirectory, createRunDirectory } from './internal/new-run-directory.ts';
import { diffInputs, prepareInputs } from './inputs.ts';
import { adamWConfigOf } from './llmcp-engine.ts';
import { parentLink, writeCheckpointManifest, type CheckpointProvenance } from './checkpoint-manifest.ts';
import { removeLineageLeftovers } from './lineage-store.ts';
import type { SigningKey } from './signing-key.ts';

const nowIso = (): string => new Date().toISOString();

/** Options of {@link pivotRun}. */
export interface PivotOptions {
  /** The new config (validated), or a function of the recorded one (e.g. `--set` overrides applied to it). */
  readonly config: TrainerConfig | ((recorded: TrainerConfig) => TrainerConfig);
  /**
   * The fields the pivot is meant to change (dotted keys; a prefix such as
   * `schedule` covers its sub-keys). Every changed field must be declared, and
   * every declared field must be a policy field.
   */
  readonly changes: readonly string[];
  /** Why (recorded in run.json). */
  readonly reason?: string;
  /** Signs the manifest of the pivot's checkpoint (null or absent: unsigned). */
  readonly signingKey?: SigningKey | null;
}

/** What a pivot did. */
export interface PivotResult {
  readonly pivot: number;
  readonly step: number;
  readonly slot: string;
  readonly changed: readonly string[];
  /** Declared fields that did not actually change. */
  readonly unchanged: readonly string[];
  readonly archive: string;
  readonly report: readonly SlotReport[];
  /** Training records of loss.jsonl beyond the checkpoint that the pivot cut (a crash lost those steps), and their SHA-256. */
  readonly lossRecordsCut: number;
  readonly lossRecordsCutSha256: string | null;
}

function covered(key: string, declared: readonly string[]): boolean {
  return declared.some((d) => key === d || key.startsWith(`${d}.`));
}

/** A requested config change: the recorded config, the requested one, and the keys declared as changing. */
interface ConfigChange {
  readonly before: TrainerConfig;
  readonly after: TrainerConfig;
  readonly declared: readonly string[];
}

function checkChanges(change: ConfigChange, what: string): { changed: string[]; unchanged: string[] } {
  const { before, after, declared } = change;
  const changed = diffConfig(before, after);
  // A declared key must be a policy field or a prefix of one (e.g. `sampling` covers `sampling.prompt`).
  const notPolicy = declared.filter((d) => !isPolicyDeclaration(d));
  const forbidden = changed.filter((c) => !isPolicyField(c));
  if (forbidden.length > 0 || notPolicy.length > 0) {
    const list = [...new Set([...forbidden, ...notPolicy])];
    throw new TrainerError(
      'TRAINER_CONFIG_CHANGED',
      `a ${what} may change only policy fields (steps, schedule, optimizer rate/decay/clip, evaluation, checkpoint, sampling settings, log); refused: ${list.join(', ')}`,
      { fields: list },
    );
  }
  const undeclared = changed.filter((c) => !covered(c, declared));
  if (undeclared.length > 0) {
    throw new TrainerError('TRAINER_CONFIG_CHANGED', `the ${what} changes fields that were not declared: ${undeclared.join(', ')} (declare them to accept)`, {
      fields: undeclared,
    });
  }
  const unchanged = declared.filter((d) => !changed.some((c) => covered(c, [d])));
  return { changed, unchanged };
}

function withOptimizerConfig(state: CheckpointState, config: TrainerConfig): CheckpointState {
  return { ...state, optimizer: { ...state.optimizer, config: adamWConfigOf(config) } };
}

interface Continuation {
  readonly stateBytes: Uint8Array;
  readonly job: Job;
}

/**
 * The files of a continued checkpoint with its manifest writer: the
 * checkpoint continues `source` (via a pivot or a fork), signed with `key`.
 */
function continuationFiles(next: Continuation, source: VerifiedSlot, lineage: { readonly via: 'pivot' | 'fork'; readonly key: SigningKey | null }): { stateBytes: Uint8Array; jobBytes: Uint8Array; manifest: { step: number; write: (dir: string, shards: Parameters<typeof writeCheckpointManifest>[1]['shards']) => ReturnType<typeof writeCheckpointManifest> } } {
  const provenance: CheckpointProvenance = { via: lineage.via, parent: parentLink(source.job, source.manifest?.parsed.digest ?? null), key: lineage.key };
  return {
    stateBytes: next.stateBytes,
    jobBytes: encodeJob(next.job),
    manifest: { step: next.job.step, write: (dir, shards) => writeCheckpointManifest(dir, { job: next.job, shards, provenance }) },
  };
}

/** A checkpoint continued under a new config: the state (optimizer config updated) and a resealed job. */
function continueUnder(source: VerifiedSlot, config: TrainerConfig, run: { id: string; pivots: number }): Continuation {
  const old = source.job;
  const state = withOptimizerConfig(source.state, config);
  const stateBytes = encodeCheckpoint(state);
  // The re-encoded state must still be a valid checkpoint of the same step.
  const checksum = decodeCheckpoint(stateBytes).layout.checksumLabel;
  const step = old.step;
  const validated = old.evaluations.some((e) => e.step === step) || !isValidationStep(config, step);
  // The cadence checkpoint of this step (with its sample audit) is done, or none is due under the new config.
  const cadenceCheckpointDone = old.sampling.lastAuditStep === step || !isCheckpointStep(config, step);
  const job = sealJob({
    ...old,
    format: JOB_FORMAT,
    // A job of an older format held the whole window order: the current format holds its constant-size state.
    data: currentDataState(old.data),
    config,
    configDigest: canonicalDigest(config),
    phase: { validated, audited: cadenceCheckpointDone },
    schedule: { step, nextLearningRate: step < config.steps ? learningRateAt(config, step + 1) : null },
    state: { bytes: stateBytes.length, checksum },
    run,
  });
  return { stateBytes, job };
}

async function checkContinuable(source: VerifiedSlot, config: TrainerConfig, what: string): Promise<void> {
  if (config.steps < source.job.step) {
    throw new TrainerError('TRAINER_CONFIG_INVALID', `the ${what} sets steps to ${config.steps}, below the checkpoint's step ${source.job.step}`, { fields: ['steps'] });
  }
  const inputs = await prepareInputs(config, { tokenizerState: source.state.tokenizer });
  const changes = diffInputs(source.job.inputs, inputs.identity);
  if (changes.length > 0) {
    throw new TrainerError('TRAINER_INPUT_CHANGED', `training inputs differ from the checkpoint's: ${changes.join('; ')}`, { fields: changes.map((c) => c.split(':')[0] ?? c) });
  }
}

/**
 * Pivots a run: continues its latest verified checkpoint under a new policy.
 *
 * @param runDir - the run directory (not in use by another process).
 * @param options - new config, declared changes, reason.
 * @returns what was archived and changed.
 * @throws TrainerError `TRAINER_CONFIG_CHANGED` for undeclared or non-policy changes, `TRAINER_NO_CHECKPOINT`, …; nothing changes on disk when refused.
 * @example
 * ```ts
 * await pivotRun('runs/a', { config: { ...old, steps: 4000 }, changes: ['steps'], reason: 'longer run' });
 * await resumeRun('runs/a');
 * ```
 */
export async function pivotRun(runDir: string, options: PivotOptions): Promise<PivotResult> {
  return publicErrors(() => pivotRunUnwrapped(runDir, options));
}

async function pivotRunUnwrapped(runDir: string, options: PivotOptions): Promise<PivotResult> {
  requireRunManifest(runDir);
  const release = acquireRunLock(runDir);
  try {
    assertRunEntries(runDir);
    return await pivotHeldRun(runDir, options);
  } finally {
    release();
  }
}

/**
 * The pivot itself, for a caller that already holds the run's lock (`pivotRun`,
 * and a resume that changes the step budget).
 *
 * @param runDir - the run directory (its lock held by this process).
 * @param options - new config, declared changes, reason.
 * @returns what was archived and changed.
 * @throws TrainerError as {@link pivotRun}.
 */
export async function pivotHeldRun(runDir: string, options: PivotOptions): Promise<PivotResult> {
  const manifest = requireRunManifest(runDir);
  const { chosen, report } = await chooseCheckpoint(runDir, checkpointEvidence(runDir, manifest));
  const config = typeof options.config === 'function' ? options.config(chosen.job.config) : options.config;
  const { changed, unchanged } = checkChanges({ before: chosen.job.config, after: config, declared: options.changes }, 'pivot');
  if (changed.length === 0) throw new TrainerError('TRAINER_CONFIG_INVALID', 'the pivot changes nothing: the new config equals the recorded one', {});
  await checkContinuable(chosen, config, 'pivot');
  const lossPlan = planLossLogResume(path.join(runDir, RUN_FILES.lossLog), chosen.job.lossLog);
  const pivot = chosen.job.run.pivots + 1;
  const next = continueUnder(chosen, config, { id: chosen.job.run.id, pivots: pivot });

  // Everything checked; now change the directory.
  removeLeftovers(checkpointsDir(runDir));
  removeLineageLeftovers(runDir);
  const archiveRoot = path.join(runDir, RUN_FILES.archive);
  makeDirectories(archiveRoot);
  const archive = path.join(archiveRoot, `pivot-${pivot}`);
  if (existsSync(archive)) rmSync(archive, { recursive: true, force: true });
  const tmp = makeTempDirectory(archiveRoot, `tmp-pivot-${pivot}`);
  const samples = path.join(runDir, RUN_FILES.samples);
  if (existsSync(samples)) copyFileSync(samples, path.join(tmp, RUN_FILES.samples));
  writeFileSync(path.join(tmp, 'config.json'), `${canonicalJson(chosen.job.config, '  ')}\n`);
  writeFileSync(path.join(tmp, RUN_FILES.job), encodeJob(chosen.job));
  fsyncDirectory(tmp);
  renameSync(tmp, archive);
  fsyncDirectory(archiveRoot);
  writeSlot(runDir, { slot: 'latest', ...continuationFiles(next, chosen, { via: 'pivot', key: options.signingKey ?? null }) }, { keepBackup: true, currentIsValid: chosen.slot === 'latest' });
  rmSync(samples, { force: true });
  LossLog.resume(lossPlan).close();
  const archiveRel = path.relative(runDir, archive);
  await appendRunEvent(runDir, manifest.runId, {
    event: 'pivot',
    time: nowIso(),
    pivot,
    step: chosen.job.step,
    changed,
    fromConfigDigest: chosen.job.configDigest,
    toConfigDigest: next.job.configDigest,
    archive: archiveRel,
    reason: options.reason ?? '',
    // The records of steps a crash lost beyond the checkpoint were cut (the resumed run recomputes them): say so.
    ...(lossPlan.orphanedRecords === 0 ? {} : { orphanedLossRecords: lossPlan.orphanedRecords, orphanedLossSha256: lossPlan.orphanedSha256 }),
    provenance: { manifests: true, signer: options.signingKey?.hint ?? null },
  });
  return { pivot, step: chosen.job.step, slot: chosen.slot, changed, unchanged, archive: archiveRel, report, lossRecordsCut: lossPlan.orphanedRecords, lossRecordsCutSha256: lossPlan.orphanedSha256 };
}

/** Options of {@link forkRun}. */
export interface ForkOptions {
  /** Slot to fork from (`latest`, `best`, `step_000100`, …); default: the slot a resume would use. */
  readonly slot?: string;
  /** The fork's config, or a function of the checkpoint's (e.g. `--set` overrides applied to it); default: the checkpoint's config. */
  readonly config?: TrainerConfig | ((recorded: TrainerConfig) => TrainerConfig);
  /** Declared changed fields (policy fields only). */
  readonly changes?: readonly string[];
  /** Why (recorded in both run.json files). */
  readonly reason?: string;
  /** Signs the manifests of the new run's checkpoint (null or absent: unsigned). */
  readonly signingKey?: SigningKey | null;
}

/** What a fork did. */
export interface ForkResult {
  readonly sourceDir: string;
  readonly targetDir: string;
  readonly slot: string;
  readonly step: number;
  readonly runId: string;
  readonly changed: readonly string[];
}

/**
 * Forks a run: copies a verified checkpoint into a new run directory with its
 * own config and lineage. Resume the new run to train the branch.
 *
 * @param sourceDir - the run to fork (not in use by another process).
 * @param targetDir - the new run directory (must not exist or be empty).
 * @param options - slot, config, declared changes, reason.
 * @returns the new run's id and fork point.
 * @throws TrainerError for a damaged slot, an occupied target, undeclared or non-policy changes.
 * @example
 * ```ts
 * await forkRun('runs/a', 'runs/a-lowlr', { slot: 'step_000400', config: lowLr, changes: ['schedule'] });
 * ```
 */
export async function forkRun(sourceDir: string, targetDir: string, options: ForkOptions = {}): Promise<ForkResult> {
  return publicErrors(() => forkRunUnwrapped(sourceDir, targetDir, options));
}

async function forkRunUnwrapped(sourceDir: string, targetDir: string, options: ForkOptions): Promise<ForkResult> {
  const sourceManifest = requireRunManifest(sourceDir);
  // Refused before the source is locked, nothing written: a file in the way, a non-empty target, a folder inside a run.
  assertNewRunDirectory(targetDir, 'fork target');
  const releaseSource = acquireRunLock(sourceDir);
  try {
    let source: VerifiedSlot;
    if (options.slot === undefined) {
      source = (await chooseCheckpoint(sourceDir, checkpointEvidence(sourceDir, sourceManifest))).chosen;
    } else {
      // Only a slot the run has: never a path (`../..`), a hidden temporary or a name that merely looks like one.
      const slots = listSlots(sourceDir);
      if (!slots.includes(options.slot)) {
        throw new TrainerError('TRAINER_RUN_INVALID', `${sourceDir} has no slot '${options.slot}'; its slots are: ${slots.length === 0 ? '(none)' : slots.join(', ')}`, {
          path: sourceDir,
          slot: options.slot,
        });
      }
      source = await verifySlot(sourceDir, options.slot);
    }
    const config = typeof options.config === 'function' ? options.config(source.job.config) : (options.config ?? source.job.config);
    const { changed } = checkChanges({ before: source.job.config, after: config, declared: options.changes ?? [] }, 'fork');
    await checkContinuable(source, config, 'fork');
    // The history up to the fork point must be the one the slot recorded (checked before anything is written).
    planLossLogResume(path.join(sourceDir, RUN_FILES.lossLog), source.job.lossLog);
    const runId = randomUUID();
    const next = continueUnder(source, config, { id: runId, pivots: 0 });
    // Created and locked the one way every new run is: of two forks racing into one target, exactly one writes.
    const target = createRunDirectory(targetDir, 'fork target');
    let forked = false;
    try {
      makeDirectories(checkpointsDir(targetDir));
      await copyLossLogPrefix(path.join(sourceDir, RUN_FILES.lossLog), path.join(targetDir, RUN_FILES.lossLog), source.job.lossLog);
      const files = continuationFiles(next, source, { via: 'fork', key: options.signingKey ?? null });
      writeSlot(targetDir, { slot: 'latest', ...files }, { keepBackup: true });
      if (source.job.best !== null && source.job.best.step === source.job.step) {
        writeSlot(targetDir, { slot: 'best', ...files }, { keepBackup: true });
      }
      const sourceAbs = path.resolve(sourceDir);
      const targetAbs = path.resolve(targetDir);
      const time = nowIso();
      await appendRunEvent(targetDir, runId, { event: 'created', time, configDigest: next.job.configDigest, steps: config.steps, config, provenance: { manifests: true, signer: options.signingKey?.hint ?? null } });
      await appendRunEvent(targetDir, runId, {
        event: 'forked-from',
        time,
        run: sourceAbs,
        runId: sourceManifest.runId,
        slot: source.slot,
        step: source.job.step,
        stateChecksum: source.job.state.checksum,
        changed,
      });
      await appendRunEvent(sourceDir, sourceManifest.runId, {
        event: 'forked-to',
        time,
        run: targetAbs,
        runId,
        slot: source.slot,
        step: source.job.step,
        stateChecksum: source.job.state.checksum,
      });
      forked = true;
    } finally {
      // A failed fork leaves no half-made run behind: it removes what it wrote, its lock, and the directories it made.
      if (forked) target.lock();
      else target.abandon();
    }
    return { sourceDir, targetDir, slot: source.slot, step: source.job.step, runId, changed };
  } finally {
    releaseSource();
  }
}
