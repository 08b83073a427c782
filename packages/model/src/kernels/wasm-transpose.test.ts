/**
 * The WebAssembly transpose in place in a kernel arena (wasm-transpose.ts): for generated shapes — row counts
 * around its groups of eight and two, odd and even column counts — row strides and offsets, every value of the
 * transpose is the source's, bit for bit (signed zeros, NaN payloads, infinities), as gemm.ts `transpose`
 * places it, and nothing else in the arena is written; arrays outside an arena are left to JavaScript.
 */
import { SplitMix64 } from '@llmcp/format';
import { matrix } from '../reference/matrix.ts';
import { describe, expect, it } from 'vitest';
import { gemmCounters } from '../internal/gemm-counters.ts';
import { transpose } from './gemm.ts';
import { KERNEL_ARENA_DATA_BYTES, openKernelArena } from './kernel-arena.ts';
import { wasmTranspose } from './wasm-transpose.ts';

const SENTINEL = -1234.5;
const bitsAt = (a: Float64Array, i: number): bigint => new BigUint64Array(a.buffer, a.byteOffset + 8 * i, 1)[0] as bigint;

describe('the WebAssembly transpose', () => {
  const arena = openKernelArena(2 * 40 * 70 + 256)!;

  it('puts every value where the JavaScript transpose does, bit for bit, for generated shapes, strides and offsets, and writes nothing else', () => {
    const rng = new SplitMix64(91n);
    const all = new Float64Array(arena.kernel.memory.buffer, KERNEL_ARENA_DATA_BYTES, arena.capacity);
    const raw = new BigUint64Array(all.buffer, all.byteOffset, all.length);
    const ROWS = [1, 2, 3, 7, 8, 9, 10, 16, 17, 18, 40];
    const COLUMNS = [1, 2, 3, 8, 9, 33, 64];
    for (const R of ROWS) {
      for (const S of COLUMNS) {
        const lds = S + rng.nextBelow(3);
        const ldd = R + rng.nextBelow(3);
        const sOff = rng.nextBelow(4);
        const dOff = rng.nextBelow(4);
        const src = new Float64Array(all.buffer, all.byteOffset + 8 * rng.nextBelow(8), sOff + R * lds);
        const dst = new Float64Array(all.buffer, src.byteOffset + src.byteLength + 8 * rng.nextBelow(8), dOff + S * ldd);
        all.fill(SENTINEL);
        // Any bit pattern, NaN payloads and signed zeros included.
        for (let i = 0; i < src.length; i++) new BigUint64Array(src.buffer, src.byteOffset + 8 * i, 1)[0] = rng.nextU64();
        const before = raw.slice();
        const expected = new Float64Array(dst.length).fill(SENTINEL);
        transpose(matrix(expected, S, R, ldd, dOff), matrix(src.slice(), R, S, lds, sOff));
        const counted = gemmCounters.transposedInPlace;
        expect(wasmTranspose(dst, dOff, ldd, src, sOff, lds, R, S)).toBe(true);
        expect(gemmCounters.transposedInPlace - counted).toBe(R * S);
        const first = (dst.byteOffset - all.byteOffset) / 8;
        for (let i = 0; i < all.length; i++) {
          const inDst = i >= first && i < first + dst.length;
          const want = inDst ? bitsAt(expected, i - first) : (before[i] as bigint);
          if (raw[i] !== want) expect.fail(`R ${R}, S ${S}, lds ${lds}, ldd ${ldd}: element ${i} of the arena${inDst ? ` (dst[${i - first}])` : ' (outside dst)'} is ${raw[i]!.toString(16)}, expected ${want.toString(16)}`);
        }
      }
    }
  });

  it('leaves arrays outside one kernel arena to JavaScript', () => {
    const inArena = new Float64Array(arena.kernel.memory.buffer, KERNEL_ARENA_DATA_BYTES, 16);
    expect(wasmTranspose(new Float64Array(16), 0, 4, inArena, 0, 4, 4, 4)).toBe(false);
    expect(wasmTranspose(new Float64Array(16), 0, 4, new Float64Array(16), 0, 4, 4, 4)).toBe(false);
  });
});
