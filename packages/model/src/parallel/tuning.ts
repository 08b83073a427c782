/**
 * Tuning and fault injection of a decoder's worker threads, for tests and
 * benchmarks: the object given as `tuning` to `Decoder.create`. The decoder
 * keeps it by reference and reads it when a phase starts, so its owner may
 * change a field between steps. A decoder on one thread reads none of it,
 * and no field changes a bit.
 */
export interface ThreadTuning {
  /**
   * A fixed split of the sequences between the calling thread and the
   * workers (timing decides it otherwise, and on small shapes the calling
   * thread often runs every sequence before a worker wakes):
   * `frontShare(wave, sequences)` gives how many sequences at the front of
   * wave `wave` (0, 1, …) of `sequences` the calling thread runs; the
   * workers run the others. Null or absent: free claims.
   */
  frontShare?: ((wave: number, sequences: number) => number) | null;
  /**
   * A fault injected into the finishing reduction: the thread reducing
   * slice `faultSlice` (≥ 0; absent or −1: none) fails after its work — it
   * records the first element of its slice as not finite, or throws with
   * `faultThrows`.
   */
  faultSlice?: number;
  faultThrows?: boolean;
  /** Whether threads offer the rows of their products to a thread with none left (parallel/help.ts; default true: benchmarks turn it off to compare). */
  helpEnabled?: boolean;
  /** Every offered product is left to a helper (default false): then every product of a thread's sequences is computed by another thread while one serves. */
  helpForce?: boolean;
  /** Microseconds a thread watches the control block before it sleeps (default protocol.ts `SPIN_MICROSECONDS`; 0 sleeps at once). */
  spinMicroseconds?: number;
  /** The clock (milliseconds) the calling thread times its waits for the workers with (`ParallelStats.waitMs`; default `performance.now`: tests drive it). */
  clock?: () => number;
  /** Below this much reduction work the calling thread reduces alone (default batch-reduce.ts `REDUCE_LOCAL_ELEMENTS`; 0: always the threads, Infinity: always alone). */
  reduceLocalElements?: number;
}
