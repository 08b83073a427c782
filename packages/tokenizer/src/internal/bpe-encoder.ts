/**
 * The byte-level BPE encoder's hot loop (../../../../docs/spec/tokenizer-and-data.md §3.3), kept in
 * one place with all of its state in typed arrays: the rank passes as per-rank
 * work lists over a linked list of each segment.
 *
 * - Rank lookup: pairs of two bytes in a direct 65536-entry table; other pairs
 *   in an open-addressing table keyed by the single integer
 *   `left × size + right` (exact while size² < 2^31, i.e. up to 46340 ids),
 *   or, for larger vocabularies, the general {@link PairTable}.
 * - Work lists: one intrusive singly linked list of candidate positions per
 *   rank (nodes in typed arrays, at most 3 per input byte), and a bitset of
 *   the ranks that have one. Ranks are drained in increasing order; a merge of
 *   rank r only creates pairs of higher ranks, so a list is complete when its
 *   rank comes up.
 * - A list is in no particular position order. Occurrences of a pair of two
 *   different ids never overlap, so their order does not matter; a pair
 *   (x, x) is worked one whole run of x at a time, from the run's start, which
 *   is exactly the left-to-right non-overlapping pass.
 */
import { PairTable } from './pair-table.ts';

/** Largest id-space size for which `left × size + right` stays a non-negative int32. */
const MAX_SMALL_SIZE = 46340;

/** The merge-pass encoder of a merge table (see the module comment): its lookup tables and reusable scratch arrays. */
export class BpeEncoder {
  readonly #pairs: Uint32Array;
  readonly #byteRanks: Int32Array;
  /** Small vocabularies: keys `left × size + right` (−1 empty) and ranks, capacity a power of two. */
  readonly #keys: Int32Array;
  readonly #ranks: Int32Array;
  readonly #shift: number;
  readonly #size: number;
  /** Large vocabularies: the general table (null when the small one is used). */
  readonly #large: PairTable | null;
  // Per-rank lists: head node per rank; pending ranks as a bitset.
  readonly #head: Int32Array;
  readonly #pending: Int32Array;
  // Scratch over the input, grown on demand: token, next, previous per position; list nodes.
  #tokens = new Int32Array(0);
  #next = new Int32Array(0);
  #prev = new Int32Array(0);
  #nodePosition = new Int32Array(0);
  #nodeNext = new Int32Array(0);

  /**
   * @param pairs - the merge table, (left, right) of rank r at [2r, 2r+1] (training ids).
   * @param byteRanks - rank of each byte pair at left·256 + right, −1 when none.
   * @param large - the tokenizer's table of the other pairs (used above 46340 ids).
   */
  constructor(pairs: Uint32Array, byteRanks: Int32Array, large: PairTable) {
    const m = pairs.length / 2;
    this.#pairs = pairs;
    this.#byteRanks = byteRanks;
    this.#size = 256 + m;
    this.#head = new Int32Array(m).fill(-1);
    this.#pending = new Int32Array(Math.ceil(m / 32));
    if (this.#size <= MAX_SMALL_SIZE) {
      let capacity = 16;
      // Load factor at most 1/4: a miss usually ends at the first slot.
      while (capacity < m * 4) capacity *= 2;
      this.#keys = new Int32Array(capacity).fill(-1);
      this.#ranks = new Int32Array(capacity);
      this.#shift = 32 - Math.log2(capacity);
      this.#large = null;
      const mask = capacity - 1;
      for (let r = 0; r < m; r++) {
        const left = pairs[2 * r] as number;
        const right = pairs[2 * r + 1] as number;
        if (left < 256 && right < 256) continue;
        const key = left * this.#size + right;
        let i = Math.imul(key, 0x9e3779b1) >>> this.#shift;
        while ((this.#keys[i] as number) >= 0) i = (i + 1) & mask;
        this.#keys[i] = key;
        this.#ranks[i] = r;
      }
    } else {
      this.#keys = new Int32Array(1).fill(-1);
      this.#ranks = new Int32Array(1);
      this.#shift = 31;
      this.#large = large;
    }
  }

  /** Scratch for positions below `end` and a segment of `length` bytes. */
  #reserve(end: number, length: number): void {
    if (this.#tokens.length < end) {
      const capacity = Math.max(end, 2 * this.#tokens.length);
      this.#tokens = new Int32Array(capacity);
      this.#next = new Int32Array(capacity);
      this.#prev = new Int32Array(capacity);
    }
    // Candidates: at most length − 1 initial pairs plus two per merge (at most length − 1 merges).
    if (this.#nodePosition.length < 3 * length) {
      const capacity = Math.max(3 * length, 2 * this.#nodePosition.length);
      this.#nodePosition = new Int32Array(capacity);
      this.#nodeNext = new Int32Array(capacity);
    }
  }

  /**
   * Encodes bytes[start, end) (at least two bytes) into `out` from index `o`,
   * as training id + `offset`.
   * @returns the index after the last written id.
   */
  encodeSegment(bytes: Uint8Array, start: number, end: number, out: Uint32Array, o: number, offset: number): number {
    this.#reserve(end, end - start);
    const byteRanks = this.#byteRanks;
    const pairs = this.#pairs;
    const tokens = this.#tokens;
    const next = this.#next;
    const prev = this.#prev;
    const nodePosition = this.#nodePosition;
    const nodeNext = this.#nodeNext;
    const head = this.#head;
    const pending = this.#pending;
    const keys = this.#keys;
    const ranks = this.#ranks;
    const shift = this.#shift;
    const mask = keys.length - 1;
    const size = this.#size;
    const large = this.#large;
    let nodes = 0;
    // Bitset words that may hold set bits.
    let firstWord = pending.length;
    let lastWord = -1;

    let x = bytes[start] as number;
    tokens[start] = x;
    prev[start] = -1;
    for (let i = start + 1; i < end; i++) {
      const y = bytes[i] as number;
      tokens[i] = y;
      next[i - 1] = i;
      prev[i] = i - 1;
      const r = byteRanks[x * 256 + y] as number;
      if (r >= 0) {
        const h = head[r] as number;
        nodePosition[nodes] = i - 1;
        nodeNext[nodes] = h;
        head[r] = nodes++;
        if (h < 0) {
          const w = r >>> 5;
          pending[w] = (pending[w] as number) | (1 << (r & 31));
          if (w < firstWord) firstWord = w;
          if (w > lastWord) lastWord = w;
        }
      }
      x = y;
    }
    next[end - 1] = -1;

    for (let w = firstWord; w <= lastWord; ) {
      const bits = pending[w] as number;
      if (bits === 0) {
        w++;
        continue;
      }
      const low = bits & -bits;
      pending[w] = bits ^ low;
      const r = w * 32 + (31 - Math.clz32(low));
      const a = pairs[2 * r] as number;
      const b = pairs[2 * r + 1] as number;
      const merged = 256 + r;
      let node = head[r] as number;
      head[r] = -1;
      for (; node >= 0; node = nodeNext[node] as number) {
        let i = nodePosition[node] as number;
        if (tokens[i] !== a) continue;
        let j = next[i] as number;
        if (j < 0 || tokens[j] !== b) continue;
        if (a === b) {
          // Back to the start of this run of a; then pair it up left to right.
          for (let p = prev[i] as number; p >= 0 && tokens[p] === a; p = prev[p] as number) i = p;
          j = next[i] as number;
        }
        for (;;) {
          tokens[i] = merged;
          tokens[j] = -1;
          const k = next[j] as number;
          next[i] = k;
          const p = prev[i] as number;
          if (p >= 0) {
            // Rank of (token at p, merged).
            const left = tokens[p] as number;
            let rp = -1;
            if (large === null) {
              const key = left * size + merged;
              for (let s = Math.imul(key, 0x9e3779b1) >>> shift; ; s = (s + 1) & mask) {
                const found = keys[s] as number;
                if (found === key) {
                  rp = ranks[s] as number;
                  break;
                }
                if (found < 0) break;
              }
            } else rp = large.get(left, merged);
            if (rp >= 0) {
              const h = head[rp] as number;
              nodePosition[nodes] = p;
              nodeNext[nodes] = h;
              head[rp] = nodes++;
              if (h < 0) {
                const v = rp >>> 5;
                pending[v] = (pending[v] as number) | (1 << (rp & 31));
                if (v > lastWord) lastWord = v;
              }
            }
          }
          if (k < 0) break;
          prev[k] = i;
          // Rank of (merged, token at k).
          const right = tokens[k] as number;
          let rk = -1;
          if (large === null) {
            const key = merged * size + right;
            for (let s = Math.imul(key, 0x9e3779b1) >>> shift; ; s = (s + 1) & mask) {
              const found = keys[s] as number;
              if (found === key) {
                rk = ranks[s] as number;
                break;
              }
              if (found < 0) break;
            }
          } else rk = large.get(merged, right);
          if (rk >= 0) {
            const h = head[rk] as number;
            nodePosition[nodes] = i;
            nodeNext[nodes] = h;
            head[rk] = nodes++;
            if (h < 0) {
              const v = rk >>> 5;
              pending[v] = (pending[v] as number) | (1 << (rk & 31));
              if (v > lastWord) lastWord = v;
            }
          }
          if (a !== b) break;
          // Within a run: the next pair starts at k.
          j = next[k] as number;
          if (right !== a || j < 0 || tokens[j] !== a) break;
          i = k;
        }
      }
    }
    for (let i = start; i >= 0; i = next[i] as number) out[o++] = (tokens[i] as number) + offset;
    return o;
  }
}
