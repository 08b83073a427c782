/**
 * Streaming checkpoint load (../../SPEC.md §9, §11): the same checks as
 * `decodeCheckpoint`, in the same order, without holding the file in memory
 * twice.
 *
 * 1. The fixed header is read and checked (§9.1 steps 1–5).
 * 2. The header (`header_bytes`: at most the file size, and at most
 *    MAX_HEADER_BYTES or refused from the fixed header alone, ../../SPEC.md §15.2)
 *    is read in bounded chunks and parsed, and the descriptor geometry
 *    checked. The checksum is not known yet, so any failure here is
 *    remembered, not reported: the rest of the file is then hashed in
 *    bounded chunks and a checksum mismatch wins (§9.1 step 6 comes before
 *    §9.2).
 * 3. With a sound geometry every record gets its own buffer — f64 records a
 *    fresh Float64Array — and the payload is read sequentially into them
 *    (records of 64 KiB and more directly, in 4 MiB reads; small ones through
 *    staging buffers), three reads ahead of the hash. The hash runs on a
 *    worker thread (`worker-hasher.ts`, two 4 MiB ring slots) while this
 *    thread awaits the reads, copies each segment into the ring and hands it
 *    to `onFileBytes`: only the serial FNV-1a is left on the worker's core
 *    (in-thread for small files or when workers are unavailable; a failing
 *    worker is replaced in-thread from the record buffers). f64 records are
 *    hashed with the fused kernel that screens their elements (non-finite,
 *    negative) in the same pass, so §9.5/§9.6 search only records the screen flags.
 *    Allocation is bounded by the file size, since
 *    the geometry check proved the records tile the file exactly; a buffer
 *    the engine refuses is FORMAT_LIMIT_EXCEEDED naming the field and offset.
 * 4. Checksum compared; then §9.4–§9.7 on the loaded records.
 * 5. Canonical check (§9.8) on the header bytes only. Why that suffices: the
 *    payload of the re-encoding is the concatenation, in descriptor order, of
 *    each record's bytes — literal pieces and f64 records are copied verbatim
 *    from the file, BPE pairs are u32 values re-written as the same u32 LE
 *    bytes. The re-encoding's record order, names, shapes, offsets and
 *    lengths all live in its header. So if the re-encoded header equals the
 *    file's header, the re-encoded payload equals the file's payload byte for
 *    byte, and so does the checksum. A non-canonical file (unsorted group
 *    lists or optimizer records) always differs in the header. The in-memory
 *    `decodeCheckpoint` keeps the full-byte comparison.
 */
import type { FileHandle } from 'node:fs/promises';
import { assertCanonicalHeader } from '../canonical.ts';
import { allocateFloat64, assertChecksum } from '../decode.ts';
import { FormatError } from '../errors.ts';
import { checkGeometry, type RecordPartition } from '../geometry.ts';
import { parseFixedHeader, parseVariableHeader, type RawHeader } from '../header.ts';
import { LITTLE_ENDIAN_HOST } from '../internal/host-endian.ts';
import { ScanningHasher } from '../internal/scanning-hasher.ts';
import { setParallelScanHasherFactory } from '../internal/parallel-hash.ts';
import { startSyncWorkerHasher } from './sync-hasher.ts';
import { WorkerHasher } from './worker-hasher.ts';
import { openRegularFile } from './regular-file.ts';

// With the Node entry loaded, the in-memory decoder hashes large files on a worker too (internal/parallel-hash.ts).
setParallelScanHasherFactory(startSyncWorkerHasher);
import { layoutFromHeader, type DecodedCheckpoint } from '../layout.ts';
import { planCheckpoint } from '../plan.ts';
import { validateRecords, type RecordSource } from '../record-rules.ts';
import { CHECKSUM_OFFSET, FIXED_HEADER_BYTES } from '../tags.ts';

const STAGING_BYTES = 4 << 20;
/**
 * The most one `read` call is asked for. `fs.read` takes an int32 length (a
 * larger one aborts the process with a native assertion), so longer targets
 * are filled in bounded chunks.
 */
const MAX_READ_BYTES = 16 << 20;

function ioError(path: string, what: string, cause: unknown): FormatError {
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new FormatError('FORMAT_IO', `cannot ${what} ${path}: ${detail}`, { reason: 'read', field: 'path', cause });
}

/** An open file and its path (for error messages). */
interface OpenFile {
  readonly handle: FileHandle;
  readonly path: string;
}

async function readExactly({ handle, path }: OpenFile, target: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < target.length) {
    let bytesRead: number;
    try {
      ({ bytesRead } = await handle.read(target, done, Math.min(target.length - done, MAX_READ_BYTES), position + done));
    } catch (e) {
      throw ioError(path, 'read', e);
    }
    if (bytesRead === 0) throw new FormatError('FORMAT_IO', `${path} ended at ${position + done} while reading: the file changed during the load`, { reason: 'read', offset: position + done });
    done += bytesRead;
  }
}

/** What an allocation was for, named in the FORMAT_LIMIT_EXCEEDED it turns into. */
interface AllocationSite {
  readonly what: string;
  readonly offset: number;
  readonly field: string;
  readonly recordName?: string;
  readonly recordIndex?: number;
}

/**
 * Runs an allocation, turning the engine's refusal (a RangeError: invalid
 * typed-array length, or array buffer allocation failed) into
 * FORMAT_LIMIT_EXCEEDED naming the field and offset (../../SPEC.md §15.2).
 */
function allocate<T>(make: () => T, where: () => AllocationSite): T {
  try {
    return make();
  } catch (e) {
    if (!(e instanceof RangeError)) throw e;
    const { what, ...site } = where();
    throw new FormatError('FORMAT_LIMIT_EXCEEDED', `cannot allocate ${what} declared by ${site.field} at offset ${site.offset}: ${e.message}`, { reason: 'allocation', ...site, cause: e });
  }
}

function allocateBytes(length: number, where: () => AllocationSite): Uint8Array {
  return allocate(() => new Uint8Array(length), where);
}

/** A record's destination: its file offset and the bytes to fill. */
interface RecordTarget {
  readonly start: number;
  readonly bytes: Uint8Array;
  /** Descriptor index. */
  readonly index: number;
  /** An f64 record: its reads are screened while hashed (flags into `flags[index]`). */
  readonly screen: boolean;
}

/** One read: `length` bytes at `position`, straight into `direct`, or via staging into `parts`. */
interface Segment {
  readonly position: number;
  readonly length: number;
  readonly direct: Uint8Array | null;
  /** For a direct read of an f64 record: its descriptor index (the segment starts at an element boundary). */
  readonly screen?: number;
  readonly parts: readonly { readonly into: Uint8Array; readonly at: number }[];
}

/** Records at least this large are read straight into their own buffer (page faults then happen on the I/O thread). */
const DIRECT_MIN_BYTES = 64 << 10;

function planSegments(from: number, to: number, records: readonly RecordTarget[]): Segment[] {
  const segments: Segment[] = [];
  if (records.length === 0) {
    for (let p = from; p < to; p += STAGING_BYTES) segments.push({ position: p, length: Math.min(STAGING_BYTES, to - p), direct: null, parts: [] });
    return segments;
  }
  let group: { position: number; length: number; parts: { into: Uint8Array; at: number }[] } | null = null;
  const flush = (): void => {
    if (group !== null && group.length > 0) segments.push({ position: group.position, length: group.length, direct: null, parts: group.parts });
    group = null;
  };
  for (const r of records) {
    if (r.bytes.length >= DIRECT_MIN_BYTES) {
      flush();
      for (let off = 0; off < r.bytes.length; off += STAGING_BYTES) {
        const n = Math.min(STAGING_BYTES, r.bytes.length - off);
        segments.push({ position: r.start + off, length: n, direct: r.bytes.subarray(off, off + n), parts: [], ...(r.screen ? { screen: r.index } : {}) });
      }
    } else {
      if (group !== null && group.length + r.bytes.length > STAGING_BYTES) flush();
      group ??= { position: r.start, length: 0, parts: [] };
      group.parts.push({ into: r.bytes, at: r.start - group.position });
      group.length += r.bytes.length;
    }
  }
  flush();
  return segments;
}

/** Reads kept in flight ahead of the segment being hashed (the thread pool fills them meanwhile). */
const READ_AHEAD = 3;

/** Ring slots a load uses on the hash worker (2 × 4 MiB: a load adds little beyond the file size). */
const LOAD_RING_SLOTS = 2;
/** Payloads at least this large are hashed on a worker by default (starting one costs tens of milliseconds). */
const WORKER_MIN_BYTES = 8 << 20;

/**
 * Where the loaded bytes are hashed, in file order: on a worker thread (the
 * serial FNV-1a on another core while this thread reads, copies, observes
 * and validates), or in-thread. A worker that fails mid-stream is replaced by
 * the in-thread hasher, which re-hashes the bytes already loaded from the
 * record buffers (every byte is hashed exactly once by the hasher whose
 * digest is used, and observers still see every byte once).
 */
class PayloadHash {
  #worker: WorkerHasher | null;
  #local: ScanningHasher | null = null;
  /** What was handed to the worker so far, from buffers that stay valid (header copy, record buffers). */
  readonly #done: { readonly bytes: Uint8Array; readonly screen: number | undefined }[] = [];
  readonly flags: (number | undefined)[] = [];

  constructor(worker: WorkerHasher | null, header: Uint8Array) {
    this.#worker = worker;
    const zeroed = header.slice();
    zeroed.fill(0, CHECKSUM_OFFSET, CHECKSUM_OFFSET + 8);
    if (worker === null) this.#hashLocally(zeroed, undefined);
    else {
      worker.pushAvailable(zeroed);
      this.#done.push({ bytes: zeroed, screen: undefined });
    }
  }

  #hashLocally(bytes: Uint8Array, screen: number | undefined): void {
    this.#local ??= new ScanningHasher();
    if (screen === undefined) this.#local.update(bytes);
    else this.flags[screen] = (this.flags[screen] ?? 0) | this.#local.scan(bytes);
  }

  /** The worker failed: hash everything it was given again, in-thread. */
  #failOver(): void {
    this.#worker?.close();
    this.#worker = null;
    this.flags.length = 0;
    for (const d of this.#done) this.#hashLocally(d.bytes, d.screen);
    this.#done.length = 0;
  }

  /**
   * Hashes the next bytes of the file.
   * @param bytes - the bytes (valid until the promise settles).
   * @param screen - the f64 record they belong to, from an element boundary.
   * @param kept - the same bytes in a buffer that outlives the load (for a fail-over).
   */
  async put(bytes: Uint8Array, screen: number | undefined, kept: readonly Uint8Array[]): Promise<void> {
    if (this.#worker !== null) {
      try {
        await this.#worker.push(bytes, screen);
        for (const k of kept) this.#done.push({ bytes: k, screen });
        return;
      } catch {
        this.#failOver();
      }
    }
    this.#hashLocally(bytes, screen);
  }

  /** @returns the checksum of everything put; the flags are complete. */
  async digest(): Promise<bigint> {
    if (this.#worker !== null) {
      try {
        const value = await this.#worker.digest();
        for (const d of this.#done) if (d.screen !== undefined) this.flags[d.screen] = this.#worker.flags(d.screen);
        return value;
      } catch {
        this.#failOver();
      }
    }
    return (this.#local ?? new ScanningHasher()).digest();
  }

  /** Abandons the worker's stream (after a failed load). */
  close(): void {
    this.#worker?.close();
  }
}

/** What {@link streamPayload} reads and where. */
interface PayloadStream {
  readonly handle: FileHandle;
  readonly path: string;
  readonly from: number;
  readonly to: number;
  readonly records: readonly RecordTarget[];
  readonly observe: ((chunk: Uint8Array) => void) | undefined;
}

/**
 * Reads `[from, to)` sequentially into the record buffers (large records
 * directly, small ones through rotating staging buffers sized to the largest
 * staged group), hashing every byte in order — f64 records screened by the
 * fused kernel; up to {@link READ_AHEAD} reads of the following segments
 * overlap hashing the current one.
 * @param stream - file, range, destinations and observer.
 * @param hash - the hasher (worker or in-thread).
 */
async function streamPayload(stream: PayloadStream, hash: PayloadHash): Promise<void> {
  const { handle, path, from, to, records, observe } = stream;
  const segments = planSegments(from, to, records);
  const stagedSegments = segments.filter((s) => s.direct === null);
  const stagingSize = stagedSegments.reduce((m, s) => Math.max(m, s.length), 0);
  const staging = Array.from({ length: Math.min(READ_AHEAD + 1, stagedSegments.length) }, () => new Uint8Array(stagingSize));
  let staged = 0;
  let issued = 0;
  const inflight: { target: Uint8Array; read: Promise<void> }[] = [];
  const issueNext = (): void => {
    const s = segments[issued++] as Segment;
    const target = s.direct ?? (staging[staged++ % staging.length] as Uint8Array).subarray(0, s.length);
    const read = readExactly({ handle, path }, target, s.position);
    read.catch(() => undefined); // observed when awaited, or settled below on failure
    inflight.push({ target, read });
  };
  try {
    while (issued < segments.length && inflight.length < READ_AHEAD) issueNext();
    for (let i = 0; i < segments.length; i++) {
      const current = inflight.shift() as { target: Uint8Array; read: Promise<void> };
      await current.read;
      if (issued < segments.length) issueNext();
      const segment = segments[i] as Segment;
      observe?.(current.target);
      for (const part of segment.parts) part.into.set(current.target.subarray(part.at, part.at + part.into.length));
      const kept = segment.direct !== null ? [segment.direct] : records.length === 0 ? [] : segment.parts.map((p) => p.into);
      await hash.put(current.target, segment.screen, kept);
    }
  } catch (e) {
    await Promise.allSettled(inflight.map((r) => r.read)); // no read outlives the load (the handle is closed next)
    throw e;
  }
}

/** Options of {@link loadCheckpoint}. */
export interface LoadOptions {
  /**
   * Receives every byte of the file in file order, exactly the bytes that
   * are hashed and validated, as they are read (e.g. a SHA-256 of the file
   * without a second read, which also cannot see a different file than the
   * one validated). Chunks are views valid only during the call. Called
   * before the checksum is known: a failed load has still shown its bytes.
   */
  readonly onFileBytes?: (chunk: Uint8Array) => void;
  /**
   * Hash on a worker thread (default: for payloads of 8 MiB and more): the
   * serial FNV-1a runs on another core while this thread reads, copies,
   * observes and validates. `false` hashes in-thread. A worker that fails is
   * replaced by in-thread hashing without changing the result.
   */
  readonly hashInWorker?: boolean;
}

/**
 * Loads and fully validates a checkpoint file (same checks and error codes
 * as `decodeCheckpoint`), streaming the payload into per-record buffers.
 * Peak added memory is about the file size plus the staging buffers of small
 * records (at most 16 MiB; none for a file of large records) and, hashing on
 * a worker, its 8 MiB ring and the worker itself.
 *
 * @param path - the file.
 * @param options - `onFileBytes`.
 * @returns the decoded checkpoint with its layout.
 * @throws FormatError with the code of the first failing rule, or FORMAT_IO when the file cannot be read (reason
 *   `not-found`, `not-a-regular-file` for a directory, FIFO, socket or device, `open` or `read`).
 * @example
 * ```ts
 * const checkpoint = await loadCheckpoint('run/checkpoints/latest/state.llmcp');
 * ```
 */
export async function loadCheckpoint(path: string, options: LoadOptions = {}): Promise<DecodedCheckpoint> {
  // The input rule: a regular file, opened without blocking (a FIFO or device is refused, never waited on).
  const { handle, stats } = await openRegularFile(path, 'checkpoint');
  try {
    const size = stats.size;
    const head = new Uint8Array(Math.min(size, FIXED_HEADER_BYTES));
    await readExactly({ handle, path }, head, 0);
    const fixed = parseFixedHeader(head, size);
    const headerLength = Number(fixed.headerBytes); // <= size and <= MAX_HEADER_BYTES after the fixed-header checks
    const headerBuffer = allocateBytes(headerLength, () => ({ what: `the ${headerLength}-byte header`, offset: 14, field: 'header_bytes' }));
    await readExactly({ handle, path }, headerBuffer, 0);

    let deferred: unknown;
    let header: RawHeader | undefined;
    let partition: RecordPartition | undefined;
    try {
      header = parseVariableHeader(headerBuffer, fixed);
      partition = checkGeometry(header, size);
    } catch (e) {
      deferred = e;
    }
    const buffers: Uint8Array[] = [];
    const floats: (Float64Array | undefined)[] = [];
    if (header !== undefined && deferred === undefined) {
      for (const d of header.descriptors) {
        const length = Number(d.byteLength);
        const where = (): AllocationSite => ({ what: `record ${d.index} ("${d.name}", ${length} bytes)`, offset: Number(d.offset), field: `descriptor[${d.index}].byte_len`, recordName: d.name, recordIndex: d.index });
        if (d.dtypeTag === 3 && LITTLE_ENDIAN_HOST) {
          const values = allocate(() => new Float64Array(length / 8), where);
          floats.push(values);
          buffers.push(new Uint8Array(values.buffer));
        } else {
          floats.push(undefined);
          buffers.push(allocateBytes(length, where));
        }
      }
    }
    const destinations = header === undefined || deferred !== undefined ? [] : header.descriptors.map((d, i) => ({ start: Number(d.offset), bytes: buffers[i] as Uint8Array, index: i, screen: floats[i] !== undefined }));
    // A worker only with a sound geometry: its fail-over re-hashes from the record buffers.
    const useWorker = destinations.length > 0 && (options.hashInWorker ?? size - headerLength >= WORKER_MIN_BYTES);
    const hash = new PayloadHash(useWorker ? WorkerHasher.start(undefined, undefined, LOAD_RING_SLOTS) : null, headerBuffer);
    options.onFileBytes?.(headerBuffer);
    let checksum: bigint;
    try {
      await streamPayload({ handle, path, from: headerLength, to: size, records: destinations, observe: options.onFileBytes }, hash);
      checksum = await hash.digest();
    } catch (e) {
      hash.close();
      throw e;
    }
    const flags = hash.flags;
    assertChecksum(fixed.storedChecksum, checksum);
    if (deferred !== undefined) throw deferred;
    const h = header as RawHeader;
    const source: RecordSource = {
      bytes: (i) => buffers[i] as Uint8Array,
      float64: (i) => floats[i] ?? allocateFloat64(buffers[i] as Uint8Array, h.descriptors[i]?.name ?? ''),
      screened: (i) => flags[i],
    };
    const state = validateRecords(h, partition as RecordPartition, source);
    assertCanonicalHeader(planCheckpoint(state, { validate: false }), h, headerBuffer);
    return { ...state, layout: layoutFromHeader(h, size) };
  } finally {
    await handle.close().catch(() => undefined);
  }
}
