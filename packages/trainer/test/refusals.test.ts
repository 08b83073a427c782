/**
 * Resume refuses, with a clear message and without changing
 * anything on disk, a tampered job.json, a truncated state.llmcp, a job/state
 * pair from different checkpoints, a changed config (listing the fields), a
 * changed corpus with the same document count, a changed tokenizer with the
 * same vocabulary size, and a different implementation version.
 */
import { copyFileSync, mkdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checksumLabel, fnv1a64 } from '@llmcp/format';
import { BpeTokenizer } from '@llmcp/tokenizer';
import type { TrainerConfig } from '../src/config.ts';
import { isTrainerError } from '../src/errors.ts';
import { decodeJob, encodeJob, sealJob } from '../src/job.ts';
import { resumeRun } from '../src/run.ts';
import { BILINGUAL_CORPUS, BILINGUAL_SPLIT, ch33, smallBpe } from './helpers/configs.ts';
import { stoppedRun as stoppedRunFixture, tempDir } from './helpers/run-fixture.ts';
import { asWrittenBeforeManifests, snapshotTree } from './helpers/run-files.ts';

/** A run stopped after `stopAfter` whose only resume slot is latest/. */
async function stoppedRun(config: TrainerConfig, stopAfter: number): Promise<string> {
  return (await stoppedRunFixture(config, stopAfter)).dir;
}

/** Resumes, expects a refusal, and checks that nothing on disk changed. */
async function expectRefusal(dir: string, config: TrainerConfig | undefined, code: string, message: RegExp): Promise<{ fields: readonly string[] }> {
  const before = snapshotTree(dir);
  let error: unknown = null;
  try {
    await resumeRun(dir, { saveMode: 'inline', ...(config === undefined ? {} : { config }) });
  } catch (e) {
    error = e;
  }
  expect(isTrainerError(error), String(error)).toBe(true);
  const e = error as { code: string; message: string; fields?: readonly string[] };
  expect(e.code).toBe(code);
  expect(e.message).toMatch(message);
  expect(snapshotTree(dir)).toEqual(before);
  return { fields: e.fields ?? [] };
}

const jobFile = (dir: string, slot = 'latest'): string => path.join(dir, 'checkpoints', slot, 'job.json');
const stateFile = (dir: string, slot = 'latest'): string => path.join(dir, 'checkpoints', slot, 'state.llmcp');

describe('resumeRun refuses', () => {
  const config = ch33({ checkpoint: { keepSteps: 0 } });

  it('a tampered job.json (SHA-256 digest)', async () => {
    const dir = await stoppedRun(config, 3);
    writeFileSync(jobFile(dir), readFileSync(jobFile(dir), 'utf8').replace('"cursor": 3', '"cursor": 4'));
    await expectRefusal(dir, undefined, 'TRAINER_NO_CHECKPOINT', /latest: latest\/job\.json failed its SHA-256 digest check: stored sha256:[0-9a-f]{64}, computed sha256:[0-9a-f]{64}/);
  });

  it('a truncated state.llmcp', async () => {
    const dir = await stoppedRun(config, 3);
    truncateSync(stateFile(dir), 4000);
    await expectRefusal(dir, undefined, 'TRAINER_NO_CHECKPOINT', /latest\/state\.llmcp is not a valid LLMCP35 checkpoint: .*file length 4000/);
  });

  it('a job/state pair from different checkpoints', async () => {
    const dir = await stoppedRun(config, 3);
    copyFileSync(jobFile(dir, 'best'), jobFile(dir)); // best/ holds step 2
    await expectRefusal(dir, undefined, 'TRAINER_NO_CHECKPOINT', /latest: job\.json and state\.llmcp are not a pair: state file expected fnv1a64:[0-9a-f]{16} \(6330 bytes\) \(from job\.json\), found fnv1a64:[0-9a-f]{16} \(6330 bytes\)/);
  });

  it('a changed config, listing the changed fields', async () => {
    const dir = await stoppedRun(config, 3);
    const changed = ch33({ checkpoint: { keepSteps: 0 }, optimizer: { clipNorm: 0.5 }, sampling: { topK: 2 } });
    const { fields } = await expectRefusal(dir, changed, 'TRAINER_CONFIG_CHANGED', /optimizer\.clipNorm, sampling\.topK changed/);
    expect(fields).toEqual(['optimizer.clipNorm', 'sampling.topK']);
  });

  it('a different implementation version', async () => {
    const dir = await stoppedRun(config, 3);
    // An older implementation's checkpoint, from before provenance manifests.
    asWrittenBeforeManifests(dir);
    const job = decodeJob(new Uint8Array(readFileSync(jobFile(dir))));
    const older = sealJob({ ...job, inputs: { ...job.inputs, implementation: { ...job.inputs.implementation, id: 'llmcp-trainer/0+llmcp-math/0+LLMCP35/1', math: 'llmcp-math/0' } } });
    writeFileSync(jobFile(dir), encodeJob(older));
    await expectRefusal(dir, undefined, 'TRAINER_IMPLEMENTATION_CHANGED', /written by implementation llmcp-trainer\/0\+llmcp-math\/0\+LLMCP35\/1, this is /);
  });
});

describe('resumeRun refuses changed inputs that keep their sizes', () => {
  it('a changed corpus with the same document count (and a manifest updated to match it)', async () => {
    const data = tempDir();
    const corpus = path.join(data, 'corpus.json');
    const split = path.join(data, 'splits.json');
    copyFileSync(BILINGUAL_CORPUS, corpus);
    copyFileSync(BILINGUAL_SPLIT, split);
    const config = smallBpe({ data: { source: { kind: 'corpus', corpus, split } }, checkpoint: { keepSteps: 0 } });
    const dir = await stoppedRun(config, 12);
    const text = readFileSync(corpus, 'utf8');
    const edited = text.replace('counts three boats', 'counts four boats');
    expect(edited).not.toBe(text);
    writeFileSync(corpus, edited);
    const manifest = JSON.parse(readFileSync(split, 'utf8')) as { corpus_checksum: string };
    writeFileSync(split, readFileSync(split, 'utf8').replace(manifest.corpus_checksum, checksumLabel(fnv1a64(new TextEncoder().encode(edited)))));
    const { fields } = await expectRefusal(dir, undefined, 'TRAINER_INPUT_CHANGED', /corpus: content changed \(12 → 12 documents; sha256 [0-9a-f]{12}… → [0-9a-f]{12}…\)/);
    expect(fields).toContain('corpus');
  });

  it('a changed tokenizer with the same vocabulary size', async () => {
    const data = tempDir();
    mkdirSync(data, { recursive: true });
    const tokenizerFile = path.join(data, 'tokenizer.json');
    const pairs: [number, number][] = [
      [32, 208],
      [208, 176],
      [209, 130],
      [208, 181],
    ];
    writeFileSync(tokenizerFile, JSON.stringify(BpeTokenizer.fromPairs(pairs)));
    const config = smallBpe({ tokenizer: { kind: 'file', path: tokenizerFile }, checkpoint: { keepSteps: 0 } });
    const dir = await stoppedRun(config, 4);
    const reordered = BpeTokenizer.fromPairs([pairs[0], pairs[2], pairs[1], pairs[3]] as [number, number][]);
    expect(reordered.vocabularySize).toBe(262);
    writeFileSync(tokenizerFile, JSON.stringify(reordered));
    await expectRefusal(dir, undefined, 'TRAINER_INPUT_CHANGED', /tokenizer: identity changed \(vocabulary 262 → 262; sha256:/);
  });
});
