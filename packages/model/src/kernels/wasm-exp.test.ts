import { afterEach, describe, expect, it, vi } from 'vitest';
import { checkBatchKernel } from '../../test/helpers/batch-kernel.ts';
import { bits } from '../../test/helpers/bits.ts';
import { drawDoubles, slowPathArguments, takesSlowPath } from '../../test/helpers/slow-path.ts';
import { exp, expSlowPathCount } from '../math/exp.ts';
import { fromWords } from '../math/float-bits.ts';
import { WASM_EXP_CHUNK, wasmExpAvailable, wasmExpInto } from './wasm-exp.ts';

/** exp.ts's fast path decided x (no BigInt call). */
const fastPathDecides = (x: number): boolean => !takesSlowPath(exp, expSlowPathCount, x);

/** Runs the kernel on xs (separate output), checks the contract against exp() and returns the undecided indices. */
function checkBatch(xs: Float64Array): Int32Array {
  return checkBatchKernel(wasmExpInto, exp, xs);
}

/** n arguments, eight kinds in turn. */
const randomDoubles = (seed: bigint, n: number): Float64Array =>
  drawDoubles(seed, n, (rng) => {
    const row = [
      -745.2 + 1455 * rng.nextUnit(), // whole finite-result range
      -745.2 + 40 * rng.nextUnit(), // subnormal results and the E < -1021 boundary
      709.79 - 0.01 * rng.nextUnit(), // top of the range, E = 1023 / 1024
      (rng.nextUnit() - 0.5) * 2 ** -(60 * rng.nextUnit()), // near 0
      -30 * rng.nextUnit(), // softmax
      (rng.nextUnit() - 0.5) * 40, // SiLU / sigmoid
    ];
    const u = rng.nextU64(); // any bit pattern (NaNs, infinities, huge, tiny)
    const any = fromWords(Number(u >> 32n), Number(u & 0xffffffffn));
    return [...row, any, -707.7 - 0.2 * rng.nextUnit()]; // the last: around E = -1021 / -1022
  });

describe('wasmExpInto (WebAssembly SIMD batch exp)', () => {
  it('is available in this runtime (Node has WebAssembly SIMD)', () => {
    expect(wasmExpAvailable()).toBe(true);
  });

  it('equals exp() bit for bit on random doubles over the whole range, deciding almost all in range', () => {
    const xs = randomDoubles(0x7761736d65787031n, 80_000);
    const undecided = checkBatch(xs);
    // Decided lanes took exp.ts's fast path; undecided arguments in the normal-result
    // range are exactly those exp.ts sends to its BigInt path.
    const isUndecided = new Set(undecided);
    let inRangeUndecided = 0;
    for (let i = 0; i < xs.length; i++) {
      const x = xs[i] as number;
      if (!isUndecided.has(i)) {
        expect(fastPathDecides(x), `decided ${x}`).toBe(true);
      } else if (x > -707 && x < 709.7) {
        inRangeUndecided++;
        expect(fastPathDecides(x), `undecided ${x}`).toBe(false);
      }
    }
    expect(inRangeUndecided).toBeLessThan(xs.length * 1e-3);
  });

  it('handles the ends of the range, E boundaries and results near 2^-1022', () => {
    const xs: number[] = [];
    // -745.2 and 709.79 themselves and their neighbours; ln(2^-1022), ln(2^-1021), ln(2^1024), ln(2^-1074)
    const centers = [-745.2, 709.79, -708.3964185322641, -707.7032713517042, 709.782712893384, -744.4400719213812, -745.1332191019412];
    for (const c of centers) {
      for (let d = -40; d <= 40; d++) xs.push(c + d * 2 ** -44, c + d * 1e-4);
    }
    // k at the boundaries -1021·128 and 1023·128 + 127, ± a few steps of ln2/128
    for (const k of [-1021 * 128, 1023 * 128 + 127, 1023 * 128 + 128, -1022 * 128, -1021 * 128 - 1]) {
      for (let d = -3; d <= 3; d++) xs.push(((k + d / 4) * Math.LN2) / 128);
    }
    const arr = Float64Array.from(xs);
    const undecided = new Set(checkBatch(arr));
    // outside the range test: always undecided
    for (let i = 0; i < arr.length; i++) {
      const x = arr[i] as number;
      if (!(x < 709.79 && x > -745.2) || x < -707.71 || x > 709.7857) expect(undecided.has(i), `${x}`).toBe(true);
    }
  });

  it('leaves NaN, ±Infinity undecided and gives exp(±0) = 1', () => {
    const xs = Float64Array.from([NaN, Infinity, -Infinity, 0, -0, -NaN, 1e308, -1e308, 5e-324, -5e-324]);
    const undecided = Array.from(checkBatch(xs));
    for (const i of [0, 1, 2, 5, 6, 7]) expect(undecided).toContain(i);
    expect(undecided).not.toContain(3);
    expect(undecided).not.toContain(4);
  });

  it('reports the arguments that take exp.ts slow path as undecided', () => {
    const slow = slowPathArguments(exp, expSlowPathCount, 0x736c6f77n, 40, (rng) => (rng.nextUnit() - 0.5) * 60);
    expect(slow.length).toBeGreaterThanOrEqual(10);
    const undecided = checkBatch(Float64Array.from(slow));
    expect(Array.from(undecided)).toEqual(slow.map((_, i) => i));
  });

  it('handles every length 0…33 and offsets, separate and in place', () => {
    const pool = randomDoubles(0x6c656e73n, 256);
    pool[5] = NaN;
    pool[17] = -800;
    pool[30] = 710;
    for (let n = 0; n <= 33; n++) {
      for (const xOff of [0, 1, 3]) {
        for (const outOff of [0, 2]) {
          const x = pool.slice(0, 64);
          const out = new Float64Array(64).fill(-1.5);
          const und = new Int32Array(n);
          const count = wasmExpInto(out, outOff, x, xOff, n, und);
          for (let t = 0; t < count; t++) {
            const i = und[t] as number;
            out[outOff + i] = exp(out[outOff + i] as number); // the caller's fix-up, from the value left there
          }
          for (let i = 0; i < 64; i++) {
            const want = i >= outOff && i < outOff + n ? exp(x[xOff + i - outOff] as number) : -1.5;
            expect(bits(out[i] as number), `n ${n} xOff ${xOff} outOff ${outOff} i ${i}`).toBe(bits(want));
          }
          expect(Array.from(x)).toEqual(Array.from(pool.slice(0, 64))); // input untouched
        }
        // in place at the same offset
        const a = pool.slice(0, 64);
        const und = new Int32Array(n);
        const count = wasmExpInto(a, xOff, a, xOff, n, und);
        for (let t = 0; t < count; t++) {
          const i = xOff + (und[t] as number);
          a[i] = exp(a[i] as number);
        }
        for (let i = 0; i < 64; i++) {
          const want = i >= xOff && i < xOff + n ? exp(pool[i] as number) : (pool[i] as number);
          expect(bits(a[i] as number), `in place n ${n} off ${xOff} i ${i}`).toBe(bits(want));
        }
      }
    }
  });

  it('processes n larger than the chunk size, in place, with indices relative to the offset', () => {
    const n = 2 * WASM_EXP_CHUNK + 77;
    const xs = randomDoubles(0x6368756en, n + 8);
    xs[3] = NaN;
    xs[WASM_EXP_CHUNK + 5] = Infinity; // index WASM_EXP_CHUNK + 2 after the offset 3
    xs[n + 2] = -1000; // last element
    const a = xs.slice();
    const und = new Int32Array(n);
    const count = wasmExpInto(a, 3, a, 3, n, und);
    const undecided = Array.from(und.subarray(0, count));
    expect(undecided).toContain(0);
    expect(undecided).toContain(WASM_EXP_CHUNK + 2);
    expect(undecided).toContain(n - 1);
    for (const i of undecided) a[3 + i] = exp(a[3 + i] as number);
    for (let i = 0; i < n + 8; i++) {
      const want = i >= 3 && i < 3 + n ? exp(xs[i] as number) : (xs[i] as number);
      if (bits(a[i] as number) !== bits(want)) expect(`${i}: ${bits(a[i] as number)}`).toBe(`${i}: ${bits(want)}`);
    }
    expect(checkBatch(xs).length).toBeGreaterThan(0);
  });
});

describe('wasmExpInto without WebAssembly', () => {
  afterEach(() => {
    vi.unstubAllGlobals();
    vi.resetModules();
  });

  it('reports every index undecided and leaves out alone', async () => {
    vi.stubGlobal('WebAssembly', undefined);
    vi.resetModules();
    const m = await import('./wasm-exp.ts');
    expect(m.wasmExpAvailable()).toBe(false);
    const out = new Float64Array(5).fill(7);
    const und = new Int32Array(5);
    expect(m.wasmExpInto(out, 0, Float64Array.from([0, 1, 2, 3, 4]), 0, 5, und)).toBe(5);
    expect(Array.from(und)).toEqual([0, 1, 2, 3, 4]);
    expect(Array.from(out)).toEqual([7, 7, 7, 7, 7]);
  });
});
