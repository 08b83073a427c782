/**
 * The WebAssembly SwiGLU kernels in place in a kernel arena (wasm-swiglu.ts): bit identity with the
 * one-element definitions (exp() per element) for generated sizes (odd, even, small, across chunks) and values
 * (undecided exps included), with the arrays at arbitrary offsets and in any order in the arena; nothing outside
 * the output views is written (sentinels in the gaps), nothing is copied (internal/gemm-counters.ts), and
 * ordinary arrays still take the copy path (counted).
 */
import { describe, expect, it } from 'vitest';
import { gemmCounters, resetGemmCounters } from '../internal/gemm-counters.ts';
import { exp } from '../math/exp.ts';
import { KERNEL_ARENA_DATA_BYTES, openKernelArena, type KernelArena } from './kernel-arena.ts';
import { matrix } from '../reference/matrix.ts';
import { WasmKernels } from './wasm-set.ts';
import { WASM_SWIGLU_DATA_END, wasmSwigluBackward, wasmSwigluForward } from './wasm-swiglu.ts';

/** A deterministic generator of doubles in [0, 1). */
function uniform(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Gates whose exp the fast path leaves undecided (NaN, ±Infinity, far out, subnormal results), and signed zeros. */
const SPECIALS = [0, -0, NaN, Infinity, -Infinity, 5e-324, -5e-324, 1e300, -1e300, 800, -800, 709.8, -745.3, 740, -710, 40, -40];

function fill(view: Float64Array, next: () => number, scale: number, specials: boolean): void {
  for (let i = 0; i < view.length; i++) view[i] = specials && next() < 0.1 ? SPECIALS[Math.floor(next() * SPECIALS.length)]! : (next() - 0.5) * scale;
}

const SENTINEL = -1234.5;
const SIZES = [0, 1, 2, 3, 5, 7, 8, 9, 31, 32, 33, 63, 64, 65, 1023, 1024, 1025, 2047, 2048, 2049, 3001];

const sameBits = (a: number, b: number): boolean => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));

/** `count` views of n elements in the arena's memory, in a random order, with random gaps (0–3 elements) before each. */
function place(arena: KernelArena, next: () => number, count: number, n: number): Float64Array[] {
  const buffer = arena.kernel.memory.buffer;
  const all = new Float64Array(buffer, KERNEL_ARENA_DATA_BYTES, arena.capacity);
  all.fill(SENTINEL);
  const order = Array.from({ length: count }, (_, i) => i).sort(() => next() - 0.5);
  const views = new Array<Float64Array>(count);
  let at = Math.floor(next() * 4);
  for (const k of order) {
    views[k] = new Float64Array(buffer, KERNEL_ARENA_DATA_BYTES + at * 8, n);
    at += n + Math.floor(next() * 4);
  }
  expect(at).toBeLessThanOrEqual(arena.capacity);
  return views;
}

/** Every element of the arena outside `written` still holds the sentinel or its value before. */
function untouched(arena: KernelArena, before: Float64Array, written: readonly Float64Array[]): string | null {
  const all = new Float64Array(arena.kernel.memory.buffer, KERNEL_ARENA_DATA_BYTES, arena.capacity);
  const out = new Uint8Array(arena.capacity);
  for (const w of written) out.fill(1, (w.byteOffset - KERNEL_ARENA_DATA_BYTES) / 8, (w.byteOffset - KERNEL_ARENA_DATA_BYTES) / 8 + w.length);
  for (let i = 0; i < all.length; i++) if (out[i] === 0 && !sameBits(all[i]!, before[i]!)) return `element ${i} of the arena written`;
  return null;
}

function snapshot(arena: KernelArena): Float64Array {
  return new Float64Array(arena.kernel.memory.buffer, KERNEL_ARENA_DATA_BYTES, arena.capacity).slice();
}

function checkForward(prod: Float64Array, silu: Float64Array, sigma: Float64Array, gate: Float64Array, up: Float64Array, n: number): string | null {
  for (let i = 0; i < n; i++) {
    const x = gate[i]!;
    const e = exp(x >= 0 ? -x : x);
    const s = (x >= 0 ? 1.0 : e) / (1.0 + e);
    if (!sameBits(sigma[i]!, s)) return `sigma[${i}]`;
    if (!sameBits(silu[i]!, x * s)) return `silu[${i}]`;
    if (!sameBits(prod[i]!, x * s * up[i]!)) return `prod[${i}]`;
  }
  return null;
}

const arena = openKernelArena(5 * 3001 + 8 * 3001 + 64);
/** The wasm kernel set's layers, on n-element arrays (one row). */
const wasm = arena === null ? null : new WasmKernels({ vocabularySize: 5, modelWidth: 4, heads: 2, feedForwardWidth: 4, layers: 1, maxPositions: 4, ropeBase: 10000, rmsEpsilon: 1e-6 }, false);
function swigluForward(prod: Float64Array, silu: Float64Array, sigma: Float64Array, gate: Float64Array, up: Float64Array, n: number): void {
  const m = (x: Float64Array): ReturnType<typeof matrix> => matrix(x, 1, n);
  wasm!.swigluForward({ prod: m(prod), silu: m(silu), sigma: m(sigma), gate: m(gate), up: m(up) });
}
function swigluBackward(dgate: Float64Array, dup: Float64Array, dsilu: Float64Array, dprod: Float64Array, gate: Float64Array, sigma: Float64Array, silu: Float64Array, up: Float64Array, n: number): void {
  const m = (x: Float64Array): ReturnType<typeof matrix> => matrix(x, 1, n);
  wasm!.swigluBackward({ gate: m(dgate), up: m(dup), silu: m(dsilu), prod: m(dprod) }, { gate: m(gate), sigma: m(sigma), silu: m(silu), up: m(up), prod: m(up) });
}

describe.runIf(arena !== null)('the WebAssembly SwiGLU kernels in a kernel arena', () => {
  const A = arena!;

  it('keep their data within the region every arena reserves, before the views', () => {
    expect(WASM_SWIGLU_DATA_END).toBeLessThanOrEqual(KERNEL_ARENA_DATA_BYTES);
    const fresh = openKernelArena(16)!;
    expect(fresh.take(3).byteOffset).toBe(KERNEL_ARENA_DATA_BYTES);
    expect(fresh.take(13).byteOffset).toBe(KERNEL_ARENA_DATA_BYTES + 24);
    expect(() => fresh.take(1)).toThrow(RangeError);
    expect(fresh.kernel.scratchBase).toBe(KERNEL_ARENA_DATA_BYTES / 8 + 16);
  });

  it('forward: the bits of the one-element definition, in place (nothing copied), nothing written outside the outputs', () => {
    const next = uniform(1);
    for (const n of SIZES) {
      for (const specials of [false, true]) {
        const [prod, silu, sigma, gate, up] = place(A, next, 5, n) as [Float64Array, Float64Array, Float64Array, Float64Array, Float64Array];
        fill(gate, next, 16, specials);
        fill(up, next, 4, specials);
        const before = snapshot(A);
        resetGemmCounters();
        swigluForward(prod, silu, sigma, gate, up, n);
        const tag = `n=${n}${specials ? ' specials' : ''}`;
        expect([gemmCounters.elementwiseValues, gemmCounters.elementwiseInPlace], tag).toEqual([0, n < 8 ? 0 : n - (n & 1)]);
        expect(checkForward(prod, silu, sigma, gate, up, n), tag).toBeNull();
        expect(untouched(A, before, [prod, silu, sigma]), tag).toBeNull();
      }
    }
  });

  it('backward: the bits of the one-element definition, in place (nothing copied), nothing written outside the outputs', () => {
    const next = uniform(2);
    for (const n of SIZES) {
      for (const specials of [false, true]) {
        const [dgate, dup, dsilu, dprod, gate, sigma, silu, up] = place(A, next, 8, n) as [
          Float64Array, Float64Array, Float64Array, Float64Array, Float64Array, Float64Array, Float64Array, Float64Array,
        ];
        for (const [v, s] of [[dprod, 2], [gate, 16], [sigma, 1], [silu, 8], [up, 4]] as const) fill(v, next, s, specials);
        const before = snapshot(A);
        resetGemmCounters();
        swigluBackward(dgate, dup, dsilu, dprod, gate, sigma, silu, up, n);
        const tag = `n=${n}${specials ? ' specials' : ''}`;
        expect([gemmCounters.elementwiseValues, gemmCounters.elementwiseInPlace], tag).toEqual([0, n < 8 ? 0 : n - (n & 1)]);
        for (let i = 0; i < n; i++) {
          const u = dprod[i]!;
          const ds = 0 + u * up[i]!;
          const s = sigma[i]!;
          const want = [0 + ds * (s * (1.0 + gate[i]! * (1.0 - s))), 0 + u * silu[i]!, ds];
          const got = [dgate[i]!, dup[i]!, dsilu[i]!];
          if (!want.every((w, j) => sameBits(got[j]!, w))) expect(`${tag}: element ${i}: ${got} ≠ ${want}`).toBe('');
        }
        expect(untouched(A, before, [dgate, dup, dsilu]), tag).toBeNull();
      }
    }
  });

  it('leave the last element of an odd n to the caller (reported undecided, not counted as done), and write nothing past it', () => {
    const [prod, silu, sigma, gate, up] = place(A, uniform(3), 5, 9) as [Float64Array, Float64Array, Float64Array, Float64Array, Float64Array];
    gate.set([1, -2, NaN, 3, -800, 0.5, Infinity, -Infinity, 2]);
    up.fill(1);
    const before = snapshot(A);
    const und = new Int32Array(9);
    resetGemmCounters();
    expect(wasmSwigluForward(prod, silu, sigma, gate, up, 9, und)).toBe(5);
    expect([...und.subarray(0, 5)]).toEqual([2, 4, 6, 7, 8]);
    // The last element (8) is not written in place.
    expect([prod[8], silu[8], sigma[8]]).toEqual([SENTINEL, SENTINEL, SENTINEL]);
    expect(untouched(A, before, [prod.subarray(0, 8), silu.subarray(0, 8), sigma.subarray(0, 8)])).toBeNull();
    const [dgate, dup, dsilu, dprod, g, s, sl, u] = place(A, uniform(4), 8, 7) as [
      Float64Array, Float64Array, Float64Array, Float64Array, Float64Array, Float64Array, Float64Array, Float64Array,
    ];
    for (const v of [dprod, g, s, sl, u]) v.fill(0.25);
    expect(wasmSwigluBackward(dgate, dup, dsilu, dprod, g, s, sl, u, 7)).toBe(6);
    expect([dgate[6], dup[6], dsilu[6]]).toEqual([SENTINEL, SENTINEL, SENTINEL]);
    expect([gemmCounters.elementwiseValues, gemmCounters.elementwiseInPlace]).toEqual([0, 8 + 6]);
  });

  it('copy ordinary arrays through their own memory (and count the values)', () => {
    const n = 1500;
    const next = uniform(6);
    const gate = new Float64Array(n), up = new Float64Array(n);
    fill(gate, next, 16, true);
    fill(up, next, 4, true);
    const prod = new Float64Array(n), silu = new Float64Array(n), sigma = new Float64Array(n);
    resetGemmCounters();
    swigluForward(prod, silu, sigma, gate, up, n);
    expect(checkForward(prod, silu, sigma, gate, up, n)).toBeNull();
    expect([gemmCounters.elementwiseValues, gemmCounters.elementwiseInPlace]).toEqual([5 * n, 0]);
    // Views of one arena mixed with an ordinary array: the copy path too.
    const [p2, l2, s2, g2] = place(A, next, 4, n) as [Float64Array, Float64Array, Float64Array, Float64Array];
    g2.set(gate);
    resetGemmCounters();
    swigluForward(p2, l2, s2, g2, up, n);
    expect(checkForward(p2, l2, s2, g2, up, n)).toBeNull();
    expect(gemmCounters.elementwiseValues).toBe(5 * n);
  });
});
