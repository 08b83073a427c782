/**
 * Structure-aware fuzzer of LLMCP35 v1 files (cases: fuzz-cases.ts; the
 * worker process: fuzz-child.ts). This module runs a campaign in watched
 * child processes: a child that dies (e.g. a native assertion, exit 134) or
 * goes silent past the watchdog is recorded as a crash or hang of the case it
 * was running — rebuilt from its number and saved as a reproduction file —
 * and a fresh child continues after it. Sparse-file cases (2–4 GiB files that
 * are mostly a hole) each get their own child, so their peak memory is
 * measured alone.
 *
 * Run: `pnpm exec tsx tools/reliability/src/fuzz-llmcp.ts [--cases N] [--seed S] [--sparse all|none|0,3] [--jobs J]`
 * Reproduce a saved case: `pnpm exec tsx tools/reliability/src/fuzz-llmcp.ts --repro <file.llmcp>`
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createCaseGenerator, SPARSE_CASES, type FuzzCase } from './fuzz-cases.ts';
import type { FuzzChildArgs } from './fuzz-child.ts';
import { emptyStats, formatFuzzStats, mergeStats, saveRepro, type FuzzStats } from './fuzz-stats.ts';
import { REPO_ROOT } from './shim.ts';
import { SOURCE_NODE_ARGS, startChild } from './proc.ts';

const CHILD = fileURLToPath(new URL('./fuzz-child.ts', import.meta.url));

/** Where failing cases are saved by default. */
export const DEFAULT_REPRO_DIR: string = path.join(REPO_ROOT, 'tools', 'reliability', 'repro');

/** Options of {@link runFuzzCampaign}. */
export interface FuzzOptions {
  /** In-memory cases (each also loaded from a file every `loadEvery` cases). */
  readonly cases: number;
  /** Campaign seed (default 0x11c35). */
  readonly seed?: bigint;
  /** Indices into SPARSE_CASES to run (default none). */
  readonly sparse?: readonly number[];
  /** Parallel children for the in-memory cases (default 1). */
  readonly jobs?: number;
  /** A case slower than this is a failure (default 2000 ms; sparse cases: 20 000 ms). */
  readonly slowMs?: number;
  /** A child silent for this long is killed and its case is a hang (default 30 s; sparse: 120 s). */
  readonly watchdogMs?: number;
  /** Load every n-th case from a file too (default 1 = all). */
  readonly loadEvery?: number;
  /** Inspect every n-th case (default 4). */
  readonly inspectEvery?: number;
  /** Random valid variants per corpus seed (default 4). */
  readonly variantsPerSeed?: number;
  readonly reproDir?: string;
  /** Called with the number of cases done so far. */
  readonly onProgress?: (done: number, total: number) => void;
}

/** The result of a campaign. */
export interface FuzzReport {
  readonly stats: FuzzStats;
  readonly seconds: number;
  /** Largest peak resident set of any child (bytes). */
  readonly maxRssBytes: number;
  /** Peak resident set of each sparse-file case's child. */
  readonly sparse: readonly { readonly k: number; readonly detail: string; readonly outcome: string; readonly maxRssBytes: number; readonly ms: number }[];
}

interface ChildRange {
  readonly from: number;
  readonly to: number;
  readonly sparse: readonly number[];
}

async function runRange(range: ChildRange, opts: Required<Omit<FuzzOptions, 'onProgress' | 'sparse' | 'cases'>>, stats: FuzzStats, onCases: (n: number) => void): Promise<number> {
  const generator = { value: null as ReturnType<typeof createCaseGenerator> | null };
  const rebuild = (kind: number, index: number): FuzzCase => {
    generator.value ??= createCaseGenerator({ seed: opts.seed, variantsPerSeed: opts.variantsPerSeed });
    return kind === 1 ? generator.value.sparse(index) : generator.value.generate(index);
  };
  let from = range.from;
  let sparse = [...range.sparse];
  let maxRss = 0;
  while (from < range.to || sparse.length > 0) {
    const work = mkdtempSync(path.join(os.tmpdir(), 'llmcp-fuzz-'));
    const progressFile = path.join(work, 'progress');
    const args: FuzzChildArgs = {
      seed: String(opts.seed),
      from,
      to: range.to,
      sparse,
      workDir: work,
      progressFile,
      reproDir: opts.reproDir,
      slowMs: opts.slowMs,
      loadEvery: opts.loadEvery,
      inspectEvery: opts.inspectEvery,
      reportEvery: 500,
      variantsPerSeed: opts.variantsPerSeed,
    };
    const child = startChild(process.execPath, [...SOURCE_NODE_ARGS, CHILD, JSON.stringify(args)], { timeoutMs: 24 * 3600_000 });
    let buffer = '';
    let lastHeard = Date.now();
    let next = from;
    let sparseLeft = [...sparse];
    let hung = false;
    child.process.stdout?.on('data', (chunk: string) => {
      lastHeard = Date.now();
      buffer += chunk;
      let nl = buffer.indexOf('\n');
      while (nl >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        nl = buffer.indexOf('\n');
        const msg = JSON.parse(line) as { type: string; next?: number; sparseDone?: number; stats?: FuzzStats; maxRssBytes?: number };
        if (msg.type === 'stats' && msg.stats !== undefined) {
          mergeStats(stats, msg.stats);
          onCases(msg.stats.cases);
          if (msg.sparseDone !== undefined) sparseLeft = sparseLeft.filter((k) => k !== msg.sparseDone);
          else next = msg.next ?? next;
        } else if (msg.type === 'done') maxRss = Math.max(maxRss, msg.maxRssBytes ?? 0);
      }
    });
    const watchdog = setInterval(() => {
      const limit = sparseLeft.length > 0 ? Math.max(opts.watchdogMs, 120_000) : opts.watchdogMs;
      if (Date.now() - lastHeard > limit) {
        hung = true;
        child.kill('SIGKILL');
      }
    }, 250);
    const exit = await child.exited;
    clearInterval(watchdog);
    const finished = existsSync(path.join(work, 'done'));
    if (!finished) {
      // The case in flight crashed the child or hung: rebuild it from its number, record it, go on after it.
      let kind = 0;
      let index = next;
      if (existsSync(progressFile) && readFileSync(progressFile).length >= 16) {
        const p = readFileSync(progressFile);
        index = Number(p.readBigInt64LE(0));
        kind = p.readInt32LE(8);
      }
      const c = rebuild(kind, index);
      const what = hung ? 'HANG' : 'CRASH';
      const problem = hung
        ? `no progress for ${opts.watchdogMs} ms (killed by the watchdog)`
        : `the process died: exit ${exit.code}, signal ${exit.signal}; stderr: ${exit.stderr.trim().split('\n').slice(-6).join(' / ').slice(0, 600)}`;
      const repro = saveRepro(opts.reproDir, opts.seed, c, [problem]);
      const row = (stats.byClass[c.cls] ??= {});
      row[what] = (row[what] ?? 0) + 1;
      stats.cases += 1;
      onCases(1);
      stats.failures.push({ index: c.index, cls: c.cls, sparse: kind === 1, kind: hung ? 'hang' : 'crash', detail: c.detail, problems: [problem], repro });
      if (kind === 1) sparse = sparseLeft.filter((k) => k !== index);
      else {
        sparse = sparseLeft;
        from = index + 1;
      }
    } else {
      from = range.to;
      sparse = [];
    }
    rmSync(work, { recursive: true, force: true });
  }
  return maxRss;
}

/**
 * Runs a fuzz campaign (see the module comment).
 *
 * @param options - size, seed, sparse cases, limits.
 * @returns the figures and failures.
 */
export async function runFuzzCampaign(options: FuzzOptions): Promise<FuzzReport> {
  const started = performance.now();
  const opts = {
    seed: options.seed ?? 0x11c35n,
    jobs: Math.max(1, options.jobs ?? 1),
    slowMs: options.slowMs ?? 2000,
    watchdogMs: options.watchdogMs ?? 30_000,
    loadEvery: options.loadEvery ?? 1,
    inspectEvery: options.inspectEvery ?? 4,
    variantsPerSeed: options.variantsPerSeed ?? 4,
    reproDir: options.reproDir ?? DEFAULT_REPRO_DIR,
  };
  const stats = emptyStats();
  const total = options.cases + (options.sparse?.length ?? 0);
  let done = 0;
  const onCases = (n: number): void => {
    done += n;
    options.onProgress?.(done, total);
  };
  const per = Math.ceil(options.cases / opts.jobs);
  const ranges: ChildRange[] = [];
  for (let j = 0; j < opts.jobs; j += 1) ranges.push({ from: j * per, to: Math.min(options.cases, (j + 1) * per), sparse: [] });
  const rss = await Promise.all(ranges.filter((r) => r.to > r.from).map((r) => runRange(r, opts, stats, onCases)));
  const sparse: { k: number; detail: string; outcome: string; maxRssBytes: number; ms: number }[] = [];
  let maxRssBytes = Math.max(0, ...rss);
  for (const k of options.sparse ?? []) {
    const s = emptyStats();
    const t = performance.now();
    const peak = await runRange({ from: 0, to: 0, sparse: [k] }, { ...opts, slowMs: Math.max(opts.slowMs, 20_000) }, s, onCases);
    const outcome = Object.keys(s.byClass['sparse-file'] ?? {})[0] ?? '?';
    const spec = SPARSE_CASES[k % SPARSE_CASES.length];
    sparse.push({ k, detail: `header_bytes ${spec?.headerBytes}, size ${spec?.size}`, outcome, maxRssBytes: peak, ms: performance.now() - t });
    mergeStats(stats, s);
    maxRssBytes = Math.max(maxRssBytes, peak);
  }
  return { stats, seconds: (performance.now() - started) / 1000, maxRssBytes, sparse };
}

/**
 * The campaign's figures as text (per class and outcome, sparse cases with their peak memory).
 *
 * @param report - a campaign result.
 * @returns printable lines.
 */
export function formatFuzzReport(report: FuzzReport): string {
  const lines = [formatFuzzStats(report.stats, { seconds: report.seconds, maxRssBytes: report.maxRssBytes })];
  for (const s of report.sparse) lines.push(`  sparse #${s.k} (${s.detail}): ${s.outcome}, ${(s.ms / 1000).toFixed(1)} s, peak ${(s.maxRssBytes / 2 ** 20).toFixed(0)} MiB`);
  return lines.join('\n');
}

/** Runs a saved case (`.llmcp` with its `.json` recipe) in this process and prints what each reader does. */
async function reproduce(file: string): Promise<void> {
  const { decodeCheckpoint, encodeCheckpoint, isFormatError } = await import('@llmcp/format');
  const { loadCheckpoint } = await import('@llmcp/format/node');
  const recipeFile = file.replace(/\.llmcp$/, '.json');
  const recipe = existsSync(recipeFile) ? (JSON.parse(readFileSync(recipeFile, 'utf8')) as { sparseSize?: number; detail?: string; problems?: string[] }) : {};
  console.log(`case: ${recipe.detail ?? file}\nrecorded: ${(recipe.problems ?? []).join(' | ')}`);
  const bytes = new Uint8Array(readFileSync(file));
  let target = file;
  if (recipe.sparseSize !== undefined) {
    const { openSync, writeSync, ftruncateSync, closeSync } = await import('node:fs');
    target = path.join(mkdtempSync(path.join(os.tmpdir(), 'llmcp-repro-')), 'sparse.llmcp');
    const fd = openSync(target, 'w');
    writeSync(fd, bytes);
    ftruncateSync(fd, recipe.sparseSize);
    closeSync(fd);
    console.log(`sparse file ${target} of ${recipe.sparseSize} bytes`);
  } else {
    try {
      const decoded = decodeCheckpoint(bytes);
      const same = Buffer.compare(Buffer.from(encodeCheckpoint(decoded)), Buffer.from(bytes)) === 0;
      console.log(`decodeCheckpoint: valid, re-encoding ${same ? 'identical' : 'DIFFERS'}`);
    } catch (e) {
      console.log(`decodeCheckpoint: ${isFormatError(e) ? `${e.code}: ${e.message}` : `UNTYPED ${String(e)}`}`);
    }
  }
  try {
    await loadCheckpoint(target);
    console.log('loadCheckpoint: valid');
  } catch (e) {
    console.log(`loadCheckpoint: ${isFormatError(e) ? `${e.code}: ${e.message}` : `UNTYPED ${String(e)}`}`);
  }
}

function flag(argv: readonly string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
}

/** `--sparse all|none|k,k` → indices. */
export function parseSparse(value: string | undefined, fallback: readonly number[]): number[] {
  if (value === undefined) return [...fallback];
  if (value === 'none') return [];
  if (value === 'all') return SPARSE_CASES.map((_, k) => k);
  return value.split(',').map(Number);
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const repro = flag(argv, '--repro');
  if (repro !== undefined) await reproduce(repro);
  else {
    const cases = Number(flag(argv, '--cases') ?? 20_000);
    const report = await runFuzzCampaign({
      cases,
      seed: BigInt(flag(argv, '--seed') ?? 0x11c35),
      jobs: Number(flag(argv, '--jobs') ?? 1),
      sparse: parseSparse(flag(argv, '--sparse'), []),
      onProgress: (d, t) => process.stderr.write(`\r${d}/${t}`),
    });
    process.stderr.write('\n');
    console.log(formatFuzzReport(report));
    process.exitCode = report.stats.failures.length === 0 ? 0 : 1;
  }
}
