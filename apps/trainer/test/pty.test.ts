/**
 * The trainer app on a real terminal (a tmux pane, a true pty): the live
 * progress line fits 60 and 120 columns (never wraps), shows the bar, the
 * elapsed<remaining clock, tokens/s and `ckpt @N` of the last completed save;
 * and `pnpm start` stopped by Ctrl-C ends quietly (exit 0, no ERR_PNPM or
 * ELIFECYCLE line from pnpm), as does `pnpm llmcp train` (the CLI's clean-stop
 * 130 is handed to pnpm as 0 by tools/pnpm-llmcp.sh). Skips, saying so, where
 * tmux is not installed.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const APP_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const REPO_DIR = path.resolve(APP_DIR, '..', '..');

const has = (command: string, args: string[]): boolean => spawnSync(command, args, { stdio: 'ignore' }).status === 0;
const HAS_TMUX = has('tmux', ['-V']);
const HAS_PNPM = HAS_TMUX && has('pnpm', ['--version']);
const TMUX_MISSING = ' (skipped: tmux is not installed)';

const work = mkdtempSync(path.join(tmpdir(), 'llmcp-pty-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** tmux's own config for these panes: a dead pane stays to be read, no status bar takes a row. */
const TMUX_CONF = path.join(work, 'tmux.conf');
writeFileSync(TMUX_CONF, 'set -g remain-on-exit on\nset -g status off\nset -g history-limit 20000\n');

const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

let sessions = 0;

/** A command running in a detached tmux pane of a given size, on its own tmux server. */
class Pane {
  readonly socket = `llmcp-pty-${process.pid}-${++sessions}`;

  constructor(command: string, columns: number, rows = 20) {
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: '' };
    delete env.NO_COLOR;
    delete env.FORCE_COLOR;
    delete env.TMUX;
    this.tmux(['-f', TMUX_CONF, 'new-session', '-d', '-s', 'main', '-x', String(columns), '-y', String(rows), command], env);
  }

  tmux(args: string[], env?: NodeJS.ProcessEnv): string {
    const r = spawnSync('tmux', ['-L', this.socket, ...args], { encoding: 'utf8', ...(env === undefined ? {} : { env }) });
    if (r.status !== 0) throw new Error(`tmux ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  }

  /** The whole pane history, wrapped rows joined back into the lines that were written. */
  text(): string {
    return this.tmux(['capture-pane', '-p', '-J', '-S', '-', '-t', 'main']);
  }

  /** Resolves once `condition` holds of the pane (checked on a short poll), or rejects after `ms`. */
  async until(condition: (pane: Pane) => boolean, what: string, ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (!condition(this)) {
      if (Date.now() > deadline) throw new Error(`no ${what} within ${ms} ms; the pane shows:\n${this.text()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  dead(): boolean {
    return this.tmux(['display', '-p', '-t', 'main', '#{pane_dead}']).trim() === '1';
  }

  // Exit statuses are printed by the pane's shell (`; echo …$?`): tmux 3.3 can lose the status of a
  // pane process that closes its terminal before it is reaped.

  close(): void {
    spawnSync('tmux', ['-L', this.socket, 'kill-server'], { stdio: 'ignore' });
  }
}

/** The status lines of the live display (every redraw leaves its last state in the pane). */
const statusLines = (text: string): string[] => text.split('\n').filter((l) => l.includes('tok/s'));

describe.skipIf(!HAS_TMUX)(`the live progress line on a terminal${HAS_TMUX ? '' : TMUX_MISSING}`, () => {
  for (const columns of [60, 120]) {
    it(`fits ${columns} columns and shows the bar, the clock, tokens/s and the last completed checkpoint`, async () => {
      const runDir = path.join(work, `run-${columns}`);
      const app = `node --conditions=@llmcp/source --import tsx src/main.ts --size tiny --steps 60 --run-dir ${quote(runDir)}`;
      const pane = new Pane(`cd ${quote(APP_DIR)} && ${app}; echo "exit status $?"`, columns);
      try {
        await pane.until((p) => p.dead(), 'end of the run', 170_000);
        const text = pane.text();
        expect(text).toContain('exit status 0');
        const lines = statusLines(text);
        expect(lines.length, text).toBeGreaterThan(0);
        for (const line of lines) expect(line.length, `${JSON.stringify(line)} in:\n${text}`).toBeLessThan(columns);
        const last = lines.at(-1) ?? '';
        expect(last).toMatch(/▕[█▏▎▍▌▋▊▉ ]+▏/);
        expect(last).toMatch(/\d\d:\d\d<\d\d:\d\d/);
        expect(last).toMatch(/[\d.]+k? tok\/s/);
        expect(last).toContain('ckpt @60');
        if (columns >= 120) expect(last).toMatch(/^▕.*▏ 60\/60 100% \d\d:\d\d<00:00 {2}loss \d\.\d{4} {2}val \d\.\d{4} {2}best \d\.\d{4}@\d+ {2}[\d.]+k? tok\/s {2}ckpt @60$/);
      } finally {
        pane.close();
      }
    }, 180_000);
  }
});

describe.skipIf(!HAS_PNPM)(`pnpm start stopped by Ctrl-C${HAS_TMUX ? (HAS_PNPM ? '' : ' (skipped: pnpm is not on PATH)') : TMUX_MISSING}`, () => {
  it('writes its checkpoint and exits 0 without an ERR_PNPM or ELIFECYCLE line', async () => {
    const runDir = path.join(work, 'run-stop');
    // pnpm's status is printed by the pane's shell: tmux may lose the status of a pane process that closes its terminal first.
    const pane = new Pane(`cd ${quote(REPO_DIR)} && pnpm start -- --size tiny --steps 100000 --run-dir ${quote(runDir)}; echo "pnpm exit status $?"`, 120);
    try {
      await pane.until((p) => statusLines(p.text()).length > 0 || p.dead(), 'training step', 170_000);
      expect(pane.dead(), pane.text()).toBe(false);
      pane.tmux(['send-keys', '-t', 'main', 'C-c']);
      await pane.until((p) => p.dead(), 'exit after Ctrl-C', 120_000);
      const text = pane.text();
      expect(text).toContain('pnpm exit status 0');
      expect(text).toMatch(/Stopped at step \d+\/100000 with a checkpoint in/);
      expect(text).not.toMatch(/ERR_PNPM|ELIFECYCLE/);
      const events = (JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as { events: { event: string }[] }).events.map((e) => e.event);
      expect(events).toEqual(['created', 'stopped']);
    } finally {
      pane.close();
    }
  }, 300_000);
});

describe.skipIf(!HAS_PNPM)(`pnpm llmcp train stopped by Ctrl-C${HAS_TMUX ? (HAS_PNPM ? '' : ' (skipped: pnpm is not on PATH)') : TMUX_MISSING}`, () => {
  it('checkpoints and ends quietly: pnpm exits 0 (the CLI\'s clean-stop 130) with no ELIFECYCLE line', async () => {
    const runDir = path.join(work, 'run-llmcp-stop');
    const pane = new Pane(`cd ${quote(REPO_DIR)} && pnpm llmcp train ${quote(runDir)} --size tiny --corpus bilingual --steps 100000; echo "pnpm exit status $?"`, 120);
    try {
      await pane.until((p) => statusLines(p.text()).length > 0 || p.dead(), 'training step', 170_000);
      expect(pane.dead(), pane.text()).toBe(false);
      pane.tmux(['send-keys', '-t', 'main', 'C-c']);
      await pane.until((p) => p.dead(), 'exit after Ctrl-C', 120_000);
      const text = pane.text();
      expect(text).toContain('pnpm exit status 0');
      expect(text).toMatch(/stopped at step \d+\/100000 \(SIGINT\); checkpoint in /);
      expect(text).not.toMatch(/ERR_PNPM|ELIFECYCLE/);
    } finally {
      pane.close();
    }
  }, 300_000);
});
