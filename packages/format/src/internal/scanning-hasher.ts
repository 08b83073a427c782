/**
 * FNV-1a 64 that can screen f64 records while hashing them (the fused kernel
 * of `fnv1a64-scan-wasm.ts`): the decoder and the streaming loader hash each
 * f64 record with {@link ScanningHasher.scan} and keep the flags, so the
 * record rules search a record for non-finite or negative values only when
 * its flags say it may hold one. Without WebAssembly it hashes with the exact
 * JavaScript loop and reports every flag set (the rules then search as before).
 */
import { Fnv1a64, FNV1A64_OFFSET_BASIS } from '../fnv1a64.ts';
import { SCAN_CHUNK_BYTES, SCAN_DATA_OFFSET, SCAN_DIFFERS, SCAN_NEGATIVE, SCAN_NON_FINITE, SCAN_OTHER_OFFSET, scanKernel } from './fnv1a64-scan-wasm.ts';

export { SCAN_DIFFERS, SCAN_NEGATIVE, SCAN_NON_FINITE } from './fnv1a64-scan-wasm.ts';

/** Flags meaning "not screened": every search and comparison runs. */
export const SCAN_UNKNOWN: number = SCAN_NON_FINITE | SCAN_NEGATIVE | SCAN_DIFFERS;

/** Incremental FNV-1a 64 with f64 screening. */
export class ScanningHasher {
  #hi = Number(FNV1A64_OFFSET_BASIS >> 32n);
  #lo = Number(FNV1A64_OFFSET_BASIS & 0xffffffffn);

  /**
   * Hashes `bytes`.
   * @param bytes - the next bytes of the stream.
   * @returns this hasher.
   */
  update(bytes: Uint8Array): this {
    this.#run(bytes);
    return this;
  }

  /**
   * Hashes `count` zero bytes.
   * @param count - how many.
   * @returns this hasher.
   */
  updateZeros(count: number): this {
    return this.update(new Uint8Array(count));
  }

  /**
   * Hashes `bytes` and screens them as little-endian f64 words from their first byte.
   * @param bytes - the next bytes of the stream (an f64 record or a prefix of one of a multiple of 8 bytes).
   * @returns flags: {@link SCAN_NON_FINITE} and/or {@link SCAN_NEGATIVE} when some word may be such a value (all set when not screened); 0 proves neither occurs.
   */
  scan(bytes: Uint8Array): number {
    return this.#run(bytes);
  }

  /**
   * {@link scan}, and compares `bytes` with `other` in the same pass.
   * @param bytes - the next bytes of the stream.
   * @param other - as many bytes to compare with (e.g. a copy that should be equal).
   * @returns the flags of {@link scan}, plus {@link SCAN_DIFFERS} when the two may differ (0 proves them equal).
   */
  scanCompare(bytes: Uint8Array, other: Uint8Array): number {
    if (other.length !== bytes.length) throw new RangeError('scanCompare: lengths differ');
    return this.#run(bytes, other);
  }

  /**
   * {@link scan}, and copies `bytes` into `out` in the same pass (from the
   * kernel's staging memory, while it is in cache): `out` then holds exactly
   * the bytes that were hashed and screened.
   * @param bytes - the next bytes of the stream.
   * @param out - as many bytes to fill.
   * @returns the flags of {@link scan}.
   */
  scanInto(bytes: Uint8Array, out: Uint8Array): number {
    if (out.length !== bytes.length) throw new RangeError('scanInto: lengths differ');
    const k = scanKernel();
    if (k === null) {
      out.set(bytes);
      return this.#run(out);
    }
    let hi = this.#hi;
    let lo = this.#lo;
    let flags = 0;
    for (let start = 0; start < bytes.length; start += SCAN_CHUNK_BYTES) {
      const end = Math.min(bytes.length, start + SCAN_CHUNK_BYTES);
      const n = end - start;
      k.memory.set(bytes.subarray(start, end), SCAN_DATA_OFFSET);
      k.scan(SCAN_DATA_OFFSET, n, hi, lo);
      out.set(k.memory.subarray(SCAN_DATA_OFFSET, SCAN_DATA_OFFSET + n), start);
      lo = k.result.getUint32(0, true);
      hi = k.result.getUint32(4, true);
      flags |= k.result.getUint32(8, true);
    }
    this.#hi = hi;
    this.#lo = lo;
    return flags;
  }

  #run(bytes: Uint8Array, other?: Uint8Array): number {
    if (bytes.length === 0) return 0;
    const k = scanKernel();
    if (k === null) {
      const h = new Fnv1a64(this.digest()).update(bytes).digest();
      this.#hi = Number(h >> 32n);
      this.#lo = Number(h & 0xffffffffn);
      return SCAN_UNKNOWN;
    }
    let hi = this.#hi;
    let lo = this.#lo;
    let flags = 0;
    for (let start = 0; start < bytes.length; start += SCAN_CHUNK_BYTES) {
      const end = Math.min(bytes.length, start + SCAN_CHUNK_BYTES);
      k.memory.set(bytes.subarray(start, end), SCAN_DATA_OFFSET);
      if (other === undefined) k.scan(SCAN_DATA_OFFSET, end - start, hi, lo);
      else {
        k.memory.set(other.subarray(start, end), SCAN_OTHER_OFFSET);
        k.scancmp(SCAN_DATA_OFFSET, end - start, hi, lo, SCAN_OTHER_OFFSET);
      }
      lo = k.result.getUint32(0, true);
      hi = k.result.getUint32(4, true);
      flags |= k.result.getUint32(8, true);
    }
    this.#hi = hi;
    this.#lo = lo;
    return flags;
  }

  /** @returns the current 64-bit value. */
  digest(): bigint {
    return (BigInt(this.#hi) << 32n) | BigInt(this.#lo);
  }
}
