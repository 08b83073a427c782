/**
 * Provenance from the command line: `llmcp keygen`, `--sign-key` on train,
 * resume and export, the manifests every export writes beside its outputs,
 * and `llmcp verify --trust-key` on runs, slots, exports and manifests —
 * exit codes and the file named when something was changed.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { llmcp, PACKAGE_DIR, tempDir } from './helpers.ts';

const work = tempDir('llmcp-cli-provenance-');
afterAll(() => work.cleanup());
const cwd = work.dir;
const run = (argv: readonly string[]): ReturnType<typeof llmcp> => llmcp(argv, { cwd });
const SET = ['--preset', 'ch33', '--set', 'steps=10', '--set', 'checkpoint.every=4', '--set', 'schedule={"kind":"constant","rate":0.04}', '--plain'];

beforeAll(async () => {
  expect((await run(['keygen', '-o', 'k.pem'])).code).toBe(0);
  expect((await run(['keygen', '-o', 'other.pem', '--type', 'ed25519'])).code).toBe(0);
  expect((await run(['train', 'runs/a', ...SET, '--sign-key', 'k.pem'])).code).toBe(0);
}, 120_000);

function flip(file: string): void {
  const b = readFileSync(path.join(cwd, file));
  b[Math.floor(b.length / 2)] = (b[Math.floor(b.length / 2)] as number) ^ 1;
  writeFileSync(path.join(cwd, file), b);
}

describe('llmcp keygen', () => {
  it('writes a private key readable by its owner alone and the public key beside it, and never replaces them without --force', async () => {
    expect(statSync(path.join(cwd, 'k.pem')).mode & 0o777).toBe(0o600);
    expect(readFileSync(path.join(cwd, 'k.pub.pem'), 'utf8')).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
    const again = await run(['keygen', '-o', 'k.pem']);
    expect(again).toMatchObject({ code: 4, stderr: expect.stringMatching(/k\.pem already exists/) });
  });

  it('refuses a key that cannot sign before anything starts, as an input error', async () => {
    const r = await run(['train', 'runs/x', ...SET, '--sign-key', 'k.pub.pem']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/a public key; --sign-key takes the private key/);
    expect(existsSync(path.join(cwd, 'runs/x'))).toBe(false);
  });
});

describe('llmcp verify --trust-key on a run', () => {
  it('verifies a signed run with its key, names every manifest signed by another key, and reads the chain', async () => {
    const ok = await run(['verify', 'runs/a', '--trust-key', 'k.pub.pem']);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/provenance: ok, \d+ manifests .*every one signed by the trusted key/);
    expect(ok.stdout).toMatch(/lineage: 10 ← 8 ← .*\[step 0: fresh model\]: unbroken/);
    const json = JSON.parse((await run(['verify', 'runs/a', '--trust-key', 'other.pub.pem', '--json'])).stdout) as { ok: boolean; run: { provenance: { problems: { code: string; file: string }[] } } };
    expect(json.ok).toBe(false);
    expect(json.run.provenance.problems.every((p) => p.code === 'TRAINER_SIGNATURE_INVALID')).toBe(true);
    expect(json.run.provenance.problems.map((p) => p.file)).toContain('checkpoints/latest/model.sig');
    const slot = await run(['verify', 'runs/a:latest', '--trust-key', 'k.pub.pem']);
    expect(slot).toMatchObject({ code: 0, stdout: expect.stringMatching(/manifest signed by the trusted key/) });
    expect((await run(['verify', 'runs/a:latest', '--trust-key', 'other.pub.pem'])).code).toBe(1);
  });

  it('a resume with the key keeps the chain; a changed byte is named', async () => {
    expect((await run(['resume', 'runs/a', '--steps', '12', '--sign-key', 'k.pem', '--plain'])).code).toBe(0);
    expect((await run(['verify', 'runs/a', '--trust-key', 'k.pub.pem'])).stdout).toMatch(/lineage: 12 \(resume\) ← 10 \(pivot\) ← 10 ← .*: unbroken/);
    const manifest = readdirSync(path.join(cwd, 'runs/a/lineage'))[0] as string;
    flip(`runs/a/lineage/${manifest}`);
    const r = await run(['verify', 'runs/a', '--trust-key', 'k.pub.pem']);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`lineage/${manifest}`);
  });
});

describe('exports carry their manifest', () => {
  it.each([
    ['safetensors', ['-o', 'e/m.safetensors'], 'e/m.safetensors'],
    ['gguf', ['-o', 'e/m.gguf'], 'e/m.gguf'],
    ['andrea-bin', ['-o', 'e/m.bin', '--config-out', 'e/m.json'], 'e/m.bin'],
  ])('%s: F.sig beside every output, signed, verified with the key; a flipped byte fails naming the file', async (to, args, file) => {
    expect((await run(['export', '--to', to, 'runs/b', ...args, '--sign-key', 'k.pem'])).code).toBe(0);
    expect(existsSync(path.join(cwd, `${file}.sig`))).toBe(true);
    expect((await run(['verify', file, '--trust-key', 'k.pub.pem'])).code).toBe(0);
    expect((await run(['verify', `${file}.sig`, '--trust-key', 'k.pub.pem'])).code).toBe(0);
    expect((await run(['verify', file, '--trust-key', 'other.pub.pem'])).code).toBe(1);
    // An existing manifest is not replaced without --force, and nothing is written.
    const again = await run(['export', '--to', to, 'runs/b', ...args]);
    expect(again.code).toBe(4);
    flip(file);
    const r = await run(['verify', `${file}.sig`, '--trust-key', 'k.pub.pem', '--json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).manifest.problems[0].message).toContain(path.basename(file));
  });

  it('hf: model.sig in the directory lists every file; an extra file fails', async () => {
    expect((await run(['export', '--to', 'hf', 'runs/b', 'e/hf', '--sign-key', 'k.pem'])).code).toBe(0);
    const json = JSON.parse((await run(['verify', 'e/hf', '--trust-key', 'k.pub.pem', '--json'])).stdout) as { ok: boolean; manifest: { files: string[]; lineage: { via: string; parent: { step: number } } } };
    expect(json.ok).toBe(true);
    expect(json.manifest.files).toContain('model.safetensors');
    expect(json.manifest.lineage).toMatchObject({ via: 'export' });
    writeFileSync(path.join(cwd, 'e/hf/extra.txt'), 'x');
    const r = await run(['verify', 'e/hf']);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/extra\.txt: is not listed in model\.sig/);
  });

  it('--trust-key on a file without a manifest is refused', async () => {
    const r = await run(['verify', 'runs/a/checkpoints/latest/state.llmcp', '--trust-key', 'k.pub.pem']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/has no provenance manifest/);
  });
});

const PYTHON = '/usr/bin/python3';
const SCRIPT = path.resolve(PACKAGE_DIR, '../trainer/test/python/verify_manifest.py');
const CRYPTOGRAPHY = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import cryptography'], { stdio: 'ignore' }).status === 0;

describe.skipIf(!CRYPTOGRAPHY)(`an export's manifest checked by Python's hashlib and cryptography${CRYPTOGRAPHY ? '' : ' (skipped: no /usr/bin/python3 with cryptography)'}`, () => {
  it('verifies the signature and every file of an hf export', async () => {
    expect((await run(['export', '--to', 'hf', 'runs/b', 'e/hf2', '--sign-key', 'k.pem'])).code).toBe(0);
    const r = spawnSync(PYTHON, [SCRIPT, path.join(cwd, 'e/hf2/model.sig'), '--key', path.join(cwd, 'k.pub.pem')], { encoding: 'utf8' });
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, signature: 'verified' });
  });
});

beforeAll(async () => {
  // A second run to export from (the first one is resumed and tampered with above).
  mkdirSync(path.join(cwd, 'e'));
  expect((await run(['train', 'runs/b', ...SET, '--sign-key', 'k.pem'])).code).toBe(0);
}, 120_000);
