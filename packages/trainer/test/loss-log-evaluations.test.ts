/**
 * Evaluation records in loss.jsonl: each evaluation is its own record right
 * after the training record of its step, covered by the checkpoint's
 * position; run directories written before evaluation records existed still
 * resume (their history simply has none before the resume point).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../src/internal/canonical-json.ts';
import { decodeJob, encodeJob, sealJob } from '../src/job.ts';
import { parseLossLog } from '../src/loss-log.ts';
import { resumeRun, trainRun } from '../src/run.ts';
import { runStatus, verifyRun } from '../src/status.ts';
import { ch33 } from './helpers/configs.ts';
import { tempDir } from './helpers/run-fixture.ts';
import { asWrittenBeforeManifests } from './helpers/run-files.ts';

const config = ch33();

async function stoppedAt(dir: string, step: number): Promise<void> {
  const controller = new AbortController();
  await trainRun({
    runDir: dir,
    config,
    saveMode: 'inline',
    signal: controller.signal,
    onEvent: (e) => {
      if (e.type === 'step' && e.step === step) controller.abort();
    },
  });
}

describe('evaluation records in loss.jsonl', () => {
  it('follow the training record of their step, one per evaluation of job.json', async () => {
    const dir = path.join(tempDir(), 'run');
    await trainRun({ runDir: dir, config, saveMode: 'inline' });
    const text = readFileSync(path.join(dir, 'loss.jsonl'), 'utf8');
    const log = parseLossLog(new TextEncoder().encode(text));
    expect(log.problem).toBeNull();
    const job = decodeJob(new Uint8Array(readFileSync(path.join(dir, 'checkpoints', 'latest', 'job.json'))));
    expect(log.evaluations).toEqual(job.evaluations);
    // Step 0's evaluation opens the file; every other one follows its step's training record.
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^\{"step":0,"validationLoss":/);
    for (const [i, line] of lines.entries()) {
      if (i === 0 || !line.includes('"validationLoss"')) continue;
      expect(JSON.parse(lines[i - 1] as string).step).toBe(JSON.parse(line).step);
    }
    expect(job.lossLog).toMatchObject({ records: 8, bytes: Buffer.byteLength(text) });
    expect(runStatus(dir)).toMatchObject({ lossRecords: 8, lossEvaluations: job.evaluations.length });
    expect(await verifyRun(dir)).toMatchObject({ ok: true, lossLog: { records: 8, evaluations: job.evaluations.length, orphaned: 0 } });
  });

  it('an old run directory without evaluation records still resumes and verifies', async () => {
    const dir = path.join(tempDir(), 'old');
    await stoppedAt(dir, 3);
    // Rewrite the directory as an older trainer left it: no evaluation records, the checkpoint's position over that (and no manifests).
    asWrittenBeforeManifests(dir);
    const file = path.join(dir, 'loss.jsonl');
    const old = readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l !== '' && !l.includes('"validationLoss"'))
      .map((l) => `${l}\n`)
      .join('');
    writeFileSync(file, old);
    const jobFile = path.join(dir, 'checkpoints', 'latest', 'job.json');
    const job = decodeJob(new Uint8Array(readFileSync(jobFile)));
    expect(job.step).toBe(3);
    writeFileSync(jobFile, encodeJob(sealJob({ ...job, lossLog: { records: 3, bytes: Buffer.byteLength(old), sha256: `sha256:${sha256Hex(old)}` } })));

    const resumed = await resumeRun(dir, { saveMode: 'inline' });
    expect(resumed).toMatchObject({ status: 'completed', step: 8, resumedFrom: 'latest', lossRecordsCut: 0 });
    const log = parseLossLog(new Uint8Array(readFileSync(file)));
    expect(log.problem).toBeNull();
    expect(log.records.map((r) => r.step)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    // Evaluations after the resume point are logged; the ones before it are in job.json only.
    expect(log.evaluations.every((e) => e.step > 3)).toBe(true);
    expect(log.evaluations.length).toBeGreaterThan(0);
    expect((await verifyRun(dir)).ok).toBe(true);
  });
});
