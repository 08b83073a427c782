/**
 * Provenance of runs: every checkpoint gets a manifest (the model-signing
 * layout, signed with the run's key), the manifests form a chain from the
 * newest checkpoint back to step 0 through resumes, fallbacks, pivots and
 * forks (pruned ancestors named as pruned), `verifyRun` names what was
 * tampered with, and a script that knows nothing of llmcp (Python's hashlib
 * and `cryptography`) verifies the signatures and the hashes.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseConfig, type TrainerConfig } from '../src/config.ts';
import { CH33_CONFIG_INPUT } from '../src/presets.ts';
import { importTrustedKey, type TrustedKey } from '../src/provenance.ts';
import { forgeManifest } from '../src/manifest-forgery.ts';
import { forkRun, pivotRun } from '../src/pivot.ts';
import { readRunManifest, writeRunManifest } from '../src/run-manifest.ts';
import { resumeRun, trainRun } from '../src/run.ts';
import { generateSigningKeyPair, signingKeyFromPem, type SigningKey } from '../src/signing-key.ts';
import { verifyRun, type RunVerification } from '../src/status.ts';
import { runDirectory, tempDir } from './helpers/run-fixture.ts';
import { asWrittenBeforeManifests } from './helpers/run-files.ts';

/** The ch33 model trained for 16 steps, validation every 2, a cadence checkpoint every 4, 2 snapshots kept. */
function config(patch: Record<string, unknown> = {}): TrainerConfig {
  const input = JSON.parse(JSON.stringify(CH33_CONFIG_INPUT)) as Record<string, unknown>;
  Object.assign(input, { steps: 16, schedule: { kind: 'constant', rate: 0.04 }, checkpoint: { every: 4, keepSteps: 2 }, log: { timing: false } }, patch);
  return parseConfig(input);
}

interface Keys {
  readonly signing: SigningKey;
  readonly trusted: TrustedKey;
  readonly publicPem: string;
}

async function keys(algorithm: 'ecdsa-p256' | 'ed25519' = 'ecdsa-p256'): Promise<Keys> {
  const pair = generateSigningKeyPair(algorithm);
  return { signing: signingKeyFromPem(pair.privatePem, 'key'), trusted: await importTrustedKey(pair.publicPem, 'pub'), publicPem: pair.publicPem };
}

/** A signed run stopped after step 10 and resumed to its end (16). */
async function signedRun(k: Keys, name = 'run', patch: Record<string, unknown> = {}): Promise<string> {
  const dir = runDirectory(name);
  const stop = new AbortController();
  const first = await trainRun({ runDir: dir, config: config(patch), saveMode: 'inline', signingKey: k.signing, signal: stop.signal, onEvent: (e) => e.type === 'step' && e.step === 10 && stop.abort() });
  expect(first.status).toBe('stopped');
  expect((await resumeRun(dir, { saveMode: 'inline', signingKey: k.signing })).status).toBe('completed');
  return dir;
}

function problemsOf(v: RunVerification): string[] {
  return [...v.provenance.problems.map((p) => `${p.code} ${p.file ?? ''}: ${p.message}`), ...v.slots.filter((s) => !s.ok).map((s) => `${s.code ?? ''} checkpoints/${s.slot}: ${s.message ?? ''}`)];
}

/** Rewrites a manifest's lineage, keeping its old signature: a forged link. */
function forge(file: string, edit: (lineage: Record<string, unknown>) => void): void {
  writeFileSync(file, forgeManifest(new Uint8Array(readFileSync(file)), { edit: (s) => edit(s.predicate.llmcp), signature: 'keep' }));
}

/** Re-signs a manifest's statement with another key. */
function resign(file: string, key: SigningKey): void {
  writeFileSync(file, forgeManifest(new Uint8Array(readFileSync(file)), { signature: { key } }));
}

const storeEntries = (dir: string): string[] => readdirSync(path.join(dir, 'lineage')).sort();

describe('provenance of a signed run', () => {
  it('chains every checkpoint back to step 0 through a stop and a resume, names pruned ancestors, and verifies with the key', async () => {
    const k = await keys();
    const dir = await signedRun(k);
    const v = await verifyRun(dir, { trustKey: k.trusted });
    expect(problemsOf(v)).toEqual([]);
    expect(v.ok).toBe(true);
    const chain = v.provenance.chain;
    expect(chain[0]).toMatchObject({ step: 16, slots: expect.arrayContaining(['latest', 'step_000016']), status: 'ok' });
    expect(chain.at(-1)).toMatchObject({ step: 0, via: 'init', status: 'root' });
    expect(chain.every((l, i) => i === chain.length - 1 || l.status === 'ok')).toBe(true);
    // Steps never increase along the chain; the resume is a link of its own; retention pruned some ancestors (their manifests are kept).
    expect(chain.map((l) => l.step)).toEqual([...chain.map((l) => l.step)].sort((a, b) => b - a));
    expect(chain.some((l) => l.via === 'resume')).toBe(true);
    expect(chain.filter((l) => l.slots.length === 0).map((l) => l.step)).toContain(4);
    expect(v.provenance.manifests.every((m) => m.signature === 'verified' && m.signer === k.signing.hint)).toBe(true);
    // run.json records who signed each segment.
    const events = readRunManifest(dir)?.events ?? [];
    expect(events.filter((e) => 'provenance' in e).map((e) => [e.event, (e as { provenance: { signer: string } }).provenance.signer])).toEqual([
      ['created', k.signing.hint],
      ['resumed', k.signing.hint],
    ]);
  });

  it('names every manifest signed by another key, and every unsigned one, when a key is trusted', async () => {
    const k = await keys('ed25519');
    const dir = await signedRun(k);
    const other = await keys();
    const v = await verifyRun(dir, { trustKey: other.trusted });
    expect(v.ok).toBe(false);
    const files = v.provenance.problems.filter((p) => p.code === 'TRAINER_SIGNATURE_INVALID').map((p) => p.file);
    expect(new Set(files)).toEqual(new Set(v.provenance.manifests.map((m) => m.file)));
    expect(v.provenance.problems[0]?.message).toMatch(/is signed by another key \(hint [0-9a-f]{64}\), not by the trusted key/);
    const unsigned = runDirectory('unsigned');
    await trainRun({ runDir: unsigned, config: config({ steps: 4 }), saveMode: 'inline' });
    expect((await verifyRun(unsigned)).ok).toBe(true);
    const u = await verifyRun(unsigned, { trustKey: k.trusted });
    expect(u.provenance.problems.length).toBeGreaterThan(0);
    expect(u.provenance.problems.every((p) => p.code === 'TRAINER_SIGNATURE_INVALID' && p.message.endsWith('is not signed'))).toBe(true);
  });

  it('names the file or link of each tampering', async () => {
    const k = await keys();
    const template = await signedRun(k, 'template');
    const other = await signedRun(k, 'other', { schedule: { kind: 'constant', rate: 0.01 } });
    const foreign = (await keys()).signing;
    const entries = storeEntries(template);
    const pruned = entries.find((n) => n.startsWith('step_000004-')) as string;
    const cases: [string, (d: string) => void, RegExp][] = [
      ['byte of a state file', (d) => flip(path.join(d, 'checkpoints/step_000012/state.llmcp'), 200), /step_000012/],
      ['byte of a manifest', (d) => flip(path.join(d, 'checkpoints/latest/model.sig'), 40), /checkpoints\/latest\/model\.sig/],
      ['byte of a store entry', (d) => flip(path.join(d, 'lineage', pruned), 90), new RegExp(`lineage/${pruned}`)],
      ['a slot of another run', (d) => (rmSync(path.join(d, 'checkpoints/latest'), { recursive: true }), cpSync(path.join(other, 'checkpoints/latest'), path.join(d, 'checkpoints/latest'), { recursive: true })), /checkpoints\/latest/],
      ['job.json of another slot', (d) => cpSync(path.join(d, 'checkpoints/latest.backup/job.json'), path.join(d, 'checkpoints/latest/job.json')), /checkpoints\/latest/],
      ['manifest of another slot', (d) => cpSync(path.join(d, 'checkpoints/latest.backup/model.sig'), path.join(d, 'checkpoints/latest/model.sig')), /checkpoints\/latest\//],
      ['latest and latest.backup swapped', (d) => swap(path.join(d, 'checkpoints/latest'), path.join(d, 'checkpoints/latest.backup')), /checkpoints\/latest/],
      ['step snapshots swapped', (d) => swap(path.join(d, 'checkpoints/step_000012'), path.join(d, 'checkpoints/step_000016')), /step_000012|step_000016/],
      ['a forged parent link', (d) => forge(path.join(d, 'checkpoints/latest/model.sig'), (l) => ((l.parent as { step: number }).step = 8)), /checkpoints\/latest\/model\.sig/],
      ['a removed parent link', (d) => forge(path.join(d, 'checkpoints/latest/model.sig'), (l) => ((l.parent = null), (l.via = 'init'))), /checkpoints\/latest\/model\.sig/],
      ['a manifest re-signed with another key', (d) => resign(path.join(d, 'checkpoints/latest/model.sig'), foreign), /checkpoints\/latest\/model\.sig is signed by another key/],
      ['a manifest removed from a slot', (d) => rmSync(path.join(d, 'checkpoints/best/model.sig')), /checkpoints\/best/],
      ['a pruned ancestor removed from the store', (d) => rmSync(path.join(d, 'lineage', pruned)), /names its parent of step 4/],
      ['a slot\'s store entry removed', (d) => rmSync(path.join(d, 'lineage', entries.find((n) => n.startsWith('step_000016-')) as string)), /lineage\/step_000016-/],
    ];
    for (const [name, apply, named] of cases) {
      const d = path.join(tempDir(), 'case');
      cpSync(template, d, { recursive: true });
      apply(d);
      const v = await verifyRun(d, { trustKey: k.trusted });
      expect(v.ok, name).toBe(false);
      expect(problemsOf(v).join('\n'), name).toMatch(named);
    }
  });

  it('a forged link to a checkpoint that does not exist is named without a key too', async () => {
    const k = await keys();
    const dir = await signedRun(k);
    forge(path.join(dir, 'checkpoints/latest/model.sig'), (l) => ((l.parent as { manifest: string }).manifest = `sha256:${'9'.repeat(64)}`));
    const v = await verifyRun(dir);
    expect(problemsOf(v).join('\n')).toMatch(/checkpoints\/latest\/model\.sig \(step 16 .*\) names its parent of step 12 as sha256:9{12}.*, which is in no slot and not in lineage\//);
  });
});

function flip(file: string, at: number): void {
  const b = readFileSync(file);
  b[at % b.length] = (b[at % b.length] as number) ^ 0x10;
  writeFileSync(file, b);
}

function swap(a: string, b: string): void {
  renameSync(a, `${a}.swap`);
  renameSync(b, a);
  renameSync(`${a}.swap`, b);
}

describe('lineage across fallbacks, pivots and forks', () => {
  it('a resume that falls back past a damaged latest continues the chain from the slot it used', async () => {
    const k = await keys();
    const dir = runDirectory();
    const stop = new AbortController();
    await trainRun({ runDir: dir, config: config(), saveMode: 'inline', signingKey: k.signing, signal: stop.signal, onEvent: (e) => e.type === 'step' && e.step === 9 && stop.abort() });
    flip(path.join(dir, 'checkpoints/latest/state.llmcp'), 300);
    const r = await resumeRun(dir, { saveMode: 'inline', signingKey: k.signing });
    expect(r.resumedFrom).not.toBe('latest');
    const v = await verifyRun(dir, { trustKey: k.trusted });
    expect(problemsOf(v)).toEqual([]);
    expect(v.provenance.chain.at(-1)?.status).toBe('root');
    const resumed = v.provenance.chain.find((l) => l.via === 'resume');
    expect(resumed?.step).toBeGreaterThan(0);
  });

  it('a stop right after a best-only save writes the same checkpoint again: the same statement and lineage/ entry, never a link to itself', async () => {
    const k = await keys();
    const dir = runDirectory();
    const stop = new AbortController();
    let stoppedAt = -1;
    const onEvent = (e: { type: string; step?: number; reason?: string }): void => {
      if (stoppedAt < 0 && e.type === 'checkpoint' && e.reason === 'best' && (e.step ?? 0) > 4) {
        stoppedAt = e.step ?? -1;
        stop.abort();
      }
    };
    await trainRun({ runDir: dir, config: config({ checkpoint: { every: 100, keepSteps: 2 } }), saveMode: 'inline', signingKey: k.signing, signal: stop.signal, onEvent });
    expect(stoppedAt).toBeGreaterThan(4);
    const statement = (slot: string): string => (JSON.parse(readFileSync(path.join(dir, 'checkpoints', slot, 'model.sig'), 'utf8')) as { dsseEnvelope: { payload: string } }).dsseEnvelope.payload;
    // Both slots hold the stopped step's files; the stop checkpoint is the best-only save again, not its child (ECDSA signs anew).
    expect(statement('latest')).toBe(statement('best'));
    expect(storeEntries(dir).filter((n) => n.startsWith(`step_${String(stoppedAt).padStart(6, '0')}-`))).toHaveLength(1);
    await resumeRun(dir, { saveMode: 'inline', signingKey: k.signing });
    const v = await verifyRun(dir, { trustKey: k.trusted });
    expect(problemsOf(v)).toEqual([]);
    const steps = v.provenance.chain.map((l) => l.step);
    expect(steps.filter((s) => s === stoppedAt)).toHaveLength(1);
    expect(v.provenance.chain.at(-1)).toMatchObject({ step: 0, status: 'root' });
  });

  it('a pivot links its checkpoint to the one it changed; a fork starts its chain at the fork point in the source run', async () => {
    const k = await keys();
    const dir = await signedRun(k);
    const pivoted = config({ steps: 20 });
    await pivotRun(dir, { config: pivoted, changes: ['steps'], signingKey: k.signing });
    const v = await verifyRun(dir, { trustKey: k.trusted });
    expect(problemsOf(v)).toEqual([]);
    expect(v.provenance.chain[0]).toMatchObject({ step: 16, via: 'pivot', slots: ['latest'] });
    expect(v.provenance.chain[1]).toMatchObject({ step: 16, via: 'train' });

    const fork = path.join(tempDir(), 'fork');
    await forkRun(dir, fork, { slot: 'step_000012', signingKey: k.signing });
    await resumeRun(fork, { saveMode: 'inline', signingKey: k.signing });
    const f = await verifyRun(fork, { trustKey: k.trusted });
    expect(problemsOf(f)).toEqual([]);
    expect(f.provenance.chain.at(-1)).toMatchObject({ step: 12, via: 'fork', status: 'fork' });
    // A fork link that run.json does not record is broken.
    const runJson = readRunManifest(fork);
    if (runJson === null) throw new Error('no run.json');
    await writeRunManifest(fork, { ...runJson, events: runJson.events.filter((e) => e.event !== 'forked-from') });
    expect(problemsOf(await verifyRun(fork, { trustKey: k.trusted })).join('\n')).toMatch(/names a parent in run .* at step 12, which run\.json does not record as this run's fork source/);
  });

  it('a run written before manifests verifies as before ("no manifest"), and its first manifests link back to it', async () => {
    const dir = runDirectory();
    const stop = new AbortController();
    await trainRun({ runDir: dir, config: config(), saveMode: 'inline', signal: stop.signal, onEvent: (e) => e.type === 'step' && e.step === 10 && stop.abort() });
    // What the previous trainer left: no manifests, no store, no provenance records.
    asWrittenBeforeManifests(dir);
    const old = await verifyRun(dir);
    expect(old.ok).toBe(true);
    expect(old.provenance).toMatchObject({ state: 'none', ok: true, chain: [] });
    const k = await keys();
    await resumeRun(dir, { saveMode: 'inline', signingKey: k.signing });
    const v = await verifyRun(dir, { trustKey: k.trusted });
    expect(problemsOf(v)).toEqual([]);
    expect(v.provenance.chain.at(-1)).toMatchObject({ via: 'resume', status: 'before-manifests' });
    expect(existsSync(path.join(dir, 'checkpoints', 'latest', 'model.sig'))).toBe(true);
  });
});

const PYTHON = '/usr/bin/python3';
const SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'python', 'verify_manifest.py');
const CRYPTOGRAPHY = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import cryptography, hashlib'], { stdio: 'ignore' }).status === 0;

function pythonCheck(manifest: string, publicKey: string): { status: number | null; result: { ok: boolean; signature: string; files: string[]; problems: string[] } } {
  const r = spawnSync(PYTHON, [SCRIPT, manifest, '--key', publicKey], { encoding: 'utf8' });
  return { status: r.status, result: JSON.parse(r.stdout) as { ok: boolean; signature: string; files: string[]; problems: string[] } };
}

describe.skipIf(!CRYPTOGRAPHY)(`an independent check (Python hashlib and cryptography, no llmcp code)${CRYPTOGRAPHY ? '' : ` (skipped: ${PYTHON} with the cryptography package is not available)`}`, () => {
  it.each(['ecdsa-p256', 'ed25519'] as const)('verifies the DSSE signature (%s) over the PAE and every shard hash of every slot, and refuses a changed byte', async (algorithm) => {
    const k = await keys(algorithm);
    const dir = await signedRun(k);
    const publicKey = path.join(tempDir(), 'key.pub.pem');
    writeFileSync(publicKey, k.publicPem);
    for (const slot of readdirSync(path.join(dir, 'checkpoints'))) {
      const { status, result } = pythonCheck(path.join(dir, 'checkpoints', slot, 'model.sig'), publicKey);
      expect(result, slot).toMatchObject({ ok: true, signature: 'verified', files: ['job.json', 'state.llmcp'] });
      expect(status).toBe(0);
    }
    flip(path.join(dir, 'checkpoints/latest/state.llmcp'), 1000);
    const { status, result } = pythonCheck(path.join(dir, 'checkpoints', 'latest', 'model.sig'), publicKey);
    expect(status).toBe(1);
    expect(result.problems.join('\n')).toMatch(/^state\.llmcp: bytes 0\.\.\d+ differ from the manifest$/m);
    const other = path.join(tempDir(), 'other.pub.pem');
    writeFileSync(other, (await keys()).publicPem);
    expect(pythonCheck(path.join(dir, 'checkpoints', 'best', 'model.sig'), other).result.signature).toBe('other-key');
  });
});

