/**
 * Small durable file-system steps used by directory publication: create a file
 * exclusively and fsync it, fsync a directory, remove a tree. Synchronous on
 * purpose: they run in the save worker (off the training path) or at start-up.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, writeSync, constants } from 'node:fs';
import path from 'node:path';

/**
 * Writes `bytes` to a new file (O_CREAT | O_EXCL), fsyncs and closes it.
 *
 * @param file - a path that must not exist.
 * @param bytes - the content.
 */
export function writeNewFileDurable(file: string, bytes: Uint8Array): void {
  const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
  try {
    let offset = 0;
    while (offset < bytes.length) offset += writeSync(fd, bytes, offset, bytes.length - offset);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * fsyncs a directory so that renames and creations inside it are durable.
 *
 * @param dir - the directory.
 */
export function fsyncDirectory(dir: string): void {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * fsyncs an existing file by path (its data and size), e.g. `loss.jsonl` before
 * a checkpoint that records its length is published.
 *
 * @param file - the file.
 */
export function fsyncFile(file: string): void {
  const fd = openSync(file, constants.O_RDONLY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

let serial = 0;

/**
 * A fresh, not yet existing sibling name `.<prefix>-<pid>-<serial>` inside `dir`
 * (the serial is process-wide and never reset).
 *
 * @param dir - parent directory.
 * @param prefix - e.g. `tmp-latest`.
 * @returns the absolute path (not created).
 */
export function uniqueSibling(dir: string, prefix: string): string {
  serial += 1;
  return path.join(dir, `.${prefix}-${process.pid}-${serial}`);
}

/**
 * Creates a fresh temporary directory inside `dir`.
 *
 * @param dir - parent directory (must exist).
 * @param prefix - name prefix.
 * @returns the created directory.
 */
export function makeTempDirectory(dir: string, prefix: string): string {
  for (let attempt = 0; attempt < 128; attempt += 1) {
    const candidate = uniqueSibling(dir, prefix);
    try {
      mkdirSync(candidate);
      return candidate;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
  throw new Error(`could not create a temporary directory in ${dir} after 128 attempts`);
}

/**
 * Moves `target` out of the way by renaming it to a hidden trash name, then
 * deletes it. The rename is the atomic part; a crash before the deletion only
 * leaves a `.trash-*` directory that start-up cleans.
 *
 * @param parent - the directory holding `target`.
 * @param target - absolute path of the entry to remove.
 */
export function discardEntry(parent: string, target: string): void {
  const trash = uniqueSibling(parent, `trash-${path.basename(target)}`);
  renameSync(target, trash);
  rmSync(trash, { recursive: true, force: true });
}

/**
 * Removes leftover `.tmp-*` and `.trash-*` entries of interrupted saves. They
 * are never read as checkpoints.
 *
 * @param dir - a checkpoints directory.
 * @returns the names removed.
 */
export function removeLeftovers(dir: string): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return removed;
  }
  for (const name of names) {
    if (name.startsWith('.tmp-') || name.startsWith('.trash-')) {
      rmSync(path.join(dir, name), { recursive: true, force: true });
      removed.push(name);
    }
  }
  return removed;
}
