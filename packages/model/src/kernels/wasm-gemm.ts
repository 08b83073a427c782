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
 * Operands live in the module's own memory (a per-thread scratch): the
 * caller copies A, Bt (and C for accumulation) in and the result out, except
 * operands pinned there once per step (gemm.ts `pinGemmOperand`). With the
 * TRANS_A flag A is read in the stored-transposed layout [K, M] (a weight
 * gradient's activation as it is), so no transpose is needed first.
 */

import { Code, F64, I32, V128, name, section, uleb, type WasmApi, type WasmMemory } from './wasm-assembler.ts';

// ── The kernel ─────────────────────────────────────────────────────────────

/** Flag bits, identical to the scalar kernel's. */
const ADD = 1;
const LOWER_OUT = 2;
const LOWER_K = 4;
const UPPER_K = 8;
/** A is stored transposed, [K, M]: A[i, k] at `a + k·lda + i` (gemm.ts GEMM_TRANS_A). */
const TRANS_A = 16;

/**
 * gemm(c, ldc, a, lda, b, ldb, M, N, K, flags): element offsets into memory.
 * Rows are processed in blocks of 4, columns in blocks of 4 (two f64x2 per
 * row); leftover rows and columns take a scalar path with the same order.
 */
function gemmBody(): number[] {
  // params
  const c = 0, ldc = 1, a = 2, lda = 3, b = 4, ldb = 5, M = 6, N = 7, K = 8, flags = 9;
  // i32 locals
  const i = 10, j = 11, k = 12, jEnd = 13, kBeg = 14, kEnd = 15, a0 = 16, bk = 17, cp = 18, rows = 19, spare = 20, ldaB = 21, ldbB = 22, ldcB = 23;
  // A addressing in bytes: one step in k, one row, two rows, three rows; ak walks A[i, k] along k.
  const aStepK = 24, aStepR = 25, aStepR2 = 26, aStepR3 = 27, ak = 28;
  const I32_LOCALS = 19;
  // v128 locals
  const acc = [29, 30, 31, 32, 33, 34, 35, 36]; // rows 0..3 × two halves
  const b0 = 37, b1 = 38, x = 39;
  const V128_LOCALS = 11;
  // f64 locals
  const s = [40, 41, 42, 43];
  const bv = 44;
  const F64_LOCALS = 5;

  const e = new Code();
  // byte strides
  e.get(lda).shl3().set(ldaB);
  e.get(ldb).shl3().set(ldbB);
  e.get(ldc).shl3().set(ldcB);
  // A[i, k] at a + i·lda + k, or (TRANS_A) at a + k·lda + i: byte steps along k and along rows
  e.get(ldaB).i32(8).get(flags).i32(TRANS_A).and().select().set(aStepK);
  e.i32(8).get(ldaB).get(flags).i32(TRANS_A).and().select().set(aStepR);
  e.get(aStepR).get(aStepR).add().set(aStepR2);
  e.get(aStepR2).get(aStepR).add().set(aStepR3);
  // i = 0
  e.i32(0).set(i);
  e.block().loop(); // $rows: one iteration per row block (4 rows, or 1 row in the tail)
  {
    e.get(i).get(M).geS().brIf(1);
    // rows = M - i >= 4 ? 4 : 1
    e.i32(4).i32(1).get(M).get(i).sub().i32(4).geS().select().set(rows);
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

    e.get(rows).i32(4).geS().if();
    {
      // ── 4-row block: 4-column SIMD blocks ──
      e.i32(0).set(j);
      e.block().loop();
      {
        e.get(j).i32(4).add().get(jEnd).gtS().brIf(1);
        for (const v of acc) e.v128Zero().set(v);
        e.get(kBeg).set(k);
        // bk = byte address of Bt[kBeg, j]
        e.get(b).get(k).get(ldb).mul().add().get(j).add().shl3().set(bk);
        // ak = byte address of A[i, kBeg]
        e.get(a0).get(k).get(aStepK).mul().add().set(ak);
        e.block().loop();
        {
          e.get(k).get(kEnd).geS().brIf(1);
          e.get(bk).v128Load(0).set(b0);
          e.get(bk).v128Load(16).set(b1);
          for (let rr = 0; rr < 4; rr++) {
            // x = splat(A[i + rr, k])
            e.get(ak);
            if (rr > 0) e.get([0, aStepR, aStepR2, aStepR3][rr]!).add();
            e.f64Load().splat().set(x);
            e.get(acc[2 * rr]!).get(x).get(b0).vMul().vAdd().set(acc[2 * rr]!);
            e.get(acc[2 * rr + 1]!).get(x).get(b1).vMul().vAdd().set(acc[2 * rr + 1]!);
          }
          e.get(ak).get(aStepK).add().set(ak);
          e.get(bk).get(ldbB).add().set(bk);
          e.get(k).i32(1).add().set(k);
          e.br(0);
        }
        e.end().end();
        // store (or add) the 4 × 4 block
        e.get(c).get(i).get(ldc).mul().add().get(j).add().shl3().set(cp);
        for (let rr = 0; rr < 4; rr++) {
          for (let h = 0; h < 2; h++) {
            const v = acc[2 * rr + h]!;
            e.get(flags).i32(ADD).and().if();
            e.get(cp).get(cp).v128Load(16 * h).get(v).vAdd().v128Store(16 * h);
            e.else();
            e.get(cp).get(v).v128Store(16 * h);
            e.end();
          }
          e.get(cp).get(ldcB).add().set(cp);
        }
        e.get(j).i32(4).add().set(j);
        e.br(0);
      }
      e.end().end();
    }
    e.else();
    {
      e.i32(0).set(j);
    }
    e.end();

    // ── scalar columns j … jEnd−1 for the `rows` rows of this block ──
    e.block().loop();
    {
      e.get(j).get(jEnd).geS().brIf(1);
      for (const v of s) e.f64Zero().set(v);
      e.get(kBeg).set(k);
      e.block().loop();
      {
        e.get(k).get(kEnd).geS().brIf(1);
        e.get(b).get(k).get(ldb).mul().add().get(j).add().shl3().f64Load().set(bv);
        for (let rr = 0; rr < 4; rr++) {
          // rows beyond `rows` accumulate garbage-free zeros: only add when rr < rows
          e.get(rows).i32(rr).gtS().if();
          e.get(s[rr]!);
          e.get(a0).get(k).get(aStepK).mul().add();
          if (rr > 0) e.get([0, aStepR, aStepR2, aStepR3][rr]!).add();
          e.f64Load().get(bv).f64Mul().f64Add().set(s[rr]!);
          e.end();
        }
        e.get(k).i32(1).add().set(k);
        e.br(0);
      }
      e.end().end();
      e.get(c).get(i).get(ldc).mul().add().get(j).add().shl3().set(cp);
      for (let rr = 0; rr < 4; rr++) {
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
      e.br(0);
    }
    e.end().end();

    e.get(i).get(rows).add().set(i);
    e.br(0);
  }
  e.end().end();
  e.end(); // function end

  void spare;
  const locals = [...uleb(3), ...uleb(I32_LOCALS), I32, ...uleb(V128_LOCALS), V128, ...uleb(F64_LOCALS), F64];
  const body = [...locals, ...e.bytes];
  return [...uleb(body.length), ...body];
}

/** The module bytes: one exported function `gemm` and one exported memory. */
function gemmModuleBytes(): Uint8Array {
  const type = [1, 0x60, ...uleb(10), ...new Array<number>(10).fill(I32), 0];
  const func = [1, 0];
  const memory = [1, 0x00, 1];
  const exports = [2, ...name('gemm'), 0x00, 0, ...name('memory'), 0x02, 0];
  const code = [1, ...gemmBody()];
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, type),
    ...section(3, func),
    ...section(5, memory),
    ...section(7, exports),
    ...section(10, code),
  ]);
}

type GemmExport = (c: number, ldc: number, a: number, lda: number, b: number, ldb: number, M: number, N: number, K: number, flags: number) => void;

/** One thread's instance of the kernel with its scratch memory. */
export interface WasmGemm {
  readonly run: GemmExport;
  readonly memory: WasmMemory;
  /** A view of the whole memory (refreshed after growth). */
  view: Float64Array;
}

/**
 * Instantiates the kernel synchronously, or returns null when this runtime
 * has no WebAssembly SIMD (the scalar kernel is used then).
 * @returns the instance or null.
 */
export function createWasmGemm(): WasmGemm | null {
  try {
    const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
    if (api === undefined) return null;
    const bytes = gemmModuleBytes();
    if (!api.validate(bytes)) return null;
    const instance = new api.Instance(new api.Module(bytes), {});
    const memory = instance.exports.memory as WasmMemory;
    return { run: instance.exports.gemm as GemmExport, memory, view: new Float64Array(memory.buffer) };
  } catch {
    return null;
  }
}

/**
 * Makes sure the scratch memory holds `elements` f64 values.
 * @param w - the instance.
 * @param elements - required size.
 */
export function ensureWasmCapacity(w: WasmGemm, elements: number): void {
  const bytes = elements * 8;
  const have = w.memory.buffer.byteLength;
  if (bytes > have) {
    w.memory.grow(Math.ceil((bytes - have) / 65536));
    w.view = new Float64Array(w.memory.buffer);
  }
}
