/**
 * Small durable file-system steps used by directory publication: create a file
 * exclusively and fsync it, fsync a directory, remove a tree. Synchronous on
 * purpose: they run in the save worker (off the training path) or at start-up.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, statSync, writeSync, constants } from 'node:fs';
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
    writeAllSync(fd, bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Largest single write: `writeSync` refuses lengths beyond 2^31 − 1. */
const WRITE_CHUNK = 1 << 30;

/**
 * Writes all of `bytes` at the file's position, in chunks `writeSync` accepts
 * (so files beyond 2 GiB are written too), retrying short writes.
 *
 * @param fd - an open file descriptor.
 * @param bytes - the content.
 */
export function writeAllSync(fd: number, bytes: Uint8Array): void {
  let offset = 0;
  while (offset < bytes.length) offset += writeSync(fd, bytes, offset, Math.min(WRITE_CHUNK, bytes.length - offset));
}

/**
 * Creates `dir` and any missing ancestors, one `mkdir` at a time. Unlike
 * `mkdirSync(dir, { recursive: true })` it cannot loop (Node's recursive mkdir
 * spins for ever where `mkdir` answers ENOENT under an existing parent, as in
 * `/proc`), and it says which directories it created, so that a failed start
 * can remove exactly those.
 *
 * @param dir - the directory.
 * @returns the directories created, outermost first (empty when `dir` existed).
 * @throws the `mkdir` error (ENOENT, EACCES, ENOTDIR, …), or ENOTDIR when `dir` or an ancestor exists and is not a directory.
 */
export function makeDirectories(dir: string): string[] {
  const missing: string[] = [];
  let at = path.resolve(dir);
  for (;;) {
    let info;
    try {
      info = statSync(at);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      missing.push(at);
      const parent = path.dirname(at);
      if (parent === at) break;
      at = parent;
      continue;
    }
    if (!info.isDirectory()) throw Object.assign(new Error(`ENOTDIR: ${at} exists and is not a directory`), { code: 'ENOTDIR', path: at });
    break;
  }
  const created: string[] = [];
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d);
      created.push(d);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') {
        // The parent exists (it was found or just made): this file system refuses new directories here.
        throw Object.assign(new Error(`mkdir ${d} failed with ENOENT although ${path.dirname(d)} exists (its file system does not allow new directories there)`), { code, path: d });
      }
      if (code !== 'EEXIST' || !statSync(d).isDirectory()) throw e;
    }
  }
  return created;
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
  // O_NONBLOCK: a FIFO swapped in for the file cannot block the save (its fsync then fails).
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
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
