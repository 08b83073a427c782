import { describe, expect, it } from 'vitest';
import { checkBatchKernel } from '../../test/helpers/batch-kernel.ts';
import { bits } from '../../test/helpers/bits.ts';
import { drawDoubles, slowPathArguments, takesSlowPath } from '../../test/helpers/slow-path.ts';
import { fromWords } from '../math/float-bits.ts';
import { ln, lnSlowPathCount } from '../math/ln.ts';
import { wasmLnAvailable, wasmLnInto } from './wasm-ln.ts';
import { WASM_EXP_CHUNK } from './wasm-exp.ts';

/** ln.ts's fast path decided x (no BigInt call). */
const fastPathDecides = (x: number): boolean => !takesSlowPath(ln, lnSlowPathCount, x);

/** Runs the kernel on xs (separate output), checks the contract against ln() and returns the undecided indices. */
function checkBatch(xs: Float64Array): Int32Array {
  return checkBatchKernel(wasmLnInto, ln, xs);
}

/** n arguments, six kinds in turn. */
const randomDoubles = (seed: bigint, n: number): Float64Array =>
  drawDoubles(seed, n, (rng) => {
    const u = rng.nextU64(); // any bit pattern
    return [
      fromWords(Number(u >> 32n), Number(u & 0xffffffffn)),
      fromWords(Number((u >> 32n) & 0x7fffffffn), Number(u & 0xffffffffn)), // any positive
      1 + (rng.nextUnit() - 0.5) * 2 ** -(50 * rng.nextUnit()), // near 1
      rng.nextUnit(), // probabilities
      2 ** (2100 * rng.nextUnit() - 1075) * (1 + rng.nextUnit()), // every binade, subnormals included
      0.7 + 0.72 * rng.nextUnit(), // the reduced range, all table entries
    ];
  });

describe('wasmLnInto (WebAssembly SIMD batch ln)', () => {
  it('is available in this runtime', () => {
    expect(wasmLnAvailable()).toBe(true);
  });

  it('equals ln() bit for bit on random doubles, deciding exactly what the fast path decides on normal arguments', () => {
    const xs = randomDoubles(0x7761736d6c6eb1n, 60_000);
    const undecided = new Set(checkBatch(xs));
    let normalUndecided = 0;
    for (let i = 0; i < xs.length; i++) {
      const x = xs[i] as number;
      const normal = x >= 2.2250738585072014e-308 && x < Infinity;
      if (!undecided.has(i)) {
        expect(normal, `decided ${x}`).toBe(true);
        expect(fastPathDecides(x), `decided ${x}`).toBe(true);
      } else if (normal) {
        normalUndecided++;
        expect(fastPathDecides(x), `undecided ${x}`).toBe(false);
      }
    }
    // (ln.ts's BigInt path is more frequent just next to 1, a sixth of these arguments)
    expect(normalUndecided).toBeLessThan(xs.length * 5e-3);
  });

  it('handles specials, range ends, binade and table-interval edges', () => {
    const xs = [NaN, Infinity, -Infinity, 0, -0, -1, 5e-324, fromWords(0x000fffff, 0xffffffff), 2.2250738585072014e-308, 1.7976931348623157e308, 1, 2, 0.5];
    for (let w = 0; w <= 256; w++) {
      const hi = 0x3fe6a000 + w * 0x1000;
      for (const lo of [0, 1, 0xffffffff]) xs.push(fromWords(hi, lo), fromWords(hi - 1, lo));
    }
    for (let d = -40; d <= 40; d++) xs.push(1 + d * 2 ** -52, 1 + d * 2 ** -20);
    const undecided = Array.from(checkBatch(Float64Array.from(xs)));
    for (const i of [0, 1, 2, 3, 4, 5, 6, 7]) expect(undecided).toContain(i);
  });

  it('reports the arguments that take ln.ts slow path as undecided', () => {
    const slow = slowPathArguments(ln, lnSlowPathCount, 0x736c6f776cn, 30, (rng) => 0.5 + 8 * rng.nextUnit());
    expect(slow.length).toBeGreaterThanOrEqual(10);
    expect(Array.from(checkBatch(Float64Array.from(slow)))).toEqual(slow.map((_, i) => i));
  });

  it('handles lengths 0…33, offsets, in place and n beyond the chunk size', () => {
    const pool = randomDoubles(0x6c6e6c656e73n, 2 * WASM_EXP_CHUNK + 64);
    pool[5] = -1;
    pool[WASM_EXP_CHUNK + 9] = 0;
    for (const n of [...Array.from({ length: 34 }, (_, k) => k), 2 * WASM_EXP_CHUNK + 13]) {
      for (const off of [0, 3]) {
        const a = pool.slice();
        const und = new Int32Array(n);
        const count = wasmLnInto(a, off, a, off, n, und);
        for (let t = 0; t < count; t++) {
          const i = off + (und[t] as number);
          a[i] = ln(a[i] as number);
        }
        for (let i = 0; i < pool.length; i++) {
          const want = i >= off && i < off + n ? ln(pool[i] as number) : (pool[i] as number);
          if (bits(a[i] as number) !== bits(want)) expect(`n ${n} off ${off} i ${i}: ${bits(a[i] as number)}`).toBe(`n ${n} off ${off} i ${i}: ${bits(want)}`);
        }
        const out = new Float64Array(n + 2).fill(-1.5);
        const und2 = new Int32Array(n);
        const c2 = wasmLnInto(out, 1, pool, off, n, und2);
        for (let t = 0; t < c2; t++) out[1 + (und2[t] as number)] = ln(pool[off + (und2[t] as number)] as number);
        expect(bits(out[0] as number)).toBe(bits(-1.5));
        expect(bits(out[n + 1] as number)).toBe(bits(-1.5));
        for (let i = 0; i < n; i++) {
          if (bits(out[1 + i] as number) !== bits(ln(pool[off + i] as number))) expect(`separate n ${n} i ${i}`).toBe('equal');
        }
      }
    }
  });
});
