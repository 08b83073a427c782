/**
 * The WebAssembly RMSNorm kernels in place in a kernel arena (wasm-rmsnorm.ts), through rmsnorm.ts: bit identity
 * with the JavaScript loops (the same calls on ordinary arrays) for generated row counts, widths (odd and even)
 * and values (signed zeros, NaN, infinities, huge and tiny), with the arrays at arbitrary offsets and in any order
 * in the arena; nothing outside the outputs is written, and the in-place kernels are what ran (counted).
 */
import { describe, expect, it } from 'vitest';
import { gemmCounters } from '../internal/gemm-counters.ts';
import { KERNEL_ARENA_DATA_BYTES, openKernelArena } from './kernel-arena.ts';
import { matrix } from '../reference/matrix.ts';
import { WasmKernels } from './wasm-set.ts';

/** A deterministic generator of doubles in [0, 1). */
function uniform(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const SPECIALS = [0, -0, NaN, Infinity, -Infinity, 5e-324, -5e-324, 1e300, -1e300, 1e-300, 2 ** -1022];
const SENTINEL = -1234.5;
const sameBits = (a: number, b: number): boolean => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));
const show = (v: number): string => (Object.is(v, -0) ? '-0' : String(v));
const ROWS = [1, 2, 3, 9];
const WIDTHS = [1, 2, 3, 5, 8, 63, 64, 65];

/** The wasm kernel set's RMSNorm on (rows, D) arrays. */
const wasm = new WasmKernels({ vocabularySize: 5, modelWidth: 4, heads: 2, feedForwardWidth: 4, layers: 1, maxPositions: 4, ropeBase: 10000, rmsEpsilon: 1e-6 }, false);
type NormArrays = Record<'out' | 'normalized' | 'inv' | 'st' | 'ms', Float64Array> & { readonly dnormalized?: Float64Array; readonly rowAdjoints?: Float64Array };
const norm = (a: NormArrays, rows: number, D: number) => {
  const m = (x: Float64Array): ReturnType<typeof matrix> => matrix(x, rows, D);
  return { out: m(a.out), normalized: m(a.normalized), inv: a.inv, st: a.st, ms: a.ms, dnormalized: m(a.dnormalized ?? new Float64Array(rows * D)), rowAdjoints: a.rowAdjoints ?? new Float64Array(5 * rows) };
};
function rmsNormForward(a: NormArrays, x: Float64Array, gain: Float64Array, rows: number, D: number, eps: number): void {
  wasm.rmsNormForward(norm(a, rows, D), matrix(x, rows, D), gain, eps);
}
function rmsNormBackward(dx: Float64Array, gainTerms: Float64Array, a: NormArrays, u: Float64Array, x: Float64Array, gain: Float64Array, rows: number, D: number): void {
  const m = (v: Float64Array): ReturnType<typeof matrix> => matrix(v, rows, D);
  wasm.rmsNormBackward(m(dx), m(gainTerms), norm(a, rows, D), m(u), m(x), gain);
}

describe('the WebAssembly RMSNorm kernels', () => {
  const arena = openKernelArena(12 * 9 * 65 + 5 * 9 + 64)!;

  /**
   * Runs `call` on generated values placed in the arena and on the same values in ordinary arrays, and
   * compares: the outputs' bits, nothing else in the arena written, `inPlace` elements counted in place.
   */
  function compare<K extends string>(next: () => number, lengths: Record<K, number>, outputs: readonly NoInfer<K>[], specials: boolean, inPlace: number, call: (a: Record<NoInfer<K>, Float64Array>) => void, what: string): void {
    const names = Object.keys(lengths) as K[];
    const ref = {} as Record<K, Float64Array>;
    for (const k of names) {
      ref[k] = Float64Array.from({ length: lengths[k] }, () => (specials && next() < 0.1 ? SPECIALS[Math.floor(next() * SPECIALS.length)]! : (next() - 0.5) * 2 ** Math.floor(next() * 40 - 20)));
    }
    const buffer = arena.kernel.memory.buffer;
    const all = new Float64Array(buffer, KERNEL_ARENA_DATA_BYTES, arena.capacity);
    all.fill(SENTINEL);
    const views = {} as Record<K, Float64Array>;
    let at = Math.floor(next() * 4);
    for (const k of [...names].sort(() => next() - 0.5)) {
      views[k] = new Float64Array(buffer, KERNEL_ARENA_DATA_BYTES + at * 8, lengths[k]);
      views[k].set(ref[k]);
      at += lengths[k] + Math.floor(next() * 4);
    }
    expect(at).toBeLessThanOrEqual(arena.capacity);
    const before = all.slice();
    const counted = gemmCounters.elementwiseInPlace;
    call(views);
    expect(gemmCounters.elementwiseInPlace - counted).toBe(inPlace);
    call(ref);
    for (const k of outputs) {
      for (let i = 0; i < lengths[k]; i++) {
        if (!sameBits(views[k][i]!, ref[k][i]!)) expect.fail(`${what}: ${k}[${i}] = ${show(views[k][i]!)}, the JavaScript loop gives ${show(ref[k][i]!)}`);
      }
    }
    const written = new Uint8Array(arena.capacity);
    for (const k of outputs) written.fill(1, (views[k].byteOffset - KERNEL_ARENA_DATA_BYTES) / 8, (views[k].byteOffset - KERNEL_ARENA_DATA_BYTES) / 8 + lengths[k]);
    for (let i = 0; i < all.length; i++) if (written[i] === 0 && !sameBits(all[i]!, before[i]!)) expect.fail(`${what}: element ${i} of the arena written`);
  }

  /** `check(next, rows, D, specials)` for every row count and width, without and with special values. */
  function everyShape(seed: number, check: (next: () => number, rows: number, D: number, specials: boolean) => void): void {
    const next = uniform(seed);
    for (const rows of ROWS) for (const D of WIDTHS) for (const specials of [false, true]) check(next, rows, D, specials);
  }

  it('backward: gives the bits of the JavaScript loop in place, for generated shapes and values, and writes only its outputs', () => {
    everyShape(7, (next, rows, D, specials) => {
      const n = rows * D;
      const lengths = { dx: n, gainTerms: n, dnormalized: n, rowAdjoints: 5 * rows, u: n, x: n, gain: D, normalized: n, inv: rows, st: rows, ms: rows, out: n };
      compare(next, lengths, ['dx', 'gainTerms', 'dnormalized', 'rowAdjoints'], specials, n, (a) => rmsNormBackward(a.dx, a.gainTerms, a, a.u, a.x, a.gain, rows, D), `backward, rows ${rows}, D ${D}`);
    });
  });

  it('forward: gives the bits of the JavaScript loop in place (mean squares and scaling), for generated shapes and values, and writes only its outputs', () => {
    everyShape(11, (next, rows, D, specials) => {
      const n = rows * D;
      const eps = [1e-5, 1e-6, 0.5, 5e-324][Math.floor(next() * 4)]!;
      const lengths = { x: n, gain: D, out: n, normalized: n, inv: rows, st: rows, ms: rows };
      // The mean squares and the scaling, each over every element.
      compare(next, lengths, ['out', 'normalized', 'inv', 'st', 'ms'], specials, 2 * n, (a) => rmsNormForward(a, a.x, a.gain, rows, D, eps), `forward, rows ${rows}, D ${D}`);
    });
  });
});
