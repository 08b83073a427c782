/**
 * Commands looped against a run that is being trained: `llmcp train` runs
 * the ch39 reference config for a very long budget with a checkpoint every 4
 * steps (its slots rotate several times a second), while sample, export
 * (safetensors of the default slot, gguf of latest), eval, status, inspect,
 * diff, report and verify read it in turn, as real processes. None may fail
 * because of the live writer — verify says ok or UNSETTLED (exit 0 or 4,
 * never 1), diff compares two reads of best (0, or 1 when best was replaced
 * between them), every other command exits 0 — and none may write into the
 * run: the fault shim logs every write, rename, mkdir, unlink, link and
 * symlink under the run directory by the command processes, and there must
 * be none. The run is stopped with SIGTERM at the end and must verify.
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { ch39Config } from '@llmcp/trainer';
import { classifyCli, describeExit, llmcp, llmcpRun } from './run-harness.ts';
import { readShimLog, type FaultRule } from './shim.ts';
import { waitUntil } from './wait.ts';

/** The commands of the loop, given the run and an output folder outside it. */
export const LIVE_COMMANDS: readonly { readonly name: string; readonly args: (run: string, out: string) => string[]; readonly exits: readonly number[] }[] = [
  { name: 'status', args: (r) => ['status', r], exits: [0] },
  { name: 'verify', args: (r) => ['verify', r], exits: [0, 4] },
  { name: 'inspect', args: (r) => ['inspect', `${r}:latest`], exits: [0] },
  { name: 'sample', args: (r) => ['sample', r, '--max-tokens', '4'], exits: [0] },
  { name: 'export', args: (r, o) => ['export', '--to', 'safetensors', r, '-o', path.join(o, 'run.safetensors'), '--force'], exits: [0] },
  { name: 'export-gguf', args: (r, o) => ['export', '--to', 'gguf', `${r}:latest`, '-o', path.join(o, 'run.gguf'), '--force'], exits: [0] },
  { name: 'eval', args: (r) => ['eval', r], exits: [0] },
  { name: 'diff', args: (r) => ['diff', `${r}:best`, `${r}:best`], exits: [0, 1] },
  { name: 'report', args: (r) => ['report', r], exits: [0] },
];

/** What a loop found. */
export interface LiveLoopReport {
  readonly commands: number;
  /** Exits per command. */
  readonly exits: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** Steps the run trained while the loop ran (from its loss records). */
  readonly publications: number;
  /** Writes into the run by the command processes (shim log lines). */
  readonly writes: number;
  readonly failures: readonly string[];
}

/**
 * Runs `rounds` rounds of every command against a run being trained in `dir`.
 *
 * @param options - rounds, a fresh folder, progress.
 * @returns the report.
 */
export async function runLiveCommandLoop(options: { readonly rounds: number; readonly dir: string; readonly onProgress?: (done: number, total: number) => void }): Promise<LiveLoopReport> {
  const run = path.join(options.dir, 'run');
  const out = path.join(options.dir, 'out');
  mkdirSync(out, { recursive: true });
  const config = path.join(options.dir, 'config.json');
  // ch39: a BPE tokenizer on the bundled corpus, with a test partition (eval, report) that encodes report's logit probe.
  const base = ch39Config();
  const { writeFileSync } = await import('node:fs');
  writeFileSync(config, JSON.stringify({ ...base, steps: 1_000_000, schedule: { kind: 'constant', rate: 0.02 }, checkpoint: { ...base.checkpoint, every: 4 }, evaluation: { ...base.evaluation, validateEvery: 4, maxBatches: 2 }, log: { timing: false } }));
  const log = path.join(options.dir, 'writes.log');
  const watch: FaultRule[] = [{ op: ['write', 'rename', 'mkdir', 'unlink', 'link', 'symlink'], path: `${run}/`, action: 'log' }];
  const trainer = llmcp(['train', run, '--config', config, '--plain'], { timeoutMs: 3_600_000 });
  const exits: Record<string, Record<string, number>> = {};
  const failures: string[] = [];
  let commands = 0;
  try {
    await waitUntil(() => {
      if (!trainer.alive()) throw new Error(`the live run did not start: ${trainer.stderr().slice(-600)}`);
      return existsSync(path.join(run, 'checkpoints', 'latest', 'job.json')) && existsSync(path.join(run, 'checkpoints', 'best', 'job.json'));
    }, {
      deadlineMs: 120_000,
      what: 'the first checkpoint of the live run',
    });
    const total = options.rounds * LIVE_COMMANDS.length;
    for (let round = 0; round < options.rounds; round++) {
      for (const c of LIVE_COMMANDS) {
        if (!trainer.alive()) throw new Error(`the live run ended: ${trainer.stderr().slice(-600)}`);
        const exit = await llmcpRun(c.args(run, out), { rules: watch, log });
        const row = (exits[c.name] ??= {});
        row[String(exit.code)] = (row[String(exit.code)] ?? 0) + 1;
        commands += 1;
        const outcome = classifyCli(exit);
        if (!c.exits.includes(exit.code ?? -1) || outcome.kind === 'untyped' || outcome.kind === 'hang') failures.push(`${c.name}: ${describeExit(exit)}`);
        options.onProgress?.(commands, total);
      }
    }
  } finally {
    trainer.kill('SIGTERM');
    await trainer.exited;
  }
  const writes = existsSync(log) ? readShimLog(log) : [];
  for (const w of writes.slice(0, 5)) failures.push(`a command wrote into the run: ${w.func} ${w.path}${w.path2 === '' ? '' : ` → ${w.path2}`}`);
  const verified = await llmcpRun(['verify', run]);
  if (verified.code !== 0) failures.push(`the stopped run does not verify: ${describeExit(verified)}`);
  const status = await llmcpRun(['status', run, '--json']);
  const step = status.code === 0 ? ((JSON.parse(status.stdout) as { runs?: { step?: number | null }[] }).runs?.[0]?.step ?? 0) : 0;
  return { commands, exits, publications: Math.floor(step / 4), writes: writes.length, failures };
}

/**
 * The report as text (for `pnpm soak`).
 *
 * @param r - the report.
 * @returns lines.
 */
export function formatLiveLoopReport(r: LiveLoopReport): string {
  const lines = [`commands against a run being trained: ${r.commands} commands while it published about ${r.publications} checkpoints`];
  for (const [name, row] of Object.entries(r.exits)) lines.push(`  ${name.padEnd(12)} ${Object.entries(row).map(([code, n]) => `exit ${code} ×${n}`).join(', ')}`);
  lines.push(`  writes into the run by the commands: ${r.writes}`);
  lines.push(`  failures: ${r.failures.length}`);
  for (const f of r.failures.slice(0, 6)) lines.push(`    ${f.split('\n')[0]?.slice(0, 300) ?? ''}`);
  return lines.join('\n');
}
