/**
 * `pnpm soak`: the full reliability campaign, with progress on stderr and
 * the figures on stdout — fuzz cases per class and outcome, max time and
 * memory per hostile file, fuzz cases on which the Python reader agrees,
 * kills → resumes → byte-identical, faults → outcome, tampering → outcome,
 * tampering with signed runs → detected and named, signed kill loops → false alarms —
 * and a summary line. Exits non-zero on any untyped error, crash, hang,
 * disagreement of the two readers, non-identical resume or silent restart.
 *
 * Options:
 *   --quick            a few minutes: 100k fuzz cases, 5,000 through the Python oracle, 60 kills, sampled faults and tampering
 *   --size <f>         scale every part (1 = full: ≥ 1,000,000 fuzz cases, 50,000 through the Python oracle, ≥ 1,000 SIGKILLs,
 *                      ≥ 100 SIGKILLs of a torch engine's trainer and ≥ 20 of its ranks)
 *   --only <parts>     comma-separated subset of fuzz,python,kill,faults,tamper,provenance,large,splits,torch,exports,races,live,targets
 *                      (provenance: every tampering of a signed run, ≈260 cases, each detected by verify --trust-key
 *                      with its file or link named; and signed kill loops, 30 chains × 8 kills at full size, the run's
 *                      provenance verified after every process: zero false alarms)
 *   --torch-python <p> the Python with PyTorch for the torch part (default: $LLMCP_PYTHON, else /usr/bin/python3)
 *   --jobs <n>         parallel children for the fuzzer, the Python oracle and the kill loops (default 2)
 *   --seed <n>         campaign seed
 */
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runFaultCampaign, formatFaultReport, type FaultReport } from './fault-points.ts';
import { formatFuzzReport, parseSparse, runFuzzCampaign, type FuzzReport } from './fuzz-llmcp.ts';
import { formatKillLoopReport, runKillLoop, type KillLoopReport } from './kill-loop.ts';
import { formatPythonOracleReport, pythonProblem, runPythonOracle, type PythonOracleReport } from './python-oracle.ts';
import { ALL_RACES, formatCreatorRaceReport, runCreatorRaces } from './creator-races.ts';
import { formatExportFuzzReport, runExportFuzzCampaign } from './export-fuzz.ts';
import { formatHostileReport, hostileCases, runHostileTargets } from './hostile-targets.ts';
import { formatLiveLoopReport, runLiveCommandLoop } from './live-commands.ts';
import { harnessConfig, llmcpRun, referenceRun, scratch } from './run-harness.ts';
import { buildFaultShim } from './shim.ts';
import { formatTamperReport, runTamperCampaign, type TamperReport } from './tamper.ts';
import { formatProvenanceTamperReport, runProvenanceTamperCampaign, type ProvenanceTamperReport } from './provenance-tamper.ts';

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const quick = process.argv.includes('--quick');
const size = Number(flag('--size') ?? (quick ? 0.1 : 1));
const jobs = Number(flag('--jobs') ?? 2);
const seed = BigInt(flag('--seed') ?? 0x50a4);
const only = new Set((flag('--only') ?? 'fuzz,python,kill,faults,tamper,provenance,large,splits,torch,exports,races,live,targets').split(','));
const progress = (label: string) => (done: number, total?: number): void => {
  process.stderr.write(`\r${label}: ${done}${total === undefined ? '' : `/${total}`}   `);
};

/**
 * Runs one soak-gated test file (LLMCP_SOAK=1) of a vitest project from the repository root.
 * @returns its exit status, its stdout with vitest's colour codes stripped (so its summary can be read) and its stderr.
 */
function runSoakTests(project: string, file: string, env: Record<string, string>): { status: number | null; out: string; stderr: string } {
  const r = spawnSync('pnpm', ['exec', 'vitest', 'run', '--project', project, file], {
    cwd: fileURLToPath(new URL('../../..', import.meta.url)),
    env: { ...process.env, LLMCP_SOAK: '1', ...env },
    encoding: 'utf8',
  });
  // eslint-disable-next-line no-control-regex -- ESC (0x1b) starts every ANSI colour code
  return { status: r.status, out: r.stdout.replace(/\x1b\[[0-9;]*m/g, ''), stderr: r.stderr };
}

const started = performance.now();
const sections: string[] = [];
const summary: string[] = [];
let bad = 0;

if (only.has('fuzz')) {
  const cases = Math.max(1000, Math.round(1_000_000 * size));
  process.stderr.write(`fuzz: ${cases} cases + sparse files, ${jobs} jobs\n`);
  const r: FuzzReport = await runFuzzCampaign({
    cases,
    seed,
    jobs,
    loadEvery: 8,
    inspectEvery: 8,
    sparse: parseSparse(flag('--sparse'), quick ? [0, 1] : [0, 1, 2, 3, 4, 5, 6, 7]),
    onProgress: progress('fuzz'),
  });
  process.stderr.write('\n');
  sections.push(formatFuzzReport(r));
  const crashes = r.stats.failures.filter((f) => f.kind === 'crash').length;
  const hangs = r.stats.failures.filter((f) => f.kind === 'hang').length;
  const wrong = r.stats.failures.filter((f) => f.kind === 'wrong-outcome').length;
  bad += r.stats.failures.length;
  summary.push(`${r.stats.cases.toLocaleString('en-US')} fuzz cases: ${wrong} untyped/wrong, ${crashes} crashes, ${hangs} hangs`);
}

if (only.has('python')) {
  // The Python package's reader as a differential oracle on the fuzzer's cases: verdict, code and every error field, found text included.
  const problem = pythonProblem();
  if (problem !== null) {
    sections.push(`python oracle: skipped (${problem})`);
    summary.push('python oracle skipped (no Python)');
  } else {
    const cases = Math.max(1000, Math.round(50_000 * size));
    process.stderr.write(`python oracle: ${cases} fuzz cases through both readers, ${jobs} jobs\n`);
    const r: PythonOracleReport = await runPythonOracle({ cases, seed, jobs, onProgress: progress('python') });
    process.stderr.write('\n');
    sections.push(formatPythonOracleReport(r));
    bad += r.mismatches.length + r.failures.length;
    summary.push(`${r.cases.toLocaleString('en-US')} Python oracle cases: ${r.agreed.toLocaleString('en-US')} agree (verdict, code, found), ${r.mismatches.length} differ, ${r.failures.length} not compared`);
  }
}

const shim = buildFaultShim();
if ('skip' in shim && (only.has('kill') || only.has('faults') || only.has('tamper'))) {
  sections.push(`kill loop, faults, tampering: skipped (${shim.skip})`);
  summary.push('process campaigns skipped (no C compiler)');
} else {
  if (only.has('kill')) {
    const killsPerChain = 8;
    const chains = Math.max(2, Math.ceil((1000 * size) / (killsPerChain * 0.85)));
    process.stderr.write(`kill loop: ${chains} chains × ${killsPerChain} kills, ${jobs} jobs\n`);
    const r: KillLoopReport = await runKillLoop({ chains, killsPerChain, seed, jobs, onProgress: progress('kills') });
    process.stderr.write('\n');
    sections.push(formatKillLoopReport(r));
    bad += r.failures.length;
    summary.push(`${r.kills} kills → ${r.resumes} resumes → ${r.identical}/${r.chains} byte-identical, ${r.silentRestarts} silent restarts, ${r.untyped} untyped, ${r.hangs} hangs`);
  }
  if (only.has('faults')) {
    process.stderr.write('faults: enumerating one publication\n');
    const r: FaultReport = await runFaultCampaign({ ...(size < 1 ? { sample: Math.max(6, Math.round(200 * size)) } : {}), seed, onProgress: progress('faults') });
    process.stderr.write('\n');
    sections.push(formatFaultReport(r));
    bad += r.failures.length;
    summary.push(`${r.injections} faults at ${r.points} points: ${r.failures.length} not recovered`);
  }
  if (only.has('tamper')) {
    const r: TamperReport = await runTamperCampaign({ ...(size < 1 ? { sample: Math.max(8, Math.round(150 * size)) } : {}), seed, onProgress: progress('tamper') });
    process.stderr.write('\n');
    sections.push(formatTamperReport(r));
    bad += r.failures.length;
    summary.push(`${r.cases} tamperings: ${r.failures.length} failures`);
  }
}

if (only.has('provenance')) {
  // Signed runs: every tampering detected with its file or link named, no false alarm on the untouched run.
  const r: ProvenanceTamperReport = await runProvenanceTamperCampaign({ ...(size < 1 ? { sample: Math.max(12, Math.round(260 * size)) } : {}), seed, onProgress: progress('provenance tamper') });
  process.stderr.write('\n');
  sections.push(formatProvenanceTamperReport(r));
  bad += r.failures.length + r.falseAlarms.length;
  summary.push(`${r.cases} signed-run tamperings: ${r.cases - r.failures.length} detected and named, ${r.falseAlarms.length} false alarms`);
  if ('skip' in shim) sections.push(`signed kill loop: skipped (${shim.skip})`);
  else {
    // Interrupted (SIGKILL, or one in three a SIGINT stop) and resumed signed runs: their provenance verified after every process, never a false alarm.
    const chains = Math.max(2, Math.ceil(30 * size));
    process.stderr.write(`signed kill loop: ${chains} chains × 8 kills, ${jobs} jobs\n`);
    const k: KillLoopReport = await runKillLoop({ chains, killsPerChain: 8, seed: seed + 7n, jobs, provenance: true, onProgress: progress('signed kills') });
    process.stderr.write('\n');
    sections.push(`signed ${formatKillLoopReport(k)}`);
    bad += k.failures.length;
    summary.push(`signed kill loop: ${k.kills} kills, ${k.stops} stops, ${k.provenanceChecks} provenance verifications, ${k.provenanceFalseAlarms} false alarms`);
  }
}

if (only.has('torch')) {
  // The torch engine's run lifecycle: kill loops with 1 and 2 ranks (the trainer SIGKILLed at random times and
  // publication points, single ranks SIGKILLed), every chain resumed to the bytes of an uninterrupted torch run,
  // no rank outliving its trainer.
  const python = flag('--torch-python') ?? process.env.LLMCP_PYTHON ?? '/usr/bin/python3';
  const probe = spawnSync(python, ['-c', 'import torch, torch.distributed as d; assert d.is_gloo_available()'], { encoding: 'utf8' });
  if (probe.status !== 0) {
    sections.push(`torch engine kill loop: skipped (PyTorch with gloo is not importable by ${python})`);
    summary.push('torch engine skipped (no PyTorch)');
  } else if ('skip' in shim) {
    sections.push(`torch engine kill loop: skipped (${shim.skip})`);
  } else {
    const killsPerChain = 8;
    // ≥ 100 SIGKILLs of the trainer and ≥ 20 of single ranks at full size (one kill in four takes a rank).
    const chains = Math.max(2, Math.ceil((160 * size) / killsPerChain));
    for (const worldSize of [1, 2]) {
      const n = Math.max(1, Math.round(chains / 2));
      process.stderr.write(`torch engine, ${worldSize} rank(s): ${n} chains × ${killsPerChain} kills, ${jobs} jobs\n`);
      const r: KillLoopReport = await runKillLoop({ chains: n, killsPerChain, seed: seed + BigInt(worldSize), jobs, engine: { worldSize, python }, onProgress: progress(`torch ×${worldSize} kills`) });
      process.stderr.write('\n');
      sections.push(`torch engine, ${worldSize} rank(s): ${formatKillLoopReport(r)}`);
      bad += r.failures.length;
      summary.push(`torch ×${worldSize}: ${r.kills} kills (${r.killsByKind.rank} of ranks) → ${r.identical}/${r.chains} byte-identical, ${r.orphans} orphaned ranks`);
    }
  }
}

if (only.has('large') && !quick) {
  // Files beyond 2 GiB: the trainer's streamed save and load of a 2.4 GB state, and a loss.jsonl past 2 GiB (packages/trainer/test/large-state.test.ts).
  process.stderr.write('large: a state.llmcp over 2 GiB through the trainer\n');
  const t = performance.now();
  const r = runSoakTests('trainer', 'test/large-state.test.ts', {});
  const ok = r.status === 0 && /Tests\s+\S*\s*2 passed/.test(r.out);
  if (!ok) bad += 1;
  sections.push(`large state: ${ok ? 'a 2.4 GB state.llmcp saved, published and verified, and a 2 GiB + 4 KiB loss.jsonl scanned and planned, through the streaming paths' : `FAILED\n${r.out.slice(-2000)}${r.stderr.slice(-2000)}`} (${((performance.now() - t) / 1000).toFixed(0)} s)`);
  summary.push(`>2 GiB state: ${ok ? 'ok' : 'FAILED'}`);
}

if (only.has('splits')) {
  // Thread splits: the medium training shape with fixed and free splits of every wave, against one thread, bit for bit (packages/model/test/thread-splits.test.ts).
  const steps = Math.max(8, Math.round(400 * size));
  process.stderr.write(`splits: ${steps} training steps per kernel set and thread count, against one thread\n`);
  const t = performance.now();
  const r = runSoakTests('model', 'test/thread-splits.test.ts', { LLMCP_SOAK_SIZE: String(size) });
  const passed = /Tests\s+(\d+) passed/.exec(r.out)?.[1];
  const ok = r.status === 0 && passed !== undefined && !/failed/.test(r.out.split('Tests')[1] ?? '');
  if (!ok) bad += 1;
  sections.push(`thread splits: ${ok ? `${passed} kernel × thread-count combinations, ${steps} steps each, every loss and gradient bit equal to one thread's` : `FAILED\n${r.out.slice(-3000)}${r.stderr.slice(-2000)}`} (${((performance.now() - t) / 1000).toFixed(0)} s)`);
  summary.push(`thread splits: ${ok ? 'ok' : 'FAILED'}`);
}

if (only.has('exports')) {
  // Hostile-but-valid checkpoints through every export and import, in watched worker processes (a case silent for 60 s is a
  // hang, a worker beyond its 1.5 GiB heap a crash).
  const cases = Math.max(100, Math.round(5000 * size));
  process.stderr.write(`exports: ${cases} hostile-but-valid checkpoints, ${jobs} jobs\n`);
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'llmcp-soak-exports-'));
  try {
    const r = await runExportFuzzCampaign({ cases, seed: Number(seed & 0x7fffffffn), jobs, workDir, onProgress: progress('exports') });
    process.stderr.write('\n');
    sections.push(formatExportFuzzReport(r));
    bad += r.failures.length;
    const verified = Object.values(r.outcomes).reduce((n, row) => n + (row.ok ?? 0), 0);
    const refused = Object.values(r.outcomes).reduce((n, row) => n + Object.entries(row).filter(([k]) => k !== 'ok').reduce((m, [, v]) => m + v, 0), 0);
    summary.push(`${r.cases} hostile checkpoints × exports: ${verified} outputs verified, ${refused} typed refusals, ${r.failures.length} failures (peak ${(r.maxRssKb / 1024).toFixed(0)} MiB)`);
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}

if ('skip' in shim && (only.has('races') || only.has('live'))) {
  sections.push(`creator races, live commands: skipped (${shim.skip})`);
} else {
  if (only.has('races')) {
    // Every pair of creators at every pause, repeated; a quick soak takes an even sample.
    const all = [...ALL_RACES, ...ALL_RACES, ...ALL_RACES];
    const count = Math.max(6, Math.round(all.length * size));
    const races = all.filter((_, i) => Math.floor((i * count) / all.length) !== Math.floor(((i + 1) * count) / all.length));
    process.stderr.write(`races: ${races.length} races of creators into one new directory\n`);
    const sources = scratch();
    try {
      const config = sources.config('cfg.json', harnessConfig());
      const sourceA = await referenceRun(harnessConfig());
      const sourceB = path.join(sources.dir, 'b');
      const b = await llmcpRun(['train', sourceB, '--config', sources.config('b.json', harnessConfig({ schedule: { kind: 'constant', rate: 0.01 } })), '--plain']);
      if (b.code !== 0) throw new Error(`the second source run failed: ${b.stderr.slice(-500)}`);
      const r = await runCreatorRaces(races, { sourceA, sourceB, config, scratch, onProgress: progress('races') });
      process.stderr.write('\n');
      sections.push(formatCreatorRaceReport(r));
      bad += r.failures.length;
      summary.push(`${r.races} creator races: ${r.failures.length} failures`);
    } finally {
      sources.dispose();
    }
  }
  if (only.has('live')) {
    const rounds = Math.max(2, Math.round(20 * size));
    process.stderr.write(`live: ${rounds} rounds of commands against a run being trained\n`);
    const s = scratch();
    try {
      const r = await runLiveCommandLoop({ rounds, dir: s.dir, onProgress: progress('live') });
      process.stderr.write('\n');
      sections.push(formatLiveLoopReport(r));
      bad += r.failures.length;
      summary.push(`${r.commands} commands against a live run: ${r.failures.length} failures, ${r.writes} writes into it`);
    } finally {
      s.dispose();
    }
  }
}

if (only.has('targets')) {
  const all = hostileCases(os.tmpdir());
  const step = Math.max(1, Math.round(1 / Math.min(1, size)));
  const cases = all.filter((_, i) => i % step === 0);
  process.stderr.write(`targets: ${cases.length} of ${all.length} hostile targets and inputs\n`);
  const r = await runHostileTargets(cases, { scratch, onProgress: progress('targets') });
  process.stderr.write('\n');
  sections.push(formatHostileReport(r));
  bad += r.failures.length;
  summary.push(`${r.cases} hostile targets and inputs: ${r.failures.length} failures`);
}

console.log(sections.join('\n\n'));
console.log(`\nsoak ${bad === 0 ? 'PASSED' : 'FAILED'} in ${((performance.now() - started) / 60_000).toFixed(1)} min: ${summary.join('; ')}`);
process.exitCode = bad === 0 ? 0 : 1;
