/**
 * The transposes of the weights (workspace.ts `prepare`, once per step on every thread) as a WebAssembly
 * SIMD kernel in place on a kernel arena, from the arena's resident snapshot of the parameters into its
 * transposed weights: `dst[s·ldd + r] = src[r·lds + s]`. Eight source rows at a time (then pairs, then a last
 * odd row), two columns per step: each pair of rows is loaded as two `v128` and shuffled into two pairs of the
 * transposed rows, so every store fills 16 bytes and the eight rows fill a whole 64-byte line of each
 * transposed row. Values are moved, never computed: the bits are the source's. The JavaScript loop
 * (gemm.ts `transpose`) takes about 1 ns an element in V8.
 */
import { gemmCounters } from '../internal/gemm-counters.ts';
import { ArenaKernels, pointerModuleBytes } from './arena-kernels.ts';
import type { Matrix } from '../reference/matrix.ts';
import { transpose } from './gemm.ts';
import { Code, I32, V128 } from './wasm-assembler.ts';

/** Parameters of `transpose(dst, ldd, src, lds, R, S)`: byte pointers to dst[0, 0] and src[0, 0], row strides in elements. */
const DST = 0;
const LDD = 1;
const SRC = 2;
const LDS = 3;
const R = 4;
const S = 5;
/** Locals: the row r, the column s, the source and destination pointers of the current step, the strides in bytes, then v128 values. */
const ROW = 6;
const COL = 7;
const SP = 8;
const DP = 9;
const LDS_B = 10;
const LDD_B = 11;
const V0 = 12;

/** Shuffle lanes (bytes of the two operands) taking the first f64 of each, and the second of each. */
const LOW = [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23];
const HIGH = [8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31];

/**
 * Emits the loop over rows r, r + 1, … in groups of `rows` (2 or 8) while a whole group is left.
 * @param e - the code.
 * @param rows - rows per group.
 */
function rowGroups(e: Code, rows: number): void {
  const address = (i: number): Code => e.get(SP).get(LDS_B).i32(i).mul().add();
  e.block().loop();
  e.get(ROW).i32(rows).add().get(R).gtS().brIf(1);
  e.i32(0).set(COL);
  e.get(SRC).get(ROW).get(LDS_B).mul().add().set(SP);
  e.get(DST).get(ROW).i32(8).mul().add().set(DP);
  // Two columns a step: rows·2 values loaded, written as two rows of the transpose.
  e.block().loop();
  e.get(COL).i32(1).add().get(S).geS().brIf(1);
  for (let i = 0; i < rows; i++) {
    address(i).v128Load(0);
    e.set(V0 + i);
  }
  for (const [lanes, row] of [
    [LOW, 0],
    [HIGH, 1],
  ] as const) {
    for (let p = 0; p < rows / 2; p++) {
      e.get(DP);
      if (row === 1) e.get(LDD_B).add();
      e.get(V0 + 2 * p).get(V0 + 2 * p + 1).shuffle(lanes).v128Store(16 * p);
    }
  }
  e.get(SP).i32(16).add().set(SP);
  e.get(DP).get(LDD_B).i32(2).mul().add().set(DP);
  e.get(COL).i32(2).add().set(COL);
  e.br(0).end().end();
  // An odd last column: one value per row.
  e.get(COL).get(S).ltS().if();
  for (let i = 0; i < rows; i++) {
    e.get(DP);
    address(i).f64Load(0);
    e.f64Store(8 * i);
  }
  e.end();
  e.get(ROW).i32(rows).add().set(ROW);
  e.br(0).end().end();
}

function transposeModuleBytes(shared: boolean): Uint8Array {
  const e = new Code();
  e.get(LDS).i32(8).mul().set(LDS_B);
  e.get(LDD).i32(8).mul().set(LDD_B);
  rowGroups(e, 8);
  rowGroups(e, 2);
  // An odd last row: one value per column.
  e.get(ROW).get(R).ltS().if();
  e.i32(0).set(COL);
  e.get(SRC).get(ROW).get(LDS_B).mul().add().set(SP);
  e.get(DST).get(ROW).i32(8).mul().add().set(DP);
  e.whileLess(COL, S, () => {
    e.get(DP).get(SP).f64Load(0).f64Store(0);
    e.get(SP).i32(8).add().set(SP);
    e.get(DP).get(LDD_B).add().set(DP);
    e.get(COL).i32(1).add().set(COL);
  });
  e.end();
  e.i32(0).end();
  return pointerModuleBytes('transpose', 6, [
    [6, I32],
    [8, V128],
  ], e.bytes, shared);
}

interface TransposeExports {
  transpose(dst: number, ldd: number, src: number, lds: number, rows: number, columns: number): number;
}

const kernels = new ArenaKernels<TransposeExports>((shared) => ({ transpose: transposeModuleBytes(shared) }), 1);

/**
 * `dst[dOff + s·ldd + r] = src[sOff + r·lds + s]` for the R × S source, in place when both arrays are views of
 * one kernel arena (gemm.ts `transpose` has the same arguments).
 * @returns whether it ran (false: transpose in JavaScript).
 */
export function wasmTranspose(dst: Float64Array, dOff: number, ldd: number, src: Float64Array, sOff: number, lds: number, R: number, S: number): boolean {
  const arena = kernels.arenaOf([dst, src]);
  if (arena === null) return false;
  arena.exports.transpose(dst.byteOffset + 8 * dOff, ldd, src.byteOffset + 8 * sOff, lds, R, S);
  gemmCounters.transposedInPlace += R * S;
  return true;
}

/**
 * `dst = srcᵀ` (src (R, S), dst (S, R)): the WebAssembly transpose in place when both are views of one kernel
 * arena (a workspace's weights and their transposes: both kernel sets that open arenas), else gemm.ts `transpose`.
 * @param dst - (S, R) out.
 * @param src - (R, S).
 */
export function transposeWeights(dst: Matrix, src: Matrix): void {
  if (!wasmTranspose(dst.data, dst.offset, dst.stride, src.data, src.offset, src.stride, src.rows, src.columns)) transpose(dst, src);
}
