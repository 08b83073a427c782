/**
 * The background save thread yields the CPU to training (save-priority.ts,
 * save-worker.ts): on Linux `idle` puts its own thread under SCHED_IDLE (when
 * util-linux's `chrt` exists) at nice SAVE_THREAD_NICE, `low` sets the nice
 * value only, `normal` changes nothing — and the training thread is never
 * touched. `LLMCP_SAVE_PRIORITY` selects it; an unknown value is refused.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { hasChrt } from './helpers/platform.ts';
import { isTrainerError } from '../src/errors.ts';
import { SAVE_PRIORITY_ENV, SAVE_THREAD_NICE, SCHED_IDLE, savePriorityFromEnv, scheduleOfStat, type SavePriority } from '../src/save-priority.ts';
import type { SaveWorkerResponse } from '../src/save-worker.ts';

/** Linux's SCHED_OTHER policy number. */
const SCHED_OTHER = 0;

/** Nice value and scheduling policy of every thread of this process. */
function threadSchedules(): Map<number, { nice: number; policy: number }> {
  const out = new Map<number, { nice: number; policy: number }>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      out.set(Number(tid), scheduleOfStat(readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')));
    } catch {
      // a thread that ended meanwhile
    }
  }
  return out;
}


/** Starts a save worker asking for `priority`, and returns its answer to a malformed request with the threads it added. */
async function startedWorker(priority: SavePriority): Promise<{ reply: SaveWorkerResponse; added: { nice: number; policy: number }[]; main: { nice: number; policy: number } | undefined }> {
  const before = threadSchedules();
  const tsx = import.meta.resolve('tsx/esm/api');
  const entry = new URL('../src/save-worker.ts', import.meta.url).href;
  const worker = new Worker(`const api = await import(${JSON.stringify(tsx)}); api.register(); await import(${JSON.stringify(entry)});`, {
    eval: true,
    execArgv: ['--conditions=@llmcp/source'],
    workerData: { priority },
  });
  try {
    // A malformed request is answered with an error, which proves the worker is past its start-up.
    const reply = await new Promise<SaveWorkerResponse>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
      worker.postMessage({ id: 1, request: null });
    });
    const after = threadSchedules();
    return { reply, added: [...after].filter(([tid]) => !before.has(tid)).map(([, s]) => s), main: after.get(process.pid) };
  } finally {
    await worker.terminate();
  }
}

describe.skipIf(process.platform !== 'linux')('save thread priority (Linux)', () => {
  const main = threadSchedules().get(process.pid);

  it.skipIf(!hasChrt)('idle: the save thread runs under SCHED_IDLE at the lowered nice value; the training thread is untouched', async () => {
    const { reply, added, main: mainAfter } = await startedWorker('idle');
    expect(reply.ok).toBe(false);
    expect(reply.priority).toBe('idle');
    expect(added.filter((s) => s.policy === SCHED_IDLE && s.nice === SAVE_THREAD_NICE).length).toBeGreaterThanOrEqual(1);
    expect(mainAfter).toEqual(main);
    expect(main?.policy).toBe(SCHED_OTHER);
  });

  it('low: the nice value only, no idle policy', async () => {
    const { reply, added, main: mainAfter } = await startedWorker('low');
    expect(reply.priority).toBe('low');
    expect(added.filter((s) => s.nice === SAVE_THREAD_NICE).length).toBeGreaterThanOrEqual(1);
    expect(added.some((s) => s.policy === SCHED_IDLE)).toBe(false);
    expect(mainAfter).toEqual(main);
  });

  it('normal: the save thread keeps the training threads’ priority', async () => {
    const { reply, added } = await startedWorker('normal');
    expect(reply.priority).toBe('normal');
    expect(added.some((s) => s.policy === SCHED_IDLE || s.nice === SAVE_THREAD_NICE)).toBe(false);
  });
});

describe(SAVE_PRIORITY_ENV, () => {
  it('selects the priority, defaults to idle, and refuses anything else by name', () => {
    expect(savePriorityFromEnv({})).toBe('idle');
    expect(savePriorityFromEnv({ [SAVE_PRIORITY_ENV]: '' })).toBe('idle');
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
