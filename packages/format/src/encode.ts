/**
 * The canonical encoder (../SPEC.md §8).
 */
import { FormatError } from './errors.ts';
import { fnv1a64 } from './fnv1a64.ts';
import { planCheckpoint } from './plan.ts';
import { CHECKSUM_OFFSET } from './tags.ts';
import type { CheckpointState } from './types.ts';

/**
 * Encodes a checkpoint as canonical LLMCP35 v1 bytes: records in spec order
 * (tokenizer, model order, optimizer pairs sorted byte-wise by name with
 * first/second moments interleaved), group lists sorted, every u64 from a
 * BigInt, f64 bit patterns preserved (including −0), and the FNV-1a checksum
 * of the whole file (field zeroed) at offset 30. Encoding the same state
 * twice gives identical bytes.
 *
 * The state is validated first with the decoder's rules; an invalid state
 * throws the code the decoder would report for the resulting file.
 *
 * @param state - the checkpoint state (moments and group names in any order).
 * @returns the file bytes.
 * @throws FormatError for an invalid state; TypeError / RangeError for values of the wrong type or range.
 * @example
 * ```ts
 * const bytes = encodeCheckpoint(decodeCheckpoint(golden)); // identical to golden
 * ```
 */
export function encodeCheckpoint(state: CheckpointState): Uint8Array {
  const plan = planCheckpoint(state);
  let out: Uint8Array;
  try {
    out = new Uint8Array(plan.byteLength);
  } catch (e) {
    throw new FormatError('FORMAT_LIMIT_EXCEEDED', `cannot allocate ${plan.byteLength} bytes for the encoded file`, { reason: 'allocation', cause: e });
  }
  out.set(plan.header, 0);
  let position = plan.header.length;
  for (const record of plan.records) {
    out.set(record, position);
    position += record.length;
  }
  // The checksum field is still zero, so hashing the buffer as is follows ../SPEC.md §3.1.
  new DataView(out.buffer).setBigUint64(CHECKSUM_OFFSET, fnv1a64(out), true);
  return out;
}

/**
 * Size in bytes of the file {@link encodeCheckpoint} would produce, without
 * encoding it (../SPEC.md §4.3 plus the payload lengths).
 * @param state - the checkpoint state.
 * @returns the file length.
 * @throws TypeError / RangeError for values of the wrong type or range.
 */
export function checkpointByteSize(state: CheckpointState): number {
  return planCheckpoint(state, { validate: false }).byteLength;
}
