/**
 * Tampering with signed runs: a run trained with `--sign-key`, extended by a
 * second process (a pivot of its step budget and a resume, so its chain has
 * init, train, pivot and resume links and pruned ancestors), and a second
 * signed run of another learning rate. On copies of the first, every file of
 * every slot and every lineage/ entry has bytes flipped and is truncated;
 * files are swapped between slots and with the other run; whole slots are
 * swapped with the other run's and within the run; parent links are forged
 * (pointing at another existing checkpoint) and removed, with the old
 * signature kept; manifests are replaced by unsigned ones consistent with the
 * files, re-signed with a foreign key, and deleted; lineage/ entries are
 * deleted. `llmcp verify <run> --trust-key <public.pem> --json` must fail
 * (exit 1) for each, naming the file or link; the untouched template must
 * verify with no problem at all (no false alarm).
 */
import { readdirSync, readFileSync, renameSync, rmSync, truncateSync, writeFileSync, mkdirSync, existsSync, cpSync } from 'node:fs';
import path from 'node:path';
import { SplitMix64 } from '@llmcp/format';
import { generateSigningKeyPair, parseManifest, signingKeyFromPem, type SigningKey } from '@llmcp/trainer';
import { forgeManifest } from '@llmcp/trainer/testing';
import { classifyCli, copyRun, describeExit, harnessConfig, llmcpRun, REPRO_DIR, scratch, type Scratch, sampleCases } from './run-harness.ts';
import type { TamperOptions } from './tamper.ts';

/** What a tampering changes, for the report. */
export type ProvenanceTamperKind =
  | 'byte-flip'
  | 'truncation'
  | 'swap-between-slots'
  | 'swap-between-runs'
  | 'slot-from-other-run'
  | 'slots-swapped'
  | 'forged-parent-link'
  | 'removed-parent-link'
  | 'unsigned-manifest'
  | 'foreign-key'
  | 'manifest-deleted'
  | 'lineage-entry-deleted';

/** One tampering: what it does, and the files or links a verification must name (one of them). */
export interface ProvenanceTamperCase {
  readonly kind: ProvenanceTamperKind;
  readonly name: string;
  readonly apply: (runDir: string) => void;
  /** Paths relative to the run; a problem line naming one of them (or the slot directory and the file's name) counts. */
  readonly names: readonly string[];
}

/** The keys and runs a campaign tampers with. */
export interface SignedTemplate {
  readonly template: string;
  readonly other: string;
  readonly publicKey: string;
  readonly privateKey: string;
  readonly foreign: SigningKey;
}

/**
 * Trains the two signed runs (in `s`).
 *
 * @param s - the scratch directory.
 * @returns the runs and keys.
 */
export async function signedTemplate(s: Scratch): Promise<SignedTemplate> {
  const pair = generateSigningKeyPair('ecdsa-p256');
  const privateKey = path.join(s.dir, 'key.pem');
  const publicKey = path.join(s.dir, 'key.pub.pem');
  writeFileSync(privateKey, pair.privatePem, { mode: 0o600 });
  writeFileSync(publicKey, pair.publicPem);
  const cfg = s.config('signed.json', harnessConfig());
  const otherCfg = s.config('other.json', harnessConfig({ schedule: { kind: 'constant', rate: 0.01 } }));
  const template = path.join(s.dir, 'template');
  const other = path.join(s.dir, 'other');
  for (const [args, what] of [
    [['train', template, '--config', cfg, '--steps', '14', '--sign-key', privateKey, '--plain'], 'train the template'],
    [['resume', template, '--steps', '24', '--sign-key', privateKey, '--plain'], 'extend the template'],
    [['train', other, '--config', otherCfg, '--sign-key', privateKey, '--plain'], 'train the other run'],
  ] as const) {
    const exit = await llmcpRun(args);
    if (exit.code !== 0) throw new Error(`could not ${what}: ${describeExit(exit)}`);
  }
  return { template, other, publicKey, privateKey, foreign: signingKeyFromPem(generateSigningKeyPair('ed25519').privatePem, 'foreign') };
}

/** Every manifest of a run: relative path → its subject digest, step, and parent digest. */
function manifestsOf(runDir: string): Map<string, { digest: string; step: number; parent: string | null; parentStep: number | null }> {
  const out = new Map<string, { digest: string; step: number; parent: string | null; parentStep: number | null }>();
  const add = (rel: string): void => {
    const m = parseManifest(new Uint8Array(readFileSync(path.join(runDir, rel))), rel);
    out.set(rel, { digest: m.digest, step: m.lineage?.step ?? -1, parent: m.lineage?.parent?.manifest ?? null, parentStep: m.lineage?.parent?.step ?? null });
  };
  for (const slot of readdirSync(path.join(runDir, 'checkpoints')).filter((n) => !n.startsWith('.'))) add(`checkpoints/${slot}/model.sig`);
  for (const entry of readdirSync(path.join(runDir, 'lineage')).filter((n) => !n.startsWith('.'))) add(`lineage/${entry}`);
  return out;
}

function swapEntries(a: string, b: string): void {
  renameSync(a, `${a}.swap`);
  renameSync(b, a);
  renameSync(`${a}.swap`, b);
}

/**
 * Every tampering of a signed template (generated from its tree).
 *
 * @param runs - the template, the other run and the foreign key.
 * @param seed - for positions and lengths.
 * @returns the cases.
 */
export function provenanceTamperCases(runs: Pick<SignedTemplate, 'template' | 'other' | 'foreign'>, seed: bigint): ProvenanceTamperCase[] {
  const { template, other, foreign } = runs;
  const rng = new SplitMix64(seed);
  const cases: ProvenanceTamperCase[] = [];
  const slots = readdirSync(path.join(template, 'checkpoints')).filter((n) => !n.startsWith('.')).sort();
  const slotFiles = slots.flatMap((slot) => ['state.llmcp', 'job.json', 'model.sig'].map((f) => `checkpoints/${slot}/${f}`));
  const entries = readdirSync(path.join(template, 'lineage')).filter((n) => !n.startsWith('.')).sort().map((n) => `lineage/${n}`);
  const manifests = manifestsOf(template);
  const bytesOf = (dir: string, rel: string): Buffer => readFileSync(path.join(dir, rel));
  for (const rel of [...slotFiles, ...entries]) {
    const size = bytesOf(template, rel).length;
    for (let k = 0; k < 2; k += 1) {
      const at = rng.nextBelow(size);
      const bit = rng.nextBelow(8);
      cases.push({
        kind: 'byte-flip',
        name: `flip bit ${bit} of byte ${at} of ${rel}`,
        names: [rel],
        apply: (d) => {
          const b = bytesOf(d, rel);
          b[at] = (b[at] as number) ^ (1 << bit);
          writeFileSync(path.join(d, rel), b);
        },
      });
    }
    const cut = rng.nextBelow(size);
    cases.push({ kind: 'truncation', name: `truncate ${rel} to ${cut} bytes`, names: [rel], apply: (d) => truncateSync(path.join(d, rel), cut) });
  }
  for (const rel of slotFiles) {
    const [, slot, file] = rel.split('/') as [string, string, string];
    const donor = slots.find((s) => s !== slot && !bytesOf(template, `checkpoints/${s}/${file}`).equals(bytesOf(template, rel)));
    if (donor !== undefined) cases.push({ kind: 'swap-between-slots', name: `${rel} replaced by ${donor}'s`, names: [rel], apply: (d) => cpSync(path.join(d, 'checkpoints', donor, file), path.join(d, rel)) });
    if (existsSync(path.join(other, rel))) cases.push({ kind: 'swap-between-runs', name: `${rel} replaced by the other run's`, names: [rel], apply: (d) => cpSync(path.join(other, rel), path.join(d, rel)) });
  }
  for (const slot of slots) {
    const dir = `checkpoints/${slot}`;
    if (existsSync(path.join(other, dir))) {
      cases.push({
        kind: 'slot-from-other-run',
        name: `${dir} replaced by the other run's`,
        names: [dir],
        apply: (d) => {
          rmSync(path.join(d, dir), { recursive: true });
          cpSync(path.join(other, dir), path.join(d, dir), { recursive: true });
        },
      });
    }
    cases.push({ kind: 'manifest-deleted', name: `${dir}/model.sig deleted`, names: [`${dir}/model.sig`, dir], apply: (d) => rmSync(path.join(d, dir, 'model.sig')) });
  }
  const steps = slots.filter((s) => s.startsWith('step_'));
  const pairs: [string, string][] = [['latest', 'latest.backup'], ...steps.slice(1).map((s, i) => [steps[i] as string, s] as [string, string]), ['latest', steps[0] as string]];
  for (const [a, b] of pairs) {
    if (!slots.includes(a) || !slots.includes(b)) continue;
    cases.push({ kind: 'slots-swapped', name: `checkpoints/${a} and checkpoints/${b} swapped`, names: [`checkpoints/${a}`, `checkpoints/${b}`], apply: (d) => swapEntries(path.join(d, 'checkpoints', a), path.join(d, 'checkpoints', b)) });
  }
  const all = [...manifests.entries()];
  for (const [rel, m] of all) {
    if (m.parent !== null) {
      // Point the link at another checkpoint of the run that exists (the grandparent when there is one).
      const grand = all.find(([, x]) => x.digest === m.parent)?.[1].parent ?? null;
      const target = all.find(([, x]) => x.digest === grand) ?? all.find(([, x]) => x.digest !== m.parent && x.digest !== m.digest && x.step <= m.step);
      if (target !== undefined) {
        const [, t] = target;
        cases.push({
          kind: 'forged-parent-link',
          name: `${rel}: parent link forged to step ${t.step} (${t.digest.slice(0, 19)}…), old signature kept`,
          names: [rel],
          apply: (d) => writeFileSync(path.join(d, rel), forgeManifest(new Uint8Array(bytesOf(d, rel)), { edit: (s) => Object.assign(s.predicate.llmcp.parent as object, { manifest: t.digest, step: t.step }), signature: 'keep' })),
        });
      }
      cases.push({
        kind: 'removed-parent-link',
        name: `${rel}: parent link removed, old signature kept`,
        names: [rel],
        apply: (d) => writeFileSync(path.join(d, rel), forgeManifest(new Uint8Array(bytesOf(d, rel)), { edit: (s) => Object.assign(s.predicate.llmcp, { parent: null, via: 'init' }), signature: 'keep' })),
      });
    }
    cases.push({ kind: 'unsigned-manifest', name: `${rel} replaced by an unsigned manifest of the same files`, names: [rel], apply: (d) => writeFileSync(path.join(d, rel), forgeManifest(new Uint8Array(bytesOf(d, rel)), { signature: 'none' })) });
    cases.push({ kind: 'foreign-key', name: `${rel} re-signed with a foreign key`, names: [rel], apply: (d) => writeFileSync(path.join(d, rel), forgeManifest(new Uint8Array(bytesOf(d, rel)), { signature: { key: foreign } })) });
  }
  for (const rel of entries) {
    const m = manifests.get(rel);
    // A deleted entry is named by itself (a slot holds its checkpoint) or by the links that named it (it was pruned).
    const children = all.filter(([, x]) => m !== undefined && x.parent === m.digest).map(([r]) => r);
    cases.push({ kind: 'lineage-entry-deleted', name: `${rel} deleted`, names: [rel, ...children], apply: (d) => rmSync(path.join(d, rel)) });
  }
  return cases;
}

/** The problem lines of `llmcp verify --json`: each provenance problem with its file, each failing slot with its directory. */
function problemLines(json: unknown): string[] {
  const run = (json as { run?: { provenance?: { problems?: { file: string | null; code: string; message: string }[] }; slots?: { slot: string; ok: boolean; code: string | null; message: string | null }[] } }).run;
  return [
    ...(run?.provenance?.problems ?? []).map((p) => `${p.file ?? ''}: ${p.code} ${p.message}`),
    ...(run?.slots ?? []).filter((s) => !s.ok).map((s) => `checkpoints/${s.slot}: ${s.code ?? ''} ${s.message ?? ''}`),
  ];
}

/** Whether a problem line names `rel`: the path itself, or its slot directory with the file's name. */
function names(line: string, rel: string): boolean {
  if (line.includes(rel)) return true;
  const parts = rel.split('/');
  if (parts[0] !== 'checkpoints' || parts.length !== 3) return false;
  return line.startsWith(`checkpoints/${parts[1] as string}:`) && line.includes(parts[2] as string);
}

/** The outcome of one tampering. */
export interface ProvenanceTamperResult {
  readonly kind: ProvenanceTamperKind;
  readonly name: string;
  readonly detected: boolean;
  readonly named: boolean;
  readonly problem: string | null;
}

/** Figures of a campaign. */
export interface ProvenanceTamperReport {
  readonly cases: number;
  readonly byKind: Readonly<Record<string, { readonly cases: number; readonly detected: number; readonly named: number }>>;
  /** Problems reported on the untouched template (must be none). */
  readonly falseAlarms: readonly string[];
  readonly failures: readonly ProvenanceTamperResult[];
  readonly seconds: number;
}

/** Options of {@link runProvenanceTamperCampaign}: those of the unsigned campaign. */
export type ProvenanceTamperOptions = TamperOptions;

/**
 * Runs the campaign.
 *
 * @param options - sample size and seed.
 * @returns the figures.
 */
export async function runProvenanceTamperCampaign(options: ProvenanceTamperOptions = {}): Promise<ProvenanceTamperReport> {
  const started = performance.now();
  const s = scratch('llmcp-provenance-tamper-');
  const results: ProvenanceTamperResult[] = [];
  const falseAlarms: string[] = [];
  try {
    const runs = await signedTemplate(s);
    const verify = (run: string): Promise<ReturnType<typeof classifyCli> & { lines: string[] }> =>
      llmcpRun(['verify', run, '--trust-key', runs.publicKey, '--json']).then((exit) => {
        const o = classifyCli(exit);
        let lines: string[] = [];
        try {
          lines = problemLines(JSON.parse(exit.stdout));
        } catch {
          lines = [`(no JSON: ${describeExit(exit)})`];
        }
        return { ...o, lines };
      });
    const control = await verify(runs.template);
    if (control.kind !== 'ok' || control.lines.length > 0) falseAlarms.push(...(control.lines.length > 0 ? control.lines : [describeExit(control.exit)]));
    const cases = sampleCases(provenanceTamperCases(runs, options.seed ?? 0x51c4n), options.sample, options.seed ?? 0x51c4n);
    for (const [i, c] of cases.entries()) {
      options.onProgress?.(i, cases.length);
      const run = path.join(s.dir, `case-${i}`);
      copyRun(runs.template, run);
      c.apply(run);
      const o = await verify(run);
      const detected = o.kind === 'typed' && o.exit.code === 1;
      const named = o.lines.some((l) => c.names.some((n) => names(l, n)));
      const problem = !detected ? `not detected: ${o.kind} (${describeExit(o.exit)})` : !named ? `detected, but no problem names ${c.names.join(' or ')}: ${o.lines.join(' | ').slice(0, 1500)}` : null;
      if (problem !== null) {
        const keep = path.join(REPRO_DIR, `provenance-tamper-${i}`);
        rmSync(keep, { recursive: true, force: true });
        mkdirSync(REPRO_DIR, { recursive: true });
        copyRun(run, keep);
      }
      results.push({ kind: c.kind, name: c.name, detected, named, problem });
      rmSync(run, { recursive: true, force: true });
    }
  } finally {
    s.dispose();
  }
  const byKind: Record<string, { cases: number; detected: number; named: number }> = {};
  for (const r of results) {
    const k = (byKind[r.kind] ??= { cases: 0, detected: 0, named: 0 });
    k.cases += 1;
    if (r.detected) k.detected += 1;
    if (r.detected && r.named) k.named += 1;
  }
  return { cases: results.length, byKind, falseAlarms, failures: results.filter((r) => r.problem !== null), seconds: (performance.now() - started) / 1000 };
}

/** The campaign's figures as text. */
export function formatProvenanceTamperReport(r: ProvenanceTamperReport): string {
  const detected = Object.values(r.byKind).reduce((a, k) => a + k.named, 0);
  const lines = [`provenance tampering (signed runs, verify --trust-key): ${r.cases} cases, ${detected} detected with the file or link named, ${r.failures.length} failures; ${r.falseAlarms.length} false alarms on the untouched run; ${r.seconds.toFixed(0)} s`];
  for (const [kind, k] of Object.entries(r.byKind).sort()) lines.push(`  ${kind}: ${k.named}/${k.cases}`);
  for (const a of r.falseAlarms) lines.push(`    FALSE ALARM: ${a}`);
  for (const f of r.failures.slice(0, 20)) lines.push(`    ${f.name}: FAILED: ${f.problem ?? ''}`);
  return lines.join('\n');
}
