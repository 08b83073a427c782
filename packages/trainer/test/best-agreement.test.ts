/**
 * Status, verify and the best-checkpoint loader name the same best checkpoint
 * (one rule, `bestCheckpointSlot`), also in the state a second Ctrl-C can
 * leave: the publication of `best/` cut short, `best/` gone and
 * `best.backup/` holding an older best.
 */
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadBestCheckpoint, readSlotJob } from '../src/run-directory.ts';
import { trainRun } from '../src/run.ts';
import { runStatus, verifyRun } from '../src/status.ts';
import { smallBpe } from './helpers/configs.ts';
import { tempDir } from './helpers/run-fixture.ts';

// Every validation is a cadence step and every snapshot is kept: the best step always has a rolling slot.
const config = smallBpe({ evaluation: { validateEvery: 10 }, checkpoint: { every: 10, keepSteps: 4 }, threads: 1 });

describe('the best checkpoint', () => {
  it('is the same slot for runStatus, verifyRun and loadBestCheckpoint, also when best/ was not published', async () => {
    const dir = path.join(tempDir(), 'run');
    await trainRun({ runDir: dir, config, saveMode: 'inline' });
    const recorded = readSlotJob(dir, 'latest')?.best;
    expect(recorded).toBeDefined();
    const agreed = async (): Promise<{ status: string | null; verify: string | null; loaded: string | null }> => ({
      status: runStatus(dir).bestSlot,
      verify: (await verifyRun(dir)).best?.slot ?? null,
      loaded: (await loadBestCheckpoint(dir))?.slot ?? null,
    });
    expect(await agreed()).toEqual({ status: 'best', verify: 'best', loaded: 'best' });

    // A kill between the renames of best/'s publication: best/ is gone, best.backup/ is an older best (or absent).
    rmSync(path.join(dir, 'checkpoints', 'best'), { recursive: true });
    const backupStep = readSlotJob(dir, 'best.backup')?.step ?? null;
    expect(backupStep === null || backupStep < (recorded?.step ?? 0)).toBe(true);
    const holder = runStatus(dir).bestSlot;
    expect(holder).not.toBeNull();
    expect(existsSync(path.join(dir, 'checkpoints', holder as string))).toBe(true);
    expect(readSlotJob(dir, holder as string)?.step).toBe(recorded?.step);
    expect(await agreed()).toEqual({ status: holder, verify: holder, loaded: holder });
    expect((await verifyRun(dir)).best).toMatchObject({ step: recorded?.step, slot: holder });
    expect(runStatus(dir)).toMatchObject({ best: { step: recorded?.step }, bestSlot: holder });
  });
});
