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
import { blockTensorIndex } from '@llmcp/format';
import { firstNonFinite } from './internal/batch-reduce.ts';
import type { Kernels } from './kernels/kernel-set.ts';
import type { LinearWeight, NormActivations, RopeTables } from './reference/layers.ts';
import { embeddingForward, extendRopeTables, ropeTables } from './reference/layers.ts';
import { matrix, rowsOf, type Matrix } from './reference/matrix.ts';
import { blockForward, type BlockActivations, type BlockWeights } from './reference/model.ts';
import { parameterLayout, type ParameterEntry, type ParameterLayout } from './layout.ts';

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

/** The activations of one new row, shared by every layer: a block's buffers but for its keys and values, which are the cache's rows. */
type RowActivations = Omit<BlockActivations, 'v' | 'kr' | 'att'> & {
  /** (1, D) the residual stream. */
  readonly x: Matrix;
  /** The final norm. */
  readonly finalNorm: NormActivations;
};

/** The weights a decode step reads: views of the parameters as they are (no transposes: it runs forward only). */
interface RowWeights {
  readonly of: Float64Array;
  readonly embedding: Matrix;
  readonly blocks: readonly BlockWeights[];
  readonly finalNorm: Float64Array;
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
  /** (H · allocated) attention weights of the new row, head h from h·(length + 1). */
  weights: Float64Array;
  readonly row: RowActivations;
  work: MutableWork;
  /** The views of the parameters last decoded with (live views: built once per parameter array). */
  views: RowWeights | null;
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
      weights: new Float64Array(0),
      row: rowActivations(config),
      work: zeroWork(),
      views: null,
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
    const weights = new Float64Array(s.config.heads * next);
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

/** One row's buffers (a 0-layer model has no feed-forward block: its, possibly huge, width gets none). */
function rowActivations(config: DecoderConfig): RowActivations {
  const { modelWidth: D } = config;
  const F = config.layers === 0 ? 0 : config.feedForwardWidth;
  const row = (width = D): Matrix => matrix(new Float64Array(width), 1, width);
  const norm = (): NormActivations => ({ out: row(), normalized: row(), inv: new Float64Array(1), st: new Float64Array(1), ms: new Float64Array(1), dnormalized: row(0), rowAdjoints: new Float64Array(0) });
  return {
    x: row(),
    n1: norm(),
    q: row(),
    k: row(),
    qr: row(),
    merged: row(),
    attention: row(),
    h1: row(),
    n2: norm(),
    glu: { gate: row(F), up: row(F), sigma: row(F), silu: row(F), prod: row(F) },
    ffn: row(),
    finalNorm: norm(),
  };
}

/** The decode views of `params` (cached per parameter array). */
function rowWeights(s: KvCacheState, params: Float64Array): RowWeights {
  if (s.views?.of === params) return s.views;
  const entries = s.layout.entries;
  const view = (k: number): Matrix => {
    const e = entries[k] as ParameterEntry;
    return matrix(params, e.shape[0] as number, e.shape[1] as number, e.shape[1] as number, e.offset);
  };
  const gain = (k: number): Float64Array => params.subarray((entries[k] as ParameterEntry).offset, (entries[k] as ParameterEntry).offset + (entries[k] as ParameterEntry).length);
  const linear = (k: number): LinearWeight => ({ w: view(k), t: null });
  s.views = {
    of: params,
    embedding: view(0),
    blocks: s.layout.blocks.map((_, l) => {
      const b = (k: number): number => blockTensorIndex(l, k);
      return { attentionNorm: gain(b(0)), query: linear(b(1)), key: linear(b(2)), value: linear(b(3)), output: linear(b(4)), ffnNorm: gain(b(5)), gate: linear(b(6)), up: linear(b(7)), down: linear(b(8)) };
    }),
    finalNorm: gain(entries.length - 1),
  };
  return s.views;
}

/**
 * One decode step: runs `token` at position `length` through every block —
 * the training pass's blockForward on one row, whose key and value rows are
 * written into the cache past its length and whose attention reads the
 * cached rows — and returns its logits. The new rows are committed only when
 * every projection and logit is finite, so a failure leaves the cache
 * unchanged. Every operation is the row `length` of the full forward pass
 * with the same summation order (the full pass's masked terms are exact
 * zeros), so the logits are the bits of `nextTokenLogits(prefix + token)`.
 *
 * @param s - the cache (checked by the caller: owner, not empty, room for one).
 * @param model - the decoder's kernel set and its flat parameters.
 * @param token - a valid token id.
 * @returns (V) a fresh array.
 * @throws ModelError `MODEL_NON_FINITE`, `MODEL_CONTEXT_TOO_LONG` (storage).
 */
export function decodeRow(s: KvCacheState, model: { readonly kernels: Kernels; readonly parameters: Float64Array }, token: number): Float64Array {
  const { kernels: k, parameters: params } = model;
  const t = s.length;
  ensureCacheRows(s, t + 1);
  const { modelWidth: D, vocabularySize: V, heads: H, rmsEpsilon: eps } = s.config;
  const r = s.row;
  const W = rowWeights(s, params);
  embeddingForward(r.x, W.embedding, [token], 0);
  const c = { heads: H, scale: s.scale, eps, rope: s.rope, first: t };
  for (let l = 0; l < W.blocks.length; l++) {
    // The cache's rows 0 … t: row t is written past the cached length, not part of the cache until committed.
    const keys = matrix(s.keys[l]!, t + 1, D);
    const values = matrix(s.values[l]!, t + 1, D);
    const [kr, v] = [rowsOf(keys, t, 1), rowsOf(values, t, 1)];
    const a: BlockActivations = { ...r, kr, v, att: { q: r.qr, k: keys, v: values, prob: matrix(s.weights, H, t + 1), trace: null } };
    blockForward(k, a, W.blocks[l]!, r.x, r.x, c);
    checkProjection(r.q.data, D, { what: 'query', layer: l });
    checkProjection(r.k.data, D, { what: 'key', layer: l });
    checkProjection(v.data.subarray(t * D, t * D + D), D, { what: 'value', layer: l });
  }
  k.rmsNormForward(r.finalNorm, r.x, W.finalNorm, eps);
  // The tied head on one row: logits[v] = Σ_c E[v, c]·nf[c], c in order (the full forward's nf·Eᵀ), E read as it is.
  const logits = new Float64Array(V);
  k.product(matrix(logits, V, 1), W.embedding, matrix(r.finalNorm.out.data, D, 1), 0);
  const bad = firstNonFinite(logits, 0, V);
  if (bad >= 0) throw nonFinite({ what: 'logit', layer: -1 }, bad, logits[bad] as number);
  recordWork(s, 1, false);
  return logits;
}
