/**
 * The one error class of `@llmcp/cli` and its stable codes. Every user
 * mistake or bad input the `llmcp` binary meets becomes a {@link CliError},
 * which the binary prints as one line plus a hint (never a stack trace) and
 * turns into the documented exit code.
 */
import { EXIT_CODES, type ExitCode } from './exit-codes.ts';

/** Stable error codes of `@llmcp/cli`. Adding one is a minor change, renaming or removing one is major. */
export const CLI_ERROR_CODES = {
  /** A command line that cannot be run: unknown flag, missing or extra argument, a value out of range. */
  CLI_USAGE: 'CLI_USAGE',
  /** An input path does not exist. */
  CLI_FILE_NOT_FOUND: 'CLI_FILE_NOT_FOUND',
  /** A path argument holds U+FFFD and names nothing: bytes of the command line that are not UTF-8 reach Node as U+FFFD, so the path cannot be opened as given. */
  CLI_PATH_NOT_UTF8: 'CLI_PATH_NOT_UTF8',
  /** A directory was given where a file is required (or a file where a directory is required). */
  CLI_WRONG_FILE_KIND: 'CLI_WRONG_FILE_KIND',
  /** An input could not be read (permissions, I/O error, too large). */
  CLI_READ_FAILED: 'CLI_READ_FAILED',
  /** An output could not be written, or exists and `--force` was not given. */
  CLI_WRITE_FAILED: 'CLI_WRITE_FAILED',
  /** An output path lies inside a run directory (a folder holding run.json, run.lock or checkpoints/, at any depth above it): only the trainer writes there. */
  CLI_OUTPUT_IN_RUN_DIRECTORY: 'CLI_OUTPUT_IN_RUN_DIRECTORY',
  /** A slot (`run:slot`, `--slot`) that is not a slot name or that the run does not have; the message lists the slots it has. */
  CLI_UNKNOWN_SLOT: 'CLI_UNKNOWN_SLOT',
  /** A checkpoint that an operation needs valid does not decode (the format error is the cause). */
  CLI_INVALID_CHECKPOINT: 'CLI_INVALID_CHECKPOINT',
  /** A raw ANDREA `step_NNNNNN.bin` file is malformed (short, wrong count, trailing bytes, mismatched config). */
  CLI_ANDREA_BIN_INVALID: 'CLI_ANDREA_BIN_INVALID',
  /** A JSON input (import config, loss log) is malformed. */
  CLI_INVALID_INPUT: 'CLI_INVALID_INPUT',
  /** Sampling could not run (prompt not encodable, empty prompt without BOS, …). */
  CLI_SAMPLE_FAILED: 'CLI_SAMPLE_FAILED',
  /** A training-run command failed (the trainer error is the cause). */
  CLI_RUN_FAILED: 'CLI_RUN_FAILED',
  /** An unexpected failure: a bug in llmcp (reported, e.g. under `--json`, with this code). */
  CLI_INTERNAL: 'CLI_INTERNAL',
} as const;

/** One of the {@link CLI_ERROR_CODES}. */
export type CliErrorCode = (typeof CLI_ERROR_CODES)[keyof typeof CLI_ERROR_CODES];

const DEFAULT_EXIT: Record<CliErrorCode, ExitCode> = {
  CLI_USAGE: EXIT_CODES.USAGE,
  CLI_FILE_NOT_FOUND: EXIT_CODES.INPUT,
  CLI_PATH_NOT_UTF8: EXIT_CODES.INPUT,
  CLI_WRONG_FILE_KIND: EXIT_CODES.INPUT,
  CLI_READ_FAILED: EXIT_CODES.INPUT,
  CLI_WRITE_FAILED: EXIT_CODES.RUNTIME,
  CLI_OUTPUT_IN_RUN_DIRECTORY: EXIT_CODES.INPUT,
  CLI_UNKNOWN_SLOT: EXIT_CODES.INPUT,
  CLI_INVALID_CHECKPOINT: EXIT_CODES.INPUT,
  CLI_ANDREA_BIN_INVALID: EXIT_CODES.INPUT,
  CLI_INVALID_INPUT: EXIT_CODES.INPUT,
  CLI_SAMPLE_FAILED: EXIT_CODES.INPUT,
  CLI_RUN_FAILED: EXIT_CODES.RUNTIME,
  CLI_INTERNAL: EXIT_CODES.RUNTIME,
};

/** Context carried by a {@link CliError}; every field is optional. */
export interface CliErrorContext {
  /** File or directory involved. */
  readonly path?: string;
  /** Flag or argument involved, e.g. `--temperature`. */
  readonly option?: string;
  /** Byte offset involved (malformed binary inputs). */
  readonly offset?: number;
  /** Code of the underlying library error (e.g. `FORMAT_CHECKSUM_MISMATCH`). */
  readonly causeCode?: string;
  /** What to do about it, printed after the message. */
  readonly hint?: string;
  /** Exit code to use instead of the code's default. */
  readonly exitCode?: ExitCode;
  /** The underlying error. */
  readonly cause?: unknown;
}

/**
 * Every failure of `@llmcp/cli` meant for the user.
 *
 * @example
 * ```ts
 * try { await readCheckpointFile('x.llmcp', ctx); }
 * catch (e) { if (isCliError(e)) console.error(e.code, e.exitCode, e.hint); }
 * ```
 */
export class CliError extends Error {
  /** Always `'CliError'` (checked by {@link isCliError}). */
  override readonly name = 'CliError' as const;
  /** Stable code. */
  readonly code: CliErrorCode;
  /** Process exit code this error maps to. */
  readonly exitCode: ExitCode;
  /** File or directory involved. */
  declare readonly path?: string;
  /** Flag or argument involved. */
  declare readonly option?: string;
  /** Byte offset involved. */
  declare readonly offset?: number;
  /** Code of the underlying library error. */
  declare readonly causeCode?: string;
  /** What to do about it. */
  declare readonly hint?: string;

  /**
   * @param code - one of {@link CLI_ERROR_CODES}.
   * @param message - one line: what is wrong, expected vs found, and where.
   * @param context - path, option, offset, hint, exit code and cause.
   */
  constructor(code: CliErrorCode, message: string, context: CliErrorContext = {}) {
    super(message, context.cause === undefined ? undefined : { cause: context.cause });
    this.code = code;
    this.exitCode = context.exitCode ?? DEFAULT_EXIT[code];
    if (context.path !== undefined) this.path = context.path;
    if (context.option !== undefined) this.option = context.option;
    if (context.offset !== undefined) this.offset = context.offset;
    if (context.causeCode !== undefined) this.causeCode = context.causeCode;
    if (context.hint !== undefined) this.hint = context.hint;
  }
}

const CODE_SET: ReadonlySet<string> = new Set(Object.values(CLI_ERROR_CODES));

/**
 * True when `e` is a {@link CliError}, also across two copies of the package
 * (checks `name` and `code`, not only `instanceof`).
 *
 * @param e - anything caught.
 * @returns whether `e` is a CliError.
 */
export function isCliError(e: unknown): e is CliError {
  if (e instanceof CliError) return true;
  if (typeof e !== 'object' || e === null) return false;
  const { name, code } = e as { name?: unknown; code?: unknown };
  return name === 'CliError' && typeof code === 'string' && CODE_SET.has(code);
}
