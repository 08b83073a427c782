/**
 * The WebAssembly attention softmax in place in a kernel arena (wasm-softmax.ts): bit identity with the
 * one-element definition (exp() per element) for generated T (odd and even, one row, more rows than one call)
 * and scores (ties at the maximum, undecided exps, NaN and ±Infinity), with the scores and weights at arbitrary
 * offsets and in either order in the arena; nothing outside the head's weights and the scores' lower triangle is
 * written (sentinels), and the kernels' data fits the region every arena reserves.
 */
import { describe, expect, it } from 'vitest';
import { gemmCounters, resetGemmCounters } from '../internal/gemm-counters.ts';
import { exp } from '../math/exp.ts';
import { KERNEL_ARENA_DATA_BYTES, openKernelArena, type KernelArena } from './kernel-arena.ts';
import { WASM_SOFTMAX_DATA_END, WASM_SOFTMAX_MAX_T, wasmAttentionSoftmax } from './wasm-softmax.ts';

/** A deterministic generator of doubles in [0, 1). */
function uniform(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const SPECIALS = [0, -0, -1e300, -3000, -2000, -1490, -1420, 5e-324, -5e-324, 80, -80];
const NON_FINITE = [NaN, Infinity, -Infinity];
type Kind = 'plain' | 'ties' | 'specials' | 'nonfinite';

function fill(S: Float64Array, T: number, next: () => number, kind: Kind): void {
  for (let i = 0; i < T; i++) {
    const row = i * T;
    for (let j = 0; j <= i; j++) S[row + j] = (next() - 0.5) * 40;
    if (kind === 'ties') {
      const m = 30 + Math.floor(next() * 3);
      for (let t = 0; t < 1 + Math.floor(next() * 3); t++) S[row + Math.floor(next() * (i + 1))] = m;
    } else if (kind !== 'plain') {
      const pool = kind === 'specials' ? SPECIALS : [...SPECIALS, ...NON_FINITE];
      for (let j = 0; j <= i; j++) if (next() < 0.15) S[row + j] = pool[Math.floor(next() * pool.length)]!;
    }
  }
}

/** The definition (attention.ts's loops, one element at a time): scaled scores and weights of one head. */
function reference(S: Float64Array, T: number, scale: number): { scaled: Float64Array; p: Float64Array } {
  const scaled = new Float64Array(T * T), p = new Float64Array(T * T);
  for (let i = 0; i < T; i++) {
    const row = i * T;
    let m = -Infinity;
    for (let j = 0; j <= i; j++) {
      const s = S[row + j]! * scale;
      scaled[row + j] = s;
      if (s > m) m = s;
    }
    let tail = 0;
    let skipped = false;
    for (let j = 0; j <= i; j++) {
      const shifted = scaled[row + j]! - m;
      const e = exp(shifted);
      p[row + j] = e;
      if (!skipped && shifted === 0) skipped = true;
      else tail += e;
    }
    const den = 1.0 + tail;
    for (let j = 0; j <= i; j++) p[row + j] = p[row + j]! / den + 0;
  }
  return { scaled, p };
}

const SENTINEL = -1234.5;
const sameBits = (a: number, b: number): boolean => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));
const TS = [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 32, 33, 64, 65, 129, 200];
const MAX = Math.max(...TS);

const arena = openKernelArena(4 * MAX * MAX + 16);

function views(a: KernelArena, next: () => number, T: number, heads: number): { S: Float64Array; prob: Float64Array } {
  const buffer = a.kernel.memory.buffer;
  new Float64Array(buffer, KERNEL_ARENA_DATA_BYTES, a.capacity).fill(SENTINEL);
  const gap = (): number => (next() < 0.5 ? 0 : Math.floor(next() * 4));
  const sizes = [T * T, heads * T * T];
  const first = next() < 0.5 ? 0 : 1;
  let at = gap();
  const out: Float64Array[] = [];
  for (const k of [first, 1 - first]) {
    out[k] = new Float64Array(buffer, KERNEL_ARENA_DATA_BYTES + at * 8, sizes[k]!);
    at += sizes[k]! + gap();
  }
  return { S: out[0]!, prob: out[1]! };
}

describe.runIf(arena !== null)('the WebAssembly attention softmax in a kernel arena', () => {
  const A = arena!;

  it('keeps its data within the region every arena reserves', () => {
    expect(WASM_SOFTMAX_DATA_END).toBeLessThanOrEqual(KERNEL_ARENA_DATA_BYTES);
    expect(WASM_SOFTMAX_MAX_T).toBeGreaterThanOrEqual(1024);
  });

  it('gives the bits of the one-element definition, writing only the head’s weights and the scores’ lower triangle', () => {
    const next = uniform(21);
    for (const T of TS) {
      for (const kind of ['plain', 'ties', 'specials', 'nonfinite'] as const) {
        const heads = 2, h = T % 2;
        const { S, prob } = views(A, next, T, heads);
        fill(S, T, next, kind);
        const scale = 1 / Math.sqrt(1 + Math.floor(next() * 32));
        const want = reference(S, T, scale);
        const all = new Float64Array(A.kernel.memory.buffer, KERNEL_ARENA_DATA_BYTES, A.capacity);
        const before = all.slice();
        resetGemmCounters();
        expect(wasmAttentionSoftmax(prob, h * T * T, S, T, scale)).toBe(true);
        expect(gemmCounters.elementwiseInPlace).toBe(T * T);
        const tag = `T=${T} ${kind}`;
        const pOff = h * T * T;
        for (let i = 0; i < T; i++) {
          for (let j = 0; j < T; j++) {
            const q = i * T + j;
            const wp = j <= i ? want.p[q]! : 0;
            if (!sameBits(prob[pOff + q]!, wp)) expect(`${tag}: p[${i}, ${j}] = ${prob[pOff + q]} ≠ ${wp}`).toBe('');
            const ws = j <= i ? want.scaled[q]! : SENTINEL;
            if (!sameBits(S[q]!, ws)) expect(`${tag}: s[${i}, ${j}] = ${S[q]} ≠ ${ws}`).toBe('');
          }
        }
        const from = (prob.byteOffset - KERNEL_ARENA_DATA_BYTES) / 8 + pOff, sFrom = (S.byteOffset - KERNEL_ARENA_DATA_BYTES) / 8;
        for (let k = 0; k < all.length; k++) {
          const inside = (k >= from && k < from + T * T) || (k >= sFrom && k < sFrom + T * T);
          if (!inside && !sameBits(all[k]!, before[k]!)) expect(`${tag}: element ${k} of the arena written`).toBe('');
        }
      }
    }
  });

  it('declines ordinary arrays and overlapping views (nothing written)', () => {
    const T = 5;
    const S = new Float64Array(T * T).fill(1), prob = new Float64Array(T * T).fill(SENTINEL);
    expect(wasmAttentionSoftmax(prob, 0, S, T, 0.5)).toBe(false);
    const { S: s2 } = views(A, uniform(3), T, 1);
    expect(wasmAttentionSoftmax(s2, 0, s2, T, 0.5)).toBe(false);
    expect([...prob]).toEqual(new Array<number>(T * T).fill(SENTINEL));
    expect([...s2]).toEqual(new Array<number>(T * T).fill(SENTINEL));
  });
});
