/**
 * The background save thread runs at a lower CPU priority than training
 * (save-worker.ts, SAVE_THREAD_NICE): on Linux its own thread's nice value is
 * raised, the training thread's is not.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { SAVE_THREAD_NICE } from '../src/save-worker.ts';

/** Nice value of every thread of this process (field 19 of /proc/self/task/<tid>/stat). */
function threadNices(): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces: split after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.set(Number(tid), Number(fields[16]));
  }
  return out;
}

describe.skipIf(process.platform !== 'linux')('save thread priority', () => {
  it('the save worker lowers its own thread to SAVE_THREAD_NICE and leaves the training thread alone', async () => {
    const before = threadNices();
    const tsx = import.meta.resolve('tsx/esm/api');
    const entry = new URL('../src/save-worker.ts', import.meta.url).href;
    const worker = new Worker(`const api = await import(${JSON.stringify(tsx)}); api.register(); await import(${JSON.stringify(entry)});`, {
      eval: true,
      execArgv: ['--conditions=@llmcp/source'],
    });
    try {
      // A malformed request is answered with an error, which proves the worker is past its start-up.
      const reply = await new Promise<{ ok: boolean }>((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
        worker.postMessage({ id: 1, request: null });
      });
      expect(reply.ok).toBe(false);
      const after = threadNices();
      const lowered = [...after].filter(([tid, nice]) => !before.has(tid) && nice === SAVE_THREAD_NICE);
      expect(lowered.length).toBeGreaterThanOrEqual(1);
      expect(after.get(process.pid)).toBe(before.get(process.pid));
      expect(SAVE_THREAD_NICE).toBeGreaterThan(before.get(process.pid) ?? 0);
    } finally {
      await worker.terminate();
    }
  });
});
