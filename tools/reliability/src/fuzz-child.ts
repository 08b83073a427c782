/**
 * The fuzzer's worker process (started by fuzz-llmcp.ts, which watches it):
 * runs cases [from, to) and the listed sparse-file cases, feeding each to
 * `decodeCheckpoint` (in memory), `loadCheckpoint` (streaming, from a file)
 * and, every few cases, `inspectCheckpoint`, and checks the outcome: a
 * FormatError with a known code, the same one from every reader, or a
 * decoded state that re-encodes to the very same bytes.
 *
 * Before each case it writes the case number to a progress file, so when a
 * case crashes the process (native abort) or hangs, the watcher knows which
 * one it was and rebuilds it from its number. Statistics are printed as JSON
 * lines every `reportEvery` cases and at the end.
 */
import { closeSync, ftruncateSync, mkdirSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { decodeCheckpoint, encodeCheckpoint, FORMAT_ERROR_CODES, isFormatError } from '@llmcp/format';
import { inspectCheckpoint } from '@llmcp/format/inspect';
import { loadCheckpoint } from '@llmcp/format/node';
import { createCaseGenerator, type FuzzCase } from './fuzz-cases.ts';
import { emptyStats, recordOutcome, saveRepro, type FuzzStats } from './fuzz-stats.ts';

/** Arguments (JSON in argv[2]). */
export interface FuzzChildArgs {
  readonly seed: string;
  readonly from: number;
  readonly to: number;
  readonly sparse: readonly number[];
  readonly workDir: string;
  readonly progressFile: string;
  readonly reproDir: string;
  readonly slowMs: number;
  readonly loadEvery: number;
  readonly inspectEvery: number;
  readonly reportEvery: number;
  readonly variantsPerSeed: number;
}

const KNOWN_CODES: ReadonlySet<string> = new Set(Object.values(FORMAT_ERROR_CODES));

const args = JSON.parse(process.argv[2] ?? '{}') as FuzzChildArgs;
const generator = createCaseGenerator({ seed: BigInt(args.seed), variantsPerSeed: args.variantsPerSeed });
mkdirSync(args.workDir, { recursive: true });
const progressFd = openSync(args.progressFile, 'w');
const progress = Buffer.alloc(16);
const print = (value: unknown): void => {
  writeSync(1, `${JSON.stringify(value)}\n`);
};

function markStarted(kind: 0 | 1, index: number): void {
  progress.writeBigInt64LE(BigInt(index), 0);
  progress.writeInt32LE(kind, 8);
  progress.writeInt32LE(1, 12);
  writeSync(progressFd, progress, 0, 16, 0);
}

type Outcome = { readonly kind: 'valid' } | { readonly kind: 'error'; readonly code: string } | { readonly kind: 'untyped'; readonly message: string };

function classify(e: unknown): Outcome {
  if (isFormatError(e) && KNOWN_CODES.has(e.code)) return { kind: 'error', code: e.code };
  const err = e as Error;
  return { kind: 'untyped', message: `${err?.name ?? typeof e}: ${err?.message ?? String(e)}`.slice(0, 500) };
}

const label = (o: Outcome): string => (o.kind === 'valid' ? 'valid' : o.kind === 'error' ? o.code : 'UNTYPED');
const casePath = path.join(args.workDir, 'case.llmcp');
const stats: FuzzStats = emptyStats();

async function runCase(c: FuzzCase): Promise<void> {
  const problems: string[] = [];
  const started = performance.now();
  let outcome: Outcome;
  let decodeMs = 0;
  if (c.sparseSize === undefined) {
    try {
      const decoded = decodeCheckpoint(c.bytes);
      const again = encodeCheckpoint(decoded);
      if (Buffer.compare(Buffer.from(again.buffer, again.byteOffset, again.byteLength), Buffer.from(c.bytes.buffer, c.bytes.byteOffset, c.bytes.byteLength)) !== 0) {
        problems.push('decoded, but the re-encoding differs from the input');
      }
      outcome = { kind: 'valid' };
    } catch (e) {
      outcome = classify(e);
    }
    decodeMs = performance.now() - started;
    if (outcome.kind === 'untyped') problems.push(`decodeCheckpoint threw an untyped error: ${outcome.message}`);
    if (args.inspectEvery > 0 && c.index % args.inspectEvery === 0) {
      try {
        const report = inspectCheckpoint(c.bytes);
        const verdict = report.verdict.valid ? 'valid' : report.verdict.error.code;
        if (verdict !== label(outcome)) problems.push(`inspectCheckpoint says ${verdict}, decodeCheckpoint ${label(outcome)}`);
      } catch (e) {
        problems.push(`inspectCheckpoint threw: ${classify(e).kind === 'untyped' ? (classify(e) as { message: string }).message : label(classify(e))}`);
      }
    }
  } else {
    outcome = { kind: 'valid' };
  }
  let loadMs = 0;
  const doLoad = c.sparseSize !== undefined || (args.loadEvery > 0 && c.index % args.loadEvery === 0);
  if (doLoad) {
    const fd = openSync(casePath, 'w');
    try {
      writeSync(fd, c.bytes);
      if (c.sparseSize !== undefined) ftruncateSync(fd, c.sparseSize);
    } finally {
      closeSync(fd);
    }
    const t = performance.now();
    let loaded: Outcome;
    try {
      await loadCheckpoint(casePath);
      loaded = { kind: 'valid' };
    } catch (e) {
      loaded = classify(e);
    }
    loadMs = performance.now() - t;
    if (c.sparseSize !== undefined) {
      outcome = loaded;
      rmSync(casePath, { force: true });
    }
    if (loaded.kind === 'untyped') problems.push(`loadCheckpoint threw an untyped error: ${loaded.message}`);
    else if (label(loaded) !== label(outcome)) problems.push(`loadCheckpoint gives ${label(loaded)}, decodeCheckpoint ${label(outcome)}`);
  }
  const ms = Math.max(decodeMs, loadMs);
  if (ms > args.slowMs) problems.push(`took ${ms.toFixed(0)} ms (limit ${args.slowMs} ms)`);
  const rss = process.memoryUsage.rss();
  recordOutcome(stats, { cls: c.cls, outcome: label(outcome), ms, rss, index: c.index, sparse: c.sparseSize !== undefined });
  if (problems.length > 0) {
    const file = saveRepro(args.reproDir, BigInt(args.seed), c, problems);
    stats.failures.push({ index: c.index, cls: c.cls, sparse: c.sparseSize !== undefined, kind: problems[0]?.startsWith('took') ? 'slow' : 'wrong-outcome', detail: c.detail, problems, repro: file });
  }
}

for (const k of args.sparse) {
  markStarted(1, k);
  await runCase(generator.sparse(k));
  print({ type: 'stats', next: args.from, sparseDone: k, stats });
  stats.failures.length = 0;
  resetCounts(stats);
}
for (let i = args.from; i < args.to; i += 1) {
  markStarted(0, i);
  await runCase(generator.generate(i));
  if ((i + 1 - args.from) % args.reportEvery === 0 || i + 1 === args.to) {
    print({ type: 'stats', next: i + 1, stats });
    resetCounts(stats);
  }
}
progress.writeInt32LE(0, 12);
writeSync(progressFd, progress, 0, 16, 0);
closeSync(progressFd);
rmSync(casePath, { force: true });
writeFileSync(path.join(args.workDir, 'done'), '');
print({ type: 'done', maxRssBytes: process.resourceUsage().maxRSS * 1024 });

/** Each stats line carries only what happened since the previous one (the watcher sums them). */
function resetCounts(s: FuzzStats): void {
  const fresh = emptyStats();
  Object.assign(s, fresh);
}
