/** Driving child-process training jobs from tests. */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import type { TrainerConfig } from '../../src/config.ts';
import type { TorchEngineOptions } from '../../src/torch-engine.ts';

const HARNESS = fileURLToPath(new URL('./child-train.ts', import.meta.url));
const PACKAGE_DIR = path.resolve(path.dirname(HARNESS), '..', '..');

/** Where a child pauses (see child-train.ts). */
export type PausePoint = { type: 'step' | 'evaluation-batch'; step: number; index?: number } | { type: 'signal' };

/** One JSON line printed by the child. */
export type ChildEvent = { readonly type: string } & Record<string, unknown>;

/** A running child trainer. */
export class TrainerChild {
  readonly process: ChildProcessWithoutNullStreams;
  readonly events: ChildEvent[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  #waiters: { pred: (e: ChildEvent) => boolean; resolve: (e: ChildEvent) => void }[] = [];
  #stderr = '';

  constructor(args: {
    runDir: string;
    config: TrainerConfig;
    mode: 'train' | 'resume';
    pauseAt?: PausePoint | PausePoint[];
    slowMs?: number;
    saveMode?: 'worker' | 'inline';
    torch?: TorchEngineOptions;
  }) {
    this.process = spawn(process.execPath, ['--conditions=@llmcp/source', '--import', 'tsx', HARNESS, JSON.stringify(args)], {
      cwd: PACKAGE_DIR,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    let buffer = '';
    this.process.stdout.setEncoding('utf8');
    this.process.stdout.on('data', (chunk: string) => {
      buffer += chunk;
      let nl = buffer.indexOf('\n');
      while (nl >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        nl = buffer.indexOf('\n');
        if (line.trim() === '') continue;
        let event: ChildEvent;
        try {
          event = JSON.parse(line) as ChildEvent;
        } catch {
          event = { type: 'text', line };
        }
        this.events.push(event);
        this.#waiters = this.#waiters.filter((w) => {
          if (!w.pred(event)) return true;
          w.resolve(event);
          return false;
        });
      }
    });
    this.process.stderr.setEncoding('utf8');
    this.process.stderr.on('data', (chunk: string) => {
      this.#stderr += chunk;
    });
    this.exited = new Promise((resolve) => this.process.on('exit', (code, signal) => resolve({ code, signal })));
  }

  /** Standard error so far. */
  get stderr(): string {
    return this.#stderr;
  }

  /** Resolves when the child has paused `n` times in all. */
  waitForPause(n = 1): Promise<ChildEvent> {
    let count = 0;
    return this.waitFor((e) => e.type === 'paused' && ++count >= n);
  }

  /** Resolves with the first event (past or future) matching `pred`; rejects if the child exits first. */
  waitFor(pred: (e: ChildEvent) => boolean): Promise<ChildEvent> {
    const seen = this.events.find(pred);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      this.#waiters.push({ pred, resolve });
      void this.exited.then(({ code, signal }) => {
        const found = this.events.find(pred);
        if (found !== undefined) resolve(found);
        else reject(new Error(`child exited (code ${code}, signal ${signal}) before the awaited event; stderr: ${this.#stderr.slice(-2000)}`));
      });
    });
  }

  /** Sends a signal. */
  signal(sig: NodeJS.Signals): void {
    this.process.kill(sig);
  }

  /** Lets a paused child continue. */
  release(): void {
    this.process.stdin.write('go\n');
  }

  /** The final `result` or `error` event. */
  async result(): Promise<ChildEvent> {
    await this.exited;
    const r = this.events.find((e) => e.type === 'result' || e.type === 'error');
    if (r === undefined) throw new Error(`child printed no result; stderr: ${this.#stderr.slice(-2000)}`);
    return r;
  }
}

/**
 * Trains `config` in `runDir` through child processes, delivering `signal` at
 * each pause point (the child blocks there until the signal was sent), resuming
 * after every stop, until the run completes.
 *
 * @returns the slots each resume used.
 */
export async function trainWithSignals(
  runDir: string,
  config: TrainerConfig,
  points: readonly number[],
  signal: NodeJS.Signals,
  saveMode: 'worker' | 'inline' = 'worker',
  torch?: TorchEngineOptions,
): Promise<string[]> {
  const resumedFrom: string[] = [];
  let mode: 'train' | 'resume' = 'train';
  for (const step of [...points, null]) {
    const child = new TrainerChild({ runDir, config, mode, saveMode, ...(torch === undefined ? {} : { torch }), ...(step === null ? {} : { pauseAt: { type: 'step' as const, step } }) });
    if (step !== null) {
      await child.waitFor((e) => e.type === 'paused');
      child.signal(signal);
      child.release();
    }
    const r = await child.result();
    if (r.type === 'error') throw new Error(`child failed: ${String(r.message)}`);
    if (mode === 'resume') resumedFrom.push(String(r.resumedFrom));
    if (step !== null && r.status !== 'stopped') throw new Error(`expected a stop at step ${step}, got ${String(r.status)} at ${String(r.step)}`);
    mode = 'resume';
  }
  return resumedFrom;
}

/**
 * Trains through child processes that are SIGKILLed as soon as they report
 * the given steps (the kill lands wherever the child is by then: mid-step,
 * mid-evaluation, mid-save), resuming after each kill, until the run completes.
 *
 * @returns how many children were actually killed.
 */
export async function trainWithKills(
  runDir: string,
  config: TrainerConfig,
  killAfterSteps: readonly number[],
  slowMs: number,
  saveMode: 'worker' | 'inline' = 'worker',
  torch?: TorchEngineOptions,
): Promise<number> {
  let killed = 0;
  let mode: 'train' | 'resume' = 'train';
  for (const step of [...killAfterSteps, null]) {
    const child = new TrainerChild({ runDir, config, mode, slowMs, saveMode, ...(torch === undefined ? {} : { torch }) });
    if (step !== null) {
      const hit = await Promise.race([child.waitFor((e) => e.type === 'step' && (e.step as number) >= step).then(() => true), child.exited.then(() => false)]);
      if (hit) child.signal('SIGKILL');
    }
    const exit = await child.exited;
    if (exit.signal === 'SIGKILL') killed += 1;
    else {
      const r = await child.result();
      if (r.type === 'error') throw new Error(`child failed: ${String(r.message)}`);
    }
    mode = 'resume';
  }
  return killed;
}
