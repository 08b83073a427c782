/**
 * The cross-entropy forward rows (cross-entropy.ts) as one WebAssembly SIMD kernel, assembled at load time
 * (wasm-assembler.ts). Per row, with the operations of cross-entropy.ts in its order: the maximum m (a scalar
 * scan, `z > m`), the shifts `z − m` and their exp by exp.ts's fast path in f64x2 lanes (wasm-exp.ts
 * `emitExpPair`, bit for bit the batch exp), the tail (a scalar sum in index order, the first exactly-zero
 * shift skipped) and `p / (1 + tail) + 0` in f64x2 lanes. A row with an undecided exp is reported, not finished
 * (the caller computes it with exp() itself); the others return their m and tail for the caller's loss.
 *
 * Memory (one 64 KiB page): the logits of up to {@link WASM_CE_CAPACITY} elements (whole rows) in, the
 * probabilities out, per-row m and tail, the undecided rows, exp's table and constants.
 */
import { Code, F64, I32, V128, name, section, uleb, type WasmApi, type WasmMemory } from './wasm-assembler.ts';
import { EXP_PAIR_V128_LOCALS, EXP_TABLE_BYTES, emitExpConstants, emitExpPair, expPairLocals, initExpData } from './wasm-exp.ts';

/** Logits per kernel call (rows longer than this take the TypeScript loops). */
export const WASM_CE_CAPACITY = 3072;
/** Rows per kernel call at most. */
const MAX_ROWS = 256;
/** Regions (bytes); Z and P have one element of slack for the second lane of an odd row's last pair. */
const Z = 0;
const P = Z + (WASM_CE_CAPACITY + 2) * 8;
const STATS = P + (WASM_CE_CAPACITY + 2) * 8;
const UND = STATS + MAX_ROWS * 16;
const TABLE = UND + MAX_ROWS * 4;
const CONST = TABLE + EXP_TABLE_BYTES;

function moduleBytes(): Uint8Array {
  const rows = 0, V = 1;
  const r = 2, c = 3, ro = 4, cnt = 5, bad = 6, skipped = 7, ta = 8, tb = 9, bm = 10, pp = 11;
  const I32_LOCALS = 10;
  const m = 12, tail = 13, zv = 14;
  const F64_LOCALS = 3;
  const v0 = 15;
  const { x, res, ok } = expPairLocals(v0);
  const mv = v0 + EXP_PAIR_V128_LOCALS, den = mv + 1, zero = mv + 2;
  const V128_LOCALS = EXP_PAIR_V128_LOCALS + 3;
  const e = new Code();
  emitExpConstants(e, v0, CONST);
  e.v128Zero().set(zero);
  e.i32(0).set(cnt);
  e.i32(0).set(r);
  e.block().loop();
  {
    e.get(r).get(rows).geS().brIf(1);
    e.get(r).get(V).mul().shl3().set(ro);
    // m: the scalar scan `if (z > m) m = z`
    e.f64Const(-Infinity).set(m);
    e.i32(0).set(c);
    e.block().loop();
    e.get(c).get(V).geS().brIf(1);
    // a branch, not a select: the maximum rarely changes, and a select would chain every element to the last
    e.get(ro).get(c).shl3().add().f64Load(Z).tee(zv).get(m).f64Gt().if();
    e.get(zv).set(m);
    e.end();
    e.get(c).i32(1).add().set(c);
    e.br(0);
    e.end().end();
    // shifts and their exp, by pairs (an odd row's last pair computes one element of slack, ignored)
    e.get(m).splat().set(mv);
    e.i32(0).set(bad);
    e.i32(0).set(c);
    e.get(ro).set(pp);
    e.block().loop();
    e.get(c).get(V).geS().brIf(1);
    e.get(pp).v128Load(Z).get(mv).vSub().set(x);
    emitExpPair(e, v0, ta, tb, TABLE);
    e.get(pp).get(res).v128Store(P);
    e.get(ok).i64x2Bitmask().set(bm);
    e.get(bad).get(bm).i32(1).and().i32(0).eq().or();
    e.get(bm).i32(2).and().i32(0).eq().get(c).i32(1).add().get(V).ltS().and().or().set(bad);
    e.get(c).i32(2).add().set(c);
    e.get(pp).i32(16).add().set(pp);
    e.br(0);
    e.end().end();
    e.get(bad).if();
    {
      e.get(cnt).i32(2).shl().get(r).i32Store(UND);
      e.get(cnt).i32(1).add().set(cnt);
    }
    e.else();
    {
      // tail: Σ exp(shift) in order, skipping the first shift that is exactly 0
      e.f64Zero().set(tail);
      e.i32(0).set(skipped);
      e.i32(0).set(c);
      e.block().loop();
      e.get(c).get(V).geS().brIf(1);
      e.get(skipped).i32(0).eq();
      e.get(ro).get(c).shl3().add().f64Load(Z).get(m).f64Sub().f64Zero().f64Eq().and().if();
      e.i32(1).set(skipped);
      e.else();
      e.get(tail).get(ro).get(c).shl3().add().f64Load(P).f64Add().set(tail);
      e.end();
      e.get(c).i32(1).add().set(c);
      e.br(0);
      e.end().end();
      e.get(r).i32(4).shl().get(m).f64Store(STATS);
      e.get(r).i32(4).shl().get(tail).f64Store(STATS + 8);
      // p / (1 + tail) + 0, by pairs
      e.f64Const(1.0).get(tail).f64Add().splat().set(den);
      e.i32(0).set(c);
      e.get(ro).set(pp);
      e.block().loop();
      e.get(c).get(V).geS().brIf(1);
      e.get(pp).get(pp).v128Load(P).get(den).vDiv().get(zero).vAdd().v128Store(P);
      e.get(c).i32(2).add().set(c);
      e.get(pp).i32(16).add().set(pp);
      e.br(0);
      e.end().end();
    }
    e.end();
    e.get(r).i32(1).add().set(r);
    e.br(0);
  }
  e.end().end();
  e.get(cnt);
  e.end();
  const locals = [...uleb(3), ...uleb(I32_LOCALS), I32, ...uleb(F64_LOCALS), F64, ...uleb(V128_LOCALS), V128];
  const body = [...locals, ...e.bytes];
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, [1, 0x60, 2, I32, I32, 1, I32]),
    ...section(3, [1, 0]),
    ...section(5, [1, 0x01, 1, 1]),
    ...section(7, [2, ...name('ce'), 0x00, 0, ...name('memory'), 0x02, 0]),
    ...section(10, [1, ...uleb(body.length), ...body]),
  ]);
}

interface CeKernel {
  readonly run: (rows: number, V: number) => number;
  readonly f64: Float64Array;
  readonly i32: Int32Array;
}

/** This thread's instance: undefined before the first use, null when unavailable. */
let kernel: CeKernel | null | undefined;

function getKernel(): CeKernel | null {
  if (kernel !== undefined) return kernel;
  kernel = null;
  try {
    const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
    const bytes = moduleBytes();
    if (api === undefined || !api.validate(bytes)) return null;
    const instance = new api.Instance(new api.Module(bytes), {});
    const buffer = (instance.exports['memory'] as WasmMemory).buffer;
    const f64 = new Float64Array(buffer);
    initExpData(f64, TABLE, CONST);
    kernel = { run: instance.exports['ce'] as (rows: number, V: number) => number, f64, i32: new Int32Array(buffer) };
  } catch {
    kernel = null;
  }
  return kernel;
}

/**
 * cross-entropy.ts's forward rows through the kernel: `prob` for rows 0 … rows−1 and `stats[2r] = m`,
 * `stats[2r+1] = tail`, except the rows written ascending to `undecided` (room for rows; an exp of theirs was
 * undecided, their prob and stats are not written meaningfully: the caller computes them). Returns their count,
 * or −1 (nothing written) without WebAssembly SIMD or when a row is longer than {@link WASM_CE_CAPACITY}.
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
  if (V < 1 || V > WASM_CE_CAPACITY) return -1;
  const k = getKernel();
  if (k === null) return -1;
  const { f64, i32 } = k;
  const per = Math.min(MAX_ROWS, Math.floor(WASM_CE_CAPACITY / V));
  let count = 0;
  for (let r0 = 0; r0 < rows; r0 += per) {
    const nr = Math.min(per, rows - r0);
    const o = r0 * V, len = nr * V;
    f64.set(logits.subarray(o, o + len), Z / 8);
    const c = k.run(nr, V);
    prob.set(f64.subarray(P / 8, P / 8 + len), o);
    stats.set(f64.subarray(STATS / 8, STATS / 8 + 2 * nr), 2 * r0);
    for (let t = 0; t < c; t++) undecided[count++] = r0 + (i32[UND / 4 + t] as number);
  }
  return count;
}
