/**
 * One checkpoint save, the same code on the training thread or in the save
 * worker: encode `state.llmcp`, run the sample audit from the checkpoint's own
 * sampling RNG state, seal `job.json` (with the state's size and LLMCP35
 * checksum, and the sampling stream's next state), fsync `loss.jsonl`,
 * publish the slots, apply retention, write `samples.json`.
 */
import path from 'node:path';
import { existsSync } from 'node:fs';
import { u64Hex, type CheckpointState } from '@llmcp/format';
import { writeFileAtomic } from '@llmcp/format/node';
import { encodeJob, JOB_FORMAT, sealJob, type Job, type JobBody } from './job.ts';
import {
  applyRetention,
  writesSnapshot,
  type RetentionPolicy,
  checkpointsDir,
  copyCheckpointDirectory,
  publishSlot,
  RUN_FILES,
  stepSlotName,
  writeCheckpointFromState,
  type PublishHook,
  type PublishOptions,
  type RetentionResult,
  type StateFileFacts,
} from './run-directory.ts';
import { parentLink, writeCheckpointManifest, type LineageStep } from './checkpoint-manifest.ts';
import type { LineageParent } from './provenance.ts';
import type { SigningKey } from './signing-key.ts';
import { canonicalJson } from './internal/canonical-json.ts';
import { discardEntry, fsyncFile } from './internal/durable-fs.ts';
import { runSampleAudit, type SampleAudit, type SampleAuditSettings } from './sample-audit.ts';

/** A job without the fields only the save can know (and without `format`: a save always writes {@link JOB_FORMAT}). */
export type JobDraft = Omit<JobBody, 'format' | 'state' | 'sampling'> & {
  readonly sampling: Omit<JobBody['sampling'], 'nextState'> & { readonly nextState: string | null };
};

/** Everything a save needs; plain data so it can be posted to a worker. */
export interface SaveRequest {
  readonly runDir: string;
  /** A private copy of the state (the worker owns it). */
  readonly state: CheckpointState;
  /** Job fields; `sampling.nextState` null means "after this save's audit". */
  readonly job: JobDraft;
  /** Slots to publish. */
  readonly slots: { readonly latest: boolean; readonly best: boolean; readonly step: boolean };
  /** Sample audit to run from the checkpoint's sampling RNG, or null. */
  readonly audit: SampleAuditSettings | null;
  /** Which step snapshots to keep (`checkpoint.keepSteps`, `checkpoint.keepEvery`). */
  readonly retention: RetentionPolicy;
  /** Whether the current `latest/` verified (a damaged one is discarded instead of becoming the backup). */
  readonly latestIsValid: boolean;
  /** Whether the current `best/` verified. */
  readonly bestIsValid: boolean;
  /**
   * The checkpoint's provenance manifest: how it continues its parent (the
   * saver sets it from the last checkpoint of the trajectory) and the key
   * that signs it (null: unsigned). Absent: no manifest (tests of older layouts).
   */
  readonly provenance?: { readonly lineage: LineageStep; readonly key: SigningKey | null };
}

/** What a save did. */
export interface SaveResult {
  readonly step: number;
  readonly stateBytes: number;
  /** The state file's LLMCP35 checksum label (`fnv1a64:…`), as `job.json` records it. */
  readonly checksum: string;
  /** Sampling stream state after the audit (hex). */
  readonly samplingNextState: string;
  readonly slots: readonly string[];
  readonly retention: RetentionResult | null;
  readonly audit: SampleAudit | null;
  /** Milliseconds spent in the save (encode, audit, writes). */
  readonly durationMs: number;
  /**
   * The manifest written (its subject digest), how the next checkpoint of the
   * trajectory names this one, and how this one continues its parent (as
   * written: the parent's own lineage when it is the parent saved again); null
   * without a manifest.
   */
  readonly manifest: { readonly digest: string; readonly link: LineageParent; readonly lineage: LineageStep } | null;
}

/** Slot publication order of one save: `best` and `latest` first (the resume point moves as early as possible), then the step snapshot. */
function plannedSlots(request: SaveRequest, step: number): { slot: string; keepBackup: boolean; currentIsValid?: boolean }[] {
  const planned: { slot: string; keepBackup: boolean; currentIsValid?: boolean }[] = [];
  if (request.slots.best) planned.push({ slot: 'best', keepBackup: true, currentIsValid: request.bestIsValid });
  if (request.slots.latest) planned.push({ slot: 'latest', keepBackup: true, currentIsValid: request.latestIsValid });
  if (request.slots.step && writesSnapshot(request.retention, step)) planned.push({ slot: stepSlotName(step), keepBackup: false });
  return planned;
}

/**
 * Performs one save (see the module comment). The state is streamed to disk
 * once, through `@llmcp/format/node` (bounded memory, any size, and its LLMCP35
 * checksum comes from that single pass — no other hash of the state bytes is
 * taken); further slots of the same save are
 * independent copies of that directory. Slots are published in the order
 * `best`, `latest`, step snapshot.
 *
 * @param request - the save request.
 * @param hook - crash-injection hook for publication (tests).
 * @returns what was written.
 */
export async function performSave(request: SaveRequest, hook?: PublishHook): Promise<SaveResult> {
  const started = performance.now();
  let audit: SampleAudit | null = null;
  let nextState = request.job.sampling.nextState;
  if (request.audit !== null) {
    audit = runSampleAudit(request.state, request.audit, request.job.step);
    nextState = audit.rngStateAfter;
  }
  const lossFile = path.join(request.runDir, RUN_FILES.lossLog);
  if (request.job.lossLog.bytes > 0) fsyncFile(lossFile);
  const withHook = hook === undefined ? {} : { hook };
  const planned: { slot: string; options: PublishOptions }[] = plannedSlots(request, request.job.step).map(({ slot, ...policy }) => ({ slot, options: { ...policy, ...withHook } }));

  let job: Job | null = null;
  const seal = (facts: StateFileFacts): Uint8Array => {
    job = sealJob({ ...request.job, format: JOB_FORMAT, sampling: { ...request.job.sampling, nextState: nextState ?? u64Hex(request.state.samplingRngState) }, state: facts });
    return encodeJob(job);
  };
  const provenance = request.provenance;
  let lineage: LineageStep | null = null;
  const manifest =
    provenance === undefined
      ? {}
      : {
          manifest: (dir: string, shards: Parameters<typeof writeCheckpointManifest>[1]['shards']) => {
            const m = writeCheckpointManifest(dir, { job: job as unknown as Job, shards, provenance: { ...provenance.lineage, key: provenance.key } });
            lineage = m.lineage;
            return m;
          },
        };
  const tmps: string[] = [];
  const written: string[] = [];
  let facts: StateFileFacts;
  let digest: string | null = null;
  try {
    const firstSlot = planned[0]?.slot ?? 'latest';
    const first = await writeCheckpointFromState(request.runDir, { state: request.state, seal, ...manifest }, firstSlot);
    facts = first.facts;
    digest = first.manifest?.digest ?? null;
    tmps.push(first.tmp);
    for (const p of planned.slice(1)) tmps.push(copyCheckpointDirectory(request.runDir, first.tmp, p.slot));
    planned.forEach((p, i) => {
      publishSlot(request.runDir, { tmpDir: tmps[i] as string, slot: p.slot }, p.options);
      written.push(p.slot);
    });
  } catch (e) {
    for (const tmp of tmps) {
      if (!existsSync(tmp)) continue;
      try {
        discardEntry(checkpointsDir(request.runDir), tmp);
      } catch {
        // removed at the next start
      }
    }
    throw e;
  }
  const sealed = job as unknown as Job;
  const writtenLineage = lineage as LineageStep | null; // set by the manifest writer
  let retention: RetentionResult | null = null;
  if (request.slots.step && writesSnapshot(request.retention, sealed.step)) {
    retention = await applyRetention(request.runDir, request.retention, request.slots.latest ? 'latest' : stepSlotName(sealed.step));
  }
  if (audit !== null) {
    await writeFileAtomic(path.join(request.runDir, RUN_FILES.samples), encodeSampleAudit(audit));
  }
  return {
    step: sealed.step,
    stateBytes: facts.bytes,
    checksum: facts.checksum,
    samplingNextState: sealed.sampling.nextState,
    slots: written,
    retention,
    audit,
    durationMs: performance.now() - started,
    manifest: digest === null || writtenLineage === null ? null : { digest, link: parentLink(sealed, digest), lineage: writtenLineage },
  };
}

/**
 * The bytes of `samples.json` (canonical JSON, two-space indent, final newline).
 *
 * @param audit - a sample audit.
 * @returns UTF-8 bytes.
 */
export function encodeSampleAudit(audit: SampleAudit): Uint8Array {
  return new TextEncoder().encode(`${canonicalJson(audit, '  ')}\n`);
}
