/**
 * Atomic file replacement (../../SPEC.md §11): a unique temporary file in the
 * destination's directory created exclusively, written, fsynced and closed,
 * renamed over the destination, then the directory fsynced. On any failure
 * the temporary file is removed; the previous destination is never deleted
 * first, so at every instant the destination is either the complete old
 * file or the complete new one.
 *
 * Only a regular file is ever replaced (../../SPEC.md §15.4): an existing
 * destination that is a directory, FIFO, socket or device node (or a symbolic
 * link to one) is refused before anything is created, and checked again just
 * before the rename — a rename would put a regular file in the place of a
 * device. The old destination is never opened in a way that can block.
 */
import { constants } from 'node:fs';
import { lstat, open, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { FormatError } from '../errors.ts';
import { describeFileKind, fileKindOf, type FileKind } from './regular-file.ts';

/** The file-system calls the atomic writer makes (injectable to test failures). */
export interface AtomicFileSystem {
  /** Open a file; flags `'wx'` (create exclusively) for the temporary, `'r'` for the directory. */
  open(path: string, flags: 'wx' | 'r'): Promise<AtomicFileHandle>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
}

/** The subset of `fs/promises` FileHandle the writer uses. */
export interface AtomicFileHandle {
  write(buffer: Uint8Array, offset: number, length: number, position: number): Promise<{ bytesWritten: number }>;
  sync(): Promise<void>;
  /** Optional early flush of data written so far (lets disk writeback overlap with producing the rest). */
  datasync?(): Promise<void>;
  close(): Promise<void>;
}

/** The real file system (`node:fs/promises`). */
export const nodeFileSystem: AtomicFileSystem = {
  open: async (p, flags) => {
    const handle: FileHandle = await open(p, flags);
    return {
      // eslint-disable-next-line max-params -- AtomicFileHandle.write is node:fs/promises FileHandle.write's signature (a public type), forwarded as is
      write: (buffer, offset, length, position) => handle.write(buffer, offset, length, position),
      sync: () => handle.sync(),
      datasync: () => handle.datasync(),
      close: () => handle.close(),
    };
  },
  rename: (from, to) => rename(from, to),
  unlink: (p) => unlink(p),
};

/** Options of the atomic writers. */
export interface AtomicWriteOptions {
  /** File-system implementation (default: {@link nodeFileSystem}); tests inject failures here. */
  readonly fileSystem?: AtomicFileSystem;
}

/** Attempts at a free temporary name before giving up (../../SPEC.md §11 step 3). */
export const TEMP_NAME_ATTEMPTS = 128;

// Process-wide serial: starts at 0, +1 on every attempt, never reset (../../SPEC.md §11).
let serial = 0;

/**
 * The temporary-file name for `fileName`: `.<name>.tmp-<pid>-<serial>`.
 * @param fileName - destination file name (last path component).
 * @param pid - process id.
 * @param n - serial.
 * @returns the temporary name.
 */
export function temporaryName(fileName: string, pid: number, n: number): string {
  return `.${fileName}.tmp-${pid}-${n}`;
}

function ioError(message: string, cause: unknown, field: string): FormatError {
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new FormatError('FORMAT_IO', `${message}: ${detail}`, { reason: field, field, cause });
}

/**
 * What an existing destination is, following a symbolic link: null when
 * nothing is there (or a dangling link, which the rename replaces).
 */
async function existingKind(destination: string): Promise<{ readonly kind: FileKind; readonly viaLink: boolean } | null> {
  const missing = (e: unknown): boolean => ['ENOENT', 'ENOTDIR'].includes((e as { code?: unknown }).code as string);
  let info;
  try {
    info = await lstat(destination);
  } catch (e) {
    if (missing(e)) return null;
    throw ioError(`cannot examine ${destination}`, e, 'destination');
  }
  if (!info.isSymbolicLink()) return { kind: fileKindOf(info), viaLink: false };
  try {
    return { kind: fileKindOf(await stat(destination)), viaLink: true };
  } catch (e) {
    if (missing(e) || (e as { code?: unknown }).code === 'ELOOP') return null;
    throw ioError(`cannot examine ${destination}`, e, 'destination');
  }
}

/**
 * Refuses a destination that exists and is not a regular file (a directory,
 * FIFO, socket, device node, or a symbolic link to one): renaming over it
 * would replace it by a regular file.
 *
 * @throws FormatError FORMAT_IO, reason `not-a-regular-file`.
 */
async function assertReplaceable(destination: string): Promise<void> {
  const found = await existingKind(destination);
  if (found === null || found.kind === 'file') return;
  const what = `${found.viaLink ? 'a symbolic link to ' : ''}${describeFileKind(found.kind)}`;
  throw new FormatError('FORMAT_IO', `cannot replace ${destination}: it is ${what}, not a regular file (an atomic replacement renames a new regular file over it)`, {
    reason: 'not-a-regular-file',
    field: 'destination',
    expected: 'a regular file or nothing',
    found: `${found.viaLink ? 'symbolic-link:' : ''}${found.kind}`,
  });
}

/**
 * Opens the previous destination so that its blocks are freed when this
 * handle is closed after the rename, not inside `rename()` (tens of
 * milliseconds for a large checkpoint). Only a regular file that is not a
 * link, opened `O_NONBLOCK | O_NOFOLLOW` and checked to be the same inode:
 * nothing here can block or follow a link elsewhere. Any doubt gives no
 * handle (the optimisation is skipped, the replacement is the same).
 */
async function holdPrevious(destination: string): Promise<FileHandle | undefined> {
  let handle: FileHandle | undefined;
  try {
    const before = await lstat(destination);
    if (!before.isFile()) return undefined;
    handle = await open(destination, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    const now = await handle.stat();
    if (now.isFile() && now.ino === before.ino && now.dev === before.dev) return handle;
  } catch {
    // no handle: the rename frees the blocks itself
  }
  await handle?.close().catch(() => undefined);
  return undefined;
}

function isExists(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'EEXIST';
}

/**
 * Writes `length` bytes from `buffer` at `position`, looping over short writes.
 * @param handle - open file.
 * @param buffer - source bytes.
 * @param position - file offset.
 * @returns when everything is written.
 */
export async function writeFully(handle: AtomicFileHandle, buffer: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < buffer.length) {
    const { bytesWritten } = await handle.write(buffer, done, buffer.length - done, position + done);
    if (bytesWritten <= 0) throw new Error(`write made no progress at offset ${position + done}`);
    done += bytesWritten;
  }
}

/**
 * Replaces `destination` atomically with content produced by `writeContent`.
 *
 * @param destination - file path (must have a final file-name component).
 * @param writeContent - writes the complete content into the open temporary file.
 * @param options - file-system injection.
 * @returns when the new file is durable.
 * @throws FormatError FORMAT_LAYOUT (no file name), FORMAT_UNSUPPORTED_ATOMIC_REPLACEMENT
 *   (Windows), FORMAT_IO (reason `not-a-regular-file`: the destination exists and is not a regular
 *   file, refused before anything is created; or any file-system failure; the temporary file is removed).
 */
export async function replaceFileAtomic(destination: string, writeContent: (handle: AtomicFileHandle) => Promise<void>, options: AtomicWriteOptions = {}): Promise<void> {
  if (typeof destination !== 'string') throw new TypeError('destination must be a string path');
  const fsys = options.fileSystem ?? nodeFileSystem;
  if (process.platform === 'win32') {
    throw new FormatError('FORMAT_UNSUPPORTED_ATOMIC_REPLACEMENT', 'atomic replacement is supported on Unix-like platforms only (rename over an open destination and directory fsync)', {
      reason: 'platform',
      found: process.platform,
    });
  }
  const trimmed = destination.replace(/\/+$/, '');
  const fileName = path.basename(trimmed);
  if (destination === '' || trimmed === '' || fileName === '' || fileName === '.' || fileName === '..') {
    throw new FormatError('FORMAT_LAYOUT', `destination path "${destination}" has no final file-name component`, { reason: 'destination-path', field: 'path', found: destination });
  }
  const directory = path.dirname(trimmed) === '' ? '.' : path.dirname(trimmed);
  await assertReplaceable(destination);
  let handle: AtomicFileHandle | undefined;
  let temp = '';
  for (let attempt = 0; attempt < TEMP_NAME_ATTEMPTS && handle === undefined; attempt++) {
    temp = path.join(directory, temporaryName(fileName, process.pid, serial++));
    try {
      handle = await fsys.open(temp, 'wx');
    } catch (e) {
      if (!isExists(e)) throw ioError(`cannot create temporary file ${temp}`, e, 'create-temporary');
    }
  }
  if (handle === undefined) {
    throw new FormatError('FORMAT_IO', `no free temporary name for ${destination} after ${TEMP_NAME_ATTEMPTS} attempts (last ${temp})`, { reason: 'create-temporary', field: 'create-temporary' });
  }
  let stage = 'write';
  let unclosed: AtomicFileHandle | undefined = handle;
  let previous: FileHandle | undefined;
  try {
    await writeContent(handle);
    stage = 'sync';
    await handle.sync();
    stage = 'close';
    unclosed = undefined;
    await handle.close();
    stage = 'rename';
    // Checked again: the destination may have been replaced while the content was written.
    await assertReplaceable(destination);
    // Keep the previous destination open across the rename: its inode then
    // outlives the rename and the file system frees its blocks when this
    // handle is closed in the background below, instead of inside rename()
    // (tens of milliseconds for a large checkpoint). The destination is
    // never deleted or truncated by us; rename() still replaces it atomically.
    previous = await holdPrevious(destination);
    await fsys.rename(temp, destination);
    stage = 'sync-directory';
    const dir = await fsys.open(directory, 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
    if (previous !== undefined) void previous.close().catch(() => undefined);
  } catch (e) {
    if (previous !== undefined) await previous.close().catch(() => undefined);
    if (unclosed !== undefined) await unclosed.close().catch(() => undefined);
    await fsys.unlink(temp).catch(() => undefined);
    if (e instanceof FormatError && (e.code !== 'FORMAT_IO' || e.reason === 'not-a-regular-file')) throw e;
    throw ioError(`atomic save of ${destination} failed at ${stage}${stage === 'sync-directory' ? ' (the destination was already replaced)' : ''}`, e, stage);
  }
}

/**
 * Writes `bytes` to `path` atomically (../../SPEC.md §11 guarantees for any file,
 * e.g. a trainer's `job.json`): never a torn or partial destination, no
 * temporary file left behind on failure.
 *
 * @param destination - destination file.
 * @param bytes - the complete content.
 * @param options - file-system injection (tests).
 * @returns when the file is durable.
 * @throws FormatError FORMAT_IO, FORMAT_LAYOUT or FORMAT_UNSUPPORTED_ATOMIC_REPLACEMENT.
 * @example
 * ```ts
 * await writeFileAtomic('run/job.json', new TextEncoder().encode(JSON.stringify(job)));
 * ```
 */
export async function writeFileAtomic(destination: string, bytes: Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  if (!(bytes instanceof Uint8Array)) throw new TypeError('writeFileAtomic: bytes must be a Uint8Array');
  await replaceFileAtomic(destination, (handle) => writeFully(handle, bytes, 0), options);
}
