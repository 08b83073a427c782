/**
 * Greedy and temperature/top-k sampling with the reference's ranking,
 * compensated normalization and interval selection (../../../docs/spec/training.md §9), and
 * generation — cached (a key/value cache, the default) or uncached, with
 * identical bits.
 */
import type { DecoderConfig, SplitMix64 } from '@llmcp/format';
import { ModelError } from './errors.ts';
import type { KvCache, KvCacheOptions } from './kv-cache.ts';
import { exp } from './math/index.ts';

/** How to pick the next token. */
export type SamplingMode =
  | { readonly kind: 'greedy' }
  | {
      readonly kind: 'temperature';
      /** τ: finite and > 0. Below 1 the gap is `(logit − max) / τ`, otherwise `logit/τ − max/τ`. */
      readonly temperature: number;
      /** k: an integer in [1, V]; only the k best-ranked ids can be drawn. */
      readonly topK: number;
    };

/** The probabilities a mode assigns to one row of logits. */
export interface TokenDistribution {
  /** Every token id, largest logit first; equal logits by smaller id first. */
  readonly ranking: readonly number[];
  /** The ids that can be drawn, in rank order (one for greedy, k otherwise). */
  readonly retained: readonly number[];
  /** (V) probability per token id; exactly +0.0 for ids not retained. */
  readonly probabilities: Float64Array;
}

/** One sampled token with its evidence. */
export interface SampledToken {
  /** The chosen id. */
  readonly token: number;
  /** (V) the distribution it was drawn from. */
  readonly probabilities: Float64Array;
  /** Start of the chosen id's interval in [0, 1). */
  readonly intervalStart: number;
  /** End of the chosen id's interval (1.0 for the last id with positive probability). */
  readonly intervalEnd: number;
  /** The raw 64-bit output and the unit draw; null for greedy (which consumes no draw). */
  readonly draw: { readonly raw: bigint; readonly unit: number } | null;
}

const TWO_POW_NEG_53 = 1 / 9007199254740992;

/** Compensated (Kahan) sum of `values[0 … count−1]` in index order. */
function kahanSum(values: ArrayLike<number>, count: number): number {
  let sum = 0;
  let comp = 0;
  for (let i = 0; i < count; i++) {
    const w = values[i] as number;
    const y = w - comp;
    const t = sum + y;
    comp = t - sum - y;
    sum = t;
  }
  return sum;
}

function checkMode(mode: SamplingMode, V: number): void {
  if (typeof mode !== 'object' || mode === null) throw new TypeError('sampling mode must be an object');
  if (mode.kind === 'greedy') return;
  if (mode.kind !== 'temperature') {
    throw new ModelError('MODEL_INVALID_SAMPLING', `sampling mode kind: expected 'greedy' or 'temperature', found ${JSON.stringify((mode as { kind: unknown }).kind)}`, {
      field: 'kind',
    });
  }
  if (typeof mode.temperature !== 'number' || !Number.isFinite(mode.temperature) || !(mode.temperature > 0)) {
    throw new ModelError('MODEL_INVALID_SAMPLING', `temperature: expected a finite number > 0, found ${String(mode.temperature)}`, { field: 'temperature' });
  }
  if (!Number.isSafeInteger(mode.topK) || mode.topK < 1 || mode.topK > V) {
    throw new ModelError('MODEL_INVALID_SAMPLING', `topK: expected an integer in [1, ${V}], found ${String(mode.topK)}`, { field: 'topK' });
  }
}

/**
 * The distribution a sampling mode assigns to one row of logits (../../../docs/spec/training.md
 * §9 steps 1–5): ranking with ties to the smaller id; greedy puts 1 on the top
 * id; temperature/top-k gives the top id weight 1.0, the next k−1 ids
 * `exp(gap)`, normalizes by a compensated (Kahan) sum in rank order, and
 * checks that the compensated sum of all probabilities is within 1e-12 of 1.
 *
 * @param logits - (V) finite logits.
 * @param mode - greedy or temperature/top-k.
 * @returns ranking, retained ids and probabilities.
 * @throws ModelError `MODEL_INVALID_SAMPLING`, `MODEL_NON_FINITE` or `MODEL_PROBABILITY_SUM`.
 * @example
 * ```ts
 * tokenDistribution([0, 1, 1, 2], { kind: 'temperature', temperature: 1, topK: 2 }).retained; // [3, 1]
 * ```
 */
export function tokenDistribution(logits: ArrayLike<number>, mode: SamplingMode): TokenDistribution {
  const V = logits?.length;
  if (!Number.isSafeInteger(V) || V < 1) throw new ModelError('MODEL_INVALID_SAMPLING', `logits: expected at least one value, found ${String(V)}`, { field: 'logits' });
  checkMode(mode, V);
  for (let i = 0; i < V; i++) {
    const z = logits[i] as number;
    if (typeof z !== 'number' || !Number.isFinite(z)) throw new ModelError('MODEL_NON_FINITE', `logit ${i} is not finite: ${String(z)}`, { index: i });
  }
  const ranking = Array.from({ length: V }, (_, i) => i);
  ranking.sort((a, b) => {
    const za = logits[a] as number;
    const zb = logits[b] as number;
    return za > zb ? -1 : za < zb ? 1 : a - b;
  });
  const probabilities = new Float64Array(V);
  const top = ranking[0] as number;
  if (mode.kind === 'greedy') {
    probabilities[top] = 1;
    return { ranking, retained: [top], probabilities };
  }
  const k = mode.topK;
  const tau = mode.temperature;
  const max = logits[top] as number;
  const weights = new Float64Array(k);
  weights[0] = 1.0;
  for (let r = 1; r < k; r++) {
    const z = logits[ranking[r] as number] as number;
    const gap = tau < 1 ? (z - max) / tau : z / tau - max / tau;
    weights[r] = exp(gap);
  }
  const S = kahanSum(weights, k);
  for (let r = 0; r < k; r++) probabilities[ranking[r] as number] = (weights[r] as number) / S;
  const total = kahanSum(probabilities, V);
  if (!(Math.abs(total - 1) <= 1e-12)) {
    throw new ModelError('MODEL_PROBABILITY_SUM', `sampling probabilities sum to ${total}, expected 1 within 1e-12`, { field: 'probabilities' });
  }
  return { ranking, retained: ranking.slice(0, k), probabilities };
}

/**
 * Interval selection in token-id order (../../../docs/spec/training.md §9 step 7): walking the
 * ids with positive probability upward from `start = 0`, each interval ends at
 * `min(start + p, 1.0)` — or 1.0 for the last such id — and the first id with
 * `unit < end` is chosen.
 *
 * @param probabilities - (V) probabilities with at least one positive entry.
 * @param unit - a unit draw in [0, 1).
 * @returns the id and its interval.
 * @throws ModelError `MODEL_INVALID_SAMPLING` when no probability is positive.
 */
export function selectToken(probabilities: ArrayLike<number>, unit: number): { token: number; start: number; end: number } {
  let last = -1;
  for (let i = probabilities.length - 1; i >= 0; i--) {
    if ((probabilities[i] as number) > 0) {
      last = i;
      break;
    }
  }
  if (last < 0) throw new ModelError('MODEL_INVALID_SAMPLING', 'no token has a positive probability', { field: 'probabilities' });
  let start = 0.0;
  for (let i = 0; i <= last; i++) {
    const p = probabilities[i] as number;
    if (!(p > 0)) continue;
    const end = i === last ? 1.0 : Math.min(start + p, 1.0);
    if (unit < end || i === last) return { token: i, start, end };
    start = end;
  }
  return { token: last, start, end: 1.0 };
}

/**
 * Samples one token from a row of logits. Temperature/top-k consumes exactly
 * one draw of `rng` (its top 53 bits times 2^−53); greedy consumes none.
 *
 * @param logits - (V) finite logits.
 * @param mode - greedy or temperature/top-k.
 * @param rng - the sampling generator (advanced in place).
 * @returns the token and its evidence.
 * @throws ModelError `MODEL_INVALID_SAMPLING`, `MODEL_NON_FINITE` or `MODEL_PROBABILITY_SUM`.
 * @example
 * ```ts
 * const rng = new SplitMix64(36n);
 * sampleToken([0, 1, 1, 2], { kind: 'temperature', temperature: 1, topK: 3 }, rng).token; // 3
 * ```
 */
export function sampleToken(logits: ArrayLike<number>, mode: SamplingMode, rng: SplitMix64): SampledToken {
  const { probabilities } = tokenDistribution(logits, mode);
  if (mode.kind === 'greedy') {
    const { token, start, end } = selectToken(probabilities, 0);
    return { token, probabilities, intervalStart: start, intervalEnd: end, draw: null };
  }
  const raw = rng.nextU64();
  const unit = Number(raw >> 11n) * TWO_POW_NEG_53;
  const { token, start, end } = selectToken(probabilities, unit);
  return { token, probabilities, intervalStart: start, intervalEnd: end, draw: { raw, unit } };
}

/** Why generation stopped, checked in this order after each appended token. */
export type StopReason = 'end-of-sequence' | 'max-new-tokens' | 'context-limit';

/** Options of {@link generate}. */
export interface GenerateOptions {
  /** 1 … maxPositions token ids to start from. */
  readonly prompt: ArrayLike<number>;
  /** Greedy or temperature/top-k. */
  readonly mode: SamplingMode;
  /** The sampling generator (advanced in place; greedy leaves it untouched). */
  readonly rng: SplitMix64;
  /** Stop after this many new tokens (an integer ≥ 1). */
  readonly maxNewTokens: number;
  /** Stop after emitting this id, if given. */
  readonly endOfSequence?: number;
  /**
   * Key/value caching (default true when the model supports it): `false`
   * recomputes the whole prefix for every token (the uncached path, for
   * comparison); a {@link KvCache} of the model is reset and reused (its
   * storage kept). Tokens, evidence and the generator state are the same
   * either way.
   */
  readonly cache?: boolean | KvCache;
  /**
   * What happens when the prefix outgrows the context window (maxPositions):
   * `'stop'` (the default) ends generation with `context-limit`; `'slide'`
   * goes on, each further forward pass running on the last maxPositions
   * tokens only (with a cache: the cache is refilled with that window, since
   * every token's rotary position moves; the logits are those of the
   * uncached path on the same window, bit for bit).
   */
  readonly contextOverflow?: 'stop' | 'slide';
}

/** One generation step. */
export interface GenerationStep extends SampledToken {
  /** The prefix the forward pass ran on (with `contextOverflow: 'slide'`, the window: at most maxPositions tokens). */
  readonly prefix: readonly number[];
  /** (V) the last position's logits. */
  readonly logits: Float64Array;
  /** Generator state before this step's draw. */
  readonly rngStateBefore: bigint;
}

/** The result of {@link generate}. */
export interface Generation {
  /** The new tokens (the prompt excluded). */
  readonly tokens: number[];
  /** Evidence for every new token. */
  readonly steps: GenerationStep[];
  /** Why it stopped. */
  readonly stopReason: StopReason;
  /** Whether a key/value cache was used. */
  readonly cached: boolean;
}

/** What generation needs from a model. */
export interface LogitsSource {
  readonly config: DecoderConfig;
  /** (V) logits of the last position of a no-grad forward on `tokens`. */
  nextTokenLogits(tokens: ArrayLike<number>): Float64Array;
}

/** A model that can also generate with a key/value cache (the decoder). */
export interface CachedLogitsSource extends LogitsSource {
  /** An empty cache for this model. */
  createKvCache(options?: KvCacheOptions): KvCache;
  /** Fills an empty cache with `tokens`; returns the last position's logits. */
  prefill(cache: KvCache, tokens: ArrayLike<number>): Float64Array;
  /** Appends one token; returns its logits. */
  decodeNext(cache: KvCache, token: number): Float64Array;
}

function supportsCache(model: LogitsSource): model is CachedLogitsSource {
  const m = model as Partial<CachedLogitsSource>;
  return typeof m.createKvCache === 'function' && typeof m.prefill === 'function' && typeof m.decodeNext === 'function';
}

/**
 * Generation (../../../docs/spec/training.md §9): sample from the last position's logits,
 * append, repeat; stop after the end-of-sequence id, after `maxNewTokens`, or
 * when the prefix is longer than maxPositions (or, with `contextOverflow:
 * 'slide'`, go on with the last maxPositions tokens). By default the model's
 * key/value cache supplies the logits (a prefill of the prompt, then one
 * decode step per appended token that is fed back); with `cache: false` every
 * step runs a no-grad forward on the whole prefix. Both paths give the same
 * logit bits, tokens, evidence and generator state.
 *
 * @param model - the decoder (or any {@link LogitsSource}; caching needs a {@link CachedLogitsSource}).
 * @param options - prompt, mode, generator, limits, caching.
 * @returns the new tokens, per-step evidence and the stop reason.
 * @throws ModelError `MODEL_INVALID_SAMPLING`, `MODEL_TOKEN_OUT_OF_RANGE`, `MODEL_CONTEXT_TOO_LONG`, `MODEL_NON_FINITE`, `MODEL_CACHE_MISMATCH`, `MODEL_CACHE_OVERFLOW` (a given cache too small).
 * @example
 * ```ts
 * const out = generate(model, { prompt: [0], mode: { kind: 'temperature', temperature: 1, topK: 3 }, rng, maxNewTokens: 4 });
 * out.tokens; // [4, 4] for the ch33 step-8 model and state 0x9e3779b97f4a7c38
 * ```
 */
export function generate(model: LogitsSource, options: GenerateOptions): Generation {
  const { prompt, mode, rng, maxNewTokens, endOfSequence } = options;
  const V = model.config.vocabularySize;
  const P = model.config.maxPositions;
  checkMode(mode, V);
  if (!Number.isSafeInteger(maxNewTokens) || maxNewTokens < 1) {
    throw new ModelError('MODEL_INVALID_SAMPLING', `maxNewTokens: expected an integer ≥ 1, found ${String(maxNewTokens)}`, { field: 'maxNewTokens' });
  }
  if (endOfSequence !== undefined && (!Number.isSafeInteger(endOfSequence) || endOfSequence < 0 || endOfSequence >= V)) {
    throw new ModelError('MODEL_INVALID_SAMPLING', `endOfSequence: expected an id in [0, ${V}), found ${String(endOfSequence)}`, { field: 'endOfSequence' });
  }
  if (!(prompt?.length >= 1) || prompt.length > P) {
    throw new ModelError('MODEL_CONTEXT_TOO_LONG', `prompt: expected 1 … ${P} tokens, found ${String(prompt?.length)}`, { field: 'prompt' });
  }
  const wanted = options.cache ?? true;
  let cache: KvCache | null = null;
  if (wanted !== false) {
    if (!supportsCache(model)) {
      if (wanted !== true) throw new TypeError('generate: a cache was given but the model has no cached path');
    } else {
      cache = wanted === true ? model.createKvCache() : wanted;
      if (wanted !== true) cache.reset();
    }
  }
  const cachedModel = cache === null ? null : (model as CachedLogitsSource);
  const prefix = Array.from(prompt);
  const tokens: number[] = [];
  const steps: GenerationStep[] = [];
  const cached = cache !== null;
  const slide = options.contextOverflow === 'slide';
  if (options.contextOverflow !== undefined && !slide && options.contextOverflow !== 'stop') {
    throw new ModelError('MODEL_INVALID_SAMPLING', `contextOverflow: expected 'stop' or 'slide', found ${JSON.stringify(options.contextOverflow)}`, { field: 'contextOverflow' });
  }
  for (;;) {
    // Only with sliding can the prefix be longer than the window; then the forward pass sees its last P tokens.
    const sliding = prefix.length > P;
    const window = sliding ? prefix.slice(prefix.length - P) : prefix;
    let logits: Float64Array;
    if (cachedModel === null || cache === null) logits = model.nextTokenLogits(window);
    else if (steps.length === 0 || sliding) {
      if (sliding) cache.reset();
      logits = cachedModel.prefill(cache, window);
    } else logits = cachedModel.decodeNext(cache, prefix[prefix.length - 1] as number);
    const rngStateBefore = rng.state;
    const sampled = sampleToken(logits, mode, rng);
    steps.push({ ...sampled, prefix: window.slice(), logits, rngStateBefore });
    prefix.push(sampled.token);
    tokens.push(sampled.token);
    if (endOfSequence !== undefined && sampled.token === endOfSequence) return { tokens, steps, stopReason: 'end-of-sequence', cached };
    if (tokens.length >= maxNewTokens) return { tokens, steps, stopReason: 'max-new-tokens', cached };
    if (!slide && prefix.length > P) return { tokens, steps, stopReason: 'context-limit', cached };
  }
}
