/**
 * Signals, real ones to child processes (background saves in the
 * worker thread): SIGUSR1 writes a checkpoint at the end of the current step
 * and the run continues to the same final bytes; SIGTERM during a long
 * evaluation checkpoints within one evaluation batch; a second SIGINT exits at
 * once and the run still resumes to the same bytes.
 */
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { decodeJob } from '../src/job.ts';
import { resumeRun } from '../src/run.ts';
import { verifyRun } from '../src/status.ts';
import { readFileSync } from 'node:fs';
import { smallBpe } from './helpers/configs.ts';
import { tempDir, trainedRun } from './helpers/run-fixture.ts';
import { TrainerChild } from './helpers/child.ts';
import { finalBytes, sameBytes, type FinalBytes } from './helpers/run-files.ts';

const config = smallBpe();
const longEvaluation = smallBpe({ evaluation: { validateEvery: 10, batchSize: 1 } });

describe('signals', () => {
  let reference: FinalBytes;
  let referenceLong: FinalBytes;
  beforeAll(async () => {
    reference = finalBytes(await trainedRun(config));
    referenceLong = finalBytes(await trainedRun(longEvaluation, 'reference-long'));
  });

  it('SIGUSR1 writes a checkpoint at the end of the current step, training continues, and the final bytes are unchanged', async () => {
    const dir = path.join(tempDir(), 'usr1');
    const child = new TrainerChild({ runDir: dir, config, mode: 'train', pauseAt: { type: 'step', step: 12 } });
    await child.waitFor((e) => e.type === 'paused');
    child.signal('SIGUSR1');
    child.release();
    expect(await child.result()).toMatchObject({ type: 'result', status: 'completed', step: 40 });
    const signalAt = child.events.findIndex((e) => e.type === 'signal' && e.signal === 'SIGUSR1');
    expect(signalAt).toBeGreaterThan(0);
    expect(child.events.find((e) => e.type === 'checkpoint' && e.reason === 'signal')).toMatchObject({ step: 12 });
    expect(child.events.find((e) => e.type === 'checkpoint-saved' && e.step === 12)).toMatchObject({ slots: ['latest'] });
    expect(child.events.filter((e) => e.type === 'step' && (e.step as number) > 12)).toHaveLength(28);
    expect(sameBytes(reference, finalBytes(dir))).toBeNull();
  });

  it('SIGTERM during a long evaluation stops it within one batch, checkpoints, and the resumed run is bit-identical', async () => {
    const dir = path.join(tempDir(), 'term-eval');
    const child = new TrainerChild({ runDir: dir, config: longEvaluation, mode: 'train', pauseAt: { type: 'evaluation-batch', step: 10, index: 100 } });
    await child.waitFor((e) => e.type === 'paused');
    child.signal('SIGTERM');
    child.release();
    expect(await child.result()).toMatchObject({ type: 'result', status: 'stopped', step: 10 });
    const events = child.events;
    const signalAt = events.findIndex((e) => e.type === 'signal' && e.signal === 'SIGTERM');
    const batchesAfterSignal = events.slice(signalAt).filter((e) => e.type === 'evaluation-batch').length;
    expect(batchesAfterSignal).toBeLessThanOrEqual(1);
    const validationBatches = (events.find((e) => e.type === 'evaluation-start' && e.step === 10) as unknown as { batches: number }).batches;
    expect(validationBatches).toBeGreaterThan(400);
    expect(events.find((e) => e.type === 'evaluation-aborted')).toMatchObject({ step: 10, list: 'validation' });
    expect((events.find((e) => e.type === 'evaluation-aborted') as unknown as { batchesDone: number }).batchesDone).toBeLessThanOrEqual(102);
    expect(events.find((e) => e.type === 'checkpoint' && e.reason === 'stop')).toMatchObject({ step: 10 });
    const job = decodeJob(new Uint8Array(readFileSync(path.join(dir, 'checkpoints', 'latest', 'job.json'))));
    expect(job).toMatchObject({ step: 10, phase: { validated: false, audited: false } });

    const resumed = await resumeRun(dir, { saveMode: 'inline' });
    expect(resumed).toMatchObject({ status: 'completed', resumedFrom: 'latest' });
    expect(sameBytes(referenceLong, finalBytes(dir))).toBeNull();
  });

  it('a second SIGINT exits at once; the run still resumes to the same bytes', async () => {
    const dir = path.join(tempDir(), 'double-int');
    const child = new TrainerChild({
      runDir: dir,
      config: longEvaluation,
      mode: 'train',
      pauseAt: [{ type: 'evaluation-batch', step: 20, index: 5 }, { type: 'signal' }],
    });
    await child.waitForPause(1);
    child.signal('SIGINT');
    child.release();
    // The child pauses inside its first SIGINT handler; the second SIGINT arrives before any checkpoint work.
    await child.waitForPause(2);
    child.signal('SIGINT');
    child.release();
    const exit = await child.exited;
    expect(exit.code).toBe(130);
    expect(child.events.some((e) => e.type === 'result' || e.type === 'stopped')).toBe(false);
    const resumed = await resumeRun(dir, { saveMode: 'inline' });
    expect(resumed.status).toBe('completed');
    expect(sameBytes(referenceLong, finalBytes(dir))).toBeNull();
    expect((await verifyRun(dir)).ok).toBe(true);
  });

  it('a second SIGINT reports, in one event, the checkpoint a resume will use; the resume uses exactly that one', async () => {
    const dir = path.join(tempDir(), 'double-int-line');
    const child = new TrainerChild({
      runDir: dir,
      config: longEvaluation,
      mode: 'train',
      // Inline saves: no save is in flight when the second SIGINT lands, so the claim is exact.
      saveMode: 'inline',
      pauseAt: [{ type: 'evaluation-batch', step: 20, index: 5 }, { type: 'signal' }],
    });
    await child.waitForPause(1);
    child.signal('SIGINT');
    child.release();
    await child.waitForPause(2);
    child.signal('SIGINT');
    child.release();
    expect((await child.exited).code).toBe(130);
    const exiting = child.events.filter((e) => e.type === 'exiting');
    expect(exiting).toEqual([
      {
        type: 'exiting',
        signal: 'SIGINT',
        resumeSlot: 'latest',
        resumeStep: 10,
        saveInFlight: false,
        description: 'second Ctrl-C: exited at once without a stop checkpoint; a resume will use latest (step 10)',
      },
    ]);
    expect(child.events.at(-1)).toMatchObject({ type: 'exiting' });
    const resumed = await resumeRun(dir, { saveMode: 'inline' });
    expect(resumed.resumedFrom).toBe('latest');
    expect(resumed.loadReport?.find((r) => r.status === 'used')).toMatchObject({ slot: 'latest', step: 10 });
  });
});
