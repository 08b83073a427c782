import { expect } from 'vitest';

/** Asserts two byte arrays are identical, naming the first differing offset (fast for large arrays). */
export function expectSameBytes(actual: Uint8Array, expected: Uint8Array, label = 'bytes'): void {
  const n = Math.min(actual.length, expected.length);
  let at = -1;
  for (let i = 0; i < n; i++) {
    if (actual[i] !== expected[i]) {
      at = i;
      break;
    }
  }
  expect(at, `${label}: first difference at offset ${at} (0x${actual[at]?.toString(16)} vs 0x${expected[at]?.toString(16)})`).toBe(-1);
  expect(actual.length, `${label}: length`).toBe(expected.length);
}
