/**
 * Entry point of a decoder worker thread. It owns one DecoderPass and runs
 * phases when the calling thread bumps the shared generation counter; all
 * arrays are SharedArrayBuffer views, so nothing is copied per step.
 */
import { isMainThread, parentPort, receiveMessageOnPort, workerData, type MessagePort } from 'node:worker_threads';
import type { DecoderConfig } from '@llmcp/format';
import type { BatchBuffers } from '../internal/batch-reduce.ts';
import { openKernels } from '../kernels/kernel-choice.ts';
import type { KernelSetName } from '../kernels/kernel-set.ts';
import type { WasmMemory } from '../kernels/wasm-assembler.ts';
import { arenaAdjoint, arenaFrontOf, runPhase, useArenas, type PhaseContext, type WorkerArenas } from './batch-pass.ts';
import { COMMAND, CTRL, waitForChange } from './protocol.ts';
import { instantiateCalls, type CallSetMessage } from './shared-calls.ts';

/** What the pool hands to each worker. */
export interface WorkerInit {
  readonly config: DecoderConfig;
  readonly parameters: Float64Array;
  readonly gradients: Float64Array;
  readonly control: Int32Array;
  readonly index: number;
  readonly port: MessagePort;
  /** The decoder's kernel set, which every worker runs. */
  readonly kernels: KernelSetName;
}

/** Buffers sent with a RECONFIGURE phase. */
export interface WorkerBuffers {
  readonly inputs: Int32Array;
  readonly targets: Int32Array;
  readonly buffers: BatchBuffers;
  /** The workers' arena memories (this worker's kernel arena and partial slots are in its own), or null. */
  readonly arenas: WorkerArenas | null;
}

/** An always-zero control slot, used only to sleep briefly while a message is in flight. */
const SLEEP_SLOT = 15;

function describe(e: unknown): { message: string; stack: string } {
  if (e instanceof Error) return { message: e.message, stack: e.stack ?? '' };
  return { message: String(e), stack: '' };
}

/**
 * The message the calling thread posted before issuing the phase (it may still be in flight for a moment).
 * @returns its body.
 * @throws Error with `missing` when none arrives within about a second.
 */
function receive(port: MessagePort, control: Int32Array, missing: string): unknown {
  let message = receiveMessageOnPort(port);
  for (let spins = 0; message === undefined && spins < 1000; spins++) {
    Atomics.wait(control, SLEEP_SLOT, 0, 1);
    message = receiveMessageOnPort(port);
  }
  if (message === undefined) throw new Error(`worker: ${missing}`);
  return message.message;
}

function main(init: WorkerInit): void {
  const { control, port, index } = init;
  let ctx: PhaseContext;
  try {
    ctx = {
      config: init.config,
      kernels: openKernels(init.config, init.kernels),
      parameters: init.parameters,
      gradients: init.gradients,
      control,
      inputs: new Int32Array(0),
      targets: new Int32Array(0),
      buffers: undefined as unknown as BatchBuffers,
      regions: [],
      arenas: null,
      helping: null,
      fold: null,
      idleMs: 0,
      calls: new Map(),
    };
  } catch (e) {
    parentPort?.postMessage({ type: 'error', ...describe(e) });
    return;
  }
  let generation = Atomics.load(control, CTRL.GENERATION);
  parentPort?.postMessage({ type: 'ready' });
  for (;;) {
    generation = waitForChange(control, CTRL.GENERATION, generation);
    const command = Atomics.load(control, CTRL.COMMAND);
    if (command === COMMAND.EXIT) break;
    try {
      if (command === COMMAND.SHARE) {
        const m = receive(port, control, 'SHARE without a call set') as CallSetMessage;
        if ('drop' in m) ctx.calls.delete(m.id);
        else ctx.calls.set(m.id, instantiateCalls(m));
      } else if (command === COMMAND.RECONFIGURE) {
        const b = receive(port, control, 'RECONFIGURE without buffers') as WorkerBuffers;
        ctx.inputs = b.inputs;
        ctx.targets = b.targets;
        ctx.buffers = b.buffers;
        // New memories: the pass opens its arena on its own. The same ones arrive as new objects: keep the first, on which the arena's kernel runs (a partial slot is written in place only through a view of that object's buffer).
        if (b.arenas?.id !== ctx.arenas?.id) {
          useArenas(ctx, b.arenas, index);
          if (b.arenas !== null) ctx.kernels.workspace.adoptArenaMemory({ memory: b.arenas.memories[index] as WasmMemory, front: arenaFrontOf(b.arenas, index) }, b.arenas.positions);
        }
        // Likewise the adjoint: a view of the kept memory object's buffer, which the fold kernel runs on (the view that came is of a copy of the buffer object).
        const adjoint = ctx.arenas === null ? null : arenaAdjoint(ctx.arenas);
        if (adjoint !== null) ctx.buffers = { ...ctx.buffers, adjoint };
      } else {
        runPhase(ctx, index);
      }
    } catch (e) {
      Atomics.store(control, CTRL.ERROR, 1);
      port.postMessage({ type: 'error', ...describe(e) });
    }
    Atomics.add(control, CTRL.DONE, 1);
    Atomics.notify(control, CTRL.DONE);
  }
  port.close();
}

if (!isMainThread && workerData !== null && typeof workerData === 'object' && 'control' in workerData) main(workerData as WorkerInit);
