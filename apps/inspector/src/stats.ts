/**
 * Per-tensor statistics read straight from a record's bytes (so they work
 * for damaged files too): min, max, mean, RMS, zeros, non-finite values and
 * a small histogram of the finite values.
 */

/** Statistics of one f64 record. */
export interface TensorStats {
  readonly count: number;
  readonly min: number;
  readonly max: number;
  readonly mean: number;
  readonly rms: number;
  /** Values equal to ±0. */
  readonly zeros: number;
  /** NaN or ±∞. */
  readonly nonFinite: number;
  /** Counts of finite values in `bins` equal-width bins over [min, max]. */
  readonly histogram: readonly number[];
}

/** Number of histogram bins. */
export const HISTOGRAM_BINS = 24;

/**
 * @param bytes - the file.
 * @param offset - first byte of the record.
 * @param count - number of f64 values.
 * @returns min, max, mean, RMS, zero and non-finite counts and a histogram of the finite values.
 */
export function f64Stats(bytes: Uint8Array, offset: number, count: number): TensorStats {
  const view = new DataView(bytes.buffer, bytes.byteOffset + offset, count * 8);
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  let sumSquares = 0;
  let finite = 0;
  let zeros = 0;
  let nonFinite = 0;
  for (let i = 0; i < count; i++) {
    const x = view.getFloat64(8 * i, true);
    if (!Number.isFinite(x)) {
      nonFinite += 1;
      continue;
    }
    if (x === 0) zeros += 1;
    if (x < min) min = x;
    if (x > max) max = x;
    sum += x;
    sumSquares += x * x;
    finite += 1;
  }
  const histogram = new Array<number>(HISTOGRAM_BINS).fill(0);
  if (finite > 0) {
    const width = max - min;
    for (let i = 0; i < count; i++) {
      const x = view.getFloat64(8 * i, true);
      if (!Number.isFinite(x)) continue;
      const bin = width === 0 ? Math.floor(HISTOGRAM_BINS / 2) : Math.min(HISTOGRAM_BINS - 1, Math.floor(((x - min) / width) * HISTOGRAM_BINS));
      histogram[bin] = (histogram[bin] ?? 0) + 1;
    }
  }
  return {
    count,
    min: finite > 0 ? min : Number.NaN,
    max: finite > 0 ? max : Number.NaN,
    mean: finite > 0 ? sum / finite : Number.NaN,
    rms: finite > 0 ? Math.sqrt(sumSquares / finite) : Number.NaN,
    zeros,
    nonFinite,
    histogram,
  };
}
