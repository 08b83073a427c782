/**
 * Exact conversions between f64 values and their parts, with no
 * transcendental call: bit views for splitting a double into an integer
 * significand and a power of two, and exact scaling by powers of two.
 *
 * Internal to the math module (../../../../docs/spec/model.md §14).
 */

const SCRATCH = new ArrayBuffer(8);
const F64 = new Float64Array(SCRATCH);
const U32 = new Uint32Array(SCRATCH);
/** Index of the high (sign/exponent) 32-bit word inside an f64 on this host. */
export const HI: number = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;
/** Index of the low 32-bit word inside an f64 on this host. */
export const LO: number = 1 - HI;

/** 2^32. */
const TWO32 = 4294967296;

/**
 * Returns 2^k for an integer k in [-1074, 1023], built from its bit pattern
 * (exact, including subnormal powers).
 */
export function pow2(k: number): number {
  if (k >= -1022) {
    U32[HI] = (k + 1023) << 20;
    U32[LO] = 0;
  } else {
    const bit = k + 1074; // 0 … 51: position of the single significand bit
    if (bit >= 32) {
      U32[HI] = 1 << (bit - 32);
      U32[LO] = 0;
    } else {
      U32[HI] = 0;
      U32[LO] = (1 << bit) >>> 0;
    }
  }
  return F64[0] as number;
}

/**
 * Returns v·2^k exactly, for a positive integer-valued double v < 2^54 and an
 * integer k such that the exact product is representable or overflows (then
 * the result is +Infinity, as IEEE-754 rounding of the exact product is).
 */
export function scaleByPow2(v: number, k: number): number {
  if (k > 1023) return (v * pow2(1023)) * pow2(k - 1023);
  if (k >= -1022) return v * pow2(k);
  // v·2^(k+1074) is an exact integer-valued double (no overflow for k < -1022),
  // and the final product by 2^-1074 is exact because the result is representable.
  return (v * pow2(k + 1074)) * pow2(-1074);
}

/**
 * POW2_TABLE[k + 1074] = 2^k for k = -1074 … 1023 (exact). Hot paths scale by
 * a table load instead of assembling a double from 32-bit words (that store
 * pattern defeats store-to-load forwarding on common CPUs).
 */
export const POW2_TABLE: Float64Array = buildPow2Table();

function buildPow2Table(): Float64Array {
  const t = new Float64Array(2098);
  for (let k = -1074; k <= 1023; k++) t[k + 1074] = pow2(k);
  return t;
}

/** An f64 split as `mant · 2^exp` with an integer significand. */
export interface DecomposedFloat {
  /** Signed integer significand, |mant| < 2^53. */
  readonly mant: bigint;
  /** Power-of-two exponent. */
  readonly exp: number;
}

/** Splits a finite x exactly into `mant · 2^exp` (x = 0 gives mant 0). */
export function decompose(x: number): DecomposedFloat {
  F64[0] = x;
  const hi = U32[HI] as number;
  const lo = U32[LO] as number;
  const biased = (hi >>> 20) & 0x7ff;
  let m = (hi & 0xfffff) * TWO32 + lo; // exact: < 2^52
  let e: number;
  if (biased === 0) {
    e = -1074;
  } else {
    m += 4503599627370496; // implicit bit 2^52, still exact
    e = biased - 1075;
  }
  const big = BigInt(m);
  return { mant: hi >>> 31 === 1 ? -big : big, exp: e };
}

/** The double whose bits are the given high and low words. */
export function fromWords(hi: number, lo: number): number {
  U32[HI] = hi;
  U32[LO] = lo;
  return F64[0] as number;
}
