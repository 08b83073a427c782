/**
 * Waiting for a condition (a marker file, a child's event) with a bounded
 * deadline — never sleeping for a fixed time to let something happen.
 */

/** Options of {@link waitUntil}. */
export interface WaitOptions {
  /** Give up (reject) after this many milliseconds. */
  readonly deadlineMs: number;
  /** What is awaited, for the timeout message. */
  readonly what: string;
  /** Poll interval (default 2 ms). */
  readonly intervalMs?: number;
}

/**
 * Polls `condition` until it returns true; rejects at the deadline or when it throws.
 *
 * @param condition - checked at once, then every `intervalMs`.
 * @param options - deadline and description.
 */
export function waitUntil(condition: () => boolean, options: WaitOptions): Promise<void> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const tick = (): void => {
      let done: boolean;
      try {
        done = condition();
      } catch (e) {
        reject(e as Error);
        return;
      }
      if (done) resolve();
      else if (Date.now() - started > options.deadlineMs) reject(new Error(`timed out after ${options.deadlineMs} ms waiting for ${options.what}`));
      else setTimeout(tick, options.intervalMs ?? 2);
    };
    tick();
  });
}
