/**
 * The BPE encoder's work lists: for each merge rank, the positions where its
 * pair may occur (a contiguous array per rank, so draining a bucket reads
 * memory in order), plus a bitset of the ranks that have any. Ranks are
 * drained in increasing order and a rank only ever adds work for higher
 * ranks, so the next rank is found by scanning the bitset forward.
 */
export class RankBuckets {
  readonly #buckets: (number[] | undefined)[];
  /** 1 when the rank's bucket is not in increasing position order. */
  readonly #unsorted: Uint8Array;
  /** Bit r set when rank r has a bucket. */
  readonly #pending: Uint32Array;
  /** Word range of the bitset that may hold set bits. */
  #word = 0;
  #lastWord = -1;

  constructor(ranks: number) {
    this.#buckets = new Array<number[] | undefined>(ranks);
    this.#unsorted = new Uint8Array(ranks);
    this.#pending = new Uint32Array(Math.ceil(ranks / 32));
  }

  /** Starts a new input (every bucket is empty here). */
  reset(): void {
    this.#word = this.#pending.length;
    this.#lastWord = -1;
  }

  /** Appends a candidate position to a rank's bucket (rank above every rank taken so far). */
  add(rank: number, position: number): void {
    const bucket = this.#buckets[rank];
    if (bucket === undefined) {
      const w = rank >>> 5;
      this.#buckets[rank] = [position];
      this.#pending[w] = (this.#pending[w] as number) | (1 << (rank & 31));
      if (w < this.#word) this.#word = w;
      if (w > this.#lastWord) this.#lastWord = w;
      return;
    }
    if ((bucket[bucket.length - 1] as number) > position) this.#unsorted[rank] = 1;
    bucket.push(position);
  }

  /** The smallest rank with candidates (its bit is cleared), or −1. */
  popRank(): number {
    const pending = this.#pending;
    for (let w = this.#word; w <= this.#lastWord; w++) {
      const bits = pending[w] as number;
      if (bits !== 0) {
        const low = bits & -bits;
        pending[w] = bits ^ low;
        this.#word = w;
        return w * 32 + (31 - Math.clz32(low));
      }
    }
    this.#word = pending.length;
    this.#lastWord = -1;
    return -1;
  }

  /** Removes a rank's bucket and returns its positions in increasing order. */
  take(rank: number): number[] {
    const bucket = this.#buckets[rank] as number[];
    this.#buckets[rank] = undefined;
    if (this.#unsorted[rank] === 1) {
      bucket.sort((x, y) => x - y);
      this.#unsorted[rank] = 0;
    }
    return bucket;
  }
}
