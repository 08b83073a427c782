/**
 * The decoder's forward and backward pass over one sequence
 * (../../../../docs/spec/model.md §5–13, ../../../../docs/spec/backward.md
 * §2–5), like llm.c's `gpt2_forward` / `gpt2_backward`: one line per layer,
 * on the buffers and weights it is given, through the layers of a
 * {@link KernelSet} (layers.ts is the reference one). Where the buffers live
 * and which thread runs the pass is not this file's business: the kernel
 * sets place the memory (../kernels/workspace.ts) and the threads split a
 * batch by whole sequences (../parallel/).
 *
 * A batch of B sequences interacts only through three sums, done by the
 * caller in a fixed order (../batch.ts): the weight gradients (this pass
 * writes the sequence's S_b, or adds it when the sequences run in order b =
 * 0, 1, …), the gain gradients and the embedding lookup (this pass writes
 * per-row terms and its input's adjoint), and the loss (per-row losses).
 */
import type { Matrix } from './matrix.ts';
import { rowsOf } from './matrix.ts';
import { ADD_DINP, ADD_DWEIGHT, DWEIGHT_TRANSPOSED, embeddingForward, residualForward, type AttentionActivations, type AttentionAdjoints, type KernelSet, type LinearWeight, type NormActivations, type RopeTables, type SwigluActivations, type SwigluAdjoints } from './layers.ts';

/** One block's weights: the two gains and seven projections. */
export interface BlockWeights {
  /** (D) attention norm gain. */
  readonly attentionNorm: Float64Array;
  /** (D, D) each. */
  readonly query: LinearWeight;
  readonly key: LinearWeight;
  readonly value: LinearWeight;
  readonly output: LinearWeight;
  /** (D) feed-forward norm gain. */
  readonly ffnNorm: Float64Array;
  /** (D, F) each. */
  readonly gate: LinearWeight;
  readonly up: LinearWeight;
  /** (F, D). */
  readonly down: LinearWeight;
}

/** Every weight of the decoder. */
export interface DecoderWeights {
  /** (V, D) the embedding table E. */
  readonly embedding: Matrix;
  readonly blocks: readonly BlockWeights[];
  /** (D) final norm gain. */
  readonly finalNorm: Float64Array;
  /** The tied head (../../../../docs/spec/model.md §12): W = Eᵀ (D, V), whose transpose is E. */
  readonly head: LinearWeight;
}

/** What a block reads besides its weights. */
export interface BlockConstants {
  /** H. */
  readonly heads: number;
  /** `1.0 / sqrt(d)`, computed once (../../../../docs/spec/model.md §9.4). */
  readonly scale: number;
  /** RMSNorm epsilon. */
  readonly eps: number;
  /** RoPE tables covering every position the rows take. */
  readonly rope: RopeTables;
  /** The position of row 0 (0 but for cached decoding). */
  readonly first: number;
}

/** One block's activations for T rows. */
export interface BlockActivations {
  /** The attention norm of the block input x. */
  readonly n1: NormActivations;
  /** (T, D) `n1 · Wq`, `n1 · Wk`, `n1 · Wv`. */
  readonly q: Matrix;
  readonly k: Matrix;
  readonly v: Matrix;
  /** (T, D) the rotated queries and keys. */
  readonly qr: Matrix;
  readonly kr: Matrix;
  /** What attention reads (qr, and the keys and values of every position attended: kr and v when training) and its weights. */
  readonly att: AttentionActivations;
  /** (T, D) the heads' outputs, merged. */
  readonly merged: Matrix;
  /** (T, D) `merged · Wo`. */
  readonly attention: Matrix;
  /** (T, D) `x + attention`. */
  readonly h1: Matrix;
  /** The feed-forward norm of h1. */
  readonly n2: NormActivations;
  /** (T, F) gate, up and SwiGLU's values. */
  readonly glu: SwigluActivations;
  /** (T, D) `prod · Wd`. */
  readonly ffn: Matrix;
}

/** One block's adjoints for T rows. */
export interface BlockAdjoints {
  /** (T, D) adjoint of h1. */
  readonly h1: Matrix;
  /** (T, D) adjoint of the feed-forward norm's output. */
  readonly n2: Matrix;
  /** (T, F) adjoints of SwiGLU's values. */
  readonly glu: SwigluAdjoints;
  /** (T, D) adjoint of merged. */
  readonly merged: Matrix;
  /** (T, D) adjoints of the rotated queries and keys and of the values. */
  readonly att: AttentionAdjoints;
  /** (T, D) adjoints of q and k before RoPE. */
  readonly q: Matrix;
  readonly k: Matrix;
  /** (T, D) adjoint of the attention norm's output. */
  readonly n1: Matrix;
}

/** Where one sequence's gradients go: its weight gradient S_b and its share of the batch sums. */
export interface BlockGradients {
  /** (D, D), (D, F), (F, D): the projections' gradients. */
  readonly query: Matrix;
  readonly key: Matrix;
  readonly value: Matrix;
  readonly output: Matrix;
  readonly gate: Matrix;
  readonly up: Matrix;
  readonly down: Matrix;
  /** (T, D) the per-row terms of the two gains' gradients. */
  readonly attentionNorm: Matrix;
  readonly ffnNorm: Matrix;
}

/** Where one sequence's backward pass writes. */
export interface Gradients {
  /** (V, D) dE: the head's contribution (dEᵀ, stored as [V, D]). */
  readonly embedding: Matrix;
  readonly blocks: readonly BlockGradients[];
  /** (T, D) the per-row terms of the final gain's gradient. */
  readonly finalNorm: Matrix;
  /** (T, D) the adjoint of the embedding output, which the batch adds into dE (../../../../docs/spec/backward.md §4.4). */
  readonly dx0: Matrix;
  /** Add S_b to the weight gradients (the batch's in-order sum, sequence b after b − 1) instead of writing it. */
  readonly add: boolean;
  /** `1.0 / N`, N the tokens of the whole batch. */
  readonly scale: number;
}

/** Every activation of one sequence of T positions. */
export interface Activations {
  /** (T, D) the residual stream: hs[0] the embedding output, hs[l + 1] block l's output. */
  readonly hs: readonly Matrix[];
  readonly blocks: readonly BlockActivations[];
  readonly finalNorm: NormActivations;
  /** (T, V) logits, probabilities, and (T) row losses. */
  readonly logits: Matrix;
  readonly prob: Matrix;
  readonly rowLoss: Float64Array;
}

/** Every adjoint of one sequence. */
export interface Adjoints {
  /** (T, D) adjoints of hs. */
  readonly dhs: readonly Matrix[];
  readonly blocks: readonly BlockAdjoints[];
  /** (T, V) adjoint of the logits. */
  readonly dlogits: Matrix;
  /** (T, D) adjoint of the final norm's output. */
  readonly dnf: Matrix;
}

/** What a pass over one sequence reads and writes (llm.c's `GPT2`): the weights, the buffers and the constants. */
export interface DecoderState {
  readonly weights: DecoderWeights;
  readonly acts: Activations;
  readonly adjoints: Adjoints;
  readonly constants: BlockConstants;
}

/** One sequence: `tokens[offset …]`, T = the buffers' rows. */
export interface Sequence {
  readonly tokens: ArrayLike<number>;
  readonly offset: number;
  /** (T) the targets, or null (logits only). */
  readonly targets: Int32Array | null;
  /** The first row whose logits are needed (0 when training; T − 1 for the next token). */
  readonly logitsFrom: number;
}

/**
 * One block (../../../../docs/spec/model.md §9–11): pre-norm attention, then pre-norm SwiGLU, each added to the stream.
 *
 * @param k - the layers.
 * @param a - the block's activations (written).
 * @param w - the block's weights.
 * @param x - (T, D) the block input.
 * @param out - (T, D) the block output.
 * @param c - heads, scale, epsilon, RoPE.
 */
export function blockForward(k: KernelSet, a: BlockActivations, w: BlockWeights, x: Matrix, out: Matrix, c: BlockConstants): void {
  k.rmsNormForward(a.n1, x, w.attentionNorm, c.eps); // §7
  k.linearForward(a.q, a.n1.out, w.query); // §9.1
  k.linearForward(a.k, a.n1.out, w.key);
  k.linearForward(a.v, a.n1.out, w.value);
  k.ropeForward(a.qr, a.q, c.rope, c.first); // §9.2
  k.ropeForward(a.kr, a.k, c.rope, c.first);
  k.attentionForward(a.merged, a.att, c.heads, c.scale); // §9.4–9.6
  k.linearForward(a.attention, a.merged, w.output);
  residualForward(a.h1, x, a.attention); // §10
  k.rmsNormForward(a.n2, a.h1, w.ffnNorm, c.eps);
  k.linearForward(a.glu.gate, a.n2.out, w.gate); // §11
  k.linearForward(a.glu.up, a.n2.out, w.up);
  k.swigluForward(a.glu);
  k.linearForward(a.ffn, a.glu.prod, w.down);
  residualForward(out, a.h1, a.ffn);
}

/**
 * One block backward (../../../../docs/spec/backward.md §5), the reference's order: the
 * feed-forward branch, then attention; a tensor with several consumers
 * receives their contributions in the order of ../../../../docs/spec/backward.md §3.
 *
 * @param k - the layers.
 * @param g - the block's adjoints (written).
 * @param dw - where its gradients go (`add`: added to them).
 * @param a - its forward activations.
 * @param w - its weights.
 * @param io - x, the block input; dx, its adjoint (written); dout, the adjoint of the output.
 * @param c - heads, scale, RoPE; and `add`, the flag for the weight gradients.
 */
export function blockBackward(
  k: KernelSet,
  g: BlockAdjoints,
  dw: BlockGradients,
  a: BlockActivations,
  w: BlockWeights,
  io: { readonly x: Matrix; readonly dx: Matrix; readonly dout: Matrix },
  c: BlockConstants & { readonly add: number },
): void {
  const { x, dx, dout } = io;
  const add = c.add;
  residualBackward(g.h1, dout); // h2 = h1 + ffn: h1 receives dout, and so does ffn
  k.linearBackward(g.glu.prod, dw.down, a.glu.prod, dout, w.down, add);
  k.swigluBackward(g.glu, a.glu);
  k.linearBackward(g.n2, dw.up, a.n2.out, g.glu.up, w.up, add); // n2: up first, then gate
  k.linearBackward(g.n2, dw.gate, a.n2.out, g.glu.gate, w.gate, add | ADD_DINP);
  k.rmsNormBackward(g.h1, dw.ffnNorm, a.n2, g.n2, a.h1, w.ffnNorm);
  residualBackward(dx, g.h1); // h1 = x + attention
  k.linearBackward(g.merged, dw.output, a.merged, g.h1, w.output, add);
  k.attentionBackward(g.att, g.merged, a.att, c.heads, c.scale);
  k.linearBackward(g.n1, dw.value, a.n1.out, g.att.v, w.value, add); // n1: value, key, then query
  k.ropeBackward(g.k, g.att.k, c.rope, c.first);
  k.linearBackward(g.n1, dw.key, a.n1.out, g.k, w.key, add | ADD_DINP);
  k.ropeBackward(g.q, g.att.q, c.rope, c.first);
  k.linearBackward(g.n1, dw.query, a.n1.out, g.q, w.query, add | ADD_DINP);
  k.rmsNormBackward(dx, dw.attentionNorm, a.n1, g.n1, x, w.attentionNorm);
}

/**
 * The forward pass of one sequence (../../../../docs/spec/model.md §5): the embedding, every
 * block, the final norm, the tied head's logits of rows `logitsFrom …` and,
 * with targets, the probabilities and row losses.
 *
 * @param k - the layers.
 * @param s - weights, buffers and constants.
 * @param seq - the sequence.
 */
export function decoderForward(k: KernelSet, s: DecoderState, seq: Sequence): void {
  const { weights: W, acts: a, constants: c } = s;
  const L = W.blocks.length;
  embeddingForward(a.hs[0]!, W.embedding, seq.tokens, seq.offset); // §6
  for (let l = 0; l < L; l++) blockForward(k, a.blocks[l]!, W.blocks[l]!, a.hs[l]!, a.hs[l + 1]!, c);
  k.rmsNormForward(a.finalNorm, a.hs[L]!, W.finalNorm, c.eps); // §12
  const T = a.logits.rows;
  const from = seq.logitsFrom;
  k.linearForward(rowsOf(a.logits, from, T - from), rowsOf(a.finalNorm.out, from, T - from), W.head);
  if (seq.targets !== null) k.crossEntropyForward(a.rowLoss, a.prob, a.logits, seq.targets); // §13
}

/**
 * The backward pass of the sequence {@link decoderForward} last ran (with
 * targets, every row's logits), in the reference tape's order: the loss and
 * head, the final norm, then the blocks from the last.
 *
 * @param k - the layers.
 * @param s - weights, buffers (the forward's activations; the adjoints are written) and constants.
 * @param seq - the sequence.
 * @param dW - where the gradients go.
 */
export function decoderBackward(k: KernelSet, s: DecoderState, seq: Sequence, dW: Gradients): void {
  const { weights: W, acts: a, adjoints: g, constants } = s;
  const L = W.blocks.length;
  const add = dW.add ? ADD_DWEIGHT : 0;
  k.crossEntropyBackward(g.dlogits, a.prob, seq.targets as Int32Array, dW.scale); // ../../../../docs/spec/backward.md §4.1
  k.linearBackward(g.dnf, dW.embedding, a.finalNorm.out, g.dlogits, W.head, add | DWEIGHT_TRANSPOSED);
  clear(g.dhs[L]!); // h2 of the last block: the final norm is its only consumer
  k.rmsNormBackward(g.dhs[L]!, dW.finalNorm, a.finalNorm, g.dnf, a.hs[L]!, W.finalNorm);
  const c = { ...constants, add };
  for (let l = L - 1; l >= 0; l--) {
    blockBackward(k, g.blocks[l]!, dW.blocks[l]!, a.blocks[l]!, W.blocks[l]!, { x: a.hs[l]!, dx: g.dhs[l]!, dout: g.dhs[l + 1]! }, c);
  }
  residualBackward(dW.dx0, g.dhs[0]!); // to the batch's embedding lookup sum
}

/** The identity path's adjoint, `0 + u`: a copy (an adjoint is never −0 here). */
function residualBackward(dst: Matrix, u: Matrix): void {
  const { rows, columns } = u;
  if (u.stride === columns && dst.stride === columns) {
    dst.data.set(u.data.subarray(u.offset, u.offset + rows * columns), dst.offset);
    return;
  }
  for (let r = 0; r < rows; r++) for (let c = 0; c < columns; c++) dst.data[dst.offset + r * dst.stride + c] = u.data[u.offset + r * u.stride + c] as number;
}

/** Sets every element of `m` to +0.0. */
function clear(m: Matrix): void {
  for (let r = 0; r < m.rows; r++) m.data.fill(0, m.offset + r * m.stride, m.offset + r * m.stride + m.columns);
}
