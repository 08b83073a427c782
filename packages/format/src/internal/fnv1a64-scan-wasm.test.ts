import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { fnv1a64 } from '../fnv1a64.ts';
import { disableScanKernelForTesting, scanKernel } from './fnv1a64-scan-wasm.ts';
import { SCAN_CHUNK_BYTES } from './fnv1a64-scan-wasm.ts';
import { SCAN_DIFFERS, SCAN_NEGATIVE, SCAN_NON_FINITE, SCAN_UNKNOWN, ScanningHasher } from './scanning-hasher.ts';

afterEach(() => disableScanKernelForTesting(false));

/** Reference flags of the f64 words of `bytes` (from its first byte; a tail shorter than 8 is not a word). */
function referenceFlags(bytes: Uint8Array, other?: Uint8Array): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let flags = 0;
  for (let at = 0; at + 8 <= bytes.length; at += 8) {
    const v = view.getFloat64(at, true);
    if (!Number.isFinite(v)) flags |= SCAN_NON_FINITE;
    if (view.getBigUint64(at, true) > 0x8000000000000000n) flags |= SCAN_NEGATIVE;
  }
  if (other !== undefined && bytes.some((b, i) => b !== other[i])) flags |= SCAN_DIFFERS;
  return flags;
}

const specials = [0, -0, 1, -1, Number.NaN, Infinity, -Infinity, 5e-324, -5e-324, Number.MAX_VALUE, -Number.MAX_VALUE];
function wordBytes(values: number[], nanBits: bigint[]): Uint8Array {
  const out = new Uint8Array(8 * (values.length + nanBits.length));
  const view = new DataView(out.buffer);
  values.forEach((v, i) => view.setFloat64(8 * i, v, true));
  nanBits.forEach((b, i) => view.setBigUint64(8 * (values.length + i), b, true));
  return out;
}

describe('fused FNV-1a + f64 screening kernel', () => {
  it('instantiates here', () => {
    expect(scanKernel()).not.toBeNull();
  });

  it('hashes exactly like FNV-1a and screens every word exactly, at any split, with and without comparison', () => {
    const words = fc.array(fc.oneof(fc.constantFrom(...specials), fc.double()), { maxLength: 60 });
    const raw = fc.array(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), { maxLength: 4 });
    fc.assert(
      fc.property(words, raw, fc.nat({ max: 7 }), fc.nat(), fc.option(fc.nat({ max: 500 })), (values, bits, tail, cut, flip) => {
        const body = wordBytes(values, bits);
        const bytes = new Uint8Array(body.length + tail);
        bytes.set(body);
        for (let i = body.length; i < bytes.length; i++) bytes[i] = 0xff;
        const other = bytes.slice();
        if (flip !== null && flip < other.length) other[flip] = (other[flip] as number) ^ 1;
        // split at a multiple of 8 so the second part keeps element alignment
        const split = bytes.length === 0 ? 0 : 8 * ((cut % (bytes.length + 1)) >>> 3);
        const h = new ScanningHasher();
        const f = h.scan(bytes.subarray(0, split)) | h.scan(bytes.subarray(split));
        expect(h.digest()).toBe(fnv1a64(bytes));
        expect(f).toBe(referenceFlags(bytes));
        const c = new ScanningHasher();
        const g = c.scanCompare(bytes.subarray(0, split), other.subarray(0, split)) | c.scanCompare(bytes.subarray(split), other.subarray(split));
        expect(c.digest()).toBe(fnv1a64(bytes));
        expect(g).toBe(referenceFlags(bytes, other));
      }),
      { numRuns: 500, seed: 11 },
    );
  });

  it('covers more than one chunk, and falls back to the JavaScript loop with every flag set', () => {
    const n = SCAN_CHUNK_BYTES / 8 + 5;
    const values = new Float64Array(n).map((_, i) => (i % 7) - 3.5);
    values[n - 1] = Number.NaN;
    const bytes = new Uint8Array(values.buffer);
    const copy = bytes.slice();
    const h = new ScanningHasher().updateZeros(3);
    expect(h.scanCompare(bytes, copy)).toBe(SCAN_NON_FINITE | SCAN_NEGATIVE);
    const expected = fnv1a64(Uint8Array.from([0, 0, 0, ...bytes]));
    expect(h.digest()).toBe(expected);
    copy[SCAN_CHUNK_BYTES + 3] = (copy[SCAN_CHUNK_BYTES + 3] as number) ^ 0x40;
    expect(new ScanningHasher().scanCompare(bytes, copy) & SCAN_DIFFERS).toBe(SCAN_DIFFERS);
    disableScanKernelForTesting(true);
    const js = new ScanningHasher().updateZeros(3);
    expect(js.scan(bytes)).toBe(SCAN_UNKNOWN);
    expect(js.digest()).toBe(expected);
  });
});
