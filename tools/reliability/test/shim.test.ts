/**
 * The fault shim itself, on a small node child (test/fixtures/fs-ops.mjs)
 * doing one file-system step after another: fail, short, kill, kill-after,
 * pause/release, nth counting, the log, the fd → path map across the libuv
 * thread pool and worker threads.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startChild } from '../src/proc.ts';
import { buildFaultShim, createPausePoint, exactPath, formatRule, readShimLog, shimEnv, type FaultRule } from '../src/shim.ts';

const shim = buildFaultShim();
if ('skip' in shim) console.warn(`[reliability] ${shim.skip}`);
const FS_OPS = fileURLToPath(new URL('./fixtures/fs-ops.mjs', import.meta.url));

type Step = Record<string, unknown> & { do: string };
interface StepResult {
  readonly i: number;
  readonly ok: boolean;
  readonly code?: string;
  readonly value?: unknown;
}

function ops(steps: Step[], rules: FaultRule[], log?: string): ReturnType<typeof startChild> {
  return startChild(process.execPath, [FS_OPS, JSON.stringify(steps)], { env: shimEnv(rules, log === undefined ? {} : { log }), timeoutMs: 20_000 });
}

async function results(child: ReturnType<typeof startChild>): Promise<{ steps: StepResult[]; code: number | null; signal: string | null }> {
  const exit = await child.exited;
  expect(exit.timedOut, 'child hung').toBe(false);
  const steps = exit.stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as StepResult);
  return { steps, code: exit.code, signal: exit.signal };
}

describe.skipIf('skip' in shim)('fault shim', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'llmcp-shim-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const p = (name: string): string => path.join(dir, name);

  it('formats rules with %-escapes for the separators', () => {
    expect(formatRule({ op: ['open', 'rename'], path: '/a,b;c=d%', nth: '2+', action: 'fail:EIO' })).toBe('op=open|rename,path=/a%2cb%3bc%3dd%25,nth=2+,action=fail:EIO');
  });

  it('fails only the N-th matching call with the given errno, and counts only matching calls', async () => {
    const r = await results(
      ops(
        [
          { do: 'open', p: p('other') },
          { do: 'open', p: p('target') },
          { do: 'open', p: p('target') },
          { do: 'open', p: p('target') },
        ],
        [{ op: 'open', path: '/target', nth: 2, action: 'fail:EACCES' }],
      ),
    );
    expect(r.steps.map((s) => s.code ?? 'ok')).toEqual(['ok', 'ok', 'EACCES', 'ok']);
  });

  it('fails every call from the N-th on with N+, and matches globs on the whole path', async () => {
    const r = await results(
      ops(
        [1, 2, 3, 4].map((n) => ({ do: 'write', p: p(`f${n}.bin`), chunks: ['abc'] })),
        [{ op: 'write', path: `${dir}/f*.bin`, nth: '3+', action: 'fail:ENOSPC' }],
      ),
    );
    expect(r.steps.map((s) => s.code ?? 'ok')).toEqual(['ok', 'ok', 'ENOSPC', 'ENOSPC']);
  });

  it('maps fds to paths for write and fsync, on the main thread, the libuv thread pool and worker threads', async () => {
    const r = await results(
      ops(
        [
          { do: 'write', p: p('sync'), chunks: ['x'], fsync: true },
          { do: 'asyncWrite', p: p('async'), data: 'y' },
          { do: 'workerWrite', p: p('worker'), data: 'z' },
          { do: 'write', p: p('clean'), chunks: ['ok'], fsync: true },
        ],
        [
          { op: 'fsync', path: '/sync', action: 'fail:EIO' },
          { op: 'fsync', path: '/async', action: 'fail:EROFS' },
          { op: 'write', path: '/worker', action: 'fail:EIO' },
        ],
      ),
    );
    expect(r.steps.map((s) => s.code ?? 'ok')).toEqual(['EIO', 'EROFS', 'EIO', 'ok']);
    expect(readFileSync(p('clean'), 'utf8')).toBe('ok');
  });

  it('short writes half of the buffer; followed by ENOSPC (a disk filling up) the writer sees the short count', async () => {
    // libuv completes a short write by writing the rest, so the short count reaches JS only when the retry fails.
    const r = await results(
      ops(
        [
          { do: 'write', p: p('half'), chunks: ['0123456789', 'ab'] },
          { do: 'write', p: p('half2'), chunks: ['0123456789'] },
        ],
        [
          { op: 'write', path: '/half', nth: 1, action: 'short' },
          { op: 'write', path: '/half', nth: 2, action: 'fail:ENOSPC' },
          { op: 'write', path: '/half2', nth: 1, action: 'short' },
        ],
      ),
    );
    expect(r.steps[0]).toMatchObject({ ok: true, value: [5, 2] });
    expect(readFileSync(p('half'), 'utf8')).toBe('01234ab');
    expect(r.steps[1]).toMatchObject({ ok: true, value: [10] });
    expect(readFileSync(p('half2'), 'utf8')).toBe('0123456789');
  });

  it('kill SIGKILLs before the call: the rename never happens and later steps never run', async () => {
    const r = await results(
      ops(
        [
          { do: 'open', p: p('a') },
          { do: 'rename', a: p('a'), b: p('b') },
          { do: 'open', p: p('c') },
        ],
        [{ op: 'rename', path: p('b'), nth: 1, action: 'kill' }],
      ),
    );
    expect(r.signal).toBe('SIGKILL');
    expect(r.steps).toHaveLength(1);
    expect([existsSync(p('a')), existsSync(p('b')), existsSync(p('c'))]).toEqual([true, false, false]);
  });

  it('kill-after makes the call, then SIGKILLs', async () => {
    const r = await results(
      ops(
        [
          { do: 'open', p: p('a') },
          { do: 'asyncRename', a: p('a'), b: p('b') },
          { do: 'open', p: p('c') },
        ],
        [{ op: 'rename', path: p('a'), nth: 1, action: 'kill-after' }],
      ),
    );
    expect(r.signal).toBe('SIGKILL');
    expect([existsSync(p('a')), existsSync(p('b')), existsSync(p('c'))]).toEqual([false, true, false]);
  });

  it('pause-after holds the process right after the call until released, then it continues', async () => {
    const pause = createPausePoint();
    try {
      const child = ops(
        [
          { do: 'mkdir', p: p('d') },
          { do: 'open', p: p('d/after') },
        ],
        [{ op: 'mkdir', path: p('d'), nth: 1, action: pause.after }],
      );
      const report = await pause.waitReached({ deadlineMs: 10_000, alive: child.alive });
      expect(report).toMatchObject({ op: 'mkdir', func: 'mkdir', path: p('d'), when: 'after', pid: child.pid });
      expect(statSync(p('d')).isDirectory()).toBe(true);
      expect(existsSync(p('d/after'))).toBe(false);
      expect(child.alive()).toBe(true);
      await pause.release({ alive: child.alive });
      const r = await results(child);
      expect(r.code).toBe(0);
      expect(r.steps.every((s) => s.ok)).toBe(true);
      expect(existsSync(p('d/after'))).toBe(true);
    } finally {
      pause.dispose();
    }
  });

  it('pause (before) with N+ pauses at every matching call from the N-th, one at a time', async () => {
    const pause = createPausePoint();
    try {
      const child = ops(
        ['x', 'y', 'z'].map((n) => ({ do: 'open', p: p(n) })),
        [{ op: 'open', path: dir, nth: '2+', action: pause.before }],
      );
      for (const n of ['y', 'z']) {
        const report = await pause.waitReached({ deadlineMs: 10_000, alive: child.alive });
        expect(report).toMatchObject({ op: 'open', path: p(n), when: 'before' });
        expect(existsSync(p(n))).toBe(false);
        await pause.release({ alive: child.alive });
      }
      expect((await results(child)).code).toBe(0);
    } finally {
      pause.dispose();
    }
  });

  it('ok=1 counts only calls that succeeded, and ^ matches the exact path only', async () => {
    const r = await results(
      ops(
        [
          { do: 'mkdir', p: p('x') },
          { do: 'open', p: p('x/inner') },
          { do: 'open', p: p('x'), flags: 'r' },
          { do: 'open', p: p('y'), flags: 'r' },
          { do: 'open', p: p('y'), flags: 'w' },
          { do: 'open', p: p('z') },
        ],
        [
          { op: 'open', path: exactPath(p('x')), nth: 1, action: 'fail:EPERM' },
          { op: 'open', path: p('y'), nth: 1, ok: true, action: 'kill-after' },
        ],
      ),
    );
    expect(r.signal).toBe('SIGKILL');
    expect(r.steps.map((s) => s.code ?? 'ok')).toEqual(['ok', 'ok', 'EPERM', 'ENOENT']);
    expect([existsSync(p('y')), existsSync(p('z'))]).toEqual([true, false]);
  });

  it('logs every matching call of every class with its libc function and result', async () => {
    const log = p('calls.log');
    const work = p('w');
    const r = await results(
      ops(
        [
          { do: 'mkdir', p: work },
          { do: 'write', p: `${work}/f`, chunks: ['abc'], fsync: true },
          { do: 'link', a: `${work}/f`, b: `${work}/g` },
          { do: 'rename', a: `${work}/g`, b: `${work}/h` },
          { do: 'unlink', p: `${work}/h` },
          { do: 'asyncWrite', p: `${work}/k`, data: 'q' },
          { do: 'unlink', p: `${work}/missing` },
        ],
        [{ op: 'any', path: work, action: 'log' }],
        log,
      ),
    );
    expect(r.steps.map((s) => s.code ?? 'ok')).toEqual(['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ENOENT']);
    const calls = readShimLog(log).map((c) => `${c.op}:${path.relative(dir, c.path)}${c.path2 === '' ? '' : `>${path.relative(dir, c.path2)}`}:${c.result < 0 ? c.errno : 'ok'}`);
    expect(calls).toEqual([
      'mkdir:w:ok',
      'open:w/f:ok',
      'write:w/f:ok',
      'fsync:w/f:ok',
      'link:w/f>w/g:ok',
      'rename:w/g>w/h:ok',
      'unlink:w/h:ok',
      'open:w/k:ok',
      'write:w/k:ok',
      'fsync:w/k:ok',
      `unlink:w/missing:${os.constants.errno.ENOENT}`,
    ]);
  });
});
