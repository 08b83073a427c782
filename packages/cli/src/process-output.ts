/**
 * Output that can never stop a program. `llmcp train … | tee log` and Ctrl-C:
 * the terminal sends SIGINT to the whole process group, `tee` dies with it,
 * and the next progress line fails with EPIPE. Node reports a failed write as
 * an asynchronous 'error' event on the stream, which kills the process when no
 * listener is installed — before the stop checkpoint is written. A write to a
 * file can also throw synchronously (`> /dev/full`: ENOSPC).
 *
 * Programs write through {@link processOutput} (the `llmcp` binary and the
 * trainer app call it once at start): each stream gets one 'error' listener,
 * installed once, that records the failure; from then on writes to that stream
 * are dropped, and no write ever throws. Output is best effort; checkpoints
 * and exit codes never depend on it.
 */
import type { CliStream } from './context.ts';

/** A {@link CliStream} whose failures end its output instead of the program. */
export interface GuardedStream extends CliStream {
  /** The first write failure (EPIPE, ENOSPC, …), or null while output flows. */
  readonly failure: Error | null;
}

/** A stream that may report asynchronous failures as 'error' events (a Node `Writable`). */
export interface OutputStream extends CliStream {
  on?(event: 'error', listener: (error: Error) => void): unknown;
}

const guarded = new WeakMap<OutputStream, GuardedStream>();

/**
 * Guards one output stream: installs (once per stream) an 'error' listener
 * that records the failure, and returns a stream whose `write` never throws
 * and does nothing once the stream has failed. `isTTY` and `columns` are
 * read through from the guarded stream.
 *
 * @param stream - the stream, e.g. `process.stdout`.
 * @returns the guarded stream (the same object for every call with the same stream).
 * @example
 * ```ts
 * const out = guardOutput(process.stdout);
 * out.write('never throws, never kills the process\n');
 * ```
 */
export function guardOutput(stream: OutputStream): GuardedStream {
  const existing = guarded.get(stream);
  if (existing !== undefined) return existing;
  let failure: Error | null = null;
  const fail = (e: unknown): void => {
    failure ??= e instanceof Error ? e : new Error(String(e));
  };
  stream.on?.('error', fail);
  const out = {
    get failure(): Error | null {
      return failure;
    },
    write(chunk: string): boolean {
      if (failure !== null) return false;
      try {
        return stream.write(chunk) !== false;
      } catch (e) {
        fail(e);
        return false;
      }
    },
  };
  // Read through (a terminal's width changes when it is resized); defined only where the stream has them.
  if (stream.isTTY !== undefined) Object.defineProperty(out, 'isTTY', { get: () => stream.isTTY, enumerable: true });
  if (stream.columns !== undefined) Object.defineProperty(out, 'columns', { get: () => stream.columns, enumerable: true });
  const result: GuardedStream = out;
  guarded.set(stream, result);
  return result;
}

/**
 * The guarded `process.stdout` and `process.stderr` (see {@link guardOutput}).
 * Call it once at program start and write every progress and log line
 * through the result.
 *
 * @returns the two guarded streams.
 * @example
 * ```ts
 * const { stdout, stderr } = processOutput();
 * await runCli(process.argv.slice(2), { stdout, stderr, env: process.env, cwd: process.cwd() });
 * ```
 */
export function processOutput(): { readonly stdout: GuardedStream; readonly stderr: GuardedStream } {
  return { stdout: guardOutput(process.stdout), stderr: guardOutput(process.stderr) };
}
