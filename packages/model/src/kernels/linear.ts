/**
 * A linear layer without bias, `y = x · W` with W stored [in, out]
 * (../../../../docs/spec/model.md §8; ../../../../docs/spec/backward.md §4.2), as a
 * forward/backward pair on top of the one matrix-product kernel (gemm.ts).
 *
 * These are thin names for the products the decoder pass runs, so that its
 * call sites read like the layer they compute (llm.c's `matmul_forward` /
 * `matmul_backward`); every product is the same {@link gemm} / {@link gemmTransA}
 * call as before, so the bits are unchanged. The weight and its transpose are
 * `subarray` views of the flat parameters and of the transposed weights, built
 * once per parameter version; on the WebAssembly path they are views of the
 * decoder pass's kernel arena (kernel-arena.ts), like the activations, so the
 * kernel reads and writes every operand in place (else views of a pinned
 * array stay pinned, `pinGemmOperand`). A weight's rows may be further apart
 * than its width there (the arena's padded row strides, `residentStride`):
 * each view carries its row stride, which only moves where values are read.
 *
 * Reference: llm.c `matmul_forward` / `matmul_backward` (here without bias and
 * with the weight gradient summed per sequence, then across the batch in order).
 */
import { GEMM_ADD } from './gemm-flags.ts';
import { gemm, gemmTransABeside } from './gemm.ts';

/** A linear layer's weight: W [inputs, outputs] and its transpose Wᵀ [outputs, inputs], both row-major views with row strides. */
export interface LinearWeight {
  /** (inputs, outputs) W, row-major: W[i, o] at `i·ldw + o`. */
  readonly w: Float64Array;
  /** (outputs, inputs) Wᵀ, row-major (what dx = dy·Wᵀ reads): Wᵀ[o, i] at `o·ldwT + i`. */
  readonly wT: Float64Array;
  /** Input width. */
  readonly inputs: number;
  /** Output width. */
  readonly outputs: number;
  /** Row stride of {@link w} (≥ outputs). */
  readonly ldw: number;
  /** Row stride of {@link wT} (≥ inputs). */
  readonly ldwT: number;
}

/**
 * The weight views of one linear layer.
 *
 * @param w - (inputs, outputs) W.
 * @param wT - (outputs, inputs) Wᵀ.
 * @param inputs - input width.
 * @param outputs - output width.
 * @param ldw - row stride of `w` (default `outputs`: contiguous rows).
 * @param ldwT - row stride of `wT` (default `inputs`).
 * @returns the weight.
 */
export function linearWeight(w: Float64Array, wT: Float64Array, inputs: number, outputs: number, ldw: number = outputs, ldwT: number = inputs): LinearWeight {
  return { w, wT, inputs, outputs, ldw, ldwT };
}

/** {@link linearBackward}: add dx to `dinp` (`dinp + dx`) instead of writing it (a second consumer of the same input). */
export const ADD_DINP = 1;
/** {@link linearBackward}: add the weight gradient to `dweight` instead of writing it (the in-order batch reduction). */
export const ADD_DWEIGHT = 2;
/**
 * {@link linearBackward}: `dweight` holds the gradient of Wᵀ, i.e. it is laid
 * out [outputs, inputs] (the tied head, whose weight is the embedding's transpose).
 */
export const DWEIGHT_TRANSPOSED = 4;

/**
 * `out[t, o] = Σ_i inp[t, i]·W[i, o]` for t < rows (i ascending from +0.0).
 *
 * @param out - (rows, outputs) output.
 * @param inp - (rows, inputs) input.
 * @param weight - the layer's weight.
 * @param rows - positions.
 * @param ldOut - row stride of `out` (default: its width; more for a kernel arena's padded rows).
 * @param ldIn - row stride of `inp` (default: its width).
 */
export function linearForward(out: Float64Array, inp: Float64Array, weight: LinearWeight, rows: number, ldOut: number = weight.outputs, ldIn: number = weight.inputs): void {
  const { inputs: K, outputs: N } = weight;
  gemm(out, 0, ldOut, inp, 0, ldIn, weight.w, 0, weight.ldw, rows, N, K, 0);
}

/**
 * Both adjoints of a linear layer, input adjoint first:
 * `dinp[t, i] (=|+=) Σ_o dout[t, o]·Wᵀ[o, i]`, then the weight gradient over
 * the positions of this sequence `dweight[i, o] (=|+=) Σ_t inp[t, i]·dout[t, o]`
 * (or its transpose `dweight[o, i]` with {@link DWEIGHT_TRANSPOSED}).
 *
 * @param dinp - (rows, inputs) adjoint of the input.
 * @param dweight - (inputs, outputs) weight gradient (or its transpose).
 * @param inp - (rows, inputs) the forward input.
 * @param dout - (rows, outputs) adjoint of the output.
 * @param weight - the layer's weight.
 * @param rows - positions.
 * @param flags - bitwise OR of {@link ADD_DINP}, {@link ADD_DWEIGHT}, {@link DWEIGHT_TRANSPOSED}.
 * @param ldIn - row stride of `inp` and `dinp` (default: the input width).
 * @param ldOut - row stride of `dout` (default: the output width).
 */
export function linearBackward(
  dinp: Float64Array,
  dweight: Float64Array,
  inp: Float64Array,
  dout: Float64Array,
  weight: LinearWeight,
  rows: number,
  flags: number,
  ldIn: number = weight.inputs,
  ldOut: number = weight.outputs,
): void {
  const { inputs: K, outputs: N } = weight;
  const inputAdjoint = (): void => gemm(dinp, 0, ldIn, dout, 0, ldOut, weight.wT, 0, weight.ldwT, rows, K, N, (flags & ADD_DINP) !== 0 ? GEMM_ADD : 0);
  const add = (flags & ADD_DWEIGHT) !== 0 ? GEMM_ADD : 0;
  // The two products are independent: at the end of a wave the weight gradient may go whole to a thread with no sequence left (help.ts).
  if ((flags & DWEIGHT_TRANSPOSED) !== 0) gemmTransABeside(dweight, 0, K, dout, 0, ldOut, inp, 0, ldIn, N, K, rows, add, inputAdjoint);
  else gemmTransABeside(dweight, 0, N, inp, 0, ldIn, dout, 0, ldOut, K, N, rows, add, inputAdjoint);
}

/**
 * The residual connection `out[i] = a[i] + b[i]` for i < n (llm.c `residual_forward`).
 *
 * @param out - output (may be neither input).
 * @param a - the stream.
 * @param b - the branch output.
 * @param n - elements.
 */
export function residualForward(out: Float64Array, a: Float64Array, b: Float64Array, n: number): void {
  for (let i = 0; i < n; i++) out[i] = (a[i] as number) + (b[i] as number);
}
