/**
 * Forward and backward of ONE sequence of the decoder, with preallocated
 * activation buffers (../../../../docs/spec/model.md §5–13; ../../../../docs/spec/backward.md §2–5).
 *
 * Rows of different sequences never interact except through three batch-wide
 * reductions: the weight gradients (a per-sequence sum over positions, then
 * across sequences in order b = 0, 1, …: ../../../../docs/spec/backward.md §4.2), the RMSNorm gain
 * gradients and the embedding-lookup gradient (flat sums over all rows in
 * row-major order: §4.6, §4.4), and the loss (a flat sum of row losses). So one
 * sequence's work is independent: it writes its per-sequence weight partials
 * S_b, its gain terms, its input adjoint and its row losses into caller-given
 * slots, and the batch reduction (batch-reduce.ts) adds them in the fixed
 * order. Which thread ran which sequence therefore cannot change any bit. (A
 * single thread running the sequences in order instead adds each S_b straight
 * into the accumulator with GEMM_ADD: the same additions in the same order.)
 */
import type { DecoderConfig } from '@llmcp/format';
import { validateDecoderConfig } from '../config.ts';
import { ModelError } from '../errors.ts';
import type { ParameterLayout } from '../layout.ts';
import { parameterLayout } from '../layout.ts';
import { attentionBackward, attentionForward, attentionScratch, type AttentionScratch, type AttentionTrace } from '../kernels/attention.ts';
import { crossEntropyBackward, crossEntropyForward } from '../kernels/cross-entropy.ts';
import { GEMM_ADD, gemm, gemmTransA, pinGemmOperand, transpose } from '../kernels/gemm.ts';
import { rmsNormBackward, rmsNormForward } from '../kernels/rmsnorm.ts';
import { extendRopeTables, ropeBackward, ropeForward, ropeTables, type RopeTables } from '../kernels/rope.ts';
import { swigluBackward, swigluForward } from '../kernels/swiglu.ts';

/** Saved RMSNorm forward values of one norm call. */
export interface NormActivations {
  /** (T, D) gained output. */
  readonly out: Float64Array;
  /** (T, D) `x · inv`. */
  readonly normalized: Float64Array;
  /** (T) reciprocal root. */
  readonly inv: Float64Array;
  /** (T) `ms + eps`. */
  readonly st: Float64Array;
  /** (T) mean square. */
  readonly ms: Float64Array;
  /** (T, D) backward: adjoint of `normalized`. */
  readonly dnormalized: Float64Array;
  /** (T, 5) backward: adjoints of inv, `ln·(−½)`, `ln`, `st`, and each square. */
  readonly rowAdjoints: Float64Array;
}

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

function normActivations(T: number, D: number): NormActivations {
  return {
    out: new Float64Array(T * D),
    normalized: new Float64Array(T * D),
    inv: new Float64Array(T),
    st: new Float64Array(T),
    ms: new Float64Array(T),
    dnormalized: new Float64Array(T * D),
    rowAdjoints: new Float64Array(T * 5),
  };
}

function blockAdjoints(T: number, D: number, F: number): BlockAdjoints {
  return {
    h1: new Float64Array(T * D),
    prod: new Float64Array(T * F),
    silu: new Float64Array(T * F),
    up: new Float64Array(T * F),
    gate: new Float64Array(T * F),
    n2: new Float64Array(T * D),
    merged: new Float64Array(T * D),
    qr: new Float64Array(T * D),
    kr: new Float64Array(T * D),
    q: new Float64Array(T * D),
    k: new Float64Array(T * D),
    v: new Float64Array(T * D),
    n1: new Float64Array(T * D),
  };
}

/**
 * One thread's decoder workspace: runs sequences of up to `capacity`
 * positions. Not thread-safe; each worker owns one.
 */
export class SequenceEngine {
  readonly config: DecoderConfig;
  readonly layout: ParameterLayout;
  readonly headWidth: number;
  /** `1.0 / sqrt(d)`, computed once (../../../../docs/spec/model.md §9.4). */
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
    const { modelWidth: D, feedForwardWidth: F, vocabularySize: V, heads: H, layers: L } = this.config;
    // A 0-layer model never uses F (which a valid checkpoint may set to any size): no (T, F) buffers then.
    const hiddenWidth = L === 0 ? 0 : F;
    this.hs = [];
    this.dhs = [];
    for (let l = 0; l <= L; l++) {
      this.hs.push(new Float64Array(T * D));
      this.dhs.push(new Float64Array(T * D));
    }
    this.blocks = [];
    this.blockAdjoints = [];
    const shared = blockAdjoints(T, D, hiddenWidth);
    for (let l = 0; l < L; l++) {
      this.blocks.push({
        attentionNorm: normActivations(T, D),
        q: new Float64Array(T * D),
        k: new Float64Array(T * D),
        v: new Float64Array(T * D),
        qr: new Float64Array(T * D),
        kr: new Float64Array(T * D),
        prob: new Float64Array(H * T * T),
        merged: new Float64Array(T * D),
        attention: new Float64Array(T * D),
        h1: new Float64Array(T * D),
        ffnNorm: normActivations(T, D),
        gate: new Float64Array(T * F),
        sigma: new Float64Array(T * F),
        silu: new Float64Array(T * F),
        up: new Float64Array(T * F),
        prod: new Float64Array(T * F),
        ffn: new Float64Array(T * D),
        trace: this.trace
          ? {
              raw: new Float64Array(H * T * T),
              scaled: new Float64Array(H * T * T),
              dprob: new Float64Array(H * T * T),
              dscaled: new Float64Array(H * T * T),
              draw: new Float64Array(H * T * T),
            }
          : null,
      });
      this.blockAdjoints.push(this.trace ? blockAdjoints(T, D, F) : shared);
    }
    this.finalNorm = normActivations(T, D);
    this.logits = new Float64Array(T * V);
    this.prob = new Float64Array(T * V);
    this.rowLoss = new Float64Array(T);
    this.dlogits = new Float64Array(T * V);
    this.dnf = new Float64Array(T * D);
    this.#attention = attentionScratch(T, this.headWidth);
    this.rope = extendRopeTables(this.rope, T);
  }

  /**
   * Refreshes the transposed weights when the parameters changed.
   * @param params - flat parameters.
   * @param version - a number that changes whenever `params` changes (−1 forces a refresh).
   */
  prepare(params: Float64Array, version: number): void {
    if (version === this.#preparedVersion && version !== -1) return;
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
    // Both are the right operand of most products of the step: packed for the kernel once, not per product.
    pinGemmOperand(params);
    pinGemmOperand(wT);
    this.#preparedVersion = version;
  }

  /**
   * Forward pass of one sequence (call {@link prepare} first). Fills every
   * activation, the logits of rows `logitsFrom … T−1`, and — when `targets` is
   * given — the probabilities and per-row losses.
   *
   * @param params - flat parameters.
   * @param tokens - token ids; this sequence is `tokens[off … off+T−1]`.
   * @param targets - target ids at the same offsets, or null (logits only).
   * @param off - offset of the sequence in `tokens`/`targets`.
   * @param T - positions (≤ maxPositions; validated by the caller).
   * @param logitsFrom - first row whose logits are needed (0 for training/evaluation).
   */
  forward(params: Float64Array, tokens: ArrayLike<number>, targets: ArrayLike<number> | null, off: number, T: number, logitsFrom: number): void {
    this.ensureCapacity(T);
    const { modelWidth: D, feedForwardWidth: F, vocabularySize: V, heads: H, rmsEpsilon: eps } = this.config;
    const wT = this.#wT;
    // Embedding lookup: a plain copy of the table row (../../../../docs/spec/model.md §6).
    const x0 = this.hs[0] as Float64Array;
    for (let t = 0; t < T; t++) {
      const src = (tokens[off + t] as number) * D;
      const dst = t * D;
      for (let c = 0; c < D; c++) x0[dst + c] = params[src + c];
    }
    for (let l = 0; l < this.layout.blocks.length; l++) {
      const w = this.layout.blocks[l]!;
      const a = this.blocks[l]!;
      const x = this.hs[l]!;
      const n1 = a.attentionNorm;
      rmsNormForward(n1.out, n1.normalized, n1.inv, n1.st, n1.ms, x, params, w.attentionNorm, T, D, eps);
      // Projections y = x·W with W [in, out]: y[t, o] = Σ_i x[t, i]·W[i, o].
      gemm(a.q, 0, D, n1.out, 0, D, params, w.query, D, T, D, D, 0);
      gemm(a.k, 0, D, n1.out, 0, D, params, w.key, D, T, D, D, 0);
      gemm(a.v, 0, D, n1.out, 0, D, params, w.value, D, T, D, D, 0);
      ropeForward(a.qr, a.q, this.rope, T, D, this.headWidth);
      ropeForward(a.kr, a.k, this.rope, T, D, this.headWidth);
      attentionForward(a.merged, a.prob, a.qr, a.kr, a.v, T, D, H, this.scale, this.#attention, a.trace);
      gemm(a.attention, 0, D, a.merged, 0, D, params, w.output, D, T, D, D, 0);
      const n = T * D;
      for (let i = 0; i < n; i++) a.h1[i] = x[i] + a.attention[i];
      const n2 = a.ffnNorm;
      rmsNormForward(n2.out, n2.normalized, n2.inv, n2.st, n2.ms, a.h1, params, w.ffnNorm, T, D, eps);
      gemm(a.gate, 0, F, n2.out, 0, D, params, w.gate, F, T, F, D, 0);
      gemm(a.up, 0, F, n2.out, 0, D, params, w.up, F, T, F, D, 0);
      swigluForward(a.prod, a.silu, a.sigma, a.gate, a.up, T * F);
      gemm(a.ffn, 0, D, a.prod, 0, F, params, w.down, D, T, D, F, 0);
      const h2 = this.hs[l + 1]!;
      for (let i = 0; i < n; i++) h2[i] = a.h1[i] + a.ffn[i];
    }
    const hL = this.hs[this.layout.blocks.length]!;
    const nf = this.finalNorm;
    rmsNormForward(nf.out, nf.normalized, nf.inv, nf.st, nf.ms, hL, params, this.layout.finalNorm, T, D, eps);
    // Tied head: logits[t, v] = Σ_c nf[t, c]·Eᵀ[c, v].
    gemm(this.logits, logitsFrom * V, V, nf.out, logitsFrom * D, D, wT, 0, V, T - logitsFrom, V, D, 0);
    if (targets !== null) crossEntropyForward(this.rowLoss, this.prob, this.logits, targets, off, T, V);
  }

  /**
   * S_b[i, o] = Σ_t x[t, i]·dy[t, o], the per-sequence part of a broadcast
   * weight gradient (../../../../docs/spec/backward.md §4.2), written at `dst` with row stride outW.
   * The left operand is the (T, inW) activation x itself, read transposed.
   * @param P - partials (or the accumulator).
   * @param dst - offset of S_b[0, 0] in `P`.
   * @param x - (T, inW) the layer input.
   * @param inW - input width.
   * @param dy - (T, outW) the output adjoint.
   * @param outW - output width.
   * @param T - positions.
   * @param accumulate - add to `P` (GEMM_ADD) instead of writing.
   */
  #weightGrad(P: Float64Array, dst: number, x: Float64Array, inW: number, dy: Float64Array, outW: number, T: number, accumulate: boolean): void {
    gemmTransA(P, dst, outW, x, 0, inW, dy, 0, outW, inW, outW, T, accumulate ? GEMM_ADD : 0);
  }

  /**
   * Backward pass of the sequence last run by {@link forward} (with targets),
   * writing this sequence's slots.
   *
   * @param params - flat parameters (unchanged since the forward).
   * @param targets - target ids.
   * @param off - offset of the sequence in `targets`.
   * @param T - positions.
   * @param k - `1.0 / N`, N = tokens in the whole batch.
   * @param slots - where this sequence's partial results go.
   */
  backward(params: Float64Array, targets: ArrayLike<number>, off: number, T: number, k: number, slots: SequenceSlots): void {
    const { modelWidth: D, feedForwardWidth: F, vocabularySize: V, heads: H } = this.config;
    const L = this.layout.blocks.length;
    const wT = this.#wT;
    const P = slots.partial;
    const pOff = slots.partialOff;
    const acc = slots.accumulate;
    slots.rowLoss.set(this.rowLoss.subarray(0, T), slots.rowLossOff);

    // Head and loss (../../../../docs/spec/backward.md §4.1, §5 "Head and loss").
    crossEntropyBackward(this.dlogits, this.prob, targets, off, T, V, k);
    gemm(this.dnf, 0, D, this.dlogits, 0, V, params, 0, D, T, D, V, 0);
    // dEᵀ per sequence, stored directly as [V, D]: S[v, c] = Σ_t dlogits[t, v]·nf[t, c].
    this.#weightGrad(P, pOff, this.dlogits, V, this.finalNorm.out, D, T, acc);
    const nf = this.finalNorm;
    const dhL = this.dhs[L]!;
    dhL.fill(0, 0, T * D);
    rmsNormBackward(
      dhL,
      slots.gainTerms,
      2 * L * slots.gainStride + slots.gainOff,
      nf.dnormalized,
      nf.rowAdjoints,
      this.dnf,
      this.hs[L]!,
      nf.normalized,
      nf.inv,
      nf.st,
      params,
      this.layout.finalNorm,
      T,
      D,
    );

    const n = T * D;
    for (let l = L - 1; l >= 0; l--) {
      const w = this.layout.blocks[l]!;
      const a = this.blocks[l]!;
      const g = this.blockAdjoints[l]!;
      const dh2 = this.dhs[l + 1]!;
      const dx = this.dhs[l]!;
      // h2 = h1 + f: both operands receive 0 + dh2 (dh2 is never −0, so a copy).
      g.h1.set(dh2.subarray(0, n));
      // SwiGLU backward.
      // dx = dy·Wᵀ uses the transposed weights [out, in].
      gemm(g.prod, 0, F, dh2, 0, D, wT, w.down, F, T, F, D, 0);
      this.#weightGrad(P, pOff + w.down, a.prod, F, dh2, D, T, acc);
      swigluBackward(g.gate, g.up, g.silu, g.prod, a.gate, a.sigma, a.silu, a.up, T * F);
      gemm(g.n2, 0, D, g.up, 0, F, wT, w.up, D, T, D, F, 0);
      this.#weightGrad(P, pOff + w.up, a.ffnNorm.out, D, g.up, F, T, acc);
      gemm(g.n2, 0, D, g.gate, 0, F, wT, w.gate, D, T, D, F, GEMM_ADD);
      this.#weightGrad(P, pOff + w.gate, a.ffnNorm.out, D, g.gate, F, T, acc);
      const n2 = a.ffnNorm;
      rmsNormBackward(
        g.h1,
        slots.gainTerms,
        (2 * l + 1) * slots.gainStride + slots.gainOff,
        n2.dnormalized,
        n2.rowAdjoints,
        g.n2,
        a.h1,
        n2.normalized,
        n2.inv,
        n2.st,
        params,
        w.ffnNorm,
        T,
        D,
      );
      // h1 = x + attention: x receives 0 + dh1 first (a copy), the attention output dh1.
      dx.set(g.h1.subarray(0, n));
      gemm(g.merged, 0, D, g.h1, 0, D, wT, w.output, D, T, D, D, 0);
      this.#weightGrad(P, pOff + w.output, a.merged, D, g.h1, D, T, acc);
      attentionBackward(g.qr, g.kr, g.v, g.merged, a.prob, a.qr, a.kr, a.v, T, D, H, this.scale, this.#attention, a.trace);
      const n1 = a.attentionNorm;
      // n1's adjoint: value, then key, then query contribution (../../../../docs/spec/backward.md §3).
      gemm(g.n1, 0, D, g.v, 0, D, wT, w.value, D, T, D, D, 0);
      this.#weightGrad(P, pOff + w.value, n1.out, D, g.v, D, T, acc);
      ropeBackward(g.k, g.kr, this.rope, T, D, this.headWidth);
      gemm(g.n1, 0, D, g.k, 0, D, wT, w.key, D, T, D, D, GEMM_ADD);
      this.#weightGrad(P, pOff + w.key, n1.out, D, g.k, D, T, acc);
      ropeBackward(g.q, g.qr, this.rope, T, D, this.headWidth);
      gemm(g.n1, 0, D, g.q, 0, D, wT, w.query, D, T, D, D, GEMM_ADD);
      this.#weightGrad(P, pOff + w.query, n1.out, D, g.q, D, T, acc);
      rmsNormBackward(
        dx,
        slots.gainTerms,
        2 * l * slots.gainStride + slots.gainOff,
        n1.dnormalized,
        n1.rowAdjoints,
        g.n1,
        this.hs[l]!,
        n1.normalized,
        n1.inv,
        n1.st,
        params,
        w.attentionNorm,
        T,
        D,
      );
    }
    slots.dx0.set(this.dhs[0]!.subarray(0, n), slots.dx0Off);
  }
}
