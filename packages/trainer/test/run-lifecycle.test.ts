/**
 * Starting, refusing, restarting and locking runs.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isTrainerError } from '../src/errors.ts';
import { resumeRun, trainRun } from '../src/run.ts';
import { readRunManifest } from '../src/run-manifest.ts';
import { runStatus } from '../src/status.ts';
import { ch33, smallBpe } from './helpers/configs.ts';
import { tempDir, trainedRun } from './helpers/run-fixture.ts';
import { finalBytes, sameBytes, snapshotTree } from './helpers/run-files.ts';
import { TrainerChild } from './helpers/child.ts';
import type { TrainerConfig } from '../src/config.ts';

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (isTrainerError(e)) return `${e.code}: ${e.message}`;
    throw e;
  }
  throw new Error('expected a TrainerError');
}

/** Trains `config` in a child process and SIGKILLs it while it is paused right after update `step`. */
async function killAtStep(runDir: string, config: TrainerConfig, step: number): Promise<void> {
  const child = new TrainerChild({ runDir, config, mode: 'train', saveMode: 'inline', pauseAt: { type: 'step', step } });
  await child.waitFor((e) => e.type === 'paused');
  child.signal('SIGKILL');
  expect((await child.exited).signal).toBe('SIGKILL');
}

describe('run lifecycle', () => {
  it('a bad input refuses the run and leaves nothing behind', async () => {
    const dir = path.join(tempDir(), 'run');
    const config = smallBpe({ data: { source: { kind: 'corpus', corpus: path.join(tempDir(), 'missing.json'), split: path.join(tempDir(), 'missing-split.json') } } });
    expect(await codeOf(trainRun({ runDir: dir, config, saveMode: 'inline' }))).toMatch(/^TRAINER_INPUT_INVALID: cannot read the corpus .*missing\.json/);
    expect(existsSync(dir)).toBe(false);
  });

  it('refuses to start a second run in a run directory, and resumes a complete run without changing it', async () => {
    const dir = path.join(tempDir(), 'run');
    const config = ch33();
    await trainRun({ runDir: dir, config, saveMode: 'inline' });
    expect(await codeOf(trainRun({ runDir: dir, config, saveMode: 'inline' }))).toMatch(/^TRAINER_RUN_INVALID: .*already holds a run/);
    const before = snapshotTree(dir);
    const again = await resumeRun(dir, { saveMode: 'inline' });
    expect(again).toMatchObject({ status: 'already-complete', step: 8, resumedFrom: 'latest' });
    expect(snapshotTree(dir)).toEqual(before);
    expect(runStatus(dir)).toMatchObject({ state: 'complete', step: 8, best: { step: 8 } });
  });

  it('restarts a run killed before any checkpoint existed, recording the orphaned records', async () => {
    const config = ch33();
    const reference = await trainedRun(config);
    const dir = path.join(tempDir(), 'run');
    // A child SIGKILLed at step 5 leaves loss records and run.json with only its 'created' event; removing
    // checkpoints/ makes it a run killed before even its step-0 checkpoint was published.
    await killAtStep(dir, config, 5);
    const killedManifest = readRunManifest(dir);
    expect(killedManifest?.events.map((e) => e.event)).toEqual(['created']);
    rmSync(path.join(dir, 'checkpoints'), { recursive: true });
    const r = await resumeRun(dir, { saveMode: 'inline' });
    expect(r).toMatchObject({ status: 'completed', resumedFrom: null });
    expect(readRunManifest(dir)?.events.find((e) => e.event === 'restarted')).toMatchObject({ orphanedLossRecords: expect.any(Number) });
    expect(sameBytes(finalBytes(reference), finalBytes(dir))).toBeNull();
    expect(readFileSync(path.join(dir, 'loss.jsonl'))).toEqual(readFileSync(path.join(reference, 'loss.jsonl')));
  });

  it('resumes a run killed before its first cadence checkpoint from best/, not from step 0', async () => {
    const config = ch33();
    const reference = await trainedRun(config);
    const dir = path.join(tempDir(), 'run');
    await killAtStep(dir, config, 5);
    expect(existsSync(path.join(dir, 'checkpoints', 'latest'))).toBe(false);
    const r = await resumeRun(dir, { saveMode: 'inline' });
    expect(r).toMatchObject({ status: 'completed', resumedFrom: 'best' });
    expect(readRunManifest(dir)?.events.some((e) => e.event === 'restarted')).toBe(false);
    expect(sameBytes(finalBytes(reference), finalBytes(dir))).toBeNull();
    expect(readFileSync(path.join(dir, 'loss.jsonl'))).toEqual(readFileSync(path.join(reference, 'loss.jsonl')));
  });

  // Defect 3: missing slots made resume silently start over, cutting loss.jsonl and overwriting best/.
  it.each([
    ['latest, latest.backup, step_* and best*', (dir: string) => {
      for (const slot of readdirSync(path.join(dir, 'checkpoints'))) rmSync(path.join(dir, 'checkpoints', slot), { recursive: true });
    }],
    ['all of checkpoints/', (dir: string) => rmSync(path.join(dir, 'checkpoints'), { recursive: true })],
    ['latest, latest.backup and step_* (best/ is older)', (dir: string) => {
      for (const slot of readdirSync(path.join(dir, 'checkpoints'))) if (!slot.startsWith('best')) rmSync(path.join(dir, 'checkpoints', slot), { recursive: true });
    }],
  ])('refuses to resume a stopped run whose slots were deleted (%s) and changes nothing', async (_what, remove) => {
    const dir = path.join(tempDir(), 'run');
    const controller = new AbortController();
    const config = smallBpe();
    const first = await trainRun({
      runDir: dir,
      config,
      saveMode: 'inline',
      signal: controller.signal,
      onEvent: (e) => {
        if (e.type === 'step' && e.step === 23) controller.abort();
      },
    });
    expect(first).toMatchObject({ status: 'stopped', step: 23 });
    remove(dir);
    const before = snapshotTree(dir);
    const message = await codeOf(resumeRun(dir, { saveMode: 'inline' }));
    expect(message).toMatch(/^TRAINER_NO_CHECKPOINT: /);
    expect(message).toMatch(/'stopped' event at step 23/);
    expect(snapshotTree(dir)).toEqual(before);
  });

  it('lets one job at a time use a run directory', async () => {
    const dir = path.join(tempDir(), 'run');
    let second: Promise<string> | null = null;
    await trainRun({
      runDir: dir,
      config: ch33(),
      saveMode: 'inline',
      onEvent: (e) => {
        if (e.type === 'step' && e.step === 2) second = codeOf(resumeRun(dir, { saveMode: 'inline' }));
      },
    });
    expect(await (second as unknown as Promise<string>)).toMatch(/^TRAINER_RUN_LOCKED: /);
    expect(existsSync(path.join(dir, 'run.lock'))).toBe(false);
  });
});
