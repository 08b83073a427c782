/**
 * The contract check of a batch kernel (wasm-exp.ts, wasm-ln.ts, the native
 * exp): decided lanes equal the scalar function bit for bit, undecided lanes
 * are reported once each, in increasing order, with the argument left in their
 * output slot.
 */
import { expect } from 'vitest';
import type { ExpBatchKernel } from '../../src/kernels/exp-batch.ts';
import { bits } from './bits.ts';

/**
 * Runs `kernel` on xs (separate output) and checks it against `reference` element by element.
 * @param kernel - the batch kernel.
 * @param reference - the scalar function it must reproduce (exp or ln).
 * @param xs - the arguments.
 * @returns the undecided indices.
 */
export function checkBatchKernel(kernel: ExpBatchKernel, reference: (x: number) => number, xs: Float64Array): Int32Array {
  const n = xs.length;
  const out = new Float64Array(n).fill(12345.678);
  const und = new Int32Array(n).fill(-7);
  const count = kernel(out, 0, xs, 0, n, und);
  expect(count).toBeGreaterThanOrEqual(0);
  expect(count).toBeLessThanOrEqual(n);
  const undecided = und.slice(0, count);
  const isUndecided = new Uint8Array(n);
  for (let t = 0; t < count; t++) {
    const i = undecided[t] as number;
    expect(i >= 0 && i < n, `undecided index ${i} of ${n}`).toBe(true);
    if (t > 0) expect(i, 'undecided indices increase').toBeGreaterThan(undecided[t - 1] as number);
    isUndecided[i] = 1;
  }
  const mismatches: string[] = [];
  for (let i = 0; i < n; i++) {
    const x = xs[i] as number;
    if (isUndecided[i] === 1) {
      // left as the argument, for the caller's scalar call
      if (bits(out[i] as number) !== bits(x)) mismatches.push(`undecided ${i}: x ${bits(x)} out ${bits(out[i] as number)}`);
    } else if (bits(out[i] as number) !== bits(reference(x))) {
      mismatches.push(`x ${bits(x)} (${x}): kernel ${bits(out[i] as number)} reference ${bits(reference(x))}`);
    }
    if (mismatches.length > 10) break;
  }
  expect(mismatches).toEqual([]);
  return undecided;
}
