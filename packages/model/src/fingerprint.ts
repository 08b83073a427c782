/**
 * The reference's logits fingerprint (../../../docs/spec/training.md §8).
 */
import { f64Bytes, fnv1a64 } from '@llmcp/format';

/**
 * 64-bit FNV-1a over the little-endian bytes of each f64 bit pattern, in order.
 *
 * @param values - logits (any f64 values; the bits are hashed, so −0 and +0 differ).
 * @returns the hash; format it with `checksumLabel` from `@llmcp/format`.
 * @example
 * ```ts
 * checksumLabel(logitsFingerprint(model.logits([0, 1]))); // 'fnv1a64:6029064fe7cd162d' for the golden model
 * ```
 */
export function logitsFingerprint(values: ArrayLike<number>): bigint {
  return fnv1a64(f64Bytes(values));
}
