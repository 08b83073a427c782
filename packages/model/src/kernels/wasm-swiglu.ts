/**
 * SwiGLU's forward (swiglu.ts) as one WebAssembly SIMD kernel, assembled at load time (wasm-assembler.ts): per
 * pair of elements the exp argument (`x ≥ 0 ? −x : x`), its exp by exp.ts's fast path (wasm-exp.ts
 * `emitExpPair`: the same operations as the batch exp, bit for bit), then `σ = (x ≥ 0 ? 1 : e) / (1 + e)`,
 * `silu = x·σ`, `prod = silu·up` with separate correctly rounded f64x2 operations — one pass instead of three,
 * with the exp arguments never leaving registers. Elements whose exp the fast path leaves undecided are reported
 * (their outputs are garbage) for the caller to compute with exp() itself. The backward likewise, one kernel.
 *
 * Each kernel is one function taking byte pointers to its arrays, in a module that imports its memory, and is
 * instantiated on two kinds of memory per thread:
 * - a kernel arena's (kernel-arena.ts), lazily, once per arena: when every array of a call is a view of that
 *   arena, the kernel reads and writes the views where they are (nothing copied). Only whole pairs run there
 *   (for odd n the kernel's second lane of the last pair would store one element past the views): the last
 *   element of an odd n is left to the caller (reported undecided by the forward, not counted as done by the
 *   backward);
 * - a private one-page memory, for any other arrays: chunks of {@link WASM_SWIGLU_CHUNK} (backward 512)
 *   elements are copied into its regions, computed and copied out (counted in internal/gemm-counters.ts).
 *
 * Memory layout, bytes: the reserved data below {@link KERNEL_ARENA_DATA_BYTES} (arena-kernels.ts: exp's table
 * and constants, 1.0; the undecided indices of one chunk in its per-call output region), then, in the private
 * memory only, the copy regions (gate, up, σ, silu, prod; backward dprod, gate, σ, silu, up, dgate, dup, dsilu).
 * The binding to memories is arena-kernels.ts's.
 */
import { gemmCounters } from '../internal/gemm-counters.ts';
import { ARENA_EXP_CONST, ARENA_EXP_TABLE, ARENA_ONE, ARENA_SCRATCH, ArenaKernels, pointerModuleBytes } from './arena-kernels.ts';
import { KERNEL_ARENA_DATA_BYTES } from './kernel-arena.ts';
import { Code, I32, V128 } from './wasm-assembler.ts';
import { EXP_PAIR_V128_LOCALS, emitExpConstants, emitExpPair, expPairLocals } from './wasm-exp.ts';

/** Elements per forward kernel call (the undecided indices of one call fit the reserved data). */
export const WASM_SWIGLU_CHUNK = 1024;
/** The reserved data (arena-kernels.ts): exp's table and constants, 1.0, the undecided indices of one chunk. */
const TABLE = ARENA_EXP_TABLE;
const CONST = ARENA_EXP_CONST;
const ONE_OFF = ARENA_ONE;
const UND = ARENA_SCRATCH;
/** End of the reserved data used (at most {@link KERNEL_ARENA_DATA_BYTES}: see the tests). */
export const WASM_SWIGLU_DATA_END: number = UND + WASM_SWIGLU_CHUNK * 4;
/** The forward's copy regions of the private memory, after the reserved data. */
const CH = WASM_SWIGLU_CHUNK * 8;
const GATE = KERNEL_ARENA_DATA_BYTES;
const UP = GATE + CH;
const SIGMA = UP + CH;
const SILU = SIGMA + CH;
const PROD = SILU + CH;

/**
 * swiglu(n, prod, silu, sigma, gate, up) → count, byte pointers: the forward on the pairs covering 0 … n−1, the
 * undecided indices (< n, increasing) at UND.
 */
function forwardModuleBytes(shared: boolean): Uint8Array {
  const n = 0, pprod = 1, psilu = 2, psigma = 3, pgate = 4, pup = 5;
  const i = 6, o = 7, cnt = 8, bm = 9, ta = 10, tb = 11;
  const I32_LOCALS = 6;
  const v0 = 12;
  const { x, res, ok } = expPairLocals(v0);
  const xg = v0 + EXP_PAIR_V128_LOCALS, ge = xg + 1, s = xg + 2, y = xg + 3, one = xg + 4;
  const V128_LOCALS = EXP_PAIR_V128_LOCALS + 5;
  const e = new Code();
  emitExpConstants(e, v0, CONST);
  e.i32(ONE_OFF).v128Load64Splat().set(one);
  e.i32(0).set(cnt);
  e.i32(0).set(i);
  e.i32(0).set(o);
  e.whileLess(i, n, () => {
    // x = gate; the exp argument x ≥ 0 ? −x : x (NaN fails the test)
    e.get(pgate).get(o).add().v128Load().tee(xg).v128Zero().vGe().set(ge);
    e.get(xg).vNeg().get(xg).get(ge).bitselect().set(x);
    emitExpPair(e, v0, ta, tb, TABLE);
    // σ = (x ≥ 0 ? 1 : e) / (1 + e); silu = x·σ; prod = silu·up
    e.get(one).get(res).get(ge).bitselect().get(one).get(res).vAdd().vDiv().set(s);
    e.get(psigma).get(o).add().get(s).v128Store();
    e.get(psilu).get(o).add().get(xg).get(s).vMul().tee(y).v128Store();
    e.get(pprod).get(o).add().get(y).get(pup).get(o).add().v128Load().vMul().v128Store();
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
    e.get(o).i32(16).add().set(o);
  });
  e.get(cnt);
  e.end();
  return moduleBytes('forward', 6, I32_LOCALS, V128_LOCALS, e, shared);
}

/** A module of one exported function `fn` with `params` i32 pointers, i32 and v128 locals, on a shared memory or not (arena-kernels.ts). */
function moduleBytes(fn: string, params: number, i32Locals: number, v128Locals: number, e: Code, shared: boolean): Uint8Array {
  return pointerModuleBytes(fn, params, [[i32Locals, I32], [v128Locals, V128]], e.bytes, shared);
}

/** Backward: elements per copied chunk, and the copy regions (dprod, gate, sigma, silu, up in; dgate, dup, dsilu out). */
const BW_CHUNK = 512;
const BW = { dprod: 0, gate: 1, sigma: 2, silu: 3, up: 4, dgate: 5, dup: 6, dsilu: 7 } as const;
const bw = (r: number): number => KERNEL_ARENA_DATA_BYTES + r * BW_CHUNK * 8;

/**
 * swiglu(n, dgate, dup, dsilu, dprod, gate, sigma, silu, up), byte pointers: dsilu = 0 + u·up, dup = 0 + u·silu,
 * dgate = 0 + dsilu·(σ·(1 + x·(1 − σ))) per lane, for the pairs covering 0 … n−1 (returns 0).
 */
function backwardModuleBytes(shared: boolean): Uint8Array {
  const n = 0, pdgate = 1, pdup = 2, pdsilu = 3, pdprod = 4, pgate = 5, psigma = 6, psilu = 7, pup = 8;
  const i = 9, o = 10;
  const u = 11, ds = u + 1, sg = u + 2, zero = u + 3, one = u + 4;
  const e = new Code();
  e.v128Zero().set(zero);
  // f64.const 1.0, splatted
  e.op(0x44, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f).splat().set(one);
  e.i32(0).set(i);
  e.i32(0).set(o);
  e.whileLess(i, n, () => {
    e.get(pdprod).get(o).add().v128Load().set(u);
    e.get(pdsilu).get(o).add().get(zero).get(u).get(pup).get(o).add().v128Load().vMul().vAdd().tee(ds).v128Store();
    e.get(pdup).get(o).add().get(zero).get(u).get(psilu).get(o).add().v128Load().vMul().vAdd().v128Store();
    e.get(psigma).get(o).add().v128Load().set(sg);
    // local = σ·(1 + x·(1 − σ)); dgate = 0 + ds·local
    e.get(pdgate).get(o).add().get(zero).get(ds);
    e.get(sg).get(one).get(pgate).get(o).add().v128Load().get(one).get(sg).vSub().vMul().vAdd().vMul();
    e.vMul().vAdd().v128Store();
    e.get(i).i32(2).add().set(i);
    e.get(o).i32(16).add().set(o);
  });
  e.i32(0);
  e.end();
  return moduleBytes('backward', 9, 2, 5, e, shared);
}

type ForwardExport = (n: number, prod: number, silu: number, sigma: number, gate: number, up: number) => number;
type BackwardExport = (n: number, dgate: number, dup: number, dsilu: number, dprod: number, gate: number, sigma: number, silu: number, up: number) => number;

/** Both kernels, compiled once, on the private memory and on each arena's (arena-kernels.ts). */
const kernels = new ArenaKernels<{ forward: ForwardExport; backward: BackwardExport }>((shared) => ({ forward: forwardModuleBytes(shared), backward: backwardModuleBytes(shared) }), 1);

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
 * `undecided` (room for n; their exp was undecided, or, in place in a kernel arena, the last of an odd n: their
 * outputs are not written meaningfully and the caller computes them). Returns their count, or −1 without
 * WebAssembly SIMD (nothing written). The arrays must not share elements; when all five are views of one kernel
 * arena, nothing is copied.
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
  const arena = kernels.arenaOf([prod, silu, sigma, gate, up]);
  const k = arena ?? kernels.own();
  if (k === null) return -1;
  const i32 = k.i32;
  let count = 0;
  if (arena !== null) {
    // In place, whole pairs only.
    const even = n - (n & 1);
    const pp = prod.byteOffset, pl = silu.byteOffset, ps = sigma.byteOffset, pg = gate.byteOffset, pu = up.byteOffset;
    for (let base = 0; base < even; base += WASM_SWIGLU_CHUNK) {
      const m = Math.min(WASM_SWIGLU_CHUNK, even - base);
      const o = base * 8;
      const c = arena.exports.forward(m, pp + o, pl + o, ps + o, pg + o, pu + o);
      for (let t = 0; t < c; t++) undecided[count++] = base + (i32[UND / 4 + t] as number);
    }
    if (even < n) undecided[count++] = even;
    gemmCounters.elementwiseInPlace += even;
    return count;
  }
  const f64 = k.f64;
  for (let base = 0; base < n; base += WASM_SWIGLU_CHUNK) {
    const m = Math.min(WASM_SWIGLU_CHUNK, n - base);
    copyIn(f64, GATE / 8, gate, base, m);
    copyIn(f64, UP / 8, up, base, m);
    const c = k.exports.forward(m, PROD, SILU, SIGMA, GATE, UP);
    copyOut(sigma, base, f64, SIGMA / 8, m);
    copyOut(silu, base, f64, SILU / 8, m);
    copyOut(prod, base, f64, PROD / 8, m);
    gemmCounters.elementwiseValues += 5 * m;
    for (let t = 0; t < c; t++) undecided[count++] = base + (i32[UND / 4 + t] as number);
  }
  return count;
}

/**
 * swiglu.ts's backward on elements 0 … n−1 through the kernel (the same operations per element, in f64x2
 * lanes), or on 0 … n−2 in place in a kernel arena when n is odd (the caller computes the last element). The
 * arrays must not share elements; when all eight are views of one kernel arena, nothing is copied.
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
 * @returns how many leading elements were computed (n, or n − 1), or −1 without WebAssembly SIMD (nothing written).
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
): number {
  const arena = kernels.arenaOf([dgate, dup, dsilu, dprod, gate, sigma, silu, up]);
  if (arena !== null) {
    // In place, whole pairs only.
    const even = n - (n & 1);
    gemmCounters.elementwiseInPlace += even;
    if (even > 0) arena.exports.backward(even, dgate.byteOffset, dup.byteOffset, dsilu.byteOffset, dprod.byteOffset, gate.byteOffset, sigma.byteOffset, silu.byteOffset, up.byteOffset);
    return even;
  }
  const k = kernels.own();
  if (k === null) return -1;
  const f64 = k.f64;
  const at = (r: number): number => bw(r) / 8;
  for (let base = 0; base < n; base += BW_CHUNK) {
    const m = Math.min(BW_CHUNK, n - base);
    copyIn(f64, at(BW.dprod), dprod, base, m);
    copyIn(f64, at(BW.gate), gate, base, m);
    copyIn(f64, at(BW.sigma), sigma, base, m);
    copyIn(f64, at(BW.silu), silu, base, m);
    copyIn(f64, at(BW.up), up, base, m);
    k.exports.backward(m, bw(BW.dgate), bw(BW.dup), bw(BW.dsilu), bw(BW.dprod), bw(BW.gate), bw(BW.sigma), bw(BW.silu), bw(BW.up));
    copyOut(dgate, base, f64, at(BW.dgate), m);
    copyOut(dup, base, f64, at(BW.dup), m);
    copyOut(dsilu, base, f64, at(BW.dsilu), m);
    gemmCounters.elementwiseValues += 8 * m;
  }
  return n;
}
