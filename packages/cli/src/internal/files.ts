/**
 * Input and output files of the commands, with user-facing errors: a missing
 * path, a directory where a file belongs, an unreadable file, an output that
 * already exists.
 *
 * Every command reads and writes through the two rules here:
 *
 * - input ({@link readInputFile}): `@llmcp/format/node`'s input rule — a
 *   regular file (a FIFO, socket, device or directory is refused, never
 *   opened or waited on), of bounded size;
 * - output ({@link writeOutputFiles}, {@link writeOutputFile},
 *   {@link requireOutputDirectory}): the destination never lies inside a run
 *   directory (the trainer's test, `enclosingRunDirectory`: only the trainer
 *   publishes there); `--force` replaces only an existing regular file; every
 *   destination is checked, and every byte encoded, before the first is
 *   written; each file is written beside its destination and renamed
 *   (`writeFileAtomic`, which never opens the old destination), so a failed
 *   command leaves no partial file and no temporary behind.
 */
import { lstatSync, mkdirSync, rmSync, rmdirSync, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import { decodeCheckpoint, isFormatError, type DecodedCheckpoint } from '@llmcp/format';
import { detectFileKind } from '@llmcp/format/foreign';
import { describeFileKind, fileKindOf, readRegularFileSync, writeFileAtomic } from '@llmcp/format/node';
import type { CliContext } from '../context.ts';
import { CliError } from '../errors.ts';
import { loadTrainer } from '../trainer.ts';

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
    throw new CliError('CLI_WRONG_FILE_KIND', `${file} is ${describeFileKind(fileKindOf(stats))}, not a regular file, expected a ${what} file`, { path: absolute, hint: 'give a regular file' });
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
  const { absolute } = requirePath(ctx, file, 'file', what);
  try {
    // The input rule: a regular file (checked again on the open descriptor, opened without blocking), bounded size.
    return readRegularFileSync(absolute, { maxBytes: MAX_INPUT_BYTES, what });
  } catch (e) {
    if (isFormatError(e) && e.reason === 'not-a-regular-file') {
      throw new CliError('CLI_WRONG_FILE_KIND', `${file} is not a regular file, expected a ${what} file: ${e.message}`, { path: absolute, cause: e });
    }
    if (isFormatError(e) && e.reason === 'too-large') {
      throw new CliError('CLI_READ_FAILED', `${file} is ${e.found ?? '?'} bytes; at most ${MAX_INPUT_BYTES} bytes can be read`, { path: absolute, cause: e });
    }
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

/** One file a command writes. */
export interface OutputFile {
  /** The path as typed. */
  readonly file: string;
  /** The complete content, encoded before anything is written. */
  readonly bytes: Uint8Array;
}

/**
 * The output rule's refusal of a destination inside a run directory (checked
 * on the folder that would receive the entry; links resolved).
 *
 * @param ctx - the command context.
 * @param shown - the path as typed, for the message.
 * @param folder - the absolute folder that would receive the new entry (or be created).
 * @throws CliError `CLI_OUTPUT_IN_RUN_DIRECTORY`.
 */
async function refuseInsideRun(ctx: CliContext, shown: string, folder: string): Promise<void> {
  const { enclosingRunDirectory } = await loadTrainer();
  const run = enclosingRunDirectory(folder);
  if (run === null) return;
  throw new CliError('CLI_OUTPUT_IN_RUN_DIRECTORY', `output ${shown} lies inside the run directory ${run}: only the trainer writes into a run (its checkpoints, loss.jsonl and run.json)`, {
    path: path.resolve(ctx.cwd, shown),
    hint: 'write the output outside the run directory',
  });
}

/**
 * Checks one output file against the output rule, before anything is written.
 *
 * @returns the absolute path and whether something is there now.
 */
async function checkOutputFile(ctx: CliContext, file: string, force: boolean): Promise<{ readonly absolute: string; readonly existed: boolean }> {
  const absolute = resolvePath(ctx, file);
  const dir = statOrNull(path.dirname(absolute));
  if (dir !== null && dir.isDirectory()) await refuseInsideRun(ctx, file, path.dirname(absolute));
  const entry = lstatOrNull(absolute);
  // What a link leads to decides (a dangling link is replaced like nothing).
  const existing = entry === null ? null : entry.isSymbolicLink() ? statOrNull(absolute) : entry;
  if (existing !== null && existing.isDirectory()) {
    throw new CliError('CLI_WRONG_FILE_KIND', `output ${file} is a directory`, { path: absolute, hint: 'give a file path for --out' });
  }
  if (existing !== null && !existing.isFile()) {
    const kind = `${entry?.isSymbolicLink() === true ? 'a symbolic link to ' : ''}${describeFileKind(fileKindOf(existing))}`;
    throw new CliError('CLI_WRONG_FILE_KIND', `output ${file} is ${kind}, not a regular file; an output only ever replaces a regular file (with --force)`, {
      path: absolute,
      hint: 'choose another --out',
    });
  }
  if (entry === null && absolute.includes(REPLACEMENT_CHARACTER)) throw missingPathError(file, absolute, 'output');
  if (entry !== null && !force) {
    throw new CliError('CLI_WRITE_FAILED', `output ${file} already exists`, { path: absolute, hint: 'pass --force to replace it, or choose another --out' });
  }
  if (dir === null || !dir.isDirectory()) {
    throw new CliError('CLI_WRITE_FAILED', `cannot write ${file}: directory ${path.dirname(file) || '.'} does not exist`, { path: absolute, hint: 'create the directory first' });
  }
  return { absolute, existed: entry !== null };
}

/**
 * Writes a command's output files under the output rule: every destination is
 * checked first (not inside a run directory; an existing one only with
 * `force`, and only a regular file), then each is written atomically
 * (temporary file beside it, fsync, rename). When a write fails, the files of
 * this call that did not exist before are removed again, so a failed command
 * leaves neither a partial file nor a stray temporary.
 *
 * @param ctx - the command context.
 * @param outputs - the files, every byte already encoded.
 * @param force - replace existing regular files.
 * @returns the absolute paths written, in order.
 * @throws CliError `CLI_OUTPUT_IN_RUN_DIRECTORY`, `CLI_WRONG_FILE_KIND` (a directory, FIFO, socket, device or a link to one), `CLI_USAGE` (one path twice), `CLI_WRITE_FAILED` (exists without `force`, missing directory, failed write).
 */
export async function writeOutputFiles(ctx: CliContext, outputs: readonly OutputFile[], force: boolean): Promise<string[]> {
  const checked: { readonly absolute: string; readonly existed: boolean }[] = [];
  for (const o of outputs) {
    const c = await checkOutputFile(ctx, o.file, force);
    if (checked.some((x) => x.absolute === c.absolute)) throw new CliError('CLI_USAGE', `${o.file} is given for two outputs of one command`, { path: c.absolute });
    checked.push(c);
  }
  const written: number[] = [];
  for (const [i, o] of outputs.entries()) {
    const { absolute } = checked[i] as { absolute: string };
    try {
      await writeFileAtomic(absolute, o.bytes);
      written.push(i);
    } catch (e) {
      for (const j of written) if (!(checked[j] as { existed: boolean }).existed) rmSync((checked[j] as { absolute: string }).absolute, { force: true });
      if (isFormatError(e) && e.reason === 'not-a-regular-file') {
        throw new CliError('CLI_WRONG_FILE_KIND', `output ${o.file} became something else than a regular file while it was written: ${e.message}`, { path: absolute, cause: e });
      }
      throw new CliError('CLI_WRITE_FAILED', `cannot write ${o.file}: ${(e as Error).message}`, { path: absolute, cause: e });
    }
  }
  return checked.map((c) => c.absolute);
}

/**
 * Writes one output file under the output rule ({@link writeOutputFiles}).
 *
 * @param ctx - the command context.
 * @param file - the path as typed.
 * @param bytes - the content.
 * @param force - replace an existing regular file.
 * @returns the absolute path written.
 * @throws CliError as {@link writeOutputFiles}.
 */
export async function writeOutputFile(ctx: CliContext, file: string, bytes: Uint8Array, force: boolean): Promise<string> {
  const [absolute] = await writeOutputFiles(ctx, [{ file, bytes }], force);
  return absolute as string;
}

/**
 * Checks an output directory (created if missing) under the output rule: it
 * is not, and does not lie in, a run directory, and it can be created.
 *
 * @param ctx - the command context.
 * @param dir - the directory as typed.
 * @returns the absolute path.
 * @throws CliError `CLI_OUTPUT_IN_RUN_DIRECTORY`, or as {@link requireCreatableDirectory}.
 */
export async function requireOutputDirectory(ctx: CliContext, dir: string): Promise<string> {
  const absolute = requireCreatableDirectory(ctx, dir, 'output directory');
  await refuseInsideRun(ctx, dir, absolute);
  return absolute;
}

/**
 * Writes the files of an output directory under the output rule: the
 * directory is made if missing (and removed again, with the files, if a write
 * fails), each file is checked and written as by {@link writeOutputFiles}.
 *
 * @param ctx - the command context.
 * @param dir - the directory as typed (checked with {@link requireOutputDirectory}).
 * @param files - the file names in it and their bytes.
 * @param force - replace existing regular files of those names.
 * @returns when written.
 * @throws CliError as {@link writeOutputFiles}, or `CLI_WRITE_FAILED` when the directory cannot be made.
 */
export async function writeOutputDirectory(ctx: CliContext, dir: string, files: readonly { readonly name: string; readonly bytes: Uint8Array }[], force: boolean): Promise<void> {
  const absolute = await requireOutputDirectory(ctx, dir);
  const made: string[] = [];
  if (statOrNull(absolute) === null) {
    try {
      const first = mkdirSync(absolute, { recursive: true });
      // The directories made, innermost first (to remove them again if a write fails).
      for (let d = absolute; first !== undefined; d = path.dirname(d)) {
        made.push(d);
        if (d === first || path.dirname(d) === d) break;
      }
    } catch (e) {
      throw new CliError('CLI_WRITE_FAILED', `cannot create ${dir}: ${(e as Error).message}`, { path: absolute, cause: e });
    }
  }
  try {
    await writeOutputFiles(ctx, files.map((f) => ({ file: path.join(absolute, f.name), bytes: f.bytes })), force);
  } catch (e) {
    try {
      for (const d of made) rmdirSync(d);
    } catch {
      // not empty: something else is in it now; leave it
    }
    throw e;
  }
}
