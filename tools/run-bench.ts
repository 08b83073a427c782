/**
 * `pnpm bench [filter…]`: runs every benchmark script of the repository and
 * prints their numbers, then a summary.
 *
 * Discovers `packages/<pkg>/bench/*.bench.ts`, `apps/<app>/bench/*.bench.ts`
 * and root `bench/*.ts`. Each script is a standalone program that prints its
 * own results; it runs in its own child process (`node --import tsx`, cwd =
 * its package, the `@llmcp/source` condition on so workspace imports use
 * sources), one after another, so timings do not compete and the peak RSS
 * reported per script is that script's own. With filters, only scripts
 * whose repository-relative path contains one of them run
 * (`pnpm bench format`, `pnpm bench model/bench/math`). Everything after a
 * `--` is passed on to every selected script as it is, options with values
 * included (`pnpm bench format -- --large`, `pnpm bench native-gemm --
 * --configs xl --paths avx2`); before it, arguments that start with `--` are
 * passed on and the others are filters. A filter that matches no script is
 * an error (a typo, or an option's value written before `--`).
 *
 * Benchmarks are not tests: nothing here asserts speed. Exit status is 1 if
 * a script fails.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Every benchmark script, repository-relative, sorted. */
export function discoverBenchmarks(repositoryRoot: string = root): string[] {
  const found: string[] = [];
  for (const group of ['packages', 'apps']) {
    const base = path.join(repositoryRoot, group);
    if (!existsSync(base)) continue;
    for (const pkg of readdirSync(base)) {
      const dir = path.join(base, pkg, 'bench');
      if (!existsSync(dir)) continue;
      for (const f of readdirSync(dir)) if (f.endsWith('.bench.ts')) found.push(path.join(group, pkg, 'bench', f));
    }
  }
  const rootBench = path.join(repositoryRoot, 'bench');
  if (existsSync(rootBench)) for (const f of readdirSync(rootBench)) if (f.endsWith('.ts')) found.push(path.join('bench', f));
  return found.sort();
}

/**
 * Splits the command line into filters and the arguments every script gets.
 * @param argv - the arguments after the script's own path.
 * @returns the filters, and the scripts' arguments in their order.
 */
export function parseBenchArgs(argv: readonly string[]): { filters: string[]; flags: string[] } {
  const cut = argv.indexOf('--');
  const before = cut < 0 ? argv : argv.slice(0, cut);
  const after = cut < 0 ? [] : argv.slice(cut + 1);
  return { filters: before.filter((a) => !a.startsWith('--')), flags: [...before.filter((a) => a.startsWith('--')), ...after] };
}

/** A filter selects the scripts whose repository-relative path contains it. */
const matches = (script: string, filter: string): boolean => script.includes(filter);

/**
 * The filters no script matches. Each is an error: a typo, or the value of an option written before `--`
 * (`pnpm bench native-gemm --configs xl` gives the filter `xl` and a bare `--configs`), which would otherwise run
 * the wrong thing without a word.
 */
export function unmatchedFilters(scripts: readonly string[], filters: readonly string[]): string[] {
  return filters.filter((f) => !scripts.some((s) => matches(s, f)));
}

/** Scripts matching any filter (substring of the relative path); all when no filter. */
export function selectBenchmarks(scripts: readonly string[], filters: readonly string[]): string[] {
  if (filters.length === 0) return [...scripts];
  return scripts.filter((s) => filters.some((f) => matches(s, f)));
}

interface Outcome {
  script: string;
  status: number | null;
  seconds: number;
  peakRssMb: number | null;
}

// Preloaded into each child: records its peak RSS (getrusage maxRSS) when it exits.
const RSS_REPORTER = `data:text/javascript,${encodeURIComponent(
  "import{writeFileSync}from'node:fs';const f=process.env.LLMCP_BENCH_RSS_FILE;process.on('exit',()=>{if(f)try{writeFileSync(f,String(process.resourceUsage().maxRSS))}catch{}});",
)}`;

function run(script: string, scratch: string, flags: readonly string[] = []): Outcome {
  const abs = path.join(root, script);
  const cwd = path.dirname(path.dirname(abs));
  const rssFile = path.join(scratch, `${script.replace(/[^a-z0-9]+/gi, '_')}.rss`);
  console.log(`\n▶ ${script}`);
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['--conditions=@llmcp/source', '--import', 'tsx', '--import', RSS_REPORTER, abs, ...flags], {
    cwd,
    stdio: 'inherit',
    env: { ...process.env, LLMCP_BENCH_RSS_FILE: rssFile },
  });
  const seconds = (performance.now() - t0) / 1000;
  const peakRssMb = existsSync(rssFile) ? Number(readFileSync(rssFile, 'utf8')) / 1024 : null;
  return { script, status: r.status, seconds, peakRssMb };
}

const isMain = process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const { filters, flags } = parseBenchArgs(process.argv.slice(2));
  const all = discoverBenchmarks();
  if (all.length === 0) {
    console.log('run-bench: no benchmark scripts found');
    process.exit(0);
  }
  const unmatched = unmatchedFilters(all, filters);
  if (unmatched.length > 0) {
    console.error(
      `run-bench: no benchmark matches ${unmatched.join(', ')} (available: ${all.join(', ')}). ` +
        'Options that take a value go after `--`, e.g. pnpm bench native-gemm -- --configs xl',
    );
    process.exit(1);
  }
  const selected = selectBenchmarks(all, filters);
  const scratch = mkdtempSync(path.join(tmpdir(), 'llmcp-bench-'));
  const outcomes: Outcome[] = [];
  try {
    for (const script of selected) outcomes.push(run(script, scratch, flags));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  console.log('\nbenchmark summary (peak RSS = the script process itself; scripts that fork report their children in their own output)');
  for (const o of outcomes) {
    const status = o.status === 0 ? 'ok    ' : `FAILED (${o.status ?? 'signal'})`;
    console.log(`  ${status}  ${o.script.padEnd(48)} ${o.seconds.toFixed(1).padStart(7)} s  ${o.peakRssMb === null ? '     ?' : o.peakRssMb.toFixed(0).padStart(6)} MB peak RSS`);
  }
  const failed = outcomes.filter((o) => o.status !== 0).length;
  console.log(`${outcomes.length - failed} ran, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}
