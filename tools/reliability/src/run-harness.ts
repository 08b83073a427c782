/**
 * Driving real `llmcp` processes on tiny runs: the harness config, reference
 * (uninterrupted) runs, comparing final files, snapshots of a directory tree,
 * reading run.json, and classifying how a CLI process ended (typed error,
 * untyped error, hang).
 *
 * The llmcp sources driven are those of the repository (or of
 * `LLMCP_RELIABILITY_ROOT`, e.g. a checkout of another commit, to record
 * which tests fail there).
 */
import { createHash } from 'node:crypto';
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CH33_CONFIG_INPUT } from '@llmcp/trainer';
import { SplitMix64 } from '@llmcp/format';
import { SOURCE_NODE_ARGS, startChild, type ChildExit, type ChildOptions, type RunningChild } from './proc.ts';
import { createPausePoint, exactPath, shimEnv, type FaultRule, REPO_ROOT } from './shim.ts';

/** Root of the llmcp sources the harness runs. */
export const TARGET_ROOT: string = process.env.LLMCP_RELIABILITY_ROOT ?? REPO_ROOT;
const BIN = path.join(TARGET_ROOT, 'packages', 'cli', 'src', 'bin.ts');

/** Where failing cases and run directories are kept for a post-mortem (git-ignored). */
export const REPRO_DIR: string = path.join(REPO_ROOT, 'tools', 'reliability', 'repro');

/** Deadline of one CLI process (a tiny run takes ~1 s). */
export const CLI_TIMEOUT_MS = 45_000;

/** Deadline of one CLI process with the torch engine: PyTorch starts in seconds, and a loaded machine stretches it. */
export const TORCH_CLI_TIMEOUT_MS = 150_000;

/**
 * The harness config: the ch33 fixture's data, tokenizer and model, 24 steps
 * at a constant rate, validation every 2 steps, a cadence checkpoint with a
 * sample audit every 4 (latest is published at steps 4, 8, …, 24), 3 step
 * snapshots kept, timing off (loss.jsonl is byte-reproducible). A run takes
 * about a second.
 *
 * @param patch - top-level overrides (merged one level deep).
 * @returns the config document.
 */
export function harnessConfig(patch: Record<string, unknown> = {}): Record<string, unknown> {
  const base: Record<string, unknown> = {
    ...JSON.parse(JSON.stringify(CH33_CONFIG_INPUT)),
    steps: 24,
    schedule: { kind: 'constant', rate: 0.02 },
    checkpoint: { every: 4, keepSteps: 3 },
    log: { timing: false },
  };
  for (const [k, v] of Object.entries(patch)) {
    const cur = base[k];
    base[k] = cur !== null && typeof cur === 'object' && !Array.isArray(cur) && v !== null && typeof v === 'object' && !Array.isArray(v) ? { ...cur, ...v } : v;
  }
  return base;
}

/** Latest publications of an uninterrupted run of {@link harnessConfig} (steps 4, 8, …, 24). */
export const LATEST_PUBLICATIONS = 6;

/**
 * Glob of the rename that publishes `latest` (`checkpoints/.tmp-latest-<pid>-<n>` → `latest`).
 *
 * @param runDir - the run directory.
 * @returns the rule path.
 */
export function latestPublishGlob(runDir: string): string {
  return `${runDir}/checkpoints/.tmp-latest-*`;
}

/** A temporary directory (under os.tmpdir()) removed by `dispose`. */
export interface Scratch {
  readonly dir: string;
  /** Writes a config file, returns its path. */
  config(name: string, doc: Record<string, unknown>): string;
  dispose(): void;
}

/**
 * A seeded sample of a campaign's cases (the `sample` option of the tamper,
 * provenance and fault campaigns): `sample` distinct cases, in their order,
 * drawn with SplitMix64 from `seed`; all of them when `sample` is absent or
 * not smaller.
 *
 * @param cases - every case.
 * @param sample - how many to keep, or undefined.
 * @param seed - the campaign seed.
 * @returns the kept cases.
 */
export function sampleCases<T>(cases: readonly T[], sample: number | undefined, seed: bigint): T[] {
  if (sample === undefined || sample >= cases.length) return [...cases];
  const rng = new SplitMix64(seed);
  const chosen = new Set<number>();
  while (chosen.size < sample) chosen.add(rng.nextBelow(cases.length));
  return cases.filter((_, i) => chosen.has(i));
}

/** A fresh scratch directory. */
export function scratch(prefix = 'llmcp-rel-'): Scratch {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  return {
    dir,
    config(name, doc) {
      const file = path.join(dir, name);
      writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
      return file;
    },
    dispose() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Starts `llmcp <args>` from the target sources. */
export function llmcp(args: readonly string[], options: ChildOptions & { rules?: readonly FaultRule[]; log?: string } = {}): RunningChild {
  const env =
    options.rules === undefined && options.log === undefined
      ? { ...process.env, NODE_OPTIONS: '', NO_COLOR: '1' }
      : shimEnv(options.rules ?? [], { base: { ...process.env, NO_COLOR: '1' }, pauseTimeoutMs: 120_000, ...(options.log === undefined ? {} : { log: options.log }) });
  return startChild(process.execPath, [...SOURCE_NODE_ARGS, BIN, ...args], { cwd: TARGET_ROOT, timeoutMs: options.timeoutMs ?? CLI_TIMEOUT_MS, env: options.env ?? env });
}

/** Runs `llmcp <args>` to the end. */
export function llmcpRun(args: readonly string[], options: ChildOptions & { rules?: readonly FaultRule[]; log?: string } = {}): Promise<ChildExit> {
  return llmcp(args, options).exited;
}

/** Exit codes of the CLI (packages/cli README). */
const KNOWN_EXITS = new Set([0, 1, 2, 3, 4, 130]);

/** How a CLI process ended, classified. */
export interface CliOutcome {
  /** `ok` (exit 0), `typed` (a documented non-zero exit: a failed verification, or a reported error), `interrupted` (130), `killed` (SIGKILL), `untyped` (an internal error, a stack trace, an unknown exit, a crash), `hang`. */
  readonly kind: 'ok' | 'typed' | 'interrupted' | 'killed' | 'untyped' | 'hang';
  /** The first TRAINER_/CLI_/FORMAT_ code on stderr, if any. */
  readonly code: string | null;
  readonly exit: ChildExit;
}

/**
 * Classifies a CLI exit.
 *
 * @param exit - how the process ended.
 * @returns the outcome.
 */
export function classifyCli(exit: ChildExit): CliOutcome {
  const code = /\b((?:TRAINER|CLI|FORMAT)_[A-Z_]+)\b/.exec(exit.stderr)?.[1] ?? null;
  if (exit.timedOut) return { kind: 'hang', code, exit };
  if (exit.signal === 'SIGKILL') return { kind: 'killed', code, exit };
  if (exit.signal !== null || exit.code === null || !KNOWN_EXITS.has(exit.code)) return { kind: 'untyped', code, exit };
  if (/CLI_INTERNAL|this is a bug in llmcp|Uncaught|UnhandledPromiseRejection|^\s+at .+:\d+:\d+\)?$/m.test(exit.stderr)) return { kind: 'untyped', code, exit };
  if (exit.code === 0) return { kind: 'ok', code, exit };
  if (exit.code === 130) return { kind: 'interrupted', code, exit };
  // 1: verification failed, and 4 with verify's UNSETTLED (a run being trained never stood still): verdicts, on
  // stdout; 2–4 otherwise: a reported error (one line plus a hint on stderr).
  const verdict = exit.code === 1 || (exit.code === 4 && /^run .*: UNSETTLED$|"settled": false/m.test(exit.stdout));
  return { kind: verdict || code !== null || /^llmcp [a-z]+: error: /m.test(exit.stderr) ? 'typed' : 'untyped', code, exit };
}

/** One line describing an exit (for assertion messages). */
export function describeExit(exit: ChildExit): string {
  return `exit ${exit.code}, signal ${exit.signal}${exit.timedOut ? ' (timed out)' : ''}; stdout: ${exit.stdout.trim().slice(-600)}; stderr: ${exit.stderr
    .split('\n')
    .filter((l) => !/^step \d+\/\d+ /.test(l))
    .join('\n')
    .trim()
    .slice(-1500)}`;
}

/** Every entry under `dir` (relative path → kind, size, SHA-256 or link target), for "nothing changed" checks. */
export function snapshotTree(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  if (!existsSync(dir)) return out;
  const walk = (d: string): void => {
    for (const name of readdirSync(d).sort()) {
      const full = path.join(d, name);
      const rel = path.relative(dir, full);
      const info = lstatSync(full);
      if (info.isSymbolicLink()) out.set(rel, `symlink → ${readlinkSync(full)}`);
      else if (info.isDirectory()) {
        out.set(`${rel}/`, 'dir');
        walk(full);
      } else out.set(rel, `${info.size} ${createHash('sha256').update(readFileSync(full)).digest('hex')}`);
    }
  };
  walk(dir);
  return out;
}

/** The first difference between two snapshots, or null. */
export function treeDifference(before: Map<string, string>, after: Map<string, string>): string | null {
  for (const [k, v] of before) {
    if (!after.has(k)) return `${k} was removed`;
    if (after.get(k) !== v) return `${k} changed`;
  }
  for (const k of after.keys()) if (!before.has(k)) return `${k} was added`;
  return null;
}

/** run.json events (empty when missing or unreadable). */
export function runEvents(runDir: string): { event: string; [k: string]: unknown }[] {
  try {
    const doc = JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as { events?: { event: string }[] };
    return doc.events ?? [];
  } catch {
    return [];
  }
}

/** Checkpoint slot names of a run (hidden entries left out). */
export function slotNames(runDir: string): string[] {
  const dir = path.join(runDir, 'checkpoints');
  return existsSync(dir) ? readdirSync(dir).filter((n) => !n.startsWith('.')).sort() : [];
}

/** The files two runs must end with byte for byte. */
const COMPARED = ['checkpoints/latest/state.llmcp', 'checkpoints/best/state.llmcp', 'loss.jsonl', 'samples.json'];

/** Job fields that must match between an interrupted and an uninterrupted run. */
const JOB_FIELDS = ['step', 'phase', 'configDigest', 'inputs', 'data', 'schedule', 'evaluations', 'best', 'sampling', 'lossLog', 'nextBatch', 'state'];

function readJob(runDir: string, slot: string): Record<string, unknown> | null {
  try {
    return JSON.parse(readFileSync(path.join(runDir, 'checkpoints', slot, 'job.json'), 'utf8')) as Record<string, unknown>;
  } catch {
    return null;
  }
}

/**
 * The first difference between the final files of `runDir` and of the reference run, or null:
 * latest and best state, loss.jsonl, samples.json byte for byte, the slot list, every step
 * snapshot's state, and the job fields that must match.
 *
 * @param reference - an uninterrupted run of the same config.
 * @param runDir - the run to check.
 * @returns a description of the first difference, or null.
 */
export function finalDifference(reference: string, runDir: string): string | null {
  for (const rel of COMPARED) {
    const a = path.join(reference, rel);
    const b = path.join(runDir, rel);
    if (!existsSync(a)) continue;
    if (!existsSync(b)) return `${rel} is missing`;
    const x = readFileSync(a);
    const y = readFileSync(b);
    if (Buffer.compare(x, y) !== 0) {
      let i = 0;
      while (i < Math.min(x.length, y.length) && x[i] === y[i]) i += 1;
      return `${rel}: first difference at byte ${i} (${x.length} vs ${y.length} bytes)`;
    }
  }
  const slotsA = slotNames(reference).join(',');
  const slotsB = slotNames(runDir).join(',');
  if (slotsA !== slotsB) return `slots differ: reference [${slotsA}], run [${slotsB}]`;
  for (const slot of slotNames(reference)) {
    if (slot.startsWith('step_')) {
      const x = readFileSync(path.join(reference, 'checkpoints', slot, 'state.llmcp'));
      const y = readFileSync(path.join(runDir, 'checkpoints', slot, 'state.llmcp'));
      if (Buffer.compare(x, y) !== 0) return `${slot}/state.llmcp differs`;
    }
  }
  const ja = readJob(reference, 'latest');
  const jb = readJob(runDir, 'latest');
  if (ja !== null) {
    if (jb === null) return 'latest/job.json is missing or not JSON';
    for (const f of JOB_FIELDS) if (JSON.stringify(ja[f]) !== JSON.stringify(jb[f])) return `latest/job.json field ${f} differs`;
  }
  if (!runEvents(runDir).some((e) => e.event === 'completed')) return 'run.json has no completed event';
  return null;
}

const references = new Map<string, string>();
const referenceRoot = mkdtempSync(path.join(os.tmpdir(), 'llmcp-rel-ref-'));
process.once('exit', () => rmSync(referenceRoot, { recursive: true, force: true }));

/**
 * An uninterrupted run of `config` (trained once per process and config, then reused).
 *
 * @param config - the config document.
 * @param extraArgs - machine settings for `llmcp train` (e.g. `--python` of a torch engine).
 * @param timeoutMs - its deadline (default {@link CLI_TIMEOUT_MS}).
 * @returns the reference run directory (do not modify it).
 */
export async function referenceRun(config: Record<string, unknown>, extraArgs: readonly string[] = [], timeoutMs = CLI_TIMEOUT_MS): Promise<string> {
  const key = createHash('sha256').update(JSON.stringify([config, extraArgs])).digest('hex').slice(0, 16);
  const known = references.get(key);
  if (known !== undefined) return known;
  const dir = path.join(referenceRoot, key);
  mkdirSync(dir, { recursive: true });
  const cfg = path.join(dir, 'config.json');
  writeFileSync(cfg, JSON.stringify(config));
  const run = path.join(dir, 'run');
  const exit = await llmcpRun(['train', run, '--config', cfg, '--plain', ...extraArgs], { timeoutMs });
  if (exit.code !== 0) throw new Error(`the reference run failed: ${describeExit(exit)}`);
  references.set(key, run);
  return run;
}

/**
 * Copies a run directory (to tamper with a copy of a template).
 *
 * @param from - source run.
 * @param to - destination (must not exist).
 */
export function copyRun(from: string, to: string): void {
  cpSync(from, to, { recursive: true, verbatimSymlinks: true });
}

/**
 * Trains `config` in `runDir` and stops it with `signal` (SIGTERM by default)
 * while its save worker is paused before the `nth` publication of `latest`;
 * the run stops with a checkpoint (exit 130) at whatever step the training
 * thread reached. Deterministic where it matters: the stop always lands after
 * the `nth` latest publication started.
 *
 * @returns the exit of the stopped train.
 */
export async function trainAndStop(runDir: string, configFile: string, options: { nth?: number; signal?: NodeJS.Signals } = {}): Promise<ChildExit> {
  const pause = createPausePoint();
  try {
    const child = llmcp(['train', runDir, '--config', configFile, '--plain'], {
      rules: [{ op: 'rename', path: latestPublishGlob(runDir), nth: options.nth ?? 2, action: pause.before }],
    });
    await pause.waitReached({ deadlineMs: 30_000, alive: child.alive });
    child.kill(options.signal ?? 'SIGTERM');
    await waitForText(child, /stopping after this step|SIGUSR1/, 10_000);
    await pause.release({ alive: child.alive });
    return await child.exited;
  } finally {
    pause.dispose();
  }
}

/**
 * Waits until the child's stderr matches `pattern` (bounded), or it exits.
 *
 * @returns whether the text appeared.
 */
export async function waitForText(child: RunningChild, pattern: RegExp, deadlineMs: number): Promise<boolean> {
  const started = Date.now();
  for (;;) {
    if (pattern.test(child.stderr()) || pattern.test(child.stdout())) return true;
    if (!child.alive() || Date.now() - started > deadlineMs) return false;
    await new Promise((r) => setTimeout(r, 2));
  }
}

export { exactPath };
