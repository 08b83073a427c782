/**
 * A WebAssembly SIMD batch natural logarithm, bit-identical to the
 * deterministic ln (../math/ln.ts), the companion of wasm-exp.ts (same
 * contract, same memory scheme: wasm-assembler.ts `emitPairLoop`,
 * `runElementwise`).
 *
 * Each f64x2 lane runs ln.ts's fast path operation by operation, in the same
 * order and with the same constants and table (taken from ln.ts at
 * instantiation): separate IEEE `f64x2.mul`, `f64x2.add` and `f64x2.sub`
 * (no fused multiply-add). The reduction reads the high word from the bits
 * (i64 lanes shifted by 32), z = x·2^-eb is formed by subtracting eb from the
 * exponent field (the same double: the product is exact and normal), and e as
 * a double by the 1.5·2^52 shifter. A lane is decided when x is a positive
 * normal finite double (ln.ts's fast path without its subnormal scaling) and
 * the rounding test passes; every other lane (NaN, x ≤ 0, +Infinity,
 * subnormal x, rounding test failed) is left to the caller: its index is
 * reported and its output slot holds the argument unchanged.
 */
import { lnFastPathConstants } from '../math/ln.ts';
import { Code, EW_DATA_OFF, emitPairLoop, elementwiseModuleBytes, instantiateElementwise, runElementwise, slotValues, type ElementwiseKernel } from './wasm-assembler.ts';

/** ln.ts's table TBL (768 f64: c_i, -ln c_i hi, lo), then the splatted constants, in bytes. */
const TBL_OFF = EW_DATA_OFF;
const C_OFF = TBL_OFF + 768 * 8;

/** Constant slots (index into the constant region), written by {@link constantValues}. */
const K = {
  SPLITTER: 0,
  ONE: 1,
  TWO: 2,
  HALF: 3,
  P3: 4,
  P4: 5,
  P5: 6,
  P6: 7,
  P7: 8,
  P8: 9,
  P9: 10,
  LN2_HI: 11,
  LN2_LO: 12,
  ERR_REL: 13,
  /** 2^-1022: x ≥ it ⟺ high word ≥ 0x00100000 (for x > 0). */
  MIN_NORMAL: 14,
  INF: 15,
  /** 1.5·2^52: bits(SHIFTER) + e is the double SHIFTER + e. */
  SHIFTER: 16,
  COUNT: 17,
} as const;

function constantValues(): Float64Array {
  return slotValues(K, { ...lnFastPathConstants(), ONE: 1, TWO: 2, HALF: 0.5, MIN_NORMAL: 2.2250738585072014e-308, INF: Infinity, SHIFTER: 6755399441055744 });
}

/** Byte lanes of `i8x16.shuffle` taking lane 0 of each operand, and lane 1 of each. */
const LOW_LANES = [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23];
const HIGH_LANES = [8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31];

/** ln(n) → count over the argument region; see `emitPairLoop`. */
function lnModuleBytes(): Uint8Array {
  const { OFF } = lnFastPathConstants();
  // param n = 0; i32 locals
  const i = 1, p = 2, cnt = 3, bm = 4, ta = 5, tb = 6;
  const I32_LOCALS = 6;
  // v128 locals: the constants, then the per-pair values (names as in ln.ts)
  const c = (k: number): number => 7 + k;
  const v0 = 7 + K.COUNT;
  const names = ['x', 'off', 'tmp', 'eb', 'z', 'e', 'cv', 'lch', 'llo', 'g', 'z1', 'z2', 'a', 'b', 'rh', 'bv', 'rl', 'g2', 'r1', 'r2', 'sh', 'sl', 'hh', 'hl', 'r4', 'q', 'eh', 's1', 't1', 's2', 't2', 's3', 't3', 'lo', 'y', 'ok', 'va', 'vb'] as const;
  const L = Object.fromEntries(names.map((nm, t) => [nm, v0 + t])) as Record<(typeof names)[number], number>;
  const { x, off, tmp, eb, z, e: ef, cv, lch, llo, g, z1, z2, a, b, rh, bv, rl, g2, r1, r2, sh, sl, hh, hl, r4, q, eh, s1, t1, s2, t2, s3, t3, lo, y, ok, va, vb } = L;
  const V128_LOCALS = K.COUNT + names.length;

  const e = new Code();
  for (let k = 0; k < K.COUNT; k++) e.i32(C_OFF + 8 * k).v128Load64Splat().set(c(k));
  e.i64(OFF).i64x2Splat().set(off);
  emitPairLoop(e, { i, p, cnt, bm, x, res: y, ok }, () => {
    // hx = high word; tmp = hx - OFF; eb = tmp >> 20
    e.get(x).i32(32).i64x2ShrS().get(off).i64x2Sub().tee(tmp);
    e.i32(20).i64x2ShrS().set(eb);
    // z = x·2^-eb (exponent field minus eb), e = eb as a double
    e.get(x).get(eb).i32(52).i64x2Shl().i64x2Sub().set(z);
    e.get(eb).get(c(K.SHIFTER)).i64x2Add().get(c(K.SHIFTER)).vSub().set(ef);
    // table: TBL[3i..3i+2] at TBL_OFF + 24·i, i = (tmp >> 12) & 255, for both lanes
    e.get(tmp).i32x4ExtractLane(0).i32(12).shrS().i32(255).and().i32(24).mul().i32(TBL_OFF).add().set(ta);
    e.get(tmp).i32x4ExtractLane(2).i32(12).shrS().i32(255).and().i32(24).mul().i32(TBL_OFF).add().set(tb);
    e.get(ta).v128Load().set(va);
    e.get(tb).v128Load().set(vb);
    e.get(va).get(vb).shuffle(LOW_LANES).set(cv);
    e.get(va).get(vb).shuffle(HIGH_LANES).set(lch);
    e.get(ta).f64Load(16).splat().get(tb).f64Load(16).f64x2ReplaceLane(1).set(llo);
    // g = z·SPLITTER; z1 = g - (g - z); z2 = z - z1
    e.get(z).get(c(K.SPLITTER)).vMul().set(g);
    e.get(g).get(g).get(z).vSub().vSub().set(z1);
    e.get(z).get(z1).vSub().set(z2);
    // a = z1·c - 1; b = z2·c; rh = a + b; bv = rh - a; rl = a - (rh - bv) + (b - bv)
    e.get(z1).get(cv).vMul().get(c(K.ONE)).vSub().set(a);
    e.get(z2).get(cv).vMul().set(b);
    e.get(a).get(b).vAdd().set(rh);
    e.get(rh).get(a).vSub().set(bv);
    e.get(a).get(rh).get(bv).vSub().vSub().get(b).get(bv).vSub().vAdd().set(rl);
    // g2 = rh·SPLITTER; r1 = g2 - (g2 - rh); r2 = rh - r1
    e.get(rh).get(c(K.SPLITTER)).vMul().set(g2);
    e.get(g2).get(g2).get(rh).vSub().vSub().set(r1);
    e.get(rh).get(r1).vSub().set(r2);
    // sh = rh·rh; sl = r1·r1 - sh + 2·r1·r2 + r2·r2
    e.get(rh).get(rh).vMul().set(sh);
    e.get(r1).get(r1).vMul().get(sh).vSub();
    e.get(c(K.TWO)).get(r1).vMul().get(r2).vMul().vAdd();
    e.get(r2).get(r2).vMul().vAdd().set(sl);
    // hh = 0.5·sh; hl = 0.5·sl + rh·rl
    e.get(c(K.HALF)).get(sh).vMul().set(hh);
    e.get(c(K.HALF)).get(sl).vMul().get(rh).get(rl).vMul().vAdd().set(hl);
    // r4 = sh·sh; q = sh·rh·(P3 + (rh·P4 + (sh·(P5 + rh·P6) + r4·(P7 + rh·P8 + sh·P9))))
    e.get(sh).get(sh).vMul().set(r4);
    e.get(sh).get(rh).vMul();
    e.get(c(K.P3));
    e.get(rh).get(c(K.P4)).vMul();
    e.get(sh).get(c(K.P5)).get(rh).get(c(K.P6)).vMul().vAdd().vMul();
    e.get(r4).get(c(K.P7)).get(rh).get(c(K.P8)).vMul().vAdd().get(sh).get(c(K.P9)).vMul().vAdd().vMul();
    e.vAdd().vAdd().vAdd().vMul().set(q);
    // eh = e·LN2_HI; s1 = eh + lch; t1 = eh - s1 + lch; s2 = s1 + rh; t2 = s1 - s2 + rh; s3 = s2 - hh; t3 = s2 - s3 - hh
    e.get(ef).get(c(K.LN2_HI)).vMul().set(eh);
    e.get(eh).get(lch).vAdd().set(s1);
    e.get(eh).get(s1).vSub().get(lch).vAdd().set(t1);
    e.get(s1).get(rh).vAdd().set(s2);
    e.get(s1).get(s2).vSub().get(rh).vAdd().set(t2);
    e.get(s2).get(hh).vSub().set(s3);
    e.get(s2).get(s3).vSub().get(hh).vSub().set(t3);
    // lo = t1 + t2 + t3 + (e·LN2_LO + TBL[i3 + 2]) + (rl - hl) + q
    e.get(t1).get(t2).vAdd().get(t3).vAdd();
    e.get(ef).get(c(K.LN2_LO)).vMul().get(llo).vAdd().vAdd();
    e.get(rl).get(hl).vSub().vAdd();
    e.get(q).vAdd().set(lo);
    // err = ERR_REL·|s3|; y = s3 + (lo - err); decided iff y == s3 + (lo + err) and x positive, normal, finite
    e.get(c(K.ERR_REL)).get(s3).vAbs().vMul().set(a); // a is free again: err
    e.get(s3).get(lo).get(a).vSub().vAdd().tee(y);
    e.get(s3).get(lo).get(a).vAdd().vAdd().vEq();
    e.get(x).get(c(K.MIN_NORMAL)).vGe().vAnd();
    e.get(x).get(c(K.INF)).vLt().vAnd().set(ok);
  });
  return elementwiseModuleBytes('ln', I32_LOCALS, V128_LOCALS, e);
}

/** This thread's instance: undefined before the first use, null when unavailable. */
let kernel: ElementwiseKernel | null | undefined;

function getKernel(): ElementwiseKernel | null {
  if (kernel === undefined) {
    kernel = instantiateElementwise(lnModuleBytes(), 'ln', (f64) => {
      f64.set(lnFastPathConstants().TBL, TBL_OFF / 8);
      f64.set(constantValues(), C_OFF / 8);
    });
  }
  return kernel;
}

/**
 * Whether the WebAssembly SIMD ln kernel runs here (instantiates it on first
 * use; false without WebAssembly SIMD, then use ln() in a loop).
 *
 * @returns true when {@link wasmLnInto} decides elements itself.
 */
export function wasmLnAvailable(): boolean {
  return getKernel() !== null;
}

/**
 * Batch ln through the WebAssembly SIMD kernel: for each i < n whose result
 * ln.ts's fast path decides on a positive normal finite argument,
 * `out[outOff + i]` receives exactly `ln(x[xOff + i])` (the same bits). Every
 * other i (NaN, x ≤ 0, +Infinity, subnormal x, rounding test failed) is
 * listed, in increasing order, in `undecided[0 … count)`, and
 * `out[outOff + i]` receives `x[xOff + i]` unchanged; the caller finishes
 * those with ln(). `out` and `x` may be the same array at the same offset.
 * Without WebAssembly SIMD every index is undecided and `out` is not written.
 *
 * @param out - results.
 * @param outOff - first result index.
 * @param x - arguments.
 * @param xOff - first argument index.
 * @param n - number of elements.
 * @param undecided - receives the undecided indices (relative to the offsets); room for n.
 * @returns the number of undecided indices.
 */
export function wasmLnInto(out: Float64Array, outOff: number, x: Float64Array, xOff: number, n: number, undecided: Int32Array): number {
  return runElementwise(getKernel(), out, outOff, x, xOff, n, undecided);
}
