/**
 * The one input rule for every file llmcp reads as data — a checkpoint, a
 * config, a corpus, a split manifest, a tokenizer file, a file of a run
 * directory — and the file kinds both the input and the output rule name:
 *
 * - the path must name a regular file (directly or through symbolic links):
 *   a directory, FIFO, socket or device node is refused, typed, naming its
 *   kind — before it is opened, so a device is never opened for reading;
 * - it is opened `O_NONBLOCK`, so a file swapped for a FIFO between the check
 *   and the open cannot block the reader, and the open descriptor is checked
 *   again (`fstat`): the bytes read are a regular file's;
 * - a whole-file read is bounded: a file above the caller's limit is refused
 *   before anything is allocated, and one that grows past it while read too.
 *
 * Errors are `FormatError`s with code `FORMAT_IO` and a `reason`:
 * `not-found` (nothing at the path, or a dangling link), `not-a-regular-file`
 * (`found`: the kind, see {@link describeFileKind}), `too-large` (`found`: the
 * size), `open` or `read` (any other failure; the errno is in the cause).
 */
import { constants as bufferConstants } from 'node:buffer';
import { closeSync, constants, fstatSync, openSync, readFileSync, statSync, type Stats } from 'node:fs';
import { open, stat, type FileHandle } from 'node:fs/promises';
import { FormatError } from '../errors.ts';

/** What a path names, by `stat`/`lstat`. */
export type FileKind = 'file' | 'directory' | 'symbolic-link' | 'fifo' | 'socket' | 'character-device' | 'block-device' | 'unknown';

/**
 * The kind of a file from its stats (`lstat` stats say `symbolic-link` for a link, `stat` stats the kind it leads to).
 *
 * @param stats - from `stat`, `lstat` or `fstat`.
 * @returns the kind.
 */
export function fileKindOf(stats: Pick<Stats, 'isFile' | 'isDirectory' | 'isSymbolicLink' | 'isFIFO' | 'isSocket' | 'isCharacterDevice' | 'isBlockDevice'>): FileKind {
  if (stats.isFile()) return 'file';
  if (stats.isDirectory()) return 'directory';
  if (stats.isSymbolicLink()) return 'symbolic-link';
  if (stats.isFIFO()) return 'fifo';
  if (stats.isSocket()) return 'socket';
  if (stats.isCharacterDevice()) return 'character-device';
  if (stats.isBlockDevice()) return 'block-device';
  return 'unknown';
}

const KIND_TEXT: Readonly<Record<FileKind, string>> = {
  file: 'a regular file',
  directory: 'a directory',
  'symbolic-link': 'a symbolic link',
  fifo: 'a FIFO (named pipe)',
  socket: 'a socket',
  'character-device': 'a character device',
  'block-device': 'a block device',
  unknown: 'a special file',
};

/**
 * A file kind in words, for messages (`a FIFO (named pipe)`, `a character device`).
 *
 * @param kind - the kind.
 * @returns the words, with the article.
 */
export function describeFileKind(kind: FileKind): string {
  return KIND_TEXT[kind];
}

/** Options of the whole-file readers. */
export interface ReadRegularFileOptions {
  /** The most bytes accepted (a larger file is refused with reason `too-large`); at most 2^31 − 1 (Node's buffer limit). */
  readonly maxBytes: number;
  /** What the file is, for messages (e.g. `'config'`); default `'file'`. */
  readonly what?: string;
}

const MAX_BUFFER_BYTES = 2 ** 31 - 1;

/** The largest file read whole as bytes: 2^31 − 1 (Node's buffer limit on every platform). */
export const MAX_FILE_BYTES: number = MAX_BUFFER_BYTES;

/**
 * The largest file read whole and decoded as one string (a config, a text
 * corpus file, a tokenizer file): the engine's longest string
 * (`buffer.constants.MAX_STRING_LENGTH`, 2^29 − 24 on 64-bit V8), since n
 * bytes of UTF-8 decode to at most n UTF-16 code units.
 */
export const MAX_TEXT_FILE_BYTES: number = Math.min(bufferConstants.MAX_STRING_LENGTH, MAX_BUFFER_BYTES);

function errnoOf(e: unknown): string {
  return typeof e === 'object' && e !== null && typeof (e as { code?: unknown }).code === 'string' ? (e as { code: string }).code : '';
}

/** The error of a failed open or read (`at`: the path and what it is, for messages). */
function failure(at: { readonly file: string; readonly what: string }, stage: 'open' | 'read', cause: unknown): FormatError {
  const { file, what } = at;
  const code = errnoOf(cause);
  if (code === 'ENOENT' || code === 'ENOTDIR') {
    return new FormatError('FORMAT_IO', `${what} ${file} does not exist`, { reason: 'not-found', field: 'path', found: code, cause });
  }
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new FormatError('FORMAT_IO', `cannot ${stage} ${what} ${file}: ${detail}`, { reason: stage, field: 'path', found: code, cause });
}

function notRegular(file: string, what: string, kind: FileKind): FormatError {
  return new FormatError('FORMAT_IO', `${what} ${file} is ${describeFileKind(kind)}, expected a regular file`, {
    reason: 'not-a-regular-file',
    field: 'path',
    expected: 'a regular file',
    found: kind,
  });
}

function tooLarge(at: { readonly file: string; readonly what: string }, size: number, maxBytes: number): FormatError {
  const { file, what } = at;
  return new FormatError('FORMAT_IO', `${what} ${file} is ${size} bytes, above the limit of ${maxBytes} bytes`, {
    reason: 'too-large',
    field: 'path',
    expected: `at most ${maxBytes} bytes`,
    found: String(size),
  });
}

/** `O_RDONLY | O_NONBLOCK`: a FIFO swapped in after the check opens at once instead of waiting for a writer. */
const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK;

function checkOptions(options: ReadRegularFileOptions): void {
  if (!Number.isSafeInteger(options.maxBytes) || options.maxBytes < 0 || options.maxBytes > MAX_BUFFER_BYTES) {
    throw new RangeError(`maxBytes must be an integer in 0…${MAX_BUFFER_BYTES}, got ${options.maxBytes}`);
  }
}

/**
 * Opens a file for reading under the input rule: it must be a regular file
 * (checked by `stat` before the open, so no device is opened, and by `fstat`
 * of the open descriptor); the open never blocks.
 *
 * @param file - the path.
 * @param what - what the file is, for messages (default `'file'`).
 * @returns the open handle (the caller closes it) and the file's stats.
 * @throws FormatError `FORMAT_IO` (reason `not-found`, `not-a-regular-file` or `open`).
 * @example
 * ```ts
 * const { handle, stats } = await openRegularFile('state.llmcp', 'checkpoint');
 * ```
 */
export async function openRegularFile(file: string, what = 'file'): Promise<{ readonly handle: FileHandle; readonly stats: Stats }> {
  let before: Stats;
  try {
    before = await stat(file);
  } catch (e) {
    throw failure({ file, what }, 'open', e);
  }
  if (!before.isFile()) throw notRegular(file, what, fileKindOf(before));
  let handle: FileHandle;
  try {
    handle = await open(file, READ_FLAGS);
  } catch (e) {
    throw failure({ file, what }, 'open', e);
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw notRegular(file, what, fileKindOf(stats));
    return { handle, stats };
  } catch (e) {
    await handle.close().catch(() => undefined);
    if (e instanceof FormatError) throw e;
    throw failure({ file, what }, 'open', e);
  }
}

/**
 * The synchronous {@link openRegularFile}.
 *
 * @param file - the path.
 * @param what - what the file is, for messages (default `'file'`).
 * @returns the open descriptor (the caller closes it) and the file's stats.
 * @throws FormatError `FORMAT_IO` (reason `not-found`, `not-a-regular-file` or `open`).
 */
export function openRegularFileSync(file: string, what = 'file'): { readonly fd: number; readonly stats: Stats } {
  let before: Stats;
  try {
    before = statSync(file);
  } catch (e) {
    throw failure({ file, what }, 'open', e);
  }
  if (!before.isFile()) throw notRegular(file, what, fileKindOf(before));
  let fd: number;
  try {
    fd = openSync(file, READ_FLAGS);
  } catch (e) {
    throw failure({ file, what }, 'open', e);
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw notRegular(file, what, fileKindOf(stats));
    return { fd, stats };
  } catch (e) {
    closeSync(fd);
    if (e instanceof FormatError) throw e;
    throw failure({ file, what }, 'open', e);
  }
}

/**
 * Reads a whole file under the input rule: a regular file of at most
 * `maxBytes` bytes (refused from its size before anything is read, and if it
 * grows past the limit while it is read).
 *
 * @param file - the path.
 * @param options - the size limit and what the file is.
 * @returns its bytes.
 * @throws FormatError `FORMAT_IO` (reason `not-found`, `not-a-regular-file`, `too-large`, `open` or `read`).
 * @example
 * ```ts
 * const bytes = readRegularFileSync('train.json', { maxBytes: 1 << 28, what: 'config' });
 * ```
 */
export function readRegularFileSync(file: string, options: ReadRegularFileOptions): Uint8Array {
  checkOptions(options);
  const what = options.what ?? 'file';
  const { fd, stats } = openRegularFileSync(file, what);
  try {
    if (stats.size > options.maxBytes) throw tooLarge({ file, what }, stats.size, options.maxBytes);
    let bytes: Buffer;
    try {
      bytes = readFileSync(fd);
    } catch (e) {
      throw failure({ file, what }, 'read', e);
    }
    if (bytes.length > options.maxBytes) throw tooLarge({ file, what }, bytes.length, options.maxBytes);
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  } finally {
    closeSync(fd);
  }
}

/**
 * The asynchronous {@link readRegularFileSync}.
 *
 * @param file - the path.
 * @param options - the size limit and what the file is.
 * @returns its bytes.
 * @throws FormatError `FORMAT_IO` (reason `not-found`, `not-a-regular-file`, `too-large`, `open` or `read`).
 */
export async function readRegularFile(file: string, options: ReadRegularFileOptions): Promise<Uint8Array> {
  checkOptions(options);
  const what = options.what ?? 'file';
  const { handle, stats } = await openRegularFile(file, what);
  try {
    if (stats.size > options.maxBytes) throw tooLarge({ file, what }, stats.size, options.maxBytes);
    let bytes: Buffer;
    try {
      bytes = await handle.readFile();
    } catch (e) {
      throw failure({ file, what }, 'read', e);
    }
    if (bytes.length > options.maxBytes) throw tooLarge({ file, what }, bytes.length, options.maxBytes);
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  } finally {
    await handle.close().catch(() => undefined);
  }
}
