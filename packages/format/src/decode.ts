/**
 * The validating in-memory decoder (SPEC.md §9): every check in the
 * reference's order, ending with the canonical re-encode comparison. A
 * failure anywhere throws and exposes no state.
 */
import { assertCanonicalFile } from './canonical.ts';
import { FormatError } from './errors.ts';
import { checkGeometry } from './geometry.ts';
import { parseFixedHeader, parseVariableHeader, type RawHeader } from './header.ts';
import { fileChecksum } from './internal/bytes.ts';
import { float64FromBytes } from './internal/host-endian.ts';
import { checksumLabel } from './fnv1a64.ts';
import { layoutFromHeader, type DecodedCheckpoint } from './layout.ts';
import { planCheckpoint } from './plan.ts';
import { validateRecords, type RecordSource } from './record-rules.ts';

/**
 * Allocates a Float64Array copy of a record, mapping an allocation failure to
 * FORMAT_LIMIT_EXCEEDED (SPEC.md §9.10's Allocation category).
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
 * Compares the stored and computed checksums (SPEC.md §9.1 step 6).
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

function memorySource(bytes: Uint8Array, header: RawHeader): RecordSource {
  const slice = (i: number): Uint8Array => {
    const d = header.descriptors[i];
    if (d === undefined) throw new RangeError(`no record ${i}`);
    const start = Number(d.offset);
    return bytes.subarray(start, start + Number(d.byteLength));
  };
  return {
    bytes: slice,
    float64: (i) => allocateFloat64(slice(i), header.descriptors[i]?.name ?? ''),
  };
}

/**
 * Decodes and fully validates an LLMCP35 v1 file.
 *
 * Checks, in the reference's order (SPEC.md §9): fixed header and file
 * extent, checksum, variable header (AdamW configuration and groups on the
 * way), descriptor geometry, tokenizer, model and optimizer records,
 * cross-component rules, and finally that re-encoding the decoded state
 * reproduces every input byte. Tensors are fresh, aligned `Float64Array`s
 * (never views of `bytes`).
 *
 * @param bytes - the complete file.
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
export function decodeCheckpoint(bytes: Uint8Array): DecodedCheckpoint {
  if (!(bytes instanceof Uint8Array)) throw new TypeError('decodeCheckpoint: bytes must be a Uint8Array');
  const fixed = parseFixedHeader(bytes, bytes.length);
  assertChecksum(fixed.storedChecksum, fileChecksum(bytes));
  const header = parseVariableHeader(bytes, fixed);
  const partition = checkGeometry(header, bytes.length);
  const state = validateRecords(header, partition, memorySource(bytes, header));
  assertCanonicalFile(planCheckpoint(state, { validate: false }), header, bytes);
  return { ...state, layout: layoutFromHeader(header, bytes.length) };
}
