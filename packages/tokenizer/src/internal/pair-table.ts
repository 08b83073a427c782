/**
 * An open-addressing hash map from a pair of u32 ids to a non-negative int32
 * value, on typed arrays (faster than `Map` in the encoder's inner loop, and
 * exact for every id: no combined numeric key that could lose bits).
 */
export class PairTable {
  #lefts: Int32Array;
  #rights: Int32Array;
  #values: Int32Array;
  #mask: number;
  #shift: number;
  #size = 0;

  constructor(expected: number) {
    let capacity = 16;
    // Load factor at most 1/4: most encoder lookups are misses, which probe to an empty slot.
    while (capacity < expected * 4) capacity *= 2;
    this.#lefts = new Int32Array(capacity);
    this.#rights = new Int32Array(capacity);
    this.#values = new Int32Array(capacity).fill(-1);
    this.#mask = capacity - 1;
    this.#shift = 32 - Math.log2(capacity);
  }

  /** Number of stored pairs. */
  get size(): number {
    return this.#size;
  }

  /** Fibonacci hashing: the top bits of a multiplicative mix of both ids. */
  #slot(left: number, right: number): number {
    return Math.imul(Math.imul(left, 0x85ebca77) ^ right, 0x9e3779b1) >>> this.#shift;
  }

  /** The value of (left, right), or −1. */
  get(left: number, right: number): number {
    const mask = this.#mask;
    const lefts = this.#lefts;
    const rights = this.#rights;
    const values = this.#values;
    const l = left | 0;
    const r = right | 0;
    for (let i = this.#slot(l, r) & mask; ; i = (i + 1) & mask) {
      const v = values[i] as number;
      if (v < 0) return -1;
      if (lefts[i] === l && rights[i] === r) return v;
    }
  }

  /** Stores a value (≥ 0) for (left, right), replacing any earlier one. */
  set(left: number, right: number, value: number): void {
    if ((this.#size + 1) * 4 > this.#mask + 1) this.#grow();
    const mask = this.#mask;
    const l = left | 0;
    const r = right | 0;
    for (let i = this.#slot(l, r) & mask; ; i = (i + 1) & mask) {
      const v = this.#values[i] as number;
      if (v < 0) {
        this.#lefts[i] = l;
        this.#rights[i] = r;
        this.#values[i] = value;
        this.#size += 1;
        return;
      }
      if (this.#lefts[i] === l && this.#rights[i] === r) {
        this.#values[i] = value;
        return;
      }
    }
  }

  #grow(): void {
    const lefts = this.#lefts;
    const rights = this.#rights;
    const values = this.#values;
    const capacity = (this.#mask + 1) * 2;
    this.#lefts = new Int32Array(capacity);
    this.#rights = new Int32Array(capacity);
    this.#values = new Int32Array(capacity).fill(-1);
    this.#mask = capacity - 1;
    this.#shift = 32 - Math.log2(capacity);
    this.#size = 0;
    for (let i = 0; i < values.length; i++) {
      const v = values[i] as number;
      if (v >= 0) this.set(lefts[i] as number, rights[i] as number, v);
    }
  }
}
