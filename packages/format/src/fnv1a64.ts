/**
 * 64-bit FNV-1a (offset basis 0xcbf29ce484222325, prime 0x100000001b3), the
 * checksum of LLMCP35 v1 (SPEC.md §3.1) and of corpus files.
 *
 * Computed on 16-bit limbs in plain JavaScript numbers; exact.
 */

/** Offset basis of 64-bit FNV-1a. */
export const FNV1A64_OFFSET_BASIS: bigint = 0xcbf29ce484222325n;

/**
 * Incremental 64-bit FNV-1a.
 *
 * @example
 * ```ts
 * new Fnv1a64().update(new TextEncoder().encode('hello')).digest(); // 0xa430d84680aabd0bn
 * ```
 */
export class Fnv1a64 {
  // hash as four 16-bit limbs, h0 least significant
  #h0: number;
  #h1: number;
  #h2: number;
  #h3: number;

  /** @param seed - starting value (default: the offset basis). */
  constructor(seed: bigint = FNV1A64_OFFSET_BASIS) {
    this.#h0 = Number(seed & 0xffffn);
    this.#h1 = Number((seed >> 16n) & 0xffffn);
    this.#h2 = Number((seed >> 32n) & 0xffffn);
    this.#h3 = Number((seed >> 48n) & 0xffffn);
  }

  /**
   * Hashes `bytes` into the running value.
   * @param bytes - the data.
   * @returns this hasher.
   */
  update(bytes: Uint8Array): this {
    let h0 = this.#h0;
    let h1 = this.#h1;
    let h2 = this.#h2;
    let h3 = this.#h3;
    for (let i = 0; i < bytes.length; i++) {
      h0 ^= bytes[i] as number;
      // multiply by prime 0x0000_0100_0000_01b3: limbs p0 = 0x01b3, p2 = 0x0100
      const t0 = h0 * 0x1b3;
      const t1 = h1 * 0x1b3;
      const t2 = h2 * 0x1b3 + h0 * 0x100;
      const t3 = h3 * 0x1b3 + h1 * 0x100;
      h0 = t0 & 0xffff;
      const c1 = t1 + (t0 >>> 16);
      h1 = c1 & 0xffff;
      const c2 = t2 + (c1 >>> 16);
      h2 = c2 & 0xffff;
      h3 = (t3 + (c2 >>> 16)) & 0xffff;
    }
    this.#h0 = h0;
    this.#h1 = h1;
    this.#h2 = h2;
    this.#h3 = h3;
    return this;
  }

  /** @returns the current 64-bit value. */
  digest(): bigint {
    return (BigInt(this.#h3) << 48n) | (BigInt(this.#h2) << 32n) | (BigInt(this.#h1) << 16n) | BigInt(this.#h0);
  }
}

/**
 * One-shot 64-bit FNV-1a.
 * @param bytes - the data.
 * @returns the hash as a bigint.
 */
export function fnv1a64(bytes: Uint8Array): bigint {
  return new Fnv1a64().update(bytes).digest();
}

/**
 * The conventional text label `fnv1a64:%016x`.
 * @param value - a 64-bit hash.
 * @returns e.g. `fnv1a64:2b8b6097eaed6a91`.
 */
export function checksumLabel(value: bigint): string {
  return `fnv1a64:${value.toString(16).padStart(16, '0')}`;
}
