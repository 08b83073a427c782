/**
 * The one way a run directory comes into being (`trainRun`, `forkRun`):
 *
 * 1. {@link assertNewRunDirectory} — before any work, nothing written: the
 *    path is a directory or can become one, holds no run (no `run.json` or
 *    `checkpoints/`; a fork target must be empty but for a `run.lock`, which
 *    the lock's own rules judge next), and does not lie inside another run
 *    directory (only that run's trainer writes there).
 * 2. {@link createRunDirectory} — the missing directories are made (recording
 *    which), the run's lock is taken, and only then, holding it, the directory
 *    is checked again: a creator that finds a run there (another creator won
 *    the race and has written, or has finished) releases its lock and fails.
 *    A creator that cannot take the lock fails at once. Either way the loser
 *    touches nothing of the winner's: exactly one of two racing creators
 *    gets the run.
 * 3. {@link NewRunDirectory.abandon} — a start that fails after that removes
 *    exactly what it made: the run's entries that were absent when it took
 *    the lock, the lock, and the directories it created (only if empty).
 */
import { existsSync, readdirSync, rmdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { TrainerError } from '../errors.ts';
import { enclosingRunDirectory, entryExists, isRunDirectory, RUN_FILES } from '../run-layout.ts';
import { makeDirectories } from './durable-fs.ts';
import { acquireRunLock, lockHolder, type RunLock } from './run-lock.ts';

/** What is being created, for messages and rules: a fork target must be empty, a new run's directory may hold other files. */
export type NewRunKind = 'run directory' | 'fork target';

/** Test hooks: called where another creator could interleave. */
export interface NewRunHooks {
  /** After the directories exist, before the lock is taken. */
  readonly beforeLock?: (runDir: string) => void;
}

let hooks: NewRunHooks = {};

/**
 * Installs test hooks (tests only).
 *
 * @param next - the hooks; `{}` removes them.
 */
export function setNewRunHooks(next: NewRunHooks): void {
  hooks = next;
}

/** The trainer-owned entries a new run writes (the lock aside). */
const RUN_ENTRIES: readonly string[] = [RUN_FILES.manifest, RUN_FILES.lossLog, RUN_FILES.samples, RUN_FILES.checkpoints, RUN_FILES.archive];

/** Why `runDir` cannot hold a new run now (the lock `except`ed when the caller holds it), or null. */
function occupiedBy(runDir: string, kind: NewRunKind, except?: string): string | null {
  // A fork target must be empty (its stricter rule first); a new run's directory may hold other files, but no run.
  if (kind === 'fork target' && existsSync(runDir)) {
    const other = readdirSync(runDir).filter((n) => n !== except);
    if (other.length > 0) return `fork target ${runDir} exists and is not empty`;
  }
  if (isRunDirectory(runDir, except === undefined ? {} : { except })) return `${runDir} already holds a run`;
  return null;
}

/**
 * Checks, writing nothing, that `runDir` can become a new run directory: a
 * directory (or nothing) that holds no run — a fork target must be empty —
 * and that lies in no other run directory.
 *
 * @param runDir - the new run's directory.
 * @param kind - `run directory` (train) or `fork target`.
 * @throws TrainerError `TRAINER_RUN_INVALID` naming what is in the way, `TRAINER_RUN_LOCKED` when a live process holds the run there, `TRAINER_IO` when the path cannot be examined.
 */
export function assertNewRunDirectory(runDir: string, kind: NewRunKind): void {
  let info;
  try {
    info = statSync(runDir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw new TrainerError('TRAINER_IO', `cannot use ${runDir} as a ${kind}: ${(e as Error).message}`, { path: runDir, cause: e });
  }
  if (info !== undefined && !info.isDirectory()) throw new TrainerError('TRAINER_RUN_INVALID', `${runDir} exists and is not a directory; a run needs a new or empty directory`, { path: runDir });
  // A lock alone is left to the lock's own rules (a live owner: TRAINER_RUN_LOCKED; a dead one's is taken over).
  const occupied = occupiedBy(runDir, kind, RUN_FILES.lock);
  if (occupied !== null) {
    // A live owner's run (being created or trained) is said as such: the same refusal resume gives.
    const holder = lockHolder(runDir);
    if (holder?.state === 'alive') throw new TrainerError('TRAINER_RUN_LOCKED', `${runDir} is locked: ${holder.why}; wait for it or stop it first`, { path: path.join(runDir, RUN_FILES.lock) });
    throw new TrainerError('TRAINER_RUN_INVALID', kind === 'fork target' ? occupied : `${occupied}; resume it (resumeRun) or choose another directory`, { path: runDir });
  }
  const outer = enclosingRunDirectory(path.dirname(path.resolve(runDir)));
  if (outer !== null) {
    throw new TrainerError('TRAINER_RUN_INVALID', `${runDir} lies inside the run directory ${outer}; a new run needs a directory of its own, outside any run (only a run's own trainer writes there)`, {
      path: runDir,
    });
  }
}

/** A new run directory, created and locked by this process. */
export interface NewRunDirectory {
  /** The run's lock (release it when the run ends). */
  readonly lock: RunLock;
  /**
   * Undoes a start that failed: removes the run's entries this process wrote
   * (those absent when it took the lock), releases the lock and removes the
   * directories it created, only if empty. Never throws.
   */
  abandon(): void;
}

/**
 * Creates and locks a new run directory (see the module comment): makes the
 * missing directories, takes the lock, and checks again — holding it — that
 * no run is there, so that of two racing creators exactly one continues.
 *
 * @param runDir - the new run's directory (checked with {@link assertNewRunDirectory} first).
 * @param kind - `run directory` (train) or `fork target`.
 * @returns the lock and the undo of a failed start.
 * @throws TrainerError `TRAINER_RUN_INVALID` (a run is there, or appeared meanwhile; a file in the way), `TRAINER_RUN_LOCKED` (another creator holds it), `TRAINER_IO` (cannot be created).
 */
export function createRunDirectory(runDir: string, kind: NewRunKind): NewRunDirectory {
  let created: string[];
  try {
    created = makeDirectories(runDir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new TrainerError(code === 'ENOTDIR' ? 'TRAINER_RUN_INVALID' : 'TRAINER_IO', `cannot create the ${kind} ${runDir}: ${(e as Error).message}`, { path: runDir, cause: e });
  }
  hooks.beforeLock?.(runDir);
  // A creator that cannot take the lock touches nothing: the directories it made may already be another's run.
  const lock = acquireRunLock(runDir);
  const occupied = occupiedBy(runDir, kind, RUN_FILES.lock);
  if (occupied !== null) {
    lock();
    throw new TrainerError('TRAINER_RUN_INVALID', `${occupied} (created concurrently by another process); nothing was changed`, { path: runDir });
  }
  const absent = RUN_ENTRIES.filter((name) => !entryExists(path.join(runDir, name)));
  return {
    lock,
    abandon: () => {
      for (const name of absent) {
        try {
          rmSync(path.join(runDir, name), { recursive: true, force: true });
        } catch {
          // what cannot be removed stays; the lock is released below all the same
        }
      }
      lock();
      // Only directories this process made, and only if empty (rmdir never removes content).
      for (const dir of [...created].reverse()) {
        try {
          rmdirSync(dir);
        } catch {
          break;
        }
      }
    },
  };
}
