/**
 * Parsers for numeric flags: each rejects anything but the exact form it
 * documents, with a message commander prints as a usage error (exit 2).
 */
import { InvalidArgumentError } from 'commander';

/**
 * @param text - the flag value.
 * @returns a finite number ≥ 0.
 * @throws InvalidArgumentError otherwise.
 */
export function parseNonNegativeNumber(text: string): number {
  const value = /^[+]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(text.trim()) ? Number(text) : Number.NaN;
  if (!Number.isFinite(value) || value < 0) throw new InvalidArgumentError(`expected a finite number ≥ 0, found '${text}'.`);
  return value;
}

/**
 * @param text - the flag value.
 * @returns an integer ≥ 1 (decimal digits only, at most 2^53 − 1).
 * @throws InvalidArgumentError otherwise.
 */
export function parsePositiveInteger(text: string): number {
  const value = /^\d+$/.test(text.trim()) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < 1) throw new InvalidArgumentError(`expected an integer ≥ 1, found '${text}'.`);
  return value;
}

const U64_MAX = (1n << 64n) - 1n;

/**
 * @param text - the flag value: decimal, or hex with `0x`.
 * @returns a u64 as bigint.
 * @throws InvalidArgumentError otherwise.
 */
export function parseU64(text: string): bigint {
  const t = text.trim();
  if (!/^(\d+|0x[0-9a-fA-F]+)$/.test(t)) throw new InvalidArgumentError(`expected an unsigned 64-bit integer (decimal or 0x hex), found '${text}'.`);
  const value = BigInt(t);
  if (value > U64_MAX) throw new InvalidArgumentError(`expected a value ≤ 2^64 − 1, found '${text}'.`);
  return value;
}

/**
 * @param text - comma-separated token ids, e.g. `0,4,2`.
 * @returns the ids.
 * @throws InvalidArgumentError for an empty list or a non-integer entry.
 */
export function parseIdList(text: string): number[] {
  const parts = text.split(',').map((s) => s.trim());
  if (parts.length === 0 || parts.some((p) => !/^\d+$/.test(p) || !Number.isSafeInteger(Number(p)))) {
    throw new InvalidArgumentError(`expected comma-separated token ids like 0,4,2, found '${text}'.`);
  }
  return parts.map(Number);
}
