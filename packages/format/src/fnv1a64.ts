/**
 * 64-bit FNV-1a (offset basis 0xcbf29ce484222325, prime 0x100000001b3), the
 * checksum of LLMCP35 v1 (../SPEC.md §3.1) and of corpus files.
 *
 * Inputs of 64 bytes or more go through a tiny embedded WebAssembly kernel
 * (one native 64-bit multiply per byte, see `internal/fnv1a64-wasm.ts`);
 * short inputs, and runtimes without WebAssembly, use an exact JavaScript
 * loop on 16-bit limbs (~0.2 GB/s).
 */
import { KERNEL_CHUNK_BYTES, KERNEL_DATA_OFFSET, fnvKernel } from './internal/fnv1a64-wasm.ts';

/** Offset basis of 64-bit FNV-1a. */
export const FNV1A64_OFFSET_BASIS: bigint = 0xcbf29ce484222325n;

const KERNEL_MIN_BYTES = 64;

/**
 * Incremental 64-bit FNV-1a.
 *
 * @example
 * ```ts
 * new Fnv1a64().update(new TextEncoder().encode('hello')).digest(); // 0xa430d84680aabd0bn
 * ```
 */
export class Fnv1a64 {
  #hi: number;
  #lo: number;

  /** @param seed - starting value (default: the offset basis). */
  constructor(seed: bigint = FNV1A64_OFFSET_BASIS) {
    this.#hi = Number((seed >> 32n) & 0xffffffffn);
    this.#lo = Number(seed & 0xffffffffn);
  }

  /**
   * Hashes `bytes` into the running value.
   * @param bytes - the data.
   * @returns this hasher.
   */
  update(bytes: Uint8Array): this {
    const k = bytes.length >= KERNEL_MIN_BYTES ? fnvKernel() : null;
    if (k === null) {
      this.#updateJs(bytes);
      return this;
    }
    let hi = this.#hi;
    let lo = this.#lo;
    for (let start = 0; start < bytes.length; start += KERNEL_CHUNK_BYTES) {
      const end = Math.min(bytes.length, start + KERNEL_CHUNK_BYTES);
      k.memory.set(bytes.subarray(start, end), KERNEL_DATA_OFFSET);
      k.fnv(KERNEL_DATA_OFFSET, end - start, hi, lo);
      lo = k.result.getUint32(0, true);
      hi = k.result.getUint32(4, true);
    }
    this.#hi = hi;
    this.#lo = lo;
    return this;
  }

  /**
   * Hashes `count` zero bytes (the checksum field of ../SPEC.md §3.1).
   * @param count - how many zero bytes.
   * @returns this hasher.
   */
  updateZeros(count: number): this {
    return this.update(new Uint8Array(count));
  }

  /**
   * Exact JavaScript loop on four 16-bit limbs (prime = 0x100_0000_01b3:
   * limb products by 0x1b3 and 0x100 stay far below 2^53).
   */
  #updateJs(bytes: Uint8Array): void {
    let h0 = this.#lo & 0xffff;
    let h1 = this.#lo >>> 16;
    let h2 = this.#hi & 0xffff;
    let h3 = this.#hi >>> 16;
    for (let i = 0; i < bytes.length; i++) {
      h0 ^= bytes[i] as number;
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
    this.#lo = ((h1 << 16) | h0) >>> 0;
    this.#hi = ((h3 << 16) | h2) >>> 0;
  }

  /** @returns the current 64-bit value. */
  digest(): bigint {
    return (BigInt(this.#hi) << 32n) | BigInt(this.#lo);
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
