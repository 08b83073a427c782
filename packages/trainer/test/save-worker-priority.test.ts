/**
 * The background save thread yields the CPU to training (save-priority.ts,
 * save-worker.ts): on Linux `idle` puts its own thread under SCHED_IDLE (when
 * util-linux's `chrt` exists) at nice SAVE_THREAD_NICE, `low` sets the nice
 * value only, `normal` changes nothing — and the training thread is never
 * touched. `LLMCP_SAVE_PRIORITY` selects it (default idle where priorities can
 * be restored, else low); an unknown value is refused.
 */
import { readdirSync } from 'node:fs';
import { startModuleWorker } from '../src/internal/module-worker.ts';
import { describe, expect, it } from 'vitest';
import { hasChrt, scheduleOf } from './helpers/platform.ts';
import { isTrainerError } from '../src/errors.ts';
import { SAVE_PRIORITY_ENV, SAVE_THREAD_NICE, SCHED_IDLE, savePriorityFromEnv, type SavePriority } from '../src/save-priority.ts';
import type { SaveWorkerReady, SaveWorkerResponse } from '../src/save-worker.ts';

/** Linux's SCHED_OTHER policy number. */
const SCHED_OTHER = 0;

/** Nice value and scheduling policy of every thread of this process. */
function threadSchedules(): Map<number, { nice: number; policy: number }> {
  const out = new Map<number, { nice: number; policy: number }>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      out.set(Number(tid), scheduleOf(Number(tid)));
    } catch {
      // a thread that ended meanwhile
    }
  }
  return out;
}


/** Starts a save worker asking for `priority`; returns its ready message, its answer to a malformed request, and the schedules of its thread and the training thread. */
async function startedWorker(priority: SavePriority): Promise<{
  ready: SaveWorkerReady;
  reply: SaveWorkerResponse;
  saveThread: { nice: number; policy: number } | undefined;
  main: { nice: number; policy: number } | undefined;
}> {
  const worker = startModuleWorker(new URL('../src/save-worker.ts', import.meta.url), { priority });
  try {
    const messages: unknown[] = [];
    // The ready message, then the answer to a malformed request (an error), which proves the worker is past its start-up.
    await new Promise<void>((resolve, reject) => {
      worker.on('message', (m) => {
        messages.push(m);
        if (messages.length === 2) resolve();
      });
      worker.once('error', reject);
      worker.postMessage({ id: 1, request: null });
    });
    const ready = messages[0] as SaveWorkerReady;
    const schedules = threadSchedules();
    return { ready, reply: messages[1] as SaveWorkerResponse, saveThread: ready.tid === null ? undefined : schedules.get(ready.tid), main: schedules.get(process.pid) };
  } finally {
    await worker.terminate();
  }
}

describe.skipIf(process.platform !== 'linux')('save thread priority (Linux)', () => {
  const main = threadSchedules().get(process.pid);

  it.skipIf(!hasChrt)('idle: the save thread runs under SCHED_IDLE at the lowered nice value; the training thread is untouched', async () => {
    const { ready, reply, saveThread, main: mainAfter } = await startedWorker('idle');
    expect(ready).toMatchObject({ ready: true, priority: 'idle' });
    expect(reply).toMatchObject({ id: 1, ok: false, priority: 'idle' });
    expect(saveThread).toEqual({ policy: SCHED_IDLE, nice: SAVE_THREAD_NICE });
    expect(mainAfter).toEqual(main);
    expect(main?.policy).toBe(SCHED_OTHER);
  });

  it('low: the nice value only, no idle policy', async () => {
    const { ready, saveThread, main: mainAfter } = await startedWorker('low');
    expect(ready.priority).toBe('low');
    expect(saveThread).toEqual({ policy: SCHED_OTHER, nice: SAVE_THREAD_NICE });
    expect(mainAfter).toEqual(main);
  });

  it('normal: the save thread keeps the training threads’ priority', async () => {
    const { ready, saveThread } = await startedWorker('normal');
    expect(ready.priority).toBe('normal');
    expect(saveThread).toEqual(main);
  });
});

describe(SAVE_PRIORITY_ENV, () => {
  it('selects the priority, defaults to idle, and refuses anything else by name', () => {
    // Unset or empty: idle where a waited-for save's priority can be restored, else low.
    expect(savePriorityFromEnv({}, () => true)).toBe('idle');
    expect(savePriorityFromEnv({ [SAVE_PRIORITY_ENV]: '' }, () => true)).toBe('idle');
    expect(savePriorityFromEnv({}, () => false)).toBe('low');
    expect(savePriorityFromEnv({ [SAVE_PRIORITY_ENV]: 'idle' }, () => false)).toBe('idle');
    for (const p of ['idle', 'low', 'normal'] as const) expect(savePriorityFromEnv({ [SAVE_PRIORITY_ENV]: p })).toBe(p);
    for (const bad of ['IDLE', 'nice', ' idle', '10']) {
      let thrown: unknown = null;
      try {
        savePriorityFromEnv({ [SAVE_PRIORITY_ENV]: bad });
      } catch (e) {
        thrown = e;
      }
      expect(isTrainerError(thrown) && thrown.code === 'TRAINER_CONFIG_INVALID' && thrown.message.includes(SAVE_PRIORITY_ENV) && thrown.message.includes(JSON.stringify(bad))).toBe(true);
    }
  });
});
