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
 *
 * On the WebAssembly kernel path every operand of the pass's products lives in
 * one kernel arena of the thread (kernels/kernel-arena.ts), sized once per
 * capacity: the activations, adjoints and attention scratch, a snapshot of
 * the parameters and the transposed weights (refreshed by {@link DecoderPass.prepare}),
 * and a resident weight-gradient accumulator. So the products copy nothing;
 * the accumulator holds the slot of the last sequence until
 * {@link DecoderPass.flushGradients} copies it out (once per batch when the
 * sequences accumulate in order). A worker thread's pass opens its arena on a
 * shared memory whose front holds the worker's partial slots
 * ({@link DecoderPass.adoptArenaMemory}): its products write each sequence's
 * slot there directly, and nothing is copied out. The calling thread's pass
 * opens its arena on a shared memory too (nothing in front), so that at the
 * end of a wave a thread with no sequence left can compute rows of any
 * thread's products in place (parallel/help.ts).
 * The snapshot and the transposed weights are the pass's own copies, so their
 * rows are laid out with the arena's row stride (kernels/kernel-arena.ts
 * `residentStride`: a width that is a multiple of 512 values gets 8 more, so
 * the kernel's B rows do not share one L1 set); each weight view carries its
 * stride. So do the activations and adjoints that the weight-gradient
 * products walk along k with such a width: the (T, F) buffers and the logits'
 * adjoint (`strides`; their padding stays +0). The other activations and the
 * accumulator keep contiguous rows. With the scalar kernels, and with the
 * native kernels on one thread, everything is an ordinary array with
 * contiguous rows; the native kernels read the views of an arena in place
 * too, and a threaded decoder's passes open their arenas on the shared
 * memories with them as well, for the help at the end of a wave.
 */
import { blockTensorIndex, type DecoderConfig } from '@llmcp/format';
import { validateDecoderConfig } from './config.ts';
import { ModelError } from './errors.ts';
import { modelViews, parameterLayout, tensorAt, type ModelViews, type ParameterEntry, type ParameterLayout } from './layout.ts';
import { attentionBackward, attentionForward, attentionScratch, type AttentionScratch, type AttentionTrace } from './kernels/attention.ts';
import { crossEntropyBackward, crossEntropyForward } from './kernels/cross-entropy.ts';
import { gemmCounters } from './internal/gemm-counters.ts';
import { gemmArena, pinGemmOperand, recordResidentCopy, transpose } from './kernels/gemm.ts';
import { wasmTranspose } from './kernels/wasm-transpose.ts';
import { residentStride, type KernelArena, type SharedArenaMemory } from './kernels/kernel-arena.ts';
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
  /** (V, D) the embedding table E: row v from `v · embeddingStride`. */
  readonly embedding: Float64Array;
  /** Row stride of {@link embedding} (D, or more in a kernel arena). */
  readonly embeddingStride: number;
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

/** Row strides of the activations whose rows are not their width: the (T, F) buffers and the logits' adjoint. */
interface ActivationStrides {
  /** Row stride of every (T, F) activation and adjoint (F, or more in a kernel arena). */
  readonly ffn: number;
  /** Row stride of the (T, V) logits' adjoint (V, or more in a kernel arena). */
  readonly dlogits: number;
}

/**
 * Sizes of every buffer of one sequence of T positions: the one table the buffers are allocated from.
 * @param T - positions.
 * @param config - the decoder configuration.
 * @param ld - row strides of the (T, F) buffers and of the logits' adjoint.
 */
function sizeTable(T: number, config: DecoderConfig, ld: ActivationStrides) {
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
    stream: TD,
  };
}

/** Hands out one zeroed array of `n` elements (an ordinary array, or a view of a kernel arena). */
type Take = (n: number) => Float64Array;

/** Ordinary arrays. */
const ordinary: Take = (n) => new Float64Array(n);

/** One zeroed Float64Array per entry of a size table. */
function allocate<K extends string>(sizes: Readonly<Record<K, number>>, take: Take): Record<K, Float64Array> {
  const out = {} as Record<K, Float64Array>;
  for (const key of Object.keys(sizes) as K[]) out[key] = take(sizes[key]);
  return out;
}

/** The same object with every Float64Array field replaced by a `take`n copy (a kernel's scratch made resident). */
function retake<S extends object>(scratch: S, take: Take): S {
  const out = { ...scratch } as Record<string, unknown>;
  for (const [key, value] of Object.entries(out)) {
    if (value instanceof Float64Array) {
      const copy = take(value.length);
      if (copy.length === value.length) copy.set(value); // (not while only counting sizes)
      out[key] = copy;
    }
  }
  return out as S;
}

/**
 * Where every tensor of the layout sits in one flat array: per layout entry,
 * its first element and its row stride. The parameters' own layout, or a
 * kernel arena's copy with padded row strides.
 */
interface Placement {
  /** Per entry: element offset of its first row. */
  readonly offsets: readonly number[];
  /** Per entry: row stride (a gain is one row). */
  readonly strides: readonly number[];
  /** Elements the array needs. */
  readonly size: number;
}

/** Rows and width of entry `e` as stored: [in, out] (or [V, D]), transposed [out, in]; a gain is one row. */
function storedShape(e: ParameterEntry, transposed: boolean): [rows: number, width: number] {
  if (e.kind === 'gain') return [1, e.length];
  const r = e.shape[0] as number;
  const c = e.shape[1] as number;
  return transposed ? [c, r] : [r, c];
}

/**
 * The placement of the layout's tensors (`transposed`: the weights' transposes,
 * gains unused but kept): `arena` — in order, rows {@link residentStride} apart;
 * else at the parameter offsets with contiguous rows.
 */
function placement(layout: ParameterLayout, transposed: boolean, arena: boolean): Placement {
  const offsets: number[] = [];
  const strides: number[] = [];
  let size = 0;
  for (const e of layout.entries) {
    const [rows, width] = storedShape(e, transposed);
    const ld = arena && e.kind !== 'gain' ? residentStride(width) : width;
    offsets.push(arena ? size : e.offset);
    strides.push(ld);
    size = arena ? size + rows * ld : layout.size;
  }
  return { offsets, strides, size };
}

/**
 * Every activation, adjoint and scratch buffer of one sequence of `T`
 * positions, taken from `take` in one fixed order (the arena's layout, and
 * the count of {@link DecoderPass.arenaElements}).
 *
 * @param T - positions.
 * @param pass - the configuration, head width and trace flag.
 * @param from - `take` hands out each buffer; `ld`: row strides of the (T, F) buffers and of the logits' adjoint.
 * @returns the buffers.
 */
function sequenceBuffers(T: number, pass: Pick<DecoderPass, 'config' | 'headWidth' | 'trace'>, from: { readonly take: Take; readonly ld: ActivationStrides }) {
  const { take, ld } = from;
  const L = pass.config.layers;
  const sizes = sizeTable(T, pass.config, ld);
  const hs: Float64Array[] = [];
  const dhs: Float64Array[] = [];
  for (let l = 0; l <= L; l++) {
    hs.push(take(sizes.stream));
    dhs.push(take(sizes.stream));
  }
  const blocks: BlockActivations[] = [];
  const blockAdjoints: BlockAdjoints[] = [];
  // A 0-layer model never uses F (which a valid checkpoint may set to any size): no (T, F) buffers then.
  const shared = L === 0 || pass.trace ? null : allocate(sizes.blockAdjoints, take);
  for (let l = 0; l < L; l++) {
    blocks.push({
      ...allocate(sizes.block, take),
      attentionNorm: allocate(sizes.norm, take),
      ffnNorm: allocate(sizes.norm, take),
      trace: pass.trace ? allocate(sizes.attentionTrace, take) : null,
    });
    blockAdjoints.push(shared ?? allocate(sizes.blockAdjoints, take));
  }
  const finalNorm = allocate(sizes.norm, take);
  const head = allocate(sizes.head, take);
  const attention = take === ordinary ? attentionScratch(T, pass.headWidth) : retake(attentionScratch(T, pass.headWidth), take);
  return { hs, dhs, blocks, blockAdjoints, finalNorm, head, attention };
}

/** Where the resident weight-gradient accumulator's values belong until they are flushed. */
interface PendingSlot {
  readonly partial: Float64Array;
  readonly partialOff: number;
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
  /** (T, V) adjoint of the logits, rows {@link strides}`.dlogits` apart. */
  dlogits!: Float64Array;
  /**
   * Row strides of the (T, F) activations and adjoints and of {@link dlogits}:
   * their widths with ordinary arrays; in a kernel arena a width that is a
   * multiple of 512 values gets 8 more (kernels/kernel-arena.ts
   * `residentStride`), like the weights', since the weight-gradient products
   * walk these rows along k. The padding stays +0 (SwiGLU runs over it too:
   * zeros give zeros) and no sum reads it.
   */
  strides: ActivationStrides;
  /** (T, D) adjoint of the final norm output. */
  dnf!: Float64Array;
  #attention!: AttentionScratch;
  /** Transposed projection weights ([out, in]) and Eᵀ ([D, V]), placed by {@link #placeT}. */
  #wT: Float64Array;
  /** The placements of ordinary arrays: the parameters' own layout, and the transposes at the parameter offsets. */
  readonly #flat: Placement;
  readonly #flatT: Placement;
  /** The placements of the arena's copies: padded row strides. */
  readonly #resident: Placement;
  readonly #residentT: Placement;
  /** Where the weight views' tensors sit: the parameters (or their resident snapshot), and `#wT`. */
  #place: Placement;
  #placeT: Placement;
  /** The kernel arena holding every buffer of the pass, or null (ordinary arrays: scalar kernels, or native ones on a memory of the pass's own). */
  #arena: KernelArena | null = null;
  /** A shared memory to open the arena on, after its front ({@link adoptArenaMemory}); null: a memory of the arena's own. */
  #adopted: SharedArenaMemory | null = null;
  /** The resident snapshot of the parameters of the last {@link prepare} (arena only). */
  #paramsCopy: Float64Array | null = null;
  /** The resident weight-gradient accumulator, laid out like the parameters, and its views (arena only). */
  #accumulator: Float64Array | null = null;
  #accumulatorViews: ModelViews | null = null;
  /** The slot whose weight gradients the accumulator holds and has not yet written back. */
  #pending: PendingSlot | null = null;
  /** Whether {@link flushGradients} has been called: the owner flushes, so backward may leave gradients pending. */
  #deferred = false;
  /** Runs of weight (non-gain) entries of the layout: [offset, length] pairs, merged where adjacent. */
  readonly #weightRuns: number[] = [];
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
    this.#flat = placement(this.layout, false, false);
    this.#flatT = placement(this.layout, true, false);
    this.#resident = placement(this.layout, false, true);
    this.#residentT = placement(this.layout, true, true);
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

  /** @returns bytes of this pass's kernel arena memory (0 with ordinary arrays): a diagnostic. */
  get kernelMemoryBytes(): number {
    return this.#arena === null ? 0 : this.#arena.bytes;
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

  /**
   * Elements of the kernel arena of sequences of up to `T` positions (the
   * views it hands out): what a shared memory given to
   * {@link adoptArenaMemory} holds after its front.
   *
   * @param T - positions.
   * @returns elements.
   */
  arenaElements(T: number): number {
    let total = this.#resident.size + this.#residentT.size + this.layout.size;
    const empty = new Float64Array(0);
    const take: Take = (n) => {
      total += n;
      return empty;
    };
    sequenceBuffers(T, this, { take, ld: this.#paddedStrides() });
    return total;
  }

  /**
   * Opens this pass's kernel arena on a shared WebAssembly memory another
   * thread made from now on, of at least `kernelArenaPages(front,
   * arenaElements(T))` pages: after its front — a worker's weight-gradient
   * partial slots, which the backward pass then writes in place and other
   * threads read. Reallocates the buffers for `T` positions; with the native
   * or scalar kernels (no arena) nothing changes. Where the arena does not
   * fit there (the memory is too small, or a longer sequence comes) it opens
   * on a memory of its own, as without this call; calling it again with the
   * same memory goes back there, and does nothing while the arena is there.
   *
   * @param shared - the shared memory and its front.
   * @param T - positions it was sized for.
   */
  adoptArenaMemory(shared: SharedArenaMemory, T: number): void {
    const held = this.#adopted;
    const same = held !== null && held.memory.buffer === shared.memory.buffer && held.front === shared.front;
    // Already open there (or there is no arena: scalar kernels, or none can be made), and not left for a memory of its own: nothing to do.
    if (same && (this.#arena === null || this.#arena.kernel.memory.buffer === shared.memory.buffer)) return;
    this.#adopted = shared;
    this.capacity = 0;
    this.ensureCapacity(T);
  }

  /** Row strides of the activations in a kernel arena. */
  #paddedStrides(): ActivationStrides {
    return { ffn: residentStride(this.config.feedForwardWidth), dlogits: residentStride(this.config.vocabularySize) };
  }

  #allocate(T: number): void {
    // The accumulator is about to be replaced: its values go to their slot first.
    this.#flush();
    // The buffers' total size (the arena is sized once: it never grows), then the arena, then the buffers.
    const P = this.layout.size;
    const total = this.arenaElements(T);
    // On an adopted memory when it fits there, else on a memory of its own.
    const arena = (this.#adopted === null ? null : gemmArena(total, this.#adopted)) ?? gemmArena(total);
    if (arena === null) {
      this.#buffers(T, ordinary, { ffn: this.config.feedForwardWidth, dlogits: this.config.vocabularySize });
      this.#leaveArena();
      return;
    }
    const take: Take = (n) => arena.take(n);
    this.#buffers(T, take, this.#paddedStrides());
    this.#wT = take(this.#residentT.size);
    this.#placeT = this.#residentT;
    this.#paramsCopy = take(this.#resident.size);
    this.#place = this.#resident;
    this.#accumulator = take(P);
    this.#accumulatorViews = modelViews(this.layout, this.#accumulator);
    this.#arena = arena;
    if (this.#params !== null) {
      this.#copyParameters(this.#params);
      this.#transposeWeights(this.#paramsCopy, this.#resident);
      this.#weights = this.#views(this.#paramsCopy);
    }
  }

  /** Back to ordinary arrays (the kernels in use read them in place). */
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
      this.#transposeWeights(this.#params, null);
      this.#weights = this.#views(this.#params);
    }
  }

  /** Every activation, adjoint and scratch buffer of sequences of `T` positions, from `take`, with row strides `ld`. */
  #buffers(T: number, take: Take, ld: ActivationStrides): void {
    const b = sequenceBuffers(T, this, { take, ld });
    this.strides = ld;
    this.hs = b.hs;
    this.dhs = b.dhs;
    this.blocks = b.blocks;
    this.blockAdjoints = b.blockAdjoints;
    this.finalNorm = b.finalNorm;
    this.logits = b.head.logits;
    this.prob = b.head.prob;
    this.rowLoss = b.head.rowLoss;
    this.dlogits = b.head.dlogits;
    this.dnf = b.head.dnf;
    this.#attention = b.attention;
    this.rope = extendRopeTables(this.rope, T);
  }

  /** Copies the parameters into the resident snapshot, row by row where its rows are padded (arena only). */
  #copyParameters(params: Float64Array): void {
    const copy = this.#paramsCopy as Float64Array;
    const { offsets, strides } = this.#resident;
    const entries = this.layout.entries;
    for (let k = 0; k < entries.length; k++) {
      const e = entries[k] as ParameterEntry;
      const [rows, width] = storedShape(e, false);
      const ld = strides[k] as number;
      const at = offsets[k] as number;
      if (ld === width) copy.set(params.subarray(e.offset, e.offset + e.length), at);
      else for (let r = 0; r < rows; r++) copy.set(params.subarray(e.offset + r * width, e.offset + (r + 1) * width), at + r * ld);
    }
    gemmCounters.parameterValues += params.length;
    recordResidentCopy(params, copy, (index) => this.#residentIndex(index));
  }

  /** The index in the resident snapshot of parameter `index` (a diagnostic: `pinnedOffset`). */
  #residentIndex(index: number): number {
    const e = tensorAt(this.layout, index);
    if (e === undefined) return index;
    const k = this.layout.indexByName.get(e.name) as number;
    const width = storedShape(e, false)[1];
    const i = index - e.offset;
    return (this.#resident.offsets[k] as number) + Math.floor(i / width) * (this.#resident.strides[k] as number) + (i % width);
  }

  /**
   * Writes the transposes of the weights into `#wT`, placed by `#placeT`: from the resident snapshot in the
   * kernel arena (`at` its placement) with the WebAssembly kernel (kernels/wasm-transpose.ts), or from the
   * parameters (`at` null) in JavaScript.
   */
  #transposeWeights(src: Float64Array, at: Placement | null): void {
    const wT = this.#wT;
    const { offsets, strides } = this.#placeT;
    const entries = this.layout.entries;
    for (let k = 0; k < entries.length; k++) {
      const e = entries[k] as ParameterEntry;
      if (e.kind === 'gain') continue;
      const [rows, width] = storedShape(e, false);
      const [sOff, lds] = at === null ? [e.offset, width] : [at.offsets[k] as number, at.strides[k] as number];
      if (!wasmTranspose(wT, offsets[k] as number, strides[k] as number, src, sOff, lds, rows, width)) transpose(wT, offsets[k] as number, strides[k] as number, src, sOff, lds, rows, width);
    }
  }

  /**
   * Writes the weight gradients held by the resident accumulator into their
   * slot (the `partial` of the last {@link backward}), if any are pending.
   *
   * Calling it also declares that the owner of this pass calls it before
   * reading any slot a {@link backward} wrote: from then on the accumulator
   * keeps the last sequence's weight gradients (so sequences accumulating
   * into the same slot copy nothing) until the next call or the next
   * sequence with another slot. Until the first call every {@link backward}
   * writes its slot before returning. The batch pass calls it when a thread
   * has run its last sequence of a phase.
   */
  flushGradients(): void {
    this.#deferred = true;
    this.#flush();
  }

  #flush(): void {
    const p = this.#pending;
    if (p === null) return;
    this.#pending = null;
    const acc = this.#accumulator as Float64Array;
    const runs = this.#weightRuns;
    for (let r = 0; r < runs.length; r += 2) {
      const off = runs[r] as number;
      const len = runs[r + 1] as number;
      p.partial.set(acc.subarray(off, off + len), p.partialOff + off);
      gemmCounters.gradientValues += len;
    }
  }

  /** The weight-gradient views of this sequence's slot: the resident accumulator (arena) or the slot itself. */
  #gradientTarget(slots: SequenceSlots): ModelViews {
    const views = this.#accumulatorViews;
    if (views === null) return this.#gradients(slots.partial, slots.partialOff);
    if (slots.partial.buffer === this.#arena?.kernel.memory.buffer) {
      // A slot in this arena's own memory (the front of an adopted memory): the products write it in place.
      this.#flush();
      return this.#gradients(slots.partial, slots.partialOff);
    }
    const p = this.#pending;
    const same = p !== null && p.partial === slots.partial && p.partialOff === slots.partialOff;
    if (!(same && slots.accumulate)) this.#flush();
    if (slots.accumulate && !same) {
      // Accumulating onto a slot the accumulator does not hold: its current values first.
      const acc = this.#accumulator as Float64Array;
      const runs = this.#weightRuns;
      for (let r = 0; r < runs.length; r += 2) {
        const off = runs[r] as number;
        const len = runs[r + 1] as number;
        acc.set(slots.partial.subarray(slots.partialOff + off, slots.partialOff + off + len), off);
        gemmCounters.gradientValues += len;
      }
    }
    this.#pending = same ? p : { partial: slots.partial, partialOff: slots.partialOff };
    return views;
  }

  /**
   * Takes the parameters the next passes run on and refreshes the transposed
   * weights when they changed.
   * @param params - flat parameters.
   * @param version - a number that changes whenever `params` changes (−1 forces a refresh).
   */
  prepare(params: Float64Array, version: number): void {
    if (version === this.#preparedVersion && version !== -1 && params === this.#params) return;
    const wT = this.#wT;
    const copy = this.#paramsCopy;
    if (copy !== null) {
      // Arena: the weights are read from a resident snapshot, and transposed from it (both in the arena).
      this.#copyParameters(params);
      this.#transposeWeights(copy, this.#resident);
      if (this.#weights === null) this.#weights = this.#views(copy);
    } else if (this.capacity > 0) {
      this.#transposeWeights(params, null);
      // Both are the right operand of most products of the step: packed for the kernel once, not per product
      // (the per-tensor views below are read through these pins). Not before the buffers exist: the first
      // forward may open an arena, which makes the pins dead weight.
      pinGemmOperand(params);
      pinGemmOperand(wT);
      if (params !== this.#params) this.#weights = this.#views(params);
    } else {
      this.#transposeWeights(params, null);
      if (params !== this.#params) this.#weights = this.#views(params);
    }
    this.#params = params;
    this.#preparedVersion = version;
  }

  /**
   * The weight views of `params` (the parameters, placed by `#place`: their
   * own layout or the resident snapshot's) and of the transposed weights
   * (live views: built once per array).
   */
  #views(params: Float64Array): DecoderWeights {
    const entries = this.layout.entries;
    const place = this.#place;
    const placeT = this.#placeT;
    const view = (flat: Float64Array, at: Placement, k: number): Float64Array => {
      const rows = storedShape(entries[k] as ParameterEntry, at === placeT)[0];
      const from = at.offsets[k] as number;
      return flat.subarray(from, from + rows * (at.strides[k] as number));
    };
    // Entry k as a linear layer: W from the parameters, Wᵀ from the transposes, each with its row stride.
    const linear = (k: number): LinearWeight => {
      const [inputs, outputs] = storedShape(entries[k] as ParameterEntry, false);
      return linearWeight(view(params, place, k), view(this.#wT, placeT, k), inputs, outputs, place.strides[k], placeT.strides[k]);
    };
    const last = entries.length - 1;
    return {
      embedding: view(params, place, 0),
      embeddingStride: place.strides[0] as number,
      blocks: this.layout.blocks.map((_, l) => {
        const b = blockTensorIndex(l, 0);
        return {
          attentionNorm: view(params, place, b),
          query: linear(b + 1),
          key: linear(b + 2),
          value: linear(b + 3),
          output: linear(b + 4),
          ffnNorm: view(params, place, b + 5),
          gate: linear(b + 6),
          up: linear(b + 7),
          down: linear(b + 8),
        };
      }),
      finalNorm: view(params, place, last),
      // The tied head: W = Eᵀ [D, V] (the transposed copy), Wᵀ = E itself.
      head: linearWeight(view(this.#wT, placeT, 0), view(params, place, 0), this.config.modelWidth, this.config.vocabularySize, placeT.strides[0], place.strides[0]),
    };
  }

  /**
   * The weight views the products of the next passes read (a diagnostic):
   * views of the parameters, or of the kernel arena's snapshot and
   * transposes with their padded row strides.
   * @returns the views of the last {@link prepare} (or of the arena opened since).
   * @throws ModelError `MODEL_INVALID_BATCH` before {@link prepare}.
   */
  get weights(): DecoderWeights {
    return this.#prepared();
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
    const { modelWidth: D, vocabularySize: V, heads: H, rmsEpsilon: eps } = this.config;
    const W = this.#prepared();
    const ldF = this.strides.ffn;
    const d = this.headWidth;
    const n = T * D;
    // Embedding lookup: a plain copy of the table row (../../../docs/spec/model.md §6).
    const x0 = this.hs[0]!;
    for (let t = 0; t < T; t++) {
      const src = (tokens[off + t] as number) * W.embeddingStride;
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
      linearForward(a.gate, n2.out, w.gate, T, ldF);
      linearForward(a.up, n2.out, w.up, T, ldF);
      swigluForward(a.prod, a.silu, a.sigma, a.gate, a.up, T * ldF);
      linearForward(a.ffn, a.prod, w.down, T, D, ldF);
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
    const { modelWidth: D, vocabularySize: V, heads: H } = this.config;
    const W = this.#prepared();
    const L = W.blocks.length;
    const { ffn: ldF, dlogits: ldV } = this.strides;
    const d = this.headWidth;
    const n = T * D;
    const dW = this.#gradientTarget(slots);
    // Each weight gradient S_b is written into the slot, or added to it in the in-order batch reduction.
    const acc = slots.accumulate ? ADD_DWEIGHT : 0;
    const gainTerms = (g: number): Float64Array => {
      const from = g * slots.gainStride + slots.gainOff;
      return slots.gainTerms.subarray(from, from + n);
    };
    slots.rowLoss.set(this.rowLoss.subarray(0, T), slots.rowLossOff);

    // Head and loss (../../../docs/spec/backward.md §4.1, §5 "Head and loss"); dEᵀ per sequence is stored directly as [V, D].
    crossEntropyBackward(this.dlogits, this.prob, targets, off, T, V, lossScale, ldV);
    const nf = this.finalNorm;
    linearBackward(this.dnf, dW.embedding, nf.out, this.dlogits, W.head, T, acc | DWEIGHT_TRANSPOSED, D, ldV);
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
      linearBackward(g.prod, dw.down, a.prod, dh2, w.down, T, acc, ldF);
      swigluBackward(g.gate, g.up, g.silu, g.prod, a.gate, a.sigma, a.silu, a.up, T * ldF);
      const n2 = a.ffnNorm;
      linearBackward(g.n2, dw.up, n2.out, g.up, w.up, T, acc, D, ldF);
      linearBackward(g.n2, dw.gate, n2.out, g.gate, w.gate, T, acc | ADD_DINP, D, ldF);
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
    if (!this.#deferred) this.#flush();
  }
}
