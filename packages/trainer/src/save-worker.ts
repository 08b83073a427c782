/**
 * The save worker: receives a {@link SaveRequest} whose tensors were copied at
 * the step boundary and transferred here, performs the save off the training
 * thread, and reports the result or the error.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { performSave, type SaveRequest, type SaveResult } from './save.ts';
import { currentThreadId, isSavePriority, lowerThreadPriority, SCHED_IDLE, threadSchedule, type SavePriority } from './save-priority.ts';

/** Message from the training thread. */
export interface SaveWorkerRequest {
  readonly id: number;
  readonly request: SaveRequest;
}

/** Message back to the training thread; `priority` is what the save thread runs at. */
export type SaveWorkerResponse =
  | { readonly id: number; readonly priority: SavePriority; readonly ok: true; readonly result: SaveResult }
  | {
      readonly id: number;
      readonly priority: SavePriority;
      readonly ok: false;
      readonly error: { readonly name: string; readonly message: string; readonly code: string | null; readonly stack: string | null };
    };

/** The worker's first message: its thread id (null off Linux) and the priority it reached. */
export interface SaveWorkerReady {
  readonly ready: true;
  readonly tid: number | null;
  readonly priority: SavePriority;
}

/** What the training thread passes when it starts the worker. */
export interface SaveWorkerData {
  readonly priority: SavePriority;
}

if (parentPort !== null) {
  const requested = (workerData as Partial<SaveWorkerData> | null)?.priority;
  const priority = lowerThreadPriority(isSavePriority(requested) ? requested : 'low');
  const port = parentPort;
  port.postMessage({ ready: true, tid: currentThreadId(), priority } satisfies SaveWorkerReady);
  // The training thread gives a save it waits for the training threads' priority back (save-priority.ts). The
  // thread drops to idle again before it answers: the next save cannot be posted, and so not restored, before that.
  const idleAgain = (): void => {
    try {
      if (priority === 'idle' && threadSchedule().policy !== SCHED_IDLE) lowerThreadPriority('idle');
    } catch {
      // no /proc: nothing was restored either
    }
  };
  let queue: Promise<void> = Promise.resolve();
  port.on('message', (message: SaveWorkerRequest) => {
    queue = queue.then(async () => {
      try {
        const result = await performSave(message.request);
        idleAgain();
        port.postMessage({ id: message.id, priority, ok: true, result } satisfies SaveWorkerResponse);
      } catch (e) {
        const err = e as { name?: string; message?: string; code?: unknown; stack?: string };
        idleAgain();
        port.postMessage({
          id: message.id,
          priority,
          ok: false,
          error: {
            name: String(err.name ?? 'Error'),
            message: String(err.message ?? e),
            code: typeof err.code === 'string' ? err.code : null,
            stack: typeof err.stack === 'string' ? err.stack : null,
          },
        } satisfies SaveWorkerResponse);
      }
    });
  });
}
