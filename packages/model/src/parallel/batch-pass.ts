/**
 * The batch pass of a decoder with worker threads: the work of one phase of
 * a training or evaluation pass, shared by the calling thread and the worker
 * threads, each running the reference pass (../reference/model.ts) on its
 * own kernel set (a decoder on one thread runs that pass directly:
 * ../decoder.ts `trainStep`). Threads claim whole
 * sequences with an atomic counter (so a busy core simply takes fewer of
 * them); each sequence writes only its own slots, and every cross-sequence sum
 * is done afterwards in the fixed order (../internal/batch-reduce.ts). The bits
 * therefore do not depend on the thread count or on which thread ran which
 * sequence. A thread with no sequence left computes rows of the others'
 * products until every thread is done (help.ts), which changes no bit either.
 */
import type { DecoderConfig } from '@llmcp/format';
import { finishSlice, reducePartials, reduceSlices, sequenceGradients, type BatchBuffers } from '../internal/batch-reduce.ts';
import { arenaFront } from '../kernels/kernel-arena.ts';
import type { Kernels } from '../kernels/kernel-set.ts';
import { decoderBackward, decoderForward } from '../reference/model.ts';
import type { WasmMemory } from '../kernels/wasm-assembler.ts';
import { createWasmFold, type WasmFold } from '../kernels/wasm-fold.ts';
import { HELP, HelpDesk, helperKernels, HelpingKernels, serveProducts, type HelperKernels } from './help.ts';
import { COMMAND, CTRL, GRADIENTS, meetAll } from './protocol.ts';
import { copyOutputs, runCallShare, type CallSet, type CallSetMessage } from './shared-calls.ts';

/**
 * The shared memories of the threads' kernel arenas (made by the calling
 * thread: decoder.ts), per thread index: the calling thread's (index 0)
 * holds its kernel arena only; each worker's first `reserved` elements after
 * the kernel data are that worker's partial slots, the first worker's next
 * `adjoint` elements the pass adjoint (so that the partials it holds are
 * added into the adjoint by a WebAssembly kernel: kernels/wasm-fold.ts), and
 * the rest its kernel arena ({@link arenaFrontOf}). Both are for sequences of
 * up to `positions` positions (DecoderPass.adoptArenaMemory). `id` changes
 * whenever the memories are replaced.
 */
export interface WorkerArenas {
  readonly id: number;
  readonly memories: readonly WasmMemory[];
  readonly reserved: number;
  readonly adjoint: number;
  readonly positions: number;
  /** The help block through which the threads share the rows of their products at the end of a wave (help.ts). */
  readonly help: Int32Array;
}

/** One thread's part in the help at the end of a TRAIN phase (help.ts). */
export interface Helping {
  readonly block: Int32Array;
  /** The thread's kernels, offering the products of its sequences. */
  readonly offering: HelpingKernels;
  /** Runs the others' products. */
  readonly helpers: HelperKernels;
}

/**
 * @param kernels - the thread's kernel set.
 * @param arenas - the threads' memories.
 * @param threadIndex - this thread.
 * @returns this thread's part in the help.
 */
function helping(kernels: Kernels, arenas: WorkerArenas, threadIndex: number): Helping {
  const { memories, help } = arenas;
  const desk = new HelpDesk(help, threadIndex, memories[threadIndex] as WasmMemory, kernels.helpMinRows);
  return { block: help, offering: new HelpingKernels(kernels, desk), helpers: helperKernels(kernels, memories, threadIndex) };
}

/**
 * @param arenas - the threads' memories.
 * @param t - a thread index.
 * @returns the elements before thread t's kernel arena in its memory: a worker's partial slots and, for the first, the adjoint.
 */
export function arenaFrontOf(arenas: WorkerArenas, t: number): number {
  return t === 0 ? 0 : arenas.reserved + (t === 1 ? arenas.adjoint : 0);
}

/**
 * @param arenas - the threads' memories.
 * @returns the pass adjoint's place in the first worker's memory, or null when it has none.
 */
export function arenaAdjoint(arenas: WorkerArenas): Float64Array | null {
  const memory = arenas.memories[1];
  return memory === undefined || arenas.adjoint === 0 ? null : arenaFront({ memory, front: arenaFrontOf(arenas, 1) }).subarray(arenas.reserved);
}

/**
 * Points a thread's context at a new set of arena memories (or none): the
 * workers' partial regions, its part in the help, and its fold kernel on the
 * memory that holds the adjoint.
 * @param ctx - the thread's context.
 * @param arenas - the memories, or null.
 * @param threadIndex - the thread.
 */
export function useArenas(ctx: PhaseContext, arenas: WorkerArenas | null, threadIndex: number): void {
  ctx.arenas = arenas;
  ctx.regions = arenas === null ? [] : arenas.memories.map((memory, t) => (t === 0 ? new Float64Array(0) : arenaFront({ memory, front: arenas.reserved })));
  ctx.helping = arenas === null ? null : helping(ctx.kernels, arenas, threadIndex);
  ctx.fold = arenas === null || arenaAdjoint(arenas) === null ? null : createWasmFold(arenas.memories[1] as WasmMemory);
}

/** Everything a thread needs to run phases. */
export interface PhaseContext {
  readonly config: DecoderConfig;
  /** The thread's kernel set and workspace. */
  readonly kernels: Kernels;
  readonly parameters: Float64Array;
  /** The decoder's gradients (a finishing REDUCE writes them, each thread its slice). */
  readonly gradients: Float64Array;
  readonly control: Int32Array;
  inputs: Int32Array;
  targets: Int32Array;
  buffers: BatchBuffers;
  /**
   * Per thread index, the worker's region of partial slots (slot s at s·P),
   * in the shared memory its kernel arena lives in, so the backward pass
   * writes the partial in place and any thread reduces it from there
   * (decoder.ts `#workerArenas`); empty for the calling thread and when the
   * partials are in {@link BatchBuffers.partials}.
   */
  regions: readonly Float64Array[];
  /** The workers' arena memories the regions are in (the calling thread hands them out), or null. */
  arenas: WorkerArenas | null;
  /** This thread's part in the help of TRAIN phases, or null (no shared memories: each thread runs its own products). */
  helping: Helping | null;
  /** This thread's fold kernel on the memory of the adjoint (kernels/wasm-fold.ts), or null (the reduction adds in JavaScript). */
  fold: WasmFold | null;
  /** Milliseconds this thread served the others' products with none to compute, so far (help.ts `serveProducts`). */
  idleMs: number;
  /** This thread's instances of the call sets shared with it, by id (shared-calls.ts). */
  readonly calls: Map<number, CallSet>;
}

/** Runs the phases of a decoder's batch passes with worker threads (pool.ts). */
export interface PhaseRunner {
  /** Threads taking part in a phase (the caller included). */
  readonly threads: number;
  /** The control block the phases are described in (shared with the workers). */
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
  /**
   * Sends a call set to add (or drop) to every other thread and waits until each has it.
   * @param message - the set.
   */
  share(message: CallSetMessage): void;
  /** Stops the threads (if any). @returns when they have exited. */
  close(): Promise<void>;
  /** Milliseconds the calling thread waited for the other threads at the end of phases so far. */
  readonly waitMs: number;
}

/**
 * Lowers the control slot FIRST_BAD to `index` unless it already holds a smaller one (−1 = none).
 * @param ctrl - the control block.
 * @param index - a non-finite element found.
 */
function recordFirstBad(ctrl: Int32Array, index: number): void {
  for (;;) {
    const seen = Atomics.load(ctrl, CTRL.FIRST_BAD);
    if (seen >= 0 && seen <= index) return;
    if (Atomics.compareExchange(ctrl, CTRL.FIRST_BAD, seen, index) === seen) return;
  }
}

/**
 * Runs the current phase's share of one thread.
 *
 * Training: the calling thread (index 0) claims sequences from the front of
 * the wave and adds each S_b straight into the adjoint (GEMM_ADD, the
 * first sequence of the batch writes), so its sequences b = WAVE_START …
 * NEXT−1 need no partial and no reduction; worker threads claim from the back
 * and write partials, which REDUCE then adds in order b = NEXT … END−1. The
 * additions of every element are those of one thread running b = 0, 1, … .
 *
 * @param ctx - the thread's context.
 * @param threadIndex - 0 for the calling thread, 1… for workers.
 */
export function runPhase(ctx: PhaseContext, threadIndex: number): void {
  const ctrl = ctx.control;
  const command = Atomics.load(ctrl, CTRL.COMMAND);
  const B = Atomics.load(ctrl, CTRL.ROWS);
  const T = Atomics.load(ctrl, CTRL.COLUMNS);
  const ws = ctx.kernels.workspace;
  const buffers = ctx.buffers;
  const P = ws.layout.size;
  const D = ctx.config.modelWidth;
  if (command === COMMAND.TRAIN || command === COMMAND.EVALUATE) {
    ws.prepare(ctx.parameters, Atomics.load(ctrl, CTRL.VERSION));
    const state = ws.state(T);
    const waveStart = Atomics.load(ctrl, CTRL.WAVE_START);
    const scale = 1.0 / (B * T);
    const front = threadIndex === 0;
    const region = front ? undefined : ctx.regions[threadIndex];
    const owner = region === undefined || region.length === 0 ? 0 : threadIndex;
    const partial = front ? buffers.adjoint : owner === 0 ? buffers.partials : (region as Float64Array);
    // A claim first takes one of the REMAINING sequences, then its index from its end of the wave: the two ends never meet.
    // With a fixed split (FRONT_SHARE = 1 + share) the calling thread runs its share without claiming, the workers claim the rest.
    const share = front ? Atomics.load(ctrl, CTRL.FRONT_SHARE) - 1 : -1;
    const help = command === COMMAND.TRAIN ? ctx.helping : null;
    // While this thread runs sequences, the lower rows of its products may go to a thread with none left (help.ts).
    const k = help === null ? ctx.kernels : help.offering;
    try {
      for (let taken = 0; share < 0 ? Atomics.sub(ctrl, CTRL.REMAINING, 1) > 0 : taken < share; taken++) {
        const b = front ? Atomics.add(ctrl, CTRL.NEXT, 1) : Atomics.sub(ctrl, CTRL.BACK, 1) - 1;
        const off = b * T;
        if (threadIndex > 0) Atomics.add(ctrl, CTRL.WORKER_SEQUENCES, 1);
        const seq = { tokens: ctx.inputs, offset: off, targets: ctx.targets.subarray(off, off + T), logitsFrom: 0 };
        decoderForward(k, state, seq);
        buffers.rowLoss.set(state.acts.rowLoss.subarray(0, T), off);
        if (command === COMMAND.EVALUATE) continue;
        if (!front) buffers.owners[b - waveStart] = owner;
        // The calling thread adds each S_b straight into the adjoint, in order (the first sequence of the batch writes).
        const add = front && b > 0;
        const weights = ws.weightGradients(partial, front ? 0 : (b - waveStart) * P, add);
        decoderBackward(k, state, seq, sequenceGradients(weights, buffers, { row: off, rows: T, add, scale }));
        ws.sequenceDone();
      }
    } finally {
      if (help !== null) Atomics.sub(help.block, HELP.RUNNING, 1);
    }
    ws.flushGradients();
    // No sequence left: this thread computes rows of the others' products until none runs a sequence.
    if (help !== null) ctx.idleMs += serveProducts(help.block, help.helpers);
  } else if (command === COMMAND.CALLS) {
    const threads = Atomics.load(ctrl, CTRL.THREADS);
    const set = ctx.calls.get(Atomics.load(ctrl, CTRL.CALLS_ID));
    let ok = false;
    try {
      if (set === undefined) throw new Error(`no call set ${Atomics.load(ctrl, CTRL.CALLS_ID)} on thread ${threadIndex}`);
      ok = runCallShare(set, Atomics.load(ctrl, CTRL.CALLS_ENTRY), threadIndex, threads);
    } finally {
      // The outputs are copied out only when every call of every thread succeeded.
      ok = meetAll(ctrl, threads, ok);
    }
    if (ok) copyOutputs(set as CallSet, threadIndex, threads);
  } else if (command === COMMAND.REDUCE) {
    const slices = Atomics.load(ctrl, CTRL.SLICES);
    const write = Atomics.load(ctrl, CTRL.GRADIENTS);
    let ok = false;
    let from = 0;
    let to = 0;
    try {
      const waveStart = Atomics.load(ctrl, CTRL.WAVE_START);
      const first = Atomics.load(ctrl, CTRL.REDUCE_FROM);
      const end = Atomics.load(ctrl, CTRL.END);
      const finish = Atomics.load(ctrl, CTRL.FINISH) !== 0;
      // This thread's slice: every thread cuts the same way.
      const cuts = reduceSlices(ws.layout, D, slices, end - first, finish, B * T);
      from = cuts[threadIndex] as number;
      to = cuts[threadIndex + 1] as number;
      const partials: Float64Array[] = [];
      for (let s = first - waveStart; s < end - waveStart; s++) {
        const w = buffers.owners[s] as number;
        partials.push((w === 0 ? buffers.partials : (ctx.regions[w] as Float64Array)).subarray(s * P, (s + 1) * P));
      }
      const folded = reducePartials(buffers.adjoint, partials, first === 0, from, to, ctx.fold);
      if (folded > 0) Atomics.add(ctrl, CTRL.FOLDED, folded);
      if (finish) {
        const bad = finishSlice(buffers.adjoint, buffers, ws.layout, ctx.inputs, B * T, D, from, to);
        if (bad >= 0) recordFirstBad(ctrl, bad);
        const fault = Atomics.load(ctrl, CTRL.FAULT);
        if (fault >> 1 === threadIndex + 1) {
          if ((fault & 1) !== 0) throw new Error(`injected fault in slice ${threadIndex} (test)`);
          recordFirstBad(ctrl, from);
        }
      }
      ok = true;
    } finally {
      // The gradients are written only when every slice is finished, and finite.
      if (write !== GRADIENTS.NONE) ok = meetAll(ctrl, slices, ok) && Atomics.load(ctrl, CTRL.FIRST_BAD) < 0;
    }
    if (write === GRADIENTS.NONE || !ok) return;
    const g = ctx.gradients;
    const adjoint = buffers.adjoint;
    if (write === GRADIENTS.SET) g.set(adjoint.subarray(from, to), from);
    else for (let i = from; i < to; i++) g[i] = (g[i] as number) + (adjoint[i] as number);
  }
}
