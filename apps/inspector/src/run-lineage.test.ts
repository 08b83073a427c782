import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CH33_CONFIG_INPUT, generateSigningKeyPair, importTrustedKey, parseConfig, resumeRun, signingKeyFromPem, trainRun } from '@llmcp/trainer';
import { readLineage } from './run-lineage.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'llmcp-inspector-lineage-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const pair = generateSigningKeyPair('ecdsa-p256');
const run = path.join(dir, 'run');

/** Every file of a run as the page gets them: Blobs by path relative to the run. */
function filesOf(root: string): Map<string, Blob> {
  const out = new Map<string, Blob>();
  const walk = (rel: string): void => {
    for (const name of readdirSync(path.join(root, rel))) {
      const r = rel === '' ? name : `${rel}/${name}`;
      if (statSync(path.join(root, r)).isDirectory()) walk(r);
      else out.set(r, new Blob([readFileSync(path.join(root, r))]));
    }
  };
  walk('');
  return out;
}

beforeAll(async () => {
  const input = { ...(JSON.parse(JSON.stringify(CH33_CONFIG_INPUT)) as object), steps: 12, schedule: { kind: 'constant', rate: 0.04 }, checkpoint: { every: 4, keepSteps: 1 } };
  const signingKey = signingKeyFromPem(pair.privatePem, 'key');
  const stop = new AbortController();
  await trainRun({ runDir: run, config: parseConfig(input), saveMode: 'inline', signingKey, signal: stop.signal, onEvent: (e) => e.type === 'step' && e.step === 6 && stop.abort() });
  await resumeRun(run, { saveMode: 'inline', signingKey });
}, 60_000);

describe('readLineage', () => {
  it('checks every slot against its manifest and walks the chain from latest to step 0, pruned ancestors included', async () => {
    const view = await readLineage(filesOf(run), await importTrustedKey(pair.publicPem, 'pub'));
    expect(view.problems).toEqual([]);
    expect(view.state).toBe('checked');
    expect(view.slots.every((s) => s.files === 'ok' && s.signature === 'verified')).toBe(true);
    expect(view.chain[0]).toMatchObject({ step: 12, status: 'ok', slots: expect.arrayContaining(['latest']) });
    expect(view.chain.at(-1)).toMatchObject({ step: 0, status: 'root' });
    expect(view.chain.some((l) => l.slots.length === 0)).toBe(true);
    expect(view.chain.some((l) => l.via === 'resume')).toBe(true);
  });

  it('names a changed byte, another key, and a missing store entry; says "none" for a run without manifests', async () => {
    const files = filesOf(run);
    const state = new Uint8Array(await (files.get('checkpoints/latest/state.llmcp') as Blob).arrayBuffer());
    state[100] = (state[100] as number) ^ 1;
    files.set('checkpoints/latest/state.llmcp', new Blob([state]));
    const other = await importTrustedKey(generateSigningKeyPair('ed25519').publicPem, 'other');
    const view = await readLineage(files, other);
    expect(view.slots.find((s) => s.slot === 'latest')).toMatchObject({ files: 'mismatch', problem: expect.stringMatching(/checkpoints\/latest\/state\.llmcp: bytes \[0, \d+\) differ/) });
    expect(view.problems.some((p) => /signed by another key/.test(p))).toBe(true);
    const pruned = [...filesOf(run).keys()].filter((p) => p.startsWith('lineage/step_000004'));
    const withoutAncestor = filesOf(run);
    for (const p of pruned) withoutAncestor.delete(p);
    expect((await readLineage(withoutAncestor, null)).problems.join('\n')).toMatch(/names its parent of step 4 .* which is in no slot and not in lineage\//);
    const bare = new Map([...filesOf(run)].filter(([p]) => !p.endsWith('.sig')));
    expect((await readLineage(bare, null)).state).toBe('none');
  });
});

