/**
 * The rules of a byte-level BPE merge table (../SPEC.md §5.2, §9.4;
 * ../../../docs/spec/tokenizer-and-data.md §3.2), written once: the decoder
 * (record-rules.ts) reports a broken rule as a `FORMAT_BPE` error, the
 * tokenizer (`BpeTokenizer.fromPairs` of `@llmcp/tokenizer`) as its own
 * `TokenizerError`; both take the problem from here.
 *
 * In the training id space (bytes 0–255, merge r = 256 + r), rank r may
 * join only ids below 256 + r (its left operand checked first), and no pair
 * may repeat an earlier rank's. The merge count must leave the last token id,
 * 258 + M − 1, within u32 (tokenizer layout version 1).
 */
import { BPE_BASE_VOCABULARY, U32_MAX } from './tags.ts';

/** The first training id of a merge: ids 0–255 are the bytes. */
const FIRST_MERGE_ID = 256;

/** The largest merge count tokenizer layout version 1 can hold: the last token id 258 + M − 1 must fit in u32. */
export const MAX_BPE_MERGES: number = U32_MAX - BPE_BASE_VOCABULARY + 1;

/**
 * Largest id-space size for which the duplicate check's numeric key
 * `left × size + right` stays exact in a double (size² ≤ 2^53); beyond it the
 * key is text.
 */
const MAX_EXACT_KEY_SIZE = 94906265;

/** What is wrong with a BPE merge table: the first broken rule, in the order the rules are checked. */
export type BpeMergeTableProblem =
  | {
      /** More merges than tokenizer layout version 1 can number. */
      readonly reason: 'layout-overflow';
      /** The merge count. */
      readonly merges: bigint;
    }
  | {
      /** An operand that is not a byte or an earlier merge. */
      readonly reason: 'unknown-operand';
      /** The merge rank (0-based). */
      readonly rank: number;
      /** Which operand: `left` is checked before `right`. */
      readonly side: 'left' | 'right';
      /** The operand's training id. */
      readonly id: number;
      /** The rank's bound: operands must be below `256 + rank`. */
      readonly limit: number;
    }
  | {
      /** A pair that an earlier rank already merges. */
      readonly reason: 'duplicate-pair';
      /** The merge rank (0-based) that repeats it. */
      readonly rank: number;
      readonly left: number;
      readonly right: number;
    };

/**
 * The layout rule on the merge count alone (checked before any pair is read).
 *
 * @param merges - the number of merges M.
 * @returns a `layout-overflow` problem when 258 + M − 1 does not fit in u32, else null.
 * @example
 * ```ts
 * bpeMergeCountProblem(4294967039)?.reason; // 'layout-overflow'
 * ```
 */
export function bpeMergeCountProblem(merges: number | bigint): BpeMergeTableProblem | null {
  const m = BigInt(merges);
  return m > BigInt(MAX_BPE_MERGES) ? { reason: 'layout-overflow', merges: m } : null;
}

/**
 * The first broken rule of a merge table, checking rank by rank: the count
 * ({@link bpeMergeCountProblem}), then for each rank r its left operand, its
 * right operand (each below 256 + r), then whether the pair repeats an
 * earlier rank's.
 *
 * @param pairs - the table in training ids, flat: `[left0, right0, left1, right1, …]` (u32 integers; a trailing odd element is ignored).
 * @returns the first problem, or null for a valid table.
 * @example
 * ```ts
 * bpeMergeTableProblem([97, 98, 256, 99]); // null
 * bpeMergeTableProblem([97, 257]); // { reason: 'unknown-operand', rank: 0, side: 'right', id: 257, limit: 256 }
 * bpeMergeTableProblem([97, 98, 97, 98]); // { reason: 'duplicate-pair', rank: 1, left: 97, right: 98 }
 * ```
 */
export function bpeMergeTableProblem(pairs: ArrayLike<number>): BpeMergeTableProblem | null {
  const m = Math.floor(pairs.length / 2);
  const count = bpeMergeCountProblem(m);
  if (count !== null) return count;
  const size = FIRST_MERGE_ID + m;
  const exact = size <= MAX_EXACT_KEY_SIZE;
  const seen = new Set<number | string>();
  for (let rank = 0; rank < m; rank++) {
    const left = pairs[2 * rank] as number;
    const right = pairs[2 * rank + 1] as number;
    const limit = FIRST_MERGE_ID + rank;
    if (left >= limit) return { reason: 'unknown-operand', rank, side: 'left', id: left, limit };
    if (right >= limit) return { reason: 'unknown-operand', rank, side: 'right', id: right, limit };
    // Both operands are below size here, so the numeric key is one-to-one.
    const key = exact ? left * size + right : `${left},${right}`;
    if (seen.has(key)) return { reason: 'duplicate-pair', rank, left, right };
    seen.add(key);
  }
  return null;
}
