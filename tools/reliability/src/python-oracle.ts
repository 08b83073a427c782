/**
 * The Python package's reader (python/llmcp) as a differential oracle on
 * fuzz cases: each case of the structure-aware fuzzer (fuzz-cases.ts) is
 * decoded by `@llmcp/format` here and by `llmcp.decode` in a Python process
 * (python/tests/oracle.py, many cases per process), and the two must agree
 * on the verdict and, for a rejected file, on every field of
 * `formatErrorData` but the prose message — code, category, reason, offset,
 * field, record, element, `expected` and `found`; for an accepted file on the
 * checksum and step, with Python's re-encoding identical to the input.
 *
 * Cases go to Python in batches (a bundle file and a job listing each case's
 * bytes), at most `jobs` processes at a time, each with a deadline; a
 * disagreement is saved as a reproduction file (repro/<class>-<seed>-<index>).
 *
 * Run: `node --conditions=@llmcp/source --import tsx tools/reliability/src/python-oracle.ts [--cases N] [--seed S] [--jobs J]`
 * (`pnpm soak --only python` runs it as a part of the campaign).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeCheckpoint, isFormatError } from '@llmcp/format';
import { formatErrorData, type InspectionError } from '@llmcp/format/inspect';
import { createCaseGenerator, type FuzzCase } from './fuzz-cases.ts';
import { DEFAULT_REPRO_DIR } from './fuzz-llmcp.ts';
import { saveRepro } from './fuzz-stats.ts';
import { startChild } from './proc.ts';
import { REPO_ROOT } from './shim.ts';

/** The interpreter the oracle runs under: `$LLMCP_PYTHON`, else Debian's `/usr/bin/python3`. */
export const PYTHON: string = process.env.LLMCP_PYTHON ?? '/usr/bin/python3';

/** The Python side: decodes every entry of a job and writes the outcomes. */
export const ORACLE_SCRIPT: string = path.join(REPO_ROOT, 'python', 'tests', 'oracle.py');

/**
 * Why the Python oracle cannot run here, or null.
 *
 * @param python - the interpreter (default {@link PYTHON}).
 * @returns a sentence naming what is missing, or null.
 */
export function pythonProblem(python: string = PYTHON): string | null {
  if (!existsSync(python)) return `${python} not found (set LLMCP_PYTHON to another interpreter)`;
  const r = spawnSync(python, ['-c', 'import sys; assert sys.version_info >= (3, 8)'], { encoding: 'utf8' });
  return r.status === 0 ? null : `${python} is not a usable Python >= 3.8 (${(r.stderr || r.error?.message || '').trim()})`;
}

/** The error fields both readers must agree on: all of `formatErrorData` but the prose `message`. */
export type OracleError = Omit<InspectionError, 'message'>;

/** What `@llmcp/format` makes of a file. */
export type OracleOutcome = { readonly ok: true; readonly checksum: string; readonly step: string } | { readonly ok: false; readonly error: OracleError };

/** What the Python package makes of a file (python/tests/oracle.py `outcome`). */
export type PythonOutcome = (
  | { readonly ok: true; readonly reencodeIdentical: boolean; readonly checksum: string; readonly step: string }
  | { readonly ok: false; readonly error: OracleError }
) & { readonly id: string };

/**
 * Decodes `bytes` with `@llmcp/format`.
 *
 * @param bytes - a whole file.
 * @returns the verdict with the checksum and step, or the error's data without its message.
 * @throws whatever is not a FormatError (a bug of the decoder).
 */
export function tsOutcome(bytes: Uint8Array): OracleOutcome {
  try {
    const c = decodeCheckpoint(bytes);
    return { ok: true, checksum: c.layout.checksumLabel, step: String(c.selectedStep) };
  } catch (e) {
    if (!isFormatError(e)) throw e;
    const { message: _message, ...error } = formatErrorData(e);
    return { ok: false, error };
  }
}

const canonical = (error: OracleError): string => JSON.stringify(error, Object.keys(error).sort());

/**
 * Whether both readers agree: the same error data, or both accept with the same checksum and step and Python re-encodes the same bytes.
 *
 * @param ts - `@llmcp/format`'s outcome.
 * @param py - the Python package's outcome.
 * @returns true when they agree.
 */
export function sameOutcome(ts: OracleOutcome, py: PythonOutcome): boolean {
  if (!ts.ok || !py.ok) return !ts.ok && !py.ok && canonical(ts.error) === canonical(py.error);
  return py.reencodeIdentical && py.checksum === ts.checksum && py.step === ts.step;
}

/**
 * Writes a job for python/tests/oracle.py: the files one after another in `bundle.bin`, and `job.json` listing each one's id, offset and length.
 *
 * @param dir - a directory to write into.
 * @param files - the files, with ids.
 * @param extra - more fields for job.json (read by the Python side that knows them).
 * @returns the path of job.json.
 */
export function writeOracleJob(dir: string, files: readonly { readonly id: string; readonly bytes: Uint8Array }[], extra: Record<string, unknown> = {}): string {
  let offset = 0;
  const entries = files.map((f) => {
    const at = { id: f.id, offset, length: f.bytes.length };
    offset += f.bytes.length;
    return at;
  });
  const bundle = new Uint8Array(offset);
  files.forEach((f, i) => bundle.set(f.bytes, (entries[i] as { offset: number }).offset));
  const bundlePath = path.join(dir, 'bundle.bin');
  writeFileSync(bundlePath, bundle);
  const jobPath = path.join(dir, 'job.json');
  writeFileSync(jobPath, JSON.stringify({ ...extra, bundle: bundlePath, entries }));
  return jobPath;
}

/** Options of {@link runPythonOracle}. */
export interface PythonOracleOptions {
  /** Fuzz cases to compare (indices `from` … `from + cases - 1`). */
  readonly cases: number;
  /** Campaign seed (default 0x11c35, the fuzzer's). */
  readonly seed?: bigint;
  /** First case index (default 0). */
  readonly from?: number;
  /** Cases per Python process (default 2500). */
  readonly batch?: number;
  /** Python processes at a time (default 1). */
  readonly jobs?: number;
  /** Random valid variants per corpus seed (default 4, the fuzzer's). */
  readonly variantsPerSeed?: number;
  /** The interpreter (default {@link PYTHON}). */
  readonly python?: string;
  readonly reproDir?: string;
  /** Called with the number of cases compared so far. */
  readonly onProgress?: (done: number, total: number) => void;
}

/** One case the readers disagree on. */
export interface OracleMismatch {
  readonly index: number;
  readonly cls: string;
  readonly detail: string;
  readonly ts: string;
  readonly python: string;
  readonly repro: string;
}

/** The result of {@link runPythonOracle}. */
export interface PythonOracleReport {
  readonly cases: number;
  readonly agreed: number;
  /** `@llmcp/format`'s verdict (`valid` or the code) → cases. */
  readonly byOutcome: Readonly<Record<string, number>>;
  /** Rejected cases whose error has a `found` text (compared like the rest of the error). */
  readonly withFound: number;
  readonly mismatches: readonly OracleMismatch[];
  /** Python processes that failed (crash, deadline, no output) and cases @llmcp/format threw an untyped error on: not compared. */
  readonly failures: readonly string[];
  readonly seconds: number;
  readonly python: string;
}

interface Batch {
  readonly cases: readonly FuzzCase[];
  readonly ts: readonly OracleOutcome[];
}

/**
 * Runs the fuzz cases through both readers and compares them (see the module comment).
 *
 * @param options - how many cases, seed, batch size, parallel processes.
 * @returns the counts and every disagreement.
 */
export async function runPythonOracle(options: PythonOracleOptions): Promise<PythonOracleReport> {
  const started = performance.now();
  const seed = options.seed ?? 0x11c35n;
  const from = options.from ?? 0;
  const batchSize = Math.max(1, options.batch ?? 2500);
  const jobs = Math.max(1, options.jobs ?? 1);
  const python = options.python ?? PYTHON;
  const reproDir = options.reproDir ?? DEFAULT_REPRO_DIR;
  const generator = createCaseGenerator({ seed, variantsPerSeed: options.variantsPerSeed ?? 4 });
  const byOutcome: Record<string, number> = {};
  const mismatches: OracleMismatch[] = [];
  const failures: string[] = [];
  let agreed = 0;
  let withFound = 0;
  let done = 0;
  let next = from;
  const end = from + options.cases;
  const work = mkdtempSync(path.join(os.tmpdir(), 'llmcp-python-oracle-'));
  let version = '?';

  const makeBatch = (): Batch | null => {
    if (next >= end) return null;
    const cases: FuzzCase[] = [];
    const ts: OracleOutcome[] = [];
    for (; next < end && cases.length < batchSize; next += 1) {
      const c = generator.generate(next);
      try {
        ts.push(tsOutcome(c.bytes));
        cases.push(c);
      } catch (e) {
        // The fuzzer reports untyped errors of @llmcp/format; here the case cannot be compared.
        failures.push(`case ${c.index}: @llmcp/format threw an untyped error (${String(e).slice(0, 300)}), not compared`);
        done += 1;
      }
    }
    return { cases, ts };
  };

  const runBatch = async (b: Batch): Promise<void> => {
    if (b.cases.length === 0) return;
    const own = mkdtempSync(path.join(work, 'batch-'));
    const jobPath = writeOracleJob(own, b.cases.map((c) => ({ id: String(c.index), bytes: c.bytes })));
    const outPath = path.join(own, 'outcomes.json');
    // About 2 ms a case on an idle core; the deadline leaves room for a loaded machine.
    const child = startChild(python, [ORACLE_SCRIPT, '--job', jobPath, '--out', outPath], {
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
      timeoutMs: 120_000 + 200 * b.cases.length,
    });
    const exit = await child.exited;
    const range = `cases ${(b.cases[0] as FuzzCase).index}–${(b.cases.at(-1) as FuzzCase).index}`;
    if (exit.code !== 0 || !existsSync(outPath)) {
      failures.push(`${range}: ${exit.timedOut ? 'the Python process passed its deadline' : `python exited with ${exit.code ?? exit.signal}`}; ${exit.stderr.trim().split('\n').slice(-4).join(' / ').slice(0, 600)}`);
    } else {
      const result = JSON.parse(readFileSync(outPath, 'utf8')) as { python: string; outcomes: PythonOutcome[] };
      version = result.python;
      b.cases.forEach((c, i) => {
        const ts = b.ts[i] as OracleOutcome;
        const py = result.outcomes[i];
        const verdict = ts.ok ? 'valid' : ts.error.code;
        byOutcome[verdict] = (byOutcome[verdict] ?? 0) + 1;
        if (!ts.ok && ts.error.found !== undefined) withFound += 1;
        if (py !== undefined && py.id === String(c.index) && sameOutcome(ts, py)) agreed += 1;
        else {
          const problems = [`@llmcp/format ${JSON.stringify(ts)}`, `python ${JSON.stringify(py ?? null)}`];
          mismatches.push({ index: c.index, cls: c.cls, detail: c.detail, ts: problems[0] as string, python: problems[1] as string, repro: saveRepro(reproDir, seed, c, problems) });
        }
      });
    }
    done += b.cases.length;
    options.onProgress?.(done, options.cases);
    rmSync(own, { recursive: true, force: true });
  };

  try {
    const lanes = Array.from({ length: jobs }, async () => {
      for (let b = makeBatch(); b !== null; b = makeBatch()) await runBatch(b);
    });
    await Promise.all(lanes);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return { cases: options.cases, agreed, byOutcome, withFound, mismatches, failures, seconds: (performance.now() - started) / 1000, python: `${python} (Python ${version})` };
}

/**
 * The figures as text: cases compared, agreements, verdicts by count, the first disagreements.
 *
 * @param r - a result of {@link runPythonOracle}.
 * @returns printable lines.
 */
export function formatPythonOracleReport(r: PythonOracleReport): string {
  const lines = [
    `python oracle: ${r.cases.toLocaleString('en-US')} fuzz cases through ${r.python} in ${r.seconds.toFixed(1)} s: ${r.agreed.toLocaleString('en-US')} agree with @llmcp/format (verdict, code, every error field, found text in ${r.withFound.toLocaleString('en-US')}), ${r.mismatches.length} differ, ${r.failures.length} failures (batches or cases not compared)`,
    `  verdicts: ${Object.entries(r.byOutcome)
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
  ];
  for (const m of r.mismatches.slice(0, 10)) lines.push(`  DIFFER #${m.index} ${m.cls} (${m.detail}): ${m.ts} / ${m.python} → ${m.repro}`);
  for (const f of r.failures.slice(0, 10)) lines.push(`  FAILED ${f}`);
  return lines.join('\n');
}

function flag(argv: readonly string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const problem = pythonProblem();
  if (problem !== null) {
    console.log(`python oracle: skipped (${problem})`);
  } else {
    const report = await runPythonOracle({
      cases: Number(flag(argv, '--cases') ?? 5000),
      seed: BigInt(flag(argv, '--seed') ?? 0x11c35),
      jobs: Number(flag(argv, '--jobs') ?? 1),
      onProgress: (d, t) => process.stderr.write(`\r${d}/${t}`),
    });
    process.stderr.write('\n');
    console.log(formatPythonOracleReport(report));
    process.exitCode = report.mismatches.length === 0 && report.failures.length === 0 ? 0 : 1;
  }
}
