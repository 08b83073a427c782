/** Growable typed arrays for the hot loops (no per-element allocation). */

/** Returns `array` or a copy with at least `needed` elements (capacity doubles). */
export function ensureInt32(array: Int32Array<ArrayBuffer>, needed: number): Int32Array<ArrayBuffer> {
  if (needed <= array.length) return array;
  let capacity = Math.max(16, array.length);
  while (capacity < needed) capacity *= 2;
  const grown = new Int32Array(capacity);
  grown.set(array);
  return grown;
}
