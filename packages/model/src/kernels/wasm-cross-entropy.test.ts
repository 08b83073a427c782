/**
 * The WebAssembly cross-entropy forward rows in place in a kernel arena (wasm-cross-entropy.ts, through
 * cross-entropy.ts): bit identity with the one-element definition (test/helpers/reference-kernels.ts) for
 * generated shapes (odd and even V, one row and more rows than one kernel call takes, rows longer than the copy
 * path's capacity) and values (ties at the maximum, undecided exps, NaN and ±Infinity logits), with the logits and
 * probabilities at arbitrary offsets and in either order in the arena (adjacent included); nothing outside the
 * probabilities is written (sentinels), nothing is copied (internal/gemm-counters.ts), an odd V's last row is
 * left to the caller; ordinary arrays still take the copy path (counted); the shared reserved data holds what
 * both arena kernels keep there.
 */
import { describe, expect, it } from 'vitest';
import { referenceCrossEntropy } from '../../test/helpers/reference-kernels.ts';
import { gemmCounters, resetGemmCounters } from '../internal/gemm-counters.ts';
import { ARENA_ONE, ARENA_SCRATCH, ARENA_SCRATCH_BYTES } from './arena-kernels.ts';
import { matrix } from '../reference/matrix.ts';
import { WasmKernels } from './wasm-set.ts';
import { KERNEL_ARENA_DATA_BYTES, openKernelArena, type KernelArena } from './kernel-arena.ts';
import { WASM_CE_CAPACITY, WASM_CE_DATA_END, wasmCrossEntropyRows } from './wasm-cross-entropy.ts';
import { WASM_SWIGLU_DATA_END } from './wasm-swiglu.ts';

/** A deterministic generator of doubles in [0, 1). */
function uniform(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Logits making exp undecided or special (far below the maximum, subnormal results), and signed zeros. */
const SPECIALS = [0, -0, -1e300, -800, -745.3, -740, -709.8, -710, 5e-324, -5e-324, 40, -40];
/** Non-finite logits (a NaN or +Infinity makes the row NaN; −Infinity is an exp of +0). */
const NON_FINITE = [NaN, Infinity, -Infinity];

type Kind = 'plain' | 'ties' | 'specials' | 'nonfinite';

function fill(logits: Float64Array, rows: number, V: number, next: () => number, kind: Kind): void {
  for (let i = 0; i < rows * V; i++) logits[i] = (next() - 0.5) * 12;
  for (let r = 0; r < rows; r++) {
    const o = r * V;
    if (kind === 'ties') {
      // the row maximum repeated (an exactly-zero shift after the first), sometimes ±0 mixed in
      const m = 7 + Math.floor(next() * 3);
      for (let t = 0; t < 1 + Math.floor(next() * 4); t++) logits[o + Math.floor(next() * V)] = m;
      if (next() < 0.3) logits[o + Math.floor(next() * V)] = next() < 0.5 ? 0 : -0;
    } else if (kind === 'specials' || kind === 'nonfinite') {
      const pool = kind === 'specials' ? SPECIALS : [...SPECIALS, ...NON_FINITE];
      for (let c = 0; c < V; c++) if (next() < 0.15) logits[o + c] = pool[Math.floor(next() * pool.length)]!;
    }
  }
}

const SENTINEL = -1234.5;
/** (rows, V): odd and even V, single rows, more rows than one call (256), rows longer than the copy capacity. */
const SHAPES: readonly (readonly [number, number])[] = [
  [1, 1], [2, 1], [7, 1], [1, 2], [3, 3], [1, 5], [5, 7], [4, 8], [9, 9], [2, 31], [3, 32], [6, 33], [5, 64], [4, 65],
  [300, 3], [257, 4], [2, 511], [3, 512], [2, 513], [1, 3071], [2, WASM_CE_CAPACITY + 1], [1, 4097],
];

const sameBits = (a: number, b: number): boolean => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));

/** Views of `sizes` elements in the arena's memory, in a random order, with random gaps (0–3 elements, often none) before each. */
function place(arena: KernelArena, next: () => number, sizes: readonly number[]): Float64Array[] {
  const buffer = arena.kernel.memory.buffer;
  new Float64Array(buffer, KERNEL_ARENA_DATA_BYTES, arena.capacity).fill(SENTINEL);
  const order = sizes.map((_, i) => i).sort(() => next() - 0.5);
  const views = new Array<Float64Array>(sizes.length);
  const gap = (): number => (next() < 0.5 ? 0 : Math.floor(next() * 4));
  let at = gap();
  for (const k of order) {
    views[k] = new Float64Array(buffer, KERNEL_ARENA_DATA_BYTES + at * 8, sizes[k]!);
    at += sizes[k]! + gap();
  }
  expect(at).toBeLessThanOrEqual(arena.capacity);
  return views;
}

function snapshot(arena: KernelArena): Float64Array {
  return new Float64Array(arena.kernel.memory.buffer, KERNEL_ARENA_DATA_BYTES, arena.capacity).slice();
}

/** Every element of the arena outside `written` still holds its value before. */
function untouched(arena: KernelArena, before: Float64Array, written: Float64Array): string | null {
  const all = new Float64Array(arena.kernel.memory.buffer, KERNEL_ARENA_DATA_BYTES, arena.capacity);
  const from = (written.byteOffset - KERNEL_ARENA_DATA_BYTES) / 8;
  for (let i = 0; i < all.length; i++) if ((i < from || i >= from + written.length) && !sameBits(all[i]!, before[i]!)) return `element ${i} of the arena written`;
  return null;
}

function check(rowLoss: Float64Array, prob: Float64Array, logits: Float64Array, targets: Int32Array, rows: number, V: number): string | null {
  const want = referenceCrossEntropy(logits, targets, 0, rows, V);
  for (let r = 0; r < rows; r++) if (!sameBits(rowLoss[r]!, want.rowLoss[r]!)) return `rowLoss[${r}]: ${rowLoss[r]} ≠ ${want.rowLoss[r]}`;
  for (let i = 0; i < rows * V; i++) if (!sameBits(prob[i]!, want.prob[i]!)) return `prob[${i}] (row ${Math.floor(i / V)}): ${prob[i]} ≠ ${want.prob[i]}`;
  return null;
}

const arena = openKernelArena(2 * Math.max(...SHAPES.map(([r, v]) => r * v)) + 16);
/** The wasm kernel set's cross-entropy forward on contiguous (rows, V) arrays. */
const wasm = arena === null ? null : new WasmKernels({ vocabularySize: 5, modelWidth: 4, heads: 2, feedForwardWidth: 4, layers: 1, maxPositions: 4, ropeBase: 10000, rmsEpsilon: 1e-6 }, false);
function crossEntropyForward(rowLoss: Float64Array, prob: Float64Array, logits: Float64Array, targets: Int32Array, tOff: number, rows: number, V: number): void {
  wasm!.crossEntropyForward(rowLoss, matrix(prob, rows, V), matrix(logits, rows, V), targets.subarray(tOff, tOff + rows));
}

describe.runIf(arena !== null)('the WebAssembly cross-entropy forward in a kernel arena', () => {
  const A = arena!;

  it('keeps its data, like SwiGLU, within the region every arena reserves (after exp’s shared table and constants)', () => {
    expect(ARENA_SCRATCH).toBeGreaterThanOrEqual(ARENA_ONE + 8);
    expect(ARENA_SCRATCH + ARENA_SCRATCH_BYTES).toBe(KERNEL_ARENA_DATA_BYTES);
    expect(WASM_CE_DATA_END).toBeLessThanOrEqual(KERNEL_ARENA_DATA_BYTES);
    expect(WASM_SWIGLU_DATA_END).toBeLessThanOrEqual(KERNEL_ARENA_DATA_BYTES);
  });

  it('gives the bits of the one-element definition in place (nothing copied), writing nothing outside the probabilities', () => {
    const next = uniform(11);
    for (const [rows, V] of SHAPES) {
      for (const kind of ['plain', 'ties', 'specials', 'nonfinite'] as const) {
        const [logits, prob] = place(A, next, [rows * V, rows * V]) as [Float64Array, Float64Array];
        fill(logits, rows, V, next, kind);
        const targets = Int32Array.from({ length: rows }, () => Math.floor(next() * V));
        const rowLoss = new Float64Array(rows);
        const before = snapshot(A);
        resetGemmCounters();
        crossEntropyForward(rowLoss, prob, logits, targets, 0, rows, V);
        const tag = `rows=${rows} V=${V} ${kind}`;
        // below 64 logits the kernel is not called; an odd V's last row is the caller's
        const inPlace = rows * V < 64 ? 0 : (rows - (V & 1)) * V;
        expect([gemmCounters.elementwiseValues, gemmCounters.elementwiseInPlace], tag).toEqual([0, inPlace]);
        expect(check(rowLoss, prob, logits, targets, rows, V), tag).toBeNull();
        expect(untouched(A, before, prob), tag).toBeNull();
      }
    }
  });

  it('leaves the last row of an odd V to the caller (reported undecided) and stores nothing past the probabilities', () => {
    const rows = 3, V = 5;
    // the probabilities right before the logits: a store past them would land in the logits
    const buffer = A.kernel.memory.buffer;
    new Float64Array(buffer, KERNEL_ARENA_DATA_BYTES, 64).fill(SENTINEL);
    const prob = new Float64Array(buffer, KERNEL_ARENA_DATA_BYTES, rows * V);
    const logits = new Float64Array(buffer, KERNEL_ARENA_DATA_BYTES + rows * V * 8, rows * V);
    logits.set([1, 2, 3, 4, 5, 0, -1, NaN, 2, 1, 3, 3, 3, 0, -800]);
    const stats = new Float64Array(2 * rows);
    const und = new Int32Array(rows);
    const before = snapshot(A);
    expect(wasmCrossEntropyRows(prob, logits, stats, rows, V, und)).toBe(2);
    expect([...und.subarray(0, 2)]).toEqual([1, 2]);
    // The last row is not computed (its first element holds the slack lane of the row before, the caller's to overwrite).
    expect([...prob.subarray(2 * V + 1)]).toEqual(new Array<number>(V - 1).fill(SENTINEL));
    expect(untouched(A, before, prob)).toBeNull();
    expect(stats[0]).toBe(5);
  });

  it('copies ordinary arrays through its own memory (and counts the values)', () => {
    const next = uniform(12);
    const rows = 20, V = 33;
    const logits = new Float64Array(rows * V);
    fill(logits, rows, V, next, 'specials');
    const targets = Int32Array.from({ length: rows }, () => Math.floor(next() * V));
    const prob = new Float64Array(rows * V), rowLoss = new Float64Array(rows);
    resetGemmCounters();
    crossEntropyForward(rowLoss, prob, logits, targets, 0, rows, V);
    expect(check(rowLoss, prob, logits, targets, rows, V)).toBeNull();
    expect([gemmCounters.elementwiseValues, gemmCounters.elementwiseInPlace]).toEqual([2 * rows * V, 0]);
    // An arena view of the probabilities with ordinary logits: the copy path too.
    const [p2] = place(A, next, [rows * V]) as [Float64Array];
    resetGemmCounters();
    crossEntropyForward(rowLoss, p2, logits, targets, 0, rows, V);
    expect(check(rowLoss, p2, logits, targets, rows, V)).toBeNull();
    expect(gemmCounters.elementwiseValues).toBe(2 * rows * V);
  });
});
