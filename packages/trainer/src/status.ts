/**
 * Read-only views of a run directory: a quick status (`runStatus`), a full
 * verification of every slot and of the loss log (`verifyRun`), and the
 * checkpoint a resume would use with the report on every candidate
 * (`loadRunCheckpoint`).
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { isTrainerError } from './errors.ts';
import type { Job } from './job.ts';
import { scanLossLog, type LossLogScan } from './loss-log.ts';
import { readRunManifest, requireRunManifest, type RunManifest } from './run-manifest.ts';
import {
  assertRunEntries,
  bestCheckpointSlot,
  checkpointEvidence,
  checkpointsDir,
  chooseCheckpoint,
  listSlots,
  newestCandidateJob,
  readSlotJob,
  resumeCandidates,
  RUN_FILES,
  slotFingerprint,
  stepOfSlot,
  verifySlot,
  type SlotReport,
  type VerifiedSlot,
} from './run-directory.ts';
import { lockHolder } from './internal/run-lock.ts';
import { checkRunProvenance, type ProvenanceReport } from './run-provenance.ts';
import type { TrustedKey } from './provenance.ts';

/** The checkpoint a resume would use. */
export interface LoadedRunCheckpoint {
  /** The slot used (`latest`, `latest.backup` or `step_NNNNNN`). */
  readonly slot: string;
  readonly step: number;
  /** The verified slot (job, decoded state, state bytes). */
  readonly checkpoint: VerifiedSlot;
  /** Every candidate with its verdict: used, refused (why), older, not needed. */
  readonly report: readonly SlotReport[];
}

/**
 * Loads the checkpoint a resume would use: `latest`, else `latest.backup`, else
 * the newest `step_N`, taking the highest step that fully verifies.
 *
 * @param runDir - the run directory.
 * @returns the verified checkpoint and the report.
 * @throws TrainerError `TRAINER_NO_CHECKPOINT` listing why each candidate was refused.
 * @example
 * ```ts
 * const { slot, step, report } = await loadRunCheckpoint('runs/a');
 * for (const r of report) console.log(r.slot, r.status, r.reason ?? '');
 * ```
 */
export async function loadRunCheckpoint(runDir: string): Promise<LoadedRunCheckpoint> {
  const { chosen, report } = await chooseCheckpoint(runDir, checkpointEvidence(runDir, readRunManifest(runDir)));
  return { slot: chosen.slot, step: chosen.job.step, checkpoint: chosen, report };
}

/** A quick summary of a run. */
export interface RunStatus {
  readonly runDir: string;
  readonly runId: string | null;
  /** `complete`: the step budget is reached; `in-progress`: resumable; `no-checkpoint`: nothing saved yet; `damaged`: no job file verifies. */
  readonly state: 'complete' | 'in-progress' | 'no-checkpoint' | 'damaged';
  /** Slot whose job.json was read (digest-checked, state not decoded). */
  readonly slot: string | null;
  readonly step: number | null;
  readonly totalSteps: number | null;
  readonly best: { readonly step: number; readonly validationLoss: number } | null;
  /** The slot holding the best checkpoint (the rule of `bestCheckpointSlot`, shared with {@link verifyRun}), or null. */
  readonly bestSlot: string | null;
  readonly lastValidationLoss: number | null;
  /** Training records in loss.jsonl (one per step). */
  readonly lossRecords: number;
  /** Evaluation records in loss.jsonl (one per evaluated step; runs written before they existed have none). */
  readonly lossEvaluations: number;
  readonly lastLoss: number | null;
  readonly pivots: number;
  /** Slots present in `checkpoints/`. */
  readonly slots: readonly string[];
  readonly events: number;
}

/**
 * A quick status from the newest job file whose digest verifies (the state
 * file is not decoded; use {@link verifyRun} for that).
 *
 * @param runDir - the run directory.
 * @returns the status.
 * @throws TrainerError `TRAINER_RUN_INVALID` when `runDir` has no run.json.
 */
export function runStatus(runDir: string): RunStatus {
  const manifest = requireRunManifest(runDir);
  const newest = newestCandidateJob(runDir);
  const job: Job | null = newest?.job ?? null;
  const slot: string | null = newest?.slot ?? null;
  const best = job?.best ?? null;
  const loss = scanLossLog(path.join(runDir, RUN_FILES.lossLog));
  const slots = listSlots(runDir);
  const state: RunStatus['state'] =
    job === null ? (slots.length === 0 ? 'no-checkpoint' : 'damaged') : job.step >= job.config.steps && job.phase.validated && job.phase.audited ? 'complete' : 'in-progress';
  return {
    runDir,
    runId: manifest.runId,
    state,
    slot,
    step: job?.step ?? null,
    totalSteps: job?.config.steps ?? null,
    best: job?.best ?? null,
    bestSlot: best === null ? null : bestCheckpointSlot(runDir, best.step, (s) => readSlotJob(runDir, s)),
    lastValidationLoss: job?.evaluations.at(-1)?.validationLoss ?? null,
    lossRecords: loss.records,
    lossEvaluations: loss.evaluations,
    lastLoss: loss.last?.loss ?? null,
    pivots: job?.run.pivots ?? 0,
    slots,
    events: manifest.events.length,
  };
}

/** The verdict on one slot. */
export interface SlotVerification {
  readonly slot: string;
  readonly ok: boolean;
  readonly step: number | null;
  readonly code: string | null;
  readonly message: string | null;
}

/** The machine-readable result of {@link verifyRun}. */
export interface RunVerification {
  /** True when `latest/` verifies (or, in a live run, its publication is in progress), every slot verifies, the loss log is continuous and run.json reads. */
  readonly ok: boolean;
  readonly runDir: string;
  readonly slots: readonly SlotVerification[];
  /** The slot a resume would use, or null. */
  readonly resumeSlot: string | null;
  /** The best checkpoint: the best recorded by the resume slot and the verified slot holding it (the rule `runStatus` uses too), or null. */
  readonly best: { readonly step: number; readonly validationLoss: number; readonly slot: string | null } | null;
  readonly lossLog: {
    readonly ok: boolean;
    /** Training records (one per step). */
    readonly records: number;
    /** Evaluation records. */
    readonly evaluations: number;
    /** Training records beyond the resume checkpoint (left by a crash, or written since it by a live run; a resume cuts them). */
    readonly orphaned: number;
    /** Whether the prefix up to the resume checkpoint has the recorded SHA-256. */
    readonly prefixMatches: boolean | null;
    readonly problem: string | null;
  };
  readonly manifest: { readonly ok: boolean; readonly events: number; readonly problem: string | null };
  /** Whether every entry of the run directory is of its kind (files are regular files, slots real directories). */
  readonly entries: { readonly ok: boolean; readonly problem: string | null };
  /**
   * The provenance manifests: signatures (against the trusted key, when one was given), the lineage store, and
   * the lineage chain from the newest checkpoint back to its origin. `state: 'none'` for a run written before
   * manifests (nothing to check).
   */
  readonly provenance: ProvenanceReport;
  /**
   * The process training the run while it was verified (from `run.lock`), or
   * null. A live run rotates its slots; the verdict is taken from a moment
   * when nothing changed while it was read, when there was one.
   */
  readonly inUse: { readonly pid: number; readonly host: string; readonly since: string } | null;
  /** False when the slots kept changing during every attempt: the verdict may be stale. */
  readonly settled: boolean;
}

/** What identifies the checkpoints directory's content: its names, and the {@link slotFingerprint} of each. */
function directoryFingerprint(runDir: string): string {
  let names: string[];
  try {
    names = readdirSync(checkpointsDir(runDir)).sort();
  } catch {
    return '';
  }
  return names.map((name) => `${name}=${slotFingerprint(runDir, name)}`).join('|');
}

/**
 * Attempts at a verdict on a live run before reporting an unsettled one. An
 * attempt re-reads only the slots that changed since the previous one (the
 * verdicts are kept by slot and fingerprint), so it is short, and one falls
 * between two publications of a run that checkpoints every fraction of a second.
 */
const LIVE_ATTEMPTS = 20;

/** The verdict on a slot, kept by slot name and fingerprint across the attempts of one verification. */
type SlotOutcome = { readonly verified: VerifiedSlot; readonly row: SlotVerification } | { readonly verified: null; readonly row: SlotVerification };

/** Options of {@link verifyRun}. */
export interface VerifyRunOptions {
  /** The public key every manifest must be signed by (`loadTrustedKey`, `--trust-key`); without it signatures are not checked against a key. */
  readonly trustKey?: TrustedKey | null;
}

/**
 * Verifies every checkpoint slot (job digest and schema, LLMCP35 validation,
 * job/state pairing, the files against the slot's provenance manifest), the
 * run's provenance (see run-provenance.ts: the lineage store, the chain from
 * the newest checkpoint, and the signatures against a trusted key), the
 * loss log's continuity (one training record per
 * step, in order, each evaluation record after its step's, and the prefix
 * hash recorded by the resume checkpoint), and run.json; it names the best
 * checkpoint by the rule `runStatus` uses. Never throws for a damaged run; the
 * result says what is wrong.
 *
 * On a run that is being trained (`run.lock` names a live process), slots are
 * replaced while they are read: each attempt fingerprints `checkpoints/`
 * before and after, and a verdict counts only if nothing changed in between
 * (up to {@link LIVE_ATTEMPTS} attempts, each re-reading only the slots that
 * changed; `settled` says whether one did). The live writer's normal states
 * are not failures: records beyond the checkpoint, a record being appended,
 * and `latest/` briefly absent while its replacement is being published.
 *
 * @param runDir - the run directory.
 * @param options - the trusted key.
 * @returns the verification result.
 * @example
 * ```ts
 * const v = await verifyRun('runs/a', { trustKey: await loadTrustedKey('key.pub.pem') });
 * if (!v.ok) console.log(JSON.stringify(v, null, 2));
 * ```
 */
export async function verifyRun(runDir: string, options: VerifyRunOptions = {}): Promise<RunVerification> {
  const holder = lockHolder(runDir);
  const owner = holder?.state === 'alive' ? holder.owner : null;
  const inUse = owner === null ? null : { pid: owner.pid, host: owner.host, since: owner.since };
  const attempts = inUse === null ? 1 : LIVE_ATTEMPTS;
  const known = new Map<string, SlotOutcome>();
  let result: Omit<RunVerification, 'inUse' | 'settled'> | null = null;
  let settled = false;
  for (let attempt = 0; attempt < attempts; attempt += 1) {
    const before = directoryFingerprint(runDir);
    result = await verifyOnce(runDir, { live: inUse !== null, trustKey: options.trustKey ?? null }, known);
    settled = directoryFingerprint(runDir) === before;
    if (settled) break;
  }
  return { ...(result as Omit<RunVerification, 'inUse' | 'settled'>), inUse, settled: settled || inUse === null };
}

async function verifySlotOutcome(runDir: string, slot: string): Promise<SlotOutcome> {
  try {
    const v = await verifySlot(runDir, slot);
    return { verified: v, row: { slot, ok: true, step: v.job.step, code: null, message: null } };
  } catch (e) {
    const step = readSlotJob(runDir, slot)?.step ?? (isTrainerError(e) ? (e.step ?? null) : null);
    return { verified: null, row: { slot, ok: false, step, code: isTrainerError(e) ? e.code : 'TRAINER_IO', message: e instanceof Error ? e.message : String(e) } };
  }
}

async function verifyOnce(
  runDir: string,
  how: { readonly live: boolean; readonly trustKey: TrustedKey | null },
  known: Map<string, SlotOutcome>,
): Promise<Omit<RunVerification, 'inUse' | 'settled'>> {
  const { live } = how;
  const slots: SlotVerification[] = [];
  const ordered = listSlots(runDir).sort((a, b) => {
    const rank = (n: string): number => (n === 'latest' ? 0 : n === 'latest.backup' ? 1 : n === 'best' ? 2 : n === 'best.backup' ? 3 : 4);
    return rank(a) - rank(b) || (stepOfSlot(b) ?? 0) - (stepOfSlot(a) ?? 0);
  });
  const verified = new Map<string, VerifiedSlot>();
  for (const slot of ordered) {
    // A slot unchanged since an earlier attempt keeps its verdict (same name, same fingerprint: the same files).
    const before = slotFingerprint(runDir, slot);
    const key = `${slot}\n${before}`;
    let outcome = known.get(key);
    if (outcome === undefined) {
      outcome = await verifySlotOutcome(runDir, slot);
      if (slotFingerprint(runDir, slot) === before) known.set(key, outcome);
    }
    if (outcome.verified !== null) verified.set(slot, outcome.verified);
    slots.push(outcome.row);
  }
  let resume: VerifiedSlot | null = null;
  for (const slot of resumeCandidates(runDir)) {
    const v = verified.get(slot);
    if (v !== undefined && (resume === null || v.job.step > resume.job.step)) resume = v;
  }
  const want = resume?.job.lossLog ?? null;
  const recordedBest = resume?.job.best ?? null;
  let scan: LossLogScan;
  try {
    scan = scanLossLog(path.join(runDir, RUN_FILES.lossLog), want?.bytes ?? null);
  } catch (e) {
    scan = { bytes: 0, records: 0, evaluations: 0, last: null, lastEvaluation: null, trailingBytes: 0, problem: (e as Error).message, prefixSha256: null };
  }
  let prefixMatches: boolean | null = null;
  let orphaned = 0;
  // A live writer may be in the middle of appending a record: a partial last line is its, not damage.
  let problem = scan.problem ?? (scan.trailingBytes > 0 && !live ? `${scan.trailingBytes} bytes after the last complete record` : null);
  if (resume !== null && want !== null) {
    prefixMatches = scan.prefixSha256 === want.sha256;
    orphaned = Math.max(0, scan.records - want.records);
    if (!prefixMatches && problem === null) problem = `the first ${want.bytes} bytes do not have the SHA-256 recorded by ${resume.slot}`;
  }
  let manifestProblem: string | null = null;
  let events = 0;
  let runJson: RunManifest | null = null;
  try {
    runJson = readRunManifest(runDir);
    if (runJson === null) manifestProblem = 'run.json is missing';
    else events = runJson.events.length;
  } catch (e) {
    manifestProblem = (e as Error).message;
  }
  // After the slots (a slot seen published has its manifest in the lineage store already).
  const provenance = await checkRunProvenance({ runDir, runJson, slots: verified, resumeSlot: resume?.slot ?? null, trustKey: how.trustKey });
  let entriesProblem: string | null = null;
  try {
    assertRunEntries(runDir);
  } catch (e) {
    entriesProblem = (e as Error).message;
  }
  const lossOk = problem === null && prefixMatches !== false;
  // Mid-publication a live run has no latest/ for an instant, while its replacement sits in a .tmp-latest directory.
  const publishing = live && !listSlots(runDir).includes('latest') && hiddenEntries(runDir).some((n) => n.startsWith('.tmp-latest'));
  // latest/ must be present and sound (best/ may legitimately be newer: a best-only save between cadence checkpoints).
  const resumeOk = resume !== null && (verified.has('latest') || publishing);
  return {
    ok: slots.every((s) => s.ok) && resumeOk && lossOk && manifestProblem === null && entriesProblem === null && provenance.ok,
    runDir,
    slots,
    resumeSlot: resume?.slot ?? null,
    best: recordedBest === null ? null : { ...recordedBest, slot: bestCheckpointSlot(runDir, recordedBest.step, (s) => verified.get(s)?.job ?? null) },
    lossLog: { ok: lossOk, records: scan.records, evaluations: scan.evaluations, orphaned, prefixMatches, problem },
    manifest: { ok: manifestProblem === null, events, problem: manifestProblem },
    entries: { ok: entriesProblem === null, problem: entriesProblem },
    provenance,
  };
}

function hiddenEntries(runDir: string): string[] {
  try {
    return readdirSync(checkpointsDir(runDir)).filter((n) => n.startsWith('.'));
  } catch {
    return [];
  }
}
