/**
 * Learning byte-level BPE merges exactly as the reference does
 * (tokenizer-and-data.md §2): overlapping pair counts, the largest count wins,
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

/** Incremental training state over all documents laid end to end (linked lists never cross documents). */
class TrainingState {
  readonly #tokens: Int32Array;
  readonly #next: Int32Array;
  readonly #prev: Int32Array;
  readonly #starts: Int32Array;
  readonly #indexSize: number;
  readonly #pairIds = new Map<number, number>();
  #pairLeft = new Int32Array(1024);
  #pairRight = new Int32Array(1024);
  #pairCount = new Int32Array(1024);
  #pairHead = new Int32Array(1024);
  #pairTail = new Int32Array(1024);
  /** Number of pair ids handed out. */
  #pairTotal = 0;
  // Occurrence pool: singly linked lists of positions, appended in increasing order (sized in the constructor).
  #occPosition: Int32Array<ArrayBuffer>;
  #occNext: Int32Array<ArrayBuffer>;
  #occCount = 0;
  // Lazy max-heap of (count, pid): stored counts are ≥ current counts.
  #heapCount = new Int32Array(1024);
  #heapPid = new Int32Array(1024);
  #heapSize = 0;

  constructor(sequences: readonly Uint8Array[], total: number, indexSize: number) {
    this.#indexSize = indexSize;
    this.#tokens = new Int32Array(total);
    this.#next = new Int32Array(total);
    this.#prev = new Int32Array(total);
    this.#starts = new Int32Array(sequences.length + 1);
    let offset = 0;
    for (let d = 0; d < sequences.length; d++) {
      const s = sequences[d] as Uint8Array;
      this.#starts[d] = offset;
      for (let i = 0; i < s.length; i++) {
        const at = offset + i;
        this.#tokens[at] = s[i] as number;
        this.#prev[at] = i > 0 ? at - 1 : -1;
        this.#next[at] = i + 1 < s.length ? at + 1 : -1;
      }
      offset += s.length;
    }
    this.#starts[sequences.length] = offset;
    this.#occPosition = new Int32Array(Math.max(1024, total));
    this.#occNext = new Int32Array(Math.max(1024, total));
    // Initial counts with overlapping occurrences, occurrence lists in position order.
    const byteIds = new Int32Array(65536).fill(-1);
    for (let at = 0; at < total; at++) {
      const j = this.#next[at] as number;
      if (j < 0) continue;
      const left = this.#tokens[at] as number;
      const right = this.#tokens[j] as number;
      let pid = byteIds[left * 256 + right] as number;
      if (pid < 0) {
        pid = this.#newPair(left, right);
        byteIds[left * 256 + right] = pid;
      }
      this.#pairCount[pid] = (this.#pairCount[pid] as number) + 1;
      this.#addOccurrence(pid, at);
    }
    for (let pid = 0; pid < this.#pairTotal; pid++) this.#heapPush(this.#pairCount[pid] as number, pid);
  }

  #newPair(left: number, right: number): number {
    const pid = this.#pairTotal++;
    if (pid >= this.#pairLeft.length) {
      this.#pairLeft = ensureInt32(this.#pairLeft, pid + 1);
      this.#pairRight = ensureInt32(this.#pairRight, pid + 1);
      this.#pairCount = ensureInt32(this.#pairCount, pid + 1);
      this.#pairHead = ensureInt32(this.#pairHead, pid + 1);
      this.#pairTail = ensureInt32(this.#pairTail, pid + 1);
    }
    this.#pairLeft[pid] = left;
    this.#pairRight[pid] = right;
    this.#pairCount[pid] = 0;
    this.#pairHead[pid] = -1;
    this.#pairTail[pid] = -1;
    this.#pairIds.set(left * this.#indexSize + right, pid);
    return pid;
  }

  #addOccurrence(pid: number, position: number): void {
    const o = this.#occCount++;
    if (o >= this.#occPosition.length) {
      this.#occPosition = ensureInt32(this.#occPosition, o + 1);
      this.#occNext = ensureInt32(this.#occNext, o + 1);
    }
    this.#occPosition[o] = position;
    this.#occNext[o] = -1;
    const tail = this.#pairTail[pid] as number;
    if (tail < 0) this.#pairHead[pid] = o;
    else this.#occNext[tail] = o;
    this.#pairTail[pid] = o;
  }

  #pairId(left: number, right: number): number {
    return this.#pairIds.get(left * this.#indexSize + right) ?? -1;
  }

  #decrement(left: number, right: number): void {
    const pid = this.#pairId(left, right);
    // Every existing adjacency has a pair entry with a positive count.
    this.#pairCount[pid] = (this.#pairCount[pid] as number) - 1;
  }

  /** Heap order: larger count first, then smaller left, then smaller right. */
  #above(countA: number, pidA: number, countB: number, pidB: number): boolean {
    if (countA !== countB) return countA > countB;
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
      if (!this.#above(count, pid, hc[parent] as number, hp[parent] as number)) break;
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
      if (right < size && this.#above(hc[right] as number, hp[right] as number, hc[child] as number, hp[child] as number)) child = right;
      if (!this.#above(hc[child] as number, hp[child] as number, count, pid)) break;
      hc[i] = hc[child] as number;
      hp[i] = hp[child] as number;
      i = child;
    }
    hc[i] = count;
    hp[i] = pid;
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
    const tokens = this.#tokens;
    const next = this.#next;
    const prev = this.#prev;
    const created: number[] = [];
    let replacements = 0;
    for (let o = this.#pairHead[pid] as number; o >= 0; o = this.#occNext[o] as number) {
      const i = this.#occPosition[o] as number;
      if (tokens[i] !== a) continue;
      const j = next[i] as number;
      if (j < 0 || tokens[j] !== b) continue;
      const p = prev[i] as number;
      const k = next[j] as number;
      if (p >= 0) this.#decrement(tokens[p] as number, a);
      this.#decrement(a, b);
      if (k >= 0) this.#decrement(b, tokens[k] as number);
      tokens[i] = merged;
      tokens[j] = -1;
      next[i] = k;
      if (k >= 0) prev[k] = i;
      if (p >= 0) this.#increment(tokens[p] as number, merged, p, created);
      if (k >= 0) this.#increment(merged, tokens[k] as number, i, created);
      replacements += 1;
    }
    this.#pairCount[pid] = 0;
    this.#pairHead[pid] = -1;
    this.#pairTail[pid] = -1;
    // Pairs containing the new id only grew during this merge: queue each once.
    for (const c of created) {
      const n = this.#pairCount[c] as number;
      if (n > 0) this.#heapPush(n, c);
    }
    return { rank, left: a, right: b, count, replacements };
  }

  #increment(left: number, right: number, position: number, created: number[]): void {
    let pid = this.#pairId(left, right);
    if (pid < 0) {
      pid = this.#newPair(left, right);
      created.push(pid);
    }
    this.#pairCount[pid] = (this.#pairCount[pid] as number) + 1;
    this.#addOccurrence(pid, position);
  }

  sequences(): Uint32Array[] {
    const out: Uint32Array[] = [];
    for (let d = 0; d + 1 < this.#starts.length; d++) {
      const start = this.#starts[d] as number;
      const end = this.#starts[d + 1] as number;
      const ids: number[] = [];
      for (let i = start; i >= 0 && i < end; i = this.#next[i] as number) ids.push(this.#tokens[i] as number);
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
      const r = replacePair(s, best.left, best.right, merged);
      replacements += r.replacements;
      return r.sequence;
    });
    rounds.push({ rank, left: best.left, right: best.right, count: best.count, replacements, candidates, sequencesAfter: current.map((s) => s.slice()) });
  }
  return { initialSequences, rounds };
}
