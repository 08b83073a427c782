/**
 * Causal attention of a training pass built on a kernel set's matrix product
 * (the native and WebAssembly sets): per head, the scores as one product with
 * the causal output mask, the softmax by the set's own kernel (or by the loops
 * below with the set's batched exp), the value mixing as one product over the
 * allowed keys; the backward pass likewise. The bits are those of
 * ../reference/layers.ts `attentionForward` / `attentionBackward`: each
 * product output is the same in-order dot product, and the masked terms a
 * row block includes are exact zeros (a sum started at +0.0 is never −0.0,
 * and x + ±0 = x).
 *
 * Heads are not moved: head h of a (T, D) buffer is its columns h·d … h·d+d−1.
 */
import { exp } from '../math/index.ts';
import { columnsOf, matrix, type Matrix } from '../reference/matrix.ts';
import { ADD_DINP, ADD_DWEIGHT, DWEIGHT_TRANSPOSED, REFERENCE_LAYERS, swigluForwardAt, type AttentionActivations, type AttentionAdjoints, type LinearWeight, type SwigluActivations } from '../reference/layers.ts';
import { flatAll } from './batched.ts';
import { GEMM_ADD, GEMM_LOWER_K, GEMM_LOWER_OUT, GEMM_TRANS_A, GEMM_UPPER_K } from './gemm-flags.ts';
import { transpose } from './gemm.ts';
import type { AttentionScratch, Workspace } from './workspace.ts';

/** What the product-based attention needs of a kernel set. */
export interface AttentionKernels {
  /** `c (=|+=) op(a)·b` with the flags of gemm-flags.ts. */
  product(c: Matrix, a: Matrix, b: Matrix, flags: number): void;
  /**
   * The forward softmax of one head, from its raw scores (T, T) on and below
   * the diagonal (scaled in place) into its weights at `pOff` of `prob`
   * (+0.0 above the diagonal), by the set's own kernel.
   * @returns false when the kernel does not take it (the loops below run).
   */
  softmax(prob: Float64Array, pOff: number, scores: Float64Array, T: number, scale: number, rowMax: Float64Array): boolean;
  /**
   * The softmax rule and the scale of one head (`draw` from `dp` and the weights at `pOff`), by the set's kernel.
   * @returns false when it does not take it.
   */
  softmaxBackward(draw: Float64Array, dp: Float64Array, prob: Float64Array, pOff: number, T: number, scale: number): boolean;
  /** `out[outOff + i] = exp(x[xOff + i])`, i < n, bit for bit (the set's batched exp). */
  exp(out: Float64Array, outOff: number, x: Float64Array, xOff: number, n: number): void;
}

/**
 * The forward pass of every head of a training pass (Q = K = T, no traces).
 *
 * @param k - the set's product, softmax and exp.
 * @param out - (T, D) merged head outputs.
 * @param att - the rotated queries and keys, the values, the weights (written).
 * @param heads - H.
 * @param scale - `1.0 / sqrt(d)`.
 * @param scratch - the workspace's attention scratch.
 */
export function productAttentionForward(k: AttentionKernels, out: Matrix, att: AttentionActivations, heads: number, scale: number, scratch: AttentionScratch): void {
  const { q, k: keys, v, prob } = att;
  const T = q.rows;
  const d = q.columns / heads;
  const scores = matrix(scratch.scores, T, T);
  const keysT = matrix(scratch.sliceT, d, T);
  for (let h = 0; h < heads; h++) {
    const hd = h * d;
    const pOff = prob.offset + h * T * prob.stride;
    // raw[i, j] = Σ_c q[i, c]·k[j, c], j ≤ i.
    transpose(keysT, columnsOf(keys, hd, d));
    k.product(scores, columnsOf(q, hd, d), keysT, GEMM_LOWER_OUT);
    if (!k.softmax(prob.data, pOff, scratch.scores, T, scale, scratch.rowMax)) softmaxRows(k, prob.data, pOff, scratch, T, scale);
    // out[i, c] = Σ_j p[i, j]·v[j, c] over the allowed j (the masked p are +0.0).
    k.product(columnsOf(out, hd, d), matrix(prob.data, T, T, prob.stride, pOff), columnsOf(v, hd, d), GEMM_LOWER_K);
  }
}

/**
 * The forward softmax of one head in loops (reference/layers.ts's operations,
 * the exps of the whole causal triangle in one batch): scaled scores, row
 * maxima and shifts, exp, the tail skipping the first exactly-zero shift, the
 * weights.
 */
function softmaxRows(k: AttentionKernels, prob: Float64Array, pOff: number, scratch: AttentionScratch, T: number, scale: number): void {
  const S = scratch.scores;
  const E = scratch.shifted;
  const M = scratch.rowMax;
  for (let i = 0; i < T; i++) {
    const row = i * T;
    let m = -Infinity;
    for (let j = 0; j <= i; j++) {
      const s = (S[row + j] as number) * scale;
      S[row + j] = s;
      if (s > m) m = s;
    }
    M[i] = m;
    const q = (i * (i + 1)) / 2;
    for (let j = 0; j <= i; j++) E[q + j] = (S[row + j] as number) - m;
  }
  k.exp(E, 0, E, 0, (T * (T + 1)) / 2);
  for (let i = 0; i < T; i++) {
    const row = i * T;
    const m = M[i] as number;
    const q = (i * (i + 1)) / 2;
    const pr = pOff + row;
    let tail = 0;
    let skipped = false;
    for (let j = 0; j <= i; j++) {
      const e = E[q + j] as number;
      prob[pr + j] = e;
      // The shift is tested, not its exp: exp of a tiny nonzero shift can round to 1.
      if (!skipped && (S[row + j] as number) - m === 0) skipped = true;
      else tail += e;
    }
    const den = 1.0 + tail;
    for (let j = 0; j <= i; j++) prob[pr + j] = (prob[pr + j] as number) / den + 0;
    for (let j = i + 1; j < T; j++) prob[pr + j] = 0;
  }
}

/**
 * The backward pass of every head of a training pass: `dp = dout·vᵀ`,
 * `dv = pᵀ·dout`, the softmax rule and scale, `dq = draw·k`, `dk = drawᵀ·q`.
 *
 * @param k - the set's product and softmax.
 * @param g - adjoints of q, k, v (written).
 * @param dout - (T, D) adjoint of the merged head outputs.
 * @param att - the forward's values.
 * @param heads - H.
 * @param scale - `1.0 / sqrt(d)`.
 * @param scratch - the workspace's attention scratch.
 */
export function productAttentionBackward(
  k: AttentionKernels,
  g: AttentionAdjoints,
  dout: Matrix,
  att: AttentionActivations,
  heads: number,
  scale: number,
  scratch: AttentionScratch,
): void {
  const { q, k: keys, v, prob } = att;
  const T = q.rows;
  const d = q.columns / heads;
  const dp = matrix(scratch.dprob, T, T);
  const draw = matrix(scratch.draw, T, T);
  const sliceT = matrix(scratch.sliceT, d, T);
  for (let h = 0; h < heads; h++) {
    const hd = h * d;
    const pOff = prob.offset + h * T * prob.stride;
    const p = matrix(prob.data, T, T, prob.stride, pOff);
    const doutH = columnsOf(dout, hd, d);
    // dp[i, k] = Σ_c dout[i, c]·v[k, c]; dv[k, c] = Σ_i p[i, k]·dout[i, c] (p read transposed in place; p[i, k] = +0 for i < k).
    transpose(sliceT, columnsOf(v, hd, d));
    k.product(dp, doutH, sliceT, GEMM_LOWER_OUT);
    k.product(columnsOf(g.v, hd, d), p, doutH, GEMM_TRANS_A | GEMM_UPPER_K);
    if (!k.softmaxBackward(scratch.draw, scratch.dprob, prob.data, pOff, T, scale)) softmaxBackwardRows(scratch, prob.data, pOff, T, scale);
    // dq[i, c] = Σ_j draw[i, j]·k[j, c] (draw[i, j] = +0 for j > i); dk[j, c] = Σ_i draw[i, j]·q[i, c] (+0 for i < j).
    k.product(columnsOf(g.q, hd, d), draw, columnsOf(keys, hd, d), GEMM_LOWER_K);
    k.product(columnsOf(g.k, hd, d), draw, columnsOf(q, hd, d), GEMM_TRANS_A | GEMM_UPPER_K);
  }
}

/** The softmax rule and scale of one head in loops: `ds = p·(dp − Σ_j dp·p) + 0`, `draw = 0 + ds·scale`, +0 above the diagonal. */
function softmaxBackwardRows(scratch: AttentionScratch, prob: Float64Array, pOff: number, T: number, scale: number): void {
  const dp = scratch.dprob;
  const draw = scratch.draw;
  for (let i = 0; i < T; i++) {
    const row = i * T;
    const pr = pOff + row;
    let w = 0;
    for (let j = 0; j <= i; j++) w += (dp[row + j] as number) * (prob[pr + j] as number);
    for (let j = 0; j <= i; j++) draw[row + j] = 0 + ((prob[pr + j] as number) * ((dp[row + j] as number) - w) + 0) * scale;
    for (let j = i + 1; j < T; j++) draw[row + j] = 0;
  }
}

/**
 * Finishes the weights whose exp a softmax kernel left undecided: `prob[pOff + i] = exp(prob[pOff + i])` (the shift it holds).
 * @param prob - the weights.
 * @param pOff - the head's offset.
 * @param undecided - the indices.
 * @param count - how many.
 */
export function finishUndecided(prob: Float64Array, pOff: number, undecided: Int32Array, count: number): void {
  for (let t = 0; t < count; t++) {
    const i = pOff + (undecided[t] as number);
    prob[i] = exp(prob[i] as number);
  }
}

/**
 * What the two product-based sets (native-set.ts, wasm-set.ts) share: the
 * linear layers' backward as two products, attention by products on the
 * workspace's scratch (the reference's own loops for traces and for a new
 * row over cached keys), and SwiGLU's forward around the set's kernel.
 */
export abstract class ProductLayers implements AttentionKernels {
  abstract readonly workspace: Workspace;
  /** Undecided indices of the element-wise kernels (grown as needed). */
  #undecided = new Int32Array(1024);
  /**
   * SwiGLU's forward over n elements of the flat arrays prod, silu, sigma, gate, up by the set's kernel: the
   * indices of the elements whose exp it left undecided go to `undecided` (the reference finishes them).
   * @returns their count, or −1 when the kernel does not take it (nothing written).
   */
  protected abstract swigluKernel(arrays: readonly Float64Array[], n: number, undecided: Int32Array): number;
  abstract product(c: Matrix, a: Matrix, b: Matrix, flags: number): void;
  abstract softmax(prob: Float64Array, pOff: number, scores: Float64Array, T: number, scale: number, rowMax: Float64Array): boolean;
  abstract softmaxBackward(draw: Float64Array, dp: Float64Array, prob: Float64Array, pOff: number, T: number, scale: number): boolean;
  abstract exp(out: Float64Array, outOff: number, x: Float64Array, xOff: number, n: number): void;

  /** The input adjoint `dout·Wᵀ`, then the weight gradient `inpᵀ·dout` (A read transposed in place). */
  linearBackward(dinp: Matrix, dweight: Matrix, inp: Matrix, dout: Matrix, weight: LinearWeight, flags: number): void {
    this.product(dinp, dout, weight.t as Matrix, (flags & ADD_DINP) !== 0 ? GEMM_ADD : 0);
    const add = (flags & ADD_DWEIGHT) !== 0 ? GEMM_ADD : 0;
    if ((flags & DWEIGHT_TRANSPOSED) !== 0) this.product(dweight, dout, inp, GEMM_TRANS_A | add);
    else this.product(dweight, inp, dout, GEMM_TRANS_A | add);
  }

  /** The set's kernel over the rows' whole strides (the padding of +0 gives +0 in prod), its undecided elements by the reference; or the reference. */
  swigluForward(a: SwigluActivations): void {
    const n = a.gate.rows * a.gate.stride;
    const arrays = flatAll([a.prod, a.silu, a.sigma, a.gate, a.up]);
    if (arrays !== null) {
      const und = this.indices(n);
      const count = this.swigluKernel(arrays, n, und);
      if (count >= 0) {
        for (let k = 0; k < count; k++) swigluForwardAt(a, und[k] as number);
        return;
      }
    }
    REFERENCE_LAYERS.swigluForward(a);
  }

  /**
   * @param n - indices needed.
   * @returns the undecided-index buffer, of at least n.
   */
  protected indices(n: number): Int32Array {
    if (this.#undecided.length < n) this.#undecided = new Int32Array(Math.max(n, 2 * this.#undecided.length));
    return this.#undecided;
  }

  attentionForward(out: Matrix, att: AttentionActivations, heads: number, scale: number): void {
    if (att.trace !== null || att.q.rows !== att.k.rows) REFERENCE_LAYERS.attentionForward(out, att, heads, scale);
    else productAttentionForward(this, out, att, heads, scale, this.workspace.attention);
  }

  attentionBackward(g: AttentionAdjoints, dout: Matrix, att: AttentionActivations, heads: number, scale: number): void {
    if (att.trace !== null) REFERENCE_LAYERS.attentionBackward(g, dout, att, heads, scale);
    else productAttentionBackward(this, g, dout, att, heads, scale, this.workspace.attention);
  }
}
