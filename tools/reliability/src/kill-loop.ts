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
 *
 * With `provenance` every process signs its checkpoints (`--sign-key`), one
 * interruption in three is a SIGINT instead of a SIGKILL (a graceful stop:
 * the stop checkpoint, exit 130, then a resume), and after every process —
 * killed, stopped or not — the run's provenance is verified
 * against the key in-process: any problem with a manifest, a signature, the
 * lineage store or a lineage link is a false alarm (interrupted and resumed
 * runs must keep an unbroken chain).
 *
 * With `engine` the runs use the torch engine (../../../docs/engine-protocol.md) with
 * that many ranks, and two more things are checked: a SIGKILL of one rank
 * (instead of the trainer, at a random time) ends the trainer with the typed
 * `TRAINER_ENGINE_FAILED`, and no rank outlives its trainer, however the
 * trainer ended.
 */
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { SplitMix64 } from '@llmcp/format';
import { generateSigningKeyPair, importTrustedKey, verifyRun, type TrustedKey } from '@llmcp/trainer';
import { childPids, processGone } from './proc.ts';
import { classifyCli, CLI_TIMEOUT_MS, describeExit, finalDifference, harnessConfig, llmcp, referenceRun, REPRO_DIR, runEvents, scratch, slotNames, TORCH_CLI_TIMEOUT_MS, waitForText } from './run-harness.ts';
import type { FaultRule } from './shim.ts';

/** How a process of a chain was killed. */
export type KillKind = 'random-time' | 'publication-kill' | 'publication-kill-after' | 'any-call' | 'rank';

/** The torch engine of a kill loop: ranks and interpreter. */
export interface KillLoopEngine {
  readonly worldSize: number;
  readonly python: string;
}

/** How long engine ranks may take to exit after their trainer ended. */
const ORPHAN_LIMIT_MS = 20_000;

/** Options of {@link runKillLoop}. */
export interface KillLoopOptions {
  readonly chains: number;
  /** Killed processes per chain (a process that completes first ends the chain early). */
  readonly killsPerChain: number;
  readonly seed?: bigint;
  /** Chains run in parallel (default 1). */
  readonly jobs?: number;
  readonly onProgress?: (kills: number) => void;
  /** Train with the torch engine (default: the llmcp engine). */
  readonly engine?: KillLoopEngine;
  /** Run only these chain numbers (of `chains`), with the kills they draw in a full loop: a failing chain replayed. */
  readonly only?: readonly number[];
  /** Sign every checkpoint and verify the run's provenance after every process (default false). */
  readonly provenance?: boolean;
}

/** A rule broken in a chain. */
export interface KillLoopFailure {
  readonly chain: number;
  readonly what: 'untyped' | 'hang' | 'failed-after-kill' | 'non-identical' | 'silent-restart' | 'orphan' | 'rank-kill' | 'provenance-false-alarm';
  readonly detail: string;
}

/** Figures of a kill loop. */
export interface KillLoopReport {
  readonly chains: number;
  readonly kills: number;
  readonly killsByKind: Record<KillKind, number>;
  /** Graceful stops (SIGINT; signed chains only): the stop checkpoint, exit 130, then a resume. */
  readonly stops: number;
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
  /** Engine ranks that were running when their trainer ended, and that outlived it (torch engine). */
  readonly ranksWatched: number;
  readonly orphans: number;
  /** Provenance verifications (after every process of a signed chain), and the slots and manifests they checked. */
  readonly provenanceChecks: number;
  readonly provenanceSlotsChecked: number;
  readonly provenanceManifestsChecked: number;
  /** Verifications that reported a problem on a run nobody tampered with. */
  readonly provenanceFalseAlarms: number;
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

function chooseKill(rng: SplitMix64, runDir: string, engine: boolean, stops: boolean): { kind: KillKind | 'stop'; rules: FaultRule[]; delayMs: number } {
  // Signed chains: one interruption in three is a graceful stop (SIGINT at a random time).
  if (stops && rng.nextBelow(3) === 0) return { kind: 'stop', rules: [], delayMs: rng.nextBelow(700) };
  // With an engine, one kill in four takes a single rank instead of the trainer.
  if (engine && rng.nextBelow(4) === 0) return { kind: 'rank', rules: [], delayMs: rng.nextBelow(1500) };
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
  stops: number;
  resumes: number;
  identical: boolean;
  silentRestarts: number;
  cleanRestarts: number;
  untyped: number;
  hangs: number;
  ranksWatched: number;
  orphans: number;
  provenanceChecks: number;
  provenanceSlots: number;
  provenanceManifests: number;
  provenanceFalseAlarms: number;
  failures: KillLoopFailure[];
}

/** What a chain runs: its config file, run directory, reference run, the engine's machine arguments. */
interface ChainSetup {
  readonly configFile: string;
  readonly runDir: string;
  readonly reference: string;
  readonly engine: KillLoopEngine | undefined;
  /** The signing key file and the trusted key of a signed chain. */
  readonly sign: { readonly keyFile: string; readonly trustKey: TrustedKey } | undefined;
}

/**
 * The engine ranks among a trainer's children (`python -m llmcp.engine`): not the short-lived helpers it
 * also starts (`chrt` for the save thread's priority, which a first version of this loop took for a rank).
 */
function engineRanks(trainer: number): number[] {
  return childPids(trainer).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('llmcp.engine');
    } catch {
      return false;
    }
  });
}

/** Sends a signal; false when the process had already gone (its run finished first). */
function signalIfAlive(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

const NO_KILLS = (): Record<KillKind, number> => ({ 'random-time': 0, 'publication-kill': 0, 'publication-kill-after': 0, 'any-call': 0, rank: 0 });

async function runChain(chain: number, rng: SplitMix64, killsPerChain: number, setup: ChainSetup, onKill: () => void): Promise<ChainResult> {
  const { configFile, runDir, reference, engine, sign } = setup;
  const out: ChainResult = {
    kills: 0,
    byKind: NO_KILLS(),
    stops: 0,
    resumes: 0,
    identical: false,
    silentRestarts: 0,
    cleanRestarts: 0,
    untyped: 0,
    hangs: 0,
    ranksWatched: 0,
    orphans: 0,
    provenanceChecks: 0,
    provenanceSlots: 0,
    provenanceManifests: 0,
    provenanceFalseAlarms: 0,
    failures: [],
  };
  /** The run's provenance, verified with the key: on a run nobody tampered with, any problem is a false alarm. */
  const checkProvenance = async (after: string): Promise<void> => {
    if (sign === undefined || !existsSync(path.join(runDir, 'run.json'))) return;
    const v = await verifyRun(runDir, { trustKey: sign.trustKey });
    out.provenanceChecks += 1;
    out.provenanceSlots += v.slots.length;
    out.provenanceManifests += v.provenance.manifests.length;
    const alarms = [
      ...v.provenance.problems.map((p) => `${p.code} ${p.message}`),
      ...v.slots.filter((s) => !s.ok && /MANIFEST|SIGNATURE|LINEAGE/.test(s.code ?? '')).map((s) => `${s.slot}: ${s.code ?? ''} ${s.message ?? ''}`),
      ...v.provenance.chain.filter((l) => l.status === 'broken').map((l) => `broken link at step ${l.step}: ${l.problem ?? ''}`),
    ];
    if (v.slots.length > 0 && v.provenance.state !== 'checked') alarms.push(`provenance state ${v.provenance.state} on a signed run`);
    if (alarms.length > 0) {
      out.provenanceFalseAlarms += 1;
      out.failures.push({ chain, what: 'provenance-false-alarm', detail: `after ${after}: ${[...new Set(alarms)].join(' | ')}` });
    }
  };
  let started = false;
  let complete = false;
  const machine = engine === undefined ? [] : ['--python', engine.python];
  const signing = sign === undefined ? [] : ['--sign-key', sign.keyFile];
  const args = (): string[] => [...(existsSync(path.join(runDir, 'run.json')) ? ['resume', runDir, '--plain'] : ['train', runDir, '--config', configFile, '--plain']), ...machine, ...signing];
  const step = async (kill: ReturnType<typeof chooseKill> | null): Promise<void> => {
    const history = hadHistory(runDir);
    const slotsBefore = slotNames(runDir);
    const restartsBefore = runEvents(runDir).filter((e) => e.event === 'restarted').length;
    if (started) out.resumes += 1;
    started = true;
    const child = llmcp(args(), { ...(kill === null || kill.rules.length === 0 ? {} : { rules: kill.rules }), timeoutMs: engine === undefined ? CLI_TIMEOUT_MS : TORCH_CLI_TIMEOUT_MS });
    // The engine's ranks are running once the trainer says it is training.
    let ranks: number[] = [];
    // Whether a rank was SIGKILLed (one that had already ended with its finished run cannot be).
    let rankKilled = false;
    if (engine !== undefined || (kill !== null && (kill.kind === 'random-time' || kill.kind === 'stop'))) {
      if (await waitForText(child, /^(training|resuming) /m, 20_000)) {
        ranks = engine === undefined ? [] : engineRanks(child.pid);
        if (kill !== null && (kill.kind === 'random-time' || kill.kind === 'rank' || kill.kind === 'stop')) {
          await new Promise((r) => setTimeout(r, kill.delayMs));
          const victim = ranks[rng.nextBelow(Math.max(1, ranks.length))];
          if (kill.kind === 'rank' && victim !== undefined) rankKilled = signalIfAlive(victim, 'SIGKILL');
          else child.kill(kill.kind === 'stop' ? 'SIGINT' : 'SIGKILL');
        }
      }
    }
    const exit = await child.exited;
    const o = classifyCli(exit);
    if (ranks.length > 0) {
      out.ranksWatched += ranks.length;
      const deadline = performance.now() + ORPHAN_LIMIT_MS;
      while (ranks.some((pid) => !processGone(pid)) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const orphans = ranks.filter((pid) => !processGone(pid));
      if (orphans.length > 0) {
        out.orphans += orphans.length;
        out.failures.push({ chain, what: 'orphan', detail: `ranks ${orphans.join(', ')} still ran ${ORPHAN_LIMIT_MS} ms after their trainer ended (${describeExit(exit)})` });
        for (const pid of orphans) signalIfAlive(pid, 'SIGKILL');
      }
    }
    if (rankKilled && o.kind !== 'ok') {
      // A rank's death ends the trainer with the typed engine failure; the chain resumes as after a kill.
      if (o.kind === 'typed' && o.code === 'TRAINER_ENGINE_FAILED') {
        out.kills += 1;
        out.byKind.rank += 1;
        onKill();
      } else out.failures.push({ chain, what: 'rank-kill', detail: `a killed rank ended ${args().join(' ')} with ${describeExit(exit)}, not TRAINER_ENGINE_FAILED` });
      return;
    }
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
      if (kill !== null && kill.kind !== 'stop') out.byKind[kill.kind] += 1;
      onKill();
    } else if (o.kind === 'interrupted' && kill?.kind === 'stop') out.stops += 1;
    else if (o.kind === 'ok') complete = true;
    else {
      if (o.kind === 'untyped') out.untyped += 1;
      if (o.kind === 'hang') out.hangs += 1;
      out.failures.push({ chain, what: o.kind === 'untyped' || o.kind === 'hang' ? o.kind : 'failed-after-kill', detail: `${args().join(' ')}: ${describeExit(o.exit)}` });
    }
  };
  for (let k = 0; k < killsPerChain && !complete; k += 1) {
    const kill = chooseKill(rng, runDir, engine !== undefined, sign !== undefined);
    await step(kill);
    await checkProvenance(`kill ${k + 1} (${kill.kind})`);
  }
  if (!complete) await step(null);
  await checkProvenance('the final process');
  if (complete) {
    const diff = finalDifference(reference, runDir);
    out.identical = diff === null;
    if (diff !== null) out.failures.push({ chain, what: 'non-identical', detail: `${runDir}: ${diff}` });
  } else out.failures.push({ chain, what: 'failed-after-kill', detail: `${runDir}: the final resume did not complete` });
  if (out.failures.length > 0) {
    // Keep the run directory for a post-mortem.
    const keep = path.join(REPRO_DIR, `kill-${path.basename(path.dirname(runDir))}-${path.basename(runDir)}`);
    rmSync(keep, { recursive: true, force: true });
    if (existsSync(runDir)) {
      cpSync(runDir, keep, { recursive: true, verbatimSymlinks: true });
      out.failures.push({ chain, what: out.failures[0]?.what ?? 'failed-after-kill', detail: `run directory kept in ${keep}` });
    } else out.failures.push({ chain, what: out.failures[0]?.what ?? 'failed-after-kill', detail: `no run directory to keep (${runDir} does not exist)` });
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
  const engine = options.engine;
  const config = harnessConfig(engine === undefined ? {} : { engine: { kind: 'torch', worldSize: engine.worldSize } });
  const reference = await referenceRun(config, engine === undefined ? [] : ['--python', engine.python], engine === undefined ? CLI_TIMEOUT_MS : TORCH_CLI_TIMEOUT_MS);
  const s = scratch('llmcp-kill-');
  const configFile = s.config('cfg.json', config);
  let sign: ChainSetup['sign'];
  if (options.provenance === true) {
    const pair = generateSigningKeyPair('ecdsa-p256');
    const keyFile = path.join(s.dir, 'key.pem');
    writeFileSync(keyFile, pair.privatePem, { mode: 0o600 });
    sign = { keyFile, trustKey: await importTrustedKey(pair.publicPem, 'key.pub.pem') };
  }
  const results: ChainResult[] = [];
  let kills = 0;
  try {
    let next = 0;
    const worker = async (): Promise<void> => {
      for (;;) {
        const chain = next;
        next += 1;
        if (chain >= options.chains) return;
        if (options.only !== undefined && !options.only.includes(chain)) continue;
        const rng = new SplitMix64(((options.seed ?? 0x4b111n) << 20n) + BigInt(chain));
        const runDir = path.join(s.dir, `chain-${chain}`);
        results.push(
          await runChain(chain, rng, options.killsPerChain, { configFile, runDir, reference, engine, sign }, () => {
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
  const byKind = NO_KILLS();
  for (const r of results) for (const k of Object.keys(byKind) as KillKind[]) byKind[k] += r.byKind[k];
  return {
    chains: results.length,
    kills: sum((r) => r.kills),
    killsByKind: byKind,
    stops: sum((r) => r.stops),
    resumes: sum((r) => r.resumes),
    identical: sum((r) => (r.identical ? 1 : 0)),
    nonIdentical: sum((r) => (r.identical ? 0 : 1)),
    silentRestarts: sum((r) => r.silentRestarts),
    cleanRestarts: sum((r) => r.cleanRestarts),
    untyped: sum((r) => r.untyped),
    hangs: sum((r) => r.hangs),
    ranksWatched: sum((r) => r.ranksWatched),
    orphans: sum((r) => r.orphans),
    provenanceChecks: sum((r) => r.provenanceChecks),
    provenanceSlotsChecked: sum((r) => r.provenanceSlots),
    provenanceManifestsChecked: sum((r) => r.provenanceManifests),
    provenanceFalseAlarms: sum((r) => r.provenanceFalseAlarms),
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
    `kill loop: ${r.chains} chains, ${r.kills} SIGKILLs (${kinds}) → ${r.resumes} resumes → ${r.identical} byte-identical, ${r.nonIdentical} not; ${r.silentRestarts} silent restarts (${r.cleanRestarts} clean restarts with nothing to lose), ${r.untyped} untyped errors, ${r.hangs} hangs${r.ranksWatched === 0 ? '' : `; ${r.ranksWatched} engine ranks watched, ${r.orphans} outlived their trainer`}${r.provenanceChecks === 0 ? '' : `; signed: ${r.stops} SIGINT stops, ${r.provenanceChecks} provenance verifications after every process (${r.provenanceSlotsChecked} slots, ${r.provenanceManifestsChecked} manifests checked with the key), ${r.provenanceFalseAlarms} false alarms`}; ${r.seconds.toFixed(0)} s`,
  ];
  for (const f of r.failures.slice(0, 20)) lines.push(`    chain ${f.chain} [${f.what}] ${f.detail}`);
  return lines.join('\n');
}
