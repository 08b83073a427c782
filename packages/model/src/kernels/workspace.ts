/**
 * A thread's workspace: every buffer, weight copy and gradient accumulator a
 * decoder pass runs on, placed where the thread's kernel set wants them. It
 * hands the reference pass (../reference/model.ts) plain views — a
 * {@link DecoderState} for T rows — and keeps everything about memory here:
 *
 * - the buffers of sequences of up to `capacity` positions, allocated from
 *   one size table in one fixed order, as ordinary arrays or as views of the
 *   kernel set's arena (a fixed WebAssembly memory its kernels read and write
 *   in place: kernel-arena.ts), sized once per capacity;
 * - the weights as views with their transposes ({@link prepare}): with an
 *   arena, a snapshot of the parameters and the transposed weights in it, rows
 *   that are a multiple of 512 values wide padded by 8 (`residentStride`,
 *   which keeps a product tile's rows out of one L1 set); without, views of
 *   the parameters and transposes of their own;
 * - with an arena, a resident weight-gradient accumulator: a sequence's S_b is
 *   written there and copied to its slot only when another slot comes or the
 *   owner flushes ({@link flushGradients}), so sequences accumulating in order
 *   into one slot copy nothing; a slot in the arena's own memory (a worker's
 *   partial slots in front of a shared arena) is written in place.
 *
 * The (T, F) activations and adjoints and the logits' adjoint get the padded
 * row stride in an arena too (the weight-gradient products walk them along
 * k); their padding stays +0, and no sum reads it.
 */
import type { DecoderConfig } from '@llmcp/format';
import { blockTensorIndex } from '@llmcp/format';
import { validateDecoderConfig } from '../config.ts';
import { ModelError } from '../errors.ts';
import { gemmCounters } from '../internal/gemm-counters.ts';
import { parameterLayout, type ParameterEntry, type ParameterLayout } from '../layout.ts';
import { extendRopeTables, ropeTables, type AttentionTrace, type LinearWeight, type NormActivations, type RopeTables } from '../reference/layers.ts';
import { matrix, type Matrix } from '../reference/matrix.ts';
import type { Activations, Adjoints, BlockActivations, BlockAdjoints, BlockConstants, DecoderState, DecoderWeights } from '../reference/model.ts';
import { residentStride, type KernelArena, type SharedArenaMemory } from './kernel-arena.ts';

/** Where a kernel set wants a workspace's memory, and how it moves a weight into its transpose. */
export interface Placement {
  /**
   * Memory for `elements` f64 values of views: an arena its kernels read in
   * place, opened after the front of `shared` when given (a memory another
   * thread made: the help at the end of a wave reads it), or null for
   * ordinary arrays (also when `shared` is too small).
   */
  arena(elements: number, shared: SharedArenaMemory | null): KernelArena | null;
  /** `dst = srcᵀ`, values moved (src (R, S), dst (S, R)). */
  transpose(dst: Matrix, src: Matrix): void;
}

/** Reusable per-head scratch of the product-based attention of the fast kernel sets (capacity T). */
export interface AttentionScratch {
  /** (T, T) the scores of the current head. */
  readonly scores: Float64Array;
  /** (T, T) backward: adjoint of the current head's weights. */
  readonly dprob: Float64Array;
  /** (T, T) backward: adjoint of its raw scores. */
  readonly draw: Float64Array;
  /** (d, T) a transposed head slice. */
  readonly sliceT: Float64Array;
  /** (T·(T+1)/2) the causal triangle of one head, packed by rows (the softmax's batched exp). */
  readonly shifted: Float64Array;
  /** (T) the row maxima of the current head. */
  readonly rowMax: Float64Array;
}

/** Where one flat array lays out the layout's tensors: per entry its first element and row stride. */
interface Placed {
  readonly offsets: readonly number[];
  readonly strides: readonly number[];
  readonly size: number;
}

/** Rows and width of entry `e` as stored ([in, out], [V, D]), or transposed; a gain is one row. */
function storedShape(e: ParameterEntry, transposed: boolean): [rows: number, width: number] {
  if (e.kind === 'gain') return [1, e.length];
  const r = e.shape[0] as number;
  const c = e.shape[1] as number;
  return transposed ? [c, r] : [r, c];
}

/** The layout's tensors (or their transposes) one after another with padded strides (`padded`), or at the parameters' own offsets. */
function place(layout: ParameterLayout, transposed: boolean, padded: boolean): Placed {
  const offsets: number[] = [];
  const strides: number[] = [];
  let size = 0;
  for (const e of layout.entries) {
    const [rows, width] = storedShape(e, transposed);
    const ld = padded && e.kind !== 'gain' ? residentStride(width) : width;
    offsets.push(padded ? size : e.offset);
    strides.push(ld);
    size = padded ? size + rows * ld : layout.size;
  }
  return { offsets, strides, size };
}

/** Hands out one zeroed array of n elements: an ordinary array, or a view of an arena. */
type Take = (n: number) => Float64Array;
const ordinary: Take = (n) => new Float64Array(n);

/** The row strides of the activations that need not be their width: (T, F) buffers and the logits' adjoint. */
interface ActivationStrides {
  readonly ffn: number;
  readonly dlogits: number;
}

/** The capacity-sized arrays of one norm call. */
type NormArrays = Record<'out' | 'normalized' | 'inv' | 'st' | 'ms' | 'dnormalized' | 'rowAdjoints', Float64Array>;
type BlockArrays = Record<'q' | 'k' | 'v' | 'qr' | 'kr' | 'prob' | 'merged' | 'attention' | 'h1' | 'gate' | 'sigma' | 'silu' | 'up' | 'prod' | 'ffn', Float64Array> & {
  readonly n1: NormArrays;
  readonly n2: NormArrays;
  readonly trace: AttentionTrace | null;
};
type BlockAdjointArrays = Record<'h1' | 'prod' | 'silu' | 'up' | 'gate' | 'n2' | 'merged' | 'qr' | 'kr' | 'q' | 'k' | 'v' | 'n1', Float64Array>;

/** Every buffer of sequences of up to `capacity` positions, as arrays. */
interface Buffers {
  readonly hs: Float64Array[];
  readonly dhs: Float64Array[];
  readonly blocks: BlockArrays[];
  readonly blockAdjoints: BlockAdjointArrays[];
  readonly finalNorm: NormArrays;
  readonly head: Record<'logits' | 'prob' | 'rowLoss' | 'dlogits' | 'dnf', Float64Array>;
  readonly attention: AttentionScratch;
}

/**
 * Sizes of every buffer of T positions: the one table they are allocated from.
 * @param T - positions.
 * @param config - the configuration.
 * @param ld - row strides of the (T, F) buffers and of the logits' adjoint.
 * @param headWidth - d.
 */
function sizeTable(T: number, config: DecoderConfig, ld: ActivationStrides, headWidth: number) {
  const { modelWidth: D, vocabularySize: V, heads: H } = config;
  const TD = T * D;
  const TF = T * ld.ffn;
  const HTT = H * T * T;
  return {
    norm: { out: TD, normalized: TD, inv: T, st: T, ms: T, dnormalized: TD, rowAdjoints: T * 5 },
    block: { q: TD, k: TD, v: TD, qr: TD, kr: TD, prob: HTT, merged: TD, attention: TD, h1: TD, gate: TF, sigma: TF, silu: TF, up: TF, prod: TF, ffn: TD },
    blockAdjoints: { h1: TD, prod: TF, silu: TF, up: TF, gate: TF, n2: TD, merged: TD, qr: TD, kr: TD, q: TD, k: TD, v: TD, n1: TD },
    attentionTrace: { raw: HTT, scaled: HTT, dprob: HTT, dscaled: HTT, draw: HTT },
    head: { logits: T * V, prob: T * V, rowLoss: T, dlogits: T * ld.dlogits, dnf: TD },
    attention: { scores: T * T, dprob: T * T, draw: T * T, sliceT: headWidth * T, shifted: (T * (T + 1)) / 2, rowMax: T },
    stream: TD,
  };
}

/** One array per entry of a size table. */
function allocate<K extends string>(sizes: Readonly<Record<K, number>>, take: Take): Record<K, Float64Array> {
  const out = {} as Record<K, Float64Array>;
  for (const key of Object.keys(sizes) as K[]) out[key] = take(sizes[key]);
  return out;
}

/** Every buffer of T positions from `take`, in one fixed order (an arena's layout, and {@link Workspace.arenaElements}'s count). */
function buffers(T: number, config: DecoderConfig, from: { readonly take: Take; readonly ld: ActivationStrides; readonly trace: boolean; readonly headWidth: number }): Buffers {
  const { take, ld, trace } = from;
  const L = config.layers;
  const sizes = sizeTable(T, config, ld, from.headWidth);
  const hs: Float64Array[] = [];
  const dhs: Float64Array[] = [];
  for (let l = 0; l <= L; l++) {
    hs.push(take(sizes.stream));
    dhs.push(take(sizes.stream));
  }
  // One set of block adjoints for every block (traces keep one per block). A 0-layer model allocates no (T, F) buffer (F may be any size then).
  const shared = L === 0 || trace ? null : allocate(sizes.blockAdjoints, take);
  const blocks: BlockArrays[] = [];
  const blockAdjoints: BlockAdjointArrays[] = [];
  for (let l = 0; l < L; l++) {
    blocks.push({ ...allocate(sizes.block, take), n1: allocate(sizes.norm, take), n2: allocate(sizes.norm, take), trace: trace ? allocate(sizes.attentionTrace, take) : null });
    blockAdjoints.push(shared ?? allocate(sizes.blockAdjoints, take));
  }
  const finalNorm = allocate(sizes.norm, take);
  const head = allocate(sizes.head, take);
  return { hs, dhs, blocks, blockAdjoints, finalNorm, head, attention: allocate(sizes.attention, take) };
}

/** Weight-gradient views of one slot: the embedding's dE and each block's projections. */
export interface WeightGradients {
  /** (V, D). */
  readonly embedding: Matrix;
  readonly blocks: readonly Record<'query' | 'key' | 'value' | 'output' | 'gate' | 'up' | 'down', Matrix>[];
}

/**
 * The weight-gradient views of an array laid out like the parameters from `base`.
 * @param layout - the layout.
 * @param flat - the array.
 * @param base - element of the layout's element 0.
 * @returns the views.
 */
export function weightGradientViews(layout: ParameterLayout, flat: Float64Array, base: number): WeightGradients {
  const view = (k: number): Matrix => {
    const e = layout.entries[k] as ParameterEntry;
    return matrix(flat, e.shape[0] as number, e.shape[1] as number, e.shape[1] as number, base + e.offset);
  };
  return {
    embedding: view(0),
    blocks: layout.blocks.map((_, l) => {
      const b = (k: number): Matrix => view(blockTensorIndex(l, k));
      return { query: b(1), key: b(2), value: b(3), output: b(4), gate: b(6), up: b(7), down: b(8) };
    }),
  };
}

/** The slot whose weight gradients the resident accumulator holds and has not yet written. */
interface Pending {
  readonly partial: Float64Array;
  readonly offset: number;
}

/** A thread's buffers, weights and gradient accumulator (see the file's comment). Not thread-safe: each thread owns one. */
export class Workspace {
  readonly config: DecoderConfig;
  readonly layout: ParameterLayout;
  readonly headWidth: number;
  /** `1.0 / sqrt(d)`, computed once (../../../../docs/spec/model.md §9.4). */
  readonly scale: number;
  /** Keeps full-grid attention traces and one set of adjoints per block (the forward-trace test). */
  readonly trace: boolean;
  /** Positions the buffers hold. */
  capacity = 0;
  /**
   * RoPE tables for positions 0 … capacity−1, grown with the buffers: never
   * sized by `config.maxPositions`, which may be far larger than any sequence
   * run (the format allows up to 2^53 − 1).
   */
  rope: RopeTables;
  /** Row strides of the (T, F) activations and adjoints and of the logits' adjoint (padded in an arena). */
  strides: ActivationStrides;
  readonly #placement: Placement;
  #buffers: Buffers | null = null;
  /** The views of the last {@link state}, for its T. */
  #state: DecoderState | null = null;
  /** The parameters' own placement, the transposes' at the same offsets; the arena's copies with padded strides. */
  readonly #flat: Placed;
  readonly #flatT: Placed;
  readonly #resident: Placed;
  readonly #residentT: Placed;
  /** Where the weight views' tensors sit: the parameters (or their snapshot), and `#wT`. */
  #place: Placed;
  #placeT: Placed;
  /** The transposed projection weights ([out, in]) and Eᵀ ([D, V]). */
  #wT: Float64Array;
  #arena: KernelArena | null = null;
  /** A shared memory to open the arena on ({@link adoptArenaMemory}), or null. */
  #adopted: SharedArenaMemory | null = null;
  /** The arena's snapshot of the parameters of the last {@link prepare}. */
  #paramsCopy: Float64Array | null = null;
  /** The arena's weight-gradient accumulator (laid out like the parameters) and its views. */
  #accumulator: Float64Array | null = null;
  #accumulatorViews: WeightGradients | null = null;
  #pending: Pending | null = null;
  /** Whether the owner flushes ({@link flushGradients} was called): backward may leave S_b pending. */
  #deferred = false;
  /** Runs of weight (non-gain) entries: [offset, length] pairs, merged where adjacent. */
  readonly #weightRuns: number[] = [];
  #preparedVersion = -1;
  #params: Float64Array | null = null;
  #weights: DecoderWeights | null = null;
  /** Gradient views by slot offset, of the array `#gradientArray`. */
  #gradientArray: Float64Array | null = null;
  readonly #gradientViews = new Map<number, WeightGradients>();

  /**
   * @param config - a valid decoder configuration.
   * @param placement - the kernel set's placement.
   * @param trace - keep traces (tests only).
   */
  constructor(config: DecoderConfig, placement: Placement, trace = false) {
    this.headWidth = validateDecoderConfig(config);
    this.config = config;
    this.layout = parameterLayout(config);
    this.scale = 1.0 / Math.sqrt(this.headWidth);
    this.rope = ropeTables(0, this.headWidth, config.ropeBase);
    this.trace = trace;
    this.#placement = placement;
    this.#flat = place(this.layout, false, false);
    this.#flatT = place(this.layout, true, false);
    this.#resident = place(this.layout, false, true);
    this.#residentT = place(this.layout, true, true);
    this.#place = this.#flat;
    this.#placeT = this.#flatT;
    this.#wT = new Float64Array(this.#flatT.size);
    this.strides = { ffn: config.feedForwardWidth, dlogits: config.vocabularySize };
    for (const e of this.layout.entries) {
      if (e.kind === 'gain') continue;
      const runs = this.#weightRuns;
      const n = runs.length;
      if (n > 0 && (runs[n - 2] as number) + (runs[n - 1] as number) === e.offset) runs[n - 1] = (runs[n - 1] as number) + e.length;
      else runs.push(e.offset, e.length);
    }
  }

  /** @returns bytes of the arena's memory (0 with ordinary arrays): a diagnostic. */
  get kernelMemoryBytes(): number {
    return this.#arena === null ? 0 : this.#arena.bytes;
  }

  /** @returns the memory of the arena the buffers are views of, or null (ordinary arrays). */
  get arenaMemory(): KernelArena | null {
    return this.#arena;
  }

  /** @returns the attention scratch of the product-based kernel sets (capacity-sized; call {@link ensureCapacity} first). */
  get attention(): AttentionScratch {
    return (this.#buffers as Buffers).attention;
  }

  /**
   * Grows the buffers (and the RoPE tables) to hold sequences of `T` positions.
   * @param T - positions (≤ maxPositions; validated by the caller).
   * @throws ModelError `MODEL_CONTEXT_TOO_LONG` when they cannot be allocated.
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

  /**
   * Elements of the arena of sequences of up to `T` positions: what a shared
   * memory given to {@link adoptArenaMemory} holds after its front.
   * @param T - positions.
   * @returns elements.
   */
  arenaElements(T: number): number {
    let total = this.#resident.size + this.#residentT.size + this.layout.size;
    const empty = new Float64Array(0);
    buffers(T, this.config, {
      take: (n) => {
        total += n;
        return empty;
      },
      ld: this.#paddedStrides(),
      trace: this.trace,
      headWidth: this.headWidth,
    });
    return total;
  }

  /**
   * Opens the arena on a shared memory another thread made, of at least
   * `kernelArenaPages(front, arenaElements(T))` pages, after its front (a
   * worker's partial slots, written in place by the backward pass and read by
   * other threads), reallocating the buffers for `T` positions. Where the
   * arena does not fit there (too small, or a longer sequence came), it opens
   * on a memory of its own; calling again with the same memory goes back, and
   * does nothing while it is there. Without an arena (ordinary arrays) nothing
   * changes.
   * @param shared - the shared memory and its front.
   * @param T - positions it was sized for.
   */
  adoptArenaMemory(shared: SharedArenaMemory, T: number): void {
    const held = this.#adopted;
    const same = held !== null && held.memory.buffer === shared.memory.buffer && held.front === shared.front;
    if (same && (this.#arena === null || this.#arena.kernel.memory.buffer === shared.memory.buffer)) return;
    this.#adopted = shared;
    this.capacity = 0;
    this.ensureCapacity(T);
  }

  #paddedStrides(): ActivationStrides {
    return { ffn: residentStride(this.config.feedForwardWidth), dlogits: residentStride(this.config.vocabularySize) };
  }

  #allocate(T: number): void {
    // The accumulator is about to be replaced: its values go to their slot first.
    this.#flush();
    this.#state = null;
    const total = this.arenaElements(T);
    const arena = (this.#adopted === null ? null : this.#placement.arena(total, this.#adopted)) ?? this.#placement.arena(total, null);
    const from = { trace: this.trace, headWidth: this.headWidth };
    if (arena === null) {
      this.strides = { ffn: this.config.feedForwardWidth, dlogits: this.config.vocabularySize };
      this.#buffers = buffers(T, this.config, { ...from, take: ordinary, ld: this.strides });
      this.rope = extendRopeTables(this.rope, T);
      this.#leaveArena();
      return;
    }
    const take: Take = (n) => arena.take(n);
    this.strides = this.#paddedStrides();
    this.#buffers = buffers(T, this.config, { ...from, take, ld: this.strides });
    this.rope = extendRopeTables(this.rope, T);
    this.#wT = take(this.#residentT.size);
    this.#placeT = this.#residentT;
    this.#paramsCopy = take(this.#resident.size);
    this.#place = this.#resident;
    this.#accumulator = take(this.layout.size);
    this.#accumulatorViews = weightGradientViews(this.layout, this.#accumulator, 0);
    this.#arena = arena;
    if (this.#params !== null) {
      this.#copyParameters(this.#params);
      this.#transposeWeights(this.#paramsCopy, this.#resident);
      this.#weights = this.#views(this.#paramsCopy);
    }
  }

  /** Back to ordinary arrays. */
  #leaveArena(): void {
    if (this.#arena === null) return;
    this.#arena = null;
    this.#wT = new Float64Array(this.#flatT.size);
    this.#placeT = this.#flatT;
    this.#paramsCopy = null;
    this.#place = this.#flat;
    this.#accumulator = null;
    this.#accumulatorViews = null;
    if (this.#params !== null) {
      this.#transposeWeights(this.#params, this.#flat);
      this.#weights = this.#views(this.#params);
    }
  }

  /** Copies the parameters into the arena's snapshot, row by row where its rows are padded. */
  #copyParameters(params: Float64Array): void {
    const copy = this.#paramsCopy as Float64Array;
    const { offsets, strides } = this.#resident;
    this.layout.entries.forEach((e, k) => {
      const [rows, width] = storedShape(e, false);
      const ld = strides[k] as number;
      const at = offsets[k] as number;
      if (ld === width) copy.set(params.subarray(e.offset, e.offset + e.length), at);
      else for (let r = 0; r < rows; r++) copy.set(params.subarray(e.offset + r * width, e.offset + (r + 1) * width), at + r * ld);
    });
    gemmCounters.parameterValues += params.length;
  }

  /** Writes every weight's transpose into `#wT` (placed by `#placeT`) from `src`, placed by `at`. */
  #transposeWeights(src: Float64Array, at: Placed): void {
    this.layout.entries.forEach((e, k) => {
      if (e.kind === 'gain') return;
      const [rows, width] = storedShape(e, false);
      const from = matrix(src, rows, width, at.strides[k] as number, at.offsets[k] as number);
      this.#placement.transpose(matrix(this.#wT, width, rows, this.#placeT.strides[k] as number, this.#placeT.offsets[k] as number), from);
    });
  }

  /**
   * Takes the parameters the next passes run on, refreshing the snapshot and
   * the transposes when they changed.
   * @param params - the flat parameters.
   * @param version - changes whenever `params` changes (−1 forces a refresh).
   * @returns the weights.
   */
  prepare(params: Float64Array, version: number): DecoderWeights {
    if (version === this.#preparedVersion && version !== -1 && params === this.#params && this.#weights !== null) return this.#weights;
    const copy = this.#paramsCopy;
    if (copy !== null) {
      this.#copyParameters(params);
      this.#transposeWeights(copy, this.#resident);
      if (this.#weights === null) this.#weights = this.#views(copy);
    } else {
      this.#transposeWeights(params, this.#flat);
      if (params !== this.#params || this.#weights === null) this.#weights = this.#views(params);
    }
    this.#params = params;
    this.#preparedVersion = version;
    return this.#weights;
  }

  /** The weight views of `params` placed by `#place`, and of the transposes (live: built once per array). */
  #views(params: Float64Array): DecoderWeights {
    const entries = this.layout.entries;
    const place = this.#place;
    const placeT = this.#placeT;
    const view = (flat: Float64Array, at: Placed, k: number, transposed: boolean): Matrix => {
      const [rows, width] = storedShape(entries[k] as ParameterEntry, transposed);
      return matrix(flat, rows, width, at.strides[k] as number, at.offsets[k] as number);
    };
    const gain = (k: number): Float64Array => params.subarray(place.offsets[k] as number, (place.offsets[k] as number) + (entries[k] as ParameterEntry).length);
    const linear = (k: number): LinearWeight => ({ w: view(params, place, k, false), t: view(this.#wT, placeT, k, true) });
    return {
      embedding: view(params, place, 0, false),
      blocks: this.layout.blocks.map((_, l) => {
        const b = (k: number): number => blockTensorIndex(l, k);
        return {
          attentionNorm: gain(b(0)),
          query: linear(b(1)),
          key: linear(b(2)),
          value: linear(b(3)),
          output: linear(b(4)),
          ffnNorm: gain(b(5)),
          gate: linear(b(6)),
          up: linear(b(7)),
          down: linear(b(8)),
        };
      }),
      finalNorm: gain(entries.length - 1),
      // The tied head: W = Eᵀ [D, V] (the transposed copy), Wᵀ = E itself.
      head: { w: view(this.#wT, placeT, 0, true), t: view(params, place, 0, false) },
    };
  }

  /**
   * The weights of the last {@link prepare} (or of the arena opened since).
   * @returns the views.
   * @throws ModelError `MODEL_INVALID_BATCH` before {@link prepare}.
   */
  get weights(): DecoderWeights {
    if (this.#weights === null) throw new ModelError('MODEL_INVALID_BATCH', 'the decoder pass ran before prepare(parameters, version)');
    return this.#weights;
  }

  /**
   * What a pass over T rows reads and writes: the prepared weights, the
   * buffers as views of T rows, and the constants (grows the buffers when
   * needed; the views are kept while T stays).
   * @param T - positions.
   * @returns the state.
   */
  state(T: number): DecoderState {
    this.ensureCapacity(T);
    const s = this.#state;
    if (s !== null && s.acts.logits.rows === T && s.weights === this.#weights) return s;
    const b = this.#buffers as Buffers;
    const { modelWidth: D, vocabularySize: V, heads: H, feedForwardWidth: F, rmsEpsilon: eps } = this.config;
    const ld = this.strides;
    const rows = (x: Float64Array, width = D, stride = width): Matrix => matrix(x, T, width, stride);
    const norm = (n: NormArrays): NormActivations => ({ out: rows(n.out), normalized: rows(n.normalized), inv: n.inv, st: n.st, ms: n.ms, dnormalized: rows(n.dnormalized), rowAdjoints: n.rowAdjoints });
    const ffn = (x: Float64Array): Matrix => rows(x, F, ld.ffn);
    const blocks = b.blocks.map((x): BlockActivations => {
      const [qr, kr, v] = [rows(x.qr), rows(x.kr), rows(x.v)];
      return {
        n1: norm(x.n1),
        q: rows(x.q),
        k: rows(x.k),
        v,
        qr,
        kr,
        att: { q: qr, k: kr, v, prob: matrix(x.prob, H * T, T), trace: x.trace },
        merged: rows(x.merged),
        attention: rows(x.attention),
        h1: rows(x.h1),
        n2: norm(x.n2),
        glu: { gate: ffn(x.gate), up: ffn(x.up), sigma: ffn(x.sigma), silu: ffn(x.silu), prod: ffn(x.prod) },
        ffn: rows(x.ffn),
      };
    });
    const adjoints = b.blockAdjoints.map(
      (g): BlockAdjoints => ({
        h1: rows(g.h1),
        n2: rows(g.n2),
        glu: { gate: ffn(g.gate), up: ffn(g.up), silu: ffn(g.silu), prod: ffn(g.prod) },
        merged: rows(g.merged),
        att: { q: rows(g.qr), k: rows(g.kr), v: rows(g.v) },
        q: rows(g.q),
        k: rows(g.k),
        n1: rows(g.n1),
      }),
    );
    const acts: Activations = { hs: b.hs.map((x) => rows(x)), blocks, finalNorm: norm(b.finalNorm), logits: rows(b.head.logits, V), prob: rows(b.head.prob, V), rowLoss: b.head.rowLoss };
    const grads: Adjoints = { dhs: b.dhs.map((x) => rows(x)), blocks: adjoints, dlogits: rows(b.head.dlogits, V, ld.dlogits), dnf: rows(b.head.dnf) };
    const constants: BlockConstants = { heads: H, scale: this.scale, eps, rope: this.rope, first: 0 };
    this.#state = { weights: this.weights, acts, adjoints: grads, constants };
    return this.#state;
  }

  /**
   * Where this sequence's weight gradients go: views of its slot (from
   * `offset` of `partial`), or of the resident accumulator, which then holds
   * them until another slot comes or the owner flushes (with `add`, the
   * slot's current values are loaded into it first, unless it holds them).
   * @param partial - the slot's array, laid out like the parameters from `offset`.
   * @param offset - the slot.
   * @param add - whether the sequence adds to the slot (the in-order batch sum) or writes it.
   * @returns the views.
   */
  weightGradients(partial: Float64Array, offset: number, add: boolean): WeightGradients {
    const views = this.#accumulatorViews;
    if (views === null) return this.#slotViews(partial, offset);
    if (partial.buffer === this.#arena?.kernel.memory.buffer) {
      // A slot in the arena's own memory (the front of an adopted memory): the products write it in place.
      this.#flush();
      return this.#slotViews(partial, offset);
    }
    const p = this.#pending;
    const same = p !== null && p.partial === partial && p.offset === offset;
    if (!(same && add)) this.#flush();
    if (add && !same) this.#copyRuns(this.#accumulator as Float64Array, 0, partial, offset);
    this.#pending = same ? p : { partial, offset };
    return views;
  }

  /**
   * Ends a sequence's backward pass: writes its pending weight gradients to
   * their slot now, unless the owner flushes ({@link flushGradients} was called once).
   */
  sequenceDone(): void {
    if (!this.#deferred) this.#flush();
  }

  /**
   * Writes the weight gradients the accumulator holds into their slot, if any
   * are pending; and declares that the owner calls this before reading any
   * slot, so that from then on sequences accumulating into one slot leave
   * them pending (see {@link sequenceDone}).
   */
  flushGradients(): void {
    this.#deferred = true;
    this.#flush();
  }

  #flush(): void {
    const p = this.#pending;
    if (p === null) return;
    this.#pending = null;
    this.#copyRuns(p.partial, p.offset, this.#accumulator as Float64Array, 0);
  }

  /** Copies the weight entries (not the gains) of an array laid out like the parameters from `from` into another from `to`. */
  #copyRuns(dst: Float64Array, to: number, src: Float64Array, from: number): void {
    const runs = this.#weightRuns;
    for (let r = 0; r < runs.length; r += 2) {
      const off = runs[r] as number;
      const len = runs[r + 1] as number;
      dst.set(src.subarray(from + off, from + off + len), to + off);
      gemmCounters.gradientValues += len;
    }
  }

  /** Views of the slot at `offset` of `partial` (cached per slot). */
  #slotViews(partial: Float64Array, offset: number): WeightGradients {
    if (partial !== this.#gradientArray) {
      this.#gradientArray = partial;
      this.#gradientViews.clear();
    }
    let views = this.#gradientViews.get(offset);
    if (views === undefined) {
      views = weightGradientViews(this.layout, partial, offset);
      this.#gradientViews.set(offset, views);
    }
    return views;
  }
}
