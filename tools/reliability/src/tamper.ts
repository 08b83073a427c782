/**
 * Run-directory tampering: from a run stopped by SIGTERM mid-way, every file
 * and every slot is deleted, truncated, corrupted, replaced (by another
 * slot's file, a symlink, a dangling symlink, a directory), and stale
 * `.tmp-*`/`.trash-*` entries are planted; then `llmcp verify`, `status` and
 * `resume` run on the copy. Each must end in a typed error or a correct
 * resume (the final bytes of an uninterrupted run) — never an untyped error,
 * a hang, or a silent restart from step 0; a refused resume changes nothing.
 */
import { cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { SplitMix64 } from '@llmcp/format';
import { classifyCli, copyRun, describeExit, finalDifference, harnessConfig, llmcpRun, referenceRun, REPRO_DIR, runEvents, scratch, snapshotTree, trainAndStop, treeDifference, sampleCases } from './run-harness.ts';

/** One tampering. */
export interface TamperCase {
  readonly name: string;
  readonly apply: (runDir: string) => void;
}

function filesOf(runDir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string): void => {
    for (const name of readdirSync(path.join(runDir, rel)).sort()) {
      const r = path.join(rel, name);
      if (lstatSync(path.join(runDir, r)).isDirectory()) walk(r);
      else if (name !== 'run.lock') out.push(r);
    }
  };
  walk('');
  return out;
}

/**
 * Every tampering of a template run (generated from its tree).
 *
 * @param template - a stopped run.
 * @param seed - for positions and lengths.
 * @returns the cases.
 */
export function tamperCases(template: string, seed: bigint): TamperCase[] {
  const rng = new SplitMix64(seed);
  const cases: TamperCase[] = [];
  const files = filesOf(template);
  const slots = readdirSync(path.join(template, 'checkpoints')).filter((n) => !n.startsWith('.'));
  for (const rel of files) {
    const size = lstatSync(path.join(template, rel)).size;
    const cut = size === 0 ? 0 : rng.nextBelow(size);
    const at = size === 0 ? 0 : rng.nextBelow(size);
    const bit = rng.nextBelow(8);
    cases.push({ name: `delete ${rel}`, apply: (d) => rmSync(path.join(d, rel)) });
    cases.push({ name: `truncate ${rel} to ${cut}`, apply: (d) => truncateSync(path.join(d, rel), cut) });
    cases.push({
      name: `flip bit ${bit} of byte ${at} of ${rel}`,
      apply: (d) => {
        const b = readFileSync(path.join(d, rel));
        if (b.length > 0) b[at] = (b[at] as number) ^ (1 << bit);
        writeFileSync(path.join(d, rel), b);
      },
    });
    cases.push({
      name: `${rel} → dangling symlink`,
      apply: (d) => {
        rmSync(path.join(d, rel));
        symlinkSync(path.join(d, 'no-such-file'), path.join(d, rel));
      },
    });
    cases.push({
      name: `${rel} → directory`,
      apply: (d) => {
        rmSync(path.join(d, rel));
        mkdirSync(path.join(d, rel));
      },
    });
    const other = files.find((f) => f !== rel && path.basename(f) === path.basename(rel));
    if (other !== undefined) {
      cases.push({ name: `${rel} replaced by ${other}`, apply: (d) => cpSync(path.join(d, other), path.join(d, rel)) });
      cases.push({
        name: `${rel} → symlink to ${other}`,
        apply: (d) => {
          rmSync(path.join(d, rel));
          symlinkSync(path.join(d, other), path.join(d, rel));
        },
      });
    }
  }
  for (const slot of slots) {
    const dir = path.join('checkpoints', slot);
    cases.push({ name: `delete slot ${slot}`, apply: (d) => rmSync(path.join(d, dir), { recursive: true }) });
    cases.push({
      name: `empty slot ${slot}`,
      apply: (d) => {
        rmSync(path.join(d, dir), { recursive: true });
        mkdirSync(path.join(d, dir));
      },
    });
    const other = slots.find((x) => x !== slot);
    if (other !== undefined) {
      cases.push({
        name: `slot ${slot} → symlink to ${other}`,
        apply: (d) => {
          rmSync(path.join(d, dir), { recursive: true });
          symlinkSync(path.join(d, 'checkpoints', other), path.join(d, dir));
        },
      });
    }
  }
  cases.push({ name: 'stale .tmp-latest with a complete copy of latest', apply: (d) => cpSync(path.join(d, 'checkpoints', 'latest'), path.join(d, 'checkpoints', '.tmp-latest-1-1'), { recursive: true }) });
  cases.push({ name: 'stale .trash-latest.backup with garbage', apply: (d) => (mkdirSync(path.join(d, 'checkpoints', '.trash-latest.backup-1-2')), writeFileSync(path.join(d, 'checkpoints', '.trash-latest.backup-1-2', 'state.llmcp'), 'garbage')) });
  cases.push({ name: 'stale .tmp- file (not a directory)', apply: (d) => writeFileSync(path.join(d, 'checkpoints', '.tmp-best-1-3'), 'x') });
  cases.push({ name: 'stale run.json temporary', apply: (d) => writeFileSync(path.join(d, '.run.json.tmp-1-0'), '{') });
  cases.push({ name: 'checkpoints → symlink to a copy', apply: (d) => (cpSync(path.join(d, 'checkpoints'), path.join(d, 'checkpoints-copy'), { recursive: true }), rmSync(path.join(d, 'checkpoints'), { recursive: true }), symlinkSync(path.join(d, 'checkpoints-copy'), path.join(d, 'checkpoints'))) });
  cases.push({ name: 'loss.jsonl with a garbage line appended', apply: (d) => writeFileSync(path.join(d, 'loss.jsonl'), `${readFileSync(path.join(d, 'loss.jsonl'), 'utf8')}{"step":`) });
  cases.push({ name: 'an empty run.lock', apply: (d) => writeFileSync(path.join(d, 'run.lock'), '') });
  return cases;
}

/** The outcome of one tampering. */
export interface TamperResult {
  readonly name: string;
  /** `<verify>/<status>/<resume>` outcome kinds and codes. */
  readonly outcome: string;
  readonly problem: string | null;
}

/** Figures of a tamper campaign. */
export interface TamperReport {
  readonly cases: number;
  readonly results: readonly TamperResult[];
  readonly failures: readonly TamperResult[];
  readonly seconds: number;
}

/** Options of {@link runTamperCampaign}. */
export interface TamperOptions {
  /** Run only this many cases, chosen with `seed` (default: all). */
  readonly sample?: number;
  readonly seed?: bigint;
  readonly onProgress?: (done: number, total: number) => void;
}

/**
 * Runs the tamper campaign.
 *
 * @param options - sample size and seed.
 * @returns the figures.
 */
export async function runTamperCampaign(options: TamperOptions = {}): Promise<TamperReport> {
  const started = performance.now();
  const config = harnessConfig();
  const reference = await referenceRun(config);
  const s = scratch('llmcp-tamper-');
  const results: TamperResult[] = [];
  try {
    const cfg = s.config('cfg.json', config);
    const template = path.join(s.dir, 'template');
    const stop = await trainAndStop(template, cfg, { nth: 3 });
    if (stop.code !== 130) throw new Error(`could not stop the template run: ${describeExit(stop)}`);
    const cases = sampleCases(tamperCases(template, options.seed ?? 0x7a3en), options.sample, options.seed ?? 0x7a3en);
    for (const [i, c] of cases.entries()) {
      options.onProgress?.(i, cases.length);
      const run = path.join(s.dir, `case-${i}`);
      copyRun(template, run);
      c.apply(run);
      const problems: string[] = [];
      const parts: string[] = [];
      for (const args of [['verify', run], ['status', run]]) {
        const o = classifyCli(await llmcpRun(args));
        parts.push(`${args[0]} ${o.kind}${o.code === null ? '' : ` ${o.code}`}`);
        if (o.kind === 'untyped' || o.kind === 'hang') problems.push(`${args[0]}: ${o.kind}: ${describeExit(o.exit)}`);
      }
      const hadHistory = existsSync(path.join(run, 'loss.jsonl')) || existsSync(path.join(run, 'checkpoints'));
      const restartsBefore = runEvents(run).filter((e) => e.event === 'restarted').length;
      const before = snapshotTree(run);
      const o = classifyCli(await llmcpRun(['resume', run, '--plain']));
      parts.push(`resume ${o.kind}${o.code === null ? '' : ` ${o.code}`}`);
      if (o.kind === 'untyped' || o.kind === 'hang') problems.push(`resume: ${o.kind}: ${describeExit(o.exit)}`);
      if (runEvents(run).filter((e) => e.event === 'restarted').length > restartsBefore && hadHistory) problems.push('resume restarted from step 0 although checkpoints or loss history existed');
      if (o.kind === 'ok') {
        const diff = finalDifference(reference, run);
        if (diff !== null) problems.push(`resumed, but the final files differ from an uninterrupted run: ${diff}`);
      } else if (o.kind === 'typed') {
        const diff = treeDifference(before, snapshotTree(run));
        if (diff !== null) problems.push(`the refused resume changed the run: ${diff}`);
      }
      if (problems.length > 0) {
        const keep = path.join(REPRO_DIR, `tamper-${i}`);
        rmSync(keep, { recursive: true, force: true });
        mkdirSync(REPRO_DIR, { recursive: true });
        copyRun(template, keep);
        c.apply(keep);
        problems.push(`tampered copy kept in ${keep}`);
      }
      results.push({ name: c.name, outcome: parts.join(', '), problem: problems.length === 0 ? null : problems.join(' | ') });
      rmSync(run, { recursive: true, force: true });
    }
  } finally {
    s.dispose();
  }
  return { cases: results.length, results, failures: results.filter((r) => r.problem !== null), seconds: (performance.now() - started) / 1000 };
}

/** The tamper campaign's figures as text. */
export function formatTamperReport(r: TamperReport): string {
  const lines = [`tampering: ${r.cases} cases, ${r.failures.length} failures; ${r.seconds.toFixed(0)} s`];
  const byResume = new Map<string, number>();
  for (const x of r.results) {
    const k = x.outcome.split(', ').find((p) => p.startsWith('resume')) ?? '?';
    byResume.set(k, (byResume.get(k) ?? 0) + 1);
  }
  for (const [k, n] of [...byResume].sort()) lines.push(`  ${k}: ${n}`);
  for (const x of r.failures) lines.push(`    ${x.name}: ${x.outcome} — FAILED: ${x.problem}`);
  return lines.join('\n');
}
