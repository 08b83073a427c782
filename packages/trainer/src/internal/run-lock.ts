/**
 * A run directory is used by one process at a time: `run.lock` holds the
 * owner's pid. A lock whose process no longer exists (e.g. after SIGKILL) is
 * stale and taken over.
 */
import { closeSync, openSync, readFileSync, rmSync, writeSync, constants } from 'node:fs';
import path from 'node:path';
import { TrainerError } from '../errors.ts';
import { RUN_FILES } from '../run-directory.ts';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes the lock of `runDir` (which must exist).
 *
 * @param runDir - the run directory.
 * @returns a function that releases the lock.
 * @throws TrainerError `TRAINER_RUN_LOCKED` when another live process holds it.
 */
export function acquireRunLock(runDir: string): () => void {
  const file = path.join(runDir, RUN_FILES.lock);
  for (let attempt = 0; attempt < 3; attempt += 1) {
    try {
      const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
      writeSync(fd, `${JSON.stringify({ pid: process.pid })}\n`);
      closeSync(fd);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        rmSync(file, { force: true });
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new TrainerError('TRAINER_IO', `cannot create ${file}: ${(e as Error).message}`, { path: file, cause: e });
      }
    }
    let owner: number | null = null;
    try {
      owner = (JSON.parse(readFileSync(file, 'utf8')) as { pid?: number }).pid ?? null;
    } catch {
      owner = null;
    }
    if (owner !== null && owner !== process.pid && alive(owner)) {
      throw new TrainerError('TRAINER_RUN_LOCKED', `${runDir} is in use by process ${owner} (run.lock); stop it first`, { path: file });
    }
    if (owner === process.pid) {
      throw new TrainerError('TRAINER_RUN_LOCKED', `${runDir} is already open in this process`, { path: file });
    }
    rmSync(file, { force: true });
  }
  throw new TrainerError('TRAINER_RUN_LOCKED', `could not take the lock of ${runDir}`, { path: file });
}
