import { describe, expect, it } from 'vitest';
import { Fnv1a64, checksumLabel, fnv1a64 } from './fnv1a64.ts';

const MASK = (1n << 64n) - 1n;
function referenceFnv(bytes: Uint8Array): bigint {
  let h = 0xcbf29ce484222325n;
  for (const b of bytes) h = ((h ^ BigInt(b)) * 0x100000001b3n) & MASK;
  return h;
}

describe('fnv1a64', () => {
  it('hashes "hello" to a430d84680aabd0b', () => {
    expect(fnv1a64(new TextEncoder().encode('hello'))).toBe(0xa430d84680aabd0bn);
  });

  it('agrees with a BigInt reference on every byte value and incremental updates', () => {
    const bytes = new Uint8Array(1024);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 131 + 7) & 0xff;
    const h = new Fnv1a64();
    h.update(bytes.subarray(0, 100)).update(bytes.subarray(100));
    expect(h.digest()).toBe(referenceFnv(bytes));
    expect(fnv1a64(new Uint8Array(0))).toBe(0xcbf29ce484222325n);
  });

  it('labels values with 16 lowercase hex digits', () => {
    expect(checksumLabel(0x2b8b6097eaed6a91n)).toBe('fnv1a64:2b8b6097eaed6a91');
    expect(checksumLabel(1n)).toBe('fnv1a64:0000000000000001');
  });
});
