/**
 * The `native` kernel set: the layers in C (native/kernels.c, native/exp.c,
 * native/elementwise.c, loaded whole by native.ts), on any arrays in place —
 * each function the same IEEE operations in the same order as the reference
 * layer it stands for (compiled with -ffp-contract=off), exp lanes it leaves
 * undecided finished by exp() here. Calls below a few hundred elements stay
 * in the reference's loops (a native call costs ~0.3 µs).
 *
 * Memory: ordinary arrays on one thread (the kernels read anything in
 * place); on a threaded decoder the workspace opens on the shared memory each
 * thread is given (kernel-arena.ts), so that a thread with no sequence left
 * can compute rows of another's products there (../parallel/help.ts).
 */
import type { DecoderConfig } from '@llmcp/format';
import { REFERENCE_LAYERS, type LinearWeight, type NormActivations, type RopeTables, type SwigluActivations, type SwigluAdjoints } from '../reference/layers.ts';
import type { Matrix } from '../reference/matrix.ts';
import { contiguous, contiguousAll, flatAll, inverseRoots, rowLosses } from './batched.ts';
import { batchExp, expConstants, nativeExpKernel, type ExpBatchKernel } from './exp-batch.ts';
import { GEMM_TRANS_A } from './gemm-flags.ts';
import { openKernelArena } from './kernel-arena.ts';
import type { KernelKind, Kernels, MemoryProduct } from './kernel-set.ts';
import type { NativeAddon } from './native.ts';
import { finishUndecided, ProductLayers } from './product-attention.ts';
import type { WasmMemory } from './wasm-assembler.ts';
import { transposeWeights } from './wasm-transpose.ts';
import { Workspace } from './workspace.ts';

/** Below this many elements (rows · D, rows · V, F · rows) a native element-wise call does not pay. */
const NATIVE_MIN = 256;
/** SwiGLU and the cross-entropy: from this many elements. */
const NATIVE_MIN_ROWWISE = 64;
/** The batched exp: from this many elements. */
const NATIVE_MIN_EXP = 32;
/** Fewer rows than this are not handed to another thread: see ../parallel/help.ts. */
const NATIVE_HELP_MIN_ROWS = 64;

/** The native kernel set of one thread (see the file's comment). */
export class NativeKernels extends ProductLayers implements Kernels {
  readonly name = 'native' as const;
  readonly kind: KernelKind;
  readonly workspace: Workspace;
  readonly helpMinRows: number = NATIVE_HELP_MIN_ROWS;
  readonly #n: NativeAddon;
  readonly #gemm: NativeAddon['gemm'];
  readonly #expKernel: ExpBatchKernel;
  /** Row statistics of the cross-entropy (grown as needed). */
  #stats = new Float64Array(128);
  /** {@link exp} as a function value (RMSNorm's reciprocal roots). */
  readonly #exp = (out: Float64Array, outOff: number, x: Float64Array, xOff: number, n: number): void => this.exp(out, outOff, x, xOff, n);

  /**
   * @param addon - the loaded addon.
   * @param config - the decoder configuration.
   * @param trace - keep traces.
   */
  constructor(addon: NativeAddon, config: DecoderConfig, trace: boolean) {
    super();
    this.#n = addon;
    this.#gemm = addon.gemm;
    this.#expKernel = nativeExpKernel(addon);
    this.kind = `native-${addon.path()}`;
    // The weights' transposes (once per update) in C: in an arena or not, about 3× the WebAssembly kernel's speed.
    const transpose = (dst: Matrix, src: Matrix): void => {
      if (addon.transpose(dst.data, dst.offset, dst.stride, src.data, src.offset, src.stride, src.rows, src.columns) < 0) transposeWeights(dst, src);
    };
    this.workspace = new Workspace(config, { arena: (elements, shared) => (shared === null ? null : openKernelArena(elements, shared)), transpose }, trace);
  }

  product(c: Matrix, a: Matrix, b: Matrix, flags: number): void {
    const K = (flags & GEMM_TRANS_A) !== 0 ? a.rows : a.columns;
    this.#gemm(c.data, c.offset, c.stride, a.data, a.offset, a.stride, b.data, b.offset, b.stride, c.rows, c.columns, K, flags);
  }

  productOn(memory: WasmMemory): MemoryProduct {
    const view = new Float64Array(memory.buffer);
    const gemm = this.#gemm;
    return (c, ldc, a, lda, b, ldb, M, N, K, flags) => gemm(view, c, ldc, view, a, lda, view, b, ldb, M, N, K, flags);
  }

  linearForward(out: Matrix, inp: Matrix, weight: LinearWeight): void {
    const w = weight.w;
    this.#gemm(out.data, out.offset, out.stride, inp.data, inp.offset, inp.stride, w.data, w.offset, w.stride, inp.rows, w.columns, w.rows, 0);
  }

  exp(out: Float64Array, outOff: number, x: Float64Array, xOff: number, n: number): void {
    batchExp(n >= NATIVE_MIN_EXP ? this.#expKernel : null, out, outOff, x, xOff, n);
  }

  rmsNormForward(n: NormActivations, x: Matrix, gain: Float64Array, eps: number): void {
    const rows = x.rows;
    const D = x.columns;
    const [xs, out, normalized] = [contiguous(x), contiguous(n.out), contiguous(n.normalized)];
    if (rows * D < NATIVE_MIN || xs === null || out === null || normalized === null || this.#n.rmsNormSums(n.ms, n.st, xs, rows, D, eps) < 0) {
      REFERENCE_LAYERS.rmsNormForward(n, x, gain, eps);
      return;
    }
    inverseRoots(n, rows, this.#exp);
    if (this.#n.rmsNormScale(out, normalized, xs, gain, n.inv, rows, D) < 0) REFERENCE_LAYERS.rmsNormForward(n, x, gain, eps);
  }

  rmsNormBackward(dx: Matrix, gainTerms: Matrix, n: NormActivations, u: Matrix, x: Matrix, gain: Float64Array): void {
    const arrays = x.rows * x.columns >= NATIVE_MIN ? contiguousAll([dx, gainTerms, n.normalized, n.dnormalized, u, x]) : null;
    if (arrays !== null) {
      const [d, terms, normalized, dn, us, xs] = arrays as [Float64Array, Float64Array, Float64Array, Float64Array, Float64Array, Float64Array];
      if (this.#n.rmsNormBackward(d, terms, normalized, n.inv, n.st, dn, n.rowAdjoints, us, xs, gain, x.rows, x.columns) >= 0) return;
    }
    REFERENCE_LAYERS.rmsNormBackward(dx, gainTerms, n, u, x, gain);
  }

  ropeForward(out: Matrix, inp: Matrix, rope: RopeTables, first: number): void {
    if (!this.#rope(out, inp, rope, first, 0)) REFERENCE_LAYERS.ropeForward(out, inp, rope, first);
  }

  ropeBackward(dinp: Matrix, dout: Matrix, rope: RopeTables, first: number): void {
    if (!this.#rope(dinp, dout, rope, first, 1)) REFERENCE_LAYERS.ropeBackward(dinp, dout, rope, first);
  }

  /** The rotation in C, rows from position 0; false when it does not take it. */
  #rope(dst: Matrix, src: Matrix, rope: RopeTables, first: number, back: number): boolean {
    const T = src.rows;
    const D = src.columns;
    const half = rope.inverseFrequencies.length;
    const [d, s] = [contiguous(dst), contiguous(src)];
    if (first !== 0 || T * D < NATIVE_MIN || rope.cosines.length < T * half || d === null || s === null) return false;
    return this.#n.rope(d, s, rope.cosines, rope.sines, T, D, 2 * half, back) === 0;
  }

  softmax(prob: Float64Array, pOff: number, scores: Float64Array, T: number, scale: number, rowMax: Float64Array): boolean {
    const und = this.indices(T * T);
    const count = this.#n.attentionSoftmax(prob, pOff, scores, T, scale, rowMax, und, expConstants());
    if (count < 0) return false;
    finishUndecided(prob, pOff, und, count);
    this.#n.attentionSoftmaxRows(prob, pOff, scores, T, rowMax);
    return true;
  }

  softmaxBackward(draw: Float64Array, dp: Float64Array, prob: Float64Array, pOff: number, T: number, scale: number): boolean {
    return this.#n.attentionSoftmaxBackward(draw, dp, prob, pOff, T, scale) >= 0;
  }

  protected swigluKernel(arrays: readonly Float64Array[], n: number, undecided: Int32Array): number {
    // In L1-sized blocks (native/elementwise.c).
    const [prod, silu, sigma, gate, up] = arrays as [Float64Array, Float64Array, Float64Array, Float64Array, Float64Array];
    return n < NATIVE_MIN_ROWWISE ? -1 : this.#n.swigluForward(prod, silu, sigma, gate, up, n, undecided, expConstants());
  }

  swigluBackward(g: SwigluAdjoints, a: SwigluActivations): void {
    const n = a.gate.rows * a.gate.stride;
    const arrays = n >= NATIVE_MIN_ROWWISE ? flatAll([g.gate, g.up, g.silu, g.prod, a.gate, a.sigma, a.silu, a.up]) : null;
    if (arrays !== null) {
      const [dgate, dup, dsilu, dprod, gate, sigma, silu, up] = arrays as [Float64Array, Float64Array, Float64Array, Float64Array, Float64Array, Float64Array, Float64Array, Float64Array];
      if (this.#n.swigluBackward(dgate, dup, dsilu, dprod, gate, sigma, silu, up, n) >= 0) return;
    }
    REFERENCE_LAYERS.swigluBackward(g, a);
  }

  crossEntropyForward(rowLoss: Float64Array, prob: Matrix, logits: Matrix, targets: Int32Array): void {
    const rows = logits.rows;
    const V = logits.columns;
    const [p, z] = [contiguous(prob), contiguous(logits)];
    if (rows * V >= NATIVE_MIN_ROWWISE && p !== null && z !== null) {
      // m and exp(z − m) in C, the undecided exps finished here with exp(), then the tails and probabilities.
      if (this.#stats.length < 2 * rows) this.#stats = new Float64Array(Math.max(2 * rows, 2 * this.#stats.length));
      const und = this.indices(rows * V);
      const count = this.#n.crossEntropyShifts(p, z, this.#stats, rows, V, und, expConstants());
      if (count >= 0) {
        finishUndecided(p, 0, und, count);
        this.#n.crossEntropyRows(p, z, this.#stats, rows, V);
        rowLosses(rowLoss, z, this.#stats, targets, V);
        return;
      }
    }
    REFERENCE_LAYERS.crossEntropyForward(rowLoss, prob, logits, targets);
  }

  crossEntropyBackward(dlogits: Matrix, prob: Matrix, targets: Int32Array, k: number): void {
    const rows = prob.rows;
    const V = prob.columns;
    const [d, p] = [contiguous(dlogits), contiguous(prob)];
    if (rows * V >= NATIVE_MIN_ROWWISE && d !== null && p !== null && this.#n.crossEntropyBackward(d, p, targets, 0, rows, V, k) >= 0) return;
    REFERENCE_LAYERS.crossEntropyBackward(dlogits, prob, targets, k);
  }

}
