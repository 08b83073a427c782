/**
 * Exact forms of f64 and u64 values and of raw bytes, as the spec, the
 * reference vectors and every llmcp report write them: f64 bit patterns as
 * `0x` + 16 lowercase hex digits (../SPEC.md §2: an f64 is its raw 64-bit
 * pattern, never normalised), u64 values the same way, bytes as hex pairs or
 * as a quoted string. Browser-safe (`DataView` only).
 */
import { bytesOfFloat64, LITTLE_ENDIAN_HOST } from './internal/host-endian.ts';

/** Scratch space for bit conversions (single-threaded; never escapes a call). */
const SCRATCH = new DataView(new ArrayBuffer(8));
const U64_LIMIT = 1n << 64n;
const HEX_PAIRS: readonly string[] = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));

function checkU64(value: bigint, what: string): void {
  if (typeof value !== 'bigint' || value < 0n || value >= U64_LIMIT) throw new RangeError(`${what}: expected a bigint in [0, 2^64), found ${String(value)}`);
}

/**
 * The IEEE-754 bit pattern of an f64.
 *
 * Allocation-free apart from the returned bigint, so it is cheap enough for
 * validation paths (not for per-element loops over tensors).
 *
 * @param value - an f64.
 * @returns its 64 bits as an unsigned bigint (−0 gives `0x8000000000000000n`).
 * @example
 * ```ts
 * f64ToBits(1); // 0x3ff0000000000000n
 * ```
 */
export function f64ToBits(value: number): bigint {
  SCRATCH.setFloat64(0, value, true);
  return SCRATCH.getBigUint64(0, true);
}

/**
 * The f64 with a given bit pattern (the inverse of {@link f64ToBits}).
 *
 * @param bits - 64 bits as an unsigned bigint.
 * @returns the f64 (NaN payloads are whatever the engine keeps).
 * @throws RangeError when `bits` is not in [0, 2^64).
 * @example
 * ```ts
 * Object.is(f64FromBits(0x8000000000000000n), -0); // true
 * ```
 */
export function f64FromBits(bits: bigint): number {
  checkU64(bits, 'f64FromBits');
  SCRATCH.setBigUint64(0, bits, true);
  return SCRATCH.getFloat64(0, true);
}

/**
 * The bit pattern of an f64 as text, the form the reference vectors and all
 * llmcp reports use.
 *
 * @param value - an f64.
 * @returns `0x` + 16 lowercase hex digits.
 * @example
 * ```ts
 * f64BitsHex(0.5); // '0x3fe0000000000000'
 * ```
 */
export function f64BitsHex(value: number): string {
  return `0x${f64ToBits(value).toString(16).padStart(16, '0')}`;
}

/**
 * An f64 as the shortest decimal that reads back to the same value, with the
 * sign of −0 kept visible (`String(-0)` is `'0'`).
 *
 * @param value - an f64.
 * @returns e.g. `0.43046721000000016`, `-0`, `NaN`, `Infinity`.
 * @example
 * ```ts
 * f64Text(-0); // '-0'
 * ```
 */
export function f64Text(value: number): string {
  return Object.is(value, -0) ? '-0' : String(value);
}

/**
 * A u64 (a checksum, an RNG state) as fixed-width hex.
 *
 * @param value - a bigint in [0, 2^64).
 * @returns `0x` + 16 lowercase hex digits.
 * @throws RangeError when `value` is not in [0, 2^64).
 * @example
 * ```ts
 * u64Hex(0x9e3779b97f4a7c38n); // '0x9e3779b97f4a7c38'
 * ```
 */
export function u64Hex(value: bigint): string {
  checkU64(value, 'u64Hex');
  return `0x${value.toString(16).padStart(16, '0')}`;
}

/**
 * Bytes as lowercase hex pairs.
 *
 * @param bytes - the bytes.
 * @param separator - put between pairs (default one space; `''` for a plain hex string).
 * @returns e.g. `4c 4c 4d` (or `4c4c4d`); `''` for no bytes.
 * @example
 * ```ts
 * hexBytes(MAGIC.subarray(0, 3)); // '4c 4c 4d'
 * hexBytes(Uint8Array.of(0xab, 1), ''); // 'ab01'
 * ```
 */
export function hexBytes(bytes: Uint8Array, separator = ' '): string {
  let out = '';
  for (let i = 0; i < bytes.length; i++) out += (i === 0 ? '' : separator) + (HEX_PAIRS[bytes[i] as number] as string);
  return out;
}

/**
 * Bytes as a double-quoted string: printable ASCII as is (`"` and `\` escaped
 * with a backslash), every other byte as `\xNN`. Unambiguous for any bytes,
 * including invalid UTF-8 (tokenizer pieces, BPE spellings).
 *
 * @param bytes - the bytes.
 * @returns the quoted text.
 * @example
 * ```ts
 * quotedBytes(Uint8Array.of(0x41, 0x22, 0x0a)); // '"A\\"\\x0a"'
 * ```
 */
export function quotedBytes(bytes: Uint8Array): string {
  let out = '"';
  for (const b of bytes) {
    if (b === 0x22 || b === 0x5c) out += `\\${String.fromCharCode(b)}`;
    else if (b >= 0x20 && b < 0x7f) out += String.fromCharCode(b);
    else out += `\\x${HEX_PAIRS[b] as string}`;
  }
  return `${out}"`;
}

/**
 * f64 values as little-endian bytes (the payload form of an f64 record,
 * ../SPEC.md §5.3), in a fresh buffer the caller owns.
 *
 * @param values - the values (a `Float64Array` is copied in one block on little-endian hosts).
 * @returns `8 × values.length` bytes.
 * @example
 * ```ts
 * hexBytes(f64Bytes([1])); // '00 00 00 00 00 00 f0 3f'
 * ```
 */
export function f64Bytes(values: ArrayLike<number>): Uint8Array {
  if (values instanceof Float64Array) {
    const bytes = bytesOfFloat64(values);
    return LITTLE_ENDIAN_HOST ? bytes.slice() : bytes; // a view of `values` on little-endian hosts: copy it
  }
  const out = new Uint8Array(8 * values.length);
  const view = new DataView(out.buffer);
  for (let i = 0; i < values.length; i++) view.setFloat64(8 * i, values[i] as number, true);
  return out;
}
