/**
 * Streaming checkpoint load (SPEC.md §9, §11): the same checks as
 * `decodeCheckpoint`, in the same order, without holding the file in memory
 * twice.
 *
 * 1. The fixed header is read and checked (§9.1 steps 1–5).
 * 2. The header (`header_bytes`: at most the file size, and at most
 *    MAX_HEADER_BYTES or refused from the fixed header alone, SPEC.md §15.2)
 *    is read in bounded chunks and parsed, and the descriptor geometry
 *    checked. The checksum is not known yet, so any failure here is
 *    remembered, not reported: the rest of the file is then hashed in
 *    bounded chunks and a checksum mismatch wins (§9.1 step 6 comes before
 *    §9.2).
 * 3. With a sound geometry every record gets its own buffer — f64 records a
 *    fresh Float64Array — and the payload is read sequentially into them
 *    through two 4 MiB staging buffers (the next read overlaps hashing and
 *    copying the current one). Allocation is bounded by the file size, since
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
import { open, type FileHandle } from 'node:fs/promises';
import { assertCanonicalHeader } from '../canonical.ts';
import { allocateFloat64, assertChecksum } from '../decode.ts';
import { FormatError } from '../errors.ts';
import { Fnv1a64 } from '../fnv1a64.ts';
import { checkGeometry, type RecordPartition } from '../geometry.ts';
import { parseFixedHeader, parseVariableHeader, type RawHeader } from '../header.ts';
import { LITTLE_ENDIAN_HOST } from '../internal/host-endian.ts';
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

async function readExactly(handle: FileHandle, target: Uint8Array, position: number, path: string): Promise<void> {
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
 * FORMAT_LIMIT_EXCEEDED naming the field and offset (SPEC.md §15.2).
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
}

/** One read: `length` bytes at `position`, straight into `direct`, or via staging into `parts`. */
interface Segment {
  readonly position: number;
  readonly length: number;
  readonly direct: Uint8Array | null;
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
        segments.push({ position: r.start + off, length: n, direct: r.bytes.subarray(off, off + n), parts: [] });
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

/**
 * Reads `[from, to)` sequentially into the record buffers (large records
 * directly, small ones through two alternating staging buffers), hashing
 * every byte in order; the read of the next segment overlaps hashing the
 * current one.
 */
async function streamPayload(handle: FileHandle, path: string, from: number, to: number, hasher: Fnv1a64, records: readonly RecordTarget[]): Promise<void> {
  const segments = planSegments(from, to, records);
  const stagingSize = Math.min(STAGING_BYTES, Math.max(1, to - from));
  const staging = [new Uint8Array(stagingSize), new Uint8Array(stagingSize)] as const;
  let staged = 0;
  const issue = (s: Segment): { target: Uint8Array; read: Promise<void> } => {
    const target = s.direct ?? (staging[staged++ & 1] as Uint8Array).subarray(0, s.length);
    return { target, read: readExactly(handle, target, s.position, path) };
  };
  let next = segments.length > 0 ? issue(segments[0] as Segment) : null;
  for (let i = 0; i < segments.length; i++) {
    const current = next as { target: Uint8Array; read: Promise<void> };
    await current.read;
    next = i + 1 < segments.length ? issue(segments[i + 1] as Segment) : null;
    hasher.update(current.target);
    for (const part of (segments[i] as Segment).parts) part.into.set(current.target.subarray(part.at, part.at + part.into.length));
  }
}

/**
 * Loads and fully validates a checkpoint file (same checks and error codes
 * as `decodeCheckpoint`), streaming the payload into per-record buffers.
 * Peak added memory is about the file size plus 8 MiB of staging.
 *
 * @param path - the file.
 * @returns the decoded checkpoint with its layout.
 * @throws FormatError with the code of the first failing rule, or FORMAT_IO when the file cannot be read.
 * @example
 * ```ts
 * const checkpoint = await loadCheckpoint('run/checkpoints/latest/state.llmcp');
 * ```
 */
export async function loadCheckpoint(path: string): Promise<DecodedCheckpoint> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (e) {
    throw ioError(path, 'open', e);
  }
  try {
    let size: number;
    try {
      size = (await handle.stat()).size;
    } catch (e) {
      throw ioError(path, 'stat', e);
    }
    const head = new Uint8Array(Math.min(size, FIXED_HEADER_BYTES));
    await readExactly(handle, head, 0, path);
    const fixed = parseFixedHeader(head, size);
    const headerLength = Number(fixed.headerBytes); // <= size and <= MAX_HEADER_BYTES after the fixed-header checks
    const headerBuffer = allocateBytes(headerLength, () => ({ what: `the ${headerLength}-byte header`, offset: 14, field: 'header_bytes' }));
    await readExactly(handle, headerBuffer, 0, path);
    const hasher = new Fnv1a64().update(headerBuffer.subarray(0, CHECKSUM_OFFSET)).updateZeros(8).update(headerBuffer.subarray(CHECKSUM_OFFSET + 8));

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
    const destinations = header === undefined || deferred !== undefined ? [] : header.descriptors.map((d, i) => ({ start: Number(d.offset), bytes: buffers[i] as Uint8Array }));
    await streamPayload(handle, path, headerLength, size, hasher, destinations);
    assertChecksum(fixed.storedChecksum, hasher.digest());
    if (deferred !== undefined) throw deferred;
    const h = header as RawHeader;
    const source: RecordSource = {
      bytes: (i) => buffers[i] as Uint8Array,
      float64: (i) => floats[i] ?? allocateFloat64(buffers[i] as Uint8Array, h.descriptors[i]?.name ?? ''),
    };
    const state = validateRecords(h, partition as RecordPartition, source);
    assertCanonicalHeader(planCheckpoint(state, { validate: false }), h, headerBuffer);
    return { ...state, layout: layoutFromHeader(h, size) };
  } finally {
    await handle.close().catch(() => undefined);
  }
}
