/**
 * Starting, refusing, restarting and locking runs.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isTrainerError } from '../src/errors.ts';
import { resumeRun, trainRun } from '../src/run.ts';
import { readRunManifest } from '../src/run-manifest.ts';
import { runStatus } from '../src/status.ts';
import { ch33, smallBpe } from './helpers/configs.ts';
import { tempDir } from './helpers/fake-checkpoint.ts';
import { finalBytes, sameBytes, snapshotTree } from './helpers/run-files.ts';

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (isTrainerError(e)) return `${e.code}: ${e.message}`;
    throw e;
  }
  throw new Error('expected a TrainerError');
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

  it('restarts a run that stopped before its first checkpoint, recording the orphaned records', async () => {
    const config = ch33();
    const reference = path.join(tempDir(), 'reference');
    await trainRun({ runDir: reference, config, saveMode: 'inline' });
    const dir = path.join(tempDir(), 'run');
    const controller = new AbortController();
    await trainRun({
      runDir: dir,
      config,
      saveMode: 'inline',
      signal: controller.signal,
      onEvent: (e) => {
        if (e.type === 'step' && e.step === 5) controller.abort();
      },
    });
    rmSync(path.join(dir, 'checkpoints'), { recursive: true }); // as if killed before any checkpoint
    const r = await resumeRun(dir, { saveMode: 'inline' });
    expect(r).toMatchObject({ status: 'completed', resumedFrom: null });
    expect(readRunManifest(dir)?.events.find((e) => e.event === 'restarted')).toMatchObject({ orphanedLossRecords: 5 });
    expect(sameBytes(finalBytes(reference), finalBytes(dir))).toBeNull();
    expect(readFileSync(path.join(dir, 'loss.jsonl'))).toEqual(readFileSync(path.join(reference, 'loss.jsonl')));
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
