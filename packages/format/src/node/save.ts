/**
 * Streaming atomic checkpoint save (../../SPEC.md §8, §11).
 *
 * The reference encodes the whole file in memory first. Here the state is
 * planned and fully validated first (so, as in the reference, nothing touches
 * the file system when encoding would fail); then the header and each
 * record's bytes are written straight from the caller's Float64Arrays, and
 * the checksum is patched in at offset 30 before the fsync. The bytes on disk
 * are exactly `encodeCheckpoint(state)` and added memory is bounded.
 *
 * FNV-1a is serial and is the bottleneck, so it runs on a worker thread fed
 * through a fixed 48 MiB ring: it starts on the first bytes while this thread
 * is still checking the structure, and keeps hashing while this thread issues the writes
 * (falling back to hashing in-thread, overlapped with each write, when worker
 * threads are unavailable; a worker that fails mid-save is replaced by hashing
 * the planned bytes in-thread, the save then completes unchanged).
 *
 * In both modes the value searches of validation are folded into the hash:
 * every rule but those runs first (nothing touches the file system if one
 * fails), then each f64 record is hashed with the fused kernel that screens
 * its values (on the worker, or in-thread while the libuv thread pool writes
 * it), so this thread never searches the values itself. A
 * flagged record is searched exactly afterwards; a non-finite value (or a
 * negative second moment) then fails the save with the decoder's error and
 * the temporary file is removed, the previous file untouched.
 */
import { checksumLabel } from '../fnv1a64.ts';
import { SCAN_NEGATIVE, SCAN_NON_FINITE, ScanningHasher } from '../internal/scanning-hasher.ts';
import { planCheckpoint, type CheckpointPlan } from '../plan.ts';
import { CHECKSUM_OFFSET } from '../tags.ts';
import type { CheckpointState } from '../types.ts';
import { replaceFileAtomic, writeFully, type AtomicFileHandle, type AtomicWriteOptions } from './atomic-write.ts';
import { WorkerHasher } from './worker-hasher.ts';

/** Options of {@link saveCheckpointAtomic}. */
export interface SaveOptions extends AtomicWriteOptions {
  /**
   * Hash on a worker thread (default true): the serial FNV-1a runs on another
   * core while this thread validates and writes. `false` hashes in-thread,
   * overlapped with the writes only.
   */
  readonly hashInWorker?: boolean;
  /**
   * Receives every byte of the saved file in file order — the header with
   * its final checksum first, then each record — once the checksum is known
   * and while the data is being flushed to disk, before the final fsync:
   * e.g. a SHA-256 of the file without reading it back
   * (`onFileBytes: (chunk) => sha.update(chunk)`). Chunks are views valid
   * only during the call (copy to keep). A throw fails the save like a write
   * error (the temporary file is removed).
   */
  readonly onFileBytes?: (chunk: Uint8Array) => void;
}

/** Bytes per write call; the hash of one chunk overlaps the write of the same chunk. */
const CHUNK_BYTES = 4 << 20;
/** Start an early datasync after this many new bytes, so disk writeback overlaps hashing. */
const EARLY_FLUSH_BYTES = 32 << 20;

/** What a save wrote. */
export interface SaveResult {
  /** File length in bytes. */
  readonly byteLength: number;
  /** The stored checksum value. */
  readonly checksum: bigint;
  /** `fnv1a64:%016x` of the checksum. */
  readonly checksumLabel: string;
}

function checksumBytes(checksum: bigint): Uint8Array {
  const field = new Uint8Array(8);
  new DataView(field.buffer).setBigUint64(0, checksum, true);
  return field;
}

/** Writes kept in flight while this thread hashes the next chunks (the caller's arrays are not changed meanwhile). */
const WRITES_AHEAD = 3;

/**
 * Writes every chunk of the file in order — up to {@link WRITES_AHEAD}
 * writes in flight on the libuv thread pool while `onChunk` hashes the
 * following chunks — starting early datasyncs so disk writeback overlaps the rest.
 */
async function writeAll(handle: AtomicFileHandle, { header, records }: Pick<CheckpointPlan, 'header' | 'records'>, onChunk?: (chunk: Uint8Array, record: number) => void): Promise<void> {
  await writeFully(handle, header, 0);
  let position = header.length;
  let flushedAt = 0;
  let flushing: Promise<void> | null = null;
  let flushError: unknown;
  const pending: Promise<void>[] = [];
  try {
    for (const [index, record] of records.entries()) {
      for (let start = 0; start < record.length; start += CHUNK_BYTES) {
        const chunk = record.subarray(start, Math.min(record.length, start + CHUNK_BYTES));
        const written = writeFully(handle, chunk, position); // runs on the libuv thread pool…
        written.catch(() => undefined); // observed below
        pending.push(written);
        onChunk?.(chunk, index); // …while this thread hashes the same bytes (in-thread mode)
        if (pending.length >= WRITES_AHEAD) await pending.shift();
        position += chunk.length;
        if (handle.datasync !== undefined && flushing === null && position - flushedAt >= EARLY_FLUSH_BYTES) {
          // Not awaited here: the disk flushes what is written while the next chunks are produced.
          flushedAt = position;
          flushing = handle.datasync().then(
            () => {
              flushing = null;
            },
            (e: unknown) => {
              flushError ??= e;
              flushing = null;
            },
          );
        }
      }
    }
    while (pending.length > 0) await pending.shift();
    if (onChunk === undefined && handle.datasync !== undefined && position > flushedAt) {
      // Hashing elsewhere (the worker) outlasts the writes: flush the rest now, while it hashes, not in the final fsync.
      if (flushing !== null) await flushing;
      flushedAt = position;
      await handle.datasync();
    }
  } catch (e) {
    await Promise.allSettled(pending); // no write outlives this call (the file is closed or removed next)
    if (flushing !== null) await flushing;
    throw e;
  }
  if (flushing !== null) await flushing;
  if (flushError !== undefined) throw flushError;
}

/**
 * Hands the final file bytes to `observe` in order, from memory (the state's
 * own arrays), while an early datasync flushes what was written.
 * @param handle - the temporary file (for the early datasync).
 * @param file - the plan and its checksum.
 * @param file.plan - the validated plan.
 * @param file.checksum - the checksum stored at offset 30.
 * @param observe - the caller's `onFileBytes`.
 */
async function observeFile(handle: AtomicFileHandle, { plan, checksum }: { plan: CheckpointPlan; checksum: bigint }, observe: (chunk: Uint8Array) => void): Promise<void> {
  let flushError: unknown;
  const flushing = handle.datasync?.().catch((e: unknown) => {
    flushError = e;
  });
  try {
    const header = plan.header.slice();
    header.set(checksumBytes(checksum), CHECKSUM_OFFSET);
    observe(header);
    for (const record of plan.records) {
      for (let start = 0; start < record.length; start += CHUNK_BYTES) observe(record.subarray(start, Math.min(record.length, start + CHUNK_BYTES)));
    }
  } finally {
    await flushing;
  }
  if (flushError !== undefined) throw flushError;
}

/**
 * In-thread save: writes every chunk (libuv thread pool) while this thread
 * hashes it, f64 records with the fused kernel that also screens their
 * values. Only if a screen flags a record that a value rule cares about
 * (any non-finite f64, a negative second moment) is the state validated
 * again with exact searches of the flagged records: it then throws the
 * decoder's error (the temporary file is removed by the atomic writer).
 * @param handle - the temporary file.
 * @param state - the state (for the exact validation).
 * @param plan - the plan, validated except for the value searches.
 * @returns the checksum.
 */
async function streamInThread(handle: AtomicFileHandle, state: CheckpointState, plan: CheckpointPlan): Promise<bigint> {
  const hasher = new ScanningHasher().update(plan.header);
  const flags: number[] = [];
  const descriptors = plan.raw.descriptors;
  await writeAll(handle, plan, (chunk, index) => {
    if (descriptors[index]?.dtypeTag === 3) flags[index] = (flags[index] ?? 0) | hasher.scan(chunk);
    else hasher.update(chunk);
  });
  assertScreenedValues(state, plan, (i) => flags[i] ?? 0);
  return hasher.digest();
}

/** A piece of the file for the hash worker: f64 records carry their descriptor index as the screen tag. */
interface HashPart {
  readonly bytes: Uint8Array;
  readonly tag: number | undefined;
}

/** Feeds the worker every byte after the first `skip` bytes of header + records. */
async function feedWorker(hasher: WorkerHasher, parts: readonly HashPart[], skip: number): Promise<void> {
  let remaining = skip;
  for (const { bytes: part, tag } of parts) {
    if (remaining >= part.length) {
      remaining -= part.length;
      continue;
    }
    const rest = part.subarray(remaining); // `remaining` is a whole number of slots into the part: element-aligned
    remaining = 0;
    for (let start = 0; start < rest.length; start += CHUNK_BYTES) await hasher.push(rest.subarray(start, Math.min(rest.length, start + CHUNK_BYTES)), tag);
  }
}

/**
 * Whether a screen flags a record that a value rule cares about (any
 * non-finite f64, a negative second moment): the state is then validated
 * again with exact searches, which throws the decoder's error.
 * @param state - the state.
 * @param plan - its plan.
 * @param flags - screen flags per descriptor index.
 */
function assertScreenedValues(state: CheckpointState, plan: CheckpointPlan, flags: (index: number) => number): void {
  const suspect = plan.raw.descriptors.some((d) => {
    const f = flags(d.index);
    return (f & SCAN_NON_FINITE) !== 0 || (d.roleTag === 5 && (f & SCAN_NEGATIVE) !== 0);
  });
  if (suspect) planCheckpoint(state, { screened: flags });
}

/**
 * Hashes (and screens) the whole planned file in-thread, after the hash worker failed.
 * @param plan - the plan.
 * @param failed - the failed worker stream (closed here).
 * @returns the checksum and the screen flags per descriptor.
 */
function hashPlanInThread(plan: CheckpointPlan, failed: WorkerHasher): { checksum: bigint; flags: (index: number) => number } {
  failed.close();
  const hasher = new ScanningHasher().update(plan.header);
  const flags: number[] = [];
  plan.records.forEach((record, i) => {
    if (plan.raw.descriptors[i]?.dtypeTag === 3) flags[i] = hasher.scan(record);
    else hasher.update(record);
  });
  return { checksum: hasher.digest(), flags: (i) => flags[i] ?? 0 };
}

/**
 * Saves a checkpoint atomically: validates and plans the canonical file,
 * streams it into a unique same-directory temporary file
 * (`.<name>.tmp-<pid>-<serial>`, created exclusively, up to 128 names),
 * fsyncs and closes it, renames it over `path`, and fsyncs the directory.
 * On failure the temporary file is removed and the previous file at `path`
 * is untouched (unless only the final directory fsync failed, after the
 * rename). The written bytes equal `encodeCheckpoint(state)`.
 *
 * @param path - destination file.
 * @param state - the checkpoint state.
 * @param options - file-system injection (tests), `hashInWorker`, `onFileBytes`.
 * @returns length and checksum of the saved file.
 * @throws FormatError for an invalid state (before any file is touched; a non-finite value or
 *   negative second moment is found while streaming and the temporary file removed),
 *   FORMAT_IO for file-system failures, FORMAT_LAYOUT for a path without a
 *   file name, FORMAT_UNSUPPORTED_ATOMIC_REPLACEMENT on Windows.
 * @example
 * ```ts
 * const { checksumLabel } = await saveCheckpointAtomic('run/state.llmcp', state);
 * ```
 */
export async function saveCheckpointAtomic(path: string, state: CheckpointState, options: SaveOptions = {}): Promise<SaveResult> {
  // Plan without validation first, so the hash worker can start on the first
  // bytes (the header's checksum field is still zero) while the state is validated.
  const hasher = options.hashInWorker === false ? null : WorkerHasher.start();
  const draft = hasher === null ? null : planCheckpoint(state, { validate: false });
  const parts: HashPart[] = draft === null ? [] : [{ bytes: draft.header, tag: undefined }, ...draft.records.map((bytes, i) => ({ bytes, tag: draft.raw.descriptors[i]?.dtypeTag === 3 ? i : undefined }))];
  let queued = 0;
  if (hasher !== null) {
    for (const part of parts) {
      const n = hasher.pushAvailable(part.bytes, part.tag);
      queued += n;
      if (n < part.bytes.length) break;
    }
  }
  let plan: CheckpointPlan;
  try {
    // Every rule but the value searches (while the worker, if any, hashes): the fused kernel
    // screens f64 values while it hashes (see assertScreenedValues).
    plan = planCheckpoint(state, { screened: () => 0 });
  } catch (e) {
    hasher?.close();
    planCheckpoint(state); // a value error before the structural one comes first: the decoder's order
    throw e;
  }
  // Keep the worker fed from now on: the ring drains while the temporary file is created.
  const feeding = hasher === null ? null : feedWorker(hasher, parts, queued);
  feeding?.catch(() => undefined); // awaited inside the write below; a failure before it closes the hasher
  let checksum = 0n;
  try {
    await replaceFileAtomic(
      path,
      async (handle) => {
        if (hasher === null) checksum = await streamInThread(handle, state, plan);
        else {
          // A failed worker is not a failed save: the plan is in memory, hash it in-thread instead.
          const hashed = (feeding as Promise<void>).then(async () => ({ checksum: await hasher.digest(), flags: (i: number) => hasher.flags(i) })).catch(() => null);
          await writeAll(handle, plan);
          const result = (await hashed) ?? hashPlanInThread(plan, hasher);
          checksum = result.checksum;
          assertScreenedValues(state, plan, result.flags);
        }
        await writeFully(handle, checksumBytes(checksum), CHECKSUM_OFFSET);
        if (options.onFileBytes !== undefined) await observeFile(handle, { plan, checksum }, options.onFileBytes);
      },
      options,
    );
  } finally {
    hasher?.close(); // no-op after a digest (the worker is parked for the next save)
  }
  return { byteLength: plan.byteLength, checksum, checksumLabel: checksumLabel(checksum) };
}
