import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { Fnv1a64, fnv1a64 } from '../fnv1a64.ts';
import { disableFnvKernelForTesting, fnvKernel, fnvKernelBytes } from './fnv1a64-wasm.ts';

const MASK = (1n << 64n) - 1n;
function reference(bytes: Uint8Array, seed = 0xcbf29ce484222325n): bigint {
  let h = seed;
  for (const b of bytes) h = ((h ^ BigInt(b)) * 0x100000001b3n) & MASK;
  return h;
}

afterEach(() => disableFnvKernelForTesting(false));

describe('FNV-1a WebAssembly kernel', () => {
  it('is a small valid module that instantiates here', () => {
    expect(fnvKernelBytes().length).toBe(329);
    expect(fnvKernel()).not.toBeNull();
  });

  it('agrees with a BigInt reference for any bytes, offsets, lengths and split points (kernel and JS loop)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 3000 }), fc.nat(), fc.boolean(), (bytes, cut, js) => {
        disableFnvKernelForTesting(js);
        const split = bytes.length === 0 ? 0 : cut % bytes.length;
        const h = new Fnv1a64().update(bytes.subarray(0, split)).update(bytes.subarray(split)).digest();
        expect(h).toBe(reference(bytes));
      }),
      { numRuns: 400, seed: 3 },
    );
  });

  it('hashes more than one kernel chunk (1.25 MiB) like the reference', () => {
    const bytes = new Uint8Array(1.25 * 1024 * 1024 + 13);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 2654435761) >>> 24;
    const viaKernel = fnv1a64(bytes);
    disableFnvKernelForTesting(true);
    expect(fnv1a64(bytes)).toBe(viaKernel);
    expect(viaKernel).toBe(reference(bytes));
  });

  it('continues from any seed', () => {
    const bytes = new TextEncoder().encode('x'.repeat(200));
    expect(new Fnv1a64(123456789n).update(bytes).digest()).toBe(reference(bytes, 123456789n));
    expect(new Fnv1a64().updateZeros(100).digest()).toBe(reference(new Uint8Array(100)));
  });
});
