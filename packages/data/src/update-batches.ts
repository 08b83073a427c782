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
}

/** The JSON form of {@link UpdateBatchState} (bigint as 16 hex digits). */
export interface UpdateBatchStateJSON {
  readonly version: 1;
  readonly windowCount: number;
  readonly batchSize: number;
  readonly epochPolicy: EpochPolicy;
  readonly shuffled: boolean;
  readonly epoch: number;
  readonly cursor: number;
  /** `0x` + 16 lowercase hex digits, or `null`. */
  readonly rngState: string | null;
  readonly order: readonly number[];
}

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
  #order: Uint32Array;
  #epoch: number;
  #cursor: number;

  private constructor(state: IteratorState) {
    this.#windowCount = state.windowCount;
    this.#batchSize = state.batchSize;
    this.#policy = state.policy;
    this.#rng = state.rng;
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
    return new UpdateBatches({ windowCount, batchSize: options.batchSize, policy, rng, order, epoch: 0, cursor: 0 });
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
      windowCount: this.#windowCount,
      batchSize: this.#batchSize,
      epochPolicy: this.#policy,
      shuffled: this.#rng !== null,
      epoch: this.#epoch,
      cursor: this.#cursor,
      order: this.#order.slice(),
      rngState: this.#rng === null ? null : this.#rng.state,
    };
  }

  /**
   * The JSON form (what a trainer saves).
   * @returns plain data; `JSON.stringify` gives a stable text.
   */
  toJSON(): UpdateBatchStateJSON {
    const s = this.state();
    return {
      version: 1,
      windowCount: s.windowCount,
      batchSize: s.batchSize,
      epochPolicy: s.epochPolicy,
      shuffled: s.shuffled,
      epoch: s.epoch,
      cursor: s.cursor,
      rngState: s.rngState === null ? null : u64Hex(s.rngState),
      order: Array.from(s.order),
    };
  }

  /**
   * Restores a saved state, checking it completely: exact members, a
   * permutation order of the right length, a cursor inside the epoch, and (when
   * given) the window count of the list it will index.
   *
   * @param json - from {@link UpdateBatches.toJSON} (parsed).
   * @param expectedWindowCount - the current window list's length, to refuse a state of another list.
   * @returns the iterator, continuing exactly where the saved one stopped.
   * @throws DataError `DATA_INVALID_BATCH_STATE` with the offending `field`.
   */
  static fromJSON(json: unknown, expectedWindowCount?: number): UpdateBatches {
    if (typeof json !== 'object' || json === null || Array.isArray(json)) throw invalidState('(root)', 'an object', json);
    const v = json as Record<string, unknown>;
    const members = ['version', 'windowCount', 'batchSize', 'epochPolicy', 'shuffled', 'epoch', 'cursor', 'rngState', 'order'];
    for (const key of Object.keys(v)) if (!members.includes(key)) throw invalidState(key, 'no such member', key);
    for (const key of members) if (!Object.hasOwn(v, key)) throw invalidState(key, 'this member to be present', undefined);
    if (v.version !== 1) throw invalidState('version', '1', v.version);
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
    const policy = v.epochPolicy;
    if (policy !== 'repeat' && policy !== 'reshuffle') throw invalidState('epochPolicy', "'repeat' or 'reshuffle'", policy);
    if (typeof v.shuffled !== 'boolean') throw invalidState('shuffled', 'a boolean', v.shuffled);
    const epoch = v.epoch;
    if (typeof epoch !== 'number' || !Number.isSafeInteger(epoch) || epoch < 0) throw invalidState('epoch', 'a non-negative integer', epoch);
    const batches = Math.ceil(windowCount / batchSize);
    const cursor = v.cursor;
    if (typeof cursor !== 'number' || !Number.isSafeInteger(cursor) || cursor < 0 || cursor >= batches) throw invalidState('cursor', `an integer in 0…${batches - 1}`, cursor);
    let rng: SplitMix64 | null = null;
    if (v.shuffled) {
      if (typeof v.rngState !== 'string' || !/^0x[0-9a-f]{16}$/.test(v.rngState)) throw invalidState('rngState', '0x followed by 16 lowercase hex digits', v.rngState);
      rng = new SplitMix64(BigInt(v.rngState));
    } else if (v.rngState !== null) throw invalidState('rngState', 'null for an unshuffled list', v.rngState);
    const order = v.order;
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
    if (!v.shuffled) {
      for (let i = 0; i < windowCount; i++) if (restored[i] !== i) throw invalidState(`order[${i}]`, 'sequential order for an unshuffled list', restored[i]);
    }
    return new UpdateBatches({ windowCount, batchSize, policy, rng, order: restored, epoch, cursor });
  }
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
