/**
 * The save worker: receives a {@link SaveRequest} whose tensors were copied at
 * the step boundary and transferred here, performs the save off the training
 * thread, and reports the result or the error.
 */
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { performSave, type SaveRequest, type SaveResult } from './save.ts';

/**
 * The save thread's nice value (Linux). Training uses every core by default and
 * a multi-threaded step waits for its slowest thread, so a save running at the
 * training threads' priority slows each step it overlaps by up to 2×; at a
 * lower priority it fills the gaps the training threads leave (phase barriers,
 * validation) and takes a core only when one is idle.
 */
export const SAVE_THREAD_NICE = 10;

/**
 * Lowers the calling thread's CPU priority to `nice` (never raises it). On
 * Linux `setpriority` on a thread id changes that thread alone (threads it
 * starts inherit it). Best effort: elsewhere, or when it fails, nothing changes.
 * @param nice - the nice value (0 … 19).
 */
function lowerThreadPriority(nice: number): void {
  if (process.platform !== 'linux') return;
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0 && getPriority(tid) < nice) setPriority(tid, nice);
  } catch {
    // an unchanged priority only costs speed
  }
}

/** Message from the training thread. */
export interface SaveWorkerRequest {
  readonly id: number;
  readonly request: SaveRequest;
}

/** Message back to the training thread. */
export type SaveWorkerResponse =
  | { readonly id: number; readonly ok: true; readonly result: SaveResult }
  | { readonly id: number; readonly ok: false; readonly error: { readonly name: string; readonly message: string; readonly code: string | null; readonly stack: string | null } };

if (parentPort !== null) {
  lowerThreadPriority(SAVE_THREAD_NICE);
  const port = parentPort;
  let queue: Promise<void> = Promise.resolve();
  port.on('message', (message: SaveWorkerRequest) => {
    queue = queue.then(async () => {
      try {
        const result = await performSave(message.request);
        port.postMessage({ id: message.id, ok: true, result } satisfies SaveWorkerResponse);
      } catch (e) {
        const err = e as { name?: string; message?: string; code?: unknown; stack?: string };
        port.postMessage({
          id: message.id,
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
