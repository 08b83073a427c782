/**
 * The terminal policy of every llmcp program, in one place: when output is
 * coloured (`NO_COLOR`, `FORCE_COLOR`, `TERM=dumb`, TTY) and when a progress
 * line may be redrawn in place. The trainer's progress display and the CLI's
 * coloured output both follow it. Also published as the small subpath
 * `@llmcp/trainer/terminal`, so a program can ask without loading the trainer.
 */

/** The part of an output stream the terminal policy looks at (`process.stdout` fits). */
export interface TerminalStream {
  /** True for a terminal. */
  readonly isTTY?: boolean;
  /** Terminal width in columns, when known. */
  readonly columns?: number;
}

/** Environment variables, as in `process.env`. */
export type TerminalEnv = Readonly<Record<string, string | undefined>>;

/**
 * Whether to colour output written to `stream`: never when `NO_COLOR` is set
 * and non-empty (no-color.org), always when `FORCE_COLOR` is set to anything
 * but `0`/`false`, otherwise only on a TTY whose `TERM` is not `dumb`.
 *
 * @param stream - the stream to be written.
 * @param env - the environment.
 * @returns whether to emit ANSI colour codes.
 * @example
 * ```ts
 * const bold = colorEnabled(process.stderr, process.env) ? (t: string) => `\x1b[1m${t}\x1b[22m` : (t: string) => t;
 * ```
 */
export function colorEnabled(stream: TerminalStream, env: TerminalEnv): boolean {
  const noColor = env.NO_COLOR;
  if (noColor !== undefined && noColor !== '') return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined) return force !== '0' && force !== 'false';
  return stream.isTTY === true && env.TERM !== 'dumb';
}

/**
 * Whether a status line may be redrawn in place on `stream` (carriage return
 * and erase-line): only on a TTY whose `TERM` is not `dumb`. `FORCE_COLOR`
 * forces colour, never redraws: a log file gets plain lines either way.
 *
 * @param stream - the stream to be written.
 * @param env - the environment.
 * @returns whether live redraw is possible.
 * @example
 * ```ts
 * const live = liveRedrawEnabled(process.stderr, process.env);
 * ```
 */
export function liveRedrawEnabled(stream: TerminalStream, env: TerminalEnv): boolean {
  return stream.isTTY === true && env.TERM !== 'dumb';
}
