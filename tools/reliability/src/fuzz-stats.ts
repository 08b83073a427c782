/**
 * Fuzzer figures (cases per class and outcome, time and memory maxima,
 * failures) and reproduction files.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { FuzzCase } from './fuzz-cases.ts';

/** A case that broke a rule of the campaign. */
export interface FuzzFailure {
  readonly index: number;
  readonly cls: string;
  readonly sparse: boolean;
  /** `wrong-outcome` (untyped error, re-encode differs, readers disagree), `slow`, `crash` (the process died), `hang` (watchdog). */
  readonly kind: 'wrong-outcome' | 'slow' | 'crash' | 'hang';
  readonly detail: string;
  readonly problems: readonly string[];
  /** Reproduction file (.llmcp + .json recipe), if saved. */
  readonly repro: string | null;
}

/** Figures of (part of) a campaign. */
export interface FuzzStats {
  cases: number;
  /** class → outcome (`valid` or a FORMAT_* code, `UNTYPED`, `CRASH`, `HANG`) → count. */
  byClass: Record<string, Record<string, number>>;
  /** class → slowest case. */
  maxMs: Record<string, { ms: number; index: number }>;
  /** Largest resident set seen after a case (bytes), and the case. */
  maxRss: { bytes: number; index: number; cls: string };
  failures: FuzzFailure[];
}

/** Fresh, empty figures. */
export function emptyStats(): FuzzStats {
  return { cases: 0, byClass: {}, maxMs: {}, maxRss: { bytes: 0, index: -1, cls: '' }, failures: [] };
}

/** Adds one case. */
export function recordOutcome(s: FuzzStats, r: { cls: string; outcome: string; ms: number; rss: number; index: number; sparse: boolean }): void {
  s.cases += 1;
  const row = (s.byClass[r.cls] ??= {});
  row[r.outcome] = (row[r.outcome] ?? 0) + 1;
  const slowest = s.maxMs[r.cls];
  if (slowest === undefined || r.ms > slowest.ms) s.maxMs[r.cls] = { ms: r.ms, index: r.index };
  if (r.rss > s.maxRss.bytes) s.maxRss = { bytes: r.rss, index: r.index, cls: r.cls };
}

/** Adds `b` into `a`. */
export function mergeStats(a: FuzzStats, b: FuzzStats): void {
  a.cases += b.cases;
  for (const [cls, row] of Object.entries(b.byClass)) {
    const into = (a.byClass[cls] ??= {});
    for (const [o, n] of Object.entries(row)) into[o] = (into[o] ?? 0) + n;
  }
  for (const [cls, m] of Object.entries(b.maxMs)) {
    const cur = a.maxMs[cls];
    if (cur === undefined || m.ms > cur.ms) a.maxMs[cls] = m;
  }
  if (b.maxRss.bytes > a.maxRss.bytes) a.maxRss = b.maxRss;
  a.failures.push(...b.failures);
}

/**
 * Saves a failing case: `<dir>/<class>-<seed>-<index>.llmcp` (for a sparse
 * case, only its first bytes) and a `.json` recipe beside it (seed, index,
 * class, what was changed, the problems, and `sparseSize`).
 *
 * @returns the `.llmcp` path.
 */
export function saveRepro(dir: string, seed: bigint, c: FuzzCase, problems: readonly string[]): string {
  mkdirSync(dir, { recursive: true });
  const base = path.join(dir, `${c.cls}-${seed}-${c.index}`);
  writeFileSync(`${base}.llmcp`, c.bytes);
  writeFileSync(
    `${base}.json`,
    `${JSON.stringify({ format: 'llmcp-fuzz-repro/1', seed: String(seed), index: c.index, cls: c.cls, detail: c.detail, problems, ...(c.sparseSize === undefined ? {} : { sparseSize: c.sparseSize }) }, null, 2)}\n`,
  );
  return `${base}.llmcp`;
}

/**
 * The figures as text: one line per class with its outcomes, time maxima,
 * memory, failures.
 */
export function formatFuzzStats(s: FuzzStats, extra: { seconds: number; maxRssBytes: number }): string {
  const lines: string[] = [];
  lines.push(`fuzz: ${s.cases.toLocaleString('en-US')} cases in ${extra.seconds.toFixed(1)} s`);
  for (const cls of Object.keys(s.byClass).sort()) {
    const row = s.byClass[cls] as Record<string, number>;
    const total = Object.values(row).reduce((x, y) => x + y, 0);
    const outcomes = Object.entries(row)
      .sort((x, y) => y[1] - x[1])
      .map(([o, n]) => `${o.replace(/^FORMAT_/, '')} ${n}`)
      .join(', ');
    const slow = s.maxMs[cls];
    lines.push(`  ${cls.padEnd(24)} ${String(total).padStart(9)}  max ${slow === undefined ? '-' : `${slow.ms.toFixed(1)} ms (#${slow.index})`}  ${outcomes}`);
  }
  lines.push(`  max resident memory: ${(extra.maxRssBytes / 2 ** 20).toFixed(0)} MiB (after case #${s.maxRss.index}, ${s.maxRss.cls})`);
  const count = (k: FuzzFailure['kind']): number => s.failures.filter((f) => f.kind === k).length;
  lines.push(`  failures: ${s.failures.length} (untyped/wrong outcome ${count('wrong-outcome')}, crashes ${count('crash')}, hangs ${count('hang')}, slow ${count('slow')})`);
  for (const f of s.failures.slice(0, 20)) lines.push(`    #${f.index} ${f.cls} [${f.kind}] ${f.problems.join(' | ')} — ${f.detail}${f.repro === null ? '' : ` → ${f.repro}`}`);
  if (s.failures.length > 20) lines.push(`    … ${s.failures.length - 20} more`);
  return lines.join('\n');
}
