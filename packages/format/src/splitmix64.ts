/**
 * SplitMix64, the sampling RNG of LLMCP35 v1 (../SPEC.md §10; ../../../docs/spec/model.md §4.1).
 *
 * Exact unsigned 64-bit arithmetic on two 32-bit halves (no BigInt on the hot
 * path); the state is exposed as a `bigint`.
 */

const MASK64 = (1n << 64n) - 1n;
const TWO_POW_64 = 1n << 64n;
const TWO_POW_NEG_53 = 1 / 9007199254740992;

/**
 * Multiplies the u64 held in `z` as [hi, lo] u32 halves by the u64 (bHi, bLo),
 * modulo 2^64, in place: the product replaces `z`'s halves.
 */
function mul64(z: Uint32Array, bHi: number, bLo: number): void {
  const aHi = z[0] as number;
  const aLo = z[1] as number;
  // Split lo words into 16-bit halves for exact products.
  const a0 = aLo & 0xffff;
  const a1 = aLo >>> 16;
  const b0 = bLo & 0xffff;
  const b1 = bLo >>> 16;
  const p00 = a0 * b0;
  const p01 = a0 * b1;
  const p10 = a1 * b0;
  const p11 = a1 * b1;
  // low 64 bits of aLo*bLo
  const mid = (p00 >>> 16) + (p01 & 0xffff) + (p10 & 0xffff);
  const lo = ((mid & 0xffff) << 16) | (p00 & 0xffff);
  const carry = p11 + (p01 >>> 16) + (p10 >>> 16) + Math.floor(mid / 65536);
  const hi = (carry + Math.imul(aHi, bLo) + Math.imul(aLo, bHi)) >>> 0;
  z[0] = hi >>> 0;
  z[1] = lo >>> 0;
}

const GAMMA_HI = 0x9e3779b9;
const GAMMA_LO = 0x7f4a7c15;
/** γ, the increment of the state at every draw. */
const GAMMA = (BigInt(GAMMA_HI) << 32n) | BigInt(GAMMA_LO);
const M1_HI = 0xbf58476d;
const M1_LO = 0x1ce4e5b9;
const M2_HI = 0x94d049bb;
const M2_LO = 0x133111eb;

/**
 * A SplitMix64 generator. The seed is used directly as the raw state (no
 * pre-mixing); `state` is the raw state before the next draw, exactly what a
 * checkpoint stores.
 *
 * @example
 * ```ts
 * const rng = new SplitMix64(0n);
 * rng.nextU64(); // 0xe220a8397b1dcdafn
 * ```
 */
export class SplitMix64 {
  #hi: number;
  #lo: number;
  readonly #tmp = new Uint32Array(2);

  /**
   * @param state - the raw 64-bit state (any u64; values outside [0, 2^64) are a RangeError).
   * @throws RangeError when `state` is not in [0, 2^64).
   */
  constructor(state: bigint) {
    if (typeof state !== 'bigint' || state < 0n || state > MASK64) {
      throw new RangeError(`SplitMix64 state must be a bigint in [0, 2^64), got ${String(state)}`);
    }
    this.#hi = Number(state >> 32n);
    this.#lo = Number(state & 0xffffffffn);
  }

  /**
   * The raw state before the next draw.
   * @returns the state, a bigint in [0, 2^64).
   */
  get state(): bigint {
    return (BigInt(this.#hi) << 32n) | BigInt(this.#lo);
  }

  /**
   * The raw state `draws` draws after `state` (before it, for a negative
   * count): every draw of any kind adds the odd constant γ = 0x9e3779b97f4a7c15
   * to the state modulo 2^64, so the state is a counter and can be stepped
   * back exactly (SPEC §10).
   *
   * @param state - a raw state in [0, 2^64).
   * @param draws - how many draws to step over (negative: back).
   * @returns the raw state, in [0, 2^64).
   * @throws RangeError when `state` is not in [0, 2^64).
   * @example
   * ```ts
   * const rng = new SplitMix64(5n);
   * rng.nextBelow(10);
   * SplitMix64.advance(rng.state, -1n); // 5n
   * ```
   */
  static advance(state: bigint, draws: bigint): bigint {
    if (typeof state !== 'bigint' || state < 0n || state > MASK64) throw new RangeError(`SplitMix64 state must be a bigint in [0, 2^64), got ${String(state)}`);
    return (((state + draws * GAMMA) % TWO_POW_64) + TWO_POW_64) % TWO_POW_64;
  }

  /**
   * An independent generator with the same state.
   * @returns the copy.
   */
  clone(): SplitMix64 {
    return new SplitMix64(this.state);
  }

  /** Advances and writes the next output as (hi, lo) halves into `out`. */
  #next(out: Uint32Array): void {
    // state += gamma
    const lo = this.#lo + GAMMA_LO;
    const carry = lo > 0xffffffff ? 1 : 0;
    this.#lo = lo >>> 0;
    this.#hi = (this.#hi + GAMMA_HI + carry) >>> 0;
    let zHi = this.#hi;
    let zLo = this.#lo;
    // z = (z ^ (z >> 30)) * M1
    let sHi = zHi >>> 30;
    let sLo = ((zLo >>> 30) | (zHi << 2)) >>> 0;
    out[0] = (zHi ^ sHi) >>> 0;
    out[1] = (zLo ^ sLo) >>> 0;
    mul64(out, M1_HI, M1_LO);
    zHi = out[0] as number;
    zLo = out[1] as number;
    // z = (z ^ (z >> 27)) * M2
    sHi = zHi >>> 27;
    sLo = ((zLo >>> 27) | (zHi << 5)) >>> 0;
    out[0] = (zHi ^ sHi) >>> 0;
    out[1] = (zLo ^ sLo) >>> 0;
    mul64(out, M2_HI, M2_LO);
    zHi = out[0] as number;
    zLo = out[1] as number;
    // z ^ (z >> 31)
    sHi = zHi >>> 31;
    sLo = ((zLo >>> 31) | (zHi << 1)) >>> 0;
    out[0] = (zHi ^ sHi) >>> 0;
    out[1] = (zLo ^ sLo) >>> 0;
  }

  /**
   * The next raw 64-bit output.
   * @returns a bigint in [0, 2^64).
   */
  nextU64(): bigint {
    this.#next(this.#tmp);
    return (BigInt(this.#tmp[0] as number) << 32n) | BigInt(this.#tmp[1] as number);
  }

  /**
   * The next unit draw: the top 53 bits of one output times 2^-53 (exact).
   * @returns a number in [0, 1).
   */
  nextUnit(): number {
    this.#next(this.#tmp);
    const hi = this.#tmp[0] as number;
    const lo = this.#tmp[1] as number;
    // (z >> 11) = hi * 2^21 + (lo >>> 11), exact below 2^53.
    return (hi * 2097152 + (lo >>> 11)) * TWO_POW_NEG_53;
  }

  /**
   * A uniform integer in [0, bound) by rejection (../../../docs/spec/training.md §3.1): the
   * threshold is (2^64 − bound) mod bound; outputs below it are redrawn; the
   * result is `output mod bound`.
   * @param bound - an integer in [1, 2^53].
   * @returns the index.
   * @throws RangeError when `bound` is not a positive safe integer.
   */
  nextBelow(bound: number): number {
    if (!Number.isSafeInteger(bound) || bound < 1) throw new RangeError(`bound must be a positive safe integer, got ${bound}`);
    const b = BigInt(bound);
    const threshold = ((1n << 64n) - b) % b;
    for (;;) {
      const draw = this.nextU64();
      if (draw >= threshold) return Number(draw % b);
    }
  }
}
