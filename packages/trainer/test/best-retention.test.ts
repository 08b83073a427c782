/**
 * With a learning rate high enough that the validation loss
 * rises and falls, best/ holds the lowest-validation step; retention keeps
 * only the newest snapshots but never best/ or the newest verified
 * checkpoint; a corrupted latest/ falls back to latest.backup/ and the run
 * still ends with the uninterrupted run's bytes.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeCheckpoint } from '@llmcp/format';
import { decodeJob } from '../src/job.ts';
import { resumeRun, trainRun } from '../src/run.ts';
import { verifyRun } from '../src/status.ts';
import { smallBpe } from './helpers/configs.ts';
import { runDirectory, stoppedRun, trainedRun } from './helpers/run-fixture.ts';
import { finalBytes, sameBytes } from './helpers/run-files.ts';

describe('best/ and retention', () => {
  it('best/ holds the strictly lowest validation loss while it rises and falls; retention spares it', async () => {
    const config = smallBpe({ steps: 24, schedule: { kind: 'constant', rate: 0.7 }, evaluation: { validateEvery: 2 }, checkpoint: { every: 4, keepSteps: 1 } });
    const dir = runDirectory();
    const result = await trainRun({ runDir: dir, config, saveMode: 'inline' });
    const job = decodeJob(new Uint8Array(readFileSync(path.join(dir, 'checkpoints', 'latest', 'job.json'))));
    const losses = job.evaluations.map((e) => e.validationLoss);
    const rises = losses.some((l, i) => i > 0 && l > (losses[i - 1] as number));
    const falls = losses.some((l, i) => i > 0 && l < (losses[i - 1] as number));
    expect(rises && falls).toBe(true);
    const lowest = Math.min(...losses);
    const bestStep = job.evaluations.find((e) => e.validationLoss === lowest)?.step;
    expect(bestStep).not.toBe(24);
    expect(result.best).toEqual({ step: bestStep, validationLoss: lowest });

    const bestJob = decodeJob(new Uint8Array(readFileSync(path.join(dir, 'checkpoints', 'best', 'job.json'))));
    const bestState = decodeCheckpoint(new Uint8Array(readFileSync(path.join(dir, 'checkpoints', 'best', 'state.llmcp'))));
    expect(bestJob.step).toBe(bestStep);
    expect(bestState.selectedStep).toBe(BigInt(bestStep as number));
    expect(bestJob.best).toEqual({ step: bestStep, validationLoss: lowest });

    const slots = readdirSync(path.join(dir, 'checkpoints')).sort();
    expect(slots.filter((s) => s.startsWith('step_'))).toEqual(['step_000024']);
    expect(slots).toContain('best');
    expect(bestStep).toBeLessThan(24); // best/ is older than every kept snapshot and still there
    expect((await verifyRun(dir)).ok).toBe(true);
  });

  it('a corrupted latest/ falls back to latest.backup/, and the run still ends bit-identical', async () => {
    const config = smallBpe({ checkpoint: { keepSteps: 0 } });
    const reference = await trainedRun(config);
    const { dir } = await stoppedRun(config, 24);
    const state = path.join(dir, 'checkpoints', 'latest', 'state.llmcp');
    const bytes = readFileSync(state);
    bytes[5000] = (bytes[5000] as number) ^ 0x01;
    writeFileSync(state, bytes);

    const resumed = await resumeRun(dir, { saveMode: 'inline' });
    expect(resumed.resumedFrom).toBe('latest.backup');
    expect(resumed.loadReport?.find((r) => r.slot === 'latest')).toMatchObject({ status: 'refused', code: 'TRAINER_STATE_INVALID' });
    expect(resumed.loadReport?.find((r) => r.slot === 'latest')?.reason).toMatch(/checksum/i);
    expect(resumed.loadReport?.find((r) => r.slot === 'latest.backup')).toMatchObject({ status: 'used', step: 20 });
    expect(resumed.status).toBe('completed');
    expect(sameBytes(finalBytes(reference), finalBytes(dir))).toBeNull();
    // The damaged checkpoint was discarded, not kept as the new backup.
    expect((await verifyRun(dir))).toMatchObject({ ok: true, resumeSlot: 'latest' });
    const manifest = JSON.parse(readFileSync(path.join(dir, 'run.json'), 'utf8')) as { events: { event: string; refused?: unknown[]; orphanedLossRecords?: number }[] };
    const resumedEvent = manifest.events.find((e) => e.event === 'resumed');
    expect(resumedEvent?.refused).toHaveLength(1);
    expect(resumedEvent?.orphanedLossRecords).toBe(4);
  });
});
