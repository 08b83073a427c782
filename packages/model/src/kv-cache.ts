/**
 * A per-layer key/value cache for the decoder (the reference's ch37–ch38
 * incremental attention and cached generation): a prefill of the prompt, then
 * one-token decode steps that project only the new row and attend over the
 * cached rotated keys and values. Every sum runs in the order of the full
 * forward pass, so a cached logit has the bits of the complete-prefix one.
 */
import type { DecoderConfig } from '@llmcp/format';
import { validateDecoderConfig } from './config.ts';
import { ModelError } from './errors.ts';
import { firstNonFinite } from './internal/batch-reduce.ts';
import { attentionDecodeRow } from './kernels/attention.ts';
import { rowTimesMatrix } from './kernels/gemm.ts';
import { rmsNormForward } from './kernels/rmsnorm.ts';
import { extendRopeTables, ropeForwardRow, ropeTables, type RopeTables } from './kernels/rope.ts';
import { swigluForward } from './kernels/swiglu.ts';
import { modelViews, parameterLayout, type ModelViews, type ParameterLayout } from './layout.ts';

/** Options of a {@link KvCache}. */
export interface KvCacheOptions {
  /**
   * Positions the cache accepts (an integer in [1, maxPositions]; default
   * maxPositions). Storage grows on demand up to this, so a large capacity
   * costs nothing until it is used.
   */
  readonly capacity?: number;
}

/**
 * Work counters of a cache since it was built or last reset (what ch37/ch38
 * print). "Complete prefix" is what an uncached forward on the whole prefix
 * after each call would have done.
 */
export interface KvCacheWork {
  /** Tokens written by prefills. */
  readonly prefillTokens: number;
  /** Tokens written by decode steps. */
  readonly decodeTokens: number;
  /** Rows appended, summed over the layer caches (tokens × layers). */
  readonly cacheAppends: number;
  /** Rows projected by each projection of each layer (= tokens written). */
  readonly rowsPerProjection: number;
  /** Rows each projection of each layer would project recomputing the whole prefix at every call (Σ prefix lengths). */
  readonly completePrefixRowsPerProjection: number;
  /** Query, key and value rows projected, summed over layers (3 × cacheAppends). */
  readonly qkvRows: number;
  /** Attention scores computed: layers × heads × (keys attended by each new row). */
  readonly cachedScores: number;
  /** Attention scores of the complete-prefix grids: layers × heads × T² per call (T = prefix length after the call). */
  readonly completePrefixScores: number;
}

type MutableWork = { -readonly [K in keyof KvCacheWork]: KvCacheWork[K] };

function zeroWork(): MutableWork {
  return {
    prefillTokens: 0,
    decodeTokens: 0,
    cacheAppends: 0,
    rowsPerProjection: 0,
    completePrefixRowsPerProjection: 0,
    qkvRows: 0,
    cachedScores: 0,
    completePrefixScores: 0,
  };
}

/** Single-row scratch of a decode step (each buffer one row). */
interface RowScratch {
  /** (D) residual stream. */
  readonly x: Float64Array;
  /** RMSNorm outputs: (D) gained, (D) normalized, (1) inv, (1) st, (1) ms. */
  readonly out: Float64Array;
  readonly normalized: Float64Array;
  readonly inv: Float64Array;
  readonly st: Float64Array;
  readonly ms: Float64Array;
  /** (D) query, rotated query, key, value, merged heads, attention output, h1, ffn output. */
  readonly q: Float64Array;
  readonly qr: Float64Array;
  readonly k: Float64Array;
  readonly v: Float64Array;
  readonly merged: Float64Array;
  readonly attention: Float64Array;
  readonly h1: Float64Array;
  readonly ffn: Float64Array;
  /** (F) gate, sigmoid, silu, up, product. */
  readonly gate: Float64Array;
  readonly sigma: Float64Array;
  readonly silu: Float64Array;
  readonly up: Float64Array;
  readonly prod: Float64Array;
}

/** The state behind a {@link KvCache} (internal to the package). */
export interface KvCacheState {
  readonly owner: object;
  readonly config: DecoderConfig;
  readonly layout: ParameterLayout;
  readonly headWidth: number;
  readonly scale: number;
  readonly capacity: number;
  /** Positions with storage. */
  allocated: number;
  /** Positions cached (every layer holds this many rows). */
  length: number;
  /** Per layer: (allocated, D) rotated keys, row-major. */
  keys: Float64Array[];
  /** Per layer: (allocated, D) values. */
  values: Float64Array[];
  rope: RopeTables;
  /** (allocated) attention weights of one head. */
  weights: Float64Array;
  readonly row: RowScratch;
  work: MutableWork;
  /** Per-tensor views of the parameters last decoded with (live views: built once per parameter array). */
  views: ModelViews | null;
  viewsOf: Float64Array | null;
}

const STATES = new WeakMap<KvCache, KvCacheState>();

/** What a cache is built from: a decoder (its configuration and identity). */
export interface KvCacheModel {
  readonly config: DecoderConfig;
}

/**
 * Key/value storage of one decoder, per layer: the rotated keys and the values
 * of every position run so far. Use it through the decoder it was built for
 * ({@link Decoder.prefill}, {@link Decoder.decodeNext}) or through
 * {@link generate}, which uses one by default.
 *
 * @example
 * ```ts
 * const cache = model.createKvCache();
 * let logits = model.prefill(cache, [0, 1]); // last position's logits
 * logits = model.decodeNext(cache, 2); // same bits as model.nextTokenLogits([0, 1, 2])
 * cache.reset(); // empty again, storage kept
 * ```
 */
export class KvCache {
  /**
   * @param model - the decoder the cache is for (only that instance can use it).
   * @param options - capacity.
   * @throws ModelError `MODEL_INVALID_CONFIG` for a capacity outside [1, maxPositions].
   */
  constructor(model: KvCacheModel, options: KvCacheOptions = {}) {
    const config = Object.freeze({ ...model.config });
    const headWidth = validateDecoderConfig(config);
    const capacity = options.capacity ?? config.maxPositions;
    if (!Number.isSafeInteger(capacity) || capacity < 1 || capacity > config.maxPositions) {
      throw new ModelError('MODEL_INVALID_CONFIG', `cache capacity: expected an integer in [1, ${config.maxPositions}], found ${String(capacity)}`, { field: 'capacity' });
    }
    const { modelWidth: D } = config;
    // A 0-layer model has no feed-forward block: its (possibly huge) width needs no scratch.
    const F = config.layers === 0 ? 0 : config.feedForwardWidth;
    const f = (n: number): Float64Array => new Float64Array(n);
    STATES.set(this, {
      owner: model,
      config,
      layout: parameterLayout(config),
      headWidth,
      scale: 1.0 / Math.sqrt(headWidth),
      capacity,
      allocated: 0,
      length: 0,
      keys: [],
      values: [],
      rope: ropeTables(0, headWidth, config.ropeBase),
      weights: f(0),
      row: {
        x: f(D),
        out: f(D),
        normalized: f(D),
        inv: f(1),
        st: f(1),
        ms: f(1),
        q: f(D),
        qr: f(D),
        k: f(D),
        v: f(D),
        merged: f(D),
        attention: f(D),
        h1: f(D),
        ffn: f(D),
        gate: f(F),
        sigma: f(F),
        silu: f(F),
        up: f(F),
        prod: f(F),
      },
      work: zeroWork(),
      views: null,
      viewsOf: null,
    });
  }

  /**
   * Positions the cache accepts.
   * @returns the capacity.
   */
  get capacity(): number {
    return kvCacheState(this).capacity;
  }

  /**
   * Positions cached so far (0 after construction or {@link reset}).
   * @returns the length.
   */
  get length(): number {
    return kvCacheState(this).length;
  }

  /**
   * Positions with storage allocated (grows on demand, kept by {@link reset}).
   * @returns the positions.
   */
  get allocatedPositions(): number {
    return kvCacheState(this).allocated;
  }

  /**
   * Number of layer caches (the decoder's layers).
   * @returns the layers.
   */
  get layers(): number {
    return kvCacheState(this).config.layers;
  }

  /**
   * The work counters since construction or the last {@link reset}.
   * @returns a copy of the counters.
   */
  get work(): KvCacheWork {
    return { ...kvCacheState(this).work };
  }

  /**
   * The cached rotated keys of one layer: a live (length, D) row-major view
   * (head h is columns h·d … h·d+d−1).
   * @param layer - 0 … layers−1.
   * @returns a `subarray` of the storage.
   * @throws RangeError for a layer outside the model.
   */
  keys(layer: number): Float64Array {
    const s = kvCacheState(this);
    return layerRows(s, s.keys, layer);
  }

  /**
   * The cached values of one layer: a live (length, D) row-major view.
   * @param layer - 0 … layers−1.
   * @returns a `subarray` of the storage.
   * @throws RangeError for a layer outside the model.
   */
  values(layer: number): Float64Array {
    const s = kvCacheState(this);
    return layerRows(s, s.values, layer);
  }

  /** Empties the cache and zeroes its work counters; the storage is kept and reused. */
  reset(): void {
    const s = kvCacheState(this);
    s.length = 0;
    s.work = zeroWork();
  }
}

function layerRows(s: KvCacheState, store: Float64Array[], layer: number): Float64Array {
  if (!Number.isSafeInteger(layer) || layer < 0 || layer >= s.config.layers) throw new RangeError(`layer: expected an integer in [0, ${s.config.layers}), found ${String(layer)}`);
  const rows = store[layer];
  return rows === undefined ? new Float64Array(0) : rows.subarray(0, s.length * s.config.modelWidth);
}

/**
 * The state of a cache (internal).
 * @param cache - a cache.
 * @returns its state.
 * @throws TypeError when `cache` is not a {@link KvCache}.
 */
export function kvCacheState(cache: KvCache): KvCacheState {
  const s = STATES.get(cache);
  if (s === undefined) throw new TypeError('expected a KvCache');
  return s;
}

const CONFIG_CHECKS: readonly [keyof DecoderConfig, string][] = [
  ['vocabularySize', 'configuration'],
  ['modelWidth', 'configuration'],
  ['feedForwardWidth', 'configuration'],
  ['layers', 'configuration'],
  ['rmsEpsilon', 'configuration'],
  ['heads', 'head layout'],
  ['ropeBase', 'RoPE table'],
  ['maxPositions', 'RoPE table'],
];

/**
 * Checks that a cache was built for this decoder: the same configuration
 * (sizes, head layout, RoPE table) and the same instance.
 * @param cache - the cache.
 * @param owner - the decoder using it.
 * @returns the cache's state.
 * @throws ModelError `MODEL_CACHE_MISMATCH`.
 */
export function checkCacheOwner(cache: KvCache, owner: KvCacheModel): KvCacheState {
  const s = kvCacheState(cache);
  for (const [field, what] of CONFIG_CHECKS) {
    const mine = owner.config[field];
    const theirs = s.config[field];
    if (!Object.is(mine, theirs)) {
      throw new ModelError('MODEL_CACHE_MISMATCH', `the cache was built for another ${what}: ${field} ${String(theirs)}, this decoder has ${String(mine)}`, { field });
    }
  }
  if (s.owner !== owner) throw new ModelError('MODEL_CACHE_MISMATCH', 'the cache was built for another decoder instance (same configuration); build one with this decoder', { field: 'model' });
  return s;
}

/**
 * Makes room for `positions` rows (doubling, up to the capacity), keeping the
 * cached rows; also grows the RoPE table. Allocation failure is reported as
 * `MODEL_CONTEXT_TOO_LONG` and leaves the cache as it was.
 * @param s - the cache state.
 * @param positions - rows needed.
 * @throws ModelError `MODEL_CONTEXT_TOO_LONG`.
 */
export function ensureCacheRows(s: KvCacheState, positions: number): void {
  if (positions <= s.allocated) return;
  const D = s.config.modelWidth;
  const next = Math.min(s.capacity, Math.max(positions, 2 * s.allocated, 16));
  try {
    const keys: Float64Array[] = [];
    const values: Float64Array[] = [];
    const L = s.config.layers;
    for (let l = 0; l < L; l++) {
      const k = new Float64Array(next * D);
      const v = new Float64Array(next * D);
      if (l < s.keys.length) {
        k.set((s.keys[l] as Float64Array).subarray(0, s.length * D));
        v.set((s.values[l] as Float64Array).subarray(0, s.length * D));
      }
      keys.push(k);
      values.push(v);
    }
    const weights = new Float64Array(next);
    const rope = extendRopeTables(s.rope, next);
    s.keys = keys;
    s.values = values;
    s.weights = weights;
    s.rope = rope;
    s.allocated = next;
  } catch (e) {
    if (!(e instanceof RangeError)) throw e;
    throw new ModelError('MODEL_CONTEXT_TOO_LONG', `a key/value cache of ${next} positions cannot be allocated (${e.message})`, { field: 'capacity', cause: e });
  }
}

/**
 * Checks that `n` more positions fit, before anything is written.
 * @param s - the cache state.
 * @param n - positions to add.
 * @throws ModelError `MODEL_CACHE_OVERFLOW`.
 */
export function checkRoom(s: KvCacheState, n: number): void {
  if (s.length + n > s.capacity) {
    throw new ModelError('MODEL_CACHE_OVERFLOW', `the key/value cache holds ${s.length} of ${s.capacity} positions; ${n} more do not fit`, { field: 'capacity' });
  }
}

/** Which values a finiteness check covers: a projection (or the logits, layer −1) of one layer. */
export interface ProjectionSite {
  /** 'query', 'key', 'value' or 'logit' (the error's `field`). */
  readonly what: string;
  /** Layer index, or −1 for the logits. */
  readonly layer: number;
}

function nonFinite(site: ProjectionSite, index: number, value: number): ModelError {
  const { what, layer } = site;
  return new ModelError('MODEL_NON_FINITE', `${what}${layer >= 0 ? ` of layer ${layer}` : ''}[${index}] is not finite: ${value}; the cache is unchanged`, {
    field: what,
    index,
  });
}

/**
 * Checks rows of a freshly computed projection (query, key or value) for
 * non-finite values.
 * @param a - the projection.
 * @param n - elements to check.
 * @param site - which projection of which layer (for the error).
 * @throws ModelError `MODEL_NON_FINITE`.
 */
export function checkProjection(a: Float64Array, n: number, site: ProjectionSite): void {
  const bad = firstNonFinite(a, 0, n);
  if (bad >= 0) throw nonFinite(site, bad, a[bad] as number);
}

/**
 * Records a committed call that wrote `n` rows after the cached ones.
 * @param s - the cache state (its length is advanced by `n`).
 * @param n - rows written.
 * @param prefill - whether the call was a prefill (else a decode step).
 */
export function recordWork(s: KvCacheState, n: number, prefill: boolean): void {
  const before = s.length;
  const { layers: L, heads: H } = s.config;
  const after = before + n;
  const w = s.work;
  if (prefill) w.prefillTokens += n;
  else w.decodeTokens += n;
  w.cacheAppends += n * L;
  w.rowsPerProjection += n;
  w.completePrefixRowsPerProjection += after;
  w.qkvRows += 3 * n * L;
  // New rows i = before+1 … after attend over i keys each.
  w.cachedScores += L * H * ((after * (after + 1)) / 2 - (before * (before + 1)) / 2);
  w.completePrefixScores += L * H * after * after;
  s.length = after;
}

/**
 * One decode step: runs `token` at position `length` through every block,
 * attending over the cached rows, and returns its logits. The new rows are
 * written past the cached length and committed only when every projection
 * and logit is finite, so a failure leaves the cache unchanged.
 *
 * Each operation is the row `length` of the full forward pass with the same
 * summation order (see the kernels), so the logits are the bits of
 * `nextTokenLogits(prefix + token)`.
 *
 * @param s - the cache (checked by the caller: owner, not empty, room for one).
 * @param params - the decoder's flat parameters.
 * @param token - a valid token id.
 * @returns (V) a fresh array.
 * @throws ModelError `MODEL_NON_FINITE`, `MODEL_CONTEXT_TOO_LONG` (storage).
 */
export function decodeRow(s: KvCacheState, params: Float64Array, token: number): Float64Array {
  const t = s.length;
  ensureCacheRows(s, t + 1);
  const { modelWidth: D, feedForwardWidth: F, vocabularySize: V, heads: H, rmsEpsilon: eps } = s.config;
  const r = s.row;
  const x = r.x;
  const src = token * D;
  for (let c = 0; c < D; c++) x[c] = params[src + c] as number;
  if (s.viewsOf !== params) {
    s.views = modelViews(s.layout, params);
    s.viewsOf = params;
  }
  const W = s.views!;
  for (let l = 0; l < W.blocks.length; l++) {
    const w = W.blocks[l]!;
    rmsNormForward(r, x, w.attentionNorm, 1, D, eps);
    rowTimesMatrix(r.q, r.out, w.query, 0, D, D);
    rowTimesMatrix(r.k, r.out, w.key, 0, D, D);
    rowTimesMatrix(r.v, r.out, w.value, 0, D, D);
    checkProjection(r.q, D, { what: 'query', layer: l });
    checkProjection(r.k, D, { what: 'key', layer: l });
    checkProjection(r.v, D, { what: 'value', layer: l });
    const keys = s.keys[l]!;
    const values = s.values[l]!;
    // Written past the cached length: not part of the cache until committed.
    ropeForwardRow(r.qr, 0, r.q, s.rope, t, D, s.headWidth);
    ropeForwardRow(keys, t * D, r.k, s.rope, t, D, s.headWidth);
    values.set(r.v, t * D);
    attentionDecodeRow(r.merged, r.qr, keys, values, t + 1, D, H, s.scale, s.weights);
    rowTimesMatrix(r.attention, r.merged, w.output, 0, D, D);
    for (let i = 0; i < D; i++) r.h1[i] = (x[i] as number) + (r.attention[i] as number);
    rmsNormForward(r, r.h1, w.ffnNorm, 1, D, eps);
    rowTimesMatrix(r.gate, r.out, w.gate, 0, F, D);
    rowTimesMatrix(r.up, r.out, w.up, 0, F, D);
    swigluForward(r.prod, r.silu, r.sigma, r.gate, r.up, F);
    rowTimesMatrix(r.ffn, r.prod, w.down, 0, D, F);
    for (let i = 0; i < D; i++) x[i] = (r.h1[i] as number) + (r.ffn[i] as number);
  }
  rmsNormForward(r, x, W.finalNorm, 1, D, eps);
  // Tied head: logits[v] = Σ_c nf[c]·E[v, c] over c ascending (the full forward's Eᵀ product).
  const logits = new Float64Array(V);
  for (let v = 0; v < V; v++) {
    const e = v * D;
    let sum = 0;
    for (let c = 0; c < D; c++) sum += (r.out[c] as number) * (params[e + c] as number);
    logits[v] = sum;
  }
  const bad = firstNonFinite(logits, 0, V);
  if (bad >= 0) throw nonFinite({ what: 'logit', layer: -1 }, bad, logits[bad] as number);
  recordWork(s, 1, false);
  return logits;
}
