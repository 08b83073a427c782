/**
 * Small byte helpers shared by the decoder, the inspector and the Node entry
 * (the public text forms of bytes are in `bits.ts`).
 */
import { Fnv1a64 } from '../fnv1a64.ts';
import { CHECKSUM_OFFSET } from '../tags.ts';

/**
 * FNV-1a 64 of a whole file with the checksum field (bytes 30..37) taken as
 * zero (../../SPEC.md §3.1).
 * @param file - the complete file (at least 38 bytes).
 * @returns the checksum value.
 */
export function fileChecksum(file: Uint8Array): bigint {
  return new Fnv1a64()
    .update(file.subarray(0, CHECKSUM_OFFSET))
    .updateZeros(8)
    .update(file.subarray(CHECKSUM_OFFSET + 8))
    .digest();
}

/**
 * First index where `a` and `b` differ, comparing `min(a.length, b.length)`
 * bytes; -1 when that prefix is equal.
 *
 * Works 8 bytes at a time through DataViews (any alignment): two f64 reads
 * that compare equal and non-zero have identical bits (only ±0 compare equal
 * with different bits; NaN never compares equal), so only zeros and unequal
 * words fall back to a byte comparison. Exact, and several times faster
 * than a byte loop on unaligned payload regions.
 *
 * @param a - first bytes.
 * @param b - second bytes.
 * @returns the index or -1.
 */
export function firstDifference(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  const words = n >>> 3;
  const va = new DataView(a.buffer, a.byteOffset, a.byteLength);
  const vb = new DataView(b.buffer, b.byteOffset, b.byteLength);
  for (let i = 0; i < words; i++) {
    const at = 8 * i;
    const x = va.getFloat64(at, true);
    if (x === vb.getFloat64(at, true) && (x !== 0 || va.getUint32(at + 4, true) === vb.getUint32(at + 4, true))) continue;
    for (let j = at; j < at + 8; j++) if (a[j] !== b[j]) return j;
  }
  for (let j = 8 * words; j < n; j++) if (a[j] !== b[j]) return j;
  return -1;
}
