/**
 * attention.ts's forward causal softmax of one head as WebAssembly SIMD kernels running in place on a kernel
 * arena's views (arena-kernels.ts), split as native/elementwise.c's `attentionSoftmax` / `attentionSoftmaxRows`:
 * - `shifts`, per row i (n = i + 1 allowed keys): the scaled scores `s = raw·scale` written back into S (f64x2
 *   lanes), the row maximum m (a scalar scan in key order, `s > m`), `p = exp(s − m)` (wasm-exp.ts
 *   `emitExpPair`, bit for bit exp() where it decides) and +0 for j > i; where the exp is undecided, p holds the
 *   shift and the index i·T + j is reported for the caller to finish with exp();
 * - `rows`, per row: the tail (a scalar sum in key order, the first exactly-zero shift skipped) and
 *   `p / (1 + tail) + 0` (f64x2 lanes).
 * Rows run over whole pairs, an odd n's last key on its own (the same operations on lane 0: nothing is read or
 * written past a row's n keys but the +0 of its masked keys). The scale, the row maxima of a call and the
 * undecided indices live in the reserved data's per-call output region.
 */
import { gemmCounters } from '../internal/gemm-counters.ts';
import { exp } from '../math/index.ts';
import { ARENA_EXP_CONST, ARENA_EXP_TABLE, ARENA_SCRATCH, ARENA_SCRATCH_BYTES, ArenaKernels, emitSkipTail, pointerModuleBytes } from './arena-kernels.ts';
import { Code, F64, I32, V128 } from './wasm-assembler.ts';
import { EXP_PAIR_V128_LOCALS, emitExpConstants, emitExpPair, expPairLocals } from './wasm-exp.ts';

/** Rows per kernel call at most. */
const MAX_ROWS = 128;
/** The per-call output region: the scale (f64), the row maxima, the undecided indices (i32). */
const SCALE = ARENA_SCRATCH;
const MAXS = SCALE + 16;
const UND = MAXS + MAX_ROWS * 8;
/** Undecided indices one call can report: a call's rows hold at most this many allowed keys. */
const UND_CAPACITY = Math.floor((ARENA_SCRATCH + ARENA_SCRATCH_BYTES - UND) / 4);
/** End of the reserved data used (at most KERNEL_ARENA_DATA_BYTES: see the tests). */
export const WASM_SOFTMAX_DATA_END: number = UND + UND_CAPACITY * 4;
/** The longest rows (T) the kernels take (one row's undecided indices fit one call). */
export const WASM_SOFTMAX_MAX_T: number = UND_CAPACITY;

/** Parameters of both functions: (T, i0, i1, pS, pP), byte pointers to the head's (T, T) scores and weights. */
const T_ = 0, I0 = 1, I1 = 2, PS = 3, PP = 4;
/** i32 locals shared by both functions. */
const I = 5, N = 6, RS = 7, RP = 8, J = 9, CNT = 10, TA = 11, TB = 12, BM = 13, SK = 14, Q = 15;
const I32_LOCALS = 11;
/** f64 locals. */
const M = 16, TAIL = 17, ZV = 18, SC = 19;
const F64_LOCALS = 4;
const V0 = 20;

/** Row loop over i0 … i1−1: sets N = i + 1, RS and RP to the row's scores and weights; `body` per row. */
function rowLoop(e: Code, body: () => void): void {
  e.get(I0).set(I);
  e.whileLess(I, I1, () => {
    e.get(I).i32(1).add().set(N);
    e.get(I).get(T_).mul().tee(Q).shl3().tee(RS).get(PP).add().set(RP);
    e.get(RS).get(PS).add().set(RS);
    body();
    e.get(I).i32(1).add().set(I);
  });
}

/** Loop over keys J = 0 … N−1 by pairs (`pair`, J < N − 1), then the odd last key alone (`single`). */
function keyLoop(e: Code, pair: () => void, single: () => void): void {
  e.i32(0).set(J);
  e.block().loop();
  e.get(J).i32(1).add().get(N).geS().brIf(1);
  pair();
  e.get(J).i32(2).add().set(J);
  e.br(0);
  e.end().end();
  e.get(J).get(N).ltS().if();
  single();
  e.end();
}

/** Pushes the byte address of key J in the row at local `row`. */
const at = (e: Code, row: number): Code => e.get(row).get(J).shl3().add();

/** Records index Q + J + `lane` as undecided when lane `lane` of BM (decided-lane bitmask) is clear. */
function record(e: Code, lane: number): void {
  e.get(BM).i32(1 << lane).and().i32(0).eq().if();
  e.get(CNT).i32(2).shl().get(Q).get(J).add().i32(lane).add().i32Store(UND);
  e.get(CNT).i32(1).add().set(CNT);
  e.end();
}

/** shifts(T, i0, i1, pS, pP) → count of undecided indices (at UND). */
function shiftsModuleBytes(shared: boolean): Uint8Array {
  const { x, res, ok } = expPairLocals(V0);
  const sv = V0 + EXP_PAIR_V128_LOCALS, mv = sv + 1;
  const V128_LOCALS = EXP_PAIR_V128_LOCALS + 2;
  const e = new Code();
  emitExpConstants(e, V0, ARENA_EXP_CONST);
  e.i32(SCALE).f64Load().set(SC);
  e.i32(SCALE).v128Load64Splat().set(sv);
  e.i32(0).set(CNT);
  rowLoop(e, () => {
    // s = raw·scale, in place
    keyLoop(
      e,
      () => {
        at(e, RS);
        at(e, RS).v128Load().get(sv).vMul().v128Store();
      },
      () => {
        at(e, RS);
        at(e, RS).f64Load().get(SC).f64Mul().f64Store();
      },
    );
    // m: the scalar scan `if (s > m) m = s` in key order
    e.f64Const(-Infinity).set(M);
    e.i32(0).set(J);
    e.whileLess(J, N, () => {
      at(e, RS).f64Load().tee(ZV).get(M).f64Gt().if();
      e.get(ZV).set(M);
      e.end();
      e.get(J).i32(1).add().set(J);
    });
    e.get(I).get(I0).sub().shl3().get(M).f64Store(MAXS);
    e.get(M).splat().set(mv);
    // p = exp(s − m) where decided, else the shift (reported)
    const expOf = (): void => {
      e.get(mv).vSub().set(x);
      emitExpPair(e, V0, TA, TB, ARENA_EXP_TABLE);
      e.get(ok).i64x2Bitmask().set(BM);
    };
    keyLoop(
      e,
      () => {
        at(e, RS).v128Load();
        expOf();
        at(e, RP).get(res).get(x).get(ok).bitselect().v128Store();
        e.get(BM).i32(3).ne().if();
        record(e, 0);
        record(e, 1);
        e.end();
      },
      () => {
        at(e, RS).v128Load64Splat();
        expOf();
        at(e, RP).get(res).get(x).get(ok).bitselect().simd(0x21, 0).f64Store();
        record(e, 0);
      },
    );
    // +0 for the masked keys j > i
    e.get(N).set(J);
    e.whileLess(J, T_, () => {
      at(e, RP).f64Zero().f64Store();
      e.get(J).i32(1).add().set(J);
    });
  });
  e.get(CNT);
  e.end();
  return pointerModuleBytes('shifts', 5, [[I32_LOCALS, I32], [F64_LOCALS, F64], [V128_LOCALS, V128]], e.bytes, shared);
}

/** rows(T, i0, i1, pS, pP) → 0: the tails and weights of rows i0 … i1−1 (p = exp(s − m) there, m at MAXS). */
function rowsModuleBytes(shared: boolean): Uint8Array {
  const den = V0, zero = V0 + 1;
  const e = new Code();
  e.v128Zero().set(zero);
  rowLoop(e, () => {
    e.get(I).get(I0).sub().shl3().f64Load(MAXS).set(M);
    // tail: Σ p in key order, skipping the first key whose shift is exactly 0
    emitSkipTail(e, { j: J, n: N, skipped: SK, z: RS, p: RP, m: M, tail: TAIL });
    // p / (1 + tail) + 0
    e.f64Const(1.0).get(TAIL).f64Add().tee(ZV).splat().set(den);
    keyLoop(
      e,
      () => {
        at(e, RP);
        at(e, RP).v128Load().get(den).vDiv().get(zero).vAdd().v128Store();
      },
      // f64.div, then + 0
      () => {
        at(e, RP);
        at(e, RP).f64Load().get(ZV).op(0xa3).f64Zero().f64Add().f64Store();
      },
    );
  });
  e.i32(0);
  e.end();
  return pointerModuleBytes('rows', 5, [[I32_LOCALS, I32], [F64_LOCALS, F64], [2, V128]], e.bytes, shared);
}

type Fn = (T: number, i0: number, i1: number, pS: number, pP: number) => number;

/** Both kernels, compiled once, on each arena's memory (arena-kernels.ts; no copy path). */
const kernels = new ArenaKernels<{ shifts: Fn; rows: Fn }>((shared) => ({ shifts: shiftsModuleBytes(shared), rows: rowsModuleBytes(shared) }), 1);

/**
 * attention.ts's forward softmax of one head in place: S (T, T) raw scores (scaled in place on and below the
 * diagonal), `prob[pOff + i·T + j]` the weights (+0 for j > i), bit for bit the TypeScript loops (the
 * undecided exps finished here with exp()). Returns false, writing nothing, unless S and the head's weights are
 * disjoint views of one kernel arena and T ≤ {@link WASM_SOFTMAX_MAX_T} (or without WebAssembly SIMD).
 *
 * @param prob - (≥ pOff + T·T) attention weights (written).
 * @param pOff - offset of the head's weights.
 * @param S - (≥ T·T) raw scores on and below the diagonal.
 * @param T - positions (≥ 1).
 * @param scale - `1 / sqrt(d)`.
 * @returns whether the kernels ran.
 */
export function wasmAttentionSoftmax(prob: Float64Array, pOff: number, S: Float64Array, T: number, scale: number): boolean {
  const TT = T * T;
  if (T < 1 || T > WASM_SOFTMAX_MAX_T || S.length < TT || prob.length < pOff + TT) return false;
  const pS = S.byteOffset, pP = prob.byteOffset + pOff * 8;
  if (S.buffer !== prob.buffer || (pS < pP + TT * 8 && pP < pS + TT * 8)) return false;
  const k = kernels.arena(S);
  if (k === null) return false;
  const { f64, i32 } = k;
  const { shifts, rows } = k.exports;
  f64[SCALE / 8] = scale;
  for (let i0 = 0; i0 < T; ) {
    // rows while their allowed keys fit the undecided indices
    let i1 = i0, keys = 0;
    while (i1 < T && i1 - i0 < MAX_ROWS && keys + i1 + 1 <= UND_CAPACITY) keys += ++i1;
    const count = shifts(T, i0, i1, pS, pP);
    for (let t = 0; t < count; t++) {
      const q = pOff + (i32[UND / 4 + t] as number);
      prob[q] = exp(prob[q] as number);
    }
    rows(T, i0, i1, pS, pP);
    i0 = i1;
  }
  gemmCounters.elementwiseInPlace += TT;
  return true;
}
