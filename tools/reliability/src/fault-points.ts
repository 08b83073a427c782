/**
 * Fault injection at every file-system call of one checkpoint publication.
 *
 * 1. Enumerate: an uninterrupted `llmcp train` runs under the shim's log mode
 *    (every call under `checkpoints/`); the fault points are every call the
 *    save worker made after the previous publication of `latest` up to the
 *    start of the save after the `publication`-th one (best saves in between,
 *    the cadence save's slots, the rename into latest, the step snapshot,
 *    retention). The save worker does all checkpoint I/O in order, so the
 *    calls repeat exactly in another run of the same config.
 * 2. Each point becomes a rule: the call's path with the pid replaced by `*`
 *    (other paths exact), its op, and its ordinal among the calls that rule
 *    would match.
 * 3. Inject, one run per point and fault: EIO everywhere; for writes also
 *    ENOSPC and a short write followed by ENOSPC (a disk filling up). The
 *    run must complete or stop with a clear typed error; afterwards the run
 *    must still hold a loadable checkpoint and `llmcp resume` must finish
 *    it to the bytes of an uninterrupted run.
 */
import path from 'node:path';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { classifyCli, describeExit, finalDifference, harnessConfig, llmcpRun, referenceRun, runEvents, scratch, sampleCases } from './run-harness.ts';
import { exactPath, readShimLog, type FaultAction, type FaultOp, type FaultRule, type ShimCall } from './shim.ts';

/** One call of the publication, as a rule target. */
export interface FaultPoint {
  readonly op: Exclude<FaultOp, 'any'>;
  readonly func: string;
  /** The call's paths relative to the run directory, for reports. */
  readonly label: string;
  /** Rule path pattern (run-relative placeholder `<run>` replaced when used). */
  readonly pattern: (runDir: string) => string;
  readonly nth: number;
}

/** The result of one injection. */
export interface FaultResult {
  readonly point: string;
  readonly fault: string;
  /** `completed`, or the typed error code the run stopped with. */
  readonly outcome: string;
  /** Whether the run still had a loadable checkpoint and resumed to identical bytes (or had completed identically). */
  readonly recovered: boolean;
  readonly problem: string | null;
}

/** Figures of a fault campaign. */
export interface FaultReport {
  readonly points: number;
  readonly injections: number;
  readonly results: readonly FaultResult[];
  readonly failures: readonly FaultResult[];
  readonly seconds: number;
}

function globToRegExp(glob: string): RegExp {
  return new RegExp(`^${glob.replace(/[.+^${}()|\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);
}

function ruleMatches(pattern: string, call: ShimCall): boolean {
  const test = (p: string): boolean => {
    if (p === '') return false;
    if (pattern.startsWith('^')) return p === pattern.slice(1);
    if (/[*?[]/.test(pattern)) return globToRegExp(pattern).test(p);
    return p.includes(pattern);
  };
  return test(call.path) || test(call.path2);
}

/**
 * Enumerates the fault points of the `publication`-th publication of `latest` in a fresh run.
 *
 * @param publication - which publication (3: the step-12 save, with a backup to rotate and one to discard).
 * @returns the points in call order.
 */
export async function enumerateFaultPoints(publication = 3): Promise<FaultPoint[]> {
  const s = scratch('llmcp-faults-log-');
  try {
    const run = path.join(s.dir, 'r');
    const log = path.join(s.dir, 'calls.log');
    const cfg = s.config('cfg.json', harnessConfig());
    const exit = await llmcpRun(['train', run, '--config', cfg, '--plain'], { rules: [{ op: 'any', path: `${run}/checkpoints`, action: 'log' }], log });
    if (exit.code !== 0) throw new Error(`the logged run failed: ${describeExit(exit)}`);
    const calls = readShimLog(log);
    const pid = calls[0]?.pid ?? 0;
    // Renames into latest; the points are everything the save worker did under checkpoints/ after the
    // previous one (and its directory fsync) up to the start of the save after this one: the best
    // saves in between, this save's slots, the rename into latest, the step snapshot and retention.
    const intoLatest = calls.flatMap((c, i) => (c.op === 'rename' && /\/\.tmp-latest-/.test(c.path) && c.path2.endsWith('/checkpoints/latest') ? [i] : []));
    const at = intoLatest[publication - 1];
    if (at === undefined) throw new Error(`the run published latest only ${intoLatest.length} times`);
    let from = (intoLatest[publication - 2] ?? -1) + 1;
    while (from < at && (calls[from] as ShimCall).op !== 'mkdir') from += 1;
    let to = at + 1;
    while (to < calls.length && !((calls[to] as ShimCall).op === 'mkdir' && /\/\.tmp-(latest|best)-/.test((calls[to] as ShimCall).path))) to += 1;
    to -= 1;
    const general = (p: string): string => p.split(`-${pid}-`).join('-*-');
    const points: FaultPoint[] = [];
    for (let i = from; i <= to; i += 1) {
      const c = calls[i] as ShimCall;
      const own = general(c.path);
      const rel = own.slice(run.length);
      const usesGlob = own !== c.path;
      const patternHere = usesGlob ? own : exactPath(c.path);
      const nth = calls.slice(0, i + 1).filter((x) => x.op === c.op && ruleMatches(patternHere, x)).length;
      points.push({
        op: c.op,
        func: c.func,
        label: `${c.op} ${rel}${c.path2 === '' ? '' : ` → ${c.path2.slice(run.length)}`}${nth > 1 ? ` #${nth}` : ''}${c.result < 0 ? ` (fails: errno ${c.errno})` : ''}`,
        pattern: (runDir) => (usesGlob ? `${runDir}${rel}` : exactPath(`${runDir}${rel}`)),
        nth,
      });
    }
    return points;
  } finally {
    s.dispose();
  }
}

/** The faults injected at a point. */
export function faultsFor(point: FaultPoint): { name: string; rules: (runDir: string) => FaultRule[] }[] {
  const rule = (action: FaultAction, nth = point.nth) => (runDir: string): FaultRule => ({ op: point.op, path: point.pattern(runDir), nth, action });
  const out = [{ name: 'EIO', rules: (d: string) => [rule('fail:EIO')(d)] }];
  if (point.op === 'write') {
    out.push({ name: 'ENOSPC', rules: (d: string) => [rule('fail:ENOSPC')(d)] });
    out.push({ name: 'short+ENOSPC', rules: (d: string) => [rule('short')(d), rule('fail:ENOSPC', point.nth + 1)(d)] });
  }
  return out;
}

/** Options of {@link runFaultCampaign}. */
export interface FaultOptions {
  /** Run only this many injections, chosen with `seed` (default: all). */
  readonly sample?: number;
  readonly seed?: bigint;
  readonly onProgress?: (done: number, total: number) => void;
}

/**
 * Injects every fault at every point (or a sample) and checks recovery.
 *
 * @param options - sample size.
 * @returns the figures.
 */
export async function runFaultCampaign(options: FaultOptions = {}): Promise<FaultReport> {
  const started = performance.now();
  const config = harnessConfig();
  const reference = await referenceRun(config);
  const points = await enumerateFaultPoints();
  const jobs = sampleCases(points.flatMap((point) => faultsFor(point).map((fault) => ({ point, fault }))), options.sample, options.seed ?? 0xfa17n);
  const results: FaultResult[] = [];
  const root = mkdtempSync(path.join(os.tmpdir(), 'llmcp-faults-'));
  const cfg = path.join(root, 'cfg.json');
  writeFileSync(cfg, JSON.stringify(config));
  try {
    for (const [i, { point, fault }] of jobs.entries()) {
      options.onProgress?.(i, jobs.length);
      const run = path.join(root, `run-${i}`);
      const injected = classifyCli(await llmcpRun(['train', run, '--config', cfg, '--plain'], { rules: fault.rules(run) }));
      let problem: string | null = null;
      const outcome = injected.kind === 'ok' ? 'completed' : (injected.code ?? injected.kind);
      if (injected.kind === 'untyped' || injected.kind === 'hang' || injected.kind === 'killed') problem = `${injected.kind}: ${describeExit(injected.exit)}`;
      else if (injected.kind === 'typed' && !/^TRAINER_/.test(injected.code ?? '')) problem = `not a trainer error: ${describeExit(injected.exit)}`;
      let recovered = false;
      if (problem === null) {
        if (injected.kind !== 'ok') {
          const status = await llmcpRun(['verify', run, '--json']);
          let resumeSlot: string | null = null;
          try {
            const doc = JSON.parse(status.stdout) as { resumeSlot?: string | null; run?: { resumeSlot?: string | null } };
            resumeSlot = doc.run?.resumeSlot ?? doc.resumeSlot ?? null;
          } catch {
            resumeSlot = null;
          }
          if (resumeSlot === null && runEvents(run).length > 0) problem = `no loadable checkpoint after the fault: ${describeExit(status)}`;
          const resumed = classifyCli(await llmcpRun(['resume', run, '--plain']));
          if (resumed.kind !== 'ok') problem ??= `resume after the fault failed: ${describeExit(resumed.exit)}`;
          if (runEvents(run).some((e) => e.event === 'restarted')) problem ??= 'the resume restarted from step 0';
        }
        const diff = problem === null ? finalDifference(reference, run) : null;
        if (diff !== null) problem = `final files differ from an uninterrupted run: ${diff}`;
        recovered = problem === null;
      }
      if (problem === null) rmSync(run, { recursive: true, force: true });
      results.push({ point: point.label, fault: fault.name, outcome, recovered, problem: problem === null ? null : `${problem} (run kept in ${run})` });
    }
  } finally {
    if (results.every((r) => r.problem === null)) rmSync(root, { recursive: true, force: true });
  }
  return { points: points.length, injections: results.length, results, failures: results.filter((r) => r.problem !== null), seconds: (performance.now() - started) / 1000 };
}

/** The fault campaign's figures as text: faults → outcome. */
export function formatFaultReport(r: FaultReport): string {
  const lines = [`faults: ${r.points} fault points of one latest publication, ${r.injections} injections, ${r.failures.length} failures; ${r.seconds.toFixed(0)} s`];
  const byOutcome = new Map<string, number>();
  for (const x of r.results) byOutcome.set(`${x.fault} → ${x.outcome}${x.recovered ? ', recovered' : ''}`, (byOutcome.get(`${x.fault} → ${x.outcome}${x.recovered ? ', recovered' : ''}`) ?? 0) + 1);
  for (const [k, n] of [...byOutcome].sort()) lines.push(`  ${k}: ${n}`);
  for (const x of r.results) lines.push(`    ${x.point} [${x.fault}]: ${x.outcome}${x.problem === null ? '' : ` — FAILED: ${x.problem}`}`);
  return lines.join('\n');
}
