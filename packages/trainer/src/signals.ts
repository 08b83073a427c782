/**
 * Stop and checkpoint requests. Process signal handlers only set flags; the
 * training loop checks them after every step and the evaluation loop before
 * every evaluation batch.
 *
 * - SIGTERM, SIGINT (or an `AbortSignal`): finish the current step (or abandon
 *   the current evaluation), write a checkpoint, return.
 * - SIGUSR1: write a checkpoint at the end of the current step and continue.
 *   (Node reserves SIGUSR1 for its inspector; installing this handler is intended.)
 * - A second SIGINT exits at once with status 130; atomic publication makes
 *   that safe (an unfinished save leaves only a `.tmp-` directory). If the
 *   save worker is stuck in a system call, the process ends by SIGINT's
 *   default action instead (see {@link exitAtOnce}): shells report 130 too.
 */

/** Why a run was asked to stop. */
export type StopReason = 'SIGTERM' | 'SIGINT' | 'abort';

/** Flags shared by the training loop and the signal handlers. */
export class RunControl {
  #stop: StopReason | null = null;
  #checkpoint = false;
  #handlers: { signal: NodeJS.Signals; handler: () => void }[] = [];
  #abort: { signal: AbortSignal; handler: () => void } | null = null;
  /** Called (synchronously, from the handler) when a request arrives; for progress output only. */
  onRequest: ((what: StopReason | 'SIGUSR1') => void) | null = null;

  /**
   * The pending stop request, if any.
   *
   * @returns the reason of the first stop request, or null.
   */
  get stopRequested(): StopReason | null {
    return this.#stop;
  }

  /**
   * Requests a stop (idempotent; the first reason wins).
   *
   * @param reason - what asked for the stop.
   */
  requestStop(reason: StopReason): void {
    if (this.#stop === null) this.#stop = reason;
    this.onRequest?.(reason);
  }

  /** Requests a checkpoint at the end of the current step. */
  requestCheckpoint(): void {
    this.#checkpoint = true;
    this.onRequest?.('SIGUSR1');
  }

  /**
   * Returns and clears the checkpoint request.
   *
   * @returns whether a checkpoint was requested since the last call.
   */
  takeCheckpointRequest(): boolean {
    const r = this.#checkpoint;
    this.#checkpoint = false;
    return r;
  }

  /**
   * Follows an `AbortSignal`: aborting it requests a stop.
   *
   * @param signal - the signal.
   */
  followAbortSignal(signal: AbortSignal): void {
    if (signal.aborted) {
      this.requestStop('abort');
      return;
    }
    const handler = (): void => this.requestStop('abort');
    signal.addEventListener('abort', handler, { once: true });
    this.#abort = { signal, handler };
  }

  /**
   * Installs SIGTERM, SIGINT and SIGUSR1 handlers on the process.
   *
   * @param exit - what a second SIGINT calls (default `process.exit(130)`).
   */
  installProcessHandlers(exit: (code: number) => void = (code) => process.exit(code)): void {
    const add = (signal: NodeJS.Signals, handler: () => void): void => {
      process.on(signal, handler);
      this.#handlers.push({ signal, handler });
    };
    add('SIGTERM', () => this.requestStop('SIGTERM'));
    add('SIGINT', () => {
      if (this.#stop === 'SIGINT') exit(130);
      else this.requestStop('SIGINT');
    });
    add('SIGUSR1', () => this.requestCheckpoint());
  }

  /** Removes every handler this instance installed. */
  dispose(): void {
    for (const { signal, handler } of this.#handlers) process.off(signal, handler);
    this.#handlers = [];
    if (this.#abort !== null) this.#abort.signal.removeEventListener('abort', this.#abort.handler);
    this.#abort = null;
  }
}

/** How long a second Ctrl-C waits for the save worker to stop before ending the process by SIGINT itself. */
const WORKER_STOP_MS = 250;

/**
 * Ends the process now, for a second Ctrl-C, with status `code`.
 * `process.exit` joins worker threads, and a save worker blocked in a
 * file-system call (a hung disk, a network mount) never returns to be joined.
 * So with a save in flight the worker is terminated first; if it has not
 * stopped within a quarter second, the process restores SIGINT's default
 * action and re-raises it: the kernel ends every thread at once, and the
 * parent sees death by SIGINT (status 130 in a shell).
 *
 * @param code - the exit status (130).
 * @param stopWorker - stops the save worker (resolves when it has stopped), or null when no save is in flight.
 */
export function exitAtOnce(code: number, stopWorker: (() => Promise<void>) | null): void {
  if (stopWorker === null) {
    process.exit(code);
    return;
  }
  const byDefaultAction = setTimeout(() => {
    process.removeAllListeners('SIGINT');
    process.kill(process.pid, 'SIGINT');
  }, WORKER_STOP_MS);
  const exit = (): void => {
    clearTimeout(byDefaultAction);
    process.exit(code);
  };
  stopWorker().then(exit, exit);
}

/**
 * Yields to the event loop so that pending signal handlers run before the
 * caller goes on. Signals are read in the loop's poll phase, and one
 * `setImmediate` is not enough to cross it: called from a continuation of an
 * I/O callback (e.g. after an asynchronous save), the immediate runs in the
 * same iteration's check phase, before the next poll. Two chained
 * immediates always have a poll phase between them, so a signal that arrived
 * before this call is handled before it resolves.
 *
 * @returns a promise resolved once a poll phase has run.
 */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}
