import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CH33_CONFIG_INPUT } from '@llmcp/trainer';
import { afterAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/exit-codes.ts';
import { guardOutput } from '../src/process-output.ts';
import { PACKAGE_DIR, REPO_ROOT, tempDir } from './helpers.ts';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

/** A stream that fails the way process.stdout does: asynchronously with an 'error' event, or synchronously (a file on a full disk). */
class FailingStream extends EventEmitter {
  written: string[] = [];
  throwNext = false;
  readonly isTTY = false;
  write(chunk: string): boolean {
    if (this.throwNext) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    this.written.push(chunk);
    return true;
  }
}

describe('guardOutput', () => {
  it('swallows an asynchronous error event and drops every later write', () => {
    const stream = new FailingStream();
    const out = guardOutput(stream);
    expect(out.write('one\n')).toBe(true);
    const epipe = Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });
    // Without a listener, emitting 'error' throws: the guard's listener is what keeps the process alive.
    expect(() => stream.emit('error', epipe)).not.toThrow();
    expect(out.failure).toBe(epipe);
    expect(out.write('two\n')).toBe(false);
    expect(stream.written).toEqual(['one\n']);
  });

  it('turns a synchronous write exception into a recorded failure', () => {
    const stream = new FailingStream();
    const out = guardOutput(stream);
    stream.throwNext = true;
    expect(() => out.write('x')).not.toThrow();
    expect(out.failure?.message).toMatch(/ENOSPC/);
    stream.throwNext = false;
    expect(out.write('y')).toBe(false);
    expect(stream.written).toEqual([]);
  });

  it('installs one listener per stream, however often it is called, and reads isTTY and columns through', () => {
    const tty = Object.assign(new EventEmitter(), { isTTY: true, columns: 80, write: (): boolean => true });
    const a = guardOutput(tty);
    expect(guardOutput(tty)).toBe(a);
    expect(tty.listenerCount('error')).toBe(1);
    expect(a.isTTY).toBe(true);
    tty.columns = 120;
    expect(a.columns).toBe(120);
    expect('columns' in guardOutput(new FailingStream())).toBe(false);
  });
});

/** A run whose only checkpoint can be the stop checkpoint: validation and cadence far beyond any step reached. */
function longRunConfig(): string {
  const input = JSON.parse(JSON.stringify(CH33_CONFIG_INPUT)) as Record<string, unknown> & { evaluation: Record<string, unknown> };
  const far = 1_000_000;
  const config = { ...input, steps: far, schedule: { kind: 'constant', rate: null }, evaluation: { ...input.evaluation, validateEvery: far }, checkpoint: { every: far, keepSteps: 3 } };
  const file = path.join(tmp.dir, 'long-run.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

function lossRecords(runDir: string): number {
  const file = path.join(runDir, 'loss.jsonl');
  // Training records only: evaluation records ({"step":N,"validationLoss":…}) share the file.
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l !== '' && !l.includes('"validationLoss"')).length : 0;
}

/** Resolves once `condition` holds (checked on every turn of a short poll), or rejects when `gone` settles first. */
function until(condition: () => boolean, gone: Promise<unknown>, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let done = false;
    void gone.then(() => {
      if (!done) reject(new Error(`the child exited before ${what}`));
      done = true;
    });
    const check = (): void => {
      if (done) return;
      if (condition()) {
        done = true;
        resolve();
      } else setTimeout(check, 10);
    };
    check();
  });
}

describe('llmcp train with its output piped into a reader that dies (| tee, then Ctrl-C)', () => {
  it('still writes the stop checkpoint at the last step trained and exits 130', async () => {
    const runDir = path.join(tmp.dir, 'piped');
    const child = spawn(process.execPath, ['--conditions=@llmcp/source', '--import', 'tsx', path.join(PACKAGE_DIR, 'src/bin.ts'), 'train', runDir, '--config', longRunConfig(), '--plain'], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH ?? '', NO_COLOR: '1' },
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    try {
      // `llmcp train … |& tee log`: the progress display (stderr) and the summary (stdout) both go to the dying reader.
      await new Promise<void>((resolve) => child.stderr.once('data', () => resolve()));
      child.stdout.destroy();
      child.stderr.destroy();
      await until(() => lossRecords(runDir) >= 5, exited, 'training 5 steps');
      child.kill('SIGINT');
      const { code, signal } = await exited;
      expect({ code, signal }).toEqual({ code: EXIT_CODES.INTERRUPTED, signal: null });
      const trained = lossRecords(runDir);
      const events = (JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as { events: { event: string; step?: number }[] }).events;
      expect(events.map((e) => e.event)).toEqual(['created', 'stopped']);
      expect(events[1]?.step).toBe(trained);
      const job = JSON.parse(readFileSync(path.join(runDir, 'checkpoints/latest/job.json'), 'utf8')) as { step: number };
      expect(job.step).toBe(trained);
      expect(trained).toBeGreaterThanOrEqual(5);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
