/**
 * What a command runs against: injected output streams, environment and
 * working directory (so tests run commands in-process), plus the colour
 * helpers. The colour policy itself (TTY only, never with `NO_COLOR`, forced
 * by `FORCE_COLOR`, off for `TERM=dumb`) has one home, `@llmcp/trainer/terminal`,
 * shared with the training progress display.
 */
import { colorEnabled } from '@llmcp/trainer/terminal';

export { colorEnabled };

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
