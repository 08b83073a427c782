/**
 * What a command runs against: injected output streams, environment and
 * working directory (so tests run commands in-process), plus the colour
 * policy (TTY only, never with `NO_COLOR`, forced by `FORCE_COLOR`).
 */

/**
 * A writable text stream (`process.stdout` fits). A program passes the
 * process streams through `processOutput()`, so that a failing write (EPIPE
 * from a reader that went away) ends the output, never the command.
 */
export interface CliStream {
  write(chunk: string): unknown;
  /** True for a terminal; colours and live progress are used only then. */
  readonly isTTY?: boolean;
  /** Terminal width, when known. */
  readonly columns?: number;
}

/** The world a command sees. */
export interface CliContext {
  readonly stdout: CliStream;
  readonly stderr: CliStream;
  /** Environment variables (`NO_COLOR`, `FORCE_COLOR`, `TERM`). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Directory relative paths are resolved against. */
  readonly cwd: string;
  /** Run commands: aborting it stops training like SIGTERM (finish the step, checkpoint, exit 130). */
  readonly signal?: AbortSignal;
  /** Run commands: install SIGINT/SIGTERM/SIGUSR1 handlers while training (the binary does; default false). */
  readonly handleSignals?: boolean;
  /** Clock in milliseconds since the epoch (checkpoint ages); default `Date.now`. */
  readonly now?: () => number;
}

/** ANSI styling functions; identity functions when colour is off. */
export interface Colors {
  readonly enabled: boolean;
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
}

/**
 * Whether to colour output written to `stream`: never when `NO_COLOR` is set
 * and non-empty (no-color.org), always when `FORCE_COLOR` is set to anything
 * but `0`/`false`, otherwise only on a TTY whose `TERM` is not `dumb`.
 *
 * @param stream - the stream to be written.
 * @param env - the environment.
 * @returns whether to emit ANSI colour codes.
 */
export function colorEnabled(stream: CliStream, env: CliContext['env']): boolean {
  const noColor = env.NO_COLOR;
  if (noColor !== undefined && noColor !== '') return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined) return force !== '0' && force !== 'false';
  return stream.isTTY === true && env.TERM !== 'dumb';
}

function wrap(on: boolean, open: number, close: number): (text: string) => string {
  return on ? (text) => `\u001b[${open}m${text}\u001b[${close}m` : (text) => text;
}

/**
 * Styling functions for one stream.
 *
 * @param stream - the stream to be written.
 * @param env - the environment.
 * @returns the colour helpers.
 */
export function colorsFor(stream: CliStream, env: CliContext['env']): Colors {
  const on = colorEnabled(stream, env);
  return {
    enabled: on,
    bold: wrap(on, 1, 22),
    dim: wrap(on, 2, 22),
    red: wrap(on, 31, 39),
    green: wrap(on, 32, 39),
    yellow: wrap(on, 33, 39),
    cyan: wrap(on, 36, 39),
  };
}
