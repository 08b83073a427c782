/**
 * Worker side of save-priority-contention.ts: lowers its own thread's priority
 * the way the save worker does (save-priority.ts), reports what it reached,
 * then keeps one core busy in bursts (a flag in shared memory says when),
 * until told to stop.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { lowerThreadPriority, type SavePriority } from '../src/save-priority.ts';

interface HogData {
  readonly priority: SavePriority;
  /** [0]: 1 while a burst runs; [1]: 1 = stop. */
  readonly flags: Int32Array;
  readonly busyMs: number;
  readonly gapMs: number;
}

if (parentPort !== null) {
  const data = workerData as HogData;
  parentPort.postMessage({ reached: lowerThreadPriority(data.priority) });
  let x = 0;
  for (;;) {
    Atomics.store(data.flags, 0, 1);
    const t0 = performance.now();
    while (performance.now() - t0 < data.busyMs) x = Math.sqrt(x + 1);
    Atomics.store(data.flags, 0, 0);
    if (Atomics.wait(data.flags, 1, 0, data.gapMs) !== 'timed-out' || Atomics.load(data.flags, 1) === 1) break;
  }
  parentPort.postMessage({ done: x > 0 });
}
