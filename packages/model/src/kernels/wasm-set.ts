/**
 * The `wasm` kernel set: the layers on WebAssembly SIMD kernels assembled at
 * load time (wasm-gemm.ts, wasm-rmsnorm.ts, wasm-swiglu.ts, wasm-softmax.ts,
 * wasm-cross-entropy.ts, wasm-exp.ts, wasm-ln.ts), whose f64x2 lanes are
 * independent elements, each with the reference's operations in its order.
 *
 * Memory: the workspace opens on a kernel arena (kernel-arena.ts), a fixed
 * WebAssembly memory of the set's own kernel instance — or, on a threaded
 * decoder, a shared memory the decoder made for the thread — so every
 * operand of a pass is a view the kernels read and write where it is: no
 * copies around a product, the element-wise kernels in place. Operands
 * elsewhere (a cached decoding step reads the parameters as they are) are
 * copied into the scratch of the thread's default instance, or, for small
 * products, multiplied in JavaScript (gemm.ts); the element-wise layers run
 * the reference's loops on them.
 */
import type { DecoderConfig } from '@llmcp/format';
import { gemmCounters } from '../internal/gemm-counters.ts';
import { REFERENCE_LAYERS, swigluBackwardAt, type LinearWeight, type NormActivations, type RopeTables, type SwigluActivations, type SwigluAdjoints } from '../reference/layers.ts';
import { matrix, type Matrix } from '../reference/matrix.ts';
import { contiguous, contiguousAll, crossEntropyRow, flatAll, inverseRoots, rowLosses } from './batched.ts';
import { batchExp } from './exp-batch.ts';
import { GEMM_ADD, GEMM_TRANS_A } from './gemm-flags.ts';
import { gemmJs } from './gemm.ts';
import { openKernelArena, residentKernel } from './kernel-arena.ts';
import type { Kernels, MemoryProduct } from './kernel-set.ts';
import { ProductLayers } from './product-attention.ts';
import { disjointViews, type WasmMemory } from './wasm-assembler.ts';
import { wasmCrossEntropyRows } from './wasm-cross-entropy.ts';
import { wasmExpAvailable, wasmExpInto } from './wasm-exp.ts';
import { createWasmGemm, ensureWasmCapacity, type WasmGemm } from './wasm-gemm.ts';
import { wasmRmsNormBackward, wasmRmsNormScale, wasmRmsNormSums } from './wasm-rmsnorm.ts';
import { wasmAttentionSoftmax } from './wasm-softmax.ts';
import { wasmSwigluBackward, wasmSwigluForward } from './wasm-swiglu.ts';
import { transposeWeights } from './wasm-transpose.ts';
import { Workspace } from './workspace.ts';

/**
 * Products with no operand in an arena stay in JavaScript below this much
 * work (M·N·K), or below four rows (one row times a matrix — a cached
 * decoding step — reads each operand once: copying them costs what the
 * kernel saves): copying in and out would cost more.
 */
const SIMD_MIN_WORK = 2048;
const SIMD_MIN_ROWS = 4;
/** The batched exp from this many elements (a plain call: about 1.7× the loop at 4, 2× from 16). */
const WASM_MIN_EXP = 4;
/** SwiGLU from this many elements. */
const WASM_MIN_SWIGLU = 8;
/** The cross-entropy from this many logits. */
const WASM_MIN_CE = 64;

/** The thread's default instance (its own growable memory: the copy scratch of products on ordinary arrays), made on first use. */
let scratchInstance: WasmGemm | null | undefined;

/** @returns bytes of the memory of this thread's default instance (0 before it exists): a diagnostic. */
export function wasmScratchBytes(): number {
  return scratchInstance === undefined || scratchInstance === null ? 0 : scratchInstance.memory.buffer.byteLength;
}

/**
 * `c (=|+=) op(a)·b` by the WebAssembly kernel of instance `w`: operands that
 * are views of its memory (an arena's) are read and written where they are;
 * the others are copied into its scratch (after the arena, or from the start
 * of the default instance's memory) and a copied c back out. A fixed memory
 * without room for the copies never grows (its views would be detached): the
 * product then runs in JavaScript (same bits; counted).
 *
 * @param w - the instance.
 * @param c - (M, N) output.
 * @param a - (M, K) left operand, or (K, M) with {@link GEMM_TRANS_A}.
 * @param b - (K, N) right operand.
 * @param flags - the flags of gemm-flags.ts.
 */
export function wasmProduct(w: WasmGemm, c: Matrix, a: Matrix, b: Matrix, flags: number): void {
  const transA = (flags & GEMM_TRANS_A) !== 0;
  const M = c.rows;
  const N = c.columns;
  const K = transA ? a.rows : a.columns;
  const own = w.memory.buffer;
  const [pa, pb, pc] = [offsetIn(a, own), offsetIn(b, own), offsetIn(c, own)];
  let end = w.fixed ? w.scratchBase : 0;
  const ea = pa >= 0 ? pa : end;
  const la = pa >= 0 ? a.stride : transA ? M : K;
  if (pa < 0) end += M * K;
  const eb = pb >= 0 ? pb : end;
  const lb = pb >= 0 ? b.stride : N;
  if (pb < 0) end += K * N;
  const ec = pc >= 0 ? pc : end;
  const lc = pc >= 0 ? c.stride : N;
  if (pc < 0) end += M * N;
  if (w.fixed && end > w.view.length) {
    gemmCounters.scalarFallbacks++;
    gemmJs(c, a, b, flags);
    return;
  }
  if (!w.fixed) ensureWasmCapacity(w, end);
  const view = w.view;
  if (pa < 0) {
    copyRows(matrix(view, a.rows, a.columns, a.columns, ea), a);
    gemmCounters.operandsIn += M * K;
  }
  if (pb < 0) {
    copyRows(matrix(view, K, N, N, eb), b);
    gemmCounters.operandsIn += K * N;
  }
  if (pc < 0 && (flags & GEMM_ADD) !== 0) {
    copyRows(matrix(view, M, N, N, ec), c);
    gemmCounters.operandsIn += M * N;
  }
  w.run(ec, lc, ea, la, eb, lb, M, N, K, flags);
  if (pc < 0) {
    copyRows(c, matrix(view, M, N, N, ec));
    gemmCounters.resultsOut += M * N;
  }
}

/**
 * @param m - a matrix.
 * @param own - a memory's buffer.
 * @returns the element offset of `m`'s element (0, 0) in that memory, or −1 when `m` is not a view of it.
 */
function offsetIn(m: Matrix, own: ArrayBufferLike): number {
  return m.data.buffer === own ? m.data.byteOffset / 8 + m.offset : -1;
}

/** Copies the rows of `src` into `dst` (same shape). */
function copyRows(dst: Matrix, src: Matrix): void {
  const { rows, columns } = src;
  if (src.stride === columns && dst.stride === columns) {
    dst.data.set(src.data.subarray(src.offset, src.offset + rows * columns), dst.offset);
    return;
  }
  // Short strided rows (attention head slices): a plain loop, no view allocation per row.
  for (let r = 0; r < rows; r++) {
    const s0 = src.offset + r * src.stride;
    const d0 = dst.offset + r * dst.stride;
    for (let c = 0; c < columns; c++) dst.data[d0 + c] = src.data[s0 + c] as number;
  }
}

/** The WebAssembly kernel set of one thread (see the file's comment). */
export class WasmKernels extends ProductLayers implements Kernels {
  readonly name = 'wasm' as const;
  readonly kind = 'wasm-simd' as const;
  readonly workspace: Workspace;
  readonly helpMinRows: number = 0;
  /** Row statistics of the cross-entropy (grown as needed). */
  #stats = new Float64Array(128);
  /** {@link exp} as a function value (RMSNorm's reciprocal roots, the cross-entropy's undecided rows). */
  readonly #exp = (out: Float64Array, outOff: number, x: Float64Array, xOff: number, n: number): void => this.exp(out, outOff, x, xOff, n);

  /**
   * @param config - the decoder configuration.
   * @param trace - keep traces.
   */
  constructor(config: DecoderConfig, trace: boolean) {
    super();
    this.workspace = new Workspace(config, { arena: (elements, shared) => openKernelArena(elements, shared ?? undefined), transpose: transposeWeights }, trace);
  }

  product(c: Matrix, a: Matrix, b: Matrix, flags: number): void {
    const resident = residentKernel(c.data) ?? residentKernel(a.data) ?? residentKernel(b.data);
    if (resident !== undefined) {
      wasmProduct(resident, c, a, b, flags);
      return;
    }
    const K = (flags & GEMM_TRANS_A) !== 0 ? a.rows : a.columns;
    scratchInstance ??= createWasmGemm();
    if (c.rows >= SIMD_MIN_ROWS && c.rows * c.columns * K >= SIMD_MIN_WORK && scratchInstance !== null) wasmProduct(scratchInstance, c, a, b, flags);
    else gemmJs(c, a, b, flags);
  }

  productOn(memory: WasmMemory): MemoryProduct | null {
    return createWasmGemm(memory.buffer.byteLength / 8, memory)?.run ?? null;
  }

  linearForward(out: Matrix, inp: Matrix, weight: LinearWeight): void {
    const w = weight.w;
    const arena = this.workspace.arenaMemory;
    const buffer = arena?.kernel.memory.buffer;
    if (arena !== null && out.data.buffer === buffer && inp.data.buffer === buffer && w.data.buffer === buffer) {
      // Every operand in the arena: the kernel in place.
      const own = buffer as ArrayBufferLike;
      arena.kernel.run(offsetIn(out, own), out.stride, offsetIn(inp, own), inp.stride, offsetIn(w, own), w.stride, inp.rows, w.columns, w.rows, 0);
      return;
    }
    this.product(out, inp, w, 0);
  }

  exp(out: Float64Array, outOff: number, x: Float64Array, xOff: number, n: number): void {
    batchExp(n >= WASM_MIN_EXP && wasmExpAvailable() ? wasmExpInto : null, out, outOff, x, xOff, n);
  }

  rmsNormForward(n: NormActivations, x: Matrix, gain: Float64Array, eps: number): void {
    const rows = x.rows;
    const D = x.columns;
    const [xs, out, normalized] = [contiguous(x), contiguous(n.out), contiguous(n.normalized)];
    // In place when every array is a view of one kernel arena (wasm-rmsnorm.ts: the same operations in the same order).
    if (xs === null || out === null || normalized === null || !disjointViews([out, normalized, n.inv, n.st, n.ms, xs, gain]) || !wasmRmsNormSums(n.ms, xs, rows, D)) {
      REFERENCE_LAYERS.rmsNormForward(n, x, gain, eps);
      return;
    }
    for (let r = 0; r < rows; r++) n.st[r] = (n.ms[r] as number) + eps;
    inverseRoots(n, rows, this.#exp);
    if (!wasmRmsNormScale(out, normalized, xs, gain, n.inv, rows, D)) REFERENCE_LAYERS.rmsNormForward(n, x, gain, eps);
  }

  rmsNormBackward(dx: Matrix, gainTerms: Matrix, n: NormActivations, u: Matrix, x: Matrix, gain: Float64Array): void {
    const arrays = contiguousAll([dx, n.dnormalized, u, x, gainTerms, n.normalized]);
    // The row work in place when every array but the gain terms is a view of one kernel arena; the gain terms here.
    if (arrays === null) {
      REFERENCE_LAYERS.rmsNormBackward(dx, gainTerms, n, u, x, gain);
      return;
    }
    const [d, dn, us, xs, terms, normalized] = arrays as [Float64Array, Float64Array, Float64Array, Float64Array, Float64Array, Float64Array];
    if (!disjointViews([d, dn, n.rowAdjoints, us, xs, gain, n.inv, n.st]) || !wasmRmsNormBackward(d, dn, n.rowAdjoints, us, xs, gain, n.inv, n.st, x.rows, x.columns)) {
      REFERENCE_LAYERS.rmsNormBackward(dx, gainTerms, n, u, x, gain);
      return;
    }
    for (let i = 0; i < x.rows * x.columns; i++) terms[i] = (us[i] as number) * (normalized[i] as number);
  }

  ropeForward(out: Matrix, inp: Matrix, rope: RopeTables, first: number): void {
    REFERENCE_LAYERS.ropeForward(out, inp, rope, first);
  }

  ropeBackward(dinp: Matrix, dout: Matrix, rope: RopeTables, first: number): void {
    REFERENCE_LAYERS.ropeBackward(dinp, dout, rope, first);
  }

  softmax(prob: Float64Array, pOff: number, scores: Float64Array, T: number, scale: number): boolean {
    // In place on the arena's views (wasm-softmax.ts), the undecided exps finished there with exp().
    if (wasmAttentionSoftmax(prob, pOff, scores, T, scale)) return true;
    // The loops then copy the triangle through exp's memory.
    gemmCounters.elementwiseValues += T * (T + 1);
    return false;
  }

  softmaxBackward(): boolean {
    return false;
  }

  protected swigluKernel(arrays: readonly Float64Array[], n: number, undecided: Int32Array): number {
    // One pass (in place in an arena, else chunks copied through the kernel's memory; in place, the last of an odd n is left undecided).
    const [prod, silu, sigma, gate, up] = arrays as [Float64Array, Float64Array, Float64Array, Float64Array, Float64Array];
    return n < WASM_MIN_SWIGLU || !disjointViews(arrays) ? -1 : wasmSwigluForward(prod, silu, sigma, gate, up, n, undecided);
  }

  swigluBackward(g: SwigluAdjoints, a: SwigluActivations): void {
    const n = a.gate.rows * a.gate.stride;
    const arrays = flatAll([g.gate, g.up, g.silu, g.prod, a.gate, a.sigma, a.silu, a.up]);
    if (n >= WASM_MIN_SWIGLU && arrays !== null && disjointViews(arrays)) {
      const [dgate, dup, dsilu, dprod, gate, sigma, silu, up] = arrays;
      // All of them, or all but the last of an odd n in a kernel arena.
      const done = Math.max(0, wasmSwigluBackward(dgate as Float64Array, dup as Float64Array, dsilu as Float64Array, dprod as Float64Array, gate as Float64Array, sigma as Float64Array, silu as Float64Array, up as Float64Array, n));
      for (let i = done; i < n; i++) swigluBackwardAt(g, a, i);
      return;
    }
    REFERENCE_LAYERS.swigluBackward(g, a);
  }

  crossEntropyForward(rowLoss: Float64Array, prob: Matrix, logits: Matrix, targets: Int32Array): void {
    const rows = logits.rows;
    const V = logits.columns;
    const [p, z] = [contiguous(prob), contiguous(logits)];
    if (rows * V >= WASM_MIN_CE && p !== null && z !== null && disjointViews([p, z])) {
      // One kernel (wasm-cross-entropy.ts); its rows with an undecided exp computed here.
      if (this.#stats.length < 2 * rows) this.#stats = new Float64Array(Math.max(2 * rows, 2 * this.#stats.length));
      const und = this.indices(rows);
      const count = wasmCrossEntropyRows(p, z, this.#stats, rows, V, und);
      if (count >= 0) {
        for (let k = 0; k < count; k++) crossEntropyRow(p, z, this.#stats, und[k] as number, V, this.#exp);
        rowLosses(rowLoss, z, this.#stats, targets, V);
        return;
      }
    }
    REFERENCE_LAYERS.crossEntropyForward(rowLoss, prob, logits, targets);
  }

  crossEntropyBackward(dlogits: Matrix, prob: Matrix, targets: Int32Array, k: number): void {
    REFERENCE_LAYERS.crossEntropyBackward(dlogits, prob, targets, k);
  }

}
