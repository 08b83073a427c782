/**
 * An open-addressing hash map from a pair of u32 ids to a non-negative int32
 * value, on one typed array (faster than `Map` in the encoder's and the
 * trainer's inner loops, and exact for every id: no combined numeric key that
 * could lose bits). Each slot is four int32s `[left, right, value, unused]`,
 * so a probe reads one cache line; a value of −1 marks an empty slot.
 */
export class PairTable {
  /** Slots: `[left, right, value, 0]` at `4 × slot`. */
  #slots: Int32Array;
  #mask: number;
  #shift: number;
  #size = 0;

  constructor(expected: number) {
    let capacity = 16;
    // Load factor at most 1/4: most encoder lookups are misses, which probe to an empty slot.
    while (capacity < expected * 4) capacity *= 2;
    this.#slots = emptySlots(capacity);
    this.#mask = capacity - 1;
    this.#shift = 32 - Math.log2(capacity);
  }

  /** Number of stored pairs. */
  get size(): number {
    return this.#size;
  }

  /** The value of (left, right), or −1. */
  get(left: number, right: number): number {
    const slots = this.#slots;
    const mask = this.#mask;
    const l = left | 0;
    const r = right | 0;
    // Fibonacci hashing: the top bits of a multiplicative mix of both ids.
    for (let i = Math.imul(Math.imul(l, 0x85ebca77) ^ r, 0x9e3779b1) >>> this.#shift; ; i = (i + 1) & mask) {
      const at = i << 2;
      const v = slots[at + 2] as number;
      if (v < 0) return -1;
      if (slots[at] === l && slots[at + 1] === r) return v;
    }
  }

  /** Stores a value (≥ 0) for (left, right), replacing any earlier one. */
  set(left: number, right: number, value: number): void {
    if ((this.#size + 1) * 4 > this.#mask + 1) this.#grow();
    const slots = this.#slots;
    const mask = this.#mask;
    const l = left | 0;
    const r = right | 0;
    for (let i = Math.imul(Math.imul(l, 0x85ebca77) ^ r, 0x9e3779b1) >>> this.#shift; ; i = (i + 1) & mask) {
      const at = i << 2;
      if ((slots[at + 2] as number) < 0) {
        slots[at] = l;
        slots[at + 1] = r;
        slots[at + 2] = value;
        this.#size += 1;
        return;
      }
      if (slots[at] === l && slots[at + 1] === r) {
        slots[at + 2] = value;
        return;
      }
    }
  }

  #grow(): void {
    const old = this.#slots;
    const capacity = (this.#mask + 1) * 2;
    this.#slots = emptySlots(capacity);
    this.#mask = capacity - 1;
    this.#shift = 32 - Math.log2(capacity);
    this.#size = 0;
    for (let at = 0; at < old.length; at += 4) {
      const v = old[at + 2] as number;
      if (v >= 0) this.set(old[at] as number, old[at + 1] as number, v);
    }
  }
}

function emptySlots(capacity: number): Int32Array {
  const slots = new Int32Array(capacity * 4);
  for (let at = 2; at < slots.length; at += 4) slots[at] = -1;
  return slots;
}
