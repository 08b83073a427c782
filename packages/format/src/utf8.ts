/**
 * UTF-8 text and the byte-wise name order of LLMCP35 v1 (../SPEC.md §2, §4, §7).
 */

const DECODER = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const ENCODER = new TextEncoder();
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Strict UTF-8 decode (no replacement characters, a leading BOM is kept).
 * @param bytes - the encoded text.
 * @returns the string, or `undefined` when `bytes` is not valid UTF-8.
 */
export function decodeUtf8Strict(bytes: Uint8Array): string | undefined {
  try {
    return DECODER.decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * UTF-8 encode a string that has no lone surrogates.
 * @param text - the string.
 * @returns the bytes, or `undefined` when `text` holds a lone surrogate (not encodable losslessly).
 */
export function encodeUtf8Strict(text: string): Uint8Array | undefined {
  if (LONE_SURROGATE.test(text)) return undefined;
  return ENCODER.encode(text);
}

/**
 * Compares two strings by their UTF-8 bytes (equivalently, by Unicode code
 * point), the order the format sorts names in. This differs from the default
 * UTF-16 comparison (`<`, `Array.prototype.sort`) for characters outside the
 * Basic Multilingual Plane: `"\uFFFD"` sorts before `"\u{1F600}"` here.
 *
 * @param a - first string.
 * @param b - second string.
 * @returns negative, zero or positive like a sort comparator.
 * @example
 * ```ts
 * ['\u{1F600}', '\uFFFD'].sort(compareByteWise); // ['\uFFFD', '\u{1F600}']
 * ```
 */
export function compareByteWise(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const ca = a.codePointAt(i) as number;
    const cb = b.codePointAt(j) as number;
    if (ca !== cb) return ca < cb ? -1 : 1;
    i += ca > 0xffff ? 2 : 1;
    j += cb > 0xffff ? 2 : 1;
  }
  return a.length - i === 0 ? (b.length - j === 0 ? 0 : -1) : 1;
}

/**
 * Returns a sorted copy of `names` in ascending UTF-8 byte order (../SPEC.md §4,
 * §5.1): the order of optimizer records and of parameter-group lists.
 *
 * @param names - names in any order.
 * @returns a new, sorted array.
 * @example
 * ```ts
 * sortByteWise(['blocks.2.x', 'blocks.10.x']); // ['blocks.10.x', 'blocks.2.x']
 * ```
 */
export function sortByteWise(names: readonly string[]): string[] {
  return [...names].sort(compareByteWise);
}
