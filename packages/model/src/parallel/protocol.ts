/**
 * The work of one batch phase, shared by the calling thread and the worker
 * threads. Threads claim whole sequences with an atomic counter (so a busy
 * core simply takes fewer of them); each sequence writes only its own slots,
 * and every cross-sequence sum is done afterwards in the fixed order
 * (batch-reduce.ts). The bits therefore do not depend on the thread count or
 * on which thread ran which sequence.
 */
import type { DecoderConfig } from '@llmcp/format';
import { reducePartial, type BatchBuffers } from '../internal/batch-reduce.ts';
import type { SequenceEngine, SequenceSlots } from '../internal/sequence-engine.ts';

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

/** Everything a thread needs to run phases. */
export interface PhaseContext {
  readonly config: DecoderConfig;
  readonly engine: SequenceEngine;
  readonly parameters: Float64Array;
  readonly control: Int32Array;
  inputs: Int32Array;
  targets: Int32Array;
  buffers: BatchBuffers;
}

/**
 * Runs the current phase's share of one thread.
 * @param ctx - the thread's context.
 * @param threadIndex - 0 for the calling thread, 1… for workers.
 */
export function runPhase(ctx: PhaseContext, threadIndex: number): void {
  const ctrl = ctx.control;
  const command = Atomics.load(ctrl, CTRL.COMMAND);
  const B = Atomics.load(ctrl, CTRL.ROWS);
  const T = Atomics.load(ctrl, CTRL.COLUMNS);
  const engine = ctx.engine;
  const buffers = ctx.buffers;
  const P = engine.layout.size;
  const D = ctx.config.modelWidth;
  if (command === COMMAND.TRAIN || command === COMMAND.EVALUATE || command === COMMAND.TRAIN_IN_ORDER) {
    engine.prepare(ctx.parameters, Atomics.load(ctrl, CTRL.VERSION));
    const end = Atomics.load(ctrl, CTRL.END);
    const waveStart = Atomics.load(ctrl, CTRL.WAVE_START);
    const k = 1.0 / (B * T);
    const inOrder = command === COMMAND.TRAIN_IN_ORDER;
    const slots: { -readonly [F in keyof SequenceSlots]: SequenceSlots[F] } = {
      rowLoss: buffers.rowLoss,
      rowLossOff: 0,
      partial: inOrder ? buffers.adjoint : buffers.partials,
      partialOff: 0,
      accumulate: false,
      gainTerms: buffers.gainTerms,
      gainStride: B * T * D,
      gainOff: 0,
      dx0: buffers.dx0,
      dx0Off: 0,
    };
    for (;;) {
      const b = Atomics.add(ctrl, CTRL.NEXT, 1);
      if (b >= end) break;
      const off = b * T;
      if (threadIndex > 0) Atomics.add(ctrl, CTRL.WORKER_SEQUENCES, 1);
      engine.forward(ctx.parameters, ctx.inputs, ctx.targets, off, T, 0);
      if (command === COMMAND.EVALUATE) {
        buffers.rowLoss.set(engine.rowLoss.subarray(0, T), off);
        continue;
      }
      slots.rowLossOff = off;
      slots.partialOff = inOrder ? 0 : (b - waveStart) * P;
      slots.accumulate = inOrder && b > 0;
      slots.gainOff = off * D;
      slots.dx0Off = off * D;
      engine.backward(ctx.parameters, ctx.targets, off, T, k, slots);
    }
  } else if (command === COMMAND.REDUCE) {
    const threads = Atomics.load(ctrl, CTRL.THREADS);
    const from = Math.floor((P * threadIndex) / threads);
    const to = Math.floor((P * (threadIndex + 1)) / threads);
    const waveStart = Atomics.load(ctrl, CTRL.WAVE_START);
    const end = Atomics.load(ctrl, CTRL.END);
    for (let b = waveStart; b < end; b++) reducePartial(buffers.adjoint, buffers.partials, (b - waveStart) * P, b === 0, from, to);
  }
}
