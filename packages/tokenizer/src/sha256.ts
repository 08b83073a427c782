/**
 * SHA-256 (FIPS 180-4), synchronous and browser-safe: plain `Uint32Array`
 * arithmetic, no Web Crypto (which is asynchronous) and no Node built-ins.
 *
 * Used for tokenizer identities and, by the trainer, for input identities.
 */
import { hexBytes } from '@llmcp/format';

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
  0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
  0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

const INITIAL_STATE = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19] as const;

/**
 * Incremental SHA-256.
 *
 * @example
 * ```ts
 * const h = new Sha256();
 * h.update(new TextEncoder().encode('ab')).update(new TextEncoder().encode('c'));
 * toHex(h.digest()); // 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'
 * ```
 */
export class Sha256 {
  readonly #state = new Uint32Array(INITIAL_STATE);
  readonly #block = new Uint8Array(64);
  readonly #w = new Uint32Array(64);
  #blockLength = 0;
  #totalBytes = 0;
  #finished = false;

  /**
   * Hashes more bytes.
   * @param bytes - the data.
   * @returns this hasher.
   * @throws Error when called after {@link Sha256.digest}.
   */
  update(bytes: Uint8Array): this {
    if (this.#finished) throw new Error('Sha256.update called after digest()');
    let offset = 0;
    const length = bytes.length;
    this.#totalBytes += length;
    if (this.#blockLength > 0) {
      const take = Math.min(64 - this.#blockLength, length);
      this.#block.set(bytes.subarray(0, take), this.#blockLength);
      this.#blockLength += take;
      offset = take;
      if (this.#blockLength < 64) return this;
      this.#compress(this.#block, 0);
      this.#blockLength = 0;
    }
    while (offset + 64 <= length) {
      this.#compress(bytes, offset);
      offset += 64;
    }
    if (offset < length) {
      this.#block.set(bytes.subarray(offset), 0);
      this.#blockLength = length - offset;
    }
    return this;
  }

  /**
   * Finishes the hash. The hasher cannot be updated afterwards.
   * @returns the 32-byte digest.
   */
  digest(): Uint8Array {
    if (!this.#finished) {
      this.#finished = true;
      const bitsHi = Math.floor(this.#totalBytes / 0x20000000);
      const bitsLo = (this.#totalBytes * 8) >>> 0;
      const block = this.#block;
      block[this.#blockLength] = 0x80;
      block.fill(0, this.#blockLength + 1);
      if (this.#blockLength + 1 > 56) {
        this.#compress(block, 0);
        block.fill(0);
      }
      const view = new DataView(block.buffer, block.byteOffset, 64);
      view.setUint32(56, bitsHi, false);
      view.setUint32(60, bitsLo, false);
      this.#compress(block, 0);
    }
    const out = new Uint8Array(32);
    const view = new DataView(out.buffer);
    for (let i = 0; i < 8; i++) view.setUint32(i * 4, this.#state[i] as number, false);
    return out;
  }

  #compress(bytes: Uint8Array, offset: number): void {
    const w = this.#w;
    for (let i = 0; i < 16; i++) {
      const j = offset + i * 4;
      w[i] = (((bytes[j] as number) << 24) | ((bytes[j + 1] as number) << 16) | ((bytes[j + 2] as number) << 8) | (bytes[j + 3] as number)) >>> 0;
    }
    for (let i = 16; i < 64; i++) {
      const x = w[i - 15] as number;
      const y = w[i - 2] as number;
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      w[i] = ((w[i - 16] as number) + s0 + (w[i - 7] as number) + s1) >>> 0;
    }
    const s = this.#state;
    let a = s[0] as number;
    let b = s[1] as number;
    let c = s[2] as number;
    let d = s[3] as number;
    let e = s[4] as number;
    let f = s[5] as number;
    let g = s[6] as number;
    let h = s[7] as number;
    for (let i = 0; i < 64; i++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const ch = (e & f) ^ (~e & g);
      const t1 = (h + S1 + ch + (K[i] as number) + (w[i] as number)) >>> 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (S0 + maj) >>> 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) >>> 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) >>> 0;
    }
    s[0] = ((s[0] as number) + a) >>> 0;
    s[1] = ((s[1] as number) + b) >>> 0;
    s[2] = ((s[2] as number) + c) >>> 0;
    s[3] = ((s[3] as number) + d) >>> 0;
    s[4] = ((s[4] as number) + e) >>> 0;
    s[5] = ((s[5] as number) + f) >>> 0;
    s[6] = ((s[6] as number) + g) >>> 0;
    s[7] = ((s[7] as number) + h) >>> 0;
  }
}

/**
 * Lowercase hex spelling of bytes (`hexBytes(bytes, '')` of `@llmcp/format`).
 * @param bytes - the data.
 * @returns two lowercase hex digits per byte.
 */
export function toHex(bytes: Uint8Array): string {
  return hexBytes(bytes, '');
}

/**
 * One-shot SHA-256.
 * @param bytes - the data.
 * @returns the 32-byte digest.
 * @example
 * ```ts
 * sha256(new Uint8Array(0)).length; // 32
 * ```
 */
export function sha256(bytes: Uint8Array): Uint8Array {
  return new Sha256().update(bytes).digest();
}

/**
 * One-shot SHA-256 as 64 lowercase hex digits.
 * @param bytes - the data.
 * @returns the digest in hex.
 * @example
 * ```ts
 * sha256Hex(new TextEncoder().encode('abc')); // 'ba7816bf…15ad'
 * ```
 */
export function sha256Hex(bytes: Uint8Array): string {
  return toHex(sha256(bytes));
}
