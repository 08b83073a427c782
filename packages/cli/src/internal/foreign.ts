/**
 * Foreign model files given where a checkpoint is expected: a safetensors or
 * GGUF file is recognised by its first bytes and its header is read (from a
 * bounded prefix, so a multi-gigabyte GGUF costs only its header) with
 * `@llmcp/format/foreign`, the one home of those readers.
 */
import { closeSync, readSync } from 'node:fs';
import { openRegularFileSync } from '@llmcp/format/node';
import { detectFileKind, FILE_KIND_PREFIX_BYTES, isForeignFileError, readForeignFile, type ForeignFile, type ForeignFileError } from '@llmcp/format/foreign';
import type { CliContext } from '../context.ts';
import { CliError } from '../errors.ts';
import { requirePath } from './files.ts';

/** Bytes of a foreign file read for its header (a GGUF vocabulary of 150k tokens takes a few MiB). */
export const FOREIGN_PREFIX_BYTES: number = 256 * 1024 * 1024;

/** A foreign file: its kind, and its header or the reason it does not parse. */
export interface ForeignInput {
  readonly kind: 'safetensors' | 'gguf';
  readonly size: number;
  readonly header: ForeignFile | null;
  readonly error: ForeignFileError | null;
}

/**
 * The first `length` bytes of a file (fewer for a shorter file).
 *
 * @param absolute - the file.
 * @param length - bytes wanted.
 * @returns them.
 */
export function readFilePrefix(absolute: string, length: number): Uint8Array {
  const out = new Uint8Array(length);
  // The input rule: a regular file, opened without blocking (requirePath refused other kinds; this closes the race).
  const { fd } = openRegularFileSync(absolute);
  try {
    let at = 0;
    while (at < length) {
      const n = readSync(fd, out, at, length - at, at);
      if (n === 0) break;
      at += n;
    }
    return at === length ? out : out.subarray(0, at);
  } finally {
    closeSync(fd);
  }
}

/**
 * Reads a file's first bytes and, when it is a safetensors or GGUF file,
 * its header.
 *
 * @param ctx - the command context.
 * @param file - the path as typed.
 * @param what - what the command expected (for messages), e.g. `'checkpoint'`.
 * @returns the foreign file, or null when it is not one (an LLMCP35 file, or anything else).
 * @throws CliError `CLI_FILE_NOT_FOUND`, `CLI_WRONG_FILE_KIND` or `CLI_READ_FAILED`.
 */
export function readForeignInput(ctx: CliContext, file: string, what: string): ForeignInput | null {
  const { absolute, size } = requirePath(ctx, file, 'file', what);
  try {
    const head = readFilePrefix(absolute, Math.min(size, FILE_KIND_PREFIX_BYTES));
    const kind = detectFileKind(head, size);
    if (kind !== 'safetensors' && kind !== 'gguf') return null;
    const prefix = readFilePrefix(absolute, Math.min(size, FOREIGN_PREFIX_BYTES));
    try {
      return { kind, size, header: readForeignFile(prefix, { fileLength: size }), error: null };
    } catch (e) {
      if (!isForeignFileError(e)) throw e;
      return { kind, size, header: null, error: e };
    }
  } catch (e) {
    if (e instanceof CliError || isForeignFileError(e)) throw e;
    throw new CliError('CLI_READ_FAILED', `cannot read ${file}: ${(e as Error).message}`, { path: absolute, cause: e });
  }
}

/**
 * The name of a foreign kind for messages.
 *
 * @param kind - the kind.
 * @returns e.g. `a safetensors file`.
 */
export function foreignKindName(kind: 'safetensors' | 'gguf'): string {
  return kind === 'safetensors' ? 'a safetensors file' : 'a GGUF file';
}

/** A foreign file's header error as JSON (`inspect --json`, `verify --json`). */
export interface ForeignErrorJson {
  readonly code: string;
  readonly message: string;
  readonly offset: number | null;
}

/**
 * The JSON form of a foreign file's header error.
 *
 * @param error - the error, or null.
 * @returns the JSON object, or null.
 */
export function foreignErrorJson(error: ForeignFileError | null): ForeignErrorJson | null {
  return error === null ? null : { code: error.code, message: error.message, offset: error.offset ?? null };
}

/**
 * The text form of a foreign file's header error: `CODE at offset N: message`.
 *
 * @param error - the error.
 * @returns the text.
 */
export function foreignErrorText(error: ForeignFileError): string {
  return `${error.code}${error.offset === undefined ? '' : ` at offset ${error.offset}`}: ${error.message}`;
}
