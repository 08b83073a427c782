/**
 * Causal multi-head attention of one sequence, after RoPE (../../../../docs/spec/model.md §9.4–9.6;
 * ../../../../docs/spec/backward.md §4.2, §4.10, §5 "Attention backward").
 *
 * Heads are not moved in memory: head h of a (T, D) row-major tensor is the
 * column slice h·d … h·d+d−1, which is exactly the reference's split
 * `[B,T,D] → [B,H,T,d]` read in place (and the merge is its inverse).
 */
import { gemmCounters } from '../internal/gemm-counters.ts';
import { exp } from '../math/index.ts';
import { expConstants, expInto } from './exp-batch.ts';
import { GEMM_LOWER_K, GEMM_LOWER_OUT, GEMM_UPPER_K } from './gemm-flags.ts';
import { gemm, gemmTransA, transpose } from './gemm.ts';
import { activeNativeKernels } from './native.ts';
import { wasmAttentionSoftmax } from './wasm-softmax.ts';

/** Undecided exps of the native softmax (grown as needed). */
let rowScratch = new Int32Array(256);

/** Reusable per-head scratch of one attention call (sized for T ≤ capacity). */
export interface AttentionScratch {
  /** (T, T) scores of the current head (raw, then scaled in place). */
  readonly scores: Float64Array;
  /** (T, T) adjoint of the probabilities of the current head. */
  readonly dprob: Float64Array;
  /** (T, T) adjoint of the raw scores of the current head. */
  readonly draw: Float64Array;
  /** (d, T) a transposed head slice. */
  readonly sliceT0: Float64Array;
  /** (T·(T+1)/2) the causal triangle of one head, packed by rows: the softmax shifts, then their exp (one batch). */
  readonly shifted: Float64Array;
  /** (T) the row maxima of the current head. */
  readonly rowMax: Float64Array;
}

/**
 * Allocates scratch for sequences of up to `T` positions and head width `d`.
 * @param T - capacity in positions.
 * @param headWidth - d.
 * @returns the scratch buffers.
 */
export function attentionScratch(T: number, headWidth: number): AttentionScratch {
  return {
    scores: new Float64Array(T * T),
    dprob: new Float64Array(T * T),
    draw: new Float64Array(T * T),
    sliceT0: new Float64Array(headWidth * T),
    shifted: new Float64Array((T * (T + 1)) / 2),
    rowMax: new Float64Array(T),
  };
}

/** Optional full-grid trace buffers, each (H, T, T); null on the training path. */
export interface AttentionTrace {
  readonly raw: Float64Array;
  readonly scaled: Float64Array;
  readonly dprob: Float64Array;
  readonly dscaled: Float64Array;
  readonly draw: Float64Array;
}

/**
 * Forward: scores, stable causal softmax ("skip one maximum"), value mixing.
 *
 * @param merged - (T, D) head outputs in merged layout.
 * @param prob - (H, T, T) attention weights; masked entries are written +0.0.
 * @param qr - (T, D) rotated queries.
 * @param kr - (T, D) rotated keys.
 * @param v - (T, D) values.
 * @param T - positions.
 * @param D - width.
 * @param H - heads.
 * @param scale - `1 / sqrt(d)`.
 * @param scratch - reusable scratch.
 * @param trace - full-grid raw/scaled scores, or null.
 */
export function attentionForward(
  merged: Float64Array,
  prob: Float64Array,
  qr: Float64Array,
  kr: Float64Array,
  v: Float64Array,
  T: number,
  D: number,
  H: number,
  scale: number,
  scratch: AttentionScratch,
  trace: AttentionTrace | null,
): void {
  const d = D / H;
  const S = scratch.scores;
  const TT = T * T;
  for (let h = 0; h < H; h++) {
    const hd = h * d;
    // raw[i, j] = Σ_c qr[i, c]·kr[j, c]; only j ≤ i is needed (the full grid when tracing).
    const kT = scratch.sliceT0;
    transpose(kT, 0, T, kr, hd, D, T, d);
    gemm(S, 0, T, qr, hd, D, kT, 0, T, T, T, d, trace === null ? GEMM_LOWER_OUT : 0);
    const pOff = h * TT;
    const native = trace === null ? activeNativeKernels() : null;
    if (native !== null) {
      // The softmax loops in C (native/elementwise.c): scaled scores, maxima and exp(s − m), the undecided exps
      // finished here with exp(), then the tails and weights.
      if (rowScratch.length < TT) rowScratch = new Int32Array(TT);
      const und = rowScratch;
      const count = native.attentionSoftmax(prob, pOff, S, T, scale, scratch.rowMax, und, expConstants());
      if (count >= 0) {
        for (let k = 0; k < count; k++) {
          const i = pOff + (und[k] as number);
          prob[i] = exp(prob[i] as number);
        }
        native.attentionSoftmaxRows(prob, pOff, S, T, scratch.rowMax);
        gemm(merged, hd, D, prob, pOff, T, v, hd, D, T, d, T, GEMM_LOWER_K);
        continue;
      }
    }
    if (trace === null && native === null && wasmAttentionSoftmax(prob, pOff, S, T, scale)) {
      // The same loops as WebAssembly SIMD kernels in place on a kernel arena's views (wasm-softmax.ts), the
      // undecided exps finished there with exp().
      gemm(merged, hd, D, prob, pOff, T, v, hd, D, T, d, T, GEMM_LOWER_K);
      continue;
    }
    // Pass 1, every row: scaled scores, row maximum, shifts s − m packed by rows (row i at i·(i+1)/2).
    const E = scratch.shifted;
    const M = scratch.rowMax;
    for (let i = 0; i < T; i++) {
      const row = i * T;
      if (trace !== null) {
        for (let j = 0; j < T; j++) {
          const raw = S[row + j] as number;
          trace.raw[pOff + row + j] = raw;
          trace.scaled[pOff + row + j] = raw * scale;
        }
      }
      // Scaled scores: a multiplication by the rounded reciprocal, never a division.
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
    // exp of the whole triangle in one batch (bit for bit exp(), see exp-batch.ts); on the WebAssembly path
    // (the kernel above declined) its values are copied through exp's memory.
    expInto(E, 0, E, 0, (T * (T + 1)) / 2);
    if (trace === null && native === null) gemmCounters.elementwiseValues += T * (T + 1);
    for (let i = 0; i < T; i++) {
      const row = i * T;
      const m = M[i] as number;
      const q = (i * (i + 1)) / 2;
      // tail = Σ exp(s − m) over allowed keys, skipping the first key whose shift is exactly 0
      // (the shift is tested, not its exp: exp of a tiny nonzero shift can round to 1).
      let tail = 0;
      let skipped = false;
      const pr = pOff + row;
      for (let j = 0; j <= i; j++) {
        const shifted = (S[row + j] as number) - m;
        const e = E[q + j] as number;
        prob[pr + j] = e;
        if (!skipped && shifted === 0) skipped = true;
        else tail += e;
      }
      const den = 1.0 + tail;
      for (let j = 0; j <= i; j++) prob[pr + j] = (prob[pr + j] as number) / den + 0;
      for (let j = i + 1; j < T; j++) prob[pr + j] = 0;
    }
    // ho[i, c] = Σ_j p[i, j]·v[j, c] over j in order; masked p are +0.0 (GEMM_LOWER_K).
    gemm(merged, hd, D, prob, pOff, T, v, hd, D, T, d, T, GEMM_LOWER_K);
  }
}

/**
 * Backward for all heads of one sequence: `dp = dho·vᵀ`, `dv = pᵀ·dho`, the
 * softmax rule, the scale, `dq = draw·k`, `dk = drawᵀ·q` (all sums in order).
 *
 * @param dqr - (T, D) adjoint of the rotated queries (written).
 * @param dkr - (T, D) adjoint of the rotated keys (written).
 * @param dv - (T, D) adjoint of the values (written).
 * @param dmerged - (T, D) adjoint of the merged head outputs.
 * @param prob - (H, T, T) forward attention weights.
 * @param qr - (T, D) rotated queries.
 * @param kr - (T, D) rotated keys.
 * @param v - (T, D) values.
 * @param T - positions.
 * @param D - width.
 * @param H - heads.
 * @param scale - `1 / sqrt(d)`.
 * @param scratch - reusable scratch.
 * @param trace - full-grid adjoint traces, or null.
 */
export function attentionBackward(
  dqr: Float64Array,
  dkr: Float64Array,
  dv: Float64Array,
  dmerged: Float64Array,
  prob: Float64Array,
  qr: Float64Array,
  kr: Float64Array,
  v: Float64Array,
  T: number,
  D: number,
  H: number,
  scale: number,
  scratch: AttentionScratch,
  trace: AttentionTrace | null,
): void {
  const d = D / H;
  const TT = T * T;
  const dp = scratch.dprob;
  const draw = scratch.draw;
  const t0 = scratch.sliceT0;
  for (let h = 0; h < H; h++) {
    const hd = h * d;
    const pOff = h * TT;
    // dp[i, k] = Σ_c dho[i, c]·v[k, c] (left operand of p·v).
    transpose(t0, 0, T, v, hd, D, T, d);
    gemm(dp, 0, T, dmerged, hd, D, t0, 0, T, T, T, d, trace === null ? GEMM_LOWER_OUT : 0);
    // dv[k, c] = Σ_i p[i, k]·dho[i, c] (right operand); p[i, k] = +0 for i < k.
    // (pᵀ read in place: gemmTransA, the same sums as transposing p first.)
    gemmTransA(dv, hd, D, prob, pOff, T, dmerged, hd, D, T, d, T, GEMM_UPPER_K);
    // Causal softmax rule, then the constant scale: draw = 0 + ds·scale (in C when the addon runs).
    const native = trace === null ? activeNativeKernels() : null;
    const done = native !== null && native.attentionSoftmaxBackward(draw, dp, prob, pOff, T, scale) >= 0;
    for (let i = 0; i < T && !done; i++) {
      const row = i * T;
      const pr = pOff + row;
      let w = 0;
      for (let j = 0; j <= i; j++) w += (dp[row + j] as number) * (prob[pr + j] as number);
      for (let j = 0; j <= i; j++) {
        const ds = (prob[pr + j] as number) * ((dp[row + j] as number) - w) + 0;
        if (trace !== null) trace.dscaled[pOff + row + j] = ds;
        draw[row + j] = 0 + ds * scale;
      }
      for (let j = i + 1; j < T; j++) {
        draw[row + j] = 0;
        if (trace !== null) trace.dscaled[pOff + row + j] = 0;
      }
    }
    if (trace !== null) {
      trace.dprob.set(dp.subarray(0, TT), pOff);
      trace.draw.set(draw.subarray(0, TT), pOff);
    }
    // dq[i, c] = Σ_j draw[i, j]·kr[j, c]; draw[i, j] = +0 for j > i.
    gemm(dqr, hd, D, draw, 0, T, kr, hd, D, T, d, T, GEMM_LOWER_K);
    // dk[j, c] = Σ_i qr[i, c]·draw[i, j]; draw[i, j] = +0 for i < j.
    gemmTransA(dkr, hd, D, draw, 0, T, qr, hd, D, T, d, T, GEMM_UPPER_K);
  }
}

/**
 * Attention of one new query row over `T` cached key/value rows (the last of
 * which is the query's own position): the row `T−1` of {@link attentionForward}
 * with every sum in the same order — each score `Σ_c qr[c]·kr[j, c]` over c
 * ascending from +0.0, times the rounded scale, the same "skip one maximum"
 * softmax in key order, and each output `Σ_j p[j]·v[j, c]` over j ascending
 * from +0.0 (the full forward's extra masked terms are exact zeros and change
 * no sum). So the bits equal the full-prefix computation's last row.
 *
 * @param merged - (D) head outputs of the row in merged layout (written).
 * @param qr - (D) rotated query row.
 * @param keys - (≥T, D) rotated keys of positions 0 … T−1, row-major.
 * @param values - (≥T, D) values of positions 0 … T−1.
 * @param T - rows attended (the query's position + 1).
 * @param D - width.
 * @param H - heads.
 * @param scale - `1 / sqrt(d)`.
 * @param weights - (≥T) scratch; holds the last head's weights afterwards.
 */
export function attentionDecodeRow(
  merged: Float64Array,
  qr: Float64Array,
  keys: Float64Array,
  values: Float64Array,
  T: number,
  D: number,
  H: number,
  scale: number,
  weights: Float64Array,
): void {
  const d = D / H;
  for (let h = 0; h < H; h++) {
    const hd = h * d;
    let m = -Infinity;
    for (let j = 0; j < T; j++) {
      const kj = j * D + hd;
      let raw = 0;
      for (let c = 0; c < d; c++) raw += (qr[hd + c] as number) * (keys[kj + c] as number);
      const s = raw * scale;
      weights[j] = s;
      if (s > m) m = s;
    }
    let tail = 0;
    let skipped = false;
    for (let j = 0; j < T; j++) {
      const shifted = (weights[j] as number) - m;
      const e = exp(shifted);
      weights[j] = e;
      if (!skipped && shifted === 0) skipped = true;
      else tail += e;
    }
    const den = 1.0 + tail;
    for (let j = 0; j < T; j++) weights[j] = (weights[j] as number) / den + 0;
    for (let c = 0; c < d; c++) merged[hd + c] = 0;
    for (let j = 0; j < T; j++) {
      const p = weights[j] as number;
      const vj = j * D + hd;
      for (let c = 0; c < d; c++) (merged[hd + c] as number) += p * (values[vj + c] as number);
    }
  }
}
