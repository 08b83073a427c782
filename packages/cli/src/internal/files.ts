/**
 * Input and output files of the commands, with user-facing errors: a missing
 * path, a directory where a file belongs, an unreadable file, an output that
 * already exists. Outputs are written atomically (temporary file, fsync,
 * rename) so a failed command never leaves a partial file behind.
 */
import { readFileSync, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import { decodeCheckpoint, isFormatError, type DecodedCheckpoint } from '@llmcp/format';
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
 * @throws CliError `CLI_FILE_NOT_FOUND` or `CLI_WRONG_FILE_KIND`.
 */
export function requirePath(ctx: CliContext, file: string, kind: PathKind, what: string): { absolute: string; isDirectory: boolean; size: number } {
  const absolute = resolvePath(ctx, file);
  const stats = statOrNull(absolute);
  if (stats === null) {
    throw new CliError('CLI_FILE_NOT_FOUND', `${what} not found: ${file}`, { path: absolute, hint: 'check the path (relative paths start from the current directory)' });
  }
  const isDirectory = stats.isDirectory();
  if (kind === 'file' && isDirectory) {
    throw new CliError('CLI_WRONG_FILE_KIND', `${file} is a directory, expected a ${what} file`, {
      path: absolute,
      hint: what === 'checkpoint' ? `give the file inside it, e.g. ${path.join(file, 'state.llmcp')}` : 'give a file path',
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
  const absolute = resolvePath(ctx, file);
  const existing = statOrNull(absolute);
  if (existing !== null && existing.isDirectory()) {
    throw new CliError('CLI_WRONG_FILE_KIND', `output ${file} is a directory`, { path: absolute, hint: 'give a file path for --out' });
  }
  if (existing !== null && !force) {
    throw new CliError('CLI_WRITE_FAILED', `output ${file} already exists`, { path: absolute, hint: 'pass --force to replace it, or choose another --out' });
  }
  const dir = statOrNull(path.dirname(absolute));
  if (dir === null || !dir.isDirectory()) {
    throw new CliError('CLI_WRITE_FAILED', `cannot write ${file}: directory ${path.dirname(file) || '.'} does not exist`, { path: absolute, hint: 'create the directory first' });
  }
  try {
    await writeFileAtomic(absolute, bytes);
  } catch (e) {
    throw new CliError('CLI_WRITE_FAILED', `cannot write ${file}: ${(e as Error).message}`, { path: absolute, cause: e });
  }
  return absolute;
}
