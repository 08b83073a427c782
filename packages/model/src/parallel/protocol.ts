/**
 * The control block of a batch pass: what the calling thread and the worker
 * threads share to run one phase (which command, which sequences, which
 * parameter version). The single-thread path uses the same block, unshared
 * (batch-pass.ts runs a phase from it; pool.ts signals the workers through it).
 */

/** Indices into the shared Int32 control block. */
export const CTRL = {
  /** Incremented by the caller to start a phase. */
  GENERATION: 0,
  /** The phase's command. */
  COMMAND: 1,
  /**
   * Next sequence the calling thread claims from the front (atomic add). After
   * a TRAIN phase: the end of the in-order prefix (the sequences before it were
   * added straight into the adjoint, in order, by the calling thread).
   */
  NEXT: 2,
  /** End (exclusive) of the sequences of this phase. */
  END: 3,
  /** Workers that finished the phase. */
  DONE: 4,
  /** B of the batch. */
  ROWS: 5,
  /** T of the batch. */
  COLUMNS: 6,
  /** Parameter version (changes whenever the parameters may have changed). */
  VERSION: 7,
  /** First sequence of the current wave. */
  WAVE_START: 8,
  /** Set to 1 by a worker that failed. */
  ERROR: 9,
  /** Number of threads taking part (caller included). */
  THREADS: 10,
  /** Sequences run by worker threads so far (a diagnostic). */
  WORKER_SEQUENCES: 11,
  /** End (exclusive) of the sequences not yet claimed from the back by the workers (atomic sub). */
  BACK: 12,
  /** Sequences of the phase not yet claimed (atomic sub; a claim that finds it ≤ 0 gets none). */
  REMAINING: 13,
  /** REDUCE: first sequence whose partial is reduced (the in-order prefix ends here). */
  REDUCE_FROM: 14,
  /** (15 is the workers' always-zero sleep slot.) */
  SLEEP: 15,
  /** REDUCE: 1 when the phase also finishes the pass (gains, embedding, finiteness scan). */
  FINISH: 16,
  /** FINISH: the first non-finite adjoint element found (−1 when none; an atomic minimum). */
  FIRST_BAD: 17,
  /** Sequences whose weight partial went through a REDUCE phase so far (a diagnostic). */
  PARTIAL_SEQUENCES: 18,
  /** REDUCE: the parameter slices (threads taking part; 1 when the calling thread reduces alone). */
  SLICES: 19,
  /**
   * TRAIN / EVALUATE: 0 (claims are free), or 1 + the number of sequences at
   * the front of the wave the calling thread runs, leaving exactly the rest to
   * the workers (REMAINING then counts only those): a fixed split, for tests
   * (tuning.ts `frontShare`).
   */
  FRONT_SHARE: 20,
  /** CALLS: the call set (shared-calls.ts) and the index of its entry to call. */
  CALLS_ID: 21,
  CALLS_ENTRY: 22,
  /** Microseconds a thread watches a slot before it sleeps on it ({@link spinWhile}; {@link SPIN_MICROSECONDS} or the decoder's tuning, stored when a phase starts). */
  SPIN_US: 23,
  /** Partials the REDUCE phases added with the WebAssembly fold so far, counted once per thread's slice (a diagnostic: kernels/wasm-fold.ts). */
  FOLDED: 24,
  /**
   * A REDUCE that finishes the pass: how its threads write their slices of
   * the adjoint into the decoder's gradients once every slice is finished
   * and none holds a non-finite element ({@link GRADIENTS}).
   */
  GRADIENTS: 25,
  /** Threads that reached the end of their slice of the current REDUCE, or their share of the current CALLS ({@link meetAll}). */
  ARRIVED: 26,
  /** 1 when a thread failed before the end of its slice or share: then no thread writes the gradients, or the outputs of the calls. */
  FAILED: 27,
  /** REDUCE, for tests: 0, or the fault of a slice (tuning.ts `faultSlice`, `faultThrows`): 2·(slice + 1), + 1 to throw. */
  FAULT: 28,
} as const;

/** Values of {@link CTRL.GRADIENTS}. */
export const GRADIENTS = {
  /** Leave the gradients as they are. */
  NONE: 0,
  /** Replace them with the adjoint. */
  SET: 1,
  /** Add the adjoint to them (`trainStep` with `accumulate`). */
  ADD: 2,
} as const;

/** Size of the control block in Int32 elements. */
export const CTRL_LENGTH = 32;

/** Phase commands. */
export const COMMAND = {
  /**
   * Forward + backward of the wave's sequences: the calling thread claims them
   * from the front and adds each S_b straight into the adjoint (in order, like
   * one thread alone does with all of them); worker threads claim them from
   * the back into partial slots.
   */
  TRAIN: 1,
  /**
   * Reduce the partials of sequences REDUCE_FROM … END−1 in order over a slice
   * of the parameters (and, with FINISH, the gains, embedding and finiteness scan of that slice).
   */
  REDUCE: 2,
  /** Forward (loss only) of all sequences. */
  EVALUATE: 3,
  /** Read new buffers from the message port. */
  RECONFIGURE: 4,
  /** Leave the loop. */
  EXIT: 5,
  /** Run a share of the calls of a call set (shared-calls.ts). */
  CALLS: 6,
  /** Read a call set to add (or the id of one to drop) from the message port. */
  SHARE: 7,
} as const;

/**
 * How long a thread that waits on the control block — a worker for the next
 * phase, the calling thread for the workers to finish one — watches it before
 * it sleeps (`Atomics.wait`). Waking a sleeping thread costs the one that waits
 * about 0.1 ms on the 2-core development VM (the phases of a medium training
 * step, 20 ms on two threads, lose 0.3 ms so); between the phases of a step
 * (the clip, the commit of AdamW's update, zero-grad) there is less than
 * 0.5 ms. A thread spins at most this long per wait, so a decoder left idle
 * costs that once, then sleeps. 0 sleeps at once (benchmarks compare, through
 * a decoder's tuning: tuning.ts). The bits never depend on it.
 */
export const SPIN_MICROSECONDS = 500;

/**
 * Watches `block[index]` while it holds `value`, for at most the control
 * block's {@link CTRL.SPIN_US} microseconds (0: not at all): 64 reads of the
 * slot between two looks at the clock.
 *
 * @param block - the control block.
 * @param index - the slot to watch.
 * @param value - the value it held.
 * @param now - the clock, in milliseconds (tests drive it).
 * @returns true when the slot changed, false when the time ran out first (then sleep on it).
 */
export function spinWhile(block: Int32Array, index: number, value: number, now: () => number = monotonicMs): boolean {
  const us = Atomics.load(block, CTRL.SPIN_US);
  if (us <= 0) return false;
  const end = now() + us / 1000;
  for (;;) {
    for (let i = 0; i < 64; i++) if (Atomics.load(block, index) !== value) return true;
    if (now() > end) return false;
  }
}

/** @returns `performance.now()`: the default clock of {@link spinWhile} and of the calling thread's waits (pool.ts). */
export function monotonicMs(): number {
  return performance.now();
}

/** Sleeps on a slot while it holds a value, until a notify ({@link waitForChange}'s default: `Atomics.wait`). */
export type Sleep = (block: Int32Array, index: number, value: number) => void;

function atomicsSleep(block: Int32Array, index: number, value: number): void {
  Atomics.wait(block, index, value);
}

/**
 * Waits until `block[index]` no longer holds `value` — watching it
 * ({@link spinWhile}), then sleeping — and returns what it holds then. A
 * wake-up is not taken for the change: `Atomics.wait` also returns for a
 * notify sent for an earlier change (the calling thread bumps a slot, then
 * notifies; a worker that saw the bump while watching can run the whole
 * phase and sleep on the new value before that notify arrives), so the slot
 * is read again after every sleep.
 *
 * @param block - the control block.
 * @param index - the slot.
 * @param value - the value it held.
 * @param sleep - how to sleep on it (tests drive it).
 * @returns the slot's new value.
 */
export function waitForChange(block: Int32Array, index: number, value: number, sleep: Sleep = atomicsSleep): number {
  for (;;) {
    const now = Atomics.load(block, index);
    if (now !== value) return now;
    if (!spinWhile(block, index, value)) sleep(block, index, value);
  }
}

/**
 * Where the threads of a phase meet before they write results that must be
 * written whole or not at all: counts this thread at {@link CTRL.ARRIVED}
 * (first noting at {@link CTRL.FAILED} that its part failed, if it did), and
 * waits — watching, then sleeping — until all `threads` have arrived. Every
 * thread of the phase must arrive, failed or not (call it from a `finally`).
 *
 * @param block - the control block (ARRIVED and FAILED set to 0 before the phase).
 * @param threads - threads that arrive.
 * @param ok - whether this thread's part succeeded.
 * @returns whether every thread's part succeeded.
 */
export function meetAll(block: Int32Array, threads: number, ok: boolean): boolean {
  if (!ok) Atomics.store(block, CTRL.FAILED, 1);
  Atomics.add(block, CTRL.ARRIVED, 1);
  Atomics.notify(block, CTRL.ARRIVED);
  for (;;) {
    const seen = Atomics.load(block, CTRL.ARRIVED);
    if (seen >= threads) break;
    if (!spinWhile(block, CTRL.ARRIVED, seen)) Atomics.wait(block, CTRL.ARRIVED, seen);
  }
  return Atomics.load(block, CTRL.FAILED) === 0;
}
