import { expect } from 'vitest';
import { isTokenizerError, type TokenizerError } from '../src/errors.ts';

/** Runs `fn`, expects it to throw a TokenizerError, and returns it. */
export function tokenizerErrorOf(fn: () => unknown): TokenizerError {
  try {
    fn();
  } catch (e) {
    expect(isTokenizerError(e), `expected a TokenizerError, got ${String(e)}`).toBe(true);
    return e as TokenizerError;
  }
  throw new Error('expected a TokenizerError, but nothing was thrown');
}

export function hexToBytes(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function bytesToHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
