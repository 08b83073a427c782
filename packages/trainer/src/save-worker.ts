/**
 * The save worker: receives a {@link SaveRequest} whose tensors were copied at
 * the step boundary and transferred here, performs the save off the training
 * thread, and reports the result or the error.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { performSave, type SaveRequest, type SaveResult } from './save.ts';
import { isSavePriority, lowerThreadPriority, type SavePriority } from './save-priority.ts';

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

/** What the training thread passes when it starts the worker. */
export interface SaveWorkerData {
  readonly priority: SavePriority;
}

if (parentPort !== null) {
  const requested = (workerData as Partial<SaveWorkerData> | null)?.priority;
  const priority = lowerThreadPriority(isSavePriority(requested) ? requested : 'idle');
  const port = parentPort;
  let queue: Promise<void> = Promise.resolve();
  port.on('message', (message: SaveWorkerRequest) => {
    queue = queue.then(async () => {
      try {
        const result = await performSave(message.request);
        port.postMessage({ id: message.id, priority, ok: true, result } satisfies SaveWorkerResponse);
      } catch (e) {
        const err = e as { name?: string; message?: string; code?: unknown; stack?: string };
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
