/**
 * The decoder pass: forward and backward of ONE sequence of the decoder, with
 * preallocated activation buffers (../../../docs/spec/model.md §5–13; ../../../docs/spec/backward.md §2–5).
 *
 * Rows of different sequences never interact except through three batch-wide
 * reductions: the weight gradients (a per-sequence sum over positions, then
 * across sequences in order b = 0, 1, …: ../../../docs/spec/backward.md §4.2), the RMSNorm gain
 * gradients and the embedding-lookup gradient (flat sums over all rows in
 * row-major order: §4.6, §4.4), and the loss (a flat sum of row losses). So one
 * sequence's work is independent: it writes its per-sequence weight partials
 * S_b, its gain terms, its input adjoint and its row losses into caller-given
 * slots, and the batch reduction (internal/batch-reduce.ts) adds them in the fixed
 * order. Which thread ran which sequence therefore cannot change any bit. (A
 * single thread running the sequences in order instead adds each S_b straight
 * into the accumulator with GEMM_ADD: the same additions in the same order.)
 *
 * The call sites read like the layers they run (llm.c's `gpt2_forward` /
 * `gpt2_backward`): each linear layer is `linearForward(out, inp, weight, T)` /
 * `linearBackward(dinp, dweight, inp, dout, weight, T, flags)` (kernels/linear.ts)
 * on per-tensor views of the parameters, of their transposes and of the
 * gradient slot, built once; each norm passes its saved values as one object.
 */
import type { DecoderConfig } from '@llmcp/format';
import { validateDecoderConfig } from './config.ts';
import { ModelError } from './errors.ts';
import { modelViews, parameterLayout, type ModelViews, type ParameterLayout } from './layout.ts';
import { attentionBackward, attentionForward, attentionScratch, type AttentionScratch, type AttentionTrace } from './kernels/attention.ts';
import { crossEntropyBackward, crossEntropyForward } from './kernels/cross-entropy.ts';
import { pinGemmOperand, transpose } from './kernels/gemm.ts';
import { ADD_DINP, ADD_DWEIGHT, DWEIGHT_TRANSPOSED, linearBackward, linearForward, linearWeight, residualForward, type LinearWeight } from './kernels/linear.ts';
import { rmsNormBackward, rmsNormForward, type NormActivations } from './kernels/rmsnorm.ts';
import { extendRopeTables, ropeBackward, ropeForward, ropeTables, type RopeTables } from './kernels/rope.ts';
import { swigluBackward, swigluForward } from './kernels/swiglu.ts';

export type { NormActivations } from './kernels/rmsnorm.ts';

/** Activations of one block for one sequence. */
export interface BlockActivations {
  readonly attentionNorm: NormActivations;
  /** (T, D) `n1 · Wq` before RoPE. */
  readonly q: Float64Array;
  /** (T, D) `n1 · Wk` before RoPE. */
  readonly k: Float64Array;
  /** (T, D) `n1 · Wv`. */
  readonly v: Float64Array;
  /** (T, D) rotated queries. */
  readonly qr: Float64Array;
  /** (T, D) rotated keys. */
  readonly kr: Float64Array;
  /** (H, T, T) attention weights, masked entries +0. */
  readonly prob: Float64Array;
  /** (T, D) merged head outputs. */
  readonly merged: Float64Array;
  /** (T, D) attention output `merged · Wo`. */
  readonly attention: Float64Array;
  /** (T, D) `x + attention`. */
  readonly h1: Float64Array;
  readonly ffnNorm: NormActivations;
  /** (T, F) gate projection. */
  readonly gate: Float64Array;
  /** (T, F) sigmoid of the gate. */
  readonly sigma: Float64Array;
  /** (T, F) `gate · sigma`. */
  readonly silu: Float64Array;
  /** (T, F) up projection. */
  readonly up: Float64Array;
  /** (T, F) `silu · up`. */
  readonly prod: Float64Array;
  /** (T, D) `prod · Wd`. */
  readonly ffn: Float64Array;
  /** Full-grid attention traces (trace mode only). */
  readonly trace: AttentionTrace | null;
}

/** Adjoints of one block (shared by all blocks except in trace mode, where each block has its own). */
export interface BlockAdjoints {
  /** (T, D) adjoint of h1. */
  readonly h1: Float64Array;
  /** (T, F) adjoint of prod. */
  readonly prod: Float64Array;
  /** (T, F) adjoint of silu. */
  readonly silu: Float64Array;
  /** (T, F) adjoint of up. */
  readonly up: Float64Array;
  /** (T, F) adjoint of gate. */
  readonly gate: Float64Array;
  /** (T, D) adjoint of the ffn norm output n2. */
  readonly n2: Float64Array;
  /** (T, D) adjoint of merged. */
  readonly merged: Float64Array;
  /** (T, D) adjoint of the rotated queries. */
  readonly qr: Float64Array;
  /** (T, D) adjoint of the rotated keys. */
  readonly kr: Float64Array;
  /** (T, D) adjoint of q before RoPE. */
  readonly q: Float64Array;
  /** (T, D) adjoint of k before RoPE. */
  readonly k: Float64Array;
  /** (T, D) adjoint of v. */
  readonly v: Float64Array;
  /** (T, D) adjoint of the attention norm output n1. */
  readonly n1: Float64Array;
}

/** One block's weights as views: the gains, and each projection with its transpose. */
export interface BlockWeights {
  /** (D) attention norm gain. */
  readonly attentionNorm: Float64Array;
  readonly query: LinearWeight;
  readonly key: LinearWeight;
  readonly value: LinearWeight;
  readonly output: LinearWeight;
  /** (D) feed-forward norm gain. */
  readonly ffnNorm: Float64Array;
  readonly gate: LinearWeight;
  readonly up: LinearWeight;
  readonly down: LinearWeight;
}

/** Every weight of the decoder as views of the parameters and of the transposed weights. */
export interface DecoderWeights {
  /** (V, D) the embedding table E. */
  readonly embedding: Float64Array;
  readonly blocks: readonly BlockWeights[];
  /** (D) final norm gain. */
  readonly finalNorm: Float64Array;
  /** The tied head: W = Eᵀ [D, V] (the transposed copy), Wᵀ = E itself. */
  readonly head: LinearWeight;
}

/** One sequence of a batch: `tokens[offset … offset+positions−1]` (and the targets at the same offsets). */
export interface SequenceRef {
  /** Token ids. */
  readonly tokens: ArrayLike<number>;
  /** Target ids, or null (logits only). */
  readonly targets: ArrayLike<number> | null;
  /** Offset of the sequence in `tokens`/`targets`. */
  readonly offset: number;
  /** T, the positions (≤ maxPositions; validated by the caller). */
  readonly positions: number;
}

/** Where one sequence writes its share of the batch reduction. */
export interface SequenceSlots {
  /** Per-row losses; this sequence writes T of them from `rowLossOff`. */
  readonly rowLoss: Float64Array;
  readonly rowLossOff: number;
  /** Weight partials S_b laid out like the parameters, from `partialOff` (gain slots untouched). */
  readonly partial: Float64Array;
  readonly partialOff: number;
  /**
   * Add S_b to `partial` (`partial + S_b`, GEMM_ADD) instead of writing it:
   * the batch reduction done in place, valid only when the sequences of a
   * batch run one after another in order b = 0, 1, … (first one writes).
   */
  readonly accumulate: boolean;
  /** Gain terms: gain g (0 … 2L, norms in model order), this sequence's rows from `g·gainStride + gainOff`. */
  readonly gainTerms: Float64Array;
  readonly gainStride: number;
  readonly gainOff: number;
  /** (T, D) adjoint of the embedding output, from `dx0Off`. */
  readonly dx0: Float64Array;
  readonly dx0Off: number;
}

/** Sizes of every buffer of one sequence of T positions: the one table the buffers are allocated from. */
function sizeTable(T: number, config: DecoderConfig) {
  const { modelWidth: D, feedForwardWidth: F, vocabularySize: V, heads: H } = config;
  const TD = T * D;
  const TF = T * F;
  const HTT = H * T * T;
  return {
    norm: { out: TD, normalized: TD, inv: T, st: T, ms: T, dnormalized: TD, rowAdjoints: T * 5 },
    block: { q: TD, k: TD, v: TD, qr: TD, kr: TD, prob: HTT, merged: TD, attention: TD, h1: TD, gate: TF, sigma: TF, silu: TF, up: TF, prod: TF, ffn: TD },
    blockAdjoints: { h1: TD, prod: TF, silu: TF, up: TF, gate: TF, n2: TD, merged: TD, qr: TD, kr: TD, q: TD, k: TD, v: TD, n1: TD },
    attentionTrace: { raw: HTT, scaled: HTT, dprob: HTT, dscaled: HTT, draw: HTT },
    head: { logits: T * V, prob: T * V, rowLoss: T, dlogits: T * V, dnf: TD },
    stream: TD,
  };
}

/** One zeroed Float64Array per entry of a size table. */
function allocate<K extends string>(sizes: Readonly<Record<K, number>>): Record<K, Float64Array> {
  const out = {} as Record<K, Float64Array>;
  for (const key of Object.keys(sizes) as K[]) out[key] = new Float64Array(sizes[key]);
  return out;
}

/**
 * One thread's decoder workspace: runs sequences of up to `capacity`
 * positions. Not thread-safe; each worker owns one.
 */
export class DecoderPass {
  readonly config: DecoderConfig;
  readonly layout: ParameterLayout;
  readonly headWidth: number;
  /** `1.0 / sqrt(d)`, computed once (../../../docs/spec/model.md §9.4). */
  readonly scale: number;
  /**
   * RoPE tables for positions 0 … capacity−1, grown with the buffers: never
   * sized by `config.maxPositions`, which may be far larger than any sequence
   * run (the format allows up to 2^53 − 1).
   */
  rope: RopeTables;
  /** Keep full-grid attention values and per-block adjoints (forward-trace tests). */
  readonly trace: boolean;

  /** Positions the buffers are sized for. */
  capacity = 0;
  /** (T, D) residual stream: hs[0] = embedding output, hs[l+1] = output of block l. */
  hs: Float64Array[] = [];
  /** (T, D) adjoints of hs[l]. */
  dhs: Float64Array[] = [];
  blocks: BlockActivations[] = [];
  blockAdjoints: BlockAdjoints[] = [];
  finalNorm!: NormActivations;
  /** (T, V) logits. */
  logits!: Float64Array;
  /** (T, V) softmax probabilities of the loss. */
  prob!: Float64Array;
  /** (T) per-row loss. */
  rowLoss!: Float64Array;
  /** (T, V) adjoint of the logits. */
  dlogits!: Float64Array;
  /** (T, D) adjoint of the final norm output. */
  dnf!: Float64Array;
  #attention!: AttentionScratch;
  /** Transposed projection weights ([out, in]) and Eᵀ ([D, V]) at the parameter offsets. */
  readonly #wT: Float64Array;
  #preparedVersion = -1;
  /** The parameters of the last {@link prepare} and their views (live: built once per parameter array). */
  #params: Float64Array | null = null;
  #weights: DecoderWeights | null = null;
  /** Views of the gradient slots written so far, by slot offset, of the array `#gradientArray`. */
  #gradientArray: Float64Array | null = null;
  readonly #gradientViews = new Map<number, ModelViews>();

  /**
   * @param config - a valid decoder configuration.
   * @param trace - keep traces (slower; tests only).
   */
  constructor(config: DecoderConfig, trace = false) {
    this.headWidth = validateDecoderConfig(config);
    this.config = config;
    this.layout = parameterLayout(config);
    this.scale = 1.0 / Math.sqrt(this.headWidth);
    this.rope = ropeTables(0, this.headWidth, config.ropeBase);
    this.trace = trace;
    this.#wT = new Float64Array(this.layout.size);
  }

  /**
   * Grows the buffers (and the RoPE tables) to hold sequences of `T` positions.
   * @param T - positions (≤ maxPositions; validated by the caller).
   * @throws ModelError `MODEL_CONTEXT_TOO_LONG` when the activations of `T` positions cannot be allocated.
   */
  ensureCapacity(T: number): void {
    if (T <= this.capacity) return;
    // A failed allocation below leaves some buffers replaced: the next call reallocates them all.
    this.capacity = 0;
    try {
      this.#allocate(T);
    } catch (e) {
      if (!(e instanceof RangeError)) throw e;
      throw new ModelError('MODEL_CONTEXT_TOO_LONG', `a sequence of ${T} positions: its activations cannot be allocated (${e.message})`, { field: 'columns', cause: e });
    }
    this.capacity = T;
  }

  #allocate(T: number): void {
    const L = this.config.layers;
    const sizes = sizeTable(T, this.config);
    this.hs = [];
    this.dhs = [];
    for (let l = 0; l <= L; l++) {
      this.hs.push(new Float64Array(sizes.stream));
      this.dhs.push(new Float64Array(sizes.stream));
    }
    this.blocks = [];
    this.blockAdjoints = [];
    // A 0-layer model never uses F (which a valid checkpoint may set to any size): no (T, F) buffers then.
    const shared = L === 0 || this.trace ? null : allocate(sizes.blockAdjoints);
    for (let l = 0; l < L; l++) {
      this.blocks.push({
        ...allocate(sizes.block),
        attentionNorm: allocate(sizes.norm),
        ffnNorm: allocate(sizes.norm),
        trace: this.trace ? allocate(sizes.attentionTrace) : null,
      });
      this.blockAdjoints.push(shared ?? allocate(sizes.blockAdjoints));
    }
    this.finalNorm = allocate(sizes.norm);
    const head = allocate(sizes.head);
    this.logits = head.logits;
    this.prob = head.prob;
    this.rowLoss = head.rowLoss;
    this.dlogits = head.dlogits;
    this.dnf = head.dnf;
    this.#attention = attentionScratch(T, this.headWidth);
    this.rope = extendRopeTables(this.rope, T);
  }

  /**
   * Takes the parameters the next passes run on and refreshes the transposed
   * weights when they changed.
   * @param params - flat parameters.
   * @param version - a number that changes whenever `params` changes (−1 forces a refresh).
   */
  prepare(params: Float64Array, version: number): void {
    if (version === this.#preparedVersion && version !== -1 && params === this.#params) return;
    const { modelWidth: D, feedForwardWidth: F, vocabularySize: V } = this.config;
    const wT = this.#wT;
    transpose(wT, 0, V, params, 0, D, V, D);
    for (const b of this.layout.blocks) {
      transpose(wT, b.query, D, params, b.query, D, D, D);
      transpose(wT, b.key, D, params, b.key, D, D, D);
      transpose(wT, b.value, D, params, b.value, D, D, D);
      transpose(wT, b.output, D, params, b.output, D, D, D);
      transpose(wT, b.gate, D, params, b.gate, F, D, F);
      transpose(wT, b.up, D, params, b.up, F, D, F);
      transpose(wT, b.down, F, params, b.down, D, F, D);
    }
    // Both are the right operand of most products of the step: packed for the kernel once, not per product
    // (the per-tensor views below are read through these pins).
    pinGemmOperand(params);
    pinGemmOperand(wT);
    if (params !== this.#params) {
      this.#params = params;
      this.#weights = this.#views(params);
    }
    this.#preparedVersion = version;
  }

  /** The weight views of `params` and of the transposed weights (live views: built once per array). */
  #views(params: Float64Array): DecoderWeights {
    const { modelWidth: D, feedForwardWidth: F } = this.config;
    const w = modelViews(this.layout, params);
    const t = modelViews(this.layout, this.#wT);
    return {
      embedding: w.embedding,
      blocks: w.blocks.map((b, l) => {
        const bt = t.blocks[l]!;
        return {
          attentionNorm: b.attentionNorm,
          query: linearWeight(b.query, bt.query, D, D),
          key: linearWeight(b.key, bt.key, D, D),
          value: linearWeight(b.value, bt.value, D, D),
          output: linearWeight(b.output, bt.output, D, D),
          ffnNorm: b.ffnNorm,
          gate: linearWeight(b.gate, bt.gate, D, F),
          up: linearWeight(b.up, bt.up, D, F),
          down: linearWeight(b.down, bt.down, F, D),
        };
      }),
      finalNorm: w.finalNorm,
      head: linearWeight(t.embedding, w.embedding, D, this.config.vocabularySize),
    };
  }

  #prepared(): DecoderWeights {
    if (this.#weights === null) throw new ModelError('MODEL_INVALID_BATCH', 'the decoder pass ran before prepare(parameters, version)');
    return this.#weights;
  }

  /** Views of the gradient slot at `offset` of `partial` (cached per slot). */
  #gradients(partial: Float64Array, offset: number): ModelViews {
    if (partial !== this.#gradientArray) {
      this.#gradientArray = partial;
      this.#gradientViews.clear();
    }
    let views = this.#gradientViews.get(offset);
    if (views === undefined) {
      views = modelViews(this.layout, partial, offset);
      this.#gradientViews.set(offset, views);
    }
    return views;
  }

  /**
   * Forward pass of one sequence on the parameters of the last {@link prepare}.
   * Fills every activation, the logits of rows `logitsFrom … T−1`, and — when
   * the sequence has targets — the probabilities and per-row losses.
   *
   * @param seq - the sequence.
   * @param logitsFrom - first row whose logits are needed (0 for training/evaluation).
   */
  forward(seq: SequenceRef, logitsFrom = 0): void {
    const { tokens, targets, offset: off, positions: T } = seq;
    this.ensureCapacity(T);
    const { modelWidth: D, feedForwardWidth: F, vocabularySize: V, heads: H, rmsEpsilon: eps } = this.config;
    const W = this.#prepared();
    const d = this.headWidth;
    const n = T * D;
    // Embedding lookup: a plain copy of the table row (../../../docs/spec/model.md §6).
    const x0 = this.hs[0]!;
    for (let t = 0; t < T; t++) {
      const src = (tokens[off + t] as number) * D;
      const dst = t * D;
      for (let c = 0; c < D; c++) x0[dst + c] = W.embedding[src + c] as number;
    }
    for (let l = 0; l < W.blocks.length; l++) {
      const w = W.blocks[l]!;
      const a = this.blocks[l]!;
      const x = this.hs[l]!;
      const n1 = a.attentionNorm;
      rmsNormForward(n1, x, w.attentionNorm, T, D, eps);
      linearForward(a.q, n1.out, w.query, T);
      linearForward(a.k, n1.out, w.key, T);
      linearForward(a.v, n1.out, w.value, T);
      ropeForward(a.qr, a.q, this.rope, T, D, d);
      ropeForward(a.kr, a.k, this.rope, T, D, d);
      attentionForward(a.merged, a.prob, a.qr, a.kr, a.v, T, D, H, this.scale, this.#attention, a.trace);
      linearForward(a.attention, a.merged, w.output, T);
      residualForward(a.h1, x, a.attention, n);
      const n2 = a.ffnNorm;
      rmsNormForward(n2, a.h1, w.ffnNorm, T, D, eps);
      linearForward(a.gate, n2.out, w.gate, T);
      linearForward(a.up, n2.out, w.up, T);
      swigluForward(a.prod, a.silu, a.sigma, a.gate, a.up, T * F);
      linearForward(a.ffn, a.prod, w.down, T);
      residualForward(this.hs[l + 1]!, a.h1, a.ffn, n);
    }
    const nf = this.finalNorm;
    rmsNormForward(nf, this.hs[W.blocks.length]!, W.finalNorm, T, D, eps);
    // Tied head: logits[t, v] = Σ_c nf[t, c]·Eᵀ[c, v], rows logitsFrom … T−1 only.
    if (logitsFrom === 0) linearForward(this.logits, nf.out, W.head, T);
    else linearForward(this.logits.subarray(logitsFrom * V), nf.out.subarray(logitsFrom * D), W.head, T - logitsFrom);
    if (targets !== null) crossEntropyForward(this.rowLoss, this.prob, this.logits, targets, off, T, V);
  }

  /**
   * Backward pass of the sequence last run by {@link forward} (with targets),
   * writing this sequence's slots.
   *
   * @param seq - the same sequence (its targets are required).
   * @param lossScale - `1.0 / N`, N = tokens in the whole batch.
   * @param slots - where this sequence's partial results go.
   */
  backward(seq: SequenceRef, lossScale: number, slots: SequenceSlots): void {
    const { offset: off, positions: T } = seq;
    const targets = seq.targets;
    if (targets === null) throw new ModelError('MODEL_INVALID_BATCH', 'backward: the sequence has no targets');
    const { modelWidth: D, feedForwardWidth: F, vocabularySize: V, heads: H } = this.config;
    const W = this.#prepared();
    const L = W.blocks.length;
    const d = this.headWidth;
    const n = T * D;
    const dW = this.#gradients(slots.partial, slots.partialOff);
    // Each weight gradient S_b is written into the slot, or added to it in the in-order batch reduction.
    const acc = slots.accumulate ? ADD_DWEIGHT : 0;
    const gainTerms = (g: number): Float64Array => {
      const from = g * slots.gainStride + slots.gainOff;
      return slots.gainTerms.subarray(from, from + n);
    };
    slots.rowLoss.set(this.rowLoss.subarray(0, T), slots.rowLossOff);

    // Head and loss (../../../docs/spec/backward.md §4.1, §5 "Head and loss"); dEᵀ per sequence is stored directly as [V, D].
    crossEntropyBackward(this.dlogits, this.prob, targets, off, T, V, lossScale);
    const nf = this.finalNorm;
    linearBackward(this.dnf, dW.embedding, nf.out, this.dlogits, W.head, T, acc | DWEIGHT_TRANSPOSED);
    const dhL = this.dhs[L]!;
    dhL.fill(0, 0, n);
    rmsNormBackward(dhL, gainTerms(2 * L), nf, this.dnf, this.hs[L]!, W.finalNorm, T, D);

    for (let l = L - 1; l >= 0; l--) {
      const w = W.blocks[l]!;
      const dw = dW.blocks[l]!;
      const a = this.blocks[l]!;
      const g = this.blockAdjoints[l]!;
      const dh2 = this.dhs[l + 1]!;
      const dx = this.dhs[l]!;
      // h2 = h1 + f: both operands receive 0 + dh2 (dh2 is never −0, so a copy).
      g.h1.set(dh2.subarray(0, n));
      // SwiGLU feed-forward; n2's adjoint: up, then gate contribution.
      linearBackward(g.prod, dw.down, a.prod, dh2, w.down, T, acc);
      swigluBackward(g.gate, g.up, g.silu, g.prod, a.gate, a.sigma, a.silu, a.up, T * F);
      const n2 = a.ffnNorm;
      linearBackward(g.n2, dw.up, n2.out, g.up, w.up, T, acc);
      linearBackward(g.n2, dw.gate, n2.out, g.gate, w.gate, T, acc | ADD_DINP);
      rmsNormBackward(g.h1, gainTerms(2 * l + 1), n2, g.n2, a.h1, w.ffnNorm, T, D);
      // h1 = x + attention: x receives 0 + dh1 first (a copy), the attention output dh1.
      dx.set(g.h1.subarray(0, n));
      linearBackward(g.merged, dw.output, a.merged, g.h1, w.output, T, acc);
      attentionBackward(g.qr, g.kr, g.v, g.merged, a.prob, a.qr, a.kr, a.v, T, D, H, this.scale, this.#attention, a.trace);
      // n1's adjoint: value, then key, then query contribution (../../../docs/spec/backward.md §3).
      const n1 = a.attentionNorm;
      linearBackward(g.n1, dw.value, n1.out, g.v, w.value, T, acc);
      ropeBackward(g.k, g.kr, this.rope, T, D, d);
      linearBackward(g.n1, dw.key, n1.out, g.k, w.key, T, acc | ADD_DINP);
      ropeBackward(g.q, g.qr, this.rope, T, D, d);
      linearBackward(g.n1, dw.query, n1.out, g.q, w.query, T, acc | ADD_DINP);
      rmsNormBackward(dx, gainTerms(2 * l), n1, g.n1, this.hs[l]!, w.attentionNorm, T, D);
    }
    slots.dx0.set(this.dhs[0]!.subarray(0, n), slots.dx0Off);
  }
}
