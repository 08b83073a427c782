/**
 * What makes a folder a run directory, in one place (../../../docs/DESIGN.md
 * "A run directory"): the names of its entries, and the test every writer
 * uses — the trainer before it creates a run, the CLI before it writes an
 * export or an import. A folder holding `run.json`, `run.lock` or
 * `checkpoints/` is a run directory (one being created holds only its
 * `run.lock`); only the run's own trainer, holding its lock, writes there.
 */
import { lstatSync, realpathSync } from 'node:fs';
import path from 'node:path';

/** File names inside a run directory. */
export const RUN_FILES = {
  manifest: 'run.json',
  lossLog: 'loss.jsonl',
  samples: 'samples.json',
  lock: 'run.lock',
  checkpoints: 'checkpoints',
  archive: 'archive',
  state: 'state.llmcp',
  job: 'job.json',
} as const;

/** The entries that make a folder a run directory: any one of them, of any kind. */
export const RUN_DIRECTORY_MARKERS: readonly string[] = [RUN_FILES.manifest, RUN_FILES.lock, RUN_FILES.checkpoints];

/**
 * Whether anything (of any kind, a dangling link too) is at `file`.
 *
 * @param file - a path.
 * @returns true when `lstat` finds an entry.
 */
export function entryExists(file: string): boolean {
  try {
    lstatSync(file);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether `dir` is a run directory: it holds `run.json`, `run.lock` or
 * `checkpoints/` (of any kind: a damaged run is still a run).
 *
 * @param dir - a directory.
 * @param options - `except`: a marker to disregard (a creator holding the new run's `run.lock` asks whether anything else is there).
 * @returns true for a run directory.
 * @example
 * ```ts
 * isRunDirectory('runs/a'); // true once `llmcp train runs/a` has started
 * ```
 */
export function isRunDirectory(dir: string, options: { readonly except?: string } = {}): boolean {
  return RUN_DIRECTORY_MARKERS.some((name) => name !== options.except && entryExists(path.join(dir, name)));
}

/**
 * The run directory that `dir` is or lies in, at any depth, with symbolic
 * links resolved (the nearest existing ancestor of `dir` is resolved, then it
 * and every folder above it are tested), or null. A writer asks this of the
 * folder that is to receive a new entry: only a run's own trainer publishes
 * there.
 *
 * @param dir - the folder that would receive the entry (need not exist yet).
 * @returns the run directory (real path), or null.
 * @example
 * ```ts
 * enclosingRunDirectory('runs/a/checkpoints'); // '/home/me/runs/a'
 * enclosingRunDirectory('exports');            // null
 * ```
 */
export function enclosingRunDirectory(dir: string): string | null {
  let at = path.resolve(dir);
  for (;;) {
    try {
      at = realpathSync(at);
      break;
    } catch {
      const parent = path.dirname(at);
      if (parent === at) return null;
      at = parent;
    }
  }
  for (;;) {
    if (isRunDirectory(at)) return at;
    const parent = path.dirname(at);
    if (parent === at) return null;
    at = parent;
  }
}
