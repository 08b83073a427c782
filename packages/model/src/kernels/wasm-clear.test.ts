/**
 * The clearable shared array of a threaded decoder's gradients (wasm-clear.ts): for generated lengths — around a
 * page, and on both sides of the size above which it clears with `fill` — every element, whatever it held
 * (signed zeros, NaN, infinities, subnormals), becomes +0.0, and nothing of the memory after the array is written.
 */
import { SplitMix64 } from '@llmcp/format';
import { describe, expect, it } from 'vitest';
import { clearableSharedF64 } from './wasm-clear.ts';

const SPECIALS = [-0, NaN, Infinity, -Infinity, 5e-324, -5e-324, 1e300, -1e-300, 1.5];
const SENTINEL = -1234.5;

describe('clearableSharedF64', () => {
  it('sets every element to +0.0 and nothing after the array, for generated lengths', () => {
    const rng = new SplitMix64(71n);
    const page = 65536 / 8;
    const lengths = [1, 2, 3, page - 1, page, page + 1, (4 << 20) / 8, (4 << 20) / 8 + 1, 3 * page + 5];
    for (let k = 0; k < 6; k++) lengths.push(1 + rng.nextBelow(3 * page));
    for (const n of lengths) {
      const c = clearableSharedF64(n);
      if (c === null) throw new Error('no shared WebAssembly memory here');
      expect(c.array.length).toBe(n);
      expect(c.array.buffer instanceof SharedArrayBuffer).toBe(true);
      const memory = new Float64Array(c.array.buffer);
      memory.fill(SENTINEL, n);
      for (let round = 0; round < 2; round++) {
        for (let i = 0; i < n; i++) c.array[i] = SPECIALS[rng.nextBelow(SPECIALS.length)] as number;
        c.clear();
        const wrong = c.array.findIndex((x) => !Object.is(x, 0));
        expect(wrong, `n = ${n}: element ${wrong} is ${String(c.array[wrong])}`).toBe(-1);
        expect(memory.subarray(n).every((x) => x === SENTINEL), `n = ${n}: the memory after the array`).toBe(true);
      }
    }
  });
});
