/**
 * The kill loop: chains of `llmcp train`/`llmcp resume` processes, each
 * SIGKILLed — at a random time after it started training, by the fault
 * shim at a checkpoint publication point (`kill` before or `kill-after` a
 * rename inside checkpoints/), or at any file-system call under the run
 * directory — and finally resumed to the end without kills; the final
 * files are then compared byte for byte with an uninterrupted run
 * (state.llmcp of latest, best and every step snapshot, loss.jsonl with
 * timing off, samples.json, the job fields that must match).
 *
 * Also counted: untyped errors, hangs, and silent restarts (a `restarted`
 * event in run.json written by a resume while checkpoints or loss history
 * existed).
 */
import { cpSync, existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { SplitMix64 } from '@llmcp/format';
import { classifyCli, describeExit, finalDifference, harnessConfig, llmcp, referenceRun, REPRO_DIR, runEvents, scratch, slotNames, waitForText } from './run-harness.ts';
import type { FaultRule } from './shim.ts';

/** How a process of a chain was killed. */
export type KillKind = 'random-time' | 'publication-kill' | 'publication-kill-after' | 'any-call';

/** Options of {@link runKillLoop}. */
export interface KillLoopOptions {
  readonly chains: number;
  /** Killed processes per chain (a process that completes first ends the chain early). */
  readonly killsPerChain: number;
  readonly seed?: bigint;
  /** Chains run in parallel (default 1). */
  readonly jobs?: number;
  readonly onProgress?: (kills: number) => void;
}

/** A rule broken in a chain. */
export interface KillLoopFailure {
  readonly chain: number;
  readonly what: 'untyped' | 'hang' | 'failed-after-kill' | 'non-identical' | 'silent-restart';
  readonly detail: string;
}

/** Figures of a kill loop. */
export interface KillLoopReport {
  readonly chains: number;
  readonly kills: number;
  readonly killsByKind: Record<KillKind, number>;
  /** Processes started on a killed run (`resume`, or `train` again when it was killed before run.json existed). */
  readonly resumes: number;
  /** Chains whose final files equal the uninterrupted run. */
  readonly identical: number;
  readonly nonIdentical: number;
  readonly silentRestarts: number;
  /** Restarts from step 0 with nothing to lose (killed before any checkpoint or loss record). */
  readonly cleanRestarts: number;
  readonly untyped: number;
  readonly hangs: number;
  readonly failures: readonly KillLoopFailure[];
  readonly seconds: number;
}

/**
 * Whether the run had a checkpoint to lose: a published slot, or an event in run.json that only happens at a
 * checkpoint. Loss records alone are not one — a run killed before its first checkpoint was published has
 * nothing to resume from, and its restart (recorded in run.json, the records recomputed identically) loses nothing.
 */
function hadHistory(runDir: string): boolean {
  return slotNames(runDir).length > 0 || runEvents(runDir).some((e) => ['stopped', 'completed', 'resumed', 'pivot', 'forked-from'].includes(String(e.event)));
}

function chooseKill(rng: SplitMix64, runDir: string): { kind: KillKind; rules: FaultRule[]; delayMs: number } {
  const r = rng.nextBelow(10);
  if (r < 4) return { kind: 'random-time', rules: [], delayMs: rng.nextBelow(700) };
  if (r < 8) {
    const after = rng.nextBelow(2) === 0;
    return {
      kind: after ? 'publication-kill-after' : 'publication-kill',
      rules: [{ op: 'rename', path: `${runDir}/checkpoints/*`, nth: 1 + rng.nextBelow(30), action: after ? 'kill-after' : 'kill' }],
      delayMs: 0,
    };
  }
  return { kind: 'any-call', rules: [{ op: 'any', path: `${runDir}/`, nth: 1 + rng.nextBelow(400), action: rng.nextBelow(2) === 0 ? 'kill' : 'kill-after' }], delayMs: 0 };
}

interface ChainResult {
  kills: number;
  byKind: Record<KillKind, number>;
  resumes: number;
  identical: boolean;
  silentRestarts: number;
  cleanRestarts: number;
  untyped: number;
  hangs: number;
  failures: KillLoopFailure[];
}

async function runChain(chain: number, rng: SplitMix64, killsPerChain: number, configFile: string, runDir: string, reference: string, onKill: () => void): Promise<ChainResult> {
  const out: ChainResult = {
    kills: 0,
    byKind: { 'random-time': 0, 'publication-kill': 0, 'publication-kill-after': 0, 'any-call': 0 },
    resumes: 0,
    identical: false,
    silentRestarts: 0,
    cleanRestarts: 0,
    untyped: 0,
    hangs: 0,
    failures: [],
  };
  let started = false;
  let complete = false;
  const args = (): string[] => (existsSync(path.join(runDir, 'run.json')) ? ['resume', runDir, '--plain'] : ['train', runDir, '--config', configFile, '--plain']);
  const step = async (kill: ReturnType<typeof chooseKill> | null): Promise<void> => {
    const history = hadHistory(runDir);
    const slotsBefore = slotNames(runDir);
    const restartsBefore = runEvents(runDir).filter((e) => e.event === 'restarted').length;
    if (started) out.resumes += 1;
    started = true;
    const child = llmcp(args(), kill === null || kill.rules.length === 0 ? {} : { rules: kill.rules });
    if (kill !== null && kill.kind === 'random-time') {
      if (await waitForText(child, /^(training|resuming) /m, 20_000)) {
        await new Promise((r) => setTimeout(r, kill.delayMs));
        child.kill('SIGKILL');
      }
    }
    const o = classifyCli(await child.exited);
    const restarts = runEvents(runDir).filter((e) => e.event === 'restarted').length;
    if (restarts > restartsBefore) {
      if (history) {
        out.silentRestarts += 1;
        out.failures.push({
          chain,
          what: 'silent-restart',
          detail: `a resume restarted from step 0 although ${slotsBefore.length > 0 ? `checkpoint slots existed (${slotsBefore.join(', ')})` : 'loss records existed (no checkpoint slot yet)'} (${runDir})`,
        });
      } else out.cleanRestarts += 1;
    }
    if (o.kind === 'killed') {
      out.kills += 1;
      if (kill !== null) out.byKind[kill.kind] += 1;
      onKill();
    } else if (o.kind === 'ok') complete = true;
    else {
      if (o.kind === 'untyped') out.untyped += 1;
      if (o.kind === 'hang') out.hangs += 1;
      out.failures.push({ chain, what: o.kind === 'untyped' || o.kind === 'hang' ? o.kind : 'failed-after-kill', detail: `${args().join(' ')}: ${describeExit(o.exit)}` });
    }
  };
  for (let k = 0; k < killsPerChain && !complete; k += 1) await step(chooseKill(rng, runDir));
  if (!complete) await step(null);
  if (complete) {
    const diff = finalDifference(reference, runDir);
    out.identical = diff === null;
    if (diff !== null) out.failures.push({ chain, what: 'non-identical', detail: `${runDir}: ${diff}` });
  } else out.failures.push({ chain, what: 'failed-after-kill', detail: `${runDir}: the final resume did not complete` });
  if (out.failures.length > 0) {
    // Keep the run directory for a post-mortem.
    const keep = path.join(REPRO_DIR, `kill-${path.basename(path.dirname(runDir))}-${path.basename(runDir)}`);
    rmSync(keep, { recursive: true, force: true });
    cpSync(runDir, keep, { recursive: true, verbatimSymlinks: true });
    out.failures.push({ chain, what: out.failures[0]?.what ?? 'failed-after-kill', detail: `run directory kept in ${keep}` });
  }
  return out;
}

/**
 * Runs the kill loop.
 *
 * @param options - chains, kills per chain, seed, parallelism.
 * @returns the figures.
 */
export async function runKillLoop(options: KillLoopOptions): Promise<KillLoopReport> {
  const started = performance.now();
  const config = harnessConfig();
  const reference = await referenceRun(config);
  const s = scratch('llmcp-kill-');
  const configFile = s.config('cfg.json', config);
  const results: ChainResult[] = [];
  let kills = 0;
  try {
    let next = 0;
    const worker = async (): Promise<void> => {
      for (;;) {
        const chain = next;
        next += 1;
        if (chain >= options.chains) return;
        const rng = new SplitMix64(((options.seed ?? 0x4b111n) << 20n) + BigInt(chain));
        const runDir = path.join(s.dir, `chain-${chain}`);
        results.push(
          await runChain(chain, rng, options.killsPerChain, configFile, runDir, reference, () => {
            kills += 1;
            options.onProgress?.(kills);
          }),
        );
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, options.jobs ?? 1) }, worker));
  } finally {
    s.dispose();
  }
  const sum = (f: (r: ChainResult) => number): number => results.reduce((a, r) => a + f(r), 0);
  const byKind: Record<KillKind, number> = { 'random-time': 0, 'publication-kill': 0, 'publication-kill-after': 0, 'any-call': 0 };
  for (const r of results) for (const k of Object.keys(byKind) as KillKind[]) byKind[k] += r.byKind[k];
  return {
    chains: results.length,
    kills: sum((r) => r.kills),
    killsByKind: byKind,
    resumes: sum((r) => r.resumes),
    identical: sum((r) => (r.identical ? 1 : 0)),
    nonIdentical: sum((r) => (r.identical ? 0 : 1)),
    silentRestarts: sum((r) => r.silentRestarts),
    cleanRestarts: sum((r) => r.cleanRestarts),
    untyped: sum((r) => r.untyped),
    hangs: sum((r) => r.hangs),
    failures: results.flatMap((r) => r.failures),
    seconds: (performance.now() - started) / 1000,
  };
}

/** The kill loop's figures as text. */
export function formatKillLoopReport(r: KillLoopReport): string {
  const kinds = Object.entries(r.killsByKind)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  const lines = [
    `kill loop: ${r.chains} chains, ${r.kills} SIGKILLs (${kinds}) → ${r.resumes} resumes → ${r.identical} byte-identical, ${r.nonIdentical} not; ${r.silentRestarts} silent restarts (${r.cleanRestarts} clean restarts with nothing to lose), ${r.untyped} untyped errors, ${r.hangs} hangs; ${r.seconds.toFixed(0)} s`,
  ];
  for (const f of r.failures.slice(0, 20)) lines.push(`    chain ${f.chain} [${f.what}] ${f.detail}`);
  return lines.join('\n');
}
