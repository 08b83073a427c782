/**
 * f64 records are little-endian on disk (../../SPEC.md §5.3) and packed without
 * alignment. On little-endian hosts (all mainstream ones) a record is moved by
 * one bulk byte copy into a fresh, aligned buffer viewed as Float64Array; on
 * big-endian hosts a DataView loop converts element by element.
 */

/** True on little-endian hosts. */
export const LITTLE_ENDIAN_HOST: boolean = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

/**
 * A fresh, aligned Float64Array holding the little-endian f64 values in `bytes`.
 * @param bytes - `8 × n` bytes at any alignment.
 * @returns n values, bit patterns preserved.
 */
export function float64FromBytes(bytes: Uint8Array): Float64Array {
  const out = new Float64Array(bytes.length / 8);
  if (LITTLE_ENDIAN_HOST) {
    new Uint8Array(out.buffer).set(bytes);
  } else {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let i = 0; i < out.length; i++) out[i] = view.getFloat64(8 * i, true);
  }
  return out;
}

/**
 * The little-endian bytes of `data`: a zero-copy view on little-endian hosts.
 * @param data - f64 values.
 * @returns `8 × data.length` bytes.
 */
export function bytesOfFloat64(data: Float64Array): Uint8Array {
  if (LITTLE_ENDIAN_HOST) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const out = new Uint8Array(data.byteLength);
  const view = new DataView(out.buffer);
  for (let i = 0; i < data.length; i++) view.setFloat64(8 * i, data[i] as number, true);
  return out;
}
