/**
 * Update batches as pure, resumable state: an epoch's window order, a batch
 * cursor, and the shuffle generator's state (../../../docs/spec/training.md §3.1–3.2).
 *
 * Two epoch policies:
 *
 * - `'repeat'` — the reference's rule (../../../docs/spec/training.md §3.2): the list is shuffled
 *   once; update step k uses batch `(k − 1) mod batchCount`; when the steps
 *   outrun the batches the same order repeats (no reshuffle, no new seed).
 *   Use it to reproduce the reference fixtures.
 * - `'reshuffle'` — for real runs: after the last batch of an epoch, the next
 *   epoch's order is a fresh Fisher–Yates shuffle of the sequential window
 *   list (0, 1, …, n − 1) drawn from the *continuing* generator. Epoch e's
 *   order is thus a function of the seed and e alone.
 *
 * Rollover happens as soon as an epoch's last batch is taken, so the state
 * saved after any step already holds the next batch's epoch order.
 *
 * The saved state is of constant size (version 2): the epoch, the cursor and
 * the generator state the epoch's order was drawn from (its *epoch seed*: the
 * shuffle seed in epoch 0, and in every epoch under `'repeat'`). The order is
 * drawn again from it on restore — one shuffle, the same draws — instead of
 * being stored. Version 1 states (the order itself and the generator state
 * after its shuffle) are still read: their epoch seed is found by stepping the
 * generator back over the shuffle's draws (`SplitMix64.advance`) and checked by
 * drawing the stored order again.
 */
import { SplitMix64, u64Hex } from '@llmcp/format';
import { DATA_ERROR_CODES, DataError } from './errors.ts';
import { shuffleInPlace } from './shuffle.ts';
import { requirePositiveInteger } from './windows.ts';

/** What happens when the steps outrun an epoch's batches. */
export type EpochPolicy = 'repeat' | 'reshuffle';

/** Options of {@link UpdateBatches.create}. */
export interface UpdateBatchesOptions {
  /** Windows per batch (the last batch of an epoch may be smaller). */
  readonly batchSize: number;
  /** SplitMix64 seed (used directly as the raw state) for the shuffle; `null` for sequential order. */
  readonly shuffleSeed: bigint | null;
  /** Default `'repeat'` (the reference's rule). */
  readonly epochPolicy?: EpochPolicy;
}

/** One update batch: window indices into the window list, in batch order. */
export interface UpdateBatch {
  /** 0-based epoch the batch belongs to. */
  readonly epoch: number;
  /** 0-based batch index within the epoch. */
  readonly batchIndex: number;
  /** Indices into the window list, in batch order. */
  readonly windowIndices: Uint32Array;
}

/** A snapshot of the state (copies, safe to keep). */
export interface UpdateBatchState {
  /** Length of the window list. */
  readonly windowCount: number;
  /** Windows per batch. */
  readonly batchSize: number;
  /** The epoch policy. */
  readonly epochPolicy: EpochPolicy;
  /** Whether the order is shuffled (a seed was given). */
  readonly shuffled: boolean;
  /** Current epoch (0-based). */
  readonly epoch: number;
  /** Index of the next batch within the epoch. */
  readonly cursor: number;
  /** The epoch's order: a permutation of 0 … windowCount − 1. */
  readonly order: Uint32Array;
  /** Shuffle generator state after the epoch's shuffle (`null` when not shuffled). */
  readonly rngState: bigint | null;
  /** The generator state the epoch's order was drawn from (`null` when not shuffled). */
  readonly epochSeed: bigint | null;
}

/** What both JSON forms of an {@link UpdateBatches} state hold: the list, the batches and the position. */
interface UpdateBatchStateJSONCommon {
  readonly windowCount: number;
  readonly batchSize: number;
  readonly epochPolicy: EpochPolicy;
  readonly shuffled: boolean;
  readonly epoch: number;
  readonly cursor: number;
}

/**
 * The JSON form of an {@link UpdateBatches} state (version 2, what `toJSON` writes): constant size,
 * whatever the window count. Bigints as `0x` + 16 lowercase hex digits.
 */
export interface UpdateBatchStateJSON extends UpdateBatchStateJSONCommon {
  readonly version: 2;
  /** The generator state the epoch's order is drawn from (the shuffle seed in epoch 0 and under `'repeat'`), or `null` when not shuffled. */
  readonly epochSeed: string | null;
}

/** The first JSON form, still read by {@link UpdateBatches.fromJSON}: the epoch's order itself and the generator state after its shuffle. */
export interface UpdateBatchStateJSONV1 extends UpdateBatchStateJSONCommon {
  readonly version: 1;
  /** `0x` + 16 lowercase hex digits, or `null`. */
  readonly rngState: string | null;
  readonly order: readonly number[];
}

/** How many shuffles a version 1 state's epoch seed is looked for with (one per rejected draw the shuffle may have made). */
const RECOVERY_ATTEMPTS = 8;

function invalidState(field: string, expected: string, found: unknown): DataError {
  let shown: string;
  try {
    shown = JSON.stringify(found) ?? String(found);
  } catch {
    shown = String(found);
  }
  if (shown.length > 60) shown = `${shown.slice(0, 57)}...`;
  return new DataError(DATA_ERROR_CODES.DATA_INVALID_BATCH_STATE, `invalid update-batch state at ${field}: expected ${expected}, found ${shown}`, { field });
}

function identityOrder(n: number): Uint32Array {
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  return order;
}

/** Everything an {@link UpdateBatches} holds: the window count, batch size, epoch policy, shuffle RNG, current order and position. */
interface IteratorState {
  readonly windowCount: number;
  readonly batchSize: number;
  readonly policy: EpochPolicy;
  readonly rng: SplitMix64 | null;
  readonly epochSeed: bigint | null;
  readonly order: Uint32Array;
  readonly epoch: number;
  readonly cursor: number;
}

/**
 * The update-batch iterator of a training run.
 *
 * @example
 * ```ts
 * const batches = UpdateBatches.create(windows.length, { batchSize: 16, shuffleSeed: 39n });
 * const { windowIndices } = batches.next();
 * const saved = JSON.stringify(batches); // resume later with UpdateBatches.fromJSON(JSON.parse(saved), windows.length)
 * ```
 */
export class UpdateBatches {
  readonly #windowCount: number;
  readonly #batchSize: number;
  readonly #policy: EpochPolicy;
  readonly #rng: SplitMix64 | null;
  #epochSeed: bigint | null;
  #order: Uint32Array;
  #epoch: number;
  #cursor: number;

  private constructor(state: IteratorState) {
    this.#windowCount = state.windowCount;
    this.#batchSize = state.batchSize;
    this.#policy = state.policy;
    this.#rng = state.rng;
    this.#epochSeed = state.epochSeed;
    this.#order = state.order;
    this.#epoch = state.epoch;
    this.#cursor = state.cursor;
  }

  /**
   * Epoch 0 of a window list: sequential, or shuffled once by a fresh
   * SplitMix64 whose state is the seed.
   *
   * @param windowCount - length of the window list (positive).
   * @param options - batch size, shuffle seed, epoch policy.
   * @returns the iterator at epoch 0, batch 0.
   * @throws DataError `DATA_INVALID_PARAMETER` for a non-positive window count or batch size.
   * @throws RangeError for a seed outside [0, 2^64).
   */
  static create(windowCount: number, options: UpdateBatchesOptions): UpdateBatches {
    requirePositiveInteger(windowCount, 'windowCount');
    requirePositiveInteger(options.batchSize, 'batchSize');
    const policy = options.epochPolicy ?? 'repeat';
    if (policy !== 'repeat' && policy !== 'reshuffle') throw new RangeError(`epochPolicy must be 'repeat' or 'reshuffle', got ${String(policy)}`);
    const order = identityOrder(windowCount);
    let rng: SplitMix64 | null = null;
    if (options.shuffleSeed !== null) {
      rng = new SplitMix64(options.shuffleSeed);
      shuffleInPlace(order, rng);
    }
    return new UpdateBatches({ windowCount, batchSize: options.batchSize, policy, rng, epochSeed: options.shuffleSeed, order, epoch: 0, cursor: 0 });
  }

  /**
   * Batches per epoch.
   * @returns `ceil(windowCount / batchSize)`.
   */
  get batchCount(): number {
    return Math.ceil(this.#windowCount / this.#batchSize);
  }

  /**
   * Current epoch.
   * @returns the 0-based epoch the next batch belongs to.
   */
  get epoch(): number {
    return this.#epoch;
  }

  /**
   * Where the iterator stands in its epoch.
   * @returns the index of the next batch within the current epoch.
   */
  get cursor(): number {
    return this.#cursor;
  }

  /**
   * The next batch without advancing.
   * @returns epoch, batch index and window indices.
   */
  peek(): UpdateBatch {
    const from = this.#cursor * this.#batchSize;
    const to = Math.min(from + this.#batchSize, this.#windowCount);
    return { epoch: this.#epoch, batchIndex: this.#cursor, windowIndices: this.#order.slice(from, to) };
  }

  /**
   * Takes the next batch and advances; after an epoch's last batch it rolls
   * over to the next epoch (reshuffling under `'reshuffle'`).
   * @returns epoch, batch index and window indices.
   */
  next(): UpdateBatch {
    const batch = this.peek();
    this.#cursor += 1;
    if (this.#cursor === this.batchCount) {
      this.#cursor = 0;
      this.#epoch += 1;
      if (this.#policy === 'reshuffle' && this.#rng !== null) {
        this.#epochSeed = this.#rng.state;
        const order = identityOrder(this.#windowCount);
        shuffleInPlace(order, this.#rng);
        this.#order = order;
      }
    }
    return batch;
  }

  /**
   * A snapshot of everything the next batch depends on.
   * @returns copies of the order and the RNG state.
   */
  state(): UpdateBatchState {
    return {
      ...this.#position(),
      order: this.#order.slice(),
      rngState: this.#rng === null ? null : this.#rng.state,
      epochSeed: this.#epochSeed,
    };
  }

  /**
   * The JSON form (what a trainer saves): version 2, of constant size — the
   * order is not stored but drawn again from `epochSeed` on restore.
   * @returns plain data; `JSON.stringify` gives a stable text.
   */
  toJSON(): UpdateBatchStateJSON {
    return { version: 2, ...this.#position(), epochSeed: this.#epochSeed === null ? null : u64Hex(this.#epochSeed) };
  }

  /** The list, the batches and the position: what every form of the state holds. */
  #position(): UpdateBatchStateJSONCommon {
    return { windowCount: this.#windowCount, batchSize: this.#batchSize, epochPolicy: this.#policy, shuffled: this.#rng !== null, epoch: this.#epoch, cursor: this.#cursor };
  }

  /**
   * Restores a saved state, checking it completely: exact members, a cursor
   * inside the epoch, and (when given) the window count of the list it will
   * index. A version 2 state's order is drawn again from its epoch seed (one
   * shuffle of the window list); a version 1 state's order must be a
   * permutation that its generator state's shuffle produced.
   *
   * @param json - from {@link UpdateBatches.toJSON} (parsed), or a version 1 state.
   * @param expectedWindowCount - the current window list's length, to refuse a state of another list.
   * @returns the iterator, continuing exactly where the saved one stopped.
   * @throws DataError `DATA_INVALID_BATCH_STATE` with the offending `field`.
   */
  static fromJSON(json: unknown, expectedWindowCount?: number): UpdateBatches {
    if (typeof json !== 'object' || json === null || Array.isArray(json)) throw invalidState('(root)', 'an object', json);
    const v = json as Record<string, unknown>;
    if (v.version !== 1 && v.version !== 2) throw invalidState('version', '1 or 2', v.version);
    const members = ['version', 'windowCount', 'batchSize', 'epochPolicy', 'shuffled', 'epoch', 'cursor', ...(v.version === 1 ? ['rngState', 'order'] : ['epochSeed'])];
    for (const key of Object.keys(v)) if (!members.includes(key)) throw invalidState(key, 'no such member', key);
    for (const key of members) if (!Object.hasOwn(v, key)) throw invalidState(key, 'this member to be present', undefined);
    const positive = (key: string): number => {
      const x = v[key];
      if (typeof x !== 'number' || !Number.isSafeInteger(x) || x <= 0) throw invalidState(key, 'a positive integer', x);
      return x;
    };
    const windowCount = positive('windowCount');
    const batchSize = positive('batchSize');
    if (expectedWindowCount !== undefined && windowCount !== expectedWindowCount) {
      throw invalidState('windowCount', `${expectedWindowCount} (the current window list)`, windowCount);
    }
    // The window indices are u32 (Uint32Array orders).
    if (windowCount > 0xffffffff) throw invalidState('windowCount', 'at most 2^32 − 1 windows', windowCount);
    const policy = v.epochPolicy;
    if (policy !== 'repeat' && policy !== 'reshuffle') throw invalidState('epochPolicy', "'repeat' or 'reshuffle'", policy);
    if (typeof v.shuffled !== 'boolean') throw invalidState('shuffled', 'a boolean', v.shuffled);
    const epoch = v.epoch;
    if (typeof epoch !== 'number' || !Number.isSafeInteger(epoch) || epoch < 0) throw invalidState('epoch', 'a non-negative integer', epoch);
    const batches = Math.ceil(windowCount / batchSize);
    const cursor = v.cursor;
    if (typeof cursor !== 'number' || !Number.isSafeInteger(cursor) || cursor < 0 || cursor >= batches) throw invalidState('cursor', `an integer in 0…${batches - 1}`, cursor);
    const hex = (key: string): bigint => {
      const x = v[key];
      if (typeof x !== 'string' || !/^0x[0-9a-f]{16}$/.test(x)) throw invalidState(key, '0x followed by 16 lowercase hex digits', x);
      return BigInt(x);
    };
    const common = { windowCount, batchSize, policy, epoch, cursor } as const;
    if (v.version === 2) {
      if (!v.shuffled) {
        if (v.epochSeed !== null) throw invalidState('epochSeed', 'null for an unshuffled list', v.epochSeed);
        return new UpdateBatches({ ...common, rng: null, epochSeed: null, order: identityOrder(windowCount) });
      }
      const epochSeed = hex('epochSeed');
      const order = identityOrder(windowCount);
      const rng = new SplitMix64(epochSeed);
      shuffleInPlace(order, rng);
      return new UpdateBatches({ ...common, rng, epochSeed, order });
    }
    const restored = restoreOrder(v.order, windowCount);
    if (!v.shuffled) {
      if (v.rngState !== null) throw invalidState('rngState', 'null for an unshuffled list', v.rngState);
      for (let i = 0; i < windowCount; i++) if (restored[i] !== i) throw invalidState(`order[${i}]`, 'sequential order for an unshuffled list', restored[i]);
      return new UpdateBatches({ ...common, rng: null, epochSeed: null, order: restored });
    }
    const after = hex('rngState');
    return new UpdateBatches({ ...common, rng: new SplitMix64(after), epochSeed: recoverEpochSeed(restored, after), order: restored });
  }
}

/** A version 1 state's order, checked to be a permutation of 0 … windowCount − 1. */
function restoreOrder(order: unknown, windowCount: number): Uint32Array {
  if (!Array.isArray(order) || order.length !== windowCount) throw invalidState('order', `an array of ${windowCount} window indices`, Array.isArray(order) ? `array of ${order.length}` : order);
  const seen = new Uint8Array(windowCount);
  const restored = new Uint32Array(windowCount);
  for (let i = 0; i < windowCount; i++) {
    const x: unknown = order[i];
    if (typeof x !== 'number' || !Number.isInteger(x) || x < 0 || x >= windowCount || seen[x] === 1) {
      throw invalidState(`order[${i}]`, 'a permutation of the window indices (each once)', x);
    }
    seen[x] = 1;
    restored[i] = x;
  }
  return restored;
}

/**
 * The generator state a version 1 order was drawn from: the state after its
 * shuffle stepped back over the shuffle's draws — n − 1, plus one for each
 * rejected draw (rare: at most a handful are tried) — and confirmed by drawing
 * the order again from it, ending in the recorded state.
 */
function recoverEpochSeed(order: Uint32Array, after: bigint): bigint {
  const base = Math.max(0, order.length - 1);
  for (let extra = 0; extra < RECOVERY_ATTEMPTS; extra += 1) {
    const candidate = SplitMix64.advance(after, -BigInt(base + extra));
    const rng = new SplitMix64(candidate);
    const drawn = identityOrder(order.length);
    shuffleInPlace(drawn, rng);
    if (rng.state === after && drawn.every((x, i) => x === order[i])) return candidate;
    if (order.length <= 1) break;
  }
  throw invalidState('order', 'the shuffle drawn by the generator that ends in rngState (a state written by UpdateBatches)', `${order.length} window indices`);
}

/**
 * The reference's batch for a 1-based update step: `(step − 1) mod batchCount`
 * (../../../docs/spec/training.md §3.2).
 *
 * @param step - 1-based update step.
 * @param batches - batches in the update list (positive).
 * @returns the 0-based batch index.
 * @throws DataError `DATA_INVALID_PARAMETER` for a non-positive step or batch count.
 */
export function referenceBatchIndex(step: number, batches: number): number {
  requirePositiveInteger(step, 'step');
  requirePositiveInteger(batches, 'batchCount');
  return (step - 1) % batches;
}
