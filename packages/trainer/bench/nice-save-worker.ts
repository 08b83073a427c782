/**
 * Bench-only experiment (Linux): runs the trainer's background save worker at
 * a lower CPU priority, without touching the trainer's sources. It wraps
 * `node:worker_threads`' `Worker` so that a worker whose eval'd bootstrap
 * loads `save-worker.ts` first sets the nice value of its own thread
 * (`/proc/thread-self` names the thread id; on Linux `setpriority` on a thread
 * id changes only that thread). Model worker threads are left alone.
 *
 * This only shows what a priority change in the trainer would buy; it is not
 * how the trainer should do it (see the bench report).
 */
import { createRequire, syncBuiltinESMExports } from 'node:module';

/**
 * Makes every save worker started from now on lower its own thread priority.
 *
 * @param nice - the nice value for the save worker's thread (0 … 19; higher = lower priority).
 * @returns nothing; throws when the platform has no `/proc/thread-self`.
 */
export function niceSaveWorkers(nice: number): void {
  if (process.platform !== 'linux') throw new Error('--nice-save-worker needs Linux (/proc/thread-self)');
  const require = createRequire(import.meta.url);
  const threads = require('node:worker_threads') as typeof import('node:worker_threads');
  const Original = threads.Worker;
  const prelude = `{ const os = await import('node:os'); const fs = await import('node:fs'); const tid = Number(fs.readlinkSync('/proc/thread-self').split('/').pop()); os.setPriority(tid, ${String(nice)}); }`;
  class NicedWorker extends Original {
    constructor(script: string | URL, options?: import('node:worker_threads').WorkerOptions) {
      const isSaveWorker = options?.eval === true && typeof script === 'string' && script.includes('save-worker');
      super(isSaveWorker ? `${prelude} ${script as string}` : script, options);
    }
  }
  threads.Worker = NicedWorker;
  syncBuiltinESMExports();
}
