/**
 * One checkpoint address for every command: a run directory (its best slot;
 * --latest: its newest), a slot directory, a .llmcp file, or run:slot —
 * and the errors that say what exists.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { llmcp, tempDir } from './helpers.ts';

const tmp = tempDir('llmcp-address-');
afterAll(() => tmp.cleanup());
const run = path.join(tmp.dir, 'default');
const SLOTS = 'best, best.backup, latest, step_000008';

beforeAll(async () => {
  const r = await llmcp(['train', run, '--preset', 'ch33', '--plain']);
  expect(r.code, r.stderr).toBe(0);
}, 120_000);

describe('llmcp inspect <address>', () => {
  it('a run directory is its best slot; run:slot, a slot directory and the file are the same bytes', async () => {
    const viaRun = await llmcp(['inspect', run, '--summary']);
    expect(viaRun.code, viaRun.stderr).toBe(0);
    expect(viaRun.stdout.split('\n')[0]).toBe(`${run}:best (${path.join(run, 'checkpoints/best/state.llmcp')})`);
    for (const spec of [`${run}:best`, path.join(run, 'checkpoints', 'best'), `${run}:step_000008`, `${run}:latest`]) {
      const r = await llmcp(['inspect', spec, '--summary']);
      expect(r.code, `${spec}: ${r.stderr}`).toBe(0);
      expect(r.stdout.split('\n').slice(1)).toEqual(viaRun.stdout.split('\n').slice(1));
    }
    const latest = await llmcp(['inspect', run, '--latest', '--summary']);
    expect(latest.stdout.split('\n')[0]).toBe(`${run}:latest (${path.join(run, 'checkpoints/latest/state.llmcp')})`);
  });

  it('--summary: about a dozen lines — kind, sizes, config, step, checksum, verdict', async () => {
    const r = await llmcp(['inspect', `${run}:best`, '--summary']);
    expect(r.stdout.split('\n').slice(1)).toEqual([
      'kind: LLMCP35 v1 checkpoint',
      'file: 6330 bytes',
      'header: 2869 bytes, payload: 3461 bytes, records: 38 (11 parameters, 11 AdamW moment pairs)',
      'tokenizer: literal, 5 pieces',
      'model: vocabulary 5, width 4, heads 2, feed-forward 4, layers 1, positions 2, rope base 10000, rms eps 0.000001',
      'optimizer: AdamW lr 0.04, betas 0.9/0.999, eps 1e-8, weight decay 0.01, step 8',
      'step: 8',
      'sampling rng: 0x9e3779b97f4a7c38',
      'checksum: stored fnv1a64:2b8b6097eaed6a91, computed fnv1a64:2b8b6097eaed6a91 (matches)',
      'verdict: VALID (fnv1a64:2b8b6097eaed6a91)',
      '',
    ]);
  });

  it('--json still works on an address', async () => {
    const r = await llmcp(['inspect', `${run}:step_000008`, '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ schema: 'llmcp-inspect/1', file: `${run}:step_000008`, fileLength: 6330 });
  });

  it('a slot that is not a slot name, or that the run does not have, is an input error listing the slots (exit 3)', async () => {
    const bad = await llmcp(['inspect', `${run}:../../etc`]);
    expect(bad.code).toBe(3);
    expect(bad.stderr.split('\n')[0]).toBe(`llmcp inspect: error: slot "../../etc" is not a slot name (latest, latest.backup, best, best.backup or step_NNNNNN); ${run} has: ${SLOTS}`);
    const missing = await llmcp(['inspect', `${run}:step_000600`, '--json']);
    expect(missing.code).toBe(3);
    expect(JSON.parse(missing.stdout)).toMatchObject({ error: { code: 'CLI_UNKNOWN_SLOT', exit: 3, message: `slot step_000600: ${run} has no such slot; it has: ${SLOTS}` } });
  });

  it('never suggests a file that does not exist: a plain directory, the checkpoints/ directory, a :slot on a file', async () => {
    const plain = path.join(tmp.dir, 'plain');
    mkdirSync(plain);
    const r = await llmcp(['inspect', plain]);
    expect(r.code).toBe(3);
    expect(r.stderr).toBe(`llmcp inspect: error: ${plain} is a directory but not a run directory (no run.json, run.lock or checkpoints/) or a slot directory of one\nhint: give a checkpoint file (.llmcp), a run directory, a slot directory or run:slot\n`);
    const checkpoints = await llmcp(['inspect', path.join(run, 'checkpoints')], { cwd: tmp.dir });
    expect(checkpoints.stderr.split('\n')[1]).toBe('hint: give the run directory (default) or one of its slots, e.g. default:best');
    const onFile = await llmcp(['inspect', `${path.join(run, 'checkpoints/best/state.llmcp')}:best`]);
    expect(onFile.code).toBe(3);
    expect(onFile.stderr.split('\n')[0]).toBe(`llmcp inspect: error: ${path.join(run, 'checkpoints/best/state.llmcp')} is a file; a :slot suffix needs a run directory`);
  });

  it('--latest with a named slot is a usage error (exit 2)', async () => {
    const r = await llmcp(['inspect', `${run}:best`, '--latest']);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toBe(`llmcp inspect: error: give either --latest or a slot (${run}:best), not both`);
  });
});

describe('llmcp verify <one slot>', () => {
  it('verifies run:slot or a slot directory in full; a damaged slot fails (exit 1)', async () => {
    const ok = await llmcp(['verify', `${run}:step_000008`]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toBe(`ok  ${run}:step_000008  fnv1a64:2b8b6097eaed6a91  step 8: job digest, state file and pairing verify, manifest unsigned\n`);
    const json = await llmcp(['verify', path.join(run, 'checkpoints', 'best'), '--json']);
    expect(JSON.parse(json.stdout)).toEqual({
      schema: 'llmcp-verify/1',
      kind: 'slot',
      path: path.join(run, 'checkpoints', 'best'),
      run,
      slot: 'best',
      ok: true,
      step: 8,
      checksum: 'fnv1a64:2b8b6097eaed6a91',
      manifest: { digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/), signature: 'unsigned', signer: null, lineage: expect.objectContaining({ kind: 'checkpoint', step: 8 }) },
      error: null,
    });
    const unknown = await llmcp(['verify', `${run}:nope`]);
    expect(unknown.code).toBe(3);
    const copy = path.join(tmp.dir, 'damaged-copy');
    cpSync(run, copy, { recursive: true });
    const state = path.join(copy, 'checkpoints', 'step_000008', 'state.llmcp');
    const bytes = readFileSync(state);
    bytes.writeUInt8((bytes.at(-1) as number) ^ 1, bytes.length - 1);
    writeFileSync(state, bytes);
    const damaged = await llmcp(['verify', `${copy}:step_000008`]);
    expect(damaged.code).toBe(1);
    expect(damaged.stdout).toMatch(new RegExp(`^FAILED  ${copy.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:step_000008  TRAINER_STATE_INVALID: step_000008/state.llmcp is not a valid LLMCP35 checkpoint: checksum mismatch`));
  });
});

describe('llmcp diff / sample / eval / fork take addresses', () => {
  it('diff: two slots of a run', async () => {
    const r = await llmcp(['diff', `${run}:best`, path.join(run, 'checkpoints', 'step_000008')]);
    expect(r.code, r.stderr).toBe(0);
  });

  it("sample: a run's own sampling settings are the defaults (prompt, temperature, top-k, max tokens)", async () => {
    const r = await llmcp(['sample', run, '--json', '--no-slide']);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as { checkpoint: string; settings: string; mode: unknown; samples: { promptTokens: number[]; tokens: number[] }[] };
    expect(doc.checkpoint).toBe(`${run}:best`);
    expect(doc.settings).toBe('run config');
    // ch33's config: prompt "0", τ = 1, top-k 3, at most 4 new tokens (the ch36 audit).
    expect(doc.mode).toEqual({ kind: 'temperature', temperature: 1, topK: 3 });
    expect(doc.samples[0]?.promptTokens).toEqual([0]);
    expect(doc.samples[0]?.tokens).toEqual([4, 4]);
    const overridden = JSON.parse((await llmcp(['sample', run, '--json', '--temperature', '0'])).stdout) as { mode: unknown };
    expect(overridden.mode).toEqual({ kind: 'greedy' });
    const text = await llmcp(['sample', `${run}:step_000008`, '--max-tokens', '6']);
    expect(text.stdout).toMatch(/^0[0-4]{6}\n$/);
    expect(text.stderr).toMatch(/\(defaults from the run's config\); key\/value cache; slides past the 2-token context; stopped: max-new-tokens;/);
  });

  it('eval: an unknown slot lists the slots (exit 3)', async () => {
    const r = await llmcp(['eval', `${run}:step_000004`]);
    expect(r.code).toBe(3);
    expect(r.stderr.split('\n')[0]).toBe(`llmcp eval: error: slot step_000004: ${run} has no such slot; it has: ${SLOTS}`);
  });

  it('fork: an unknown slot is an input error listing the slots (exit 3)', async () => {
    const target = path.join(tmp.dir, 'fork-unknown');
    const r = await llmcp(['fork', run, target, '--slot', 'step_000600']);
    expect(r.code).toBe(3);
    expect(r.stderr.split('\n')[0]).toBe(`llmcp fork: error: --slot step_000600: ${run} has no such slot; it has: ${SLOTS}`);
    expect(existsSync(target)).toBe(false);
  });

  it('fork: run:slot or a slot directory names the slot, as --slot does', async () => {
    const a = await llmcp(['fork', `${run}:step_000008`, path.join(tmp.dir, 'fork-a')]);
    expect(a.code, a.stderr).toBe(0);
    expect(a.stdout.split('\n')[0]).toMatch(/ \(step_000008, step 8\) into /);
    const b = await llmcp(['fork', path.join(run, 'checkpoints', 'best'), path.join(tmp.dir, 'fork-b')]);
    expect(b.stdout.split('\n')[0]).toMatch(/ \(best, step 8\) into /);
    const both = await llmcp(['fork', `${run}:best`, path.join(tmp.dir, 'fork-c'), '--slot', 'latest']);
    expect(both.code).toBe(2);
    expect(both.stderr.split('\n')[0]).toBe(`llmcp fork: error: ${run}:best names the slot best; give either it or --slot latest, not both`);
    const unknown = await llmcp(['fork', `${run}:step_000004`, path.join(tmp.dir, 'fork-d')]);
    expect(unknown.code).toBe(3);
    expect(unknown.stderr.split('\n')[0]).toBe(`llmcp fork: error: slot step_000004: ${run} has no such slot; it has: ${SLOTS}`);
  });
});

describe('llmcp export: default names after the run and slot, never overwriting', () => {
  it.each([
    [['--to', 'safetensors', run], 'default-best.safetensors'],
    [['--to', 'safetensors', `${run}:step_000008`], 'default-step_000008.safetensors'],
    [['--to', 'andrea-bin', `${run}:latest`], 'default-latest.bin'],
    [['--to', 'gguf', run, '--latest'], 'default-latest.gguf'],
    [['--to', 'safetensors', path.join(run, 'checkpoints', 'best', 'state.llmcp')], 'default-best.safetensors'],
  ])('export %j writes %s, refuses it again naming the file (exit 4), replaces it with --force', async (args, file) => {
    const cwd = mkdtempSync(path.join(tmp.dir, 'out-'));
    const first = await llmcp(['export', ...args], { cwd });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout.startsWith(`wrote ${file}: `)).toBe(true);
    const bytes = readFileSync(path.join(cwd, file));
    writeFileSync(path.join(cwd, file), 'keep me');
    const again = await llmcp(['export', ...args], { cwd });
    expect(again.code).toBe(4);
    expect(again.stderr).toBe(`llmcp export: error: output ${file} already exists\nhint: pass --force to replace it, or choose another --out\n`);
    expect(readFileSync(path.join(cwd, file), 'utf8')).toBe('keep me');
    expect((await llmcp(['export', ...args, '--force'], { cwd })).code).toBe(0);
    expect(readFileSync(path.join(cwd, file))).toEqual(bytes);
  });

  it('a bare checkpoint file keeps its own name', async () => {
    const cwd = path.join(tmp.dir, 'out-bare');
    mkdirSync(cwd);
    writeFileSync(path.join(cwd, 'model.llmcp'), readFileSync(path.join(run, 'checkpoints/best/state.llmcp')));
    const r = await llmcp(['export', '--to', 'safetensors', 'model.llmcp'], { cwd });
    expect(r.stdout.startsWith('wrote model.safetensors: ')).toBe(true);
  });
});
