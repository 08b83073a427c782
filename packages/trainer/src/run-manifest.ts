/**
 * `run.json`: the run's append-only log of decisions — creation, every resume
 * (from which slot, how many orphaned loss records were cut), stops, pivots,
 * forks in both directions, completion. Entries are only ever added; the file
 * is replaced atomically on each addition.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { MAX_TEXT_FILE_BYTES, readRegularFileSync, writeFileAtomic } from '@llmcp/format/node';
import { decodeUtf8Strict } from '@llmcp/tokenizer';
import { TrainerError } from './errors.ts';
import { RUN_FILES } from './run-layout.ts';
import { canonicalJson } from './internal/canonical-json.ts';
import type { TrainerConfig } from './config.ts';

/** The `run.json` format tag. */
export const RUN_MANIFEST_FORMAT = 'llmcp-run/1';

/**
 * The engine that computed a segment of the run (from a `created`, `resumed`
 * or `restarted` event to the next): `llmcp` or `torch`, and its world size.
 * Absent in events written before engines were recorded (the llmcp engine).
 */
export interface EngineRecord {
  readonly kind: 'llmcp' | 'torch';
  readonly worldSize: number;
}

/**
 * The provenance manifests of a segment of the run (from a `created`,
 * `resumed` or `restarted` event to the next): written from then on, signed
 * by the key of this hint (SHA-256 of its public key PEM) or unsigned.
 * Absent in events written before manifests existed.
 */
export interface ProvenanceRecord {
  readonly manifests: true;
  readonly signer: string | null;
}

/** One decision in a run's life. */
export type RunEvent =
  | {
      readonly event: 'created';
      readonly time: string;
      readonly configDigest: string;
      readonly steps: number;
      readonly config: TrainerConfig;
      readonly engine?: EngineRecord;
      readonly provenance?: ProvenanceRecord;
    }
  | {
      readonly event: 'resumed';
      readonly time: string;
      readonly slot: string;
      readonly step: number;
      /** Loss records beyond the checkpoint that a crash left and the resume cut. */
      readonly orphanedLossRecords: number;
      readonly orphanedLossSha256: string | null;
      /** Slots refused while choosing, with the reason. */
      readonly refused: readonly { readonly slot: string; readonly reason: string }[];
      /** Pieces of the resumed step that a crash had left undone and the resume completed (absent when none). */
      readonly repaired?: readonly string[];
      readonly engine?: EngineRecord;
      readonly provenance?: ProvenanceRecord;
    }
  | {
      readonly event: 'restarted';
      readonly time: string;
      readonly reason: string;
      readonly orphanedLossRecords: number;
      readonly orphanedLossSha256: string | null;
      readonly engine?: EngineRecord;
      readonly provenance?: ProvenanceRecord;
    }
  | { readonly event: 'stopped'; readonly time: string; readonly step: number; readonly reason: string }
  | { readonly event: 'completed'; readonly time: string; readonly step: number; readonly bestStep: number | null; readonly bestValidationLoss: number | null }
  | {
      readonly event: 'pivot';
      readonly time: string;
      readonly pivot: number;
      readonly step: number;
      readonly changed: readonly string[];
      readonly fromConfigDigest: string;
      readonly toConfigDigest: string;
      readonly archive: string;
      readonly reason: string;
      /** Loss records beyond the checkpoint that a crash left and the pivot cut, with their SHA-256 (absent when none). */
      readonly orphanedLossRecords?: number;
      readonly orphanedLossSha256?: string | null;
      /** Who signed the manifest of the pivot's checkpoint (absent in events written before manifests). */
      readonly provenance?: ProvenanceRecord;
    }
  | ({ readonly event: 'forked-from'; readonly time: string; readonly run: string; readonly runId: string; readonly slot: string; readonly step: number; readonly changed: readonly string[] } & ForkedState)
  | ({ readonly event: 'forked-to'; readonly time: string; readonly run: string; readonly runId: string; readonly slot: string; readonly step: number } & ForkedState);

/**
 * Which state a fork branched from, in a fork event: its LLMCP35 checksum
 * label (`stateChecksum`, as the slot's `job.json` records it). Events written
 * while jobs recorded a SHA-256 of the state (`llmcp-job/2`) carry
 * `stateSha256` instead; both stay readable, and a reader takes whichever is
 * present.
 */
export interface ForkedState {
  /** LLMCP35 checksum label (`fnv1a64:…`) of the forked slot's `state.llmcp`. */
  readonly stateChecksum?: string;
  /** `sha256:` of the forked slot's `state.llmcp`, in events written before `stateChecksum`. */
  readonly stateSha256?: string;
}

/** The content of `run.json`. */
export interface RunManifest {
  readonly format: typeof RUN_MANIFEST_FORMAT;
  /** Stable id of this run (forks get their own). */
  readonly runId: string;
  readonly events: readonly RunEvent[];
}

/**
 * Reads `run.json`.
 *
 * @param runDir - the run directory.
 * @returns the manifest, or null when the run has none.
 * @throws TrainerError `TRAINER_RUN_INVALID` for an unreadable manifest.
 */
export function readRunManifest(runDir: string): RunManifest | null {
  const file = path.join(runDir, RUN_FILES.manifest);
  if (!existsSync(file)) return null;
  try {
    // The input rule: a regular file (a FIFO in its place is refused without blocking), strict UTF-8.
    const value = JSON.parse(decodeUtf8Strict(readRegularFileSync(file, { maxBytes: MAX_TEXT_FILE_BYTES, what: 'run.json' }))) as RunManifest;
    if (value.format !== RUN_MANIFEST_FORMAT || typeof value.runId !== 'string' || !Array.isArray(value.events)) {
      throw new Error(`expected format ${RUN_MANIFEST_FORMAT} with runId and events`);
    }
    return value;
  } catch (cause) {
    throw new TrainerError('TRAINER_RUN_INVALID', `run.json of ${runDir} is not a valid run manifest: ${(cause as Error).message}`, { path: file, cause });
  }
}

/**
 * Reads `run.json` of a directory that must hold a run.
 *
 * @param runDir - the run directory.
 * @returns the manifest.
 * @throws TrainerError `TRAINER_RUN_INVALID` when the directory has no run.json or it is unreadable.
 */
export function requireRunManifest(runDir: string): RunManifest {
  const manifest = readRunManifest(runDir);
  if (manifest === null) throw new TrainerError('TRAINER_RUN_INVALID', `${runDir} is not a run directory (no run.json)`, { path: runDir });
  return manifest;
}

/**
 * Writes a manifest atomically.
 *
 * @param runDir - the run directory.
 * @param manifest - the complete manifest.
 */
export async function writeRunManifest(runDir: string, manifest: RunManifest): Promise<void> {
  const file = path.join(runDir, RUN_FILES.manifest);
  try {
    await writeFileAtomic(file, new TextEncoder().encode(`${canonicalJson(manifest, '  ')}\n`));
  } catch (cause) {
    throw new TrainerError('TRAINER_IO', `cannot write ${file}: ${(cause as Error).message}`, { path: file, cause });
  }
}

/**
 * Appends one event to `run.json` (creating it with `runId` when absent).
 *
 * @param runDir - the run directory.
 * @param runId - the run's id (used when the manifest does not exist yet).
 * @param event - the event.
 * @returns the new manifest.
 */
export async function appendRunEvent(runDir: string, runId: string, event: RunEvent): Promise<RunManifest> {
  const current = readRunManifest(runDir) ?? { format: RUN_MANIFEST_FORMAT, runId, events: [] };
  const next: RunManifest = { ...current, events: [...current.events, event] };
  await writeRunManifest(runDir, next);
  return next;
}
