/**
 * A WebAssembly SIMD matrix-product kernel, assembled at load time from the
 * instruction list below (no binary blob, no build step).
 *
 * It computes `C[i, j] (=|+=) Σ_k A[i, k] · Bt[k, j]` in f64x2 lanes: each
 * lane is one output element's accumulator, advanced once per k in increasing
 * order, with separate IEEE multiply and add (the WebAssembly SIMD `f64x2.mul`
 * and `f64x2.add` are correctly rounded per lane, and no fused multiply-add
 * exists in it). So every output is the same in-order dot product as the
 * scalar loop, bit for bit — vector lanes only run neighbouring outputs side
 * by side.
 *
 * Operands live in the module's own memory: the caller copies A, Bt (and C
 * for accumulation) in and the result out, except operands that already live
 * there — pinned once per step in the thread's default instance (gemm.ts
 * `pinGemmOperand`), or views of a kernel arena, a fixed-size memory of its
 * own instance (kernel-arena.ts) that products read and write in place. With the
 * TRANS_A flag A is read in the stored-transposed layout [K, M] (a weight
 * gradient's activation as it is), so no transpose is needed first.
 */

import { GEMM_ADD as ADD, GEMM_LOWER_K as LOWER_K, GEMM_LOWER_OUT as LOWER_OUT, GEMM_TRANS_A as TRANS_A, GEMM_UPPER_K as UPPER_K } from './gemm-flags.ts';
import { Code, F64, I32, V128, compileModule, memoryImportSection, name, perMemoryKind, section, uleb, type WasmApi, type WasmMemory } from './wasm-assembler.ts';

// ── The kernel ─────────────────────────────────────────────────────────────

/**
 * Rows of the tallest register tile (each tile row: two f64x2 accumulators,
 * four columns). Four rows use 15 xmm registers per k step (8 accumulators, 2
 * of B, 4 of A, 1 product) — all that V8 allocates on x64; taller tiles spill.
 */
const TILE_ROWS = 4;
/** k steps per iteration of a tile's inner loop (one loop-header stack check per iteration). */
const UNROLL = 4;
/** Tile heights, tallest first: a row block takes the tallest that fits the rows left. */
const HEIGHTS = [4, 2, 1];

/**
 * gemm(c, ldc, a, lda, b, ldb, M, N, K, flags): element offsets into memory.
 * Rows are processed in blocks of 4 (the last ones in blocks of 2 and 1),
 * columns in blocks of 4 (two f64x2 per row), each block a register tile whose
 * k loop is specialised for the A layout (TRANS_A or not) and walks pointers
 * instead of recomputing addresses; leftover columns take a scalar path with
 * the same order.
 */
function gemmBody(): number[] {
  // params
  const c = 0, ldc = 1, a = 2, lda = 3, b = 4, ldb = 5, M = 6, N = 7, K = 8, flags = 9;
  let next = 10;
  const local = (): number => next++;
  // i32 locals
  const i = local(), j = local(), k = local(), jEnd = local(), kBeg = local(), kEnd = local(), a0 = local(), cp = local(), rows = local();
  const ldaB = local(), ldbB = local(), ldcB = local(), aStepK = local(), aStepR = local();
  const n = local(), pa = local(), pb = local();
  const p = Array.from({ length: TILE_ROWS }, local); // non-transposed A: one pointer per tile row
  const I32_LOCALS = next - 10;
  // v128 locals
  const acc = Array.from({ length: 2 * TILE_ROWS }, local); // row r: acc[2r] columns j, j+1; acc[2r+1] columns j+2, j+3
  const b0 = local(), b1 = local(), x = local();
  const V128_LOCALS = next - 10 - I32_LOCALS;
  // f64 locals
  const s = Array.from({ length: TILE_ROWS }, local);
  const bv = local();
  const F64_LOCALS = next - 10 - I32_LOCALS - V128_LOCALS;

  const e = new Code();

  /** One k step of an R-row tile: B row at pb, A rows at `p[r] + off` (or `pa + 8r + off` when transposed). */
  const step = (R: number, transA: boolean, aOff: number): void => {
    e.get(pb).v128Load(0).set(b0);
    e.get(pb).v128Load(16).set(b1);
    for (let r = 0; r < R; r++) {
      if (transA) e.get(pa).v128Load64Splat(8 * r);
      else e.get(p[r]!).v128Load64Splat(aOff);
      e.set(x);
      e.get(acc[2 * r]!).get(x).get(b0).vMul().vAdd().set(acc[2 * r]!);
      e.get(acc[2 * r + 1]!).get(x).get(b1).vMul().vAdd().set(acc[2 * r + 1]!);
    }
    e.get(pb).get(ldbB).add().set(pb);
    if (transA) e.get(pa).get(aStepK).add().set(pa);
  };

  /**
   * The k loop of an R-row tile over n = kEnd − kBeg steps, UNROLL steps per
   * iteration with an exit test after each step. The exit branches keep every
   * step's loads below the previous step's arithmetic (V8 schedules a basic
   * block's loads first), so the live registers stay those of one step.
   */
  const kLoop = (R: number, transA: boolean): void => {
    e.block();
    e.get(n).i32(0).gtS().if();
    e.loop();
    {
      for (let u = 0; u < UNROLL; u++) {
        step(R, transA, 8 * u);
        if (u + 1 < UNROLL) {
          e.get(n).i32(1).sub().tee(n).i32(0).eq().brIf(2);
        }
      }
      if (!transA) for (let r = 0; r < R; r++) e.get(p[r]!).i32(8 * UNROLL).add().set(p[r]!);
      e.get(n).i32(1).sub().tee(n).i32(0).ne().brIf(0);
    }
    e.end();
    e.end();
    e.end();
  };

  /** Columns j … in blocks of 4 for an R-row block (rows i … i+R−1): SIMD tiles. */
  const columnBlocks = (R: number): void => {
    e.block().loop();
    {
      e.get(j).i32(4).add().get(jEnd).gtS().brIf(1);
      for (let v = 0; v < 2 * R; v++) e.v128Zero().set(acc[v]!);
      e.get(kEnd).get(kBeg).sub().set(n);
      // pb = byte address of Bt[kBeg, j]; pa = byte address of A[i, kBeg]
      e.get(b).get(kBeg).get(ldb).mul().add().get(j).add().shl3().set(pb);
      e.get(a0).get(kBeg).get(aStepK).mul().add().set(pa);
      e.get(flags).i32(TRANS_A).and().if();
      kLoop(R, true);
      e.else();
      for (let r = 0; r < R; r++) {
        e.get(pa);
        if (r > 0) e.get(ldaB).i32(r).mul().add();
        e.set(p[r]!);
      }
      kLoop(R, false);
      e.end();
      // store (or add) the R × 4 block
      e.get(c).get(i).get(ldc).mul().add().get(j).add().shl3().set(cp);
      e.get(flags).i32(ADD).and().if();
      for (let r = 0; r < R; r++) {
        e.get(cp).get(cp).v128Load(0).get(acc[2 * r]!).vAdd().v128Store(0);
        e.get(cp).get(cp).v128Load(16).get(acc[2 * r + 1]!).vAdd().v128Store(16);
        if (r + 1 < R) e.get(cp).get(ldcB).add().set(cp);
      }
      e.else();
      for (let r = 0; r < R; r++) {
        e.get(cp).get(acc[2 * r]!).v128Store(0);
        e.get(cp).get(acc[2 * r + 1]!).v128Store(16);
        if (r + 1 < R) e.get(cp).get(ldcB).add().set(cp);
      }
      e.end();
      e.get(j).i32(4).add().set(j);
      e.br(0);
    }
    e.end().end();
  };

  // byte strides
  e.get(lda).shl3().set(ldaB);
  e.get(ldb).shl3().set(ldbB);
  e.get(ldc).shl3().set(ldcB);
  // A[i, k] at a + i·lda + k, or (TRANS_A) at a + k·lda + i: byte steps along k and along rows
  e.get(ldaB).i32(8).get(flags).i32(TRANS_A).and().select().set(aStepK);
  e.i32(8).get(ldaB).get(flags).i32(TRANS_A).and().select().set(aStepR);
  // i = 0
  e.i32(0).set(i);
  // $rows: one iteration per row block
  e.whileLess(i, M, () => {
    // rows = the tallest tile height that fits M − i
    e.i32(1).set(rows);
    for (const h of [...HEIGHTS].reverse().slice(1)) e.i32(h).get(rows).get(M).get(i).sub().i32(h).geS().select().set(rows);
    // jEnd = LOWER_OUT ? min(N, i + rows) : N
    e.get(i).get(rows).add().tee(jEnd).get(N).get(jEnd).get(N).ltS().select().set(jEnd);
    e.get(jEnd).get(N).get(flags).i32(LOWER_OUT).and().select().set(jEnd);
    // kBeg = UPPER_K ? i : 0
    e.get(i).i32(0).get(flags).i32(UPPER_K).and().select().set(kBeg);
    // kEnd = LOWER_K ? min(K, i + rows) : K
    e.get(i).get(rows).add().tee(kEnd).get(K).get(kEnd).get(K).ltS().select().set(kEnd);
    e.get(kEnd).get(K).get(flags).i32(LOWER_K).and().select().set(kEnd);
    // a0 = byte address of A[i, 0]
    e.get(a).shl3().get(i).get(aStepR).mul().add().set(a0);

    e.i32(0).set(j);
    for (const h of HEIGHTS) {
      e.get(rows).i32(h).eq().if();
      columnBlocks(h);
      e.end();
    }

    // ── scalar columns j … jEnd−1 for the `rows` rows of this block ──
    e.whileLess(j, jEnd, () => {
      for (const v of s) e.f64Zero().set(v);
      e.get(kBeg).set(k);
      e.whileLess(k, kEnd, () => {
        e.get(b).get(k).get(ldb).mul().add().get(j).add().shl3().f64Load().set(bv);
        for (let rr = 0; rr < TILE_ROWS; rr++) {
          // only the block's own rows
          e.get(rows).i32(rr).gtS().if();
          e.get(s[rr]!);
          e.get(a0).get(k).get(aStepK).mul().add();
          if (rr > 0) e.get(aStepR).i32(rr).mul().add();
          e.f64Load().get(bv).f64Mul().f64Add().set(s[rr]!);
          e.end();
        }
        e.get(k).i32(1).add().set(k);
      });
      e.get(c).get(i).get(ldc).mul().add().get(j).add().shl3().set(cp);
      for (let rr = 0; rr < TILE_ROWS; rr++) {
        e.get(rows).i32(rr).gtS().if();
        {
          e.get(flags).i32(ADD).and().if();
          e.get(cp).get(cp).f64Load().get(s[rr]!).f64Add().f64Store();
          e.else();
          e.get(cp).get(s[rr]!).f64Store();
          e.end();
        }
        e.end();
        e.get(cp).get(ldcB).add().set(cp);
      }
      e.get(j).i32(1).add().set(j);
    });

    e.get(i).get(rows).add().set(i);
  });
  e.end(); // function end

  const locals = [...uleb(3), ...uleb(I32_LOCALS), I32, ...uleb(V128_LOCALS), V128, ...uleb(F64_LOCALS), F64];
  const body = [...locals, ...e.bytes];
  return [...uleb(body.length), ...body];
}

/**
 * The module bytes: one exported function `gemm`, and its own exported memory
 * or (`imported`) an imported shared one (a worker's arena: wasm-assembler.ts
 * `memoryImportSection`).
 */
function gemmModuleBytes(imported: boolean): Uint8Array {
  const type = [1, 0x60, ...uleb(10), ...new Array<number>(10).fill(I32), 0];
  const func = [1, 0];
  const memory = [1, 0x00, 1];
  const exports = [2, ...name('gemm'), 0x00, 0, ...name('memory'), 0x02, 0];
  const code = [1, ...gemmBody()];
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, type),
    ...(imported ? memoryImportSection(true) : []),
    ...section(3, func),
    ...(imported ? [] : section(5, memory)),
    ...section(7, exports),
    ...section(10, code),
  ]);
}

type GemmExport = (c: number, ldc: number, a: number, lda: number, b: number, ldb: number, M: number, N: number, K: number, flags: number) => void;

/** One thread's instance of the kernel with its memory. */
export interface WasmGemm {
  readonly run: GemmExport;
  readonly memory: WasmMemory;
  /** A view of the whole memory (refreshed after growth). */
  view: Float64Array;
  /**
   * A fixed-size memory (a kernel arena, kernel-arena.ts): it never grows, so
   * views of it handed out stay valid; products whose copies do not fit its
   * scratch run on the scalar kernel instead.
   */
  readonly fixed: boolean;
  /** Element offset where the copy scratch of a {@link fixed} memory begins (after its arena). */
  scratchBase: number;
}

/** The compiled modules (own memory, imported shared memory), shared by every instance of this thread (null: no WebAssembly SIMD). */
const gemmModule = perMemoryKind((imported) => compileModule(gemmModuleBytes(imported)));

/**
 * Instantiates the kernel synchronously, or returns null when this runtime
 * has no WebAssembly SIMD (the scalar kernel is used then).
 * @param fixedElements - when given, a memory of at least this many f64 values that never grows (see {@link WasmGemm.fixed}).
 * @param shared - with `fixedElements`: the memory to run on, a shared one holding at least that many values (a worker's arena, sized by whoever made it), instead of a new memory of the instance's own.
 * @returns the instance or null (also when a fixed memory of that size cannot be allocated, or `shared` is too small).
 */
export function createWasmGemm(fixedElements?: number, shared?: WasmMemory): WasmGemm | null {
  try {
    const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
    if (api === undefined) return null;
    const module = gemmModule(shared !== undefined);
    if (module === null) return null;
    if (shared !== undefined) {
      if (fixedElements === undefined || shared.buffer.byteLength < fixedElements * 8) return null;
      const instance = new api.Instance(module, { env: { memory: shared } });
      return { run: instance.exports.gemm as GemmExport, memory: shared, view: new Float64Array(shared.buffer), fixed: true, scratchBase: 0 };
    }
    const instance = new api.Instance(module, {});
    const memory = instance.exports.memory as WasmMemory;
    if (fixedElements !== undefined) {
      const need = Math.ceil((fixedElements * 8) / 65536) - memory.buffer.byteLength / 65536;
      if (need > 0) memory.grow(need);
    }
    return { run: instance.exports.gemm as GemmExport, memory, view: new Float64Array(memory.buffer), fixed: fixedElements !== undefined, scratchBase: 0 };
  } catch {
    return null;
  }
}

/**
 * Makes sure the scratch memory holds `elements` f64 values.
 * @param w - the instance (not {@link WasmGemm.fixed}: growing would detach the views of its arena).
 * @param elements - required size.
 * @throws Error for a fixed memory that is too small.
 */
export function ensureWasmCapacity(w: WasmGemm, elements: number): void {
  const bytes = elements * 8;
  const have = w.memory.buffer.byteLength;
  if (bytes > have) {
    if (w.fixed) throw new Error(`a fixed kernel memory of ${have} bytes cannot grow to ${bytes}: its views would be detached`);
    w.memory.grow(Math.ceil((bytes - have) / 65536));
    w.view = new Float64Array(w.memory.buffer);
  }
}
