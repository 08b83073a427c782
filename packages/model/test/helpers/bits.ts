/**
 * Bit-pattern helpers for golden-vector tests: f64 values in the vectors are
 * 16-hex-digit IEEE-754 patterns, most significant first.
 */
import { vectorJson } from '../../../../tools/fixtures.ts';

const view = new DataView(new ArrayBuffer(8));

/** The f64 whose bit pattern is `hex`. */
export function f64(hex: string): number {
  view.setBigUint64(0, BigInt(`0x${hex}`));
  return view.getFloat64(0);
}

/** The 16-hex-digit bit pattern of `x`. */
export function bits(x: number): string {
  view.setFloat64(0, x);
  return view.getBigUint64(0).toString(16).padStart(16, '0');
}

/** Decodes a list of bit patterns. */
export function f64s(hexes: readonly string[]): Float64Array {
  return Float64Array.from(hexes, f64);
}

/**
 * The first bit mismatch between `actual` and the expected patterns, as a
 * message naming the tensor, the index and both patterns; null when every bit
 * agrees (lengths included).
 */
export function firstMismatch(name: string, actual: ArrayLike<number>, expected: readonly string[]): string | null {
  if (actual.length !== expected.length) return `${name}: expected ${expected.length} values, found ${actual.length}`;
  for (let i = 0; i < expected.length; i++) {
    const a = bits(actual[i] as number);
    if (a !== expected[i]) {
      return `${name}[${i}]: expected ${expected[i]} (${f64(expected[i] as string)}), found ${a} (${actual[i]})`;
    }
  }
  return null;
}

/** Reads a golden vector from the one fixture home (SHA-256 checked). */
export const fixture: <T>(name: string) => T = vectorJson;
