/**
 * `llmcp eval` and `llmcp report` against the reference's printed reports
 * (test/fixtures/reference): every line the two share is compared as text.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { llmcp, PACKAGE_DIR, tempDir } from './helpers.ts';

const reference = (name: string): Map<string, string> => {
  const lines = readFileSync(path.join(PACKAGE_DIR, 'test/fixtures/reference', name), 'utf8').trimEnd().split('\n');
  return new Map(lines.map((l) => [l.slice(0, l.indexOf('=')), l]));
};
const printed = (stdout: string): Map<string, string> => new Map(stdout.trimEnd().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l]));
const fields = (line: string | undefined): Map<string, string> =>
  new Map((line ?? '').slice((line ?? '').indexOf('=') + 1).split(' ').map((f) => [f.slice(0, f.indexOf(':')), f.slice(f.indexOf(':') + 1)]));

const tmp = tempDir('llmcp-eval-');
afterAll(() => tmp.cleanup());

describe('llmcp eval', () => {
  const run = path.join(tmp.dir, 'ch34');
  let out = '';
  beforeAll(async () => {
    expect((await llmcp(['train', run, '--preset', 'ch34', '--plain'])).code).toBe(0);
    const r = await llmcp(['eval', run]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    out = r.stdout;
  }, 60_000);

  it("prints the reference's chapter-34 selection, baseline, test, decoder, bigram and comparison lines", () => {
    const want = reference('ch34-expected.txt');
    const got = printed(out);
    for (const key of ['selection', 'baseline', 'test', 'decoder', 'bigram', 'comparison']) expect(got.get(key), key).toBe(want.get(key));
  });

  it('names the inputs by content identity where the reference names its fixture (provenance)', () => {
    const got = fields(printed(out).get('provenance'));
    expect(got.get('corpus')).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(got.get('vocabulary')).toBe('5');
    expect(got.get('context')).toBe('2');
  });

  it('evaluates a named slot and refuses options meant for checkpoint files', async () => {
    expect(printed((await llmcp(['eval', `${run}:latest`])).stdout).get('decoder')).toBe(reference('ch34-expected.txt').get('decoder'));
    const r = await llmcp(['eval', run, '--batch-size', '2']);
    expect(r.code).toBe(2);
  });

  it('prints a JSON document with --json', async () => {
    const r = await llmcp(['eval', run, '--json']);
    const doc = JSON.parse(r.stdout) as { schema: string; evaluation: { decoder: { meanNll: number; parametersUnchanged: boolean }; test: { fingerprint: string } } };
    expect(doc.schema).toBe('llmcp-eval/1');
    expect(doc.evaluation.decoder.meanNll.toFixed(6)).toBe('1.607679');
    expect(doc.evaluation.decoder.parametersUnchanged).toBe(true);
    expect(doc.evaluation.test.fingerprint).toBe('fnv1a64:dac4bb4d76beeb59');
  });
});

describe('llmcp report', () => {
  const run = path.join(tmp.dir, 'ch39');
  let out = '';
  beforeAll(async () => {
    expect((await llmcp(['train', run, '--preset', 'ch39', '--plain'])).code).toBe(0);
    const r = await llmcp(['report', run, '--replay']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    out = r.stdout;
  }, 120_000);

  it("prints the reference's chapter-39 lines", () => {
    const want = reference('ch39-expected.txt');
    const got = printed(out);
    for (const key of ['data', 'tokenizer', 'model', 'training', 'test', 'slot_metric', 'transition_metric', 'generation', 'history']) {
      expect(got.get(key), key).toBe(want.get(key));
    }
  });

  it("matches the reference's checkpoint line in every field but the checksum (glibc's FMA-path exp moves low bits)", () => {
    const want = fields(reference('ch39-expected.txt').get('checkpoint'));
    const got = fields(printed(out).get('checkpoint'));
    expect([...got.keys()]).toEqual([...want.keys()]);
    for (const [key, value] of want) if (key !== 'checksum') expect(got.get(key), key).toBe(value);
    expect(got.get('checksum')).toMatch(/^fnv1a64:[0-9a-f]{16}$/);
  });

  it("matches the reference's evidence line except its scope, which names the reference's fixture", () => {
    const want = fields(reference('ch39-expected.txt').get('evidence'));
    const got = fields(printed(out).get('evidence'));
    for (const [key, value] of want) if (key !== 'scope') expect(got.get(key), key).toBe(value);
  });

  it('evaluates the bare checkpoint file on the corpus and split to the same slot metric', async () => {
    const corpusDir = path.join(PACKAGE_DIR, '../data/corpora/tiny-bilingual');
    const file = path.join(run, 'checkpoints', 'best', 'state.llmcp');
    const r = await llmcp(['eval', file, '--corpus', path.join(corpusDir, 'tiny-bilingual-corpus.json'), '--split', path.join(corpusDir, 'splits.json')]);
    expect(r.code).toBe(0);
    expect(printed(r.stdout).get('slot_metric')).toBe(reference('ch39-expected.txt').get('slot_metric'));
    expect(printed(r.stdout).get('selection')).toBe('selection=step:32 validation_loss:unknown criterion:validation-only test_partition_rejected:true');
    expect((await llmcp(['eval', file])).code).toBe(2);
  });

  it('refuses a directory that is not a run', async () => {
    const r = await llmcp(['report', tmp.dir]);
    expect(r.code).not.toBe(0);
  });
});
