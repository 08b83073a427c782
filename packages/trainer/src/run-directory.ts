/**
 * The run directory (../../../docs/DESIGN.md "A run directory"): slot layout, durable
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
import { constants, copyFileSync, existsSync, lstatSync, readdirSync, renameSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { isFormatError, u64Hex, type CheckpointState } from '@llmcp/format';
import { loadCheckpoint, MAX_TEXT_FILE_BYTES, readRegularFileSync, saveCheckpointAtomic } from '@llmcp/format/node';
import { tokenizerFromState } from '@llmcp/tokenizer';
import { TrainerError, isTrainerError } from './errors.ts';
import { decodeJob, JOB_FORMAT_V2, pairsBySha256, type Job } from './job.ts';
import { RUN_FILES } from './run-layout.ts';
import { readRunManifest } from './run-manifest.ts';
import { checkSlotManifest, type WrittenManifest } from './checkpoint-manifest.ts';
import { storeManifest } from './lineage-store.ts';
import { MANIFEST_FILE, parseManifest, type ParsedManifest } from './provenance.ts';
import { ShardHasher, shardBytes, type ShardDigest } from './shard-hasher.ts';
import { WrittenShardHasher } from './written-shards.ts';
import { discardEntry, fsyncDirectory, fsyncFile, makeDirectories, makeTempDirectory, writeNewFileDurable } from './internal/durable-fs.ts';

export { RUN_FILES } from './run-layout.ts';

/** Slot names: `latest`, `latest.backup`, `best`, `best.backup`, `step_NNNNNN`. */
export type SlotName = string;

/** The slot names a run directory can hold besides the `step_NNNNNN` snapshots, in resume order then best. */
export const NAMED_SLOTS: readonly SlotName[] = ['latest', 'latest.backup', 'best', 'best.backup'];

const STEP_SLOT = /^step_(\d{6,})$/;

/**
 * Whether `name` is a slot name (one of {@link NAMED_SLOTS} or `step_NNNNNN`),
 * never a path: a caller can join it below `checkpoints/` without leaving it.
 *
 * @param name - a candidate slot name, e.g. from the command line.
 * @returns true for a slot name.
 * @example
 * ```ts
 * isSlotName('step_000600'); // true
 * isSlotName('../../etc');   // false
 * ```
 */
export function isSlotName(name: string): boolean {
  return NAMED_SLOTS.includes(name) || STEP_SLOT.test(name);
}

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

/**
 * Refuses a run directory whose entries are of the wrong kind, before anything
 * is changed: `run.json`, `loss.jsonl` and `samples.json` must be regular
 * files where they exist, `checkpoints/` a directory, and every slot in it a
 * real directory — not a symbolic link, whose publication would rename the
 * link and discard what it points to.
 *
 * @param runDir - the run directory.
 * @throws TrainerError `TRAINER_RUN_INVALID` naming the entry.
 */
export function assertRunEntries(runDir: string): void {
  const kind = (file: string): string | null => {
    try {
      const st = lstatSync(file);
      return st.isSymbolicLink() ? 'a symbolic link' : st.isDirectory() ? 'directory' : st.isFile() ? 'file' : 'a special file';
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw new TrainerError('TRAINER_IO', `cannot examine ${file}: ${(e as Error).message}`, { path: file, cause: e });
    }
  };
  const refuse = (file: string, found: string, expected: string): never => {
    throw new TrainerError('TRAINER_RUN_INVALID', `${file} is ${found === 'directory' ? 'a directory' : found === 'file' ? 'a regular file' : found}, expected ${expected}; the run directory was altered by hand`, {
      path: file,
    });
  };
  for (const name of [RUN_FILES.manifest, RUN_FILES.lossLog, RUN_FILES.samples]) {
    const file = path.join(runDir, name);
    const k = kind(file);
    if (k !== null && k !== 'file') refuse(file, k, 'a regular file');
  }
  const dir = checkpointsDir(runDir);
  const k = kind(dir);
  if (k === null) return;
  if (k !== 'directory') refuse(dir, k, 'a directory');
  for (const slot of listSlots(runDir)) {
    const entry = path.join(dir, slot);
    const e = kind(entry);
    if (e !== null && e !== 'directory') refuse(entry, e, 'a checkpoint slot directory');
  }
}

/** A slot that passed every check. */
export interface VerifiedSlot {
  readonly slot: SlotName;
  readonly dir: string;
  readonly job: Job;
  readonly state: CheckpointState;
  /** Absolute path of the slot's `state.llmcp` (its bytes are the ones verified). */
  readonly stateFile: string;
  /** The slot's provenance manifest (`model.sig`), checked against both files; null for a slot written before manifests. */
  readonly manifest: SlotManifest | null;
}

/** A slot's manifest as read and checked against the slot's files (its signature is not checked here). */
export interface SlotManifest {
  readonly parsed: ParsedManifest;
  readonly bytes: Uint8Array;
}

/** A slot's `model.sig`, or null when it has none. */
function readSlotManifest(dir: string, slot: SlotName): SlotManifest | null {
  const file = path.join(dir, MANIFEST_FILE);
  let bytes: Uint8Array;
  try {
    // The input rule: a regular file (a FIFO or device in a slot is damage, refused without blocking), bounded.
    bytes = readRegularFileSync(file, { maxBytes: MAX_TEXT_FILE_BYTES, what: `checkpoints/${slot}/${MANIFEST_FILE}` });
  } catch (e) {
    if (isFormatError(e) && e.reason === 'not-found') return null;
    throw new TrainerError('TRAINER_MANIFEST_INVALID', isFormatError(e) ? e.message : `checkpoints/${slot}/${MANIFEST_FILE} cannot be read: ${(e as Error).message}`, { path: file, slot, cause: e });
  }
  try {
    return { parsed: parseManifest(bytes, `checkpoints/${slot}/${MANIFEST_FILE}`), bytes };
  } catch (e) {
    if (isTrainerError(e)) throw new TrainerError(e.code, e.message, { path: file, slot, cause: e });
    throw e;
  }
}

function readSlotFile(file: string, slot: SlotName, code: 'TRAINER_JOB_INVALID' | 'TRAINER_STATE_INVALID'): Uint8Array {
  try {
    // The input rule: a regular file (a FIFO or device in a slot is damage, refused without blocking), bounded.
    return readRegularFileSync(file, { maxBytes: MAX_TEXT_FILE_BYTES, what: `${slot}/${path.basename(file)}` });
  } catch (cause) {
    const missing = isFormatError(cause) && cause.reason === 'not-found';
    throw new TrainerError(code, missing ? `${slot}/${path.basename(file)} is missing` : isFormatError(cause) ? cause.message : `${slot}/${path.basename(file)} cannot be read: ${(cause as Error).message}`, {
      path: file,
      slot,
      cause,
    });
  }
}

/**
 * What {@link verifyPairing} compares of the state file: its size and LLMCP35
 * checksum label, and — only to pair a job of `llmcp-job/1` or `llmcp-job/2` —
 * its SHA-256.
 */
export interface StateFileFacts {
  readonly bytes: number;
  /** The LLMCP35 checksum (`fnv1a64:…`) stored in the file and verified by the decoder over every byte. */
  readonly checksum: string;
  /** `sha256:` of the whole file; computed (at load) only for a job that records one. */
  readonly sha256?: string;
}

/**
 * Verifies the pairing of a job and the state file it claims: size and
 * LLMCP35 checksum label (`llmcp-job/3`; the checksum is the one the load
 * verified over every byte of the file), or size and SHA-256 (and the label,
 * for `llmcp-job/2`) for the older formats; then step, sampling RNG state and
 * tokenizer identity.
 *
 * @param pair - a digest-verified job, the decoded state, and the facts of the state file (`sha256` required for the older formats).
 * @param slot - slot name for messages.
 * @throws TrainerError `TRAINER_PAIR_MISMATCH`.
 */
export function verifyPairing(pair: { readonly job: Job; readonly state: CheckpointState; readonly facts: StateFileFacts }, slot: SlotName): void {
  const { job, state, facts } = pair;
  /** `fields` of job.json disagree: `expected` is job.json's value, `found` the state file's. */
  const mismatch = (fields: readonly string[], what: string, values: { readonly expected: string; readonly found: string }): never => {
    throw new TrainerError(
      'TRAINER_PAIR_MISMATCH',
      `${slot}: job.json and state.llmcp are not a pair: ${what} expected ${values.expected} (from job.json), found ${values.found} (in state.llmcp)`,
      { slot, fields: [...fields] },
    );
  };
  if (pairsBySha256(job)) {
    if (facts.sha256 === undefined) throw new TypeError(`verifyPairing: a ${job.format} job pairs by SHA-256, and the facts of its state file hold none`);
    if (facts.bytes !== job.state.bytes || facts.sha256 !== job.state.sha256) {
      mismatch(['state.sha256'], 'state file', { expected: `${String(job.state.sha256)} (${job.state.bytes} bytes)`, found: `${facts.sha256} (${facts.bytes} bytes)` });
    }
  } else if (facts.bytes !== job.state.bytes || facts.checksum !== job.state.checksum) {
    const fields = [...(facts.bytes === job.state.bytes ? [] : ['state.bytes']), ...(facts.checksum === job.state.checksum ? [] : ['state.checksum'])];
    mismatch(fields, 'state file', { expected: `${job.state.checksum} (${job.state.bytes} bytes)`, found: `${facts.checksum} (${facts.bytes} bytes)` });
  }
  // Jobs of the first job format recorded a plain FNV-1a of the file here, not the LLMCP35 checksum; the SHA-256 above covers them.
  if (job.format === JOB_FORMAT_V2 && facts.checksum !== job.state.checksum) mismatch(['state.checksum'], 'LLMCP35 checksum', { expected: job.state.checksum, found: facts.checksum });
  if (state.selectedStep !== BigInt(job.step)) mismatch(['step'], 'step', { expected: String(job.step), found: String(state.selectedStep) });
  if (u64Hex(state.samplingRngState) !== job.sampling.checkpointState) {
    mismatch(['sampling.checkpointState'], 'sampling RNG state', { expected: job.sampling.checkpointState, found: u64Hex(state.samplingRngState) });
  }
  const identity = tokenizerFromState(state.tokenizer).identity();
  if (identity !== job.inputs.tokenizer.identity) mismatch(['inputs.tokenizer.identity'], 'tokenizer identity', { expected: job.inputs.tokenizer.identity, found: identity });
}

/**
 * What identifies a slot's content at one instant: the inode, size and change
 * time of its directory, `job.json` and `state.llmcp` (`-` where missing). A
 * live run publishes a slot by renames, so a slot read while it was replaced
 * has another fingerprint afterwards.
 *
 * @param runDir - the run directory.
 * @param slot - the slot name.
 * @returns the fingerprint.
 */
export function slotFingerprint(runDir: string, slot: SlotName): string {
  const dir = path.join(checkpointsDir(runDir), slot);
  return ['', RUN_FILES.job, RUN_FILES.state]
    .map((name) => {
      try {
        const st = lstatSync(path.join(dir, name));
        return `${name}:${st.ino}:${st.size}:${st.ctimeMs}`;
      } catch {
        return `${name}:-`;
      }
    })
    .join('|');
}

/** Reads of a slot that a live run replaced while it was read, before its failure is believed. */
const SLOT_READ_ATTEMPTS = 8;

/** Test hooks of a slot read (`@llmcp/trainer/testing`): where a live run's publication can fall into a read. */
export interface SlotReadHooks {
  /** After a slot's `job.json` was read, before its `state.llmcp` is. */
  readonly betweenFiles?: (runDir: string, slot: SlotName) => void;
}

let slotReadHooks: SlotReadHooks = {};

/**
 * Installs slot-read hooks (tests only: they stand for a live run publishing a slot in the middle of a read).
 *
 * @param next - the hooks; `{}` removes them.
 */
export function setSlotReadHooks(next: SlotReadHooks): void {
  slotReadHooks = next;
}

/**
 * Installs a slot-read hook that stands for a live run publishing `latest`
 * in the middle of a read (tests only): between the two files of a read of
 * `latest`, the first `times` times, `latest` and `latest.backup` change
 * places by three renames, as a publication rotates them.
 *
 * After an odd number of disturbances `latest` holds the older checkpoint, a
 * state no publication leaves (the run's provenance check reports it as
 * swapped slots): a test that expects a sound run disturbs an even number.
 *
 * @param times - how many reads are disturbed (`Infinity`: every one).
 * @returns how many were.
 */
export function publishDuringSlotReads(times: number): { readonly count: () => number } {
  let done = 0;
  setSlotReadHooks({
    betweenFiles: (runDir, slot) => {
      if (slot !== 'latest' || done >= times) return;
      done += 1;
      const dir = checkpointsDir(runDir);
      renameSync(path.join(dir, 'latest'), path.join(dir, '.swap'));
      renameSync(path.join(dir, 'latest.backup'), path.join(dir, 'latest'));
      renameSync(path.join(dir, '.swap'), path.join(dir, 'latest.backup'));
    },
  });
  return { count: () => done };
}

/**
 * Fully verifies one slot: `job.json` (JSON, schema, SHA-256 digest, config),
 * `state.llmcp` (every LLMCP35 rule, streamed: any size), their pairing, and
 * — when the slot has one — its provenance manifest: the SHA-256 of every
 * shard of both files (taken over the bytes the load reads: one read) and
 * the lineage's run and step against the job's. The manifest's signature
 * is not checked here (`verifyRun` with a trusted key does that).
 *
 * A run being trained replaces its slots by renames (latest → latest.backup,
 * a new latest); a read that straddles one can pair the old job with the new
 * state. So a failure counts only when the slot did not change while it was
 * read (its {@link slotFingerprint}); otherwise the slot is read again. A
 * success needs no such check: a job and a state that pair and verify are a
 * checkpoint, whenever they were read.
 *
 * @param runDir - the run directory.
 * @param slot - the slot name.
 * @returns the verified slot.
 * @throws TrainerError `TRAINER_JOB_INVALID`, `TRAINER_STATE_INVALID`, `TRAINER_PAIR_MISMATCH`, `TRAINER_SLOT_FOREIGN` (a checkpoint of another run), `TRAINER_MANIFEST_INVALID` or `TRAINER_MANIFEST_MISMATCH`.
 */
export async function verifySlot(runDir: string, slot: SlotName): Promise<VerifiedSlot> {
  for (let attempt = 1; ; attempt += 1) {
    const before = slotFingerprint(runDir, slot);
    try {
      return await verifySlotOnce(runDir, slot);
    } catch (e) {
      if (attempt >= SLOT_READ_ATTEMPTS || slotFingerprint(runDir, slot) === before) throw e;
    }
  }
}

async function verifySlotOnce(runDir: string, slot: SlotName): Promise<VerifiedSlot> {
  const dir = path.join(checkpointsDir(runDir), slot);
  try {
    if (lstatSync(dir).isSymbolicLink()) throw new TrainerError('TRAINER_RUN_INVALID', `${slot} is a symbolic link, not a checkpoint slot directory`, { path: dir, slot });
  } catch (e) {
    if (isTrainerError(e)) throw e;
  }
  const jobFile = path.join(dir, RUN_FILES.job);
  const jobBytes = readSlotFile(jobFile, slot, 'TRAINER_JOB_INVALID');
  const job = decodeJob(jobBytes, `${slot}/job.json`);
  assertOwnSlot(runDir, slot, job);
  slotReadHooks.betweenFiles?.(runDir, slot);
  const stateFile = path.join(dir, RUN_FILES.state);
  if (!existsSync(stateFile)) throw new TrainerError('TRAINER_STATE_INVALID', `${slot}/state.llmcp is missing`, { path: stateFile, slot });
  const manifest = readSlotManifest(dir, slot);
  let decoded;
  // A job of the older formats pairs by SHA-256, taken over the very bytes the load validates (one read of the file);
  // an llmcp-job/3 job pairs by the LLMCP35 checksum that the load itself verifies over every byte. The manifest's
  // shard digests are taken over the same bytes.
  const sha = pairsBySha256(job) ? createHash('sha256') : null;
  const shards = manifest === null ? null : new ShardHasher(RUN_FILES.state);
  const observe = (chunk: Uint8Array): void => {
    sha?.update(chunk);
    shards?.update(chunk);
  };
  try {
    decoded = await loadCheckpoint(stateFile, sha === null && shards === null ? {} : { onFileBytes: observe });
  } catch (cause) {
    throw new TrainerError('TRAINER_STATE_INVALID', `${slot}/state.llmcp is not a valid LLMCP35 checkpoint: ${(cause as Error).message}`, {
      path: stateFile,
      slot,
      cause,
    });
  }
  const { layout, ...state } = decoded;
  const facts: StateFileFacts = { bytes: layout.fileLength, checksum: layout.checksumLabel, ...(sha === null ? {} : { sha256: `sha256:${sha.digest('hex')}` }) };
  verifyPairing({ job, state, facts }, slot);
  if (manifest !== null && shards !== null) {
    const files = new Map<string, readonly ShardDigest[]>([
      [RUN_FILES.job, shardBytes(RUN_FILES.job, jobBytes)],
      [RUN_FILES.state, shards.finish()],
    ]);
    checkSlotManifest(manifest.parsed, { name: slot, where: `${RUN_FILES.checkpoints}/${slot}`, job, files, step: stepOfSlot(slot) });
  }
  return { slot, dir, job, state, stateFile, manifest };
}

/** The verdict on one slot considered by {@link chooseCheckpoint}. */
export interface SlotReport {
  readonly slot: SlotName;
  /**
   * `used`: chosen; `refused`: failed verification, or a checkpoint of another run (code `TRAINER_SLOT_FOREIGN`, never
   * a candidate); `older`: passed over — a valid job of an older step than the chosen one, or one written before a
   * pivot recorded in run.json (code `TRAINER_SLOT_SUPERSEDED`); `not-checked`: not needed.
   */
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

/** The entries of the checkpoints directory (none when it is missing). */
function slotNames(runDir: string): string[] {
  try {
    return readdirSync(checkpointsDir(runDir));
  } catch {
    return [];
  }
}

/** The `step_N` names among `names`, newest first. */
function stepSlotsOf(names: readonly string[]): SlotName[] {
  return names.filter((n) => stepOfSlot(n) !== null).sort((a, b) => (stepOfSlot(b) ?? 0) - (stepOfSlot(a) ?? 0));
}

/**
 * The resume candidates of a run in preference order: `latest`,
 * `latest.backup`, the step snapshots newest first, then `best` and
 * `best.backup` — but each best slot only when it is newer than every
 * rolling slot (a best-only save after the last cadence checkpoint, or a run
 * killed before its first one). A best slot is a complete job checkpoint
 * too, so such a run resumes from it instead of going back and cutting the
 * history it recorded. A best slot of another run is listed too, so that the
 * choice refuses and reports it as foreign.
 *
 * @param runDir - the run directory.
 * @returns slot names that exist.
 */
export function resumeCandidates(runDir: string): SlotName[] {
  const names = slotNames(runDir);
  const steps = stepSlotsOf(names);
  const rolling = [...['latest', 'latest.backup'].filter((n) => names.includes(n)), ...steps];
  const bestSlots = ['best', 'best.backup'].filter((n) => names.includes(n));
  if (bestSlots.length === 0) return rolling;
  // A best slot is a candidate only when it is newer than every rolling slot (an unreadable one counts as newest).
  const newestRolling = rolling.reduce((max, slot) => Math.max(max, readSlotJob(runDir, slot)?.step ?? Number.POSITIVE_INFINITY), Number.NEGATIVE_INFINITY);
  return [
    ...rolling,
    ...bestSlots.filter((n) => {
      const { job, error } = peekJob(runDir, n);
      // Another run's best is listed, to be refused and reported as foreign, whatever its step.
      if (isForeign(error)) return true;
      return job === null ? rolling.length === 0 : job.step > newestRolling;
    }),
  ];
}

function peekJob(runDir: string, slot: SlotName): { job: Job | null; error: unknown } {
  try {
    const bytes = readSlotFile(path.join(checkpointsDir(runDir), slot, RUN_FILES.job), slot, 'TRAINER_JOB_INVALID');
    const job = decodeJob(bytes, `${slot}/job.json`);
    assertOwnSlot(runDir, slot, job);
    return { job, error: null };
  } catch (error) {
    return { job: null, error };
  }
}

/** The run id `run.json` records, or null when it is missing or unreadable (then no slot can be told foreign). */
function recordedRunId(runDir: string): string | null {
  try {
    return readRunManifest(runDir)?.runId ?? null;
  } catch {
    return null;
  }
}

/**
 * Refuses a slot of another run: its job's run id is not the one `run.json`
 * records (a `best/` copied in from another run, say). Such a slot is never
 * a resume candidate, never evidence of the run's history and never its best.
 *
 * @param runDir - the run directory.
 * @param slot - the slot name.
 * @param job - the slot's digest-verified job.
 * @throws TrainerError `TRAINER_SLOT_FOREIGN`.
 */
function assertOwnSlot(runDir: string, slot: SlotName, job: Job): void {
  const runId = recordedRunId(runDir);
  if (runId === null || job.run.id === runId) return;
  // The job names the run: the file that says so is named (a job.json swapped in alone is found here too).
  throw new TrainerError(
    'TRAINER_SLOT_FOREIGN',
    `${slot} holds a checkpoint of another run: its ${RUN_FILES.job} names run ${job.run.id}, not this run (${runId}, run.json); it is never resumed from: move it out of checkpoints/`,
    { path: path.join(checkpointsDir(runDir), slot, RUN_FILES.job), slot, step: job.step },
  );
}

function isForeign(error: unknown): boolean {
  return isTrainerError(error) && error.code === 'TRAINER_SLOT_FOREIGN';
}

/**
 * A slot's digest-verified `job.json` (its state file is not read), or null
 * when it is missing or does not verify.
 *
 * @param runDir - the run directory.
 * @param slot - the slot name.
 * @returns the job, or null.
 */
export function readSlotJob(runDir: string, slot: SlotName): Job | null {
  return peekJob(runDir, slot).job;
}

/**
 * The newest job among the resume candidates whose `job.json` verifies (its
 * digest; the state is not read): the cheap view of where a run stands.
 *
 * @param runDir - the run directory.
 * @returns the slot and its job, or null when none reads.
 */
export function newestCandidateJob(runDir: string): { readonly slot: SlotName; readonly job: Job } | null {
  let newest: { slot: SlotName; job: Job } | null = null;
  for (const slot of resumeCandidates(runDir)) {
    const job = readSlotJob(runDir, slot);
    if (job !== null && (newest === null || job.step > newest.job.step)) newest = { slot, job };
  }
  return newest;
}

/**
 * The one rule for which slot holds a run's best checkpoint (status, verify
 * and {@link loadBestCheckpoint} all use it): the recorded best step (the
 * `best` of the newest checkpoint) is held by `best/`, else `best.backup/`,
 * else — when a kill interrupted the publication of `best/`, as a second
 * Ctrl-C can — by the rolling slot of that step, whose state is the same
 * (a resume republishes `best/` from it). A slot holds it when its job is of
 * that step and records it as the best.
 *
 * @param runDir - the run directory.
 * @param bestStep - the recorded best step.
 * @param jobOf - the job of a slot, or null when it is missing or not to be trusted (status: digest-checked; verify: fully verified).
 * @returns the slot, or null when no slot holds it.
 */
export function bestCheckpointSlot(runDir: string, bestStep: number, jobOf: (slot: SlotName) => Job | null): SlotName | null {
  const rolling = resumeCandidates(runDir).filter((s) => s !== 'best' && s !== 'best.backup');
  for (const slot of ['best', 'best.backup', ...rolling]) {
    const job = jobOf(slot);
    if (job !== null && job.step === bestStep && job.best?.step === bestStep) return slot;
  }
  return null;
}

function describe(error: unknown): { reason: string; code: string } {
  if (isTrainerError(error)) return { reason: error.message, code: error.code };
  return { reason: error instanceof Error ? error.message : String(error), code: 'TRAINER_IO' };
}

/**
 * What a run's own records prove about the checkpoints it has had: `run.json`
 * (every stop, completion, resume, pivot and fork happened at a checkpoint)
 * and the `best/` slots. Checkpoint choice uses it so that missing slots are
 * never mistaken for a run that has not started, and a slot older than a
 * recorded pivot is never resumed as if the pivot had not happened.
 */
export interface CheckpointEvidence {
  /** Pivots recorded in `run.json`, and the step of the last one. */
  readonly pivots: number;
  readonly pivotStep: number | null;
  /** The highest step at which a checkpoint is known to have existed, and what says so; null when nothing does. */
  readonly floor: { readonly step: number; readonly source: string } | null;
  /** Why starting the run over from step 0 would lose recorded work, or null when nothing says so. */
  readonly blocksRestart: string | null;
}

/** The events of `run.json` {@link checkpointEvidence} reads (a structural subset of `RunManifest`). */
export interface EvidenceManifest {
  readonly events: readonly { readonly event: string; readonly step?: number; readonly pivot?: number }[];
}

const EVIDENCE_EVENTS: ReadonlySet<string> = new Set(['stopped', 'completed', 'resumed', 'pivot', 'forked-from', 'forked-to']);

/**
 * Collects the {@link CheckpointEvidence} of a run.
 *
 * @param runDir - the run directory.
 * @param manifest - its `run.json`, or null.
 * @returns the evidence.
 */
export function checkpointEvidence(runDir: string, manifest: EvidenceManifest | null): CheckpointEvidence {
  let floor: { step: number; source: string } | null = null;
  let blocksRestart: string | null = null;
  let pivots = 0;
  let pivotStep: number | null = null;
  const raise = (step: number, source: string): void => {
    if (floor === null || step > floor.step) floor = { step, source };
    if (step > 0 && blocksRestart === null) blocksRestart = source;
  };
  for (const e of manifest?.events ?? []) {
    if (e.event === 'pivot') {
      pivots = Math.max(pivots, e.pivot ?? pivots + 1);
      pivotStep = e.step ?? pivotStep;
    }
    if (EVIDENCE_EVENTS.has(e.event) && typeof e.step === 'number') raise(e.step, `run.json records a '${e.event}' event at step ${e.step}`);
  }
  if (pivots > 0 && blocksRestart === null) blocksRestart = `run.json records pivot ${pivots}`;
  for (const slot of ['best', 'best.backup']) {
    if (!existsSync(path.join(checkpointsDir(runDir), slot))) continue;
    const { job, error } = peekJob(runDir, slot);
    // Another run's checkpoint proves nothing about this run's history.
    if (job === null && isForeign(error)) continue;
    if (job === null) blocksRestart ??= `${slot}/ exists but its job.json cannot be read`;
    else raise(job.step, `${slot}/ holds a checkpoint of step ${job.step}`);
  }
  return { pivots, pivotStep, floor, blocksRestart };
}

/**
 * Chooses the checkpoint to resume from: among `latest`, `latest.backup` and
 * the `step_N` snapshots, the slot with the highest step that fully verifies
 * (ties go to the earlier name in that order). With intact slots this is
 * `latest`; a damaged `latest` falls back to `latest.backup` or to a snapshot
 * of the same step, never to anything older than necessary.
 *
 * With the run's {@link CheckpointEvidence}, two more rules hold: a slot
 * written before the last pivot recorded in `run.json` is refused (resuming it
 * would silently undo the pivot), and a choice older than a checkpoint the run
 * is known to have had is refused unless a slot of that step is present (and
 * was refused as damaged, which the report shows): slots that are simply
 * missing never make a run quietly go back and cut its history.
 *
 * @param runDir - the run directory.
 * @param evidence - what run.json and best/ prove (see {@link checkpointEvidence}); default none.
 * @returns the chosen slot and the report on every candidate.
 * @throws TrainerError `TRAINER_NO_CHECKPOINT` (with every refusal in the message) when none verifies or the choice would go behind the evidence.
 */
export async function chooseCheckpoint(runDir: string, evidence: CheckpointEvidence | null = null): Promise<CheckpointChoice> {
  const candidates = resumeCandidates(runDir).map((slot, order) => ({ slot, order, ...peekJob(runDir, slot) }));
  const reports = new Map<SlotName, SlotReport>();
  const pivots = evidence?.pivots ?? 0;
  for (const c of candidates) {
    if (c.job === null) reports.set(c.slot, { slot: c.slot, status: 'refused', step: null, ...describe(c.error) });
    else if (c.job.run.pivots < pivots) {
      // Passed over, not damage: after every pivot latest.backup (and best/ until a better one) predates it.
      reports.set(c.slot, {
        slot: c.slot,
        status: 'older',
        step: c.job.step,
        code: 'TRAINER_SLOT_SUPERSEDED',
        reason: `${c.slot} was written before pivot ${pivots} (step ${evidence?.pivotStep ?? '?'}) recorded in run.json; resuming it would silently undo the pivot`,
      });
    }
  }
  const readable = candidates
    .filter((c) => c.job !== null && !reports.has(c.slot))
    .sort((a, b) => (b.job?.step ?? 0) - (a.job?.step ?? 0) || a.order - b.order);
  let chosen: VerifiedSlot | null = null;
  for (const c of readable) {
    const step = c.job?.step ?? null;
    if (chosen !== null) {
      reports.set(c.slot, {
        slot: c.slot,
        status: step === chosen.job.step ? 'not-checked' : 'older',
        step,
        reason: step === chosen.job.step ? `same step as ${chosen.slot}, which was preferred` : `step ${step} is older than ${chosen.slot} (step ${chosen.job.step})`,
        code: null,
      });
      continue;
    }
    try {
      chosen = await verifySlot(runDir, c.slot);
      reports.set(c.slot, { slot: c.slot, status: 'used', step, reason: null, code: null });
    } catch (error) {
      reports.set(c.slot, { slot: c.slot, status: 'refused', step, ...describe(error) });
    }
  }
  const report = candidates.map((c) => reports.get(c.slot) as SlotReport);
  if (chosen === null) {
    const why = report.length === 0 ? 'no checkpoint slots exist' : report.map((r) => `${r.slot}: ${r.reason ?? r.status}`).join('; ');
    const known = evidence?.blocksRestart ?? null;
    throw new TrainerError('TRAINER_NO_CHECKPOINT', `no checkpoint of ${runDir} verifies (${why})${known === null ? '' : `, although ${known}`}`, { path: runDir });
  }
  const floor = evidence?.floor ?? null;
  if (floor !== null && chosen.job.step < floor.step) {
    // A present slot of that step (or of unknown step) that was refused explains the gap: the report shows the damage.
    const accounted = candidates.some((c) => (c.job === null && !isForeign(c.error)) || (c.job !== null && c.job.step >= floor.step && reports.get(c.slot)?.status === 'refused'));
    if (!accounted) {
      const expected = ['latest', 'latest.backup', stepSlotName(floor.step)].filter((n) => !candidates.some((c) => c.slot === n));
      throw new TrainerError(
        'TRAINER_NO_CHECKPOINT',
        `${floor.source}, but no slot of that step is left (missing: ${expected.join(', ')}); the newest checkpoint present is ${chosen.slot} at step ${chosen.job.step}, ` +
          `and resuming from it would discard the history recorded up to step ${floor.step}. Restore the missing slots, or fork the older checkpoint into a new run ('llmcp fork … --slot ${chosen.slot}')`,
        { path: runDir, slot: chosen.slot, step: floor.step },
      );
    }
  }
  return { chosen, report };
}

/** Stages of {@link publishSlot}, for crash-injection tests. */
export type PublishStage = 'written' | 'old-backup-removed' | 'rotated' | 'renamed' | 'synced';

/** Test hook: called after each publication stage; throwing simulates a crash there. */
export type PublishHook = (stage: PublishStage, slot: SlotName) => void;

function inTempDirectory<T>(runDir: string, label: string, fill: (tmp: string) => T): { tmp: string; value: T } {
  const parent = checkpointsDir(runDir);
  makeDirectories(parent);
  const tmp = makeTempDirectory(parent, `tmp-${label}`);
  try {
    const value = fill(tmp);
    fsyncDirectory(tmp);
    return { tmp, value };
  } catch (e) {
    try {
      discardEntry(parent, tmp);
    } catch {
      // the .tmp- leftover is removed at the next start
    }
    throw e;
  }
}

/**
 * Writes a checkpoint's manifest into its directory, from the shard digests
 * of both files, and adds it to the run's lineage store — before any slot
 * holding the checkpoint is published (see lineage-store.ts).
 */
export type ManifestWriter = (dir: string, shards: readonly ShardDigest[]) => WrittenManifest;

/** Writes the manifest of a checkpoint directory and stores it in `lineage/`: the one home of that order. */
function writeManifestOf(runDir: string, tmp: string, write: { readonly manifest: ManifestWriter; readonly step: number; readonly shards: readonly ShardDigest[] }): WrittenManifest {
  const written = write.manifest(tmp, write.shards);
  storeManifest(runDir, { step: write.step, payloadDigest: written.payloadDigest, bytes: written.bytes });
  return written;
}

/** The two files of a checkpoint, encoded. */
export interface CheckpointBytes {
  /** Encoded `state.llmcp`. */
  readonly stateBytes: Uint8Array;
  /** Encoded `job.json`. */
  readonly jobBytes: Uint8Array;
  /** Writes the checkpoint's provenance manifest (and its step, for the lineage store); absent: none (tests of older layouts). */
  readonly manifest?: { readonly step: number; readonly write: ManifestWriter };
}

/**
 * Writes a checkpoint (state + job bytes, and its manifest) durably into a
 * fresh temporary directory inside `checkpoints/`.
 *
 * @param runDir - the run directory.
 * @param checkpoint - the encoded `state.llmcp` and `job.json`, and the manifest writer.
 * @param label - slot label for the temporary name.
 * @returns the temporary directory.
 */
export function writeCheckpointDirectory(runDir: string, checkpoint: CheckpointBytes, label: string): string {
  return inTempDirectory(runDir, label, (tmp) => {
    writeNewFileDurable(path.join(tmp, RUN_FILES.state), checkpoint.stateBytes);
    writeNewFileDurable(path.join(tmp, RUN_FILES.job), checkpoint.jobBytes);
    const m = checkpoint.manifest;
    if (m !== undefined) {
      const shards = [...shardBytes(RUN_FILES.job, checkpoint.jobBytes), ...shardBytes(RUN_FILES.state, checkpoint.stateBytes)];
      writeManifestOf(runDir, tmp, { manifest: m.write, step: m.step, shards });
    }
  }).tmp;
}

/**
 * Writes a checkpoint into a fresh temporary directory by streaming the state
 * through `@llmcp/format/node`'s atomic save (bounded memory, any size), then
 * the job that `sealJob` builds from the written file's size and LLMCP35
 * checksum, then the manifest. The format's writer takes the one pass over
 * the bytes that computes the checksum; the manifest's SHA-256 of every
 * shard is taken as the shards are written, by a hash thread reading them
 * back from the page cache (written-shards.ts): the writing thread does not
 * hash them.
 *
 * @param runDir - the run directory.
 * @param checkpoint - `state`: the checkpoint state; `seal`: builds the job bytes from the state file's facts; `manifest`: writes the manifest (absent: none).
 * @param label - slot label for the temporary name.
 * @returns the temporary directory, the facts, the job bytes and the manifest written.
 */
export async function writeCheckpointFromState(
  runDir: string,
  checkpoint: { readonly state: CheckpointState; readonly seal: (facts: StateFileFacts) => Uint8Array; readonly manifest?: ManifestWriter },
  label: string,
): Promise<{ tmp: string; facts: StateFileFacts; jobBytes: Uint8Array; manifest: WrittenManifest | null }> {
  const { state, seal } = checkpoint;
  const parent = checkpointsDir(runDir);
  makeDirectories(parent);
  const tmp = makeTempDirectory(parent, `tmp-${label}`);
  const shards = checkpoint.manifest === undefined ? null : new WrittenShardHasher(RUN_FILES.state);
  try {
    const stateFile = path.join(tmp, RUN_FILES.state);
    // One pass over the bytes on this thread: the format's writer computes the LLMCP35 checksum that job.json
    // records and the load verifies (llmcp-job/3 records no SHA-256 of the state; the manifest's shards are hashed
    // on the hash thread as they are written).
    const saved = await saveCheckpointAtomic(stateFile, state, { hashInWorker: false, ...(shards === null ? {} : { fileSystem: shards.fileSystem }) });
    const facts: StateFileFacts = { bytes: saved.byteLength, checksum: saved.checksumLabel };
    const jobBytes = seal(facts);
    writeNewFileDurable(path.join(tmp, RUN_FILES.job), jobBytes);
    let manifest: WrittenManifest | null = null;
    if (shards !== null && checkpoint.manifest !== undefined) {
      const all = [...shardBytes(RUN_FILES.job, jobBytes), ...(await shards.digests())];
      manifest = writeManifestOf(runDir, tmp, { manifest: checkpoint.manifest, step: Number(state.selectedStep), shards: all });
    }
    fsyncDirectory(tmp);
    return { tmp, facts, jobBytes, manifest };
  } catch (e) {
    shards?.dispose();
    try {
      discardEntry(parent, tmp);
    } catch {
      // the .tmp- leftover is removed at the next start
    }
    throw e;
  }
}

/**
 * Copies a complete checkpoint directory (a slot or a temporary one) into a
 * fresh temporary directory, each file copied exclusively and fsynced: an
 * independent copy, so damage to one slot does not reach another.
 *
 * @param runDir - the run directory.
 * @param from - the directory to copy.
 * @param label - slot label for the temporary name.
 * @returns the temporary directory.
 */
export function copyCheckpointDirectory(runDir: string, from: string, label: string): string {
  return inTempDirectory(runDir, label, (tmp) => {
    // The manifest travels with its checkpoint (a slot written before manifests has none).
    for (const name of [RUN_FILES.state, RUN_FILES.job, ...(existsSync(path.join(from, MANIFEST_FILE)) ? [MANIFEST_FILE] : [])]) {
      const target = path.join(tmp, name);
      copyFileSync(path.join(from, name), target, constants.COPYFILE_EXCL);
      fsyncFile(target);
    }
  }).tmp;
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
 * @param what - `tmpDir`: a directory from {@link writeCheckpointDirectory}; `slot`: the slot to publish it as.
 * @param options - backup policy and test hook.
 */
export function publishSlot(runDir: string, what: { readonly tmpDir: string; readonly slot: SlotName }, options: PublishOptions): void {
  const { tmpDir, slot } = what;
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
 * @param checkpoint - the target slot and the encoded state and job.
 * @param options - publication options.
 */
export function writeSlot(runDir: string, checkpoint: CheckpointBytes & { readonly slot: SlotName }, options: PublishOptions): void {
  const { slot } = checkpoint;
  const tmp = writeCheckpointDirectory(runDir, checkpoint, slot);
  try {
    publishSlot(runDir, { tmpDir: tmp, slot }, options);
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

/** Which step snapshots a run keeps (`checkpoint.keepSteps`, `checkpoint.keepEvery`). */
export interface RetentionPolicy {
  /** The newest rolling snapshots to keep (0 = none). */
  readonly keepSteps: number;
  /** Snapshots whose step is a multiple of this are kept for good, beside the rolling ones (null = none). */
  readonly keepEvery: number | null;
}

/**
 * Whether the snapshot of `step` is kept for good (its step is a multiple of `keepEvery`).
 *
 * @param policy - the retention policy.
 * @param step - a snapshot's step.
 * @returns true for a snapshot retention never removes.
 */
export function keptForGood(policy: RetentionPolicy, step: number): boolean {
  return policy.keepEvery !== null && step > 0 && step % policy.keepEvery === 0;
}

/**
 * Whether a cadence checkpoint at `step` publishes a step snapshot: when rolling ones are kept, or this one is kept for good.
 *
 * @param policy - the retention policy.
 * @param step - the checkpoint's step.
 * @returns true when `step_NNNNNN/` is written.
 */
export function writesSnapshot(policy: RetentionPolicy, step: number): boolean {
  return policy.keepSteps > 0 || keptForGood(policy, step);
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
 * `latest`, `latest.backup`, `best` or `best.backup` nor a snapshot kept for
 * good (`keepEvery`), and never deleting the newest checkpoint that verifies
 * (if `latest` and `latest.backup` are both damaged, the newest verifying
 * snapshot is kept even beyond the limit).
 *
 * @param runDir - the run directory.
 * @param policy - rolling snapshots to keep (a number), or the whole policy with the ones kept for good.
 * @param knownGood - a slot already known to verify (skips re-reading it).
 * @returns what was kept and removed.
 */
export async function applyRetention(runDir: string, policy: number | RetentionPolicy, knownGood: SlotName | null = null): Promise<RetentionResult> {
  const { keepSteps: keep, keepEvery } = typeof policy === 'number' ? { keepSteps: policy, keepEvery: null } : policy;
  const parent = checkpointsDir(runDir);
  // The step snapshots from the directory listing alone: a save below the limit reads no job.json.
  const names = slotNames(runDir);
  const all = stepSlotsOf(names);
  const forGood = all.filter((slot) => keptForGood({ keepSteps: keep, keepEvery }, stepOfSlot(slot) as number));
  const steps = all.filter((slot) => !forGood.includes(slot));
  if (steps.length <= keep) return { kept: all, removed: [], protectedSlot: null };
  // The newest verified checkpoint is the first candidate that verifies. When the caller already knows the
  // first rolling slot verifies, that is it: the best slots (whose job.json files the full candidate list
  // reads to order them) come after every rolling slot, so they cannot come first.
  const rollingHead = ['latest', 'latest.backup'].find((n) => names.includes(n)) ?? steps[0];
  const candidates = knownGood !== null && knownGood === rollingHead ? [knownGood] : resumeCandidates(runDir);
  let newestVerified: SlotName | null = null;
  for (const slot of candidates) {
    if (slot === knownGood) {
      newestVerified = slot;
      break;
    }
    try {
      await verifySlot(runDir, slot);
      newestVerified = slot;
      break;
    } catch {
      // try the next candidate
    }
  }
  const kept: SlotName[] = [...forGood];
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
 * Loads the best checkpoint: the slot {@link bestCheckpointSlot} names for
 * the recorded best, else `best`, else `best.backup`.
 *
 * @param runDir - the run directory.
 * @returns the verified slot, or null when the run has no best checkpoint yet.
 * @throws TrainerError when best slots exist but none verifies.
 */
export async function loadBestCheckpoint(runDir: string): Promise<VerifiedSlot | null> {
  const errors: string[] = [];
  const best = newestCandidateJob(runDir)?.job.best ?? null;
  const holder = best === null ? null : bestCheckpointSlot(runDir, best.step, (slot) => readSlotJob(runDir, slot));
  for (const slot of [...(holder === null ? [] : [holder]), ...['best', 'best.backup'].filter((s) => s !== holder)]) {
    if (!existsSync(path.join(checkpointsDir(runDir), slot))) continue;
    try {
      return await verifySlot(runDir, slot);
    } catch (e) {
      errors.push(`${slot}: ${describe(e).reason}`);
    }
  }
  if (errors.length === 0) return null;
  throw new TrainerError('TRAINER_NO_CHECKPOINT', `no best checkpoint of ${runDir} verifies (${errors.join('; ')})`, { path: runDir });
}
