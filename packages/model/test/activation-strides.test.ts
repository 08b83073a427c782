/**
 * The decoder pass's activations with padded rows: in a kernel arena, the
 * (T, F) activations and adjoints and the logits' adjoint get the arena's row
 * stride where their width is a multiple of 512 values (like the weights),
 * their padding stays +0 through forward and backward, and a training step
 * keeps the bits of the scalar kernel on ordinary (unpadded) arrays with 1 and
 * 2 threads, for every generated batch.
 */
import { SplitMix64, type DecoderConfig } from '@llmcp/format';
import { afterEach, describe, expect, it } from 'vitest';
import { DecoderPass } from '../src/decoder-pass.ts';
import { Decoder } from '../src/index.ts';
import { setGemmBackend, usesSimdGemm } from '../src/kernels/gemm.ts';
import { kernelChoice, setKernels } from '../src/kernels/native.ts';

const previousKernels = kernelChoice();
afterEach(() => {
  setKernels(previousKernels);
  setGemmBackend('auto');
});

const bits = (a: ArrayLike<number>): string[] => Array.from(a, (x) => new DataView(Float64Array.of(x).buffer).getBigUint64(0, true).toString(16));

/** F = 1024 and V = 512 are padded; F = 40, V = 37 are not (both kinds in one pass). */
const WIDE: DecoderConfig = { vocabularySize: 512, modelWidth: 8, heads: 2, feedForwardWidth: 1024, layers: 2, maxPositions: 6, ropeBase: 10000, rmsEpsilon: 1e-6 };
const NARROW: DecoderConfig = { ...WIDE, vocabularySize: 37, feedForwardWidth: 40 };

function slots(config: DecoderConfig, T: number) {
  const P = new DecoderPass(config).layout.size;
  const D = config.modelWidth;
  return {
    rowLoss: new Float64Array(T),
    rowLossOff: 0,
    partial: new Float64Array(P),
    partialOff: 0,
    accumulate: false,
    gainTerms: new Float64Array((2 * config.layers + 1) * T * D),
    gainStride: T * D,
    gainOff: 0,
    dx0: new Float64Array(T * D),
    dx0Off: 0,
  };
}

/** Indices of padding elements (columns width … ld−1 of every row) that are not `expected(t)`. */
function badPadding(x: Float64Array, rows: number, ld: number, width: number, expected: (t: number) => number): number[] {
  const out: number[] = [];
  for (let t = 0; t < rows; t++) for (let c = width; c < ld; c++) if (!Object.is(x[t * ld + c], expected(t))) out.push(t * ld + c);
  return out;
}

describe.skipIf(!usesSimdGemm())('activations in a kernel arena', () => {
  it('have rows 4 KiB + 64 bytes apart where F or V is a multiple of 512 values, and their padding stays +0', async () => {
    setKernels('wasm');
    const model = await Decoder.create(WIDE);
    try {
      model.initialize(3n);
      const { feedForwardWidth: F, vocabularySize: V } = WIDE;
      const pass = new DecoderPass(WIDE);
      pass.prepare(model.parameters, -1);
      const rng = new SplitMix64(11n);
      let used = 0;
      for (const T of [6, 2, 5]) {
        used = Math.max(used, T);
        const tokens = Array.from({ length: T }, () => rng.nextBelow(V));
        const targets = Array.from({ length: T }, () => rng.nextBelow(V));
        const seq = { tokens, targets, offset: 0, positions: T };
        pass.forward(seq);
        pass.backward(seq, 1 / T, slots(WIDE, T));
        pass.flushGradients();
        expect(pass.kernelMemoryBytes).toBeGreaterThan(0);
        expect(pass.strides).toEqual({ ffn: F + 8, dlogits: V + 8 });
        const cap = pass.capacity;
        for (let l = 0; l < WIDE.layers; l++) {
          const a = pass.blocks[l]!;
          const g = pass.blockAdjoints[l]!;
          const arrays = { gate: a.gate, up: a.up, silu: a.silu, prod: a.prod, dprod: g.prod, dsilu: g.silu, dup: g.up, dgate: g.gate };
          for (const [name, x] of Object.entries(arrays)) {
            expect(x.length, name).toBe(cap * (F + 8));
            expect(badPadding(x, cap, F + 8, F, () => 0), name).toEqual([]);
          }
          // SwiGLU runs over the padding of the rows it was given: σ(+0) = 0.5 there, +0 in rows never used.
          expect(badPadding(a.sigma, cap, F + 8, F, (t) => (t < used ? 0.5 : 0)), 'sigma').toEqual([]);
        }
        expect(pass.dlogits.length).toBe(cap * (V + 8));
        expect(badPadding(pass.dlogits, cap, V + 8, V, () => 0)).toEqual([]);
      }
    } finally {
      await model.close();
    }
  });

  it('keep contiguous rows where the widths are not multiples of 512, and as ordinary arrays (scalar kernel)', async () => {
    setKernels('wasm');
    const narrow = new DecoderPass(NARROW);
    narrow.ensureCapacity(4);
    expect(narrow.strides).toEqual({ ffn: NARROW.feedForwardWidth, dlogits: NARROW.vocabularySize });
    setGemmBackend('scalar');
    const wide = new DecoderPass(WIDE);
    wide.ensureCapacity(4);
    expect(wide.kernelMemoryBytes).toBe(0);
    expect(wide.strides).toEqual({ ffn: WIDE.feedForwardWidth, dlogits: WIDE.vocabularySize });
    expect(wide.blocks[0]!.prod.length).toBe(4 * WIDE.feedForwardWidth);
  });

  it('give a training step the bits of the scalar kernel on unpadded arrays, with 1 and 2 threads', async () => {
    setKernels('wasm');
    const run = async (threads: number): Promise<string[]> => {
      const model = await Decoder.create(WIDE, { threads });
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
    setGemmBackend('scalar');
    const reference = await run(1);
    setGemmBackend('auto');
    for (const threads of [1, 2]) {
      const got = await run(threads);
      const first = got.findIndex((b, i) => b !== reference[i]);
      expect(first, `${threads} thread(s): first difference at ${first}`).toBe(-1);
      expect(got.length).toBe(reference.length);
    }
  });
});
