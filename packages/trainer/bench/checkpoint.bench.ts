/**
 * Checkpoint overhead of a training run, end to end (acceptance 8: ≤ 1% of
 * wall time at a 100-step cadence, for the medium and large configurations).
 *
 * - medium: vocabulary 512 (byte-level BPE, 254 merges), D64/H4/F256/L2,
 *   context 64, batch 8, on a ~300 KB pseudo-English corpus;
 * - large: vocabulary 2048 (byte-level BPE, 1790 merges, `requireAll`),
 *   D128/H4/F512/L4, context 128, batch 8, on a ~1.2 MB corpus of longer
 *   paragraphs (documents).
 *
 * Each configuration trains in pairs of the same run (same seeds, steps and
 * validation every 100 steps — validation is not checkpoint overhead):
 *
 * - (a) `cadence`: `checkpoint.every = 100` — at every 100th step `latest/`, a
 *   `step_NNNNNN/` snapshot (keepSteps 3, with retention) and a sample audit
 *   (1 sample of 32 tokens), `best/` in the same save when validation improved;
 * - (b) `final-only`: the config has no switch that turns cadence checkpoints
 *   off, so `checkpoint.every` is the largest value the schema accepts (the
 *   largest safe multiple of `validateEvery`): only the final checkpoint
 *   (latest/ + step snapshot + audit) is due. Both runs still write the
 *   best-only checkpoints the trainer takes whenever validation improves
 *   outside a cadence step (step 0 in both; steps 100, 200, … in (b) only);
 *   they are not cadence work and cannot be switched off.
 *
 * Runs are interleaved a b, b a, a b, … (the order alternates, so a drift of
 * the machine's speed cancels) each in its own child process (so one run's
 * heap and GC never bias the next). Per pair it reports the wall time
 * of the training loop (the `start` event to the `completed` event, so the
 * final save's flush is included in both), the difference, the overhead
 * (a − b) / b, the time the training thread was blocked by checkpoints, the
 * sums of update and validation time, the mean step time while a background
 * save is in flight versus not, the process CPU time, and whether both runs
 * ended with the same final losses and the same final parameters and AdamW
 * moments (sha256; the sampling RNG state in the file differs by design, as
 * every audit advances it) — the checkpoints must not change training.
 *
 * Run: `pnpm bench trainer` (or `node --conditions=@llmcp/source --import tsx packages/trainer/bench/checkpoint.bench.ts`)
 * with `[--config medium|large|both] [--steps N] [--repeats N] [--threads N] [--save-mode worker|inline]`
 * and the diagnostics `[--cpu-prof DIR]` (V8 CPU profiles of every thread of every run, in DIR/<config>-<variant>-<pair>/;
 * profiling slows the runs, so overheads measured with it are not the real ones; the save worker is terminated at the
 * end of a run and writes no profile — save-cost.ts times a save's pieces on the main thread instead) and
 * `[--save-priority idle|low|normal]` (the save thread's priority, passed as `LLMCP_SAVE_PRIORITY`; default: the trainer's;
 * save-priority-contention.ts measures what each costs a step, within one run).
 * Defaults: both configurations, 300 steps (medium) / 200 steps (large), 2 pairs, threads = the trainer default
 * (this machine's cores), background (worker) saves.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';
import { decodeCheckpoint } from '@llmcp/format';
import { defaultThreads, parseConfig } from '../src/config.ts';
import type { TrainerEvent } from '../src/events.ts';
import { trainRun } from '../src/run.ts';
import type { SaveMode } from '../src/background-saver.ts';
import { SHAPES, trainerConfigInput, writeCorpus, type ConfigName } from './shapes.ts';

type Variant = 'cadence' | 'final-only';

const VALIDATE_EVERY = 100;
const CADENCE_EVERY = 100;
/** The largest `checkpoint.every` the schema accepts (a safe integer, a multiple of `validateEvery`). */
const FINAL_ONLY_EVERY = Math.floor(Number.MAX_SAFE_INTEGER / VALIDATE_EVERY) * VALIDATE_EVERY;
const RESULT_MARK = '@@checkpoint-bench-result ';

/** What the parent asks a child to run. */
interface ChildSpec {
  readonly config: ConfigName;
  readonly variant: Variant;
  readonly corpus: string;
  readonly steps: number;
  readonly threads: number;
  readonly saveMode: SaveMode;
  /** `LLMCP_SAVE_PRIORITY` for the run, or null for the trainer's default. */
  readonly savePriority: string | null;
}

/** What a child measured. */
interface Measured {
  readonly spec: ChildSpec;
  /** Process start to the `start` event (module loading, corpus, BPE, model). */
  readonly setupMs: number;
  readonly wallMs: number;
  readonly cpuMs: number;
  readonly stepSumMs: number;
  readonly evalSumMs: number;
  readonly overlappedSteps: number;
  readonly overlappedStepMeanMs: number;
  readonly freeStepMeanMs: number;
  /** Update time lost while background saves were in flight: Σ(overlapped step − mean free step); null without free steps. */
  readonly overlapLossMs: number | null;
  readonly blocked: readonly { readonly step: number; readonly reason: string; readonly ms: number }[];
  readonly saveMs: readonly number[];
  readonly kernels: string;
  /** Where the saves ran, as the `checkpoint-saved` events say (`idle`, `low`, `normal`, `inline`). */
  readonly saveThreads: readonly string[];
  readonly vocabularySize: number;
  readonly parameterCount: number;
  readonly finalLoss: number;
  readonly finalValidationLoss: number;
  /** sha256 of the final parameters and AdamW moments (the sampling RNG state differs by design: every audit advances it). */
  readonly finalWeightsSha256: string;
  readonly stateBytes: number;
  readonly loadBefore: readonly number[];
  readonly loadAfter: readonly number[];
}

function option(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
}

function positiveOption(name: string): number | undefined {
  const raw = option(name);
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`${name}: expected a positive integer, found ${raw}`);
  return n;
}

/** sha256 over the parameters and both AdamW moments of a state file, in model order, plus the optimizer step. */
function weightsDigest(file: string): string {
  const state = decodeCheckpoint(readFileSync(file));
  const hash = createHash('sha256');
  const add = (a: Float64Array): void => {
    hash.update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
  };
  for (const t of state.parameters) add(t.data);
  for (const m of state.optimizer.moments) {
    add(m.first);
    add(m.second);
  }
  hash.update(String(state.optimizer.step));
  return hash.digest('hex');
}

async function measure(spec: ChildSpec): Promise<Measured> {
  const shape = SHAPES[spec.config];
  const dir = mkdtempSync(path.join(tmpdir(), 'llmcp-trainer-bench-'));
  const config = parseConfig(
    trainerConfigInput(shape, {
      corpus: spec.corpus,
      steps: spec.steps,
      validateEvery: VALIDATE_EVERY,
      checkpointEvery: spec.variant === 'cadence' ? CADENCE_EVERY : FINAL_ONLY_EVERY,
      keepSteps: 3,
      threads: spec.threads,
    }),
  );
  const blocked: { step: number; reason: string; ms: number }[] = [];
  const saveMs: number[] = [];
  const saveThreads = new Set<string>();
  let started = 0;
  let ended = 0;
  let cpuStart: NodeJS.CpuUsage | null = null;
  let cpuMs = 0;
  let kernels = '?';
  let vocabularySize = 0;
  let parameterCount = 0;
  let stepSumMs = 0;
  let evalSumMs = 0;
  let evalStarted = 0;
  let inFlight = 0;
  const overlapped: number[] = [];
  const free: number[] = [];
  let finalLoss = Number.NaN;
  let finalValidationLoss = Number.NaN;
  const onEvent = (e: TrainerEvent): void => {
    switch (e.type) {
      case 'start':
        started = performance.now();
        cpuStart = process.cpuUsage();
        kernels = e.kernels ?? '?';
        vocabularySize = e.vocabularySize;
        parameterCount = e.parameterCount;
        break;
      case 'step':
        stepSumMs += e.stepMs;
        (inFlight > 0 ? overlapped : free).push(e.stepMs);
        finalLoss = e.loss;
        break;
      case 'evaluation-start':
        evalStarted = performance.now();
        break;
      case 'evaluation':
        evalSumMs += performance.now() - evalStarted;
        finalValidationLoss = e.validationLoss;
        break;
      case 'checkpoint':
        blocked.push({ step: e.step, reason: e.reason, ms: e.blockedMs });
        if (spec.saveMode === 'worker') inFlight += 1;
        break;
      case 'checkpoint-saved':
        saveMs.push(e.saveMs);
        saveThreads.add(e.saveThread);
        if (spec.saveMode === 'worker') inFlight -= 1;
        break;
      case 'completed': {
        ended = performance.now();
        const cpu = process.cpuUsage(cpuStart ?? undefined);
        cpuMs = (cpu.user + cpu.system) / 1000;
        break;
      }
      default:
        break;
    }
  };
  const loadBefore = loadavg();
  const result = await trainRun({ runDir: path.join(dir, 'run'), config, saveMode: spec.saveMode, onEvent });
  const loadAfter = loadavg();
  const finalWeightsSha256 = weightsDigest(path.join(dir, 'run', 'checkpoints', 'latest', 'state.llmcp'));
  rmSync(dir, { recursive: true, force: true });
  const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  return {
    spec,
    setupMs: started,
    wallMs: ended - started,
    cpuMs,
    stepSumMs,
    evalSumMs,
    overlappedSteps: overlapped.length,
    overlappedStepMeanMs: mean(overlapped),
    freeStepMeanMs: mean(free),
    overlapLossMs: free.length === 0 ? null : overlapped.reduce((a, x) => a + x - mean(free), 0),
    blocked,
    saveMs,
    kernels,
    saveThreads: [...saveThreads],
    vocabularySize,
    parameterCount,
    finalLoss,
    finalValidationLoss,
    finalWeightsSha256,
    stateBytes: result.lastSave?.stateBytes ?? 0,
    loadBefore,
    loadAfter,
  };
}

/** Runs one training in a fresh child process (same node flags, without the bench runner's RSS hook; `--cpu-prof` when asked). */
function runChild(spec: ChildSpec, profileDir: string | null): Measured {
  const execArgv: string[] = profileDir === null ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`];
  for (let i = 0; i < process.execArgv.length; i += 1) {
    const a = process.execArgv[i] as string;
    if (a === '--import' && (process.execArgv[i + 1] ?? '').startsWith('data:')) {
      i += 1;
      continue;
    }
    if (a.startsWith('--import=data:')) continue;
    execArgv.push(a);
  }
  const env = { ...process.env };
  delete env.LLMCP_BENCH_RSS_FILE;
  const r = spawnSync(process.execPath, [...execArgv, fileURLToPath(import.meta.url), '--child', JSON.stringify(spec)], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const line = r.stdout.split('\n').find((l) => l.startsWith(RESULT_MARK));
  if (r.status !== 0 || line === undefined) throw new Error(`child run ${spec.config}/${spec.variant} failed (status ${String(r.status)}): ${r.stdout.slice(-2000)}`);
  return JSON.parse(line.slice(RESULT_MARK.length)) as Measured;
}

const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);
const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const loads = (xs: readonly number[]): string => xs.map((x) => x.toFixed(2)).join(' ');
const sec = (ms: number | null): string => (ms === null ? 'n/a' : (ms / 1000).toFixed(2));

function describeRun(m: Measured): string {
  const byReason = new Map<string, number>();
  for (const b of m.blocked) byReason.set(b.reason, (byReason.get(b.reason) ?? 0) + 1);
  const reasons = [...byReason].map(([r, n]) => `${n} ${r}`).join(', ');
  const blockedMs = sum(m.blocked.map((b) => b.ms));
  return [
    `    ${m.spec.variant.padEnd(10)} wall ${sec(m.wallMs)} s (setup before it ${sec(m.setupMs)} s), cpu ${sec(m.cpuMs)} s; updates ${sec(m.stepSumMs)} s, validation ${sec(m.evalSumMs)} s, blocked ${blockedMs.toFixed(1)} ms`,
    `               checkpoints: ${reasons} (blocked ${m.blocked.map((b) => `${b.step}:${b.ms.toFixed(1)}`).join(' ')} ms; save work ${m.saveMs.map((s) => s.toFixed(0)).join(' ')} ms; save thread ${m.saveThreads.join('/') || 'n/a'})`,
    `               step mean ${m.freeStepMeanMs.toFixed(2)} ms, while a save is in flight ${m.overlappedStepMeanMs.toFixed(2)} ms (${m.overlappedSteps} steps, ${sec(m.overlapLossMs)} s lost); load ${loads(m.loadBefore)} → ${loads(m.loadAfter)}`,
  ].join('\n');
}

interface Pair {
  readonly config: ConfigName;
  readonly index: number;
  readonly a: Measured;
  readonly b: Measured;
}

function sameTraining(p: Pair): boolean {
  return Object.is(p.a.finalLoss, p.b.finalLoss) && Object.is(p.a.finalValidationLoss, p.b.finalValidationLoss) && p.a.finalWeightsSha256 === p.b.finalWeightsSha256;
}

function printTable(pairs: readonly Pair[]): void {
  const header = ['config', 'pair', 'cadence s', 'final-only s', 'a-b s', 'overhead', 'blocked a ms', 'blocked b ms', 'blocked a %', 'overlap a/b s', 'updates a/b', 'cpu a/b', 'same result'];
  const rows = pairs.map((p) => {
    const blockedA = sum(p.a.blocked.map((x) => x.ms));
    const blockedB = sum(p.b.blocked.map((x) => x.ms));
    return [
      p.config,
      String(p.index + 1),
      sec(p.a.wallMs),
      sec(p.b.wallMs),
      sec(p.a.wallMs - p.b.wallMs),
      `${((100 * (p.a.wallMs - p.b.wallMs)) / p.b.wallMs).toFixed(2)}%`,
      blockedA.toFixed(1),
      blockedB.toFixed(1),
      `${((100 * blockedA) / p.a.wallMs).toFixed(3)}%`,
      `${sec(p.a.overlapLossMs)}/${sec(p.b.overlapLossMs)}`,
      (p.a.stepSumMs / p.b.stepSumMs).toFixed(4),
      (p.a.cpuMs / p.b.cpuMs).toFixed(4),
      sameTraining(p) ? 'yes' : 'NO',
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
  console.log(`\n${line(header)}`);
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
  console.log('overhead = (a − b) / b of the training loop wall time (start → completed, final save included); blocked = training thread waiting on checkpoints;');
  console.log('overlap = update time lost while a background save was in flight (Σ overlapped step − mean free step); updates, cpu = a/b ratios of Σ step time and process CPU');
  for (const config of ['medium', 'large'] as const) {
    const mine = pairs.filter((p) => p.config === config);
    if (mine.length === 0) continue;
    const overheads = mine.map((p) => (100 * (p.a.wallMs - p.b.wallMs)) / p.b.wallMs);
    const overhead = median(overheads);
    const blocked = median(mine.map((p) => (100 * sum(p.a.blocked.map((x) => x.ms))) / p.a.wallMs));
    const same = mine.every(sameTraining);
    console.log(
      `${config}: median end-to-end overhead ${overhead.toFixed(2)}% over ${mine.length} pair(s) (range ${Math.min(...overheads).toFixed(2)} … ${Math.max(...overheads).toFixed(2)}%; target ≤ 1%: ${mine.length < 2 ? 'no verdict from 1 pair' : overhead <= 1 ? 'met' : 'NOT met'}); median blocked share ${blocked.toFixed(3)}%; final losses and weights ${same ? 'identical in every pair' : 'DIFFER'}`,
    );
  }
}

async function main(): Promise<void> {
  const childSpec = option('--child');
  if (childSpec !== undefined) {
    const spec = JSON.parse(childSpec) as ChildSpec;
    if (spec.savePriority !== null) process.env.LLMCP_SAVE_PRIORITY = spec.savePriority;
    const m = await measure(spec);
    console.log(`${RESULT_MARK}${JSON.stringify(m)}`);
    return;
  }
  const which = option('--config') ?? 'both';
  if (which !== 'medium' && which !== 'large' && which !== 'both') throw new Error(`--config: expected medium, large or both, found ${which}`);
  const configs: ConfigName[] = which === 'both' ? ['medium', 'large'] : [which];
  const stepsOverride = positiveOption('--steps');
  const repeats = positiveOption('--repeats') ?? 2;
  const threads = positiveOption('--threads') ?? defaultThreads();
  const saveMode = option('--save-mode') ?? 'worker';
  if (saveMode !== 'worker' && saveMode !== 'inline') throw new Error(`--save-mode: expected worker or inline, found ${saveMode}`);
  const profileRoot = option('--cpu-prof');
  const savePriority = option('--save-priority') ?? null;
  if (savePriority !== null && !['idle', 'low', 'normal'].includes(savePriority)) throw new Error(`--save-priority: expected idle, low or normal, found ${savePriority}`);
  const corpusDir = mkdtempSync(path.join(tmpdir(), 'llmcp-trainer-bench-corpus-'));
  const pairs: Pair[] = [];
  try {
    console.log(`trainer checkpoint bench: cadence (checkpoint every ${CADENCE_EVERY}) vs final-only (every = ${FINAL_ONLY_EVERY}), validation every ${VALIDATE_EVERY} in both`);
    console.log(`  (a) cadence: every ${CADENCE_EVERY} steps latest/ + step_N/ snapshot (keepSteps 3, retention) + sample audit (1 × 32 tokens), best/ in the same save when validation improved`);
    console.log('  (b) final-only: only the final cadence-type checkpoint; both still write a best-only checkpoint whenever validation improves off a cadence step (step 0; in (b) also 100, 200, …)');
    console.log(`  ${repeats} pair(s) per config, interleaved a b, b a, …, one child process per run; threads ${threads}, ${saveMode} saves${savePriority === null ? '' : ` (LLMCP_SAVE_PRIORITY=${savePriority})`}; load average ${loads(loadavg())}`);
    for (const config of configs) {
      const shape = SHAPES[config];
      const steps = stepsOverride ?? shape.defaultSteps;
      const corpus = writeCorpus(corpusDir, shape.corpus);
      console.log(`\n${shape.label}, ${steps} steps, corpus ${(readFileSync(corpus).length / 1e6).toFixed(2)} MB`);
      for (let i = 0; i < repeats; i += 1) {
        const base = { config, corpus, steps, threads, saveMode, savePriority } as const;
        const profile = (variant: Variant): string | null => (profileRoot === undefined ? null : path.join(path.resolve(profileRoot), `${config}-${variant}-${i + 1}`));
        // The order alternates (a b, b a, a b, …), so a drift of the machine's speed over the pairs cancels instead of favouring one variant.
        const first: Variant = i % 2 === 0 ? 'cadence' : 'final-only';
        const runs = new Map<Variant, Measured>();
        for (const variant of [first, first === 'cadence' ? 'final-only' : 'cadence'] as const) runs.set(variant, runChild({ ...base, variant }, profile(variant)));
        const a = runs.get('cadence') as Measured;
        const b = runs.get('final-only') as Measured;
        if (i === 0) console.log(`  vocabulary ${a.vocabularySize}, ${a.parameterCount} parameters, state.llmcp ${(a.stateBytes / 1e6).toFixed(2)} MB, kernels ${a.kernels}`);
        const pair: Pair = { config, index: i, a, b };
        pairs.push(pair);
        console.log(`  pair ${i + 1}: overhead ${((100 * (a.wallMs - b.wallMs)) / b.wallMs).toFixed(2)}%, final loss ${a.finalLoss} / ${b.finalLoss} (${sameTraining(pair) ? 'identical' : 'DIFFERENT'})`);
        console.log(describeRun(a));
        console.log(describeRun(b));
      }
    }
  } finally {
    rmSync(corpusDir, { recursive: true, force: true });
  }
  printTable(pairs);
  console.log(`load average at the end: ${loads(loadavg())}`);
  const busiest = Math.max(...pairs.flatMap((p) => [p.a, p.b]).flatMap((m) => [...m.loadBefore.slice(0, 1), ...m.loadAfter.slice(0, 1)]));
  // The bench's own run keeps about `threads` + 1 threads busy; twice the cores means other work competed.
  if (busiest > 2 * availableParallelism()) {
    console.log(`WARNING: the 1-minute load average reached ${busiest.toFixed(2)} on ${availableParallelism()} cores during the runs: other work competed for the cores, so the wall times (and the verdict) are not trustworthy`);
  }
  if (!pairs.every(sameTraining)) process.exitCode = 1;
}

await main();
