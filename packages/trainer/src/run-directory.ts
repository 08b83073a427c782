/**
 * The run directory (docs/DESIGN.md "A run directory"): slot layout, durable
 * publication of a checkpoint directory, verification of a slot (job digest,
 * LLMCP35 validation, job/state pairing), the fallback choice of the
 * checkpoint to resume from, and retention of rolling step snapshots.
 *
 * Publication (why it is safe at every instant): a checkpoint is written
 * completely into a fresh hidden temporary directory (`.tmp-…`, each file
 * created exclusively and fsynced, then the directory fsynced). Publishing slot
 * `S` is then three renames inside `checkpoints/`: the old `S.backup` is moved
 * to a `.trash-…` name; `S` becomes `S.backup`; the temporary directory becomes
 * `S`; `checkpoints/` is fsynced. Between any two renames either `S` or
 * `S.backup` is a complete, verified checkpoint, and a loader that finds `S`
 * missing or damaged falls back to `S.backup` and then to step snapshots.
 * `.tmp-*` and `.trash-*` entries are never read and are removed at start-up.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import { decodeCheckpoint, u64Hex, type CheckpointState } from '@llmcp/format';
import { tokenizerFromState } from '@llmcp/tokenizer';
import { TrainerError, isTrainerError } from './errors.ts';
import { decodeJob, type Job } from './job.ts';
import { sha256Hex } from './internal/canonical-json.ts';
import { discardEntry, fsyncDirectory, makeTempDirectory, writeNewFileDurable } from './internal/durable-fs.ts';

/** File names inside a run directory. */
export const RUN_FILES = {
  manifest: 'run.json',
  lossLog: 'loss.jsonl',
  samples: 'samples.json',
  lock: 'run.lock',
  checkpoints: 'checkpoints',
  archive: 'archive',
  state: 'state.llmcp',
  job: 'job.json',
} as const;

/** Slot names: `latest`, `latest.backup`, `best`, `best.backup`, `step_NNNNNN`. */
export type SlotName = string;

const STEP_SLOT = /^step_(\d{6,})$/;

/**
 * The slot name of a step snapshot (`step_000100`).
 *
 * @param step - the step.
 * @returns the slot name.
 */
export function stepSlotName(step: number): SlotName {
  return `step_${String(step).padStart(6, '0')}`;
}

/**
 * The step a `step_NNNNNN` slot name stands for, or null for other names.
 *
 * @param name - a directory name.
 * @returns the step or null.
 */
export function stepOfSlot(name: string): number | null {
  const m = STEP_SLOT.exec(name);
  return m === null ? null : Number(m[1]);
}

/**
 * Absolute path of the `checkpoints/` directory of a run.
 *
 * @param runDir - the run directory.
 * @returns the path.
 */
export function checkpointsDir(runDir: string): string {
  return path.join(runDir, RUN_FILES.checkpoints);
}

/**
 * The slots present in `checkpoints/` (hidden `.tmp-*`/`.trash-*` entries
 * left out), sorted by name.
 *
 * @param runDir - the run directory.
 * @returns slot names; empty when there is no `checkpoints/`.
 */
export function listSlots(runDir: string): SlotName[] {
  const dir = checkpointsDir(runDir);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => !n.startsWith('.'))
    .sort();
}

/** A slot that passed every check. */
export interface VerifiedSlot {
  readonly slot: SlotName;
  readonly dir: string;
  readonly job: Job;
  readonly state: CheckpointState;
  readonly stateBytes: Uint8Array;
}

function readSlotFile(file: string, slot: SlotName, code: 'TRAINER_JOB_INVALID' | 'TRAINER_STATE_INVALID'): Uint8Array {
  try {
    return new Uint8Array(readFileSync(file));
  } catch (cause) {
    const missing = (cause as NodeJS.ErrnoException).code === 'ENOENT';
    throw new TrainerError(code, `${slot}/${path.basename(file)} ${missing ? 'is missing' : `cannot be read: ${(cause as Error).message}`}`, {
      path: file,
      slot,
      cause,
    });
  }
}

/**
 * Verifies the pairing of a job and the state bytes it claims (size, SHA-256,
 * FNV-1a checksum label, step, sampling RNG state, tokenizer identity).
 *
 * @param job - a digest-verified job.
 * @param state - the decoded state.
 * @param stateBytes - the state file's bytes.
 * @param slot - slot name for messages.
 * @throws TrainerError `TRAINER_PAIR_MISMATCH`.
 */
export function verifyPairing(job: Job, state: CheckpointState, stateBytes: Uint8Array, slot: SlotName): void {
  const mismatch = (what: string, expected: string, found: string, field: string): never => {
    throw new TrainerError(
      'TRAINER_PAIR_MISMATCH',
      `${slot}: job.json and state.llmcp are not a pair: ${what} expected ${expected} (from job.json), found ${found} (in state.llmcp)`,
      { slot, fields: [field] },
    );
  };
  const sha = `sha256:${sha256Hex(stateBytes)}`;
  if (stateBytes.length !== job.state.bytes || sha !== job.state.sha256) {
    mismatch('state file', `${job.state.sha256} (${job.state.bytes} bytes)`, `${sha} (${stateBytes.length} bytes)`, 'state.sha256');
  }
  if (state.selectedStep !== BigInt(job.step)) mismatch('step', String(job.step), String(state.selectedStep), 'step');
  if (u64Hex(state.samplingRngState) !== job.sampling.checkpointState) {
    mismatch('sampling RNG state', job.sampling.checkpointState, u64Hex(state.samplingRngState), 'sampling.checkpointState');
  }
  const identity = tokenizerFromState(state.tokenizer).identity();
  if (identity !== job.inputs.tokenizer.identity) mismatch('tokenizer identity', job.inputs.tokenizer.identity, identity, 'inputs.tokenizer.identity');
}

/**
 * Fully verifies one slot: `job.json` (JSON, schema, SHA-256 digest, config),
 * `state.llmcp` (every LLMCP35 rule), and their pairing.
 *
 * @param runDir - the run directory.
 * @param slot - the slot name.
 * @returns the verified slot.
 * @throws TrainerError `TRAINER_JOB_INVALID`, `TRAINER_STATE_INVALID` or `TRAINER_PAIR_MISMATCH`.
 */
export function verifySlot(runDir: string, slot: SlotName): VerifiedSlot {
  const dir = path.join(checkpointsDir(runDir), slot);
  const jobFile = path.join(dir, RUN_FILES.job);
  const job = decodeJob(readSlotFile(jobFile, slot, 'TRAINER_JOB_INVALID'), `${slot}/job.json`);
  const stateFile = path.join(dir, RUN_FILES.state);
  const stateBytes = readSlotFile(stateFile, slot, 'TRAINER_STATE_INVALID');
  let state: CheckpointState;
  try {
    state = decodeCheckpoint(stateBytes);
  } catch (cause) {
    throw new TrainerError('TRAINER_STATE_INVALID', `${slot}/state.llmcp is not a valid LLMCP35 checkpoint: ${(cause as Error).message}`, {
      path: stateFile,
      slot,
      cause,
    });
  }
  verifyPairing(job, state, stateBytes, slot);
  return { slot, dir, job, state, stateBytes };
}

/** The verdict on one slot considered by {@link chooseCheckpoint}. */
export interface SlotReport {
  readonly slot: SlotName;
  /** `used`: chosen; `refused`: failed verification; `older`: valid job but an older step than the chosen one; `not-checked`: not needed. */
  readonly status: 'used' | 'refused' | 'older' | 'not-checked';
  /** The step its job.json claims, when readable. */
  readonly step: number | null;
  /** Why it was refused or passed over (error code and message). */
  readonly reason: string | null;
  readonly code: string | null;
}

/** Result of {@link chooseCheckpoint}. */
export interface CheckpointChoice {
  /** The verified slot to resume from. */
  readonly chosen: VerifiedSlot;
  /** One entry per candidate, in preference order. */
  readonly report: readonly SlotReport[];
}

/**
 * The resume candidates of a run in preference order: `latest`,
 * `latest.backup`, then the step snapshots newest first.
 *
 * @param runDir - the run directory.
 * @returns slot names that exist.
 */
export function resumeCandidates(runDir: string): SlotName[] {
  const dir = checkpointsDir(runDir);
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const steps = names
    .filter((n) => stepOfSlot(n) !== null)
    .sort((a, b) => (stepOfSlot(b) ?? 0) - (stepOfSlot(a) ?? 0));
  return [...['latest', 'latest.backup'].filter((n) => names.includes(n)), ...steps];
}

function peekStep(runDir: string, slot: SlotName): { step: number | null; error: unknown } {
  try {
    const bytes = readSlotFile(path.join(checkpointsDir(runDir), slot, RUN_FILES.job), slot, 'TRAINER_JOB_INVALID');
    return { step: decodeJob(bytes, `${slot}/job.json`).step, error: null };
  } catch (error) {
    return { step: null, error };
  }
}

function describe(error: unknown): { reason: string; code: string } {
  if (isTrainerError(error)) return { reason: error.message, code: error.code };
  return { reason: error instanceof Error ? error.message : String(error), code: 'TRAINER_IO' };
}

/**
 * Chooses the checkpoint to resume from: among `latest`, `latest.backup` and
 * the `step_N` snapshots, the slot with the highest step that fully verifies
 * (ties go to the earlier name in that order). With intact slots this is
 * `latest`; a damaged `latest` falls back to `latest.backup` or to a snapshot
 * of the same step, never to anything older than necessary.
 *
 * @param runDir - the run directory.
 * @returns the chosen slot and the report on every candidate.
 * @throws TrainerError `TRAINER_NO_CHECKPOINT` (with every refusal in the message) when none verifies.
 */
export function chooseCheckpoint(runDir: string): CheckpointChoice {
  const candidates = resumeCandidates(runDir).map((slot, order) => ({ slot, order, ...peekStep(runDir, slot) }));
  const reports = new Map<SlotName, SlotReport>();
  for (const c of candidates) {
    if (c.step === null) reports.set(c.slot, { slot: c.slot, status: 'refused', step: null, ...describe(c.error) });
  }
  const readable = candidates
    .filter((c) => c.step !== null)
    .sort((a, b) => (b.step ?? 0) - (a.step ?? 0) || a.order - b.order);
  let chosen: VerifiedSlot | null = null;
  for (const c of readable) {
    if (chosen !== null) {
      reports.set(c.slot, {
        slot: c.slot,
        status: c.step === chosen.job.step ? 'not-checked' : 'older',
        step: c.step,
        reason: c.step === chosen.job.step ? `same step as ${chosen.slot}, which was preferred` : `step ${c.step} is older than ${chosen.slot} (step ${chosen.job.step})`,
        code: null,
      });
      continue;
    }
    try {
      chosen = verifySlot(runDir, c.slot);
      reports.set(c.slot, { slot: c.slot, status: 'used', step: c.step, reason: null, code: null });
    } catch (error) {
      reports.set(c.slot, { slot: c.slot, status: 'refused', step: c.step, ...describe(error) });
    }
  }
  const report = candidates.map((c) => reports.get(c.slot) as SlotReport);
  if (chosen === null) {
    const why = report.length === 0 ? 'no checkpoint slots exist' : report.map((r) => `${r.slot}: ${r.reason ?? r.status}`).join('; ');
    throw new TrainerError('TRAINER_NO_CHECKPOINT', `no checkpoint of ${runDir} verifies (${why})`, { path: runDir });
  }
  return { chosen, report };
}

/** Stages of {@link publishSlot}, for crash-injection tests. */
export type PublishStage = 'written' | 'old-backup-removed' | 'rotated' | 'renamed' | 'synced';

/** Test hook: called after each publication stage; throwing simulates a crash there. */
export type PublishHook = (stage: PublishStage, slot: SlotName) => void;

/**
 * Writes a checkpoint (state + job bytes) durably into a fresh temporary
 * directory inside `checkpoints/`.
 *
 * @param runDir - the run directory.
 * @param stateBytes - encoded `state.llmcp`.
 * @param jobBytes - encoded `job.json`.
 * @param label - slot label for the temporary name.
 * @returns the temporary directory.
 */
export function writeCheckpointDirectory(runDir: string, stateBytes: Uint8Array, jobBytes: Uint8Array, label: string): string {
  const parent = checkpointsDir(runDir);
  mkdirSync(parent, { recursive: true });
  const tmp = makeTempDirectory(parent, `tmp-${label}`);
  try {
    writeNewFileDurable(path.join(tmp, RUN_FILES.state), stateBytes);
    writeNewFileDurable(path.join(tmp, RUN_FILES.job), jobBytes);
    fsyncDirectory(tmp);
  } catch (e) {
    try {
      discardEntry(parent, tmp);
    } catch {
      // the .tmp- leftover is removed at the next start
    }
    throw e;
  }
  return tmp;
}

/** Options of {@link publishSlot}. */
export interface PublishOptions {
  /**
   * Keep the current `slot` as `slot.backup` (true for `latest` and `best`).
   * Step snapshots have no backup.
   */
  readonly keepBackup: boolean;
  /** Whether the current `slot` is known to verify; a damaged one is discarded instead of becoming the backup. */
  readonly currentIsValid?: boolean;
  /** Crash-injection hook (tests). */
  readonly hook?: PublishHook;
}

/**
 * Publishes a complete temporary checkpoint directory as `slot` by renames (see
 * the module comment for why every instant leaves a loadable checkpoint).
 *
 * @param runDir - the run directory.
 * @param tmpDir - a directory from {@link writeCheckpointDirectory}.
 * @param slot - the slot to publish.
 * @param options - backup policy and test hook.
 */
export function publishSlot(runDir: string, tmpDir: string, slot: SlotName, options: PublishOptions): void {
  const parent = checkpointsDir(runDir);
  const target = path.join(parent, slot);
  const backup = `${target}.backup`;
  const hook = options.hook ?? ((): void => {});
  hook('written', slot);
  if (existsSync(target)) {
    if (options.keepBackup && options.currentIsValid !== false) {
      if (existsSync(backup)) discardEntry(parent, backup);
      hook('old-backup-removed', slot);
      renameSync(target, backup);
    } else {
      discardEntry(parent, target);
    }
  }
  hook('rotated', slot);
  renameSync(tmpDir, target);
  hook('renamed', slot);
  fsyncDirectory(parent);
  hook('synced', slot);
}

/**
 * Writes and publishes one checkpoint as `slot` (temporary directory, then renames).
 *
 * @param runDir - the run directory.
 * @param slot - target slot.
 * @param stateBytes - encoded state.
 * @param jobBytes - encoded job.
 * @param options - publication options.
 */
export function writeSlot(runDir: string, slot: SlotName, stateBytes: Uint8Array, jobBytes: Uint8Array, options: PublishOptions): void {
  const tmp = writeCheckpointDirectory(runDir, stateBytes, jobBytes, slot);
  try {
    publishSlot(runDir, tmp, slot, options);
  } catch (e) {
    if (existsSync(tmp)) {
      try {
        discardEntry(checkpointsDir(runDir), tmp);
      } catch {
        // removed at the next start
      }
    }
    throw e;
  }
}

/** Result of {@link applyRetention}. */
export interface RetentionResult {
  readonly kept: readonly SlotName[];
  readonly removed: readonly SlotName[];
  /** The step snapshot kept beyond the limit because it is the newest verified checkpoint, if any. */
  readonly protectedSlot: SlotName | null;
}

/**
 * Deletes rolling `step_N` snapshots beyond the newest `keep`, never touching
 * `latest`, `latest.backup`, `best` or `best.backup`, and never deleting the
 * newest checkpoint that verifies (if `latest` and `latest.backup` are both
 * damaged, the newest verifying snapshot is kept even beyond the limit).
 *
 * @param runDir - the run directory.
 * @param keep - snapshots to keep.
 * @param knownGood - a slot already known to verify (skips re-reading it).
 * @returns what was kept and removed.
 */
export function applyRetention(runDir: string, keep: number, knownGood: SlotName | null = null): RetentionResult {
  const parent = checkpointsDir(runDir);
  const candidates = resumeCandidates(runDir);
  const steps = candidates.filter((n) => stepOfSlot(n) !== null);
  if (steps.length <= keep) return { kept: steps, removed: [], protectedSlot: null };
  let newestVerified: SlotName | null = null;
  for (const slot of candidates) {
    if (slot === knownGood) {
      newestVerified = slot;
      break;
    }
    try {
      verifySlot(runDir, slot);
      newestVerified = slot;
      break;
    } catch {
      // try the next candidate
    }
  }
  const kept: SlotName[] = [];
  const removed: SlotName[] = [];
  let protectedSlot: SlotName | null = null;
  steps.forEach((slot, index) => {
    if (index < keep) {
      kept.push(slot);
    } else if (slot === newestVerified) {
      kept.push(slot);
      protectedSlot = slot;
    } else {
      discardEntry(parent, path.join(parent, slot));
      removed.push(slot);
    }
  });
  if (removed.length > 0) fsyncDirectory(parent);
  return { kept, removed, protectedSlot };
}

/**
 * Loads the best checkpoint (`best`, else `best.backup`).
 *
 * @param runDir - the run directory.
 * @returns the verified slot, or null when the run has no best checkpoint yet.
 * @throws TrainerError when best slots exist but none verifies.
 */
export function loadBestCheckpoint(runDir: string): VerifiedSlot | null {
  const errors: string[] = [];
  for (const slot of ['best', 'best.backup']) {
    if (!existsSync(path.join(checkpointsDir(runDir), slot))) continue;
    try {
      return verifySlot(runDir, slot);
    } catch (e) {
      errors.push(`${slot}: ${describe(e).reason}`);
    }
  }
  if (errors.length === 0) return null;
  throw new TrainerError('TRAINER_NO_CHECKPOINT', `no best checkpoint of ${runDir} verifies (${errors.join('; ')})`, { path: runDir });
}
