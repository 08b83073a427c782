/**
 * The one setup of the trainer's run tests: a temporary directory that is
 * removed again, a run trained to its budget, and a run stopped in-process
 * after a given step (saves inline, so the files are complete when the call
 * returns).
 *
 * Every directory from {@link tempDir} is removed when the test that made it
 * finishes; one made outside a test (in `beforeAll`, or at collection) is
 * removed after the test file. Import this module statically from the test
 * file (directly or through another helper): the file-level clean-up is
 * registered while the file is collected.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, onTestFinished } from 'vitest';
import type { TrainerConfig } from '../../src/config.ts';
import { trainRun, type RunResult } from '../../src/run.ts';

const fileLevel: string[] = [];

afterAll(() => {
  for (const dir of fileLevel.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * A fresh temporary directory, removed after the current test (or after the
 * test file, when made outside a test).
 *
 * @param prefix - name prefix under the system temporary directory.
 * @returns the directory's path.
 */
export function tempDir(prefix = 'llmcp-trainer-'): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  try {
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  } catch {
    // Not inside a test (beforeAll, collection): the file's afterAll removes it.
    fileLevel.push(dir);
  }
  return dir;
}

/**
 * A run directory (not created yet) inside a fresh {@link tempDir}.
 *
 * @param name - the run directory's name (shows in messages and manifests).
 * @returns its path.
 */
export function runDirectory(name = 'run'): string {
  return path.join(tempDir(), name);
}

/**
 * Trains a new run to its step budget with inline saves.
 *
 * @param config - the run's config.
 * @param name - the run directory's name.
 * @returns the run directory.
 */
export async function trainedRun(config: TrainerConfig, name = 'reference'): Promise<string> {
  const dir = runDirectory(name);
  const result = await trainRun({ runDir: dir, config, saveMode: 'inline' });
  expect(result.status).toBe('completed');
  return dir;
}

/** A run stopped in-process by {@link stoppedRun}. */
export interface StoppedRun {
  readonly dir: string;
  readonly result: RunResult;
}

/**
 * Starts a new run with inline saves and stops it (like SIGTERM: the step
 * finishes, a stop checkpoint is written) after update `stopAfter`.
 *
 * @param config - the run's config.
 * @param stopAfter - the step after which it stops.
 * @param name - the run directory's name.
 * @returns the run directory and the outcome (`stopped` at `stopAfter`).
 */
export async function stoppedRun(config: TrainerConfig, stopAfter: number, name = 'run'): Promise<StoppedRun> {
  const dir = runDirectory(name);
  const controller = new AbortController();
  const result = await trainRun({
    runDir: dir,
    config,
    saveMode: 'inline',
    signal: controller.signal,
    onEvent: (e) => {
      if (e.type === 'step' && e.step === stopAfter) controller.abort();
    },
  });
  expect(result).toMatchObject({ status: 'stopped', step: stopAfter });
  return { dir, result };
}
