/**
 * One checkpoint save, the same code on the training thread or in the save
 * worker: encode `state.llmcp`, run the sample audit from the checkpoint's own
 * sampling RNG state, seal `job.json` (with the state's hash and the sampling
 * stream's next state), fsync `loss.jsonl`, publish the slots, apply
 * retention, write `samples.json`.
 */
import path from 'node:path';
import { checksumLabel, encodeCheckpoint, fnv1a64, u64Hex, type CheckpointState } from '@llmcp/format';
import { writeFileAtomic } from '@llmcp/format/node';
import { encodeJob, sealJob, type JobBody } from './job.ts';
import { applyRetention, RUN_FILES, stepSlotName, writeSlot, type PublishHook, type RetentionResult } from './run-directory.ts';
import { canonicalJson, sha256Hex } from './internal/canonical-json.ts';
import { fsyncFile } from './internal/durable-fs.ts';
import { runSampleAudit, type SampleAudit, type SampleAuditSettings } from './sample-audit.ts';

/** A job without the fields only the save can know. */
export type JobDraft = Omit<JobBody, 'state' | 'sampling'> & {
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
  /** Rolling snapshots to keep. */
  readonly keepSteps: number;
  /** Whether the current `latest/` verified (a damaged one is discarded instead of becoming the backup). */
  readonly latestIsValid: boolean;
  /** Whether the current `best/` verified. */
  readonly bestIsValid: boolean;
}

/** What a save did. */
export interface SaveResult {
  readonly step: number;
  readonly stateBytes: number;
  readonly stateSha256: string;
  readonly checksum: string;
  /** Sampling stream state after the audit (hex). */
  readonly samplingNextState: string;
  readonly slots: readonly string[];
  readonly retention: RetentionResult | null;
  readonly audit: SampleAudit | null;
  /** Milliseconds spent in the save (encode, audit, writes). */
  readonly durationMs: number;
}

/**
 * Performs one save (see the module comment).
 *
 * @param request - the save request.
 * @param hook - crash-injection hook for publication (tests).
 * @returns what was written.
 */
export async function performSave(request: SaveRequest, hook?: PublishHook): Promise<SaveResult> {
  const started = performance.now();
  const stateBytes = encodeCheckpoint(request.state);
  const stateSha256 = `sha256:${sha256Hex(stateBytes)}`;
  const checksum = checksumLabel(fnv1a64(stateBytes));
  let audit: SampleAudit | null = null;
  let nextState = request.job.sampling.nextState;
  if (request.audit !== null) {
    audit = runSampleAudit(request.state, request.audit, request.job.step);
    nextState = audit.rngStateAfter;
  }
  const job = sealJob({
    ...request.job,
    sampling: { ...request.job.sampling, nextState: nextState ?? u64Hex(request.state.samplingRngState) },
    state: { bytes: stateBytes.length, sha256: stateSha256, checksum },
  });
  const jobBytes = encodeJob(job);
  const lossFile = path.join(request.runDir, RUN_FILES.lossLog);
  if (job.lossLog.bytes > 0) fsyncFile(lossFile);
  const written: string[] = [];
  const options = hook === undefined ? {} : { hook };
  if (request.slots.best) {
    writeSlot(request.runDir, 'best', stateBytes, jobBytes, { keepBackup: true, currentIsValid: request.bestIsValid, ...options });
    written.push('best');
  }
  if (request.slots.latest) {
    writeSlot(request.runDir, 'latest', stateBytes, jobBytes, { keepBackup: true, currentIsValid: request.latestIsValid, ...options });
    written.push('latest');
  }
  let retention: RetentionResult | null = null;
  if (request.slots.step && request.keepSteps > 0) {
    const slot = stepSlotName(job.step);
    writeSlot(request.runDir, slot, stateBytes, jobBytes, { keepBackup: false, ...options });
    written.push(slot);
    retention = applyRetention(request.runDir, request.keepSteps, request.slots.latest ? 'latest' : slot);
  }
  if (audit !== null) {
    await writeFileAtomic(path.join(request.runDir, RUN_FILES.samples), new TextEncoder().encode(`${canonicalJson(audit, '  ')}\n`));
  }
  return {
    step: job.step,
    stateBytes: stateBytes.length,
    stateSha256,
    checksum,
    samplingNextState: job.sampling.nextState,
    slots: written,
    retention,
    audit,
    durationMs: performance.now() - started,
  };
}
