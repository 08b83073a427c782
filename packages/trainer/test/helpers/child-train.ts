/**
 * A training job in a child process, for the signal and crash tests:
 * `node --conditions=@llmcp/source --import tsx child-train.ts '<json>'` with
 * { runDir, config, mode: 'train' | 'resume', pauseAt? }. Every trainer event
 * is printed as one JSON line on stdout (pipes are synchronous on Linux, so a
 * line is out before the next step starts). With `pauseAt`, the child prints
 * `{"type":"paused"}` after the matching event and blocks until the parent
 * writes a line to its stdin — the parent sends its signal first, so the
 * signal lands at exactly that point.
 */
import { readSync } from 'node:fs';
import { parseConfig } from '../../src/config.ts';
import { isTrainerError } from '../../src/errors.ts';
import type { TrainerEvent } from '../../src/events.ts';
import { resumeRun, trainRun } from '../../src/run.ts';
import type { TorchEngineOptions } from '../../src/torch-engine.ts';

/** Where to pause: after a step, after an evaluation batch, or inside a signal handler (its `signal` event). */
type PausePoint = { readonly type: 'step' | 'evaluation-batch'; readonly step: number; readonly index?: number } | { readonly type: 'signal' };

interface ChildArgs {
  readonly runDir: string;
  readonly config: unknown;
  readonly mode: 'train' | 'resume';
  readonly pauseAt?: PausePoint | readonly PausePoint[];
  /** Busy-wait this long after every step and evaluation batch (simulates a slower model, so kills land mid-run). */
  readonly slowMs?: number;
  /** Where saves run (default: the worker thread, as in real use). */
  readonly saveMode?: 'worker' | 'inline';
  /** The torch engine's machine settings (a torch config only). */
  readonly torch?: TorchEngineOptions;
}

const args = JSON.parse(process.argv[2] ?? '{}') as ChildArgs;
const write = (value: unknown): void => {
  process.stdout.write(`${JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}\n`);
};
const pending: PausePoint[] = args.pauseAt === undefined ? [] : Array.isArray(args.pauseAt) ? [...(args.pauseAt as PausePoint[])] : [args.pauseAt as PausePoint];

function matches(p: PausePoint, e: TrainerEvent): boolean {
  if (p.type !== e.type) return false;
  if (p.type === 'signal') return true;
  if (e.type === 'step') return e.step === p.step;
  if (e.type === 'evaluation-batch') return e.step === p.step && e.index === p.index;
  return false;
}

function onEvent(e: TrainerEvent): void {
  write(e);
  if (args.slowMs !== undefined && (e.type === 'step' || e.type === 'evaluation-batch')) {
    const until = performance.now() + args.slowMs;
    while (performance.now() < until) {
      // simulated work
    }
  }
  const next = pending[0];
  if (next === undefined || !matches(next, e)) return;
  pending.shift();
  write({ type: 'paused' });
  const buf = Buffer.alloc(16);
  for (;;) {
    try {
      if (readSync(0, buf, 0, buf.length, null) > 0) break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
    }
  }
}

try {
  const config = parseConfig(args.config);
  const result =
    args.mode === 'train'
      ? await trainRun({ runDir: args.runDir, config, handleSignals: true, onEvent, saveMode: args.saveMode ?? 'worker', ...(args.torch === undefined ? {} : { torch: args.torch }) })
      : await resumeRun(args.runDir, { config, handleSignals: true, onEvent, saveMode: args.saveMode ?? 'worker', ...(args.torch === undefined ? {} : { torch: args.torch }) });
  write({ type: 'result', status: result.status, step: result.step, resumedFrom: result.resumedFrom });
  process.exit(0);
} catch (e) {
  write({ type: 'error', code: isTrainerError(e) ? e.code : null, message: (e as Error).message });
  process.exit(1);
}
