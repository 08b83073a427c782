/**
 * A WebAssembly SIMD batch exp, bit-identical to the deterministic exp
 * (../math/exp.ts), assembled at load time with the shared mini-assembler
 * (wasm-assembler.ts; no toolchain, no binary blob).
 *
 * Each f64x2 lane runs exp.ts's fast path operation by operation, in the same
 * order and with the same constants and table (taken from exp.ts at
 * instantiation and placed in the module's memory): separate IEEE `f64x2.mul`,
 * `f64x2.add` and `f64x2.sub`, correctly rounded per lane (WebAssembly SIMD
 * has no fused multiply-add, and none is used); k by the same SHIFTER trick
 * (its bits are read from the shifted sum, whose low bits are k); the four
 * table entries per lane by two 16-byte loads and a lane shuffle; 2^E
 * assembled from E's bits. A lane is decided when exp.ts's fast path would
 * return from it with `y · 2^E`: argument in range (implied by the E test, see
 * K_MIN), rounding test passed and
 * -1021 ≤ E ≤ 1023. Every other lane (NaN, ±Infinity, out of range, rounding
 * test failed, E < -1021 (subnormal results), E > 1023) is left to the
 * caller: its index is reported and its output slot holds the argument
 * unchanged, so the caller finishes it with exp() even in place.
 *
 * Data goes through the module's own memory (one 64 KiB page per thread) in
 * chunks of {@link WASM_EXP_CHUNK} elements (wasm-assembler.ts
 * `runElementwise`, shared with wasm-ln.ts).
 */
import { expFastPathConstants } from '../math/exp.ts';
import { Code, EW_CHUNK, EW_DATA_OFF, emitPairLoop, elementwiseModuleBytes, instantiateElementwise, runElementwise, slotValues, type ElementwiseKernel } from './wasm-assembler.ts';

/** Elements per kernel call (the input/output region of the module's memory). */
export const WASM_EXP_CHUNK: number = EW_CHUNK;

/** exp.ts's table T (512 f64), then the splatted constants (one f64 each), in bytes. */
const T_OFF = EW_DATA_OFF;
const C_OFF = T_OFF + 512 * 8;

/**
 * -1021 ≤ E ≤ 1023 ⟺ -1021·128 ≤ k ≤ 1023·128 + 127 (k = 128·E + j, kf exact).
 * This test also stands for exp.ts's range test `x < 709.79 && x > -745.2`:
 * kf = RN(RN(x·INV_L) + SHIFTER) - SHIFTER is non-decreasing in x (every
 * rounding is), kf(-745.2) = -137612 < K_MIN and kf(709.79) = 131073 > K_MAX,
 * and NaN, ±Infinity give kf NaN or ±Infinity, which fail both compares. So
 * every lane passing it passes the range test, and every lane outside the range
 * fails it (the tests check both ends).
 */
const K_MIN = -1021 * 128;
const K_MAX = 1023 * 128 + 127;
/**
 * Constant slots (index into the constant region), written by
 * {@link constantValues}. BIAS holds the i64 bits(SHIFTER) - 1023·128: on
 * decided lanes bits(z) - BIAS = k + 1023·128 ≥ 0, so
 * (bits(z) - BIAS) >>> 7 = E + 1023, the biased exponent of 2^E.
 */
const K = {
  INV_L: 0,
  SHIFTER: 1,
  L1: 2,
  L2: 3,
  L3: 4,
  C3: 5,
  C4: 6,
  C5: 7,
  C6: 8,
  HALF: 9,
  SPLITTER: 10,
  ERR: 11,
  K_MIN: 12,
  K_MAX: 13,
  BIAS: 14,
  COUNT: 15,
} as const;

function constantValues(): Float64Array {
  const c = expFastPathConstants();
  const v = slotValues(K, { ...c, HALF: 0.5, K_MIN, K_MAX, BIAS: 0 }); // BIAS: bits, set here
  const dv = new DataView(v.buffer); // little-endian, as WebAssembly memory
  dv.setFloat64(K.BIAS * 8, c.SHIFTER, true);
  dv.setBigInt64(K.BIAS * 8, dv.getBigInt64(K.BIAS * 8, true) - 1023n * 128n, true);
  return v;
}

/** Byte lanes of `i8x16.shuffle` taking lane 0 of each operand, and lane 1 of each. */
const LOW_LANES = [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23];
const HIGH_LANES = [8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31];

/** v128 locals of {@link emitExpPair}: the splatted constants, then the per-pair values. */
export const EXP_PAIR_V128_LOCALS: number = K.COUNT + 28;
/** Bytes of the constant region {@link initExpData} writes at its `cOff`. */
export const EXP_CONSTANT_BYTES: number = K.COUNT * 8;
/** Bytes of the table {@link initExpData} writes at its `tOff` (16-byte aligned). */
export const EXP_TABLE_BYTES: number = 512 * 8;

/** The v128 locals of {@link emitExpPair}'s argument, result and decided mask. */
export interface ExpPairLocals {
  readonly x: number;
  readonly res: number;
  readonly ok: number;
}

/**
 * The v128 locals from `v0` on that {@link emitExpPair} uses ({@link EXP_PAIR_V128_LOCALS} of them): the
 * argument `x`, the result `res` and the all-ones-per-decided-lane mask `ok` among them.
 */
export function expPairLocals(v0: number): ExpPairLocals {
  const w = v0 + K.COUNT;
  return { x: w, res: w + 27, ok: w + 24 };
}

/** Loads the splatted constants (from `cOff`, see {@link initExpData}) into their locals from `v0` on: once, before the loop. */
export function emitExpConstants(e: Code, v0: number, cOff: number): void {
  for (let k = 0; k < K.COUNT; k++) e.i32(cOff + 8 * k).v128Load64Splat().set(v0 + k);
}

/**
 * exp.ts's fast path on the two lanes of local `x` (see {@link expPairLocals}): sets `res` (exp where decided)
 * and `ok`. `ta`, `tb` are i32 scratch locals, `tOff` the table's address (see {@link initExpData}).
 */
export function emitExpPair(e: Code, v0: number, ta: number, tb: number, tOff: number): void {
  const c = (k: number): number => v0 + k;
  const w = v0 + K.COUNT;
  const [x, z, kf, t1, u, rh, bb, rl, r2, q, th, tl, a1, a2, g, b1, b2, ph, pl, s, low, hi, lo, y, ok, va, vb, res] = Array.from({ length: 28 }, (_, t) => w + t) as [
    number, number, number, number, number, number, number, number, number, number, number, number, number, number,
    number, number, number, number, number, number, number, number, number, number, number, number, number, number,
  ];
  // kf = x·INV_L + SHIFTER - SHIFTER (z keeps the shifted sum: its low 32 bits are k)
  e.get(x).get(c(K.INV_L)).vMul().get(c(K.SHIFTER)).vAdd().tee(z);
  e.get(c(K.SHIFTER)).vSub().set(kf);
  // t1 = x - kf·L1; u = kf·L2; rh = t1 - u; bb = rh - t1
  e.get(x).get(kf).get(c(K.L1)).vMul().vSub().set(t1);
  e.get(kf).get(c(K.L2)).vMul().set(u);
  e.get(t1).get(u).vSub().set(rh);
  e.get(rh).get(t1).vSub().set(bb);
  // rl = (t1 - (rh - bb)) - (u + bb) - kf·L3
  e.get(t1).get(rh).get(bb).vSub().vSub();
  e.get(u).get(bb).vAdd().vSub();
  e.get(kf).get(c(K.L3)).vMul().vSub().set(rl);
  // r2 = rh·rh
  e.get(rh).get(rh).vMul().set(r2);
  // q = r2·(0.5 + (rh·C3 + r2·(C4 + rh·C5 + r2·C6))) + rh·rl
  e.get(r2);
  e.get(c(K.HALF));
  e.get(rh).get(c(K.C3)).vMul();
  e.get(r2);
  e.get(c(K.C4)).get(rh).get(c(K.C5)).vMul().vAdd().get(r2).get(c(K.C6)).vMul().vAdd();
  e.vMul().vAdd().vAdd().vMul();
  e.get(rh).get(rl).vMul().vAdd().set(q);
  // table: T[4j..4j+3] at tOff + 32·j, j = k & 127, for both lanes
  e.get(z).i32x4ExtractLane(0).i32(127).and().i32(5).shl().i32(tOff).add().set(ta);
  e.get(z).i32x4ExtractLane(2).i32(127).and().i32(5).shl().i32(tOff).add().set(tb);
  e.get(ta).v128Load().set(va);
  e.get(tb).v128Load().set(vb);
  e.get(va).get(vb).shuffle(LOW_LANES).set(th);
  e.get(va).get(vb).shuffle(HIGH_LANES).set(tl);
  e.get(ta).v128Load(16).set(va);
  e.get(tb).v128Load(16).set(vb);
  e.get(va).get(vb).shuffle(LOW_LANES).set(a1);
  e.get(va).get(vb).shuffle(HIGH_LANES).set(a2);
  // g = rh·SPLITTER; b1 = g - (g - rh); b2 = rh - b1
  e.get(rh).get(c(K.SPLITTER)).vMul().set(g);
  e.get(g).get(g).get(rh).vSub().vSub().set(b1);
  e.get(rh).get(b1).vSub().set(b2);
  // ph = th·rh; pl = a1·b1 - ph + a1·b2 + a2·b1 + a2·b2
  e.get(th).get(rh).vMul().set(ph);
  e.get(a1).get(b1).vMul().get(ph).vSub();
  e.get(a1).get(b2).vMul().vAdd();
  e.get(a2).get(b1).vMul().vAdd();
  e.get(a2).get(b2).vMul().vAdd().set(pl);
  // s = rl + q; low = pl + (tl + (th·s + tl·rh))
  e.get(rl).get(q).vAdd().set(s);
  e.get(pl).get(tl).get(th).get(s).vMul().get(tl).get(rh).vMul().vAdd().vAdd().vAdd().set(low);
  // hi = th + ph; lo = th - hi + ph + low
  e.get(th).get(ph).vAdd().set(hi);
  e.get(th).get(hi).vSub().get(ph).vAdd().get(low).vAdd().set(lo);
  // y = hi + (lo - ERR); decided iff y == hi + (lo + ERR) and -1021 ≤ E ≤ 1023 (which implies x in range, see K_MIN)
  e.get(hi).get(lo).get(c(K.ERR)).vSub().vAdd().tee(y);
  e.get(hi).get(lo).get(c(K.ERR)).vAdd().vAdd().vEq();
  e.get(kf).get(c(K.K_MIN)).vGe().vAnd();
  e.get(kf).get(c(K.K_MAX)).vLe().vAnd().set(ok);
  // res = y · 2^E, 2^E = bits(((bits(z) - BIAS) >>> 7) << 52) (see BIAS; exact, 2^E is normal)
  e.get(y);
  e.get(z).get(c(K.BIAS)).i64x2Sub().i32(7).i64x2ShrU().i32(52).i64x2Shl();
  e.vMul().set(res);
}

/** Writes exp.ts's table at byte `tOff` and the constants at byte `cOff` of a module's memory (as f64). */
export function initExpData(f64: Float64Array, tOff: number, cOff: number): void {
  f64.set(expFastPathConstants().T, tOff / 8);
  f64.set(constantValues(), cOff / 8);
}

/**
 * exp(n) → count: the first n f64 of the argument region are replaced by
 * their exp where decided (by the argument elsewhere); see `emitPairLoop`.
 */
function expModuleBytes(): Uint8Array {
  // param n = 0; i32 locals
  const i = 1, p = 2, cnt = 3, bm = 4, ta = 5, tb = 6;
  const I32_LOCALS = 6;
  const v0 = 7;
  const { x, res, ok } = expPairLocals(v0);
  const e = new Code();
  emitExpConstants(e, v0, C_OFF);
  emitPairLoop(e, { i, p, cnt, bm, x, res, ok }, () => emitExpPair(e, v0, ta, tb, T_OFF));
  return elementwiseModuleBytes('exp', I32_LOCALS, EXP_PAIR_V128_LOCALS, e);
}

/** This thread's instance: undefined before the first use, null when unavailable. */
let kernel: ElementwiseKernel | null | undefined;

function getKernel(): ElementwiseKernel | null {
  if (kernel === undefined) {
    kernel = instantiateElementwise(expModuleBytes(), 'exp', (f64) => initExpData(f64, T_OFF, C_OFF));
  }
  return kernel;
}

/**
 * Whether the WebAssembly SIMD exp kernel runs here (instantiates it on
 * first use; false without WebAssembly SIMD, then use exp() in a loop).
 *
 * @returns true when {@link wasmExpInto} decides elements itself.
 */
export function wasmExpAvailable(): boolean {
  return getKernel() !== null;
}

/**
 * Batch exp through the WebAssembly SIMD kernel: for each i < n whose result
 * exp.ts's fast path decides, `out[outOff + i]` receives exactly
 * `exp(x[xOff + i])` (the same bits). Every other i (NaN, ±Infinity, outside
 * `x < 709.79 && x > -745.2`, rounding test failed, results below 2^-1021,
 * E > 1023) is listed, in increasing order, in `undecided[0 … count)`, and
 * `out[outOff + i]` receives `x[xOff + i]` unchanged; the caller finishes
 * those with exp(). `out` and `x` may be the same array at the same offset.
 * Without WebAssembly SIMD ({@link wasmExpAvailable} false) every index is
 * undecided and `out` is not written.
 *
 * @param out - results.
 * @param outOff - first result index.
 * @param x - arguments.
 * @param xOff - first argument index.
 * @param n - number of elements.
 * @param undecided - receives the undecided indices (relative to the offsets); room for n.
 * @returns the number of undecided indices.
 */
export function wasmExpInto(out: Float64Array, outOff: number, x: Float64Array, xOff: number, n: number, undecided: Int32Array): number {
  return runElementwise(getKernel(), out, outOff, x, xOff, n, undecided);
}
