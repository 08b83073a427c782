import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { gemmCounters } from '../internal/gemm-counters.ts';
import { GEMM_ADD } from '../kernels/gemm-flags.ts';
import { gemm, gemmArena, gemmScalar, gemmTransA, gemmTransABeside, setProductOffer, transpose, type ProductOffer } from '../kernels/gemm.ts';
import { kernelArenaPages } from '../kernels/kernel-arena.ts';
import { kernelChoice, loadNativeKernels, setKernels, type KernelChoice } from '../kernels/native.ts';
import { fixedMemory } from '../kernels/wasm-assembler.ts';
import { HELP, HelpDesk, helpBlock, helperKernels, helpTuning, MIN_WORK, NATIVE_MIN_ROWS, resetHelp } from './help.ts';

/** The largest operands the cases take (strides included). */
const MAX = { M: 40, N: 24, K: 30, pad: 3 };
const SIZE = { A: (MAX.M + MAX.pad) * (MAX.K + MAX.pad) + 8, B: MAX.K * (MAX.N + MAX.pad) + 8, C: MAX.M * (MAX.N + MAX.pad) + 8 };

function random(n: number, seed: number): Float64Array {
  let s = seed >>> 0;
  return Float64Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s / 2 ** 32 - 0.5) * 2 ** ((s % 41) - 20);
  });
}

const kinds: KernelChoice[] = loadNativeKernels().addon === null ? ['wasm'] : ['wasm', 'native'];
const saved = kernelChoice();
afterEach(() => {
  setProductOffer(null);
  setKernels(saved);
});

describe.each(kinds)('a product offered to another thread (%s kernels)', (kind) => {
  it("computes the offered lower rows, or the whole product handed over, with the helper's kernels on the offering thread's memory, the rest in place: the bits of the whole product, for plain and transposed A, set and add, taken or taken back", () => {
    setKernels(kind);
    // One thread's arena on a shared memory, as a threaded decoder's pass opens it (the operands are views of it).
    const elements = SIZE.A + SIZE.B + SIZE.C;
    const memory = fixedMemory(kernelArenaPages(0, elements), true);
    const arena = gemmArena(elements, { memory, front: 0 });
    expect(arena).not.toBeNull();
    const [A, B, C] = [arena!.take(SIZE.A), arena!.take(SIZE.B), arena!.take(SIZE.C)];
    // Another thread's kernels on that memory: the native kernels while they are active there, else WebAssembly.
    const helper = helperKernels([memory, memory], 1)[0]!;
    expect('view' in helper).toBe(kind === 'wasm');
    fc.assert(
      fc.property(
        fc.record({
          M: fc.integer({ min: 1, max: MAX.M }),
          N: fc.integer({ min: 1, max: MAX.N }),
          K: fc.integer({ min: 1, max: MAX.K }),
          pads: fc.tuple(fc.nat(MAX.pad), fc.nat(MAX.pad), fc.nat(MAX.pad)),
          offsets: fc.tuple(fc.nat(8), fc.nat(8), fc.nat(8)),
          mode: fc.constantFrom('rows', 'rows of a transposed A', 'whole'),
          add: fc.boolean(),
          taken: fc.boolean(),
          seed: fc.integer(),
        }),
        ({ M, N, K, pads, offsets, mode, add, taken, seed }) => {
          const transA = mode !== 'rows';
          const [aOff, bOff, cOff] = offsets;
          const lda = (transA ? M : K) + pads[0];
          const ldb = N + pads[1];
          const ldc = N + pads[2];
          A.set(random(SIZE.A, seed));
          B.set(random(SIZE.B, seed + 1));
          C.set(random(SIZE.C, seed + 2));
          // The specification: the scalar product on ordinary copies (A untransposed first).
          const plainA = new Float64Array(M * K);
          if (transA) transpose(plainA, 0, K, A, aOff, lda, K, M);
          else for (let i = 0; i < M; i++) plainA.set(A.subarray(aOff + i * lda, aOff + i * lda + K), i * K);
          const expected = C.slice();
          const flags = add ? GEMM_ADD : 0;
          gemmScalar(expected, cOff, ldc, plainA, 0, K, B.slice(), bOff, ldb, M, N, K, flags);
          // Every offer made, in order; a settle answers the last one (a product taken back may be split again when computed here).
          const offered: number[][] = [];
          const offer: ProductOffer = {
            buffer: memory.buffer,
            offer: (...args) => {
              offered.push(args);
              return true;
            },
            settle: () => {
              if (taken) helper.run(...(offered[offered.length - 1] as Parameters<typeof helper.run>));
              return taken;
            },
          };
          const before = gemmCounters.offeredProducts;
          setProductOffer(offer);
          try {
            if (mode === 'whole') {
              // Handed over whole (linear.ts: the weight gradient beside the input adjoint) before the other product runs, settled after it.
              let meanwhile = false;
              gemmTransABeside(C, cOff, ldc, A, aOff, lda, B, bOff, ldb, M, N, K, flags, () => {
                expect(offered.length).toBe(1);
                meanwhile = true;
              });
              expect(meanwhile).toBe(true);
            } else (transA ? gemmTransA : gemm)(C, cOff, ldc, A, aOff, lda, B, bOff, ldb, M, N, K, flags);
          } finally {
            setProductOffer(null);
          }
          const from = ((M >> 1) + 3) & ~3;
          const split = from > 0 && from < M;
          // The lower M − from rows offered when there are rows on both sides of the split (whole: all M rows first; taken back, its computation here splits too).
          const expectedOffers = mode === 'whole' ? [M, ...(split && !taken ? [M - from] : [])] : split ? [M - from] : [];
          expect(offered.map((args) => [args[1], args[3], args[5], args[6]])).toEqual(expectedOffers.map((rows) => [ldc, lda, ldb, rows]));
          expect(gemmCounters.offeredProducts - before).toBe(expectedOffers.length);
          expect(C.every((x, i) => Object.is(x, expected[i]))).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('what a thread offers', () => {
  it.each(kinds)('offers only products worth handing over while another thread serves: enough multiply-adds, and with the native kernels enough rows; everything when forced; one at a time (%s kernels)', (kind) => {
    setKernels(kind);
    const memory = fixedMemory(1, true);
    /** A fresh help block of two threads with the calling thread's desk, as a phase starts, then changed as given. */
    const desk = (force: boolean, serving: boolean, enabled = true): HelpDesk => {
      const block = helpBlock(2);
      helpTuning.force = force;
      resetHelp(block, 2);
      if (serving) Atomics.store(block, HELP.SERVING, 1);
      if (!enabled) Atomics.store(block, HELP.ENABLED, 0);
      return new HelpDesk(block, 0, memory);
    };
    const offers = (d: HelpDesk, M: number, N: number, K: number): boolean => d.offer(0, N, 0, K, 0, N, M, N, K, 0);
    try {
      const rows = NATIVE_MIN_ROWS;
      const small = Math.ceil(MIN_WORK / (rows * 8)) - 1; // rows × 8 × small < MIN_WORK
      for (const force of [false, true]) {
        // Nobody serves: nothing is offered unless forced.
        expect(offers(desk(force, false), rows, 64, 64)).toBe(force);
        expect(offers(desk(force, true), rows, 8, small)).toBe(force);
        expect(offers(desk(force, true), rows, 8, small + 1)).toBe(true);
        // One row fewer than the native kernels' minimum, with plenty of multiply-adds.
        expect(offers(desk(force, true), rows - 1, 256, 256)).toBe(force || kind === 'wasm');
        expect(offers(desk(force, true), rows, 256, 256)).toBe(true);
        expect(offers(desk(force, true, false), rows, 256, 256)).toBe(force);
        // While one offer is out, no other.
        const d = desk(force, true);
        expect(offers(d, rows, 256, 256)).toBe(true);
        expect(offers(d, rows, 256, 256)).toBe(false);
      }
    } finally {
      helpTuning.force = false;
    }
  });
});
