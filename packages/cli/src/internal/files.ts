/**
 * Input and output files of the commands, with user-facing errors: a missing
 * path, a directory where a file belongs, an unreadable file, an output that
 * already exists. Outputs are written atomically (temporary file, fsync,
 * rename) so a failed command never leaves a partial file behind.
 */
import { lstatSync, readFileSync, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import { decodeCheckpoint, isFormatError, type DecodedCheckpoint } from '@llmcp/format';
import { detectFileKind } from '@llmcp/format/foreign';
import { writeFileAtomic } from '@llmcp/format/node';
import type { CliContext } from '../context.ts';
import { CliError } from '../errors.ts';

/** Largest input read into memory in one piece (Node's Buffer limit is 2 GiB − 1 on every platform). */
export const MAX_INPUT_BYTES: number = 2 ** 31 - 1;

/**
 * @param ctx - the command context.
 * @param file - a path as typed by the user.
 * @returns the absolute path.
 */
export function resolvePath(ctx: CliContext, file: string): string {
  return path.resolve(ctx.cwd, file);
}

function statOrNull(absolute: string): Stats | null {
  try {
    return statSync(absolute);
  } catch (e) {
    if ((e as { code?: unknown }).code === 'ENOENT' || (e as { code?: unknown }).code === 'ENOTDIR') return null;
    throw new CliError('CLI_READ_FAILED', `cannot read ${absolute}: ${(e as Error).message}`, { path: absolute, cause: e });
  }
}

/** What Node puts into `process.argv` for bytes of the command line that are not valid UTF-8. */
const REPLACEMENT_CHARACTER = '\uFFFD';

/**
 * The error for a path that names nothing: `CLI_PATH_NOT_UTF8` when it holds
 * U+FFFD, else `CLI_FILE_NOT_FOUND`. Node decodes `process.argv` (and the
 * working directory) as UTF-8 and replaces bytes that are not valid UTF-8 by
 * U+FFFD, so a name like `bad-\xff` arrives as `bad-\uFFFD` and cannot be
 * opened; "not found" would be untrue, the file may well exist.
 *
 * @param file - the path as typed.
 * @param absolute - the resolved path.
 * @param what - what it is for, e.g. `'checkpoint'`.
 * @returns the error to throw.
 */
function missingPathError(file: string, absolute: string, what: string): CliError {
  if (absolute.includes(REPLACEMENT_CHARACTER)) {
    return new CliError(
      'CLI_PATH_NOT_UTF8',
      `${what} path ${file} cannot be opened: it contains U+FFFD (${REPLACEMENT_CHARACTER}), which Node substitutes for bytes of a path that are not valid UTF-8, and no file has that name`,
      { path: absolute, hint: 'rename it to a UTF-8 name, or reach it through a symbolic link (or the current directory) whose path is UTF-8' },
    );
  }
  return new CliError('CLI_FILE_NOT_FOUND', `${what} not found: ${file}`, { path: absolute, hint: 'check the path (relative paths start from the current directory)' });
}

/** What a path must be. */
export type PathKind = 'file' | 'directory' | 'file-or-directory';

/**
 * Checks that a path exists and is of the right kind.
 *
 * @param ctx - the command context.
 * @param file - the path as typed.
 * @param kind - what it must be.
 * @param what - what it is for, e.g. `'checkpoint'` (used in messages).
 * @returns the absolute path and whether it is a directory.
 * @throws CliError `CLI_FILE_NOT_FOUND`, `CLI_PATH_NOT_UTF8` or `CLI_WRONG_FILE_KIND`.
 */
export function requirePath(ctx: CliContext, file: string, kind: PathKind, what: string): { absolute: string; isDirectory: boolean; size: number } {
  const absolute = resolvePath(ctx, file);
  const stats = statOrNull(absolute);
  if (stats === null) throw missingPathError(file, absolute, what);
  const isDirectory = stats.isDirectory();
  if (kind === 'file' && isDirectory) {
    throw new CliError('CLI_WRONG_FILE_KIND', `${file} is a directory, expected a ${what} file`, {
      path: absolute,
      // Never a suggestion of a file that is not there.
      hint: what === 'checkpoint' && statOrNull(path.join(absolute, 'state.llmcp'))?.isFile() === true ? `give the file inside it: ${path.join(file, 'state.llmcp')}` : 'give a file path',
    });
  }
  if (kind === 'directory' && !isDirectory) {
    throw new CliError('CLI_WRONG_FILE_KIND', `${file} is not a directory, expected a ${what}`, { path: absolute, hint: 'give the directory path' });
  }
  if (!isDirectory && !stats.isFile()) {
    throw new CliError('CLI_WRONG_FILE_KIND', `${file} is not a regular file, expected a ${what} file`, { path: absolute });
  }
  return { absolute, isDirectory, size: stats.size };
}

function lstatOrNull(absolute: string): Stats | null {
  try {
    return lstatSync(absolute);
  } catch (e) {
    if ((e as { code?: unknown }).code === 'ENOENT' || (e as { code?: unknown }).code === 'ENOTDIR') return null;
    throw new CliError('CLI_READ_FAILED', `cannot read ${absolute}: ${(e as Error).message}`, { path: absolute, cause: e });
  }
}

/**
 * Checks, before any work starts, that a directory a command is to create
 * (or reuse, when it exists) can be: it is a directory if it exists;
 * otherwise its nearest existing ancestor is a directory in which a new
 * directory can be made (probed by making and removing the first missing
 * one). This turns what would fail late and obscurely — `EEXIST` for a
 * regular file, `ENOTDIR` below one, or Node's recursive mkdir retrying
 * forever where mkdir fails with ENOENT although the parent exists
 * (`/proc/x`) — into a clear error first.
 *
 * @param ctx - the command context.
 * @param dir - the directory as typed.
 * @param what - what it is for, e.g. `'run directory'` (used in messages).
 * @returns the absolute path.
 * @throws CliError `CLI_WRONG_FILE_KIND` (a non-directory in the way), `CLI_PATH_NOT_UTF8`, or `CLI_WRITE_FAILED` (cannot be created).
 */
export function requireCreatableDirectory(ctx: CliContext, dir: string, what: string): string {
  const absolute = resolvePath(ctx, dir);
  let existing = absolute;
  let firstMissing: string | null = null;
  for (;;) {
    if (lstatOrNull(existing) !== null) break;
    firstMissing = existing;
    const parent = path.dirname(existing);
    if (parent === existing) break;
    existing = parent;
  }
  const target = statOrNull(existing);
  if (firstMissing === null) {
    if (target === null || !target.isDirectory()) {
      throw new CliError('CLI_WRONG_FILE_KIND', `${dir} is not a directory, expected a new ${what}`, { path: absolute, hint: `give a new (or empty) directory for the ${what === 'run directory' ? 'run' : what}` });
    }
    return absolute;
  }
  if (absolute.includes(REPLACEMENT_CHARACTER)) throw missingPathError(dir, absolute, what);
  if (target === null || !target.isDirectory()) {
    throw new CliError('CLI_WRONG_FILE_KIND', `cannot create ${what} ${dir}: ${existing} is not a directory${target === null ? ' (a symbolic link to nothing)' : ''}`, {
      path: absolute,
      hint: 'give a path below an existing directory',
    });
  }
  // No probe by creating anything: another process may be creating this very directory (a lost race must touch
  // nothing), and the trainer creates it without Node's recursive mkdir, reporting a file system that refuses it.
  return absolute;
}

/**
 * Reads a whole input file.
 *
 * @param ctx - the command context.
 * @param file - the path as typed.
 * @param what - what it is for (used in messages).
 * @returns its bytes.
 * @throws CliError `CLI_FILE_NOT_FOUND`, `CLI_WRONG_FILE_KIND` or `CLI_READ_FAILED`.
 */
export function readInputFile(ctx: CliContext, file: string, what: string): Uint8Array {
  const { absolute, size } = requirePath(ctx, file, 'file', what);
  if (size > MAX_INPUT_BYTES) {
    throw new CliError('CLI_READ_FAILED', `${file} is ${size} bytes; at most ${MAX_INPUT_BYTES} bytes can be read`, { path: absolute });
  }
  try {
    const buffer = readFileSync(absolute);
    return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  } catch (e) {
    throw new CliError('CLI_READ_FAILED', `cannot read ${file}: ${(e as Error).message}`, { path: absolute, cause: e });
  }
}

/**
 * Reads and fully validates a checkpoint file.
 *
 * @param ctx - the command context.
 * @param file - the path as typed.
 * @returns the decoded checkpoint and its bytes.
 * @throws CliError `CLI_INVALID_CHECKPOINT` (with the format code) or a read error.
 */
export function readCheckpointFile(ctx: CliContext, file: string): { checkpoint: DecodedCheckpoint; bytes: Uint8Array } {
  const bytes = readInputFile(ctx, file, 'checkpoint');
  try {
    return { checkpoint: decodeCheckpoint(bytes), bytes };
  } catch (e) {
    if (!isFormatError(e)) throw e;
    const at = e.offset === undefined ? '' : ` at offset ${e.offset}`;
    const foreign = e.code === 'FORMAT_BAD_MAGIC' ? detectFileKind(bytes) : 'unknown';
    if (foreign === 'safetensors' || foreign === 'gguf') {
      throw new CliError('CLI_INVALID_CHECKPOINT', `${file} is ${foreign === 'gguf' ? 'a GGUF' : 'a safetensors'} file, not an LLMCP35 v1 checkpoint`, {
        path: resolvePath(ctx, file),
        causeCode: e.code,
        offset: 0,
        hint: `run 'llmcp inspect ${file}' to see its tensor table; this command needs an LLMCP35 checkpoint`,
        cause: e,
      });
    }
    throw new CliError('CLI_INVALID_CHECKPOINT', `${file} is not a valid LLMCP35 v1 checkpoint: ${e.code}${at}: ${e.message}`, {
      path: resolvePath(ctx, file),
      causeCode: e.code,
      ...(e.offset === undefined ? {} : { offset: e.offset }),
      hint: `run 'llmcp inspect ${file}' to see how far it parses`,
      cause: e,
    });
  }
}

/**
 * Writes an output file atomically (no partial file on failure).
 *
 * @param ctx - the command context.
 * @param file - the path as typed.
 * @param bytes - the content.
 * @param force - replace an existing file.
 * @returns the absolute path written.
 * @throws CliError `CLI_WRITE_FAILED` when the file exists without `force`, or the write fails.
 */
export async function writeOutputFile(ctx: CliContext, file: string, bytes: Uint8Array, force: boolean): Promise<string> {
  const absolute = assertOutputWritable(ctx, file, force);
  try {
    await writeFileAtomic(absolute, bytes);
  } catch (e) {
    throw new CliError('CLI_WRITE_FAILED', `cannot write ${file}: ${(e as Error).message}`, { path: absolute, cause: e });
  }
  return absolute;
}

/**
 * The output rule, checked before anything is written: an output is not a
 * directory, does not exist unless `force`, and its directory exists.
 *
 * @param ctx - the command context.
 * @param file - the path as typed.
 * @param force - replace an existing file.
 * @returns the absolute path.
 * @throws CliError `CLI_WRONG_FILE_KIND` (a directory), `CLI_WRITE_FAILED` (exists without `force`, or no such directory).
 */
export function assertOutputWritable(ctx: CliContext, file: string, force: boolean): string {
  const absolute = resolvePath(ctx, file);
  const existing = statOrNull(absolute);
  if (existing !== null && existing.isDirectory()) {
    throw new CliError('CLI_WRONG_FILE_KIND', `output ${file} is a directory`, { path: absolute, hint: 'give a file path for --out' });
  }
  if (existing === null && absolute.includes(REPLACEMENT_CHARACTER)) throw missingPathError(file, absolute, 'output');
  if (existing !== null && !force) {
    throw new CliError('CLI_WRITE_FAILED', `output ${file} already exists`, { path: absolute, hint: 'pass --force to replace it, or choose another --out' });
  }
  const dir = statOrNull(path.dirname(absolute));
  if (dir === null || !dir.isDirectory()) {
    throw new CliError('CLI_WRITE_FAILED', `cannot write ${file}: directory ${path.dirname(file) || '.'} does not exist`, { path: absolute, hint: 'create the directory first' });
  }
  return absolute;
}
