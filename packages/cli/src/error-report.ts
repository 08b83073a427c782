/**
 * The one place where `llmcp` reports a failure: a {@link CliError} (usage
 * errors of the command-line parser and unexpected internal errors are
 * turned into one first) becomes one line plus a hint on stderr — or, when
 * the command was given `--json`, one JSON error document on stdout — and
 * the exit code.
 */
import { colorsFor, type CliContext } from './context.ts';
import type { CliError, CliErrorCode } from './errors.ts';
import type { ExitCode } from './exit-codes.ts';

/** Identifier of the JSON error document (`schema` member). */
export const ERROR_SCHEMA_ID = 'llmcp-error/1';

/** What a `--json` command prints on stdout when it fails (instead of its own document). */
export interface ErrorJson {
  readonly schema: typeof ERROR_SCHEMA_ID;
  readonly error: {
    /** One of `CLI_ERROR_CODES`. */
    readonly code: CliErrorCode;
    /** The one-line message (what is wrong, expected vs found, where). */
    readonly message: string;
    /** The process exit code. */
    readonly exit: ExitCode;
    /** The command that failed, e.g. `llmcp verify`. */
    readonly command: string;
    /** Absolute path of the file or directory involved. */
    readonly path?: string;
    /** Flag or argument involved. */
    readonly option?: string;
    /** Byte offset involved. */
    readonly offset?: number;
    /** Code of the underlying library error (`FORMAT_*`, `TRAINER_*`). */
    readonly causeCode?: string;
    /** What to do about it. */
    readonly hint?: string;
  };
}

/**
 * The JSON error document of a failure.
 *
 * @param error - the failure.
 * @param command - the command that failed, e.g. `llmcp verify`.
 * @returns the document.
 */
export function errorJson(error: CliError, command: string): ErrorJson {
  return {
    schema: ERROR_SCHEMA_ID,
    error: {
      code: error.code,
      message: error.message,
      exit: error.exitCode,
      command,
      ...(error.path === undefined ? {} : { path: error.path }),
      ...(error.option === undefined ? {} : { option: error.option }),
      ...(error.offset === undefined ? {} : { offset: error.offset }),
      ...(error.causeCode === undefined ? {} : { causeCode: error.causeCode }),
      ...(error.hint === undefined ? {} : { hint: error.hint }),
    },
  };
}

/**
 * Prints a failure: under `--json` one JSON error document on stdout
 * (nothing on stderr); otherwise `<command>: error: <message>` and the hint
 * on stderr. An internal error (`CLI_INTERNAL`) prints the stack of its cause
 * instead of the hint when `LLMCP_DEBUG=1`.
 *
 * @param ctx - the command context.
 * @param failure - the command that failed, the error, and whether `--json` was given.
 * @param failure.command - e.g. `llmcp verify`.
 * @param failure.error - the failure.
 * @param failure.json - print the JSON document.
 * @returns the exit code of the error.
 */
export function reportError(ctx: CliContext, failure: { readonly command: string; readonly error: CliError; readonly json: boolean }): ExitCode {
  const { command, error } = failure;
  if (failure.json) {
    ctx.stdout.write(`${JSON.stringify(errorJson(error, command), null, 2)}\n`);
    return error.exitCode;
  }
  const c = colorsFor(ctx.stderr, ctx.env);
  const internal = error.code === 'CLI_INTERNAL';
  ctx.stderr.write(`${command}: ${c.red(internal ? 'internal error:' : 'error:')} ${error.message}\n`);
  const stack = error.cause instanceof Error ? error.cause.stack : undefined;
  if (internal && ctx.env.LLMCP_DEBUG === '1' && stack !== undefined) ctx.stderr.write(`${stack}\n`);
  else if (error.hint !== undefined) ctx.stderr.write(`${c.dim(`hint: ${error.hint}`)}\n`);
  return error.exitCode;
}
