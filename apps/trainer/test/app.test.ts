/**
 * The trainer app as a child process — start, interrupt with
 * SIGINT, restart (it says it is resuming), finish; the run resumes and
 * completes, and the directory verifies. A clean, checkpointed stop exits 0
 * (other exit codes are llmcp's); a dead pipe reader never costs the stop checkpoint.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from '@llmcp/cli';
import { CH33_CONFIG_INPUT, generateSigningKeyPair, importTrustedKey, verifyRun } from '@llmcp/trainer';

const APP_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

interface App {
  child: ReturnType<typeof spawn>;
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
    child,
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
    expect(await first.exited).toBe(EXIT_CODES.OK);
    expect(first.output()).toMatch(/Starting a new run/);
    expect(first.output()).toMatch(/SIGINT: stopping after this step/);
    const stopped = /Stopped at step (\d+)\/80/.exec(first.output());
    expect(stopped, first.output()).not.toBeNull();
    const stopStep = Number(stopped?.[1]);
    expect(stopStep).toBeGreaterThanOrEqual(50);
    expect(stopStep).toBeLessThan(80);

    // A policy change other than the budget is refused, naming the option the user changed and the pivot that applies it.
    const refused = startApp([...args, '--no-timing']);
    expect(await refused.exited).toBe(EXIT_CODES.INPUT);
    expect(refused.output()).toMatch(/TRAINER_CONFIG_CHANGED\): .*log\.timing changed/);
    expect(refused.output()).toMatch(/you changed --no-timing \(log\.timing\)\./);
    expect(refused.output()).not.toMatch(/you changed .*--steps/);
    expect(refused.output()).toMatch(new RegExp(`llmcp pivot ${runDir.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')} --config \\S+\\.json --change log\\.timing`));

    // A new budget extends the interrupted run: a recorded pivot of steps, then it trains on from the stop step.
    const second = startApp(['--size', 'tiny', '--steps', '90', '--run-dir', runDir, '--plain']);
    expect(await second.exited).toBe(0);
    const out = second.output();
    expect(out).toMatch(/Resuming the run in/);
    expect(out).toMatch(/Extending from 80 to 90 steps; the warmup-cosine schedule now spans 90 steps instead of 80: .*update \d+ uses learning rate [\d.e-]+ \(update \d+ used [\d.e-]+\), reaching the floor 0\.001 at step 90\./);
    expect(out).toMatch(new RegExp(`resuming .* from latest at step ${stopStep}/90`));
    expect(out).toMatch(new RegExp(`resumed from latest \\(step ${stopStep}\\)`));
    expect(out).toMatch(/Best checkpoint: .*checkpoints[/\\]best \(step \d+, validation loss \d+\.\d+\)/);
    expect(out).toMatch(/Sample from the best checkpoint/);

    const verification = await verifyRun(runDir);
    expect(verification).toMatchObject({ ok: true, resumeSlot: 'latest', lossLog: { ok: true, records: 90, orphaned: 0 } });
    const manifest = JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as { events: { event: string; changed?: string[]; step?: number }[] };
    expect(manifest.events.map((e) => e.event)).toEqual(['created', 'stopped', 'pivot', 'resumed', 'completed']);
    expect(manifest.events[2]).toMatchObject({ changed: ['steps'], step: stopStep });
  }, 300_000);

  it('extends a finished 60-step run to 90 steps with --steps 90: it continues from step 60 with a recorded pivot', async () => {
    const runDir = path.join(mkdtempSync(path.join(tmpdir(), 'llmcp-app-extend-')), 'run');
    const first = startApp(['--size', 'tiny', '--steps', '60', '--run-dir', runDir, '--plain', '--no-timing']);
    expect(await first.exited).toBe(0);
    const again = startApp(['--size', 'tiny', '--steps', '60', '--run-dir', runDir, '--plain', '--no-timing']);
    expect(await again.exited).toBe(0);
    expect(again.output()).toMatch(/is already complete \(60 steps\)/);
    const extended = startApp(['--size', 'tiny', '--steps', '90', '--run-dir', runDir, '--plain', '--no-timing']);
    expect(await extended.exited).toBe(0);
    expect(extended.output()).toMatch(/Extending from 60 to 90 steps; the warmup-cosine schedule now spans 90 steps instead of 60: it decays by cosine from the new position, so update 61 uses learning rate [\d.e-]+ \(update 60 used 0\.001\), reaching the floor 0\.001 at step 90\./);
    expect(extended.output()).toMatch(/resuming .* from latest at step 60\/90/);
    const manifest = JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as { events: { event: string; changed?: string[]; step?: number }[] };
    expect(manifest.events.map((e) => e.event)).toEqual(['created', 'completed', 'pivot', 'resumed', 'completed']);
    expect(manifest.events[2]).toMatchObject({ changed: ['steps'], step: 60 });
    expect(await verifyRun(runDir)).toMatchObject({ ok: true, lossLog: { ok: true, records: 90, orphaned: 0 } });
    // Without --steps the extended run keeps its budget: nothing more to do.
    const rerun = startApp(['--size', 'tiny', '--run-dir', runDir, '--plain', '--no-timing']);
    expect(await rerun.exited).toBe(0);
    expect(rerun.output()).toMatch(/is already complete \(90 steps\)/);
  }, 300_000);

  it('runs the chapter-39 recipe with --preset ch39: step 32 selected, the 30994-byte checkpoint; --sign-key signs every manifest', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'llmcp-app-ch39-'));
    try {
      const runDir = path.join(dir, 'run');
      const pair = generateSigningKeyPair('ed25519');
      writeFileSync(path.join(dir, 'key.pem'), pair.privatePem);
      const refused = startApp(['--preset', 'ch39', '--run-dir', runDir, '--sign-key', path.join(dir, 'missing.pem')]);
      expect(await refused.exited).toBe(EXIT_CODES.INPUT);
      expect(existsSync(runDir)).toBe(false);
      const app = startApp(['--preset', 'ch39', '--run-dir', runDir, '--plain', '--sign-key', path.join(dir, 'key.pem')]);
      expect(await app.exited).toBe(EXIT_CODES.OK);
      expect(app.output()).toMatch(/step 32, validation loss 3\.8895/);
      expect(readFileSync(path.join(runDir, 'checkpoints', 'best', 'state.llmcp')).length).toBe(30994);
      const verified = await verifyRun(runDir, { trustKey: await importTrustedKey(pair.publicPem, 'key.pub.pem') });
      expect(verified.provenance.problems).toEqual([]);
      expect(verified.provenance.manifests.every((m) => m.signature === 'verified')).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

/** Resolves once `condition` holds (checked on a short poll), or rejects when `gone` settles first. */
function until(condition: () => boolean, gone: Promise<unknown>, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let done = false;
    void gone.then((code) => {
      if (!done) reject(new Error(`the app exited (${String(code)}) before ${what}`));
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

describe('the trainer app with its output piped into a reader that dies (pnpm start | tee, then Ctrl-C)', () => {
  it('still writes the stop checkpoint at the last step trained and exits 0', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'llmcp-app-pipe-'));
    const runDir = path.join(dir, 'run');
    // Validation and cadence checkpoints far beyond any step reached: only the stop checkpoint can write latest/.
    const far = 1_000_000;
    const input = JSON.parse(JSON.stringify(CH33_CONFIG_INPUT)) as Record<string, unknown> & { evaluation: Record<string, unknown> };
    const configFile = path.join(dir, 'long-run.json');
    writeFileSync(configFile, JSON.stringify({ ...input, steps: far, schedule: { kind: 'constant', rate: null }, evaluation: { ...input.evaluation, validateEvery: far }, checkpoint: { every: far, keepSteps: 3 } }));
    const records = (): number => {
      const file = path.join(runDir, 'loss.jsonl');
      // Training records only (the step-0 evaluation has its own record).
      return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l !== '' && !l.includes('"validationLoss"')).length : 0;
    };
    const app = startApp(['--config', configFile, '--run-dir', runDir, '--plain']);
    try {
      await app.waitForOutput(/Starting a new run/);
      app.child.stdout?.destroy(); // the reader of the app's output (progress and all) is gone
      await until(() => records() >= 5, app.exited, 'training 5 steps');
      app.signal('SIGINT');
      expect(await app.exited, app.output()).toBe(EXIT_CODES.OK);
      const trained = records();
      expect(trained).toBeGreaterThanOrEqual(5);
      const events = (JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as { events: { event: string; step?: number }[] }).events;
      expect(events.map((e) => e.event)).toEqual(['created', 'stopped']);
      expect(events[1]?.step).toBe(trained);
      const job = JSON.parse(readFileSync(path.join(runDir, 'checkpoints/latest/job.json'), 'utf8')) as { step: number };
      expect(job.step).toBe(trained);
    } finally {
      app.signal('SIGKILL');
      await app.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
