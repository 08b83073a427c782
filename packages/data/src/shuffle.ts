/**
 * The Fisher–Yates shuffle with SplitMix64 (../../../docs/spec/training.md §3.1).
 */
import type { SplitMix64 } from '@llmcp/format';

/** An indexable, writable list: an array or a typed array. */
export interface MutableArrayLike<T> {
  /** Number of items. */
  readonly length: number;
  /** Item access. */
  [index: number]: T;
}

/**
 * Shuffles in place, exactly as the reference: for i from n − 1 down to 1,
 * draw j uniformly in [0, i] with SplitMix64's rejection rule
 * (`rng.nextBelow(i + 1)`) and swap items i and j. Draws n − 1 indices
 * (plus any rejected draws); an empty or one-element list draws nothing.
 *
 * @param items - the list (window descriptors or window indices).
 * @param rng - the generator; it advances.
 * @example
 * ```ts
 * const order = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
 * shuffleInPlace(order, new SplitMix64(5n));
 * ```
 */
export function shuffleInPlace<T>(items: MutableArrayLike<T>, rng: SplitMix64): void {
  for (let i = items.length - 1; i >= 1; i--) {
    const j = rng.nextBelow(i + 1);
    const tmp = items[i] as T;
    items[i] = items[j] as T;
    items[j] = tmp;
  }
}
