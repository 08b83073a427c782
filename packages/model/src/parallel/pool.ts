/**
 * Worker threads for the decoder (optional). The calling thread takes part in
 * every phase and then blocks on `Atomics.wait` until the workers are done, so
 * the decoder's API stays synchronous; starting the workers is asynchronous.
 *
 * Loading: the worker module sits next to this one — `dist/worker.js` when
 * published, `src/parallel/worker.ts` when running from sources (tests), in
 * which case the worker is started with the `tsx` loader.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import type { DecoderConfig } from '@llmcp/format';
import { ModelError } from '../errors.ts';
import type { KernelSetName } from '../kernels/kernel-set.ts';
import { runPhase, type PhaseContext, type PhaseRunner } from './batch-pass.ts';
import { COMMAND, CTRL, CTRL_LENGTH, monotonicMs, SPIN_MICROSECONDS, spinWhile } from './protocol.ts';
import type { ThreadTuning } from './tuning.ts';
import type { CallSetMessage } from './shared-calls.ts';
import type { WorkerBuffers, WorkerInit } from './worker.ts';

/** How long a worker may take to start before `create` gives up. */
const START_TIMEOUT_MS = 60_000;

interface WorkerEntry {
  /** A file URL, or bootstrap code evaluated as a CommonJS script. */
  readonly script: URL | string;
  readonly eval: boolean;
  readonly execArgv: string[] | undefined;
}

/**
 * Where the worker module is. Published: `worker.js` next to the bundle. From
 * sources (this file ends in `.ts`): Node 20 does not apply `--import` loader
 * hooks to a worker's entry module, so a tiny bootstrap imports the `.ts`
 * worker through tsx's `tsImport`, with the `@llmcp/source` condition so that
 * workspace packages resolve to their sources like the caller's do.
 */
function workerEntry(): WorkerEntry {
  const here = import.meta.url;
  if (!here.endsWith('.ts')) return { script: new URL('./worker.js', here), eval: false, execArgv: undefined };
  const target = new URL('./worker.ts', here).href;
  const tsxPackage = pathToFileURL(createRequire(here).resolve('tsx/package.json'));
  const api = new URL('./dist/esm/api/index.mjs', tsxPackage).href;
  const code = `import(${JSON.stringify(api)}).then((m) => m.tsImport(${JSON.stringify(target)}, ${JSON.stringify(here)})).catch((e) => { require('node:worker_threads').parentPort.postMessage({ type: 'error', message: String(e && e.stack || e) }); });`;
  const condition = '--conditions=@llmcp/source';
  const execArgv = process.execArgv.includes(condition) ? [...process.execArgv] : [...process.execArgv, condition];
  return { script: code, eval: true, execArgv };
}

/** A started set of worker threads sharing one control block: the multi-thread {@link PhaseRunner}. */
export class ThreadPool implements PhaseRunner {
  readonly control: Int32Array;
  readonly #workers: Worker[];
  readonly #ports: MessagePort[];
  /** The decoder's tuning (read when a phase starts). */
  readonly #tuning: ThreadTuning;
  #closed = false;
  #waitMs = 0;

  private constructor(control: Int32Array, workers: Worker[], ports: MessagePort[], tuning: ThreadTuning) {
    this.control = control;
    this.#workers = workers;
    this.#ports = ports;
    this.#tuning = tuning;
  }

  /** Number of threads taking part in a phase (workers + the caller). */
  get threads(): number {
    return this.#workers.length + 1;
  }

  /**
   * Starts `threads − 1` workers.
   * @param config - decoder configuration.
   * @param arrays - the decoder's parameters and gradients, on SharedArrayBuffers.
   * @param threads - total threads (≥ 2).
   * @param kernels - the kernel set every worker runs (the decoder's).
   * @param tuning - the decoder's tuning (tuning.ts), kept by reference.
   * @returns the started pool.
   * @throws ModelError `MODEL_WORKER_FAILED` when a worker fails to start.
   */
  static async start(config: DecoderConfig, arrays: { readonly parameters: Float64Array; readonly gradients: Float64Array }, threads: number, kernels: KernelSetName, tuning: ThreadTuning = {}): Promise<ThreadPool> {
    const control = new Int32Array(new SharedArrayBuffer(CTRL_LENGTH * 4));
    const entry = workerEntry();
    const workers: Worker[] = [];
    const ports: MessagePort[] = [];
    const started: Promise<void>[] = [];
    for (let index = 1; index < threads; index++) {
      const channel = new MessageChannel();
      const init: WorkerInit = { config: { ...config }, parameters: arrays.parameters, gradients: arrays.gradients, control, index, port: channel.port2, kernels };
      const worker = new Worker(entry.script, {
        eval: entry.eval,
        workerData: init,
        transferList: [channel.port2],
        ...(entry.execArgv === undefined ? {} : { execArgv: entry.execArgv }),
        stdout: false,
        stderr: false,
      });
      workers.push(worker);
      ports.push(channel.port1);
      started.push(
        new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`worker ${index} did not start within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
          const done = (error?: Error): void => {
            clearTimeout(timer);
            worker.off('message', onMessage);
            worker.off('error', onError);
            worker.off('exit', onExit);
            if (error === undefined) resolve();
            else reject(error);
          };
          const onMessage = (m: { type: string; message?: string }): void => {
            if (m.type === 'ready') done();
            else done(new Error(m.message ?? 'worker failed'));
          };
          const onError = (e: Error): void => done(e);
          const onExit = (code: number): void => done(new Error(`worker ${index} exited with code ${code} before it was ready`));
          worker.on('message', onMessage);
          worker.on('error', onError);
          worker.on('exit', onExit);
        }),
      );
    }
    try {
      await Promise.all(started);
    } catch (cause) {
      await Promise.all(workers.map((w) => w.terminate()));
      for (const p of ports) p.close();
      throw new ModelError('MODEL_WORKER_FAILED', `could not start ${threads - 1} decoder worker thread(s): ${(cause as Error).message}`, { cause });
    }
    for (const w of workers) w.unref();
    for (const p of ports) p.unref();
    return new ThreadPool(control, workers, ports, tuning);
  }

  /** Milliseconds the calling thread waited for the workers after its share of a phase, so far. */
  get waitMs(): number {
    return this.#waitMs;
  }

  /**
   * Sends new batch buffers to every worker (a RECONFIGURE phase).
   * @param ctx - the caller's context holding the new buffers.
   */
  reconfigure(ctx: PhaseContext): void {
    const message: WorkerBuffers = { inputs: ctx.inputs, targets: ctx.targets, buffers: ctx.buffers, arenas: ctx.arenas };
    this.#send(message, COMMAND.RECONFIGURE);
  }

  /**
   * Sends a call set to add or drop to every worker (a SHARE phase).
   * @param message - the set.
   * @throws ModelError `MODEL_WORKER_FAILED` when a worker cannot instantiate it.
   */
  share(message: CallSetMessage): void {
    this.#send(message, COMMAND.SHARE);
  }

  /** Posts `message` to every worker and runs `command`, with which each reads it. */
  #send(message: unknown, command: number): void {
    for (const p of this.#ports) p.postMessage(message);
    this.#issue(command);
    this.#wait();
  }

  /**
   * Runs one phase on every thread (the caller included) and waits for all.
   * @param ctx - the caller's context.
   * @param command - the phase command (fields already stored in the control block).
   * @throws ModelError `MODEL_WORKER_FAILED` when a worker reported an error.
   */
  run(ctx: PhaseContext, command: number): void {
    this.#issue(command);
    let callerError: unknown;
    try {
      runPhase(ctx, 0);
    } catch (e) {
      callerError = e;
    }
    const clock = this.#tuning.clock ?? monotonicMs;
    const done = clock();
    this.#wait();
    this.#waitMs += clock() - done;
    if (callerError !== undefined) throw callerError;
  }

  #issue(command: number): void {
    if (this.#closed) throw new ModelError('MODEL_CLOSED', 'the decoder was closed; its worker threads are gone');
    const c = this.control;
    Atomics.store(c, CTRL.THREADS, this.threads);
    Atomics.store(c, CTRL.SPIN_US, this.#tuning.spinMicroseconds ?? SPIN_MICROSECONDS);
    Atomics.store(c, CTRL.COMMAND, command);
    Atomics.store(c, CTRL.DONE, 0);
    Atomics.store(c, CTRL.ERROR, 0);
    Atomics.add(c, CTRL.GENERATION, 1);
    Atomics.notify(c, CTRL.GENERATION);
  }

  #wait(): void {
    const c = this.control;
    const n = this.#workers.length;
    for (;;) {
      const done = Atomics.load(c, CTRL.DONE);
      if (done >= n) break;
      if (spinWhile(c, CTRL.DONE, done)) continue;
      Atomics.wait(c, CTRL.DONE, done);
    }
    if (Atomics.load(c, CTRL.ERROR) !== 0) {
      const messages: string[] = [];
      for (const p of this.#ports) {
        for (let m = receiveMessageOnPort(p); m !== undefined; m = receiveMessageOnPort(p)) {
          const body = m.message as { message?: string; stack?: string };
          messages.push(body.stack || body.message || 'unknown error');
        }
      }
      throw new ModelError('MODEL_WORKER_FAILED', `a decoder worker thread failed: ${messages.join('\n') || 'no details'}`);
    }
  }

  /** Stops the workers. @returns when they have exited. */
  async close(): Promise<void> {
    if (this.#closed) return;
    const c = this.control;
    Atomics.store(c, CTRL.COMMAND, COMMAND.EXIT);
    Atomics.add(c, CTRL.GENERATION, 1);
    Atomics.notify(c, CTRL.GENERATION);
    this.#closed = true;
    await Promise.all(this.#workers.map((w) => w.terminate()));
    for (const p of this.#ports) p.close();
  }
}
