/**
 * What a run records and keeps (issue 34, point 6 and the cadence additions):
 * records a crash left beyond the checkpoint are counted wherever they are
 * cut — by a resume that extends the budget, by a pivot; a fork's first
 * resume does not speak of a crash; pivots and forks take a function of the
 * recorded config (`--set`); `checkpoint.keepEvery` keeps snapshots for good
 * beside the rolling ones; `checkpoint.everyMinutes` saves `latest/` by time
 * without changing a bit; the report's `rngExact` regenerates the whole
 * sample audit.
 */
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.ts';
import { decodeJob } from '../src/job.ts';
import { forkRun, pivotRun } from '../src/pivot.ts';
import { resumeRun, trainRun } from '../src/run.ts';
import { readRunManifest } from '../src/run-manifest.ts';
import { reportRun } from '../src/run-report.ts';
import type { TrainerEvent } from '../src/events.ts';
import { smallBpe } from './helpers/configs.ts';
import { ch34Config } from '../src/presets.ts';
import { finalBytes, sameBytes, type FinalBytes } from './helpers/run-files.ts';
import { runDirectory, stoppedRun, trainedRun } from './helpers/run-fixture.ts';

const config = smallBpe();
const crashRecord = (step: number): string => `{"step":${step},"loss":9,"learningRate":0.04,"gradientNorm":1,"clipped":false,"tokens":512}\n`;

let reference: FinalBytes;
beforeAll(async () => {
  reference = finalBytes(await trainedRun(config));
});

describe('records a crash left beyond the checkpoint', () => {
  it('are counted in run.json and the result when a resume with a new budget cuts them', async () => {
    const { dir } = await stoppedRun(config, 20);
    appendFileSync(path.join(dir, 'loss.jsonl'), crashRecord(21) + crashRecord(22) + crashRecord(23));
    const result = await resumeRun(dir, { steps: 50, saveMode: 'inline' });
    expect(result).toMatchObject({ status: 'completed', step: 50, lossRecordsCut: 3 });
    const events = readRunManifest(dir)?.events ?? [];
    expect(events.find((e) => e.event === 'resumed')).toMatchObject({ orphanedLossRecords: 3, orphanedLossSha256: expect.stringMatching(/^sha256:/) });
    expect(events.find((e) => e.event === 'pivot')).toMatchObject({ orphanedLossRecords: 3 });
  });

  it('are counted in the pivot event of a plain pivot', async () => {
    const { dir } = await stoppedRun(config, 20);
    appendFileSync(path.join(dir, 'loss.jsonl'), crashRecord(21));
    const result = await pivotRun(dir, { config: (recorded) => parseConfig({ ...recorded, steps: 45 }), changes: ['steps'] });
    expect(result).toMatchObject({ changed: ['steps'], lossRecordsCut: 1 });
    expect(readRunManifest(dir)?.events.find((e) => e.event === 'pivot')).toMatchObject({ orphanedLossRecords: 1 });
  });
});

describe('forkRun', () => {
  it('takes its config as a function of the checkpoint\'s, and its first resume completes what the fork left, not "the crash"', async () => {
    const source = await trainedRun(config, 'source');
    const target = runDirectory('branch');
    const fork = await forkRun(source, target, { slot: 'step_000030', config: (recorded) => parseConfig({ ...recorded, schedule: { kind: 'constant', rate: 0.02 } }), changes: ['schedule'] });
    expect(fork.changed).toEqual(['schedule.rate']);
    const resumed = await resumeRun(target, { saveMode: 'inline' });
    expect(resumed.repaired.length).toBeGreaterThan(0);
    expect(resumed.repairedAfter).toBe('fork');
    // A resume after a real interruption still says crash.
    const { dir } = await stoppedRun(config, 20, 'stopped');
    const plain = await resumeRun(dir, { saveMode: 'inline' });
    expect(plain.repairedAfter).toBeNull();
    expect(sameBytes(reference, finalBytes(dir))).toBeNull();
  });
});

describe('checkpoint.keepEvery and checkpoint.everyMinutes', () => {
  it('keeps every N-th snapshot for good beside the newest keepSteps', async () => {
    const dir = await trainedRun(smallBpe({ checkpoint: { every: 5, keepSteps: 1, keepEvery: 20 } }), 'keep-every');
    const snapshots = readdirSync(path.join(dir, 'checkpoints')).filter((n) => n.startsWith('step_'));
    // The newest rolling snapshot is step 35: the ones kept for good (20, 40) do not count against keepSteps.
    expect(snapshots.sort()).toEqual(['step_000020', 'step_000035', 'step_000040']);
    const rolling = await trainedRun(smallBpe({ checkpoint: { every: 5, keepSteps: 2, keepEvery: 20 } }), 'keep-every-2');
    expect(readdirSync(path.join(rolling, 'checkpoints')).filter((n) => n.startsWith('step_')).sort()).toEqual(['step_000020', 'step_000030', 'step_000035', 'step_000040']);
  });

  it('saves latest/ by time, with no sample audit, and computes the same bytes', async () => {
    let clock = 0;
    const events: TrainerEvent[] = [];
    const dir = runDirectory('by-time');
    // Each update advances the injected clock by 20 s; a checkpoint is due every minute.
    const result = await trainRun({
      runDir: dir,
      config: smallBpe({ checkpoint: { everyMinutes: 1 } }),
      saveMode: 'inline',
      now: () => clock,
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'step') clock += 20_000;
      },
    });
    expect(result.status).toBe('completed');
    const timed = events.filter((e) => e.type === 'checkpoint' && e.reason === 'time').map((e) => (e as { step: number }).step);
    expect(timed.length).toBeGreaterThanOrEqual(8);
    expect(timed.every((step) => step % 10 !== 0)).toBe(true);
    expect(sameBytes(reference, finalBytes(dir))).toBeNull();
    expect(decodeJob(readFileSync(path.join(dir, 'checkpoints', 'latest', 'job.json'))).step).toBe(40);
  });
});

describe('reportRun', () => {
  it('says rngExact on a healthy run whose audit draws two samples', async () => {
    const ch34 = ch34Config();
    const dir = await trainedRun(parseConfig({ ...ch34, sampling: { ...ch34.sampling, count: 2 } }), 'report');
    const report = await reportRun(dir, { logitProbe: '0' });
    expect(report.generation.rngExact).toBe(true);
  });
});
