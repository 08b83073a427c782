/**
 * Rotary position embedding on adjacent feature pairs of each head
 * (../../../../docs/spec/model.md §9.2; ../../../../docs/spec/backward.md §4.11).
 */
import { cos, pow, sin } from '../math/index.ts';
import { activeNativeKernels } from './native.ts';

/** Below this many elements (T · D) the native call does not pay. */
const NATIVE_MIN = 256;

/**
 * RoPE tables for positions 0 … P−1 and pairs 0 … d/2−1. P is the number of
 * positions built so far (the longest sequence run), not the configuration's
 * maxPositions: each position's row depends only on p, so building rows on
 * demand gives the same values as building all of them up front.
 */
export interface RopeTables {
  /** (d/2) `pow(base, (−2·i) / d)`. */
  readonly inverseFrequencies: Float64Array;
  /** (P, d/2) `cos(p · invFreq_i)`, canonical +0. */
  readonly cosines: Float64Array;
  /** (P, d/2) `sin(p · invFreq_i)`, canonical +0. */
  readonly sines: Float64Array;
}

/**
 * Builds the tables for positions 0 … `positions`−1 (../../../../docs/spec/model.md §9.2): the
 * exponent is `(−2.0 · i) / d`, the angle `p · invFreq_i` (one multiplication).
 *
 * @param positions - P, the positions to cover (0 gives the frequencies only).
 * @param headWidth - d (even).
 * @param base - the RoPE base.
 * @returns the tables.
 */
export function ropeTables(positions: number, headWidth: number, base: number): RopeTables {
  const half = headWidth / 2;
  const inverseFrequencies = new Float64Array(half);
  for (let i = 0; i < half; i++) inverseFrequencies[i] = pow(base, (-2.0 * i) / headWidth);
  return extendRopeTables({ inverseFrequencies, cosines: new Float64Array(0), sines: new Float64Array(0) }, positions);
}

/**
 * The tables grown to cover positions 0 … `positions`−1: the rows already
 * built are copied, only the new rows are computed (the same formula as
 * {@link ropeTables}, so the values do not depend on how the tables grew).
 *
 * @param tables - tables built so far (not modified).
 * @param positions - P, the positions to cover.
 * @returns `tables` itself when it already covers P positions, else new tables.
 */
export function extendRopeTables(tables: RopeTables, positions: number): RopeTables {
  const { inverseFrequencies } = tables;
  const half = inverseFrequencies.length;
  const built = half === 0 ? 0 : tables.cosines.length / half;
  if (positions <= built) return tables;
  const cosines = new Float64Array(positions * half);
  const sines = new Float64Array(positions * half);
  cosines.set(tables.cosines);
  sines.set(tables.sines);
  for (let p = built; p < positions; p++) {
    for (let i = 0; i < half; i++) {
      const angle = p * (inverseFrequencies[i] as number);
      sines[p * half + i] = sin(angle) + 0;
      cosines[p * half + i] = cos(angle) + 0;
    }
  }
  return { inverseFrequencies, cosines, sines };
}

/**
 * Rotates every head's pairs of `src` into `dst` (rows are positions 0 … T−1):
 * `l' = l·c − r·s`, `r' = l·s + r·c`, each canonical +0.
 *
 * @param dst - (T, D) rotated output.
 * @param src - (T, D) input (head h owns features h·d … h·d+d−1).
 * @param tables - RoPE tables.
 * @param T - rows (positions).
 * @param D - width.
 * @param headWidth - d.
 */
export function ropeForward(dst: Float64Array, src: Float64Array, tables: RopeTables, T: number, D: number, headWidth: number): void {
  const half = headWidth / 2;
  const C = tables.cosines;
  const S = tables.sines;
  if (T * D >= NATIVE_MIN && C.length >= T * half && activeNativeKernels()?.rope(dst, src, C, S, T, D, headWidth, 0) === 0) return;
  for (let t = 0; t < T; t++) {
    const row = t * D;
    const tab = t * half;
    for (let h0 = 0; h0 < D; h0 += headWidth) {
      for (let i = 0; i < half; i++) {
        const c = C[tab + i] as number;
        const s = S[tab + i] as number;
        const o = row + h0 + 2 * i;
        const l = src[o] as number;
        const r = src[o + 1] as number;
        dst[o] = l * c - r * s + 0;
        dst[o + 1] = l * s + r * c + 0;
      }
    }
  }
}

/**
 * Rotates the adjoint back by the inverse angle: `gl' = gl·c + gr·s`,
 * `gr' = (−gl)·s + gr·c`, each canonical +0.
 *
 * @param dst - (T, D) adjoint of the unrotated input.
 * @param src - (T, D) adjoint of the rotated output.
 * @param tables - RoPE tables.
 * @param T - rows.
 * @param D - width.
 * @param headWidth - d.
 */
export function ropeBackward(dst: Float64Array, src: Float64Array, tables: RopeTables, T: number, D: number, headWidth: number): void {
  const half = headWidth / 2;
  const C = tables.cosines;
  const S = tables.sines;
  if (T * D >= NATIVE_MIN && C.length >= T * half && activeNativeKernels()?.rope(dst, src, C, S, T, D, headWidth, 1) === 0) return;
  for (let t = 0; t < T; t++) {
    const row = t * D;
    const tab = t * half;
    for (let h0 = 0; h0 < D; h0 += headWidth) {
      for (let i = 0; i < half; i++) {
        const c = C[tab + i] as number;
        const s = S[tab + i] as number;
        const o = row + h0 + 2 * i;
        const gl = src[o] as number;
        const gr = src[o + 1] as number;
        dst[o] = gl * c + gr * s + 0;
        dst[o + 1] = -gl * s + gr * c + 0;
      }
    }
  }
}

/**
 * Rotates one row of `src` at sequence position `position` into `dst` — the
 * row `position` of {@link ropeForward}, with the same operations (the
 * incremental path of a key/value cache).
 *
 * @param dst - (D) rotated output, written from `dOff`.
 * @param dOff - offset of the output row in `dst`.
 * @param src - (D) input row.
 * @param tables - RoPE tables covering `position`.
 * @param position - the row's position in the sequence.
 * @param D - width.
 * @param headWidth - d.
 */
export function ropeForwardRow(dst: Float64Array, dOff: number, src: Float64Array, tables: RopeTables, position: number, D: number, headWidth: number): void {
  const half = headWidth / 2;
  const C = tables.cosines;
  const S = tables.sines;
  const tab = position * half;
  for (let h0 = 0; h0 < D; h0 += headWidth) {
    for (let i = 0; i < half; i++) {
      const c = C[tab + i] as number;
      const s = S[tab + i] as number;
      const o = h0 + 2 * i;
      const l = src[o] as number;
      const r = src[o + 1] as number;
      dst[dOff + o] = l * c - r * s + 0;
      dst[dOff + o + 1] = l * s + r * c + 0;
    }
  }
}
