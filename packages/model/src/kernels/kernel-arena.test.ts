/**
 * Kernel arenas: products on resident operands (views of an arena) give the
 * bits of ordinary arrays and copy nothing; a training step on the
 * WebAssembly path copies no activation, adjoint or weight around its
 * products, and gives the bits of the scalar kernel on ordinary arrays with
 * 1, 2 and 3 threads.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Decoder, type TokenBatch } from '../index.ts';
import { allocateBatchBuffers, sequenceGradients } from '../internal/batch-reduce.ts';
import { gemmCounters, resetGemmCounters } from '../internal/gemm-counters.ts';
import { matrix } from '../reference/matrix.ts';
import { decoderBackward, decoderForward } from '../reference/model.ts';
import { GEMM_ADD, GEMM_LOWER_K, GEMM_LOWER_OUT, GEMM_TRANS_A, GEMM_UPPER_K } from './gemm-flags.ts';
import { gemmJs } from './gemm.ts';
import { KERNEL_ARENA_DATA_BYTES, arenaFront, kernelArenaPages, openKernelArena } from './kernel-arena.ts';
import { openKernels } from './kernel-choice.ts';
import type { Kernels } from './kernel-set.ts';
import type { WasmApi, WasmMemory } from './wasm-assembler.ts';
import { createWasmGemm } from './wasm-gemm.ts';

const bits = (a: ArrayLike<number>): string[] => Array.from(a, (x) => new DataView(Float64Array.of(x).buffer).getBigUint64(0, true).toString(16));

function random(n: number, seed: number): Float64Array {
  let s = seed >>> 0;
  return Float64Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s / 2 ** 32 - 0.5) * 2 ** ((s % 41) - 20);
  });
}

const simd = createWasmGemm() !== null;
const TINY = { vocabularySize: 5, modelWidth: 4, heads: 2, feedForwardWidth: 4, layers: 1, maxPositions: 4, ropeBase: 10000, rmsEpsilon: 1e-6 };

/** The flag combinations the decoder uses, the causal ones with masked (+0) entries in A. */
const FLAGS = [0, GEMM_ADD, GEMM_LOWER_OUT, GEMM_LOWER_K, GEMM_UPPER_K, GEMM_ADD | GEMM_LOWER_K];

/** A causal contraction's A: entries outside the allowed k range are +0.0 (the masked probabilities). */
function masked(A: Float64Array, lda: number, M: number, K: number, flags: number, transA: boolean): void {
  for (let i = 0; i < M; i++)
    for (let k = 0; k < K; k++) {
      const out = ((flags & GEMM_LOWER_K) !== 0 && k > i) || ((flags & GEMM_UPPER_K) !== 0 && k < i);
      if (out) A[transA ? k * lda + i : i * lda + k] = 0;
    }
}

describe.skipIf(!simd)('resident operands', () => {
  const shape = fc.record({
    M: fc.integer({ min: 1, max: 21 }),
    N: fc.integer({ min: 1, max: 21 }),
    K: fc.integer({ min: 1, max: 25 }),
    pad: fc.integer({ min: 0, max: 3 }),
    flags: fc.constantFrom(...FLAGS),
    transA: fc.boolean(),
    resident: fc.integer({ min: 0, max: 7 }),
    seed: fc.integer(),
  });

  it('give the bits of ordinary arrays for any shape, stride, flag and mix of resident operands, and copy only the others', () => {
    const wasm = openKernels(TINY, 'wasm');
    const arena = openKernelArena(3 * 30 * 30)!;
    expect(arena).not.toBeNull();
    fc.assert(
      fc.property(shape, ({ M, N, K, pad, flags, transA, resident, seed }) => {
        // A [M, K] (or stored [K, M]), B [K, N], C [M, N], each with row stride width + pad, from offset pad.
        const rowsA = transA ? K : M;
        const colsA = transA ? M : K;
        const lda = colsA + pad, ldb = N + pad, ldc = N + pad;
        const A = random(pad + rowsA * lda, seed);
        masked(A.subarray(pad), lda, M, K, flags, transA);
        const B = random(pad + K * ldb, seed + 1);
        const C0 = random(pad + M * ldc, seed + 2);
        // Reference: the scalar kernel on ordinary arrays.
        const ref = C0.slice();
        gemmJs(matrix(ref, M, N, ldc, pad), matrix(A, rowsA, colsA, lda, pad), matrix(B, K, N, ldb, pad), flags | (transA ? GEMM_TRANS_A : 0));
        // Operands: resident (a fresh region of the arena) or ordinary, by the bits of `resident`.
        const fresh = new (class {
          used = 0;
          take(src: Float64Array): Float64Array {
            const view = new Float64Array(arena.kernel.memory.buffer, KERNEL_ARENA_DATA_BYTES + this.used * 8, src.length);
            this.used += src.length;
            view.set(src);
            return view;
          }
        })();
        const a = (resident & 1) !== 0 ? fresh.take(A) : A;
        const b = (resident & 2) !== 0 ? fresh.take(B) : B;
        const c = (resident & 4) !== 0 ? fresh.take(C0) : C0.slice();
        resetGemmCounters();
        wasm.product(matrix(c, M, N, ldc, pad), matrix(a, rowsA, colsA, lda, pad), matrix(b, K, N, ldb, pad), flags | (transA ? GEMM_TRANS_A : 0));
        const lowerOut = (flags & GEMM_LOWER_OUT) !== 0;
        for (let i = 0; i < M; i++)
          for (let j = 0; j < (lowerOut ? Math.min(N, i + 1) : N); j++) {
            if (!Object.is(c[pad + i * ldc + j], ref[pad + i * ldc + j])) return false;
          }
        // Resident operands are never copied; a product with any resident operand runs in that arena's kernel.
        if (resident === 0) return true;
        const operands = ((resident & 1) === 0 ? M * K : 0) + ((resident & 2) === 0 ? K * N : 0) + ((resident & 4) === 0 && (flags & GEMM_ADD) !== 0 ? M * N : 0);
        return gemmCounters.operandsIn === operands && gemmCounters.resultsOut === ((resident & 4) === 0 ? M * N : 0) && gemmCounters.scalarFallbacks === 0;
      }),
    );
  });

  it('never grow: taking beyond the capacity throws, and a product whose copies do not fit runs on the scalar kernel (same bits)', () => {
    const wasm = openKernels(TINY, 'wasm');
    const capacity = 8192 - KERNEL_ARENA_DATA_BYTES / 8;
    const arena = openKernelArena(capacity)!; // exactly one 64 KiB page: reserved data and views, no scratch after them
    expect(arena.bytes).toBe(65536);
    const before = arena.kernel.memory.buffer;
    const M = 9, N = 11, K = 13;
    const c = arena.take(M * N);
    expect(c.byteOffset).toBe(KERNEL_ARENA_DATA_BYTES);
    expect(() => arena.take(capacity - M * N + 1)).toThrow(RangeError);
    expect(arena.take(capacity - M * N).length).toBe(capacity - M * N);
    const A = random(M * K, 5);
    const B = random(K * N, 6);
    resetGemmCounters();
    wasm.product(matrix(c, M, N), matrix(A, M, K), matrix(B, K, N), 0);
    expect(gemmCounters.scalarFallbacks).toBe(1);
    const ref = new Float64Array(M * N);
    gemmJs(matrix(ref, M, N), matrix(A, M, K), matrix(B, K, N), 0);
    expect(bits(c)).toEqual(bits(ref));
    expect(arena.kernel.memory.buffer).toBe(before);
    expect(c.length).toBe(M * N); // the view was never detached
  });

  it('are opened by the wasm set\'s workspaces, never by the scalar set\'s, and by the native set\'s only on a shared memory', () => {
    const opened = (k: Kernels): number => {
      k.workspace.ensureCapacity(3);
      return k.workspace.kernelMemoryBytes;
    };
    expect(opened(openKernels(TINY, 'wasm'))).toBeGreaterThan(0);
    expect(opened(openKernels(TINY, 'scalar'))).toBe(0);
  });
});

const CONFIG = { vocabularySize: 37, modelWidth: 24, heads: 3, feedForwardWidth: 40, layers: 2, maxPositions: 13, ropeBase: 10000, rmsEpsilon: 1e-6 };

/** Widths that are multiples of 512 (V and F): the arena pads the rows of Eᵀ, of W_gate, W_up and of W_downᵀ. */
const PADDED = { vocabularySize: 512, modelWidth: 16, heads: 2, feedForwardWidth: 512, layers: 2, maxPositions: 9, ropeBase: 10000, rmsEpsilon: 1e-6 };

function batch(step: number, B: number, T: number, config: typeof CONFIG = CONFIG): TokenBatch {
  const inputs = Int32Array.from({ length: B * T }, (_, i) => (i * 7 + step * 3) % config.vocabularySize);
  const targets = Int32Array.from({ length: B * T }, (_, i) => (i * 11 + step + 5) % config.vocabularySize);
  return { inputs, targets, rows: B, columns: T };
}

/** Loss and gradient bits of three steps (parameters nudged between them), and the counters of the last step. */
async function run(kernels: 'scalar' | 'wasm', threads: number, config: typeof CONFIG = CONFIG): Promise<{ bits: string[]; counters: typeof gemmCounters; weights: number }> {
  const model = await Decoder.create(config, { threads, kernels });
  try {
    model.initialize(23n);
    const out: string[] = [];
    for (let step = 0; step < 3; step++) {
      if (step === 2) resetGemmCounters();
      out.push(...bits([model.trainStep(batch(step, 5, config.maxPositions, config))]), ...bits(model.gradients));
      for (let i = 0; i < model.parameters.length; i++) (model.parameters[i] as number) -= 0.05 * (model.gradients[i] as number);
    }
    out.push(...bits(model.logits([1, 2, 3, 5, 8])));
    const weights = model.layout.entries.filter((e) => e.kind !== 'gain').reduce((n, e) => n + e.length, 0);
    return { bits: out, counters: { ...gemmCounters }, weights };
  } finally {
    await model.close();
  }
}

describe.skipIf(!simd)('a training step on the WebAssembly path', () => {
  it('copies nothing around its products, SwiGLU, cross-entropy and attention softmax kernels, nor to transpose the weights; one thread writes the weight gradients once per batch', async () => {
    const { counters, weights } = await run('wasm', 1);
    expect(counters.operandsIn).toBe(0);
    expect(counters.resultsOut).toBe(0);
    expect(counters.scalarFallbacks).toBe(0);
    // SwiGLU forward and backward, the cross-entropy forward and the attention softmax ran in place on the arena's activations.
    expect(counters.elementwiseValues).toBe(0);
    expect(counters.elementwiseInPlace).toBeGreaterThan(0);
    // Every weight transposed once per parameter version (the step's, then the logits' after the parameters moved), in place from the resident snapshot (wasm-transpose.ts).
    expect(counters.transposedInPlace).toBe(2 * weights);
    // Five sequences accumulate into the resident accumulator; the slot is written once.
    expect(counters.gradientValues).toBe(weights);
  });

  it('gives the bits of the scalar kernels on ordinary arrays with 1, 2 and 3 threads', async () => {
    const reference = (await run('scalar', 1)).bits;
    for (const threads of [1, 2, 3]) {
      const got = (await run('wasm', threads)).bits;
      const first = got.findIndex((b, i) => b !== reference[i]);
      expect(first, `${threads} thread(s): first difference at ${first}`).toBe(-1);
      expect(got.length).toBe(reference.length);
    }
  });
  it('gives the bits of the scalar kernels with padded weight rows (V = F = 512), with 1 and 2 threads', async () => {
    const reference = (await run('scalar', 1, PADDED)).bits;
    for (const threads of [1, 2]) {
      const { bits: got, counters } = await run('wasm', threads, PADDED);
      const first = got.findIndex((b, i) => b !== reference[i]);
      expect(first, `${threads} thread(s): first difference at ${first}`).toBe(-1);
      expect(got.length).toBe(reference.length);
      if (threads === 1) expect(counters.operandsIn + counters.resultsOut + counters.scalarFallbacks + counters.elementwiseValues).toBe(0);
    }
  });
});

describe.skipIf(!simd)('the weights a wasm workspace keeps in its kernel arena', () => {
  const { vocabularySize: V, modelWidth: D, feedForwardWidth: F } = PADDED;

  async function prepared(kernels: 'wasm' | 'scalar'): Promise<{ k: Kernels; params: Float64Array; model: Decoder }> {
    const model = await Decoder.create(PADDED);
    model.initialize(7n);
    const k = openKernels(PADDED, kernels);
    k.workspace.prepare(model.parameters, -1);
    k.workspace.ensureCapacity(3); // opens the arena
    return { k, params: model.parameters, model };
  }

  it('have rows 4 KiB + 64 bytes apart where the width is a multiple of 512 values, and hold the parameters', async () => {
    const { k, params, model } = await prepared('wasm');
    try {
      const ws = k.workspace;
      expect(ws.kernelMemoryBytes).toBeGreaterThan(0);
      const W = ws.weights;
      const inArena = (m: { data: Float64Array }): boolean => m.data.buffer === ws.arenaMemory?.kernel.memory.buffer;
      // The tied head W = Eᵀ [D, V]: rows V + 8 apart, in the arena (read in place), holding E transposed.
      expect([W.head.w.stride, W.head.t!.stride, W.embedding.stride]).toEqual([V + 8, D, D]);
      expect(inArena(W.head.w) && inArena(W.head.t!) && inArena(W.embedding)).toBe(true);
      for (let c = 0; c < D; c++) for (let v = 0; v < V; v++) expect(W.head.w.data[W.head.w.offset + c * W.head.w.stride + v]).toBe(params[v * D + c]);
      for (let l = 0; l < PADDED.layers; l++) {
        const b = W.blocks[l]!;
        for (const [name, w] of [['gate', b.gate], ['up', b.up]] as const) {
          expect([w.w.stride, w.t!.stride], name).toEqual([F + 8, D]);
          const source = model.parameter(`blocks.${l}.ffn.${name}.weight`);
          for (let i = 0; i < D; i++) for (let o = 0; o < F; o++) expect(w.w.data[w.w.offset + i * w.w.stride + o]).toBe(source[i * F + o]);
        }
        expect([b.down.w.stride, b.down.t!.stride]).toEqual([D, F + 8]);
        for (const w of [b.query, b.key, b.value, b.output]) expect([w.w.stride, w.t!.stride]).toEqual([D, D]);
      }
    } finally {
      await model.close();
    }
  });

  it('keep contiguous rows as ordinary arrays (scalar kernels)', async () => {
    const { k, model } = await prepared('scalar');
    try {
      expect(k.workspace.kernelMemoryBytes).toBe(0);
      const W = k.workspace.weights;
      expect([W.head.w.stride, W.head.t!.stride, W.blocks[0]!.gate.w.stride, W.blocks[0]!.down.t!.stride]).toEqual([V, D, F, F]);
    } finally {
      await model.close();
    }
  });
});

describe.skipIf(!simd)("a wasm workspace on a worker's shared arena memory", () => {
  const T = CONFIG.maxPositions;
  const api = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
  const sharedMemory = (pages: number): WasmMemory => new api.Memory({ initial: pages, maximum: pages, shared: true });

  /** One sequence's forward and backward, its weight gradients written to slot `slot` of `partial` (P each). */
  function sequence(k: Kernels, params: Float64Array, partial: Float64Array, slot: number): void {
    const ws = k.workspace;
    const { inputs, targets } = batch(1, 1, T);
    const seq = { tokens: inputs, offset: 0, targets: targets as Int32Array, logitsFrom: 0 };
    ws.prepare(params, -1);
    const state = ws.state(T);
    decoderForward(k, state, seq);
    const buffers = allocateBatchBuffers(ws.layout, CONFIG.layers, CONFIG.modelWidth, 1, T, 0, false);
    decoderBackward(k, state, seq, sequenceGradients(ws.weightGradients(partial, slot * ws.layout.size, false), buffers, { row: 0, rows: T, add: false, scale: 1 / T }));
    ws.sequenceDone();
  }

  async function reference(): Promise<{ params: Float64Array; expected: Float64Array }> {
    const model = await Decoder.create(CONFIG);
    model.initialize(29n);
    const k = openKernels(CONFIG, 'wasm');
    k.workspace.flushGradients(); // the batch pass's mode: the owner flushes
    const expected = new Float64Array(k.workspace.layout.size);
    sequence(k, model.parameters, expected, 0);
    k.workspace.flushGradients();
    return { params: model.parameters, expected };
  }

  /** A workspace on a shared memory with `count` partial slots in front, `short` pages fewer than it needs; in the batch pass's mode (the owner flushes). */
  function adopting(count: number, short: number): { k: Kernels; P: number; memory: WasmMemory; slots: Float64Array } {
    const k = openKernels(CONFIG, 'wasm');
    const ws = k.workspace;
    const P = ws.layout.size;
    const shared = { memory: sharedMemory(kernelArenaPages(count * P, ws.arenaElements(T)) - short), front: count * P };
    ws.adoptArenaMemory(shared, T);
    ws.flushGradients();
    return { k, P, memory: shared.memory, slots: arenaFront(shared) };
  }

  it('writes the weight gradients into its partial slot in place, with the bits of a workspace on its own arena, its kernels running on that memory', async () => {
    const { params, expected } = await reference();
    const { k, P, memory, slots } = adopting(3, 0);
    expect(k.workspace.kernelMemoryBytes).toBe(memory.buffer.byteLength);
    resetGemmCounters();
    sequence(k, params, slots, 1);
    // Before any flush: slot 1 already holds them, and nothing was copied for them or around the products.
    expect(bits(slots.subarray(P, 2 * P))).toEqual(bits(expected));
    expect(gemmCounters.gradientValues).toBe(0);
    expect(gemmCounters.operandsIn + gemmCounters.resultsOut + gemmCounters.scalarFallbacks + gemmCounters.elementwiseValues).toBe(0);
    expect(gemmCounters.elementwiseInPlace).toBeGreaterThan(0);
    expect(slots.subarray(0, P).every((x) => x === 0) && slots.subarray(2 * P).every((x) => x === 0)).toBe(true);
  });

  it('opens an arena of its own when the memory is too small, and writes the same bits through its accumulator', async () => {
    const { params, expected } = await reference();
    const { k, P, memory, slots } = adopting(2, 1);
    expect(k.workspace.kernelMemoryBytes).toBeGreaterThan(0);
    expect(k.workspace.kernelMemoryBytes).not.toBe(memory.buffer.byteLength);
    sequence(k, params, slots, 1);
    k.workspace.flushGradients();
    expect(bits(slots.subarray(P, 2 * P))).toEqual(bits(expected));
  });
});
