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
  /** Next sequence to claim (atomic add). */
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
} as const;

/** Size of the control block in Int32 elements. */
export const CTRL_LENGTH = 16;

/** Phase commands. */
export const COMMAND = {
  /** Forward + backward of the wave's sequences. */
  TRAIN: 1,
  /** Reduce the wave's partials over a slice of the parameters. */
  REDUCE: 2,
  /** Forward (loss only) of all sequences. */
  EVALUATE: 3,
  /** Read new buffers from the message port. */
  RECONFIGURE: 4,
  /** Leave the loop. */
  EXIT: 5,
  /**
   * Forward + backward of all sequences by ONE thread in order b = 0, 1, …,
   * adding each S_b straight into the adjoint (no partial slots, no reduce phase).
   */
  TRAIN_IN_ORDER: 6,
} as const;
