import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { gemmCounters } from '../internal/gemm-counters.ts';
import { GEMM_ADD, GEMM_TRANS_A } from '../kernels/gemm-flags.ts';
import { gemmJs } from '../kernels/gemm.ts';
import { kernelArenaPages, openKernelArena } from '../kernels/kernel-arena.ts';
import { openKernels } from '../kernels/kernel-choice.ts';
import type { KernelSetName } from '../kernels/kernel-set.ts';
import { fixedMemory } from '../kernels/wasm-assembler.ts';
import { matrix } from '../reference/matrix.ts';
import { AVAILABLE_SETS } from '../../test/helpers/kernel-sets.ts';
import { HELP, HelpDesk, helpBlock, helpingKernelsOn, MIN_WORK, resetHelp, type Offers } from './help.ts';

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

/** The sets whose products are handed over (the scalar set opens no arenas). */
const kinds: KernelSetName[] = AVAILABLE_SETS.filter((k) => k !== 'scalar');
const CONFIG = { vocabularySize: 5, modelWidth: 4, heads: 2, feedForwardWidth: 4, layers: 1, maxPositions: 4, ropeBase: 10000, rmsEpsilon: 1e-6 };

describe.each(kinds)('a product offered to another thread (%s kernels)', (kind) => {
  it("computes the offered lower rows, or the whole weight gradient handed over, with the helper's kernels on the offering thread's memory, the rest in place: the bits of the whole product, for plain and transposed A, set and add, taken or taken back", () => {
    const kernels = openKernels(CONFIG, kind);
    // One thread's arena on a shared memory, as a threaded decoder's workspace opens it (the operands are views of it).
    const elements = 3 * SIZE.A + SIZE.B + SIZE.C;
    const memory = fixedMemory(kernelArenaPages(0, elements), true);
    const arena = openKernelArena(elements, { memory, front: 0 });
    expect(arena).not.toBeNull();
    const [A, B, C, X, W] = [arena!.take(SIZE.A), arena!.take(SIZE.B), arena!.take(SIZE.C), arena!.take(SIZE.A), arena!.take(SIZE.A)];
    // Another thread's product on that memory: the same set's.
    const helper = kernels.productOn(memory)!;
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
          W.set(random(SIZE.A, seed + 3));
          const a = transA ? matrix(A, K, M, lda, aOff) : matrix(A, M, K, lda, aOff);
          const b = matrix(B, K, N, ldb, bOff);
          const c = matrix(C, M, N, ldc, cOff);
          const flags = (add ? GEMM_ADD : 0) | (transA ? GEMM_TRANS_A : 0);
          // The specification: the JavaScript product on ordinary copies.
          const expected = C.slice();
          gemmJs(matrix(expected, M, N, ldc, cOff), { ...a, data: A.slice() }, { ...b, data: B.slice() }, flags);
          // Every offer made, in order, one at a time (a settle answers the last one; a product taken back may be split again when computed here).
          const offered: number[][] = [];
          let out = false;
          const desk: Offers = {
            buffer: memory.buffer,
            offer: (...args) => {
              if (out) return false;
              offered.push(args);
              out = true;
              return true;
            },
            settle: () => {
              out = false;
              if (taken) helper(...(offered[offered.length - 1] as Parameters<typeof helper>));
              return taken;
            },
          };
          const helping = helpingKernelsOn(kernels, desk);
          const before = gemmCounters.offeredProducts;
          if (mode === 'whole') {
            // A layer's weight gradient handed over whole before its input adjoint runs, settled after it:
            // dweight = inpᵀ·dout with inp = A (T = K rows of M), dout = B; dinp = dout·Wᵀ into X.
            const dinp = matrix(X, K, M);
            const wT = matrix(W, N, M);
            helping.linearBackward(dinp, c, a, b, { w: wT, t: wT }, add ? 2 : 0);
            const dinpExpected = new Float64Array(K * M);
            gemmJs(matrix(dinpExpected, K, M), b, wT, 0);
            expect(X.subarray(0, K * M).every((x, i) => Object.is(x, dinpExpected[i]))).toBe(true);
          } else helping.product(c, a, b, flags);
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
    const minRows = openKernels(CONFIG, kind).helpMinRows;
    const memory = fixedMemory(1, true);
    /** A fresh help block of two threads with the calling thread's desk, as a phase starts, then changed as given. */
    const desk = (force: boolean, serving: boolean, enabled = true): HelpDesk => {
      const block = helpBlock(2);
      resetHelp(block, 2, true, force);
      if (serving) Atomics.store(block, HELP.SERVING, 1);
      if (!enabled) Atomics.store(block, HELP.ENABLED, 0);
      return new HelpDesk(block, 0, memory, minRows);
    };
    const offers = (d: HelpDesk, M: number, N: number, K: number): boolean => d.offer(0, N, 0, K, 0, N, M, N, K, 0);
    {
      const rows = 64;
      const small = Math.ceil(MIN_WORK / (rows * 8)) - 1; // rows × 8 × small < MIN_WORK
      for (const force of [false, true]) {
        // Nobody serves: nothing is offered unless forced.
        expect(offers(desk(force, false), rows, 64, 64)).toBe(force);
        expect(offers(desk(force, true), rows, 8, small)).toBe(force);
        expect(offers(desk(force, true), rows, 8, small + 1)).toBe(true);
        // One row fewer than the native kernels' minimum, with plenty of multiply-adds.
        expect(offers(desk(force, true), rows - 1, 256, 256)).toBe(force || minRows < rows);
        expect(offers(desk(force, true), rows, 256, 256)).toBe(true);
        expect(offers(desk(force, true, false), rows, 256, 256)).toBe(force);
        // While one offer is out, no other.
        const d = desk(force, true);
        expect(offers(d, rows, 256, 256)).toBe(true);
        expect(offers(d, rows, 256, 256)).toBe(false);
      }
    }
  });
});
