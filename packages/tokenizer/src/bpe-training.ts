/**
 * Learning byte-level BPE merges exactly as the reference does
 * (../../../docs/spec/tokenizer-and-data.md §2): overlapping pair counts, the largest count wins,
 * ties go to the numerically smallest left id and then right id, replacement
 * is left-to-right and non-overlapping, documents never join, and the loop
 * stops early only when no adjacent pair is left.
 */
import { BpeTokenizer, MAX_PAIR_INDEX_SIZE, replacePair } from './bpe-tokenizer.ts';
import { TOKENIZER_ERROR_CODES, TokenizerError } from './errors.ts';
import { ensureInt32 } from './internal/growable.ts';
import { FIRST_MERGE_TRAINING_ID, MAX_REQUESTED_MERGES } from './tokenizer.ts';

/** One learned merge rule. */
export interface BpeMerge {
  /** Rank r (0-based); the new training id is 256 + r. */
  readonly rank: number;
  /** Left operand (training id). */
  readonly left: number;
  /** Right operand (training id). */
  readonly right: number;
  /** Overlapping occurrences counted before the merge (§2.3 step 1). */
  readonly count: number;
  /** Non-overlapping replacements made (§2.3 step 5). */
  readonly replacements: number;
}

/** Options of {@link trainBpe}. */
export interface TrainBpeOptions {
  /** Called after each learned merge (progress reporting). */
  readonly onMerge?: (merge: BpeMerge) => void;
  /** Also return the training sequences after the last merge (training ids). Default false. */
  readonly keepSequences?: boolean;
}

/** What {@link trainBpe} learned. */
export interface BpeTrainingResult {
  /** The tokenizer built from the learned merge table. */
  readonly tokenizer: BpeTokenizer;
  /** The requested number of merges. */
  readonly requestedMerges: number;
  /** The learned number (smaller only when no pair was left). */
  readonly learnedMerges: number;
  /** Every learned merge with its count and replacements, in rank order. */
  readonly merges: readonly BpeMerge[];
  /** Training sequences after the last merge; only with `keepSequences`. */
  readonly sequences?: readonly Uint32Array[];
}

function checkRequest(requestedMerges: number): void {
  if (!Number.isSafeInteger(requestedMerges) || requestedMerges < 0) {
    throw new RangeError(`requestedMerges must be a non-negative integer, got ${requestedMerges}`);
  }
  if (requestedMerges > MAX_REQUESTED_MERGES) {
    throw new TokenizerError(
      TOKENIZER_ERROR_CODES.TOKENIZER_MERGE_REQUEST_TOO_LARGE,
      `requested merge count ${requestedMerges} exceeds the u32 token-ID space (at most ${MAX_REQUESTED_MERGES})`,
      { length: requestedMerges },
    );
  }
}

/**
 * Learns up to `requestedMerges` merges from byte sequences (one per
 * document, in order). Incremental: pair counts, per-pair occurrence lists
 * and a lazy max-heap are updated around each replacement instead of
 * recounting, so a few MB with thousands of merges takes seconds.
 *
 * @param sequences - the documents' UTF-8 bytes (never joined to each other).
 * @param requestedMerges - rounds to run (0 … 4294967040).
 * @param options - progress callback, final sequences.
 * @returns the tokenizer, the merges with counts, requested and learned counts.
 * @throws TokenizerError `TOKENIZER_MERGE_REQUEST_TOO_LARGE`; `TOKENIZER_LIMIT_EXCEEDED`
 *   when the input exceeds 2^31 − 1 bytes or the id space exceeds the pair index.
 * @throws RangeError when `requestedMerges` is not a non-negative integer.
 * @example
 * ```ts
 * const enc = new TextEncoder();
 * const { merges } = trainBpe([enc.encode('aaa'), enc.encode('aba')], 2);
 * merges.map((m) => [m.left, m.right, m.count]); // [[97, 97, 2], [97, 98, 1]]
 * ```
 */
export function trainBpe(sequences: readonly Uint8Array[], requestedMerges: number, options: TrainBpeOptions = {}): BpeTrainingResult {
  checkRequest(requestedMerges);
  let total = 0;
  for (const s of sequences) total += s.length;
  if (total > 0x7fffffff) {
    throw new TokenizerError(TOKENIZER_ERROR_CODES.TOKENIZER_LIMIT_EXCEEDED, `BPE training input of ${total} bytes exceeds the limit of ${0x7fffffff}`, { length: total });
  }
  // At most total − 1 merges can ever be learned (each removes at least one id).
  const indexSize = FIRST_MERGE_TRAINING_ID + Math.min(requestedMerges, Math.max(0, total - 1));
  if (indexSize > MAX_PAIR_INDEX_SIZE) {
    throw new TokenizerError(TOKENIZER_ERROR_CODES.TOKENIZER_LIMIT_EXCEEDED, `BPE training id space of ${indexSize} exceeds the pair index limit of ${MAX_PAIR_INDEX_SIZE}`, { length: total });
  }
  const state = new TrainingState(sequences, total, indexSize);
  const merges: BpeMerge[] = [];
  const flatPairs: number[] = [];
  for (let rank = 0; rank < requestedMerges; rank++) {
    const pid = state.popBest();
    if (pid < 0) break;
    const merge = state.merge(pid, rank);
    merges.push(merge);
    flatPairs.push(merge.left, merge.right);
    options.onMerge?.(merge);
  }
  const tokenizer = BpeTokenizer.fromPairs(Uint32Array.from(flatPairs));
  const result: BpeTrainingResult = { tokenizer, requestedMerges, learnedMerges: merges.length, merges };
  if (options.keepSequences === true) return { ...result, sequences: state.sequences() };
  return result;
}

/** Occurrences read ahead per batch in {@link TrainingState.merge}. */
const BATCH = 16;

/**
 * Incremental training state over all documents laid end to end (linked lists
 * never cross documents).
 *
 * Every live position i holds `pairAt[i]`, the id of the pair (token at i,
 * token after i), or −1 at a document's end; a dead position (the right half
 * of a replacement) holds −1. A pair that contains the new id of rank r can
 * only come into being during rank r's replacements (the id did not exist
 * before, and later merges only form pairs with their own new ids), so new
 * pairs are found through two small per-rank tables indexed by the other
 * operand, and no (left, right) → pair lookup is ever needed. Each pair's
 * occurrences are one contiguous block of a pool, positions increasing: the
 * initial blocks are laid out pair by pair, and a later pair receives all of
 * its occurrences during the one merge that creates it, in scan order, so
 * they are gathered there and laid out at the merge's end. Entries whose
 * `pairAt` has moved on are skipped.
 */
class TrainingState {
  /**
   * Per position i, four int32s at 4i: token, next position, previous
   * position (−1 at a document's ends), pairAt. Interleaved so that a
   * replacement touches one or two cache lines instead of one per array.
   */
  readonly #cells: Int32Array;
  readonly #starts: Int32Array;
  #pairLeft = new Int32Array(1024);
  #pairRight = new Int32Array(1024);
  #pairCount = new Int32Array(1024);
  /** A pair's occurrences: pool[head … end). */
  #pairHead = new Int32Array(1024);
  #pairEnd = new Int32Array(1024);
  /** Number of pair ids handed out. */
  #pairTotal = 0;
  /** Per other operand t: the pair (t, new id) resp. (new id, t) of the current rank, valid when the stamp is rank + 1. */
  readonly #leftStamp: Int32Array;
  readonly #leftPid: Int32Array;
  readonly #rightStamp: Int32Array;
  readonly #rightPid: Int32Array;
  // Occurrence pool: one block of positions per pair (sized in the constructor, grown by doubling).
  #occPosition: Int32Array<ArrayBuffer>;
  #occCount = 0;
  // A merge's new occurrences in scan order (pair, position), laid out per pair at its end.
  #gatheredPair: Int32Array<ArrayBuffer> = new Int32Array(1024);
  #gatheredPosition: Int32Array<ArrayBuffer> = new Int32Array(1024);
  /** Positions in use (0 … span − 1) and how many of them are live. */
  #span = 0;
  #live = 0;
  // Lazy max-heap of (count, pid): stored counts are ≥ current counts.
  #heapCount = new Int32Array(1024);
  #heapPid = new Int32Array(1024);
  #heapSize = 0;
  /** Keeps the batch reads observable (their values are not otherwise needed; see {@link TrainingState.preReadDigest}). */
  #touched = 0;

  constructor(sequences: readonly Uint8Array[], total: number, indexSize: number) {
    this.#cells = new Int32Array(4 * total);
    this.#starts = new Int32Array(sequences.length + 1);
    this.#leftStamp = new Int32Array(indexSize);
    this.#leftPid = new Int32Array(indexSize);
    this.#rightStamp = new Int32Array(indexSize);
    this.#rightPid = new Int32Array(indexSize);
    const cells = this.#cells;
    // Initial pairs with overlapping occurrences; pair ids in order of first occurrence.
    const byteIds = new Int32Array(65536).fill(-1);
    let offset = 0;
    for (let d = 0; d < sequences.length; d++) {
      const s = sequences[d] as Uint8Array;
      const n = s.length;
      this.#starts[d] = offset;
      for (let i = 0; i < n; i++) {
        const at = offset + i;
        const c = at << 2;
        const left = s[i] as number;
        cells[c] = left;
        cells[c + 2] = i > 0 ? at - 1 : -1;
        if (i + 1 < n) {
          cells[c + 1] = at + 1;
          const key = left * 256 + (s[i + 1] as number);
          let pid = byteIds[key] as number;
          if (pid < 0) {
            pid = this.#newPair(left, s[i + 1] as number);
            byteIds[key] = pid;
          }
          this.#pairCount[pid] = (this.#pairCount[pid] as number) + 1;
          cells[c + 3] = pid;
        } else {
          cells[c + 1] = -1;
          cells[c + 3] = -1;
        }
      }
      offset += n;
    }
    this.#starts[sequences.length] = offset;
    this.#span = total;
    this.#live = total;
    this.#occPosition = new Int32Array(Math.max(1024, 2 * total));
    this.#buildLists();
    for (let pid = 0; pid < this.#pairTotal; pid++) this.#heapPush(this.#pairCount[pid] as number, pid);
  }

  /**
   * Lays out every pair's occurrence list afresh, contiguously pair by pair
   * with positions increasing, from `pairAt` of positions 0 … span − 1 (no
   * stale entries). Pair counts are exact, so they size the lists.
   */
  #buildLists(): void {
    const cells = this.#cells;
    const counts = this.#pairCount;
    const heads = this.#pairHead;
    const ends = this.#pairEnd;
    let nodes = 0;
    for (let pid = 0; pid < this.#pairTotal; pid++) {
      heads[pid] = nodes;
      nodes += counts[pid] as number;
      ends[pid] = heads[pid] as number;
    }
    if (nodes > this.#occPosition.length) this.#occPosition = new Int32Array(nodes);
    const occPosition = this.#occPosition;
    for (let at = 0, end = this.#span << 2; at < end; at += 4) {
      const pid = cells[at + 3] as number;
      if (pid < 0) continue;
      const o = ends[pid] as number;
      ends[pid] = o + 1;
      occPosition[o] = at >> 2;
    }
    this.#occCount = nodes;
  }

  /**
   * Renumbers the live positions 0 … live − 1 in order (in place: a position
   * only moves down) and rebuilds the occurrence lists. Pair ids and counts do
   * not change, so the heap stays valid. Run when enough positions died that
   * the lists are mostly stale and the working set is sparse; the spans
   * shrink geometrically, so all compactions together cost O(input).
   */
  #compact(): void {
    const cells = this.#cells;
    const starts = this.#starts;
    let n = 0;
    for (let d = 0; d + 1 < starts.length; d++) {
      const start = starts[d] as number;
      const end = starts[d + 1] as number;
      starts[d] = n;
      if (start === end) continue;
      // A document's first position never dies (only right halves of replacements do).
      let previous = -1;
      for (let i = start; i >= 0; ) {
        const ci = i << 2;
        const following = cells[ci + 1] as number;
        const c = n << 2;
        cells[c] = cells[ci] as number;
        cells[c + 1] = following >= 0 ? n + 1 : -1;
        cells[c + 2] = previous;
        cells[c + 3] = cells[ci + 3] as number;
        previous = n;
        n += 1;
        i = following;
      }
    }
    starts[starts.length - 1] = n;
    this.#span = n;
    this.#buildLists();
  }

  #newPair(left: number, right: number): number {
    const pid = this.#pairTotal++;
    if (pid >= this.#pairLeft.length) {
      this.#pairLeft = ensureInt32(this.#pairLeft, pid + 1);
      this.#pairRight = ensureInt32(this.#pairRight, pid + 1);
      this.#pairCount = ensureInt32(this.#pairCount, pid + 1);
      this.#pairHead = ensureInt32(this.#pairHead, pid + 1);
      this.#pairEnd = ensureInt32(this.#pairEnd, pid + 1);
    }
    this.#pairLeft[pid] = left;
    this.#pairRight[pid] = right;
    this.#pairCount[pid] = 0;
    this.#pairHead[pid] = 0;
    this.#pairEnd[pid] = 0;
    return pid;
  }

  /**
   * Lays out the occurrences gathered during a merge, one contiguous block per
   * new pair (ids first … pairTotal − 1), each in scan order.
   */
  #layOut(first: number, gathered: number): void {
    const pairs = this.#gatheredPair;
    const positions = this.#gatheredPosition;
    const heads = this.#pairHead;
    const ends = this.#pairEnd;
    const total = this.#pairTotal;
    for (let q = first; q < total; q++) heads[q] = 0;
    for (let g = 0; g < gathered; g++) {
      const q = pairs[g] as number;
      heads[q] = (heads[q] as number) + 1;
    }
    let o = this.#occCount;
    if (o + gathered > this.#occPosition.length) this.#occPosition = ensureInt32(this.#occPosition, o + gathered);
    for (let q = first; q < total; q++) {
      const n = heads[q] as number;
      heads[q] = o;
      ends[q] = o;
      o += n;
    }
    const occPosition = this.#occPosition;
    for (let g = 0; g < gathered; g++) {
      const q = pairs[g] as number;
      const at = ends[q] as number;
      occPosition[at] = positions[g] as number;
      ends[q] = at + 1;
    }
    this.#occCount = o;
  }

  /**
   * The tie-break of the heap order (larger count first, then this): the pair
   * with the smaller left, then the smaller right, comes first.
   */
  #pairBefore(pidA: number, pidB: number): boolean {
    const la = this.#pairLeft[pidA] as number;
    const lb = this.#pairLeft[pidB] as number;
    if (la !== lb) return la < lb;
    return (this.#pairRight[pidA] as number) < (this.#pairRight[pidB] as number);
  }

  #heapPush(count: number, pid: number): void {
    if (this.#heapSize >= this.#heapCount.length) {
      this.#heapCount = ensureInt32(this.#heapCount, this.#heapSize + 1);
      this.#heapPid = ensureInt32(this.#heapPid, this.#heapSize + 1);
    }
    const hc = this.#heapCount;
    const hp = this.#heapPid;
    let i = this.#heapSize++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const parentCount = hc[parent] as number;
      // Heap order: larger count first, then #pairBefore.
      const above = count !== parentCount ? count > parentCount : this.#pairBefore(pid, hp[parent] as number);
      if (!above) break;
      hc[i] = hc[parent] as number;
      hp[i] = hp[parent] as number;
      i = parent;
    }
    hc[i] = count;
    hp[i] = pid;
  }

  #heapPop(): void {
    const hc = this.#heapCount;
    const hp = this.#heapPid;
    const size = --this.#heapSize;
    if (size === 0) return;
    const count = hc[size] as number;
    const pid = hp[size] as number;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= size) break;
      const right = child + 1;
      // Heap order: larger count first, then #pairBefore.
      if (right < size) {
        const rightCount = hc[right] as number;
        const leftCount = hc[child] as number;
        if (rightCount !== leftCount ? rightCount > leftCount : this.#pairBefore(hp[right] as number, hp[child] as number)) child = right;
      }
      const childCount = hc[child] as number;
      const above = childCount !== count ? childCount > count : this.#pairBefore(hp[child] as number, pid);
      if (!above) break;
      hc[i] = hc[child] as number;
      hp[i] = hp[child] as number;
      i = child;
    }
    hc[i] = count;
    hp[i] = pid;
  }

  /**
   * The XOR of every cell the batched pre-reads of {@link TrainingState.merge}
   * loaded. No result depends on it: it is what keeps those loads (issued
   * ahead of the work so the processor overlaps them) from being optimised away.
   * @returns the digest.
   */
  get preReadDigest(): number {
    return this.#touched;
  }

  /** The pair to merge next, or −1 when no adjacent pair is left. */
  popBest(): number {
    while (this.#heapSize > 0) {
      const stored = this.#heapCount[0] as number;
      const pid = this.#heapPid[0] as number;
      this.#heapPop();
      const current = this.#pairCount[pid] as number;
      if (current === stored && current > 0) return pid;
      // Stale (the count fell since it was pushed): requeue with the current count.
      if (current > 0 && current < stored) this.#heapPush(current, pid);
    }
    return -1;
  }

  /** Replaces every non-overlapping occurrence of pair `pid`, left to right. */
  merge(pid: number, rank: number): BpeMerge {
    const a = this.#pairLeft[pid] as number;
    const b = this.#pairRight[pid] as number;
    const count = this.#pairCount[pid] as number;
    const merged = FIRST_MERGE_TRAINING_ID + rank;
    const stamp = rank + 1;
    const cells = this.#cells;
    const leftStamp = this.#leftStamp;
    const leftPid = this.#leftPid;
    const rightStamp = this.#rightStamp;
    const rightPid = this.#rightPid;
    const created: number[] = [];
    let replacements = 0;
    // Occurrences are visited in increasing position order, so runs (a == b) pair up left to right.
    // They are taken in batches: a first tight loop reads each batch's cells (independent loads the
    // processor overlaps; the cells are scattered over the input), the second does the work on cached lines.
    // New occurrences are gathered and laid out after the loop, so this block does not move meanwhile.
    const occPosition = this.#occPosition;
    const firstNew = this.#pairTotal;
    // At most two new occurrences per replacement, at most one replacement per listed occurrence.
    const listed = (this.#pairEnd[pid] as number) - (this.#pairHead[pid] as number);
    if (this.#gatheredPair.length < 2 * listed) {
      this.#gatheredPair = ensureInt32(this.#gatheredPair, 2 * listed);
      this.#gatheredPosition = ensureInt32(this.#gatheredPosition, 2 * listed);
    }
    const newPair = this.#gatheredPair;
    const newPosition = this.#gatheredPosition;
    let gathered = 0;
    let touched = 0;
    for (let o = this.#pairHead[pid] as number, end = this.#pairEnd[pid] as number; o < end; o += BATCH) {
      const stop = Math.min(end, o + BATCH);
      for (let u = o; u < stop; u++) touched ^= cells[((occPosition[u] as number) << 2) + 3] as number;
      for (let u = o; u < stop; u++) {
        const i = occPosition[u] as number;
        const ci = i << 2;
        if (cells[ci + 3] !== pid) continue;
        const j = cells[ci + 1] as number;
        const p = cells[ci + 2] as number;
        const cj = j << 2;
        const k = cells[cj + 1] as number;
        const pairCount = this.#pairCount;
        // The pair (b, token after j) goes away with j.
        const afterJ = cells[cj + 3] as number;
        if (afterJ >= 0) pairCount[afterJ] = (pairCount[afterJ] as number) - 1;
        cells[ci] = merged;
        cells[ci + 1] = k;
        cells[cj] = -1;
        cells[cj + 3] = -1;
        if (p >= 0) {
          const cp = p << 2;
          const old = cells[cp + 3] as number;
          pairCount[old] = (pairCount[old] as number) - 1;
          const t = cells[cp] as number;
          let q: number;
          if (leftStamp[t] === stamp) q = leftPid[t] as number;
          else {
            q = this.#newPair(t, merged);
            leftStamp[t] = stamp;
            leftPid[t] = q;
            created.push(q);
          }
          // this.#pairCount, not the local: creating a pair may have grown the array.
          this.#pairCount[q] = (this.#pairCount[q] as number) + 1;
          newPair[gathered] = q;
          newPosition[gathered++] = p;
          cells[cp + 3] = q;
        }
        if (k >= 0) {
          const ck = k << 2;
          cells[ck + 2] = i;
          const t = cells[ck] as number;
          let q: number;
          if (rightStamp[t] === stamp) q = rightPid[t] as number;
          else {
            q = this.#newPair(merged, t);
            rightStamp[t] = stamp;
            rightPid[t] = q;
            created.push(q);
          }
          // this.#pairCount, not the local: creating a pair may have grown the array.
          this.#pairCount[q] = (this.#pairCount[q] as number) + 1;
          newPair[gathered] = q;
          newPosition[gathered++] = i;
          cells[ci + 3] = q;
        } else cells[ci + 3] = -1;
        replacements += 1;
      }
    }
    this.#touched ^= touched;
    this.#pairCount[pid] = 0;
    this.#pairHead[pid] = 0;
    this.#pairEnd[pid] = 0;
    this.#layOut(firstNew, gathered);
    this.#live -= replacements;
    if (this.#live * 3 < this.#span * 2) this.#compact();
    // Pairs containing the new id only grew during this merge: queue each once.
    for (const c of created) {
      const n = this.#pairCount[c] as number;
      if (n > 0) this.#heapPush(n, c);
    }
    return { rank, left: a, right: b, count, replacements };
  }

  sequences(): Uint32Array[] {
    const out: Uint32Array[] = [];
    for (let d = 0; d + 1 < this.#starts.length; d++) {
      const start = this.#starts[d] as number;
      const end = this.#starts[d + 1] as number;
      const ids: number[] = [];
      for (let i = start; i >= 0 && i < end; i = this.#cells[(i << 2) + 1] as number) ids.push(this.#cells[i << 2] as number);
      out.push(Uint32Array.from(ids));
    }
    return out;
  }
}

/** One round of {@link traceBpeTraining}. */
export interface BpeTrainingRound extends BpeMerge {
  /** Every candidate pair of the round in (left, right) numeric order with its count. */
  readonly candidates: readonly { readonly left: number; readonly right: number; readonly count: number }[];
  /** The training sequences after this round's replacements. */
  readonly sequencesAfter: readonly (readonly number[])[];
}

/** The full trace of a reference-style training run. */
export interface BpeTrainingTrace {
  /** The training sequences before the first round. */
  readonly initialSequences: readonly (readonly number[])[];
  /** Every learned round. */
  readonly rounds: readonly BpeTrainingRound[];
}

/**
 * The reference algorithm written out literally: recount every pair each
 * round, pick by explicit numeric comparison, replace, repeat; with every
 * candidate and every intermediate sequence recorded. O(n × merges) time: for
 * small inputs, teaching, and as the oracle {@link trainBpe} is tested
 * against.
 *
 * @param sequences - the documents' bytes.
 * @param requestedMerges - rounds to run (0 … 4294967040).
 * @returns the initial sequences and every round.
 * @throws TokenizerError `TOKENIZER_MERGE_REQUEST_TOO_LARGE`.
 * @throws RangeError when `requestedMerges` is not a non-negative integer.
 */
export function traceBpeTraining(sequences: readonly Uint8Array[], requestedMerges: number): BpeTrainingTrace {
  checkRequest(requestedMerges);
  let current: number[][] = sequences.map((s) => Array.from(s));
  const initialSequences = current.map((s) => s.slice());
  const rounds: BpeTrainingRound[] = [];
  for (let rank = 0; rank < requestedMerges; rank++) {
    // Nested maps: numeric, exact, no string keys.
    const counts = new Map<number, Map<number, number>>();
    for (const s of current) {
      for (let i = 0; i + 1 < s.length; i++) {
        const left = s[i] as number;
        const right = s[i + 1] as number;
        let row = counts.get(left);
        if (row === undefined) {
          row = new Map();
          counts.set(left, row);
        }
        row.set(right, (row.get(right) ?? 0) + 1);
      }
    }
    if (counts.size === 0) break;
    const candidates: { left: number; right: number; count: number }[] = [];
    for (const [left, row] of counts) for (const [right, count] of row) candidates.push({ left, right, count });
    candidates.sort((x, y) => x.left - y.left || x.right - y.right);
    let best = candidates[0] as { left: number; right: number; count: number };
    for (const c of candidates) if (c.count > best.count) best = c;
    const merged = FIRST_MERGE_TRAINING_ID + rank;
    let replacements = 0;
    current = current.map((s) => {
      const r = replacePair(s, [best.left, best.right], merged);
      replacements += r.replacements;
      return r.sequence;
    });
    rounds.push({ rank, left: best.left, right: best.right, count: best.count, replacements, candidates, sequencesAfter: current.map((s) => s.slice()) });
  }
  return { initialSequences, rounds };
}
