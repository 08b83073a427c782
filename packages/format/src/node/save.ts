/**
 * Streaming atomic checkpoint save (SPEC.md §8, §11).
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
 * is still validating, and keeps hashing while this thread issues the writes
 * (falling back to hashing in-thread, overlapped with each write, when worker
 * threads are unavailable).
 */
import { checksumLabel, Fnv1a64 } from '../fnv1a64.ts';
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

/** Writes every chunk of the file in order, starting early datasyncs so disk writeback overlaps the rest. */
async function writeAll(handle: AtomicFileHandle, header: Uint8Array, records: readonly Uint8Array[], onChunk?: (chunk: Uint8Array) => void): Promise<void> {
  await writeFully(handle, header, 0);
  let position = header.length;
  let flushedAt = 0;
  let flushing: Promise<void> | null = null;
  let flushError: unknown;
  for (const record of records) {
    for (let start = 0; start < record.length; start += CHUNK_BYTES) {
      const chunk = record.subarray(start, Math.min(record.length, start + CHUNK_BYTES));
      const written = writeFully(handle, chunk, position); // runs on the libuv thread pool…
      onChunk?.(chunk); // …while this thread hashes the same bytes (in-thread mode)
      await written;
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
  if (flushing !== null) await flushing;
  if (flushError !== undefined) throw flushError;
}

/** Feeds the worker every byte after the first `skip` bytes of header + records. */
async function feedWorker(hasher: WorkerHasher, parts: readonly Uint8Array[], skip: number): Promise<void> {
  let remaining = skip;
  for (const part of parts) {
    if (remaining >= part.length) {
      remaining -= part.length;
      continue;
    }
    const rest = part.subarray(remaining);
    remaining = 0;
    for (let start = 0; start < rest.length; start += CHUNK_BYTES) await hasher.push(rest.subarray(start, Math.min(rest.length, start + CHUNK_BYTES)));
  }
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
 * @param options - file-system injection (tests), `hashInWorker`.
 * @returns length and checksum of the saved file.
 * @throws FormatError for an invalid state (before any file is touched),
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
  const draft = planCheckpoint(state, { validate: false });
  const hasher = options.hashInWorker === false ? null : WorkerHasher.start();
  const parts = [draft.header, ...draft.records];
  let queued = 0;
  if (hasher !== null) {
    for (const part of parts) {
      const n = hasher.pushAvailable(part);
      queued += n;
      if (n < part.length) break;
    }
  }
  let plan: CheckpointPlan;
  try {
    plan = planCheckpoint(state); // full validation: nothing touches the file system if it fails
  } catch (e) {
    hasher?.close();
    throw e;
  }
  let checksum = 0n;
  try {
    await replaceFileAtomic(
      path,
      async (handle) => {
        if (hasher === null) {
          const inThread = new Fnv1a64().update(plan.header);
          await writeAll(handle, plan.header, plan.records, (chunk) => inThread.update(chunk));
          checksum = inThread.digest();
        } else {
          await Promise.all([writeAll(handle, plan.header, plan.records), feedWorker(hasher, parts, queued)]);
          checksum = await hasher.digest();
        }
        await writeFully(handle, checksumBytes(checksum), CHECKSUM_OFFSET);
      },
      options,
    );
  } finally {
    hasher?.close(); // no-op after a digest (the worker is parked for the next save)
  }
  return { byteLength: plan.byteLength, checksum, checksumLabel: checksumLabel(checksum) };
}
