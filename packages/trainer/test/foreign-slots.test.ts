/**
 * A slot of another run (its job's run id is not run.json's) is foreign:
 * never a resume candidate, never evidence of the run's history, never its
 * best — and reported as such (TRAINER_SLOT_FOREIGN). A `best/` copied in
 * from a longer run used to be chosen for being the newest, and the resume
 * then refused with a misleading "history was lost" although latest was valid.
 */
import { cpSync, rmSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { readRunManifest } from '../src/run-manifest.ts';
import { resumeRun } from '../src/run.ts';
import { loadRunCheckpoint, runStatus, verifyRun } from '../src/status.ts';
import { ch33 } from './helpers/configs.ts';
import { tempDir, trainedRun } from './helpers/run-fixture.ts';
import { snapshotTree } from './helpers/run-files.ts';

let short = '';
let long = '';
beforeAll(async () => {
  // This run stops at step 4; the other run, another id, goes on to step 8 (best at 8).
  short = await trainedRun(ch33({ steps: 4 }), 'short');
  long = await trainedRun(ch33(), 'long');
});

/** A copy of the short run with the long run's slots `slots` copied in over its own. */
function withForeign(slots: readonly string[]): string {
  const dir = path.join(tempDir(), 'run');
  cpSync(short, dir, { recursive: true });
  for (const slot of slots) {
    rmSync(path.join(dir, 'checkpoints', slot), { recursive: true, force: true });
    cpSync(path.join(long, 'checkpoints', slot), path.join(dir, 'checkpoints', slot), { recursive: true });
  }
  return dir;
}

describe('foreign slots (defect 8)', () => {
  it('a best/ copied in from another run is never the resume point: the resume uses latest, and the report says best is foreign', async () => {
    const dir = withForeign(['best']);
    const loaded = await loadRunCheckpoint(dir);
    expect(loaded.slot).toBe('latest');
    expect(loaded.step).toBe(4);
    const best = loaded.report.find((r) => r.slot === 'best');
    // best (step 8) is newer than every rolling slot, so it is a candidate by step — and refused as foreign.
    expect(best).toMatchObject({ status: 'refused', code: 'TRAINER_SLOT_FOREIGN' });
    expect(best?.reason).toContain(readRunManifest(long)?.runId);
    const result = await resumeRun(dir, { saveMode: 'inline' });
    expect(result).toMatchObject({ status: 'already-complete', step: 4, resumedFrom: 'latest' });
  });

  it('status and verify never name a foreign slot the best or the resume slot; verify reports it as foreign and fails', async () => {
    const dir = withForeign(['best']);
    const status = runStatus(dir);
    expect([status.step, status.slot]).toEqual([4, 'latest']);
    expect(status.bestSlot).not.toBe('best');
    const v = await verifyRun(dir);
    expect(v.ok).toBe(false);
    expect(v.resumeSlot).toBe('latest');
    expect(v.slots.find((s) => s.slot === 'best')).toMatchObject({ ok: false, code: 'TRAINER_SLOT_FOREIGN' });
    expect(v.best?.slot).not.toBe('best');
  });

  it('whichever slots are foreign, nothing of the other run is chosen, counted as evidence, or written, and a refusal says why', async () => {
    // The slots both runs have (ch33: latest, best, best.backup; the other's step_000008 comes along as a new slot).
    const SHARED = ['latest', 'best', 'best.backup', 'step_000008'];
    await fc.assert(
      fc.asyncProperty(fc.subarray(SHARED, { minLength: 1 }), async (foreign) => {
        const dir = withForeign(foreign);
        const before = snapshotTree(dir);
        const outcome = await loadRunCheckpoint(dir).catch((e: unknown) => e);
        if (outcome instanceof Error) {
          // Only foreign slots could have been chosen: no own checkpoint is left, and the refusal lists why.
          expect(outcome).toMatchObject({ code: 'TRAINER_NO_CHECKPOINT' });
          expect(outcome.message).toContain('TRAINER_SLOT_FOREIGN');
        } else {
          const chosen = outcome as Awaited<ReturnType<typeof loadRunCheckpoint>>;
          expect(foreign).not.toContain(chosen.slot);
          expect(chosen.checkpoint.job.run.id).toBe(readRunManifest(dir)?.runId);
          for (const s of foreign) expect(chosen.report.find((r) => r.slot === s)?.code ?? 'TRAINER_SLOT_FOREIGN').toBe('TRAINER_SLOT_FOREIGN');
        }
        expect(snapshotTree(dir)).toEqual(before);
      }),
      { numRuns: 12 },
    );
  });
});
