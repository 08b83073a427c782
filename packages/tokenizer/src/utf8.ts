/**
 * Strict UTF-8 (../../../docs/spec/tokenizer-and-data.md §3.5 "text view", §7 items 1 and 12).
 *
 * The validator follows the Unicode well-formedness table (no overlongs, no
 * surrogates U+D800–U+DFFF, nothing above U+10FFFF, no truncated sequences),
 * which is also what the reference accepts, and reports the length of the
 * longest valid prefix, as the reference does.
 */
import { TOKENIZER_ERROR_CODES, TokenizerError } from './errors.ts';

/**
 * The length of the longest valid UTF-8 prefix of `bytes`.
 *
 * @param bytes - any bytes.
 * @returns `bytes.length` when all of it is valid UTF-8, else the offset of
 *   the first byte of the first ill-formed sequence.
 * @example
 * ```ts
 * utf8ValidUpTo(new Uint8Array([0x61, 0xff])); // 1
 * ```
 */
export function utf8ValidUpTo(bytes: Uint8Array): number {
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const b0 = bytes[i] as number;
    if (b0 < 0x80) {
      i += 1;
      continue;
    }
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (b0 >= 0xc2 && b0 <= 0xdf) need = 1;
    else if (b0 >= 0xe0 && b0 <= 0xef) {
      need = 2;
      if (b0 === 0xe0) lo = 0xa0;
      else if (b0 === 0xed) hi = 0x9f;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
      need = 3;
      if (b0 === 0xf0) lo = 0x90;
      else if (b0 === 0xf4) hi = 0x8f;
    } else return i;
    if (i + 1 >= n) return i;
    const b1 = bytes[i + 1] as number;
    if (b1 < lo || b1 > hi) return i;
    for (let k = 2; k <= need; k++) {
      if (i + k >= n) return i;
      const b = bytes[i + k] as number;
      if (b < 0x80 || b > 0xbf) return i;
    }
    i += need + 1;
  }
  return n;
}

const STRICT_DECODER = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Decodes strictly: a leading U+FEFF is kept as text, and ill-formed bytes are
 * an error (never replaced by U+FFFD).
 *
 * @param bytes - UTF-8 bytes.
 * @returns the text.
 * @throws TokenizerError `TOKENIZER_INVALID_UTF8` with `offset` = the valid prefix length.
 */
export function decodeUtf8Strict(bytes: Uint8Array): string {
  const valid = utf8ValidUpTo(bytes);
  if (valid !== bytes.length) {
    throw new TokenizerError(
      TOKENIZER_ERROR_CODES.TOKENIZER_INVALID_UTF8,
      `decoded bytes are not valid UTF-8 at byte ${valid} (of ${bytes.length}); expected a well-formed sequence, found byte 0x${(bytes[valid] as number).toString(16).padStart(2, '0')}`,
      { offset: valid },
    );
  }
  return STRICT_DECODER.decode(bytes);
}

const ENCODER = new TextEncoder();

/**
 * UTF-8 bytes of `input`, or `input` itself when it already is bytes.
 * @param input - text or bytes.
 * @returns the bytes.
 * @throws TypeError when a string holds an unpaired surrogate (it has no UTF-8 encoding).
 */
export function toUtf8Bytes(input: Uint8Array | string): Uint8Array {
  if (typeof input !== 'string') return input;
  if (!isWellFormedString(input)) {
    throw new TypeError('text contains an unpaired UTF-16 surrogate; it has no exact UTF-8 encoding (TextEncoder would substitute U+FFFD)');
  }
  return ENCODER.encode(input);
}

/**
 * Whether a string has no unpaired surrogate code units.
 * @param text - any string.
 * @returns true when every surrogate is part of a pair.
 */
export function isWellFormedString(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      if (d >= 0xdc00 && d <= 0xdfff) i += 1;
      else return false;
    } else if (c >= 0xdc00 && c <= 0xdfff) return false;
  }
  return true;
}
