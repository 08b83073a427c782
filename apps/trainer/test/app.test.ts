/**
 * Acceptance 7: the trainer app as a child process — start, interrupt with
 * SIGINT, restart (it says it is resuming), finish; the run resumes and
 * completes, and the directory verifies.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { verifyRun } from '@llmcp/trainer';

const APP_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

interface App {
  output: () => string;
  waitForOutput: (pattern: RegExp) => Promise<void>;
  signal: (sig: NodeJS.Signals) => void;
  exited: Promise<number | null>;
}

function startApp(args: string[]): App {
  const child = spawn(process.execPath, ['--conditions=@llmcp/source', '--import', 'tsx', 'src/main.ts', ...args], {
    cwd: APP_DIR,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_OPTIONS: '', NO_COLOR: '1' },
  });
  let out = '';
  const waiters: { pattern: RegExp; resolve: () => void }[] = [];
  const onData = (chunk: Buffer): void => {
    out += chunk.toString('utf8');
    for (const w of waiters.splice(0)) {
      if (w.pattern.test(out)) w.resolve();
      else waiters.push(w);
    }
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    output: () => out,
    waitForOutput: (pattern) =>
      new Promise((resolve, reject) => {
        if (pattern.test(out)) return resolve();
        waiters.push({ pattern, resolve });
        void exited.then(() => (pattern.test(out) ? resolve() : reject(new Error(`app exited without printing ${pattern}:\n${out}`))));
      }),
    signal: (sig) => child.kill(sig),
    exited,
  };
}

describe('the trainer app (pnpm start)', () => {
  it('prints usage for --help', async () => {
    const app = startApp(['--help']);
    expect(await app.exited).toBe(0);
    expect(app.output()).toMatch(/Usage: pnpm start/);
    expect(app.output()).toMatch(/--run-dir <dir>/);
  });

  it('trains, checkpoints and exits on SIGINT, then resumes and finishes when started again', async () => {
    const runDir = path.join(mkdtempSync(path.join(tmpdir(), 'llmcp-app-')), 'run');
    const args = ['--size', 'tiny', '--steps', '80', '--run-dir', runDir, '--plain'];
    const first = startApp(args);
    await first.waitForOutput(/step 50: validation loss/);
    first.signal('SIGINT');
    expect(await first.exited).toBe(0);
    expect(first.output()).toMatch(/Starting a new run/);
    expect(first.output()).toMatch(/SIGINT: stopping after this step/);
    const stopped = /Stopped at step (\d+)\/80/.exec(first.output());
    expect(stopped, first.output()).not.toBeNull();
    const stopStep = Number(stopped?.[1]);
    expect(stopStep).toBeGreaterThanOrEqual(50);
    expect(stopStep).toBeLessThan(80);

    const refused = startApp(['--size', 'tiny', '--steps', '90', '--run-dir', runDir, '--plain']);
    expect(await refused.exited).toBe(1);
    expect(refused.output()).toMatch(/TRAINER_CONFIG_CHANGED.*steps/);

    const second = startApp(args);
    expect(await second.exited).toBe(0);
    const out = second.output();
    expect(out).toMatch(/Resuming the run in/);
    expect(out).toMatch(new RegExp(`resuming .* from latest at step ${stopStep}/80`));
    expect(out).toMatch(/Best checkpoint: .*checkpoints[/\\]best \(step \d+, validation loss \d+\.\d+\)/);
    expect(out).toMatch(/Sample from the best checkpoint/);

    const verification = verifyRun(runDir);
    expect(verification).toMatchObject({ ok: true, resumeSlot: 'latest', lossLog: { ok: true, records: 80, orphaned: 0 } });
    const manifest = JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as { events: { event: string }[] };
    expect(manifest.events.map((e) => e.event)).toEqual(['created', 'stopped', 'resumed', 'completed']);
  });
});
