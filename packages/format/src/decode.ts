/**
 * The validating in-memory decoder (../SPEC.md §9): every check in the
 * reference's order, ending with the canonical re-encode comparison. A
 * failure anywhere throws and exposes no state.
 */
import { assertCanonicalFile } from './canonical.ts';
import { FormatError } from './errors.ts';
import { checkGeometry, type RecordPartition } from './geometry.ts';
import { parseFixedHeader, parseVariableHeader, type RawHeader } from './header.ts';
import { fileChecksum } from './internal/bytes.ts';
import { float64FromBytes, LITTLE_ENDIAN_HOST } from './internal/host-endian.ts';
import { parallelScanHasher, type ParallelScanHasher } from './internal/parallel-hash.ts';
import { ScanningHasher } from './internal/scanning-hasher.ts';
import { checksumLabel } from './fnv1a64.ts';
import { layoutFromHeader, type DecodedCheckpoint } from './layout.ts';
import { planCheckpoint } from './plan.ts';
import { validateRecords, type RecordSource } from './record-rules.ts';
import { CHECKSUM_OFFSET } from './tags.ts';

/**
 * Allocates a Float64Array copy of a record, mapping an allocation failure to
 * FORMAT_LIMIT_EXCEEDED (../SPEC.md §9.10's Allocation category).
 * @param bytes - the record bytes.
 * @param name - record name for the error.
 * @returns the values.
 */
export function allocateFloat64(bytes: Uint8Array, name: string): Float64Array {
  try {
    return float64FromBytes(bytes);
  } catch (e) {
    throw new FormatError('FORMAT_LIMIT_EXCEEDED', `cannot allocate ${bytes.length} bytes for record "${name}"`, { reason: 'allocation', recordName: name, cause: e });
  }
}

/**
 * Compares the stored and computed checksums (../SPEC.md §9.1 step 6).
 * @param stored - the value at offset 30.
 * @param computed - FNV-1a over the file with the field zeroed.
 * @throws FormatError FORMAT_CHECKSUM_MISMATCH.
 */
export function assertChecksum(stored: bigint, computed: bigint): void {
  if (stored !== computed) {
    throw new FormatError('FORMAT_CHECKSUM_MISMATCH', `checksum mismatch at offset 30: stored ${checksumLabel(stored)}, computed ${checksumLabel(computed)}`, {
      reason: 'checksum',
      offset: 30,
      field: 'checksum',
      expected: checksumLabel(computed),
      found: checksumLabel(stored),
    });
  }
}

/** Options of {@link decodeCheckpoint}. */
export interface DecodeOptions {
  /**
   * `'copy'` (default): every tensor is a fresh, aligned `Float64Array`.
   * `'view'`: an f64 record that starts 8-byte aligned in `bytes` (its
   * `byteOffset` + record offset) becomes a zero-copy `Float64Array` view of
   * `bytes` (the tensors then share, and alias, the input's memory); others
   * are copied. Validation is identical.
   */
  readonly tensors?: 'copy' | 'view';
}

/** The payload hashed in file order, f64 records screened (and copied) in the same pass. */
interface HashedRecords {
  readonly checksum: bigint;
  readonly floats: (Float64Array | undefined)[];
  readonly flags: (number | undefined)[];
  /** Per descriptor: the tensor's bytes, proven equal to the record's file bytes. */
  readonly proven: (Uint8Array | undefined)[];
}

function emptyFloat64(length: number, name: string): Float64Array {
  try {
    return new Float64Array(length);
  } catch (e) {
    throw new FormatError('FORMAT_LIMIT_EXCEEDED', `cannot allocate ${8 * length} bytes for record "${name}"`, { reason: 'allocation', recordName: name, cause: e });
  }
}

/** Bytes copied per step while another thread hashes (the copy is then still in cache when it is queued). */
const PARALLEL_COPY_BYTES = 1 << 20;

/**
 * {@link hashRecords} with the hash (and screen) on another thread: this
 * thread copies each f64 record into its tensor and queues the copy — the
 * very bytes kept are the bytes hashed — while the helper hashes what was
 * queued before.
 * @param bytes - the whole file.
 * @param layout - its parsed header and whether aligned f64 records become views.
 * @param layout.header - the parsed header (geometry checked).
 * @param layout.views - make aligned f64 records zero-copy views.
 * @param parallel - the helper.
 * @returns as {@link hashRecords}, or null when the helper failed (nothing is left half-done: hash again in-thread).
 */
function hashRecordsInParallel(bytes: Uint8Array, { header, views }: { header: RawHeader; views: boolean }, parallel: ParallelScanHasher): HashedRecords | null {
  const head = bytes.slice(0, Number(header.headerBytes));
  head.fill(0, CHECKSUM_OFFSET, CHECKSUM_OFFSET + 8);
  parallel.push(head);
  const floats: (Float64Array | undefined)[] = [];
  const proven: (Uint8Array | undefined)[] = [];
  const screened: number[] = [];
  for (const d of header.descriptors) {
    const start = Number(d.offset);
    const region = bytes.subarray(start, start + Number(d.byteLength));
    if (d.dtypeTag !== 3 || !LITTLE_ENDIAN_HOST) {
      parallel.push(region);
      continue;
    }
    screened.push(d.index);
    if (views && (bytes.byteOffset + start) % 8 === 0) {
      const values = new Float64Array(bytes.buffer, bytes.byteOffset + start, region.length / 8);
      floats[d.index] = values;
      proven[d.index] = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
      parallel.push(region, d.index);
      continue;
    }
    const values = emptyFloat64(region.length / 8, d.name);
    const out = new Uint8Array(values.buffer);
    for (let at = 0; at < region.length; at += PARALLEL_COPY_BYTES) {
      const to = out.subarray(at, at + PARALLEL_COPY_BYTES);
      to.set(region.subarray(at, at + PARALLEL_COPY_BYTES));
      parallel.push(to, d.index);
    }
    floats[d.index] = values;
    proven[d.index] = out;
  }
  const result = parallel.finish();
  if (result === null) return null;
  const flags: (number | undefined)[] = [];
  for (const i of screened) flags[i] = result.flags(i);
  return { checksum: result.checksum, floats, flags, proven };
}

/**
 * One pass over the file: FNV-1a of everything (checksum field as zero), and
 * for each f64 record (little-endian hosts) its tensor — a view, or a copy
 * made chunk by chunk from the kernel's staging memory right after the kernel
 * hashed and screened those very bytes (so the copy is the file's bytes by
 * construction: ../SPEC.md §9.8's payload comparison needs no second look) —
 * screened for non-finite and negative values.
 * @param bytes - the whole file.
 * @param header - its parsed header (geometry checked).
 * @param views - make aligned f64 records zero-copy views.
 * @returns checksum, tensors, screen flags and the tensors proven equal to the file.
 */
function hashRecords(bytes: Uint8Array, header: RawHeader, views: boolean): HashedRecords {
  const parallel = parallelScanHasher(bytes.length);
  if (parallel !== null) {
    const hashed = hashRecordsInParallel(bytes, { header, views }, parallel);
    if (hashed !== null) return hashed;
  }
  const headerBytes = Number(header.headerBytes);
  const hasher = new ScanningHasher().update(bytes.subarray(0, CHECKSUM_OFFSET)).updateZeros(8).update(bytes.subarray(CHECKSUM_OFFSET + 8, headerBytes));
  const floats: (Float64Array | undefined)[] = [];
  const flags: (number | undefined)[] = [];
  const proven: (Uint8Array | undefined)[] = [];
  for (const d of header.descriptors) {
    const start = Number(d.offset);
    const region = bytes.subarray(start, start + Number(d.byteLength));
    if (d.dtypeTag !== 3 || !LITTLE_ENDIAN_HOST) {
      hasher.update(region);
      continue;
    }
    if (views && (bytes.byteOffset + start) % 8 === 0) {
      const values = new Float64Array(bytes.buffer, bytes.byteOffset + start, region.length / 8);
      floats[d.index] = values;
      flags[d.index] = hasher.scan(region);
      proven[d.index] = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
      continue;
    }
    const values = emptyFloat64(region.length / 8, d.name);
    const out = new Uint8Array(values.buffer);
    flags[d.index] = hasher.scanInto(region, out); // the copy is made from the very bytes hashed
    floats[d.index] = values;
    proven[d.index] = out;
  }
  return { checksum: hasher.digest(), floats, flags, proven };
}

/**
 * Decodes and fully validates an LLMCP35 v1 file.
 *
 * Checks, in the reference's order (../SPEC.md §9): fixed header and file
 * extent, checksum, variable header (AdamW configuration and groups on the
 * way), descriptor geometry, tokenizer, model and optimizer records,
 * cross-component rules, and finally that re-encoding the decoded state
 * reproduces every input byte. Tensors are fresh, aligned `Float64Array`s
 * (never views of `bytes`) unless `options.tensors` is `'view'`.
 *
 * The header is parsed before the checksum is known (so the payload can be
 * hashed record by record, each f64 record screened and copied in the same
 * pass); a header or geometry failure is then reported only when the
 * checksum matches, exactly as if the checksum had been checked first.
 *
 * Where `@llmcp/format/node` is loaded, files of 16 MiB and more are hashed
 * on a worker thread (still synchronously for the caller) while this thread
 * copies the tensors; elsewhere, or if that worker fails, in-thread — with
 * the same result and the same errors.
 *
 * @param bytes - the complete file.
 * @param options - tensor placement (copies by default).
 * @returns the state plus its layout evidence.
 * @throws FormatError with the code of the first failing rule.
 * @throws TypeError when `bytes` is not a Uint8Array.
 * @example
 * ```ts
 * const checkpoint = decodeCheckpoint(bytes);
 * checkpoint.layout.checksumLabel; // 'fnv1a64:2b8b6097eaed6a91'
 * checkpoint.parameters[0].name;   // 'token_embedding.weight'
 * ```
 */
export function decodeCheckpoint(bytes: Uint8Array, options: DecodeOptions = {}): DecodedCheckpoint {
  if (!(bytes instanceof Uint8Array)) throw new TypeError('decodeCheckpoint: bytes must be a Uint8Array');
  const fixed = parseFixedHeader(bytes, bytes.length);
  let header: RawHeader | undefined;
  let partition: RecordPartition | undefined;
  let deferred: unknown;
  try {
    header = parseVariableHeader(bytes, fixed);
    partition = checkGeometry(header, bytes.length);
  } catch (e) {
    deferred = e;
  }
  if (header === undefined || partition === undefined || deferred !== undefined) {
    assertChecksum(fixed.storedChecksum, fileChecksum(bytes));
    throw deferred;
  }
  const h = header;
  const hashed = hashRecords(bytes, h, options.tensors === 'view');
  assertChecksum(fixed.storedChecksum, hashed.checksum);
  const slice = (i: number): Uint8Array => {
    const d = h.descriptors[i];
    if (d === undefined) throw new RangeError(`no record ${i}`);
    const start = Number(d.offset);
    return bytes.subarray(start, start + Number(d.byteLength));
  };
  const source: RecordSource = {
    bytes: slice,
    float64: (i) => hashed.floats[i] ?? allocateFloat64(slice(i), h.descriptors[i]?.name ?? ''),
    screened: (i) => hashed.flags[i],
  };
  const state = validateRecords(h, partition, source);
  assertCanonicalFile(planCheckpoint(state, { validate: false }), h, { bytes, proven: hashed.proven });
  return { ...state, layout: layoutFromHeader(h, bytes.length) };
}
