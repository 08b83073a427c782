/**
 * RMSNorm's row loops as WebAssembly SIMD kernels: the forward's mean squares (`sums`: per row
 * `(…((0 + x₀·x₀) + x₁·x₁) + …) / D`, one scalar addition per element in column order, the squares two at
 * a time) and its scaling (`scale`: `normalized = x·inv`, `out = normalized·gain`); and the backward
 * (rmsnorm.ts `rmsNormBackward`), in place on a kernel
 * arena's views (arena-kernels.ts): per row, `dn = 0 + u·g` two elements per `f64x2` operation, the row's
 * chain `di = (…((0 + dn₀·x₀) + dn₁·x₁) + …)` one scalar addition per element in column order (the products
 * two at a time), the five row adjoints with the same scalar operations, then
 * `dx = ((dx + dn·inv) + d2·x) + d2·x` two elements at a time. Every operation is the correctly rounded IEEE
 * one, in the JavaScript loop's order, so the bits are its bits; V8 runs that loop at about 7 ns an element,
 * this one at about 1. The gain's per-row terms `u·normalized` stay in the caller (they go to the batch
 * buffers, outside the arena). Arrays outside one arena run in JavaScript.
 */
import { gemmCounters } from '../internal/gemm-counters.ts';
import { ArenaKernels, pointerModuleBytes } from './arena-kernels.ts';
import { Code, F64, I32, V128 } from './wasm-assembler.ts';

/** `f64.convert_i32_s` */
const F64_CONVERT_I32_S = 0xb7;

/**
 * The locals every kernel here keeps: parameters `ROWS` and `D` (0 and 1), then the row `R`, the byte offset
 * `C` of the current column pair in the row, the row's byte offset `O`, the bytes `PAIRS` of its whole pairs.
 */
const ROWS = 0;
const D = 1;

interface RowLocals {
  readonly R: number;
  readonly C: number;
  readonly O: number;
  readonly PAIRS: number;
}

/**
 * A module of one function `name(rows, D, pointers…) → 0` running `row` for R = 0 … rows−1 (O set for each).
 * @param name - export name.
 * @param params - number of i32 parameters (rows, D and the pointers).
 * @param locals - counts of the i32, f64 and v128 locals after the parameters (the first four i32 are {@link RowLocals}).
 * @param row - emits one row's work.
 * @param shared - on a shared memory.
 */
function rowsModule(name: string, params: number, locals: readonly [number, number, number], row: (e: Code, L: RowLocals) => void, shared: boolean): Uint8Array {
  const L: RowLocals = { R: params, C: params + 1, O: params + 2, PAIRS: params + 3 };
  const e = new Code();
  e.get(D).i32(-2).and().i32(3).shl().set(L.PAIRS);
  e.i32(0).set(L.R);
  e.whileLess(L.R, ROWS, () => {
    e.get(L.R).get(D).mul().i32(3).shl().set(L.O);
    row(e, L);
    e.get(L.R).i32(1).add().set(L.R);
  });
  e.i32(0);
  e.end();
  const [i32s, f64s, v128s] = locals;
  return pointerModuleBytes(
    name,
    params,
    [
      [i32s, I32],
      [f64s, F64],
      [v128s, V128],
    ],
    e.bytes,
    shared,
  );
}

/** One row's columns in order: `pair` for each whole pair (C its byte offset), then `one` for the last of an odd D. */
function columns(e: Code, L: RowLocals, pair: () => void, one: () => void): void {
  e.i32(0).set(L.C);
  e.block().loop();
  e.get(L.C).get(L.PAIRS).geU().brIf(1);
  pair();
  e.get(L.C).i32(16).add().set(L.C);
  e.br(0);
  e.end().end();
  e.get(D).i32(1).and().if();
  one();
  e.end();
}

/** Pushes the byte address of the current column of the row of the array at pointer local `p`. */
const at = (e: Code, L: RowLocals, p: number): Code => e.get(p).get(L.O).add().get(L.C).add();

/** backward(rows, D, dx, dn, ra, u, x, gain, inv, st) → 0, byte pointers from dx on. */
function backwardModuleBytes(shared: boolean): Uint8Array {
  const [DX, DN, RA, U, X, G, INV, ST] = [2, 3, 4, 5, 6, 7, 8, 9];
  // after the four row locals (10 … 13): i32 14; f64 15 … 21; v128 22 … 26
  const RB = 14;
  const [IV, DI, T, DLG, DST, D2, DF] = [15, 16, 17, 18, 19, 20, 21];
  const [DNV, P, IVV, D2V, SQ] = [22, 23, 24, 25, 26];
  return rowsModule(
    'backward',
    10,
    [5, 7, 5],
    (e, L) => {
      const a = (p: number): Code => at(e, L, p);
      e.get(D).op(F64_CONVERT_I32_S).set(DF);
      e.get(INV).get(L.R).shl3().add().f64Load().set(IV);
      e.f64Zero().set(DI);
      // dn = 0 + u·g; the chain di over dn·x
      columns(
        e,
        L,
        () => {
          a(DN);
          e.v128Zero();
          a(U).v128Load();
          e.get(G).get(L.C).add().v128Load().vMul().vAdd().tee(DNV);
          e.v128Store();
          e.get(DNV);
          a(X).v128Load();
          e.vMul().set(P);
          e.get(DI).get(P).f64x2ExtractLane(0).f64Add().get(P).f64x2ExtractLane(1).f64Add().set(DI);
        },
        () => {
          a(DN);
          e.f64Zero();
          a(U).f64Load();
          e.get(G).get(L.C).add().f64Load().f64Mul().f64Add().tee(T);
          e.f64Store();
          e.get(DI).get(T);
          a(X).f64Load();
          e.f64Mul().f64Add().set(DI);
        },
      );
      // dsl = 0 + di·iv (in T); dlg = 0 + dsl·(−½); dst = 0 + dlg / st; d2 = 0 + dst / D
      e.f64Zero().get(DI).get(IV).f64Mul().f64Add().set(T);
      e.get(RA).get(L.R).i32(40).mul().add().set(RB);
      e.get(RB).get(DI).f64Store(0);
      e.get(RB).get(T).f64Store(8);
      e.f64Zero().get(T).f64Const(-0.5).f64Mul().f64Add().set(DLG);
      e.f64Zero().get(DLG).get(ST).get(L.R).shl3().add().f64Load().f64Div().f64Add().set(DST);
      e.f64Zero().get(DST).get(DF).f64Div().f64Add().set(D2);
      e.get(RB).get(DLG).f64Store(16);
      e.get(RB).get(DST).f64Store(24);
      e.get(RB).get(D2).f64Store(32);
      // dx = ((dx + dn·iv) + sq) + sq, sq = d2·x
      e.get(IV).splat().set(IVV);
      e.get(D2).splat().set(D2V);
      columns(
        e,
        L,
        () => {
          e.get(D2V);
          a(X).v128Load();
          e.vMul().set(SQ);
          a(DX);
          a(DX).v128Load();
          a(DN).v128Load();
          e.get(IVV).vMul().vAdd().get(SQ).vAdd().get(SQ).vAdd();
          e.v128Store();
        },
        () => {
          e.get(D2);
          a(X).f64Load();
          e.f64Mul().set(T);
          a(DX);
          a(DX).f64Load();
          a(DN).f64Load();
          e.get(IV).f64Mul().f64Add().get(T).f64Add().get(T).f64Add();
          e.f64Store();
        },
      );
    },
    shared,
  );
}

/**
 * sums(rows, D, x, ms) → 0: per row the mean square `(…((0 + x₀·x₀) + x₁·x₁) + …) / D`, one scalar addition per
 * element in column order (the squares two at a time).
 */
function sumsModuleBytes(shared: boolean): Uint8Array {
  const [X, MS] = [2, 3];
  // after the four row locals (4 … 7): f64 8 … 10; v128 11
  const [S, DF, V] = [8, 9, 10];
  const SQ = 11;
  return rowsModule(
    'sums',
    4,
    [4, 3, 1],
    (e, L) => {
      e.get(D).op(F64_CONVERT_I32_S).set(DF);
      e.f64Zero().set(S);
      columns(
        e,
        L,
        () => {
          at(e, L, X).v128Load().tee(SQ).get(SQ).vMul().set(SQ);
          e.get(S).get(SQ).f64x2ExtractLane(0).f64Add().get(SQ).f64x2ExtractLane(1).f64Add().set(S);
        },
        () => {
          e.get(S);
          at(e, L, X).f64Load().tee(V).get(V).f64Mul().f64Add().set(S);
        },
      );
      e.get(MS).get(L.R).shl3().add().get(S).get(DF).f64Div().f64Store();
    },
    shared,
  );
}

/** scale(rows, D, x, inv, gain, normalized, out) → 0: `normalized = x·inv`, `out = normalized·gain`, two elements at a time. */
function scaleModuleBytes(shared: boolean): Uint8Array {
  const [X, INV, G, NORM, OUT] = [2, 3, 4, 5, 6];
  // after the four row locals (7 … 10): f64 11, 12; v128 13, 14
  const [IV, N1] = [11, 12];
  const [IVV, NV] = [13, 14];
  return rowsModule(
    'scale',
    7,
    [4, 2, 2],
    (e, L) => {
      const a = (p: number): Code => at(e, L, p);
      e.get(INV).get(L.R).shl3().add().f64Load().tee(IV).splat().set(IVV);
      columns(
        e,
        L,
        () => {
          a(NORM);
          a(X).v128Load();
          e.get(IVV).vMul().tee(NV).v128Store();
          a(OUT);
          e.get(NV).get(G).get(L.C).add().v128Load().vMul().v128Store();
        },
        () => {
          a(NORM);
          a(X).f64Load();
          e.get(IV).f64Mul().tee(N1).f64Store();
          a(OUT);
          e.get(N1).get(G).get(L.C).add().f64Load().f64Mul().f64Store();
        },
      );
    },
    shared,
  );
}

interface RmsNormExports {
  backward(rows: number, D: number, dx: number, dn: number, ra: number, u: number, x: number, gain: number, inv: number, st: number): number;
  sums(rows: number, D: number, x: number, ms: number): number;
  scale(rows: number, D: number, x: number, inv: number, gain: number, normalized: number, out: number): number;
}

const kernels = new ArenaKernels<RmsNormExports>((shared) => ({ backward: backwardModuleBytes(shared), sums: sumsModuleBytes(shared), scale: scaleModuleBytes(shared) }), 1);

/**
 * The forward's mean squares in place (`ms`; the caller adds eps), when x and ms are views of one kernel arena.
 * @returns whether it ran (false: compute them in JavaScript).
 */
export function wasmRmsNormSums(ms: Float64Array, x: Float64Array, rows: number, D: number): boolean {
  const arena = kernels.arenaOf([ms, x]);
  if (arena === null) return false;
  arena.exports.sums(rows, D, x.byteOffset, ms.byteOffset);
  gemmCounters.elementwiseInPlace += rows * D;
  return true;
}

/**
 * The forward's `normalized = x·inv` and `out = normalized·gain` in place, when every array is a view of one kernel arena.
 * @returns whether it ran (false: compute them in JavaScript).
 */
export function wasmRmsNormScale(out: Float64Array, normalized: Float64Array, x: Float64Array, gain: Float64Array, inv: Float64Array, rows: number, D: number): boolean {
  const arena = kernels.arenaOf([out, normalized, x, gain, inv]);
  if (arena === null) return false;
  arena.exports.scale(rows, D, x.byteOffset, inv.byteOffset, gain.byteOffset, normalized.byteOffset, out.byteOffset);
  gemmCounters.elementwiseInPlace += rows * D;
  return true;
}

/**
 * The backward's row work (everything but the gain terms) in place, when every array is a view of one kernel arena.
 * @returns whether it ran (false: compute it in JavaScript).
 */
export function wasmRmsNormBackward(
  dx: Float64Array,
  dnormalized: Float64Array,
  rowAdjoints: Float64Array,
  u: Float64Array,
  x: Float64Array,
  gain: Float64Array,
  inv: Float64Array,
  st: Float64Array,
  rows: number,
  D: number,
): boolean {
  const arena = kernels.arenaOf([dx, dnormalized, rowAdjoints, u, x, gain, inv, st]);
  if (arena === null) return false;
  arena.exports.backward(rows, D, dx.byteOffset, dnormalized.byteOffset, rowAdjoints.byteOffset, u.byteOffset, x.byteOffset, gain.byteOffset, inv.byteOffset, st.byteOffset);
  gemmCounters.elementwiseInPlace += rows * D;
  return true;
}
