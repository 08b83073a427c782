/**
 * Reading a run that is being trained (defect 7): a live run replaces its
 * slots by renames, and a read that straddles one pairs the old job.json
 * with the new state.llmcp. The slot-read hook of `@llmcp/trainer/testing`
 * stands for that publication, deterministically: it swaps latest and
 * latest.backup (three renames, as a publication does) between the two files
 * of a read of latest. A failure counts only when the slot did not change
 * while it was read; verifyRun's verdict is from an attempt during which
 * nothing changed, or it says it is unsettled — never FAILED for a race.
 */
import { cpSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { processStartTime } from '../src/internal/run-lock.ts';
import { verifySlot } from '../src/run-directory.ts';
import { verifyRun } from '../src/status.ts';
import { publishDuringSlotReads, setSlotReadHooks } from '../src/testing.ts';
import { ch33 } from './helpers/configs.ts';
import { lockRecord, otherProcess } from './helpers/live-owner.ts';
import { tempDir, trainedRun } from './helpers/run-fixture.ts';

let template = '';
beforeAll(async () => {
  // ch33 with a checkpoint every 4 steps: latest (8) and latest.backup (4) differ.
  template = await trainedRun(ch33({ checkpoint: { every: 4 } }), 'template');
});
afterEach(() => setSlotReadHooks({}));
const owner = otherProcess();
afterAll(() => owner.stop());

/** A copy of the template; `live`: its run.lock names a live process (another one), so it counts as being trained. */
function copy(live: boolean): string {
  const dir = path.join(tempDir(), 'run');
  cpSync(template, dir, { recursive: true });
  if (live) writeFileSync(path.join(dir, 'run.lock'), lockRecord(owner.pid, processStartTime(owner.pid)));
  return dir;
}

describe('a slot replaced while it is read', () => {
  it('is read again: verifySlot gives the slot as it is now, not a false TRAINER_PAIR_MISMATCH', async () => {
    const dir = copy(true);
    const hook = publishDuringSlotReads(1);
    const v = await verifySlot(dir, 'latest');
    expect(hook.count()).toBe(1);
    expect(v.job.step).toBe(4);
  });

  it('a slot damaged while nothing changes fails at once, read only once', async () => {
    const dir = copy(true);
    writeFileSync(path.join(dir, 'checkpoints', 'latest', 'state.llmcp'), 'not a checkpoint');
    let reads = 0;
    setSlotReadHooks({ betweenFiles: () => void (reads += 1) });
    await expect(verifySlot(dir, 'latest')).rejects.toMatchObject({ code: 'TRAINER_STATE_INVALID' });
    expect(reads).toBe(1);
  });
});

describe('verifyRun on a run being trained', () => {
  it('publications during a few reads: a settled verdict, ok, with no slot reported as failing', async () => {
    const dir = copy(true);
    // An even number: after an odd one latest would hold the older checkpoint, which no publication leaves
    // and the run's provenance check rightly reports (slots swapped).
    publishDuringSlotReads(2);
    const v = await verifyRun(dir);
    expect(v.inUse?.pid).toBe(owner.pid);
    expect([v.ok, v.settled]).toEqual([true, true]);
    expect(v.slots.filter((s) => !s.ok)).toEqual([]);
  });

  it('a publication during every read: unsettled, never a settled FAILED', async () => {
    const dir = copy(true);
    const hook = publishDuringSlotReads(Number.POSITIVE_INFINITY);
    const v = await verifyRun(dir);
    expect(hook.count()).toBeGreaterThan(20);
    expect(v.settled).toBe(false);
  });

  it('a run nobody trains is judged in one attempt: a publication-like change during it is damage as found', async () => {
    const dir = copy(false);
    writeFileSync(path.join(dir, 'checkpoints', 'latest.backup', 'job.json'), '{}');
    const v = await verifyRun(dir);
    expect([v.ok, v.settled, v.inUse]).toEqual([false, true, null]);
    expect(v.slots.find((s) => s.slot === 'latest.backup')).toMatchObject({ ok: false, code: 'TRAINER_JOB_INVALID' });
  });
});
