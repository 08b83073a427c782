/**
 * The layers of the decoder as plain loops: the reference that defines every
 * bit (../../../../docs/spec/model.md, ../../../../docs/spec/backward.md),
 * written like llm.c's `train_gpt2.c`: `fooForward` / `fooBackward` pairs
 * that write into buffers the caller provides, with no processor-specific
 * code, no memory placement and no threads. Each reduction runs in the order
 * the specification gives, from +0.0, with a separate multiply and add; the
 * transcendental functions come from ../math (never `Math.exp`).
 *
 * The fast kernel sets (../kernels/) implement the same {@link KernelSet}
 * with other loops, WebAssembly or C, and must give these bits: the tests
 * compare every one of them with this file.
 *
 * Shapes: T rows (positions), D model width, H heads of width d = D/H, F
 * feed-forward width, V vocabulary. A row of a (T, D) buffer is one position.
 */
import { cos, exp, ln, log1p, pow, sin } from '../math/index.ts';
import type { Matrix } from './matrix.ts';

// ── Embedding lookup ───────────────────────────────────────────────────────

/**
 * `x[t, :] = E[tokens[t], :]`, a plain copy of the table row (../../../../docs/spec/model.md §6). Its
 * backward is the batch's lookup sum (../batch.ts, ../../../../docs/spec/backward.md §4.4).
 *
 * @param x - (T, D) output.
 * @param table - (V, D) the embedding table E.
 * @param tokens - the ids, row t at `tokens[offset + t]`.
 * @param offset - index of row 0's id.
 */
export function embeddingForward(x: Matrix, table: Matrix, tokens: ArrayLike<number>, offset: number): void {
  const [out, E] = [x.data, table.data];
  for (let t = 0; t < x.rows; t++) {
    const src = table.offset + (tokens[offset + t] as number) * table.stride;
    const dst = x.offset + t * x.stride;
    for (let c = 0; c < x.columns; c++) out[dst + c] = E[src + c] as number;
  }
}

// ── RMSNorm ────────────────────────────────────────────────────────────────

/** What the forward pass of one norm saves, and its backward scratch. */
export interface NormActivations {
  /** (T, D) the gained output `normalized · g`. */
  readonly out: Matrix;
  /** (T, D) `x · inv`. */
  readonly normalized: Matrix;
  /** (T) the reciprocal root `exp(−½·ln(st))`. */
  readonly inv: Float64Array;
  /** (T) `ms + eps`. */
  readonly st: Float64Array;
  /** (T) the mean square. */
  readonly ms: Float64Array;
  /** (T, D) backward: adjoint of `normalized`, `0 + u·g`. */
  readonly dnormalized: Matrix;
  /** (T, 5) backward, per row: the adjoints of inv, of `ln(st)·(−½)`, of `ln(st)`, of st, and of each square (`dms / D`). */
  readonly rowAdjoints: Float64Array;
}

/**
 * RMSNorm with the reference's reciprocal root `exp(−½·ln(ms + eps))`, row by row (../../../../docs/spec/model.md §7).
 *
 * @param n - where the output and the saved values go.
 * @param x - (T, D) input.
 * @param gain - (D) the gain g.
 * @param eps - epsilon.
 */
export function rmsNormForward(n: NormActivations, x: Matrix, gain: Float64Array, eps: number): void {
  const { out, normalized, inv, st, ms } = n;
  const D = x.columns;
  for (let r = 0; r < x.rows; r++) {
    const xr = x.offset + r * x.stride;
    let s = 0;
    for (let c = 0; c < D; c++) {
      const v = x.data[xr + c] as number;
      s += v * v;
    }
    ms[r] = s / D;
    st[r] = (ms[r] as number) + eps;
    inv[r] = exp(ln(st[r] as number) * -0.5);
    const iv = inv[r] as number;
    const nr = normalized.offset + r * normalized.stride;
    const or = out.offset + r * out.stride;
    for (let c = 0; c < D; c++) {
      const v = (x.data[xr + c] as number) * iv;
      normalized.data[nr + c] = v;
      out.data[or + c] = v * (gain[c] as number);
    }
  }
}

/**
 * RMSNorm backward (../../../../docs/spec/backward.md §5 "RMSNorm backward"): adds the normalize
 * contribution and then the two square contributions to `dx`, which already
 * holds the adjoint from the later consumers (the residual), and writes the
 * gain's per-row terms `u · normalized` (the batch sums them in row-major
 * order, ../../../../docs/spec/backward.md §4.6).
 *
 * @param dx - (T, D) adjoint of x, added to.
 * @param gainTerms - (T, D) out: `u[r, c] · normalized[r, c]`.
 * @param n - the forward's saved values; its backward scratch is written.
 * @param u - (T, D) adjoint of the gained output.
 * @param x - (T, D) the forward input.
 * @param gain - (D) the gain.
 */
export function rmsNormBackward(dx: Matrix, gainTerms: Matrix, n: NormActivations, u: Matrix, x: Matrix, gain: Float64Array): void {
  const { normalized, inv, st, dnormalized, rowAdjoints } = n;
  const D = x.columns;
  for (let r = 0; r < x.rows; r++) {
    const ur = u.offset + r * u.stride;
    const nr = normalized.offset + r * normalized.stride;
    const dnr = dnormalized.offset + r * dnormalized.stride;
    const xr = x.offset + r * x.stride;
    const gr = gainTerms.offset + r * gainTerms.stride;
    const iv = inv[r] as number;
    let di = 0;
    for (let c = 0; c < D; c++) {
      const uc = u.data[ur + c] as number;
      gainTerms.data[gr + c] = uc * (normalized.data[nr + c] as number);
      const dn = 0 + uc * (gain[c] as number);
      dnormalized.data[dnr + c] = dn;
      di += dn * (x.data[xr + c] as number);
    }
    // exp rule (u·y), constant −0.5, log rule (u / x), add (+eps), mean (/ D): each adjoint is "0 + contribution".
    const dsl = 0 + di * iv;
    const dlg = 0 + dsl * -0.5;
    const dst = 0 + dlg / (st[r] as number);
    const d2 = 0 + dst / D;
    rowAdjoints[5 * r] = di;
    rowAdjoints[5 * r + 1] = dsl;
    rowAdjoints[5 * r + 2] = dlg;
    rowAdjoints[5 * r + 3] = dst;
    rowAdjoints[5 * r + 4] = d2;
    const dxr = dx.offset + r * dx.stride;
    for (let c = 0; c < D; c++) {
      const sq = d2 * (x.data[xr + c] as number);
      dx.data[dxr + c] = (dx.data[dxr + c] as number) + (dnormalized.data[dnr + c] as number) * iv + sq + sq;
    }
  }
}

// ── Linear layers ──────────────────────────────────────────────────────────

/**
 * A linear layer's weight: W [in, out] and its transpose, both row-major. The
 * forward pass reads W, the input adjoint `dout · Wᵀ` reads Wᵀ (the same
 * products, row by row). The tied head's weight is Eᵀ [D, V], whose
 * transpose is E itself.
 */
export interface LinearWeight {
  /** (in, out) W. */
  readonly w: Matrix;
  /** (out, in) Wᵀ; null where only forward passes run (cached decoding reads the parameters as they are). */
  readonly t: Matrix | null;
}

/** {@link linearBackward}: add the input adjoint to `dinp` (`dinp + dx`) instead of writing it (its second consumer). */
export const ADD_DINP = 1;
/** {@link linearBackward}: add the weight gradient to `dweight` (the in-order batch sum, ../../../../docs/spec/backward.md §4.2) instead of writing it. */
export const ADD_DWEIGHT = 2;
/** {@link linearBackward}: `dweight` is laid out [out, in], the gradient of Wᵀ (the tied head's dEᵀ, stored as dE). */
export const DWEIGHT_TRANSPOSED = 4;

/**
 * `out[t, o] = Σ_i inp[t, i]·W[i, o]`, i in order from +0.0 (../../../../docs/spec/model.md §8).
 *
 * @param out - (T, out) output.
 * @param inp - (T, in) input.
 * @param weight - the layer's weight.
 */
export function linearForward(out: Matrix, inp: Matrix, weight: LinearWeight): void {
  product(out, inp, weight.w, false, false);
}

/**
 * Both adjoints of `out = inp · W` (../../../../docs/spec/backward.md §4.2), the input's first:
 * `dinp[t, i] (=|+=) Σ_o dout[t, o]·Wᵀ[o, i]`, then this sequence's weight
 * gradient `dweight[i, o] (=|+=) Σ_t inp[t, i]·dout[t, o]` (or its
 * transpose `dweight[o, i]`); every sum from +0.0 in order, then added where
 * the flags say so.
 *
 * @param dinp - (T, in) adjoint of the input.
 * @param dweight - (in, out) weight gradient (or (out, in) with {@link DWEIGHT_TRANSPOSED}).
 * @param inp - (T, in) the forward input.
 * @param dout - (T, out) adjoint of the output.
 * @param weight - the layer's weight (its transpose is read).
 * @param flags - {@link ADD_DINP}, {@link ADD_DWEIGHT}, {@link DWEIGHT_TRANSPOSED}.
 */
export function linearBackward(dinp: Matrix, dweight: Matrix, inp: Matrix, dout: Matrix, weight: LinearWeight, flags: number): void {
  product(dinp, dout, weight.t as Matrix, false, (flags & ADD_DINP) !== 0);
  const add = (flags & ADD_DWEIGHT) !== 0;
  if ((flags & DWEIGHT_TRANSPOSED) !== 0) product(dweight, dout, inp, true, add);
  else product(dweight, inp, dout, true, add);
}

/**
 * `c[i, j] (=|+=) Σ_k a[i, k]·b[k, j]` (or `Σ_k a[k, i]·b[k, j]` with `aT`):
 * each element one dot product summed from +0.0 in increasing k, then
 * written or added.
 */
function product(c: Matrix, a: Matrix, b: Matrix, aT: boolean, add: boolean): void {
  const K = aT ? a.rows : a.columns;
  const [ai, ak] = aT ? [1, a.stride] : [a.stride, 1];
  for (let i = 0; i < c.rows; i++) {
    for (let j = 0; j < c.columns; j++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += (a.data[a.offset + i * ai + k * ak] as number) * (b.data[b.offset + k * b.stride + j] as number);
      const at = c.offset + i * c.stride + j;
      c.data[at] = add ? (c.data[at] as number) + s : s;
    }
  }
}

// ── Rotary position embedding ──────────────────────────────────────────────

/**
 * RoPE tables for positions 0 … P−1 and pairs 0 … d/2−1 (../../../../docs/spec/model.md §9.2). P
 * is the number of positions built so far, not the configuration's
 * maxPositions: a position's row depends on nothing else, so rows built on
 * demand equal rows built up front.
 */
export interface RopeTables {
  /** (d/2) `pow(base, (−2·i) / d)`. */
  readonly inverseFrequencies: Float64Array;
  /** (P, d/2) `cos(p · invFreq_i)`, canonical +0. */
  readonly cosines: Float64Array;
  /** (P, d/2) `sin(p · invFreq_i)`, canonical +0. */
  readonly sines: Float64Array;
}

/**
 * The tables for positions 0 … `positions`−1: the exponent is `(−2.0 · i) / d`, the angle `p · invFreq_i`.
 *
 * @param positions - P (0 gives the frequencies only).
 * @param headWidth - d (even).
 * @param base - the RoPE base.
 * @returns the tables.
 */
export function ropeTables(positions: number, headWidth: number, base: number): RopeTables {
  const half = headWidth / 2;
  const inverseFrequencies = new Float64Array(half);
  for (let i = 0; i < half; i++) inverseFrequencies[i] = pow(base, (-2.0 * i) / headWidth);
  return extendRopeTables({ inverseFrequencies, cosines: new Float64Array(0), sines: new Float64Array(0) }, positions);
}

/**
 * The tables grown to positions 0 … `positions`−1: the rows built are copied, only the new ones computed.
 *
 * @param tables - tables built so far (not modified).
 * @param positions - P.
 * @returns `tables` itself when it covers P positions, else new tables.
 */
export function extendRopeTables(tables: RopeTables, positions: number): RopeTables {
  const { inverseFrequencies } = tables;
  const half = inverseFrequencies.length;
  const built = half === 0 ? 0 : tables.cosines.length / half;
  if (positions <= built) return tables;
  const cosines = new Float64Array(positions * half);
  const sines = new Float64Array(positions * half);
  cosines.set(tables.cosines);
  sines.set(tables.sines);
  for (let p = built; p < positions; p++) {
    for (let i = 0; i < half; i++) {
      const angle = p * (inverseFrequencies[i] as number);
      sines[p * half + i] = sin(angle) + 0;
      cosines[p * half + i] = cos(angle) + 0;
    }
  }
  return { inverseFrequencies, cosines, sines };
}

/**
 * Rotates each head's adjacent pairs (../../../../docs/spec/model.md §9.2): row t at position
 * `first + t`, `l' = l·c − r·s`, `r' = l·s + r·c`, each canonical +0.
 *
 * @param out - (T, D) rotated.
 * @param inp - (T, D) input; head h owns columns h·d … h·d+d−1.
 * @param rope - tables covering the positions.
 * @param first - the position of row 0.
 */
export function ropeForward(out: Matrix, inp: Matrix, rope: RopeTables, first: number): void {
  rotate(out, inp, rope, first, 1);
}

/**
 * The adjoint rotated back (../../../../docs/spec/backward.md §4.11): `gl' = gl·c + gr·s`, `gr' = (−gl)·s + gr·c`, each canonical +0.
 *
 * @param dinp - (T, D) adjoint of the input.
 * @param dout - (T, D) adjoint of the rotated output.
 * @param rope - tables covering the positions.
 * @param first - the position of row 0.
 */
export function ropeBackward(dinp: Matrix, dout: Matrix, rope: RopeTables, first: number): void {
  rotate(dinp, dout, rope, first, -1);
}

/** Both rotations: the forward (`sign` 1) and its inverse (−1), which negates the sine's operand. */
function rotate(out: Matrix, inp: Matrix, rope: RopeTables, first: number, sign: 1 | -1): void {
  const half = rope.inverseFrequencies.length;
  const D = inp.columns;
  const { cosines, sines } = rope;
  const [x, y] = [inp.data, out.data];
  for (let t = 0; t < inp.rows; t++) {
    const src = inp.offset + t * inp.stride;
    const dst = out.offset + t * out.stride;
    const tab = (first + t) * half;
    for (let h0 = 0; h0 < D; h0 += 2 * half) {
      for (let i = 0; i < half; i++) {
        const c = cosines[tab + i] as number;
        // The inverse rotation's terms are the forward's with −s: l·c − r·(−s) = l·c + r·s and l·(−s) = (−l)·s, bit for bit.
        const s = sign * (sines[tab + i] as number);
        const l = x[src + h0 + 2 * i] as number;
        const r = x[src + h0 + 2 * i + 1] as number;
        y[dst + h0 + 2 * i] = l * c - r * s + 0;
        y[dst + h0 + 2 * i + 1] = l * s + r * c + 0;
      }
    }
  }
}

// ── Causal multi-head attention ────────────────────────────────────────────

/** Full-grid traces of one block's attention, each (H, T, T) (the forward-trace test; null when training). */
export interface AttentionTrace {
  readonly raw: Float64Array;
  readonly scaled: Float64Array;
  readonly dprob: Float64Array;
  readonly dscaled: Float64Array;
  readonly draw: Float64Array;
}

/**
 * What attention reads and saves. The Q query rows are the last Q of the K
 * positions attended: training has Q = K = T; cached decoding one new row
 * over the K cached keys and values (the query at position K − 1).
 */
export interface AttentionActivations {
  /** (Q, D) rotated queries. */
  readonly q: Matrix;
  /** (K, D) rotated keys. */
  readonly k: Matrix;
  /** (K, D) values. */
  readonly v: Matrix;
  /** (H·Q, K) the weights, head h in rows h·Q …; masked entries +0.0. */
  readonly prob: Matrix;
  /** Full-grid traces, or null. */
  readonly trace: AttentionTrace | null;
}

/** The adjoints attention's backward writes: (T, D) each. */
export interface AttentionAdjoints {
  /** Adjoint of the rotated queries. */
  readonly q: Matrix;
  /** Adjoint of the rotated keys. */
  readonly k: Matrix;
  /** Adjoint of the values. */
  readonly v: Matrix;
}

/**
 * Causal attention of every head (../../../../docs/spec/model.md §9.4–9.6), heads read in place
 * (head h is columns h·d … h·d+d−1: the split and merge move no data): per
 * query row i at position p, scores `Σ_c q[i, c]·k[j, c]` for keys j ≤ p,
 * times the rounded `1/√d`; the stable softmax that skips the first key whose
 * shift is exactly 0; then `out[i, c] = Σ_j prob[i, j]·v[j, c]` (the masked
 * keys, whose weight is +0.0, change no sum and are skipped).
 *
 * @param out - (Q, D) the head outputs, merged.
 * @param att - queries, keys, values; the weights are written (and the traces, if any).
 * @param heads - H.
 * @param scale - `1.0 / sqrt(d)`, computed once.
 */
export function attentionForward(out: Matrix, att: AttentionActivations, heads: number, scale: number): void {
  const { q, k, v, prob, trace } = att;
  const Q = q.rows;
  const K = k.rows;
  const d = q.columns / heads;
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < Q; i++) {
      const allowed = K - Q + i + 1;
      const p = prob.offset + (h * Q + i) * prob.stride;
      const qi = q.offset + i * q.stride + h * d;
      // Scaled scores and their maximum (the traces keep the whole grid).
      let m = -Infinity;
      for (let j = 0; j < (trace === null ? allowed : K); j++) {
        const kj = k.offset + j * k.stride + h * d;
        let raw = 0;
        for (let c = 0; c < d; c++) raw += (q.data[qi + c] as number) * (k.data[kj + c] as number);
        const s = raw * scale;
        if (trace !== null) {
          trace.raw[(h * Q + i) * K + j] = raw;
          trace.scaled[(h * Q + i) * K + j] = s;
        }
        if (j >= allowed) continue;
        prob.data[p + j] = s;
        if (s > m) m = s;
      }
      // exp(s − m), the tail without the first exact zero shift, the weights (../../../../docs/spec/model.md §9.5).
      let tail = 0;
      let skipped = false;
      for (let j = 0; j < allowed; j++) {
        const shifted = (prob.data[p + j] as number) - m;
        const e = exp(shifted);
        prob.data[p + j] = e;
        if (!skipped && shifted === 0) skipped = true;
        else tail += e;
      }
      const den = 1.0 + tail;
      for (let j = 0; j < allowed; j++) prob.data[p + j] = (prob.data[p + j] as number) / den + 0;
      for (let j = allowed; j < K; j++) prob.data[p + j] = 0;
      // Value mixing into the merged layout (../../../../docs/spec/model.md §9.6).
      const oi = out.offset + i * out.stride + h * d;
      for (let c = 0; c < d; c++) {
        let s = 0;
        for (let j = 0; j < allowed; j++) s += (prob.data[p + j] as number) * (v.data[v.offset + j * v.stride + h * d + c] as number);
        out.data[oi + c] = s;
      }
    }
  }
}

/**
 * Attention backward of a training pass (Q = K = T; ../../../../docs/spec/backward.md §5
 * "Attention backward", §4.10): per head, `dp = dout·vᵀ` and `dv = pᵀ·dout`,
 * the softmax rule `ds = p·(dp − Σ_j dp·p) + 0`, the scale
 * `draw = 0 + ds·scale`, then `dq = draw·k` and `dk = drawᵀ·q`. Every sum
 * runs from +0.0 in increasing index; `dv` and `dk` receive their terms row
 * by row of the weights, which is that order.
 *
 * @param g - the adjoints of q, k and v (written).
 * @param dout - (T, D) adjoint of the merged head outputs.
 * @param att - the forward's queries, keys, values and weights (and the traces, if any).
 * @param heads - H.
 * @param scale - `1.0 / sqrt(d)`.
 */
export function attentionBackward(g: AttentionAdjoints, dout: Matrix, att: AttentionActivations, heads: number, scale: number): void {
  const { q, k, v, prob, trace } = att;
  const T = q.rows;
  const d = q.columns / heads;
  const dp = new Float64Array(T);
  const draw = new Float64Array(T);
  const at = (m: Matrix, r: number, c: number): number => m.offset + r * m.stride + c;
  for (const m of [g.k, g.v]) for (let j = 0; j < T; j++) m.data.fill(0, at(m, j, 0), at(m, j, 0) + m.columns);
  for (let h = 0; h < heads; h++) {
    const hd = h * d;
    for (let i = 0; i < T; i++) {
      const p = prob.offset + (h * T + i) * prob.stride;
      const grid = (h * T + i) * T;
      // dp[i, j] = Σ_c dout[i, c]·v[j, c] for j ≤ i (the traces keep the whole grid).
      for (let j = 0; j < (trace === null ? i + 1 : T); j++) {
        let s = 0;
        for (let c = 0; c < d; c++) s += (dout.data[at(dout, i, hd + c)] as number) * (v.data[at(v, j, hd + c)] as number);
        dp[j] = s;
        if (trace !== null) trace.dprob[grid + j] = s;
      }
      // dv[j, c] += p[i, j]·dout[i, c]: row i's term of each j ≤ i.
      for (let j = 0; j <= i; j++) {
        for (let c = 0; c < d; c++) g.v.data[at(g.v, j, hd + c)] = (g.v.data[at(g.v, j, hd + c)] as number) + (prob.data[p + j] as number) * (dout.data[at(dout, i, hd + c)] as number);
      }
      // The causal softmax rule, then the constant scale.
      let w = 0;
      for (let j = 0; j <= i; j++) w += (dp[j] as number) * (prob.data[p + j] as number);
      for (let j = 0; j < T; j++) {
        const ds = j <= i ? (prob.data[p + j] as number) * ((dp[j] as number) - w) + 0 : 0;
        draw[j] = j <= i ? 0 + ds * scale : 0;
        if (trace !== null) {
          trace.dscaled[grid + j] = ds;
          trace.draw[grid + j] = draw[j] as number;
        }
      }
      // dq[i, c] = Σ_{j ≤ i} draw[i, j]·k[j, c]; dk[j, c] += draw[i, j]·q[i, c].
      for (let c = 0; c < d; c++) {
        let s = 0;
        for (let j = 0; j <= i; j++) s += (draw[j] as number) * (k.data[at(k, j, hd + c)] as number);
        g.q.data[at(g.q, i, hd + c)] = s;
      }
      for (let j = 0; j <= i; j++) {
        for (let c = 0; c < d; c++) g.k.data[at(g.k, j, hd + c)] = (g.k.data[at(g.k, j, hd + c)] as number) + (draw[j] as number) * (q.data[at(q, i, hd + c)] as number);
      }
    }
  }
}

// ── Residual connection ────────────────────────────────────────────────────

/**
 * `out = a + b` elementwise (../../../../docs/spec/model.md §10; llm.c `residual_forward`). Its
 * backward copies the adjoint to both operands (`0 + u`, and u is never −0).
 *
 * @param out - (T, D) output (neither input).
 * @param a - (T, D) the stream.
 * @param b - (T, D) the branch output.
 */
export function residualForward(out: Matrix, a: Matrix, b: Matrix): void {
  const [z, x, y] = [out.data, a.data, b.data];
  for (let r = 0; r < out.rows; r++) {
    const o = out.offset + r * out.stride;
    const i = a.offset + r * a.stride;
    const j = b.offset + r * b.stride;
    for (let c = 0; c < out.columns; c++) z[o + c] = (x[i + c] as number) + (y[j + c] as number);
  }
}

// ── SwiGLU ─────────────────────────────────────────────────────────────────

/** The element-wise part of the SwiGLU feed-forward: (T, F) each. */
export interface SwigluActivations {
  /** `n2 · Wg`. */
  readonly gate: Matrix;
  /** `n2 · Wu`. */
  readonly up: Matrix;
  /** sigmoid(gate), saved. */
  readonly sigma: Matrix;
  /** `gate · sigma`, saved. */
  readonly silu: Matrix;
  /** `silu · up`. */
  readonly prod: Matrix;
}

/** The adjoints of SwiGLU's element-wise part: (T, F) each. */
export interface SwigluAdjoints {
  readonly gate: Matrix;
  readonly up: Matrix;
  readonly silu: Matrix;
  readonly prod: Matrix;
}

/**
 * `prod = silu(gate) · up` (../../../../docs/spec/model.md §11), the sigmoid branch-wise:
 * `1/(1 + exp(−x))` for x ≥ 0, else `e/(1 + e)` with `e = exp(x)`. The five
 * matrices share one layout (offset and stride).
 *
 * @param a - reads gate and up, writes sigma, silu and prod.
 */
export function swigluForward(a: SwigluActivations): void {
  const { offset, rows, columns, stride } = a.gate;
  for (let r = 0; r < rows; r++) for (let c = 0; c < columns; c++) swigluForwardAt(a, offset + r * stride + c);
}

/**
 * Element i (an index into the arrays) of {@link swigluForward}.
 * @param a - the values.
 * @param i - the index.
 */
export function swigluForwardAt(a: SwigluActivations, i: number): void {
  const x = a.gate.data[i] as number;
  const e = exp(x >= 0 ? -x : x);
  const s = (x >= 0 ? 1.0 : e) / (1.0 + e);
  a.sigma.data[i] = s;
  const y = x * s;
  a.silu.data[i] = y;
  a.prod.data[i] = y * (a.up.data[i] as number);
}

/**
 * SwiGLU backward (../../../../docs/spec/backward.md §4.6, §4.9): `dsilu = 0 + dprod·up`,
 * `dup = 0 + dprod·silu`, `dgate = 0 + dsilu·σ·(1 + x·(1 − σ))`. The nine
 * matrices share one layout.
 *
 * @param g - reads prod's adjoint, writes the adjoints of silu, up and gate.
 * @param a - the forward's values.
 */
export function swigluBackward(g: SwigluAdjoints, a: SwigluActivations): void {
  const { offset, rows, columns, stride } = a.gate;
  for (let r = 0; r < rows; r++) for (let c = 0; c < columns; c++) swigluBackwardAt(g, a, offset + r * stride + c);
}

/**
 * Element i (an index into the arrays) of {@link swigluBackward}.
 * @param g - the adjoints.
 * @param a - the forward's values.
 * @param i - the index.
 */
export function swigluBackwardAt(g: SwigluAdjoints, a: SwigluActivations, i: number): void {
  const u = g.prod.data[i] as number;
  const ds = 0 + u * (a.up.data[i] as number);
  g.silu.data[i] = ds;
  g.up.data[i] = 0 + u * (a.silu.data[i] as number);
  const s = a.sigma.data[i] as number;
  g.gate.data[i] = 0 + ds * (s * (1.0 + (a.gate.data[i] as number) * (1.0 - s)));
}

// ── Cross-entropy ──────────────────────────────────────────────────────────

/**
 * Per-row losses of the next-token cross-entropy with the maximum split off
 * (../../../../docs/spec/model.md §13): `(m − z_y) + log1p(tail)`, and the probabilities
 * `exp(z − m) / (1 + tail)` (canonical +0) that the backward pass reads. The
 * batch sums the row losses in order and divides by N (../batch.ts).
 *
 * @param rowLoss - (T) out.
 * @param prob - (T, V) out.
 * @param logits - (T, V) the logits.
 * @param targets - (T) the target ids.
 */
export function crossEntropyForward(rowLoss: Float64Array, prob: Matrix, logits: Matrix, targets: ArrayLike<number>): void {
  const V = logits.columns;
  for (let r = 0; r < logits.rows; r++) {
    const z = logits.offset + r * logits.stride;
    const p = prob.offset + r * prob.stride;
    let m = -Infinity;
    for (let c = 0; c < V; c++) if ((logits.data[z + c] as number) > m) m = logits.data[z + c] as number;
    let tail = 0;
    let skipped = false;
    for (let c = 0; c < V; c++) {
      const shifted = (logits.data[z + c] as number) - m;
      const e = exp(shifted);
      prob.data[p + c] = e;
      if (!skipped && shifted === 0) skipped = true;
      else tail += e;
    }
    rowLoss[r] = m - (logits.data[z + (targets[r] as number)] as number) + log1p(tail);
    const den = 1.0 + tail;
    for (let c = 0; c < V; c++) prob.data[p + c] = (prob.data[p + c] as number) / den + 0;
  }
}

/**
 * Cross-entropy backward (../../../../docs/spec/backward.md §4.1): `dlogits = (p − [c = y]) · k + 0` with `k = 1/N`.
 *
 * @param dlogits - (T, V) out.
 * @param prob - (T, V) the forward's probabilities.
 * @param targets - (T) the target ids.
 * @param k - `1.0 / N`, N the tokens of the whole batch, computed once.
 */
export function crossEntropyBackward(dlogits: Matrix, prob: Matrix, targets: ArrayLike<number>, k: number): void {
  for (let r = 0; r < prob.rows; r++) {
    const y = targets[r] as number;
    for (let c = 0; c < prob.columns; c++) {
      const p = prob.data[prob.offset + r * prob.stride + c] as number;
      dlogits.data[dlogits.offset + r * dlogits.stride + c] = (c === y ? p - 1.0 : p) * k + 0;
    }
  }
}

// ── The layers as one set ──────────────────────────────────────────────────

/**
 * The layers a pass calls, as one interface: the reference above is one
 * implementation ({@link REFERENCE_LAYERS}, the `scalar` kernel set), and
 * every kernel set (../kernels/) is another, with the same bits. A pass is
 * given the set it runs on and never asks which one it is.
 */
export interface KernelSet {
  rmsNormForward(n: NormActivations, x: Matrix, gain: Float64Array, eps: number): void;
  rmsNormBackward(dx: Matrix, gainTerms: Matrix, n: NormActivations, u: Matrix, x: Matrix, gain: Float64Array): void;
  linearForward(out: Matrix, inp: Matrix, weight: LinearWeight): void;
  linearBackward(dinp: Matrix, dweight: Matrix, inp: Matrix, dout: Matrix, weight: LinearWeight, flags: number): void;
  ropeForward(out: Matrix, inp: Matrix, rope: RopeTables, first: number): void;
  ropeBackward(dinp: Matrix, dout: Matrix, rope: RopeTables, first: number): void;
  attentionForward(out: Matrix, att: AttentionActivations, heads: number, scale: number): void;
  attentionBackward(g: AttentionAdjoints, dout: Matrix, att: AttentionActivations, heads: number, scale: number): void;
  swigluForward(a: SwigluActivations): void;
  swigluBackward(g: SwigluAdjoints, a: SwigluActivations): void;
  crossEntropyForward(rowLoss: Float64Array, prob: Matrix, logits: Matrix, targets: Int32Array): void;
  crossEntropyBackward(dlogits: Matrix, prob: Matrix, targets: Int32Array, k: number): void;
}

/** The reference layers as a {@link KernelSet}. */
export const REFERENCE_LAYERS: KernelSet = {
  rmsNormForward,
  rmsNormBackward,
  linearForward,
  linearBackward,
  ropeForward,
  ropeBackward,
  attentionForward,
  attentionBackward,
  swigluForward,
  swigluBackward,
  crossEntropyForward,
  crossEntropyBackward,
};
