/**
 * The batch pass: the work of one phase of a training or evaluation pass,
 * shared by the calling thread and the worker threads (the single-thread
 * decoder runs it too, on an unshared control block). Threads claim whole
 * sequences with an atomic counter (so a busy core simply takes fewer of
 * them); each sequence writes only its own slots, and every cross-sequence sum
 * is done afterwards in the fixed order (../internal/batch-reduce.ts). The bits
 * therefore do not depend on the thread count or on which thread ran which
 * sequence.
 */
import type { DecoderConfig } from '@llmcp/format';
import type { DecoderPass, SequenceSlots } from '../decoder-pass.ts';
import { reducePartial, type BatchBuffers } from '../internal/batch-reduce.ts';
import { COMMAND, CTRL, CTRL_LENGTH } from './protocol.ts';

/** Everything a thread needs to run phases. */
export interface PhaseContext {
  readonly config: DecoderConfig;
  readonly pass: DecoderPass;
  readonly parameters: Float64Array;
  readonly control: Int32Array;
  inputs: Int32Array;
  targets: Int32Array;
  buffers: BatchBuffers;
}

/** Runs the phases of a decoder's batch passes: on the calling thread alone, or with worker threads (pool.ts). */
export interface PhaseRunner {
  /** Threads taking part in a phase (the caller included). */
  readonly threads: number;
  /** The control block the phases are described in (shared with the workers, if any). */
  readonly control: Int32Array;
  /**
   * Runs one phase on every thread and waits for all.
   * @param ctx - the caller's context (fields of the phase already stored in `control`).
   * @param command - the phase command.
   */
  run(ctx: PhaseContext, command: number): void;
  /**
   * Hands new batch buffers to every thread.
   * @param ctx - the context holding them.
   */
  reconfigure(ctx: PhaseContext): void;
  /** Stops the threads (if any). @returns when they have exited. */
  close(): Promise<void>;
}

/** The single-thread runner: the phase runs on the calling thread, nothing is shared. */
export class CallingThread implements PhaseRunner {
  readonly threads: number = 1;
  readonly control: Int32Array = new Int32Array(CTRL_LENGTH);

  run(ctx: PhaseContext, command: number): void {
    Atomics.store(ctx.control, CTRL.COMMAND, command);
    runPhase(ctx, 0);
  }

  reconfigure(): void {}

  async close(): Promise<void> {}
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
  const pass = ctx.pass;
  const buffers = ctx.buffers;
  const P = pass.layout.size;
  const D = ctx.config.modelWidth;
  if (command === COMMAND.TRAIN || command === COMMAND.EVALUATE || command === COMMAND.TRAIN_IN_ORDER) {
    pass.prepare(ctx.parameters, Atomics.load(ctrl, CTRL.VERSION));
    const end = Atomics.load(ctrl, CTRL.END);
    const waveStart = Atomics.load(ctrl, CTRL.WAVE_START);
    const k = 1.0 / (B * T);
    const inOrder = command === COMMAND.TRAIN_IN_ORDER;
    const seq = { tokens: ctx.inputs, targets: ctx.targets, offset: 0, positions: T };
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
      seq.offset = off;
      pass.forward(seq);
      if (command === COMMAND.EVALUATE) {
        buffers.rowLoss.set(pass.rowLoss.subarray(0, T), off);
        continue;
      }
      slots.rowLossOff = off;
      slots.partialOff = inOrder ? 0 : (b - waveStart) * P;
      slots.accumulate = inOrder && b > 0;
      slots.gainOff = off * D;
      slots.dx0Off = off * D;
      pass.backward(seq, k, slots);
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
