/**
 * The cross-entropy forward rows (cross-entropy.ts) as one WebAssembly SIMD kernel, assembled at load time
 * (wasm-assembler.ts). Per row, with the operations of cross-entropy.ts in its order: the maximum m (a scalar
 * scan, `z > m`), the shifts `z − m` and their exp by exp.ts's fast path in f64x2 lanes (wasm-exp.ts
 * `emitExpPair`, bit for bit the batch exp), the tail (a scalar sum in index order, the first exactly-zero
 * shift skipped) and `p / (1 + tail) + 0` in f64x2 lanes. A row with an undecided exp is reported, not finished
 * (the caller computes it with exp() itself); the others return their m and tail for the caller's loss.
 *
 * The kernel is one function taking byte pointers to the logits and probabilities, in a module importing its
 * memory, bound by arena-kernels.ts: in place on a kernel arena's views (nothing copied; for odd V every row's
 * last pair computes one element of slack, in the next row, which that row then overwrites: the last row of an
 * odd V is left to the caller, reported undecided), or on a private one-page memory into which whole rows of up
 * to {@link WASM_CE_CAPACITY} logits are copied (each region with one element of slack), their probabilities
 * copied out (counted in internal/gemm-counters.ts). Per-row m and tail and the undecided rows of a call are in
 * the reserved data's per-call output region.
 */
import { gemmCounters } from '../internal/gemm-counters.ts';
import { ARENA_EXP_CONST, ARENA_EXP_TABLE, ARENA_SCRATCH, ArenaKernels, emitSkipTail, pointerModuleBytes } from './arena-kernels.ts';
import { KERNEL_ARENA_DATA_BYTES } from './kernel-arena.ts';
import { Code, F64, I32, V128 } from './wasm-assembler.ts';
import { EXP_PAIR_V128_LOCALS, emitExpConstants, emitExpPair, expPairLocals } from './wasm-exp.ts';

/** Logits per kernel call on the copy path (longer rows take the TypeScript loops unless in place). */
export const WASM_CE_CAPACITY = 3072;
/** Rows per kernel call at most. */
const MAX_ROWS = 256;
/** The reserved data (arena-kernels.ts): per-row m and tail, then the undecided rows of one call. */
const TABLE = ARENA_EXP_TABLE;
const CONST = ARENA_EXP_CONST;
const STATS = ARENA_SCRATCH;
const UND = STATS + MAX_ROWS * 16;
/** End of the reserved data used (at most {@link KERNEL_ARENA_DATA_BYTES}: see the tests). */
export const WASM_CE_DATA_END: number = UND + MAX_ROWS * 4;
/** The copy regions of the private memory, after the reserved data; one element of slack each. */
const Z = KERNEL_ARENA_DATA_BYTES;
const P = Z + (WASM_CE_CAPACITY + 2) * 8;

/** ce(rows, V, pz, pp) → count, byte pointers to (rows, V) logits and probabilities. */
function moduleBytes(shared: boolean): Uint8Array {
  const rows = 0, V = 1, pz = 2, pp = 3;
  const r = 4, c = 5, zr = 6, cnt = 7, bad = 8, skipped = 9, ta = 10, tb = 11, bm = 12, o = 13, pr = 14;
  const I32_LOCALS = 11;
  const m = 15, tail = 16, zv = 17;
  const F64_LOCALS = 3;
  const v0 = 18;
  const { x, res, ok } = expPairLocals(v0);
  const mv = v0 + EXP_PAIR_V128_LOCALS, den = mv + 1, zero = mv + 2;
  const V128_LOCALS = EXP_PAIR_V128_LOCALS + 3;
  const e = new Code();
  emitExpConstants(e, v0, CONST);
  e.v128Zero().set(zero);
  e.i32(0).set(cnt);
  e.i32(0).set(r);
  e.whileLess(r, rows, () => {
    e.get(r).get(V).mul().shl3().tee(o).get(pz).add().set(zr);
    e.get(o).get(pp).add().set(pr);
    // m: the scalar scan `if (z > m) m = z`
    e.f64Const(-Infinity).set(m);
    e.i32(0).set(c);
    e.whileLess(c, V, () => {
      // a branch, not a select: the maximum rarely changes, and a select would chain every element to the last
      e.get(zr).get(c).shl3().add().f64Load().tee(zv).get(m).f64Gt().if();
      e.get(zv).set(m);
      e.end();
      e.get(c).i32(1).add().set(c);
    });
    // shifts and their exp, by pairs (an odd row's last pair computes one element of slack, ignored)
    e.get(m).splat().set(mv);
    e.i32(0).set(bad);
    e.i32(0).set(c);
    e.i32(0).set(o);
    e.whileLess(c, V, () => {
      e.get(zr).get(o).add().v128Load().get(mv).vSub().set(x);
      emitExpPair(e, v0, ta, tb, TABLE);
      e.get(pr).get(o).add().get(res).v128Store();
      e.get(ok).i64x2Bitmask().set(bm);
      e.get(bad).get(bm).i32(1).and().i32(0).eq().or();
      e.get(bm).i32(2).and().i32(0).eq().get(c).i32(1).add().get(V).ltS().and().or().set(bad);
      e.get(c).i32(2).add().set(c);
      e.get(o).i32(16).add().set(o);
    });
    e.get(bad).if();
    {
      e.get(cnt).i32(2).shl().get(r).i32Store(UND);
      e.get(cnt).i32(1).add().set(cnt);
    }
    e.else();
    {
      // tail: Σ exp(shift) in order, skipping the first shift that is exactly 0
      emitSkipTail(e, { j: c, n: V, skipped, z: zr, p: pr, m, tail });
      e.get(r).i32(4).shl().get(m).f64Store(STATS);
      e.get(r).i32(4).shl().get(tail).f64Store(STATS + 8);
      // p / (1 + tail) + 0, by pairs
      e.f64Const(1.0).get(tail).f64Add().splat().set(den);
      e.i32(0).set(c);
      e.get(pr).set(o);
      e.whileLess(c, V, () => {
        e.get(o).get(o).v128Load().get(den).vDiv().get(zero).vAdd().v128Store();
        e.get(c).i32(2).add().set(c);
        e.get(o).i32(16).add().set(o);
      });
    }
    e.end();
    e.get(r).i32(1).add().set(r);
  });
  e.get(cnt);
  e.end();
  return pointerModuleBytes('ce', 4, [[I32_LOCALS, I32], [F64_LOCALS, F64], [V128_LOCALS, V128]], e.bytes, shared);
}

/** The kernel, compiled once, on the private memory and on each arena's (arena-kernels.ts). */
const kernels = new ArenaKernels<{ ce: (rows: number, V: number, pz: number, pp: number) => number }>((shared) => ({ ce: moduleBytes(shared) }), 1);

/**
 * cross-entropy.ts's forward rows through the kernel: `prob` for rows 0 … rows−1 and `stats[2r] = m`,
 * `stats[2r+1] = tail`, except the rows written ascending to `undecided` (room for rows; an exp of theirs was
 * undecided, or, in place, the last row of an odd V: their prob and stats are not written meaningfully, the caller
 * computes them). Returns their count, or −1 (nothing written) without WebAssembly SIMD or when a row is longer
 * than {@link WASM_CE_CAPACITY} and the arrays are not both views of one kernel arena (in place: nothing copied).
 * `prob` and `logits` must not share elements.
 *
 * @param prob - (rows, V) probabilities (written).
 * @param logits - (rows, V) logits.
 * @param stats - (2 · rows) per row m and tail (written).
 * @param rows - number of rows.
 * @param V - row length (≥ 1).
 * @param undecided - receives the undecided rows.
 * @returns their count, or −1.
 */
export function wasmCrossEntropyRows(prob: Float64Array, logits: Float64Array, stats: Float64Array, rows: number, V: number, undecided: Int32Array): number {
  if (V < 1) return -1;
  const arena = kernels.arenaOf([prob, logits]);
  if (arena === null && V > WASM_CE_CAPACITY) return -1;
  const k = arena ?? kernels.own();
  if (k === null) return -1;
  const { f64, i32 } = k;
  const ce = k.exports.ce;
  // In place, an odd V's last row would store one element past the probabilities: it is the caller's.
  const inPlace = arena === null ? 0 : rows - (V & 1);
  const per = arena !== null ? MAX_ROWS : Math.min(MAX_ROWS, Math.floor(WASM_CE_CAPACITY / V));
  let count = 0;
  for (let r0 = 0; r0 < (arena !== null ? inPlace : rows); r0 += per) {
    const nr = Math.min(per, (arena !== null ? inPlace : rows) - r0);
    const o = r0 * V, len = nr * V;
    let c: number;
    if (arena !== null) {
      c = ce(nr, V, logits.byteOffset + o * 8, prob.byteOffset + o * 8);
      gemmCounters.elementwiseInPlace += len;
    } else {
      f64.set(logits.subarray(o, o + len), Z / 8);
      c = ce(nr, V, Z, P);
      prob.set(f64.subarray(P / 8, P / 8 + len), o);
      gemmCounters.elementwiseValues += 2 * len;
    }
    stats.set(f64.subarray(STATS / 8, STATS / 8 + 2 * nr), 2 * r0);
    for (let t = 0; t < c; t++) undecided[count++] = r0 + (i32[UND / 4 + t] as number);
  }
  if (arena !== null && inPlace < rows) undecided[count++] = inPlace;
  return count;
}
