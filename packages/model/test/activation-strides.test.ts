/**
 * The decoder pass's activations with padded rows: in a kernel arena, the
 * (T, F) activations and adjoints and the logits' adjoint get the arena's row
 * stride where their width is a multiple of 512 values (like the weights),
 * their padding stays +0 through forward and backward, and a training step
 * keeps the bits of the scalar kernel on ordinary (unpadded) arrays with 1 and
 * 2 threads, for every generated batch.
 */
import { SplitMix64, type DecoderConfig } from '@llmcp/format';
import { describe, expect, it } from 'vitest';
import { sequenceGradients, allocateBatchBuffers } from '../src/internal/batch-reduce.ts';
import { Decoder } from '../src/index.ts';
import { openKernels } from '../src/kernels/kernel-choice.ts';
import { decoderBackward, decoderForward } from '../src/reference/model.ts';
import { KERNEL_SETS } from './helpers/kernel-sets.ts';

const WASM = KERNEL_SETS.find((k) => k.name === 'wasm')!;

const bits = (a: ArrayLike<number>): string[] => Array.from(a, (x) => new DataView(Float64Array.of(x).buffer).getBigUint64(0, true).toString(16));

/** F = 1024 and V = 512 are padded; F = 40, V = 37 are not (both kinds in one pass). */
const WIDE: DecoderConfig = { vocabularySize: 512, modelWidth: 8, heads: 2, feedForwardWidth: 1024, layers: 2, maxPositions: 6, ropeBase: 10000, rmsEpsilon: 1e-6 };
const NARROW: DecoderConfig = { ...WIDE, vocabularySize: 37, feedForwardWidth: 40 };

/** Indices of padding elements (columns width … ld−1 of every row) that are not `expected(t)`. */
function badPadding(x: Float64Array, rows: number, ld: number, width: number, expected: (t: number) => number): number[] {
  const out: number[] = [];
  for (let t = 0; t < rows; t++) for (let c = width; c < ld; c++) if (!Object.is(x[t * ld + c], expected(t))) out.push(t * ld + c);
  return out;
}

describe.skipIf(WASM.missing)(`activations in a kernel arena (the wasm kernel set)${WASM.skipped}`, () => {
  it('have rows 4 KiB + 64 bytes apart where F or V is a multiple of 512 values, and their padding stays +0', async () => {
    const model = await Decoder.create(WIDE);
    try {
      model.initialize(3n);
      const { feedForwardWidth: F, vocabularySize: V, modelWidth: D } = WIDE;
      const kernels = openKernels(WIDE, 'wasm');
      const ws = kernels.workspace;
      ws.prepare(model.parameters, -1);
      const rng = new SplitMix64(11n);
      let used = 0;
      for (const T of [6, 2, 5]) {
        used = Math.max(used, T);
        const tokens = Array.from({ length: T }, () => rng.nextBelow(V));
        const targets = Int32Array.from({ length: T }, () => rng.nextBelow(V));
        const seq = { tokens, offset: 0, targets, logitsFrom: 0 };
        const state = ws.state(T);
        decoderForward(kernels, state, seq);
        const buffers = allocateBatchBuffers(ws.layout, WIDE.layers, D, 1, T, 1, false);
        decoderBackward(kernels, state, seq, sequenceGradients(ws.weightGradients(buffers.partials, 0, false), buffers, { row: 0, rows: T, add: false, scale: 1 / T }));
        ws.flushGradients();
        expect(ws.kernelMemoryBytes).toBeGreaterThan(0);
        expect(ws.strides).toEqual({ ffn: F + 8, dlogits: V + 8 });
        const cap = ws.capacity;
        for (let l = 0; l < WIDE.layers; l++) {
          const a = state.acts.blocks[l]!.glu;
          const g = state.adjoints.blocks[l]!.glu;
          const arrays = { gate: a.gate, up: a.up, silu: a.silu, prod: a.prod, dprod: g.prod, dsilu: g.silu, dup: g.up, dgate: g.gate };
          for (const [name, x] of Object.entries(arrays)) {
            expect(x.stride, name).toBe(F + 8);
            expect(x.data.length, name).toBe(cap * (F + 8));
            expect(badPadding(x.data, cap, F + 8, F, () => 0), name).toEqual([]);
          }
          // SwiGLU runs over the padding of the rows it was given: σ(+0) = 0.5 there, +0 in rows never used.
          expect(badPadding(a.sigma.data, cap, F + 8, F, (t) => (t < used ? 0.5 : 0)), 'sigma').toEqual([]);
        }
        const dlogits = state.adjoints.dlogits;
        expect([dlogits.stride, dlogits.data.length]).toEqual([V + 8, cap * (V + 8)]);
        expect(badPadding(dlogits.data, cap, V + 8, V, () => 0)).toEqual([]);
      }
    } finally {
      await model.close();
    }
  });

  it('keep contiguous rows where the widths are not multiples of 512, and as ordinary arrays (scalar kernels)', () => {
    const narrow = openKernels(NARROW, 'wasm').workspace;
    narrow.ensureCapacity(4);
    expect(narrow.strides).toEqual({ ffn: NARROW.feedForwardWidth, dlogits: NARROW.vocabularySize });
    const wide = openKernels(WIDE, 'scalar').workspace;
    wide.prepare(new Float64Array(wide.layout.size), -1);
    wide.ensureCapacity(4);
    expect(wide.kernelMemoryBytes).toBe(0);
    expect(wide.strides).toEqual({ ffn: WIDE.feedForwardWidth, dlogits: WIDE.vocabularySize });
    expect(wide.state(4).acts.blocks[0]!.glu.prod.data.length).toBe(4 * WIDE.feedForwardWidth);
  });

  it('give a training step the bits of the scalar kernels on unpadded arrays, with 1 and 2 threads', async () => {
    const run = async (kernels: 'scalar' | 'wasm', threads: number): Promise<string[]> => {
      const model = await Decoder.create(WIDE, { threads, kernels });
      try {
        model.initialize(5n);
        const rng = new SplitMix64(17n);
        const out: string[] = [];
        for (let step = 0; step < 2; step++) {
          const B = 3;
          const T = step === 0 ? WIDE.maxPositions : 4;
          const inputs = Int32Array.from({ length: B * T }, () => rng.nextBelow(WIDE.vocabularySize));
          const targets = Int32Array.from({ length: B * T }, () => rng.nextBelow(WIDE.vocabularySize));
          out.push(...bits([model.trainStep({ inputs, targets, rows: B, columns: T })]), ...bits(model.gradients));
          for (let i = 0; i < model.parameters.length; i++) (model.parameters[i] as number) -= 0.1 * (model.gradients[i] as number);
        }
        return out;
      } finally {
        await model.close();
      }
    };
    const reference = await run('scalar', 1);
    for (const threads of [1, 2]) {
      const got = await run('wasm', threads);
      const first = got.findIndex((b, i) => b !== reference[i]);
      expect(first, `${threads} thread(s): first difference at ${first}`).toBe(-1);
      expect(got.length).toBe(reference.length);
    }
  });
});
