import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Sha256, sha256, sha256Hex, toHex } from './sha256.ts';

const enc = new TextEncoder();

async function webCryptoHex(bytes: Uint8Array): Promise<string> {
  return toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', new Uint8Array(bytes))));
}

describe('sha256Hex', () => {
  it('matches the FIPS 180-4 / NIST example vectors', () => {
    expect(sha256Hex(new Uint8Array(0))).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex(enc.encode('abc'))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex(enc.encode('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq'))).toBe(
      '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
    );
    expect(sha256Hex(enc.encode('abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu'))).toBe(
      'cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1',
    );
  });

  it('hashes one million "a" fed in uneven chunks', () => {
    const h = new Sha256();
    const chunk = new Uint8Array(9973).fill(0x61);
    let left = 1_000_000;
    while (left > 0) {
      const n = Math.min(left, chunk.length);
      h.update(chunk.subarray(0, n));
      left -= n;
    }
    expect(toHex(h.digest())).toBe('cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0');
  });

  it('agrees with Web Crypto for every length around the block and padding boundaries', async () => {
    for (let n = 0; n <= 130; n++) {
      const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 37 + n) & 0xff);
      expect(sha256Hex(bytes), `length ${n}`).toBe(await webCryptoHex(bytes));
    }
  });

  it('gives the same digest however the input is split (property, against Web Crypto)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), fc.array(fc.nat(300), { maxLength: 5 }), async (bytes, cuts) => {
        const h = new Sha256();
        let at = 0;
        for (const c of [...cuts].sort((a, b) => a - b)) {
          const to = Math.min(c, bytes.length);
          if (to < at) continue;
          h.update(bytes.subarray(at, to));
          at = to;
        }
        h.update(bytes.subarray(at));
        const digest = toHex(h.digest());
        expect(digest).toBe(await webCryptoHex(bytes));
        expect(toHex(sha256(bytes))).toBe(digest);
      }),
      { numRuns: 200 },
    );
  });

  it('refuses updates after digest', () => {
    const h = new Sha256();
    h.digest();
    expect(() => h.update(new Uint8Array(1))).toThrow(/after digest/);
  });
});
