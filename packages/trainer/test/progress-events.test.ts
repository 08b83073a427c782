/**
 * What the progress display is told at the start of a resumed job: the last
 * validation result and the best, from the job state (so the display shows
 * them at once, not after the next evaluation).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TrainerEvent } from '../src/events.ts';
import { resumeRun, trainRun } from '../src/run.ts';
import { smallBpe } from './helpers/configs.ts';
import { tempDir } from './helpers/run-fixture.ts';

describe('the start event', () => {
  it('carries the last validation and the best of the job: none for a new run, the job state on a resume', async () => {
    const dir = path.join(tempDir(), 'run');
    const controller = new AbortController();
    const fresh: TrainerEvent[] = [];
    const first = await trainRun({
      runDir: dir,
      config: smallBpe(),
      saveMode: 'inline',
      signal: controller.signal,
      onEvent: (e) => {
        fresh.push(e);
        if (e.type === 'step' && e.step === 23) controller.abort();
      },
    });
    expect(first).toMatchObject({ status: 'stopped', step: 23 });
    expect(fresh[0]).toMatchObject({ type: 'start', resumedFrom: null, lastValidation: null, best: null });

    const job = JSON.parse(readFileSync(path.join(dir, 'checkpoints', 'latest', 'job.json'), 'utf8')) as {
      evaluations: { step: number; validationLoss: number }[];
      best: { step: number; validationLoss: number } | null;
    };
    const last = job.evaluations.at(-1);
    expect(last).toBeDefined();
    expect(job.best).not.toBeNull();

    const resumed: TrainerEvent[] = [];
    await resumeRun(dir, {
      saveMode: 'inline',
      onEvent: (e) => {
        resumed.push(e);
        if (e.type === 'step') controller.abort();
      },
      signal: controller.signal,
    });
    const start = resumed.find((e) => e.type === 'start');
    expect(start).toMatchObject({ type: 'start', resumedFrom: 'latest', step: 23, lastValidation: { step: last?.step, validationLoss: last?.validationLoss }, best: job.best });
  });
});
