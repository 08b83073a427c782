/**
 * One rule for creating a run directory (internal/new-run-directory.ts),
 * used by trainRun and forkRun: refused before any work when a run is
 * there, a file is in the way, or the folder lies inside another run; and
 * checked again once the lock is held, so a creator that finds another's run
 * there (the other won the race) changes nothing. The cross-process races
 * run on real processes in tools/reliability/test/creator-races.test.ts.
 */
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { setNewRunHooks } from '../src/internal/new-run-directory.ts';
import { forkRun } from '../src/pivot.ts';
import { readRunManifest } from '../src/run-manifest.ts';
import { trainRun } from '../src/run.ts';
import { ch33 } from './helpers/configs.ts';
import { runDirectory, tempDir, trainedRun } from './helpers/run-fixture.ts';
import { snapshotTree } from './helpers/run-files.ts';

let source = '';
let other = '';
beforeAll(async () => {
  source = await trainedRun(ch33(), 'source');
  other = await trainedRun(ch33(), 'other');
});
afterEach(() => setNewRunHooks({}));

/** Another creator wins the race at the hook: it publishes a whole run (a copy of `other`) in the directory. */
function anotherCreatorWins(): void {
  setNewRunHooks({ beforeLock: (dir) => cpSync(other, dir, { recursive: true }) });
}

describe('creating a run directory: the check after the lock', () => {
  it('a fork whose target becomes another run between its mkdir and its lock refuses (TRAINER_RUN_INVALID) and changes nothing there', async () => {
    const target = runDirectory('fork');
    anotherCreatorWins();
    const e = await forkRun(source, target, { slot: 'latest' }).catch((x: unknown) => x);
    expect(e).toMatchObject({ code: 'TRAINER_RUN_INVALID', message: expect.stringContaining('created concurrently') as unknown });
    expect(snapshotTree(target)).toEqual(snapshotTree(other));
    expect(readRunManifest(target)?.runId).toBe(readRunManifest(other)?.runId);
    // The source records no fork that did not happen.
    expect(readRunManifest(source)?.events.map((x) => x.event)).not.toContain('forked-to');
  });

  it('a train whose directory becomes another run between its mkdir and its lock refuses and changes nothing there', async () => {
    const dir = runDirectory('train');
    anotherCreatorWins();
    const e = await trainRun({ runDir: dir, config: ch33(), saveMode: 'inline' }).catch((x: unknown) => x);
    expect(e).toMatchObject({ code: 'TRAINER_RUN_INVALID' });
    expect(snapshotTree(dir)).toEqual(snapshotTree(other));
  });
});

describe('creating a run directory: refused before any work', () => {
  it('a new run or fork target inside another run directory (at any depth, marked by run.json, run.lock or checkpoints/) is refused, nothing created', async () => {
    for (const marker of ['run.json', 'run.lock', 'checkpoints']) {
      const outer = tempDir();
      if (marker === 'checkpoints') mkdirSync(path.join(outer, marker));
      else writeFileSync(path.join(outer, marker), '{}');
      const before = snapshotTree(outer);
      for (const inner of [path.join(outer, 'nested'), path.join(outer, 'a', 'b', 'nested')]) {
        const t = await trainRun({ runDir: inner, config: ch33(), saveMode: 'inline' }).catch((x: unknown) => x);
        expect(t).toMatchObject({ code: 'TRAINER_RUN_INVALID', message: expect.stringContaining('lies inside the run directory') as unknown });
        const f = await forkRun(source, inner).catch((x: unknown) => x);
        expect(f).toMatchObject({ code: 'TRAINER_RUN_INVALID', message: expect.stringContaining('lies inside the run directory') as unknown });
      }
      expect(snapshotTree(outer)).toEqual(before);
    }
  });

  it('a directory holding only a run.lock of an unknown owner (a run being created) is not taken: TRAINER_RUN_LOCKED, nothing written', async () => {
    const dir = runDirectory('locked');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'run.lock'), '{}');
    const before = snapshotTree(dir);
    const e = await trainRun({ runDir: dir, config: ch33(), saveMode: 'inline' }).catch((x: unknown) => x);
    expect(e).toMatchObject({ code: 'TRAINER_RUN_LOCKED' });
    expect(snapshotTree(dir)).toEqual(before);
  });
});
