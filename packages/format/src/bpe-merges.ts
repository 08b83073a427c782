/**
 * Spelling the merges of a stored BPE pair record (../SPEC.md §5.2, §5.3) for
 * reports: which bytes each merge joins and produces. Works on the raw record
 * bytes of any file, valid or not, within fixed bounds.
 */

/** Bytes that {@link spellBpeMerges} spells at most (all merges together). */
export const MAX_SPELLED_BYTES: number = 1 << 20;

/** One merge of a BPE pair record and the bytes it spells. */
export interface SpelledMerge {
  /** Merge rank r (0-based); the merged token has training id 256 + r and final id 258 + r. */
  readonly rank: number;
  /** Left operand as stored (training id space: 0–255 are bytes, 256 + k is merge k). */
  readonly left: number;
  /** Right operand as stored. */
  readonly right: number;
  /** The bytes the left operand spells. */
  readonly leftBytes: Uint8Array;
  /** The bytes the right operand spells. */
  readonly rightBytes: Uint8Array;
  /** The bytes the merged token spells (left then right). */
  readonly bytes: Uint8Array;
}

/** The result of {@link spellBpeMerges}. */
export interface SpelledMerges {
  /** Pairs in the record: ⌊byte length / 8⌋. */
  readonly total: number;
  /**
   * The first merges, spelled in rank order: at most `limit`, and fewer when
   * an unknown operand comes first or the spellings would exceed
   * {@link MAX_SPELLED_BYTES}.
   */
  readonly merges: readonly SpelledMerge[];
  /** The first merge (any rank) with an operand not yet defined at its rank, or null; the table is unreadable from there. */
  readonly unknownOperand: { readonly rank: number; readonly left: number; readonly right: number } | null;
  /** Rank of the merge (below `limit`) whose spelling would have exceeded {@link MAX_SPELLED_BYTES}, or null. */
  readonly spellingStoppedAt: number | null;
}

/**
 * Spells the merges of a BPE pair record: the first `limit` merges with the
 * bytes of both operands and of the result, and the first merge (of all) that
 * names an operand not defined yet at its rank. Never throws for any bytes;
 * the bytes held are bounded by {@link MAX_SPELLED_BYTES}, however the merges
 * nest.
 *
 * @param record - the record's bytes: u32 little-endian `left, right` pairs (any alignment).
 * @param limit - how many merges to spell (a non-negative integer; the rest are only checked).
 * @returns the spelled merges, the pair count and the first unknown operand.
 * @throws RangeError when `limit` is not a non-negative integer.
 * @example
 * ```ts
 * const record = new Uint8Array(8);
 * new DataView(record.buffer).setUint32(0, 97, true); // 'a'
 * new DataView(record.buffer).setUint32(4, 98, true); // 'b'
 * quotedBytes(spellBpeMerges(record, 16).merges[0]!.bytes); // '"ab"'
 * ```
 */
export function spellBpeMerges(record: Uint8Array, limit: number): SpelledMerges {
  if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`spellBpeMerges: limit must be a non-negative integer, found ${limit}`);
  const view = new DataView(record.buffer, record.byteOffset, record.byteLength);
  const total = Math.floor(record.byteLength / 8);
  const spelled: Uint8Array[] = [];
  for (let b = 0; b < 256; b++) spelled.push(Uint8Array.of(b));
  const merges: SpelledMerge[] = [];
  let budget = MAX_SPELLED_BYTES;
  let spellingStoppedAt: number | null = null;
  let unknownOperand: SpelledMerges['unknownOperand'] = null;
  for (let rank = 0; rank < total; rank++) {
    const left = view.getUint32(8 * rank, true);
    const right = view.getUint32(8 * rank + 4, true);
    if (left >= 256 + rank || right >= 256 + rank) {
      unknownOperand = { rank, left, right };
      break;
    }
    if (rank >= limit || spellingStoppedAt !== null) continue;
    const leftBytes = spelled[left] as Uint8Array;
    const rightBytes = spelled[right] as Uint8Array;
    const length = leftBytes.length + rightBytes.length;
    if (length > budget) {
      spellingStoppedAt = rank;
      continue;
    }
    budget -= length;
    const bytes = new Uint8Array(length);
    bytes.set(leftBytes);
    bytes.set(rightBytes, leftBytes.length);
    spelled.push(bytes);
    merges.push({ rank, left, right, leftBytes, rightBytes, bytes });
  }
  return { total, merges, unknownOperand, spellingStoppedAt };
}
