/**
 * SwiGLU's forward (swiglu.ts) as one WebAssembly SIMD kernel, assembled at load time (wasm-assembler.ts): per
 * pair of elements the exp argument (`x ≥ 0 ? −x : x`), its exp by exp.ts's fast path (wasm-exp.ts
 * `emitExpPair`: the same operations as the batch exp, bit for bit), then `σ = (x ≥ 0 ? 1 : e) / (1 + e)`,
 * `silu = x·σ`, `prod = silu·up` with separate correctly rounded f64x2 operations — one pass instead of three,
 * with the exp arguments never leaving registers. Elements whose exp the fast path leaves undecided are reported
 * (their outputs are garbage) for the caller to compute with exp() itself.
 *
 * Memory (one 64 KiB page): gate and up in, σ, silu and prod out, {@link WASM_SWIGLU_CHUNK} elements each, the
 * undecided indices, then exp's table and constants.
 */
import { Code, I32, V128, name, section, uleb, type WasmApi, type WasmMemory } from './wasm-assembler.ts';
import { EXP_CONSTANT_BYTES, EXP_PAIR_V128_LOCALS, EXP_TABLE_BYTES, emitExpConstants, emitExpPair, expPairLocals, initExpData } from './wasm-exp.ts';

/** Elements per kernel call. */
export const WASM_SWIGLU_CHUNK = 1024;
const CH = WASM_SWIGLU_CHUNK * 8;
const GATE = 0;
const UP = GATE + CH;
const SIGMA = UP + CH;
const SILU = SIGMA + CH;
const PROD = SILU + CH;
const UND = PROD + CH;
const TABLE = UND + WASM_SWIGLU_CHUNK * 4;
const CONST = TABLE + EXP_TABLE_BYTES;
/** 1.0, after exp's constants. */
const ONE_OFF = CONST + EXP_CONSTANT_BYTES;

function swigluModuleBytes(): Uint8Array {
  const n = 0, i = 1, p = 2, cnt = 3, bm = 4, ta = 5, tb = 6;
  const I32_LOCALS = 6;
  const v0 = 7;
  const { x, res, ok } = expPairLocals(v0);
  const xg = v0 + EXP_PAIR_V128_LOCALS, ge = xg + 1, s = xg + 2, y = xg + 3, one = xg + 4;
  const V128_LOCALS = EXP_PAIR_V128_LOCALS + 5;
  const e = new Code();
  emitExpConstants(e, v0, CONST);
  e.i32(ONE_OFF).v128Load64Splat().set(one);
  e.i32(0).set(cnt);
  e.i32(0).set(i);
  e.i32(0).set(p);
  e.block().loop();
  {
    e.get(i).get(n).geS().brIf(1);
    // x = gate; the exp argument x ≥ 0 ? −x : x (NaN fails the test)
    e.get(p).v128Load(GATE).tee(xg).v128Zero().vGe().set(ge);
    e.get(xg).vNeg().get(xg).get(ge).bitselect().set(x);
    emitExpPair(e, v0, ta, tb, TABLE);
    // σ = (x ≥ 0 ? 1 : e) / (1 + e); silu = x·σ; prod = silu·up
    e.get(one).get(res).get(ge).bitselect().get(one).get(res).vAdd().vDiv().set(s);
    e.get(p).get(s).v128Store(SIGMA);
    e.get(p).get(xg).get(s).vMul().tee(y).v128Store(SILU);
    e.get(p).get(y).get(p).v128Load(UP).vMul().v128Store(PROD);
    // record undecided lanes (rare), as emitPairLoop does
    e.get(ok).i64x2Bitmask().tee(bm).i32(3).ne().if();
    {
      e.get(bm).i32(1).and().i32(0).eq().if();
      e.get(cnt).i32(2).shl().i32(UND).add().get(i).i32Store();
      e.get(cnt).i32(1).add().set(cnt);
      e.end();
      e.get(bm).i32(2).and().i32(0).eq().get(i).i32(1).add().get(n).ltS().and().if();
      e.get(cnt).i32(2).shl().i32(UND).add().get(i).i32(1).add().i32Store();
      e.get(cnt).i32(1).add().set(cnt);
      e.end();
    }
    e.end();
    e.get(i).i32(2).add().set(i);
    e.get(p).i32(16).add().set(p);
    e.br(0);
  }
  e.end().end();
  e.get(cnt);
  e.end();
  return moduleBytes('swiglu', I32_LOCALS, V128_LOCALS, e);
}

/** A module of one exported function `fn` (i32 n → i32) and one exported memory of one page. */
function moduleBytes(fn: string, i32Locals: number, v128Locals: number, e: Code): Uint8Array {
  const locals = [...uleb(2), ...uleb(i32Locals), I32, ...uleb(v128Locals), V128];
  const body = [...locals, ...e.bytes];
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, [1, 0x60, 1, I32, 1, I32]),
    ...section(3, [1, 0]),
    ...section(5, [1, 0x01, 1, 1]),
    ...section(7, [2, ...name(fn), 0x00, 0, ...name('memory'), 0x02, 0]),
    ...section(10, [1, ...uleb(body.length), ...body]),
  ]);
}

/** Backward: elements per call, and the regions (dprod, gate, sigma, silu, up in; dgate, dup, dsilu out). */
const BW_CHUNK = 512;
const BW = { dprod: 0, gate: 1, sigma: 2, silu: 3, up: 4, dgate: 5, dup: 6, dsilu: 7 } as const;
const bw = (r: number): number => r * BW_CHUNK * 8;

/**
 * swiglu(n): dsilu = 0 + u·up, dup = 0 + u·silu, dgate = 0 + dsilu·(σ·(1 + x·(1 − σ))) per lane, for the
 * pairs covering 0 … n−1 (returns 0).
 */
function backwardModuleBytes(): Uint8Array {
  const n = 0, i = 1, p = 2;
  const u = 0 + 3, ds = u + 1, sg = u + 2, zero = u + 3, one = u + 4;
  const e = new Code();
  e.v128Zero().set(zero);
  // f64.const 1.0, splatted
  e.op(0x44, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f).splat().set(one);
  e.i32(0).set(i);
  e.i32(0).set(p);
  e.block().loop();
  {
    e.get(i).get(n).geS().brIf(1);
    e.get(p).v128Load(bw(BW.dprod)).set(u);
    e.get(p).get(zero).get(u).get(p).v128Load(bw(BW.up)).vMul().vAdd().tee(ds).v128Store(bw(BW.dsilu));
    e.get(p).get(zero).get(u).get(p).v128Load(bw(BW.silu)).vMul().vAdd().v128Store(bw(BW.dup));
    e.get(p).v128Load(bw(BW.sigma)).set(sg);
    // local = σ·(1 + x·(1 − σ)); dgate = 0 + ds·local
    e.get(p).get(zero).get(ds);
    e.get(sg).get(one).get(p).v128Load(bw(BW.gate)).get(one).get(sg).vSub().vMul().vAdd().vMul();
    e.vMul().vAdd().v128Store(bw(BW.dgate));
    e.get(i).i32(2).add().set(i);
    e.get(p).i32(16).add().set(p);
    e.br(0);
  }
  e.end().end();
  e.i32(0);
  e.end();
  return moduleBytes('swiglu', 2, 5, e);
}

interface SwigluKernel {
  readonly run: (n: number) => number;
  readonly f64: Float64Array;
  readonly i32: Int32Array;
}

/** This thread's instances: undefined before the first use, null when unavailable. */
let kernel: SwigluKernel | null | undefined;
let backward: SwigluKernel | null | undefined;

function instantiate(bytes: Uint8Array, init: (f64: Float64Array) => void): SwigluKernel | null {
  try {
    const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
    if (api === undefined || !api.validate(bytes)) return null;
    const instance = new api.Instance(new api.Module(bytes), {});
    const buffer = (instance.exports['memory'] as WasmMemory).buffer;
    const f64 = new Float64Array(buffer);
    init(f64);
    return { run: instance.exports['swiglu'] as (n: number) => number, f64, i32: new Int32Array(buffer) };
  } catch {
    return null;
  }
}

function getKernel(): SwigluKernel | null {
  if (kernel === undefined) {
    kernel = instantiate(swigluModuleBytes(), (f64) => {
      initExpData(f64, TABLE, CONST);
      f64[ONE_OFF / 8] = 1.0;
    });
  }
  return kernel;
}

/** Below this many elements a chunk is copied element by element (no subarray views). */
const SMALL = 32;

function copyIn(f64: Float64Array, at: number, a: Float64Array, b: number, m: number): void {
  if (m < SMALL) for (let i = 0; i < m; i++) f64[at + i] = a[b + i] as number;
  else f64.set(a.subarray(b, b + m), at);
}

function copyOut(a: Float64Array, b: number, f64: Float64Array, at: number, m: number): void {
  if (m < SMALL) for (let i = 0; i < m; i++) a[b + i] = f64[at + i] as number;
  else a.set(f64.subarray(at, at + m), b);
}

/**
 * swiglu.ts's forward on elements 0 … n−1 through the kernel, except the indices written ascending to
 * `undecided` (room for n; their exp was undecided and their outputs are not written meaningfully: the caller
 * computes them). Returns their count, or −1 without WebAssembly SIMD (nothing written).
 *
 * @param prod - (n) output `silu · up`.
 * @param silu - (n) output.
 * @param sigma - (n) output sigmoid.
 * @param gate - (n) gate projection.
 * @param up - (n) up projection.
 * @param n - number of elements.
 * @param undecided - receives the undecided indices.
 * @returns their count, or −1.
 */
export function wasmSwigluForward(
  prod: Float64Array,
  silu: Float64Array,
  sigma: Float64Array,
  gate: Float64Array,
  up: Float64Array,
  n: number,
  undecided: Int32Array,
): number {
  const k = getKernel();
  if (k === null) return -1;
  const { f64, i32 } = k;
  let count = 0;
  for (let base = 0; base < n; base += WASM_SWIGLU_CHUNK) {
    const m = Math.min(WASM_SWIGLU_CHUNK, n - base);
    copyIn(f64, GATE / 8, gate, base, m);
    copyIn(f64, UP / 8, up, base, m);
    const c = k.run(m);
    copyOut(sigma, base, f64, SIGMA / 8, m);
    copyOut(silu, base, f64, SILU / 8, m);
    copyOut(prod, base, f64, PROD / 8, m);
    for (let t = 0; t < c; t++) undecided[count++] = base + (i32[UND / 4 + t] as number);
  }
  return count;
}

/**
 * swiglu.ts's backward on elements 0 … n−1 through the kernel (the same operations per element, in f64x2
 * lanes). Returns false without WebAssembly SIMD (nothing written).
 *
 * @param dgate - (n) adjoint of the gate projection (written).
 * @param dup - (n) adjoint of the up projection (written).
 * @param dsilu - (n) adjoint of silu (written).
 * @param dprod - (n) adjoint of the product.
 * @param gate - (n) saved gate projection.
 * @param sigma - (n) saved sigmoid.
 * @param silu - (n) saved silu.
 * @param up - (n) saved up projection.
 * @param n - number of elements.
 * @returns whether the kernel ran.
 */
export function wasmSwigluBackward(
  dgate: Float64Array,
  dup: Float64Array,
  dsilu: Float64Array,
  dprod: Float64Array,
  gate: Float64Array,
  sigma: Float64Array,
  silu: Float64Array,
  up: Float64Array,
  n: number,
): boolean {
  if (backward === undefined) backward = instantiate(backwardModuleBytes(), () => undefined);
  const k = backward;
  if (k === null) return false;
  const f64 = k.f64;
  const at = (r: number): number => r * BW_CHUNK;
  for (let base = 0; base < n; base += BW_CHUNK) {
    const m = Math.min(BW_CHUNK, n - base);
    copyIn(f64, at(BW.dprod), dprod, base, m);
    copyIn(f64, at(BW.gate), gate, base, m);
    copyIn(f64, at(BW.sigma), sigma, base, m);
    copyIn(f64, at(BW.silu), silu, base, m);
    copyIn(f64, at(BW.up), up, base, m);
    k.run(m);
    copyOut(dgate, base, f64, at(BW.dgate), m);
    copyOut(dup, base, f64, at(BW.dup), m);
    copyOut(dsilu, base, f64, at(BW.dsilu), m);
  }
  return true;
}
