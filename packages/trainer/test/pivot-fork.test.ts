/**
 * Pivot and fork end to end, with their records; after a pivot
 * the loss history is continuous.
 */
import { appendFileSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { isTrainerError } from '../src/errors.ts';
import { decodeJob } from '../src/job.ts';
import { parseLossLog } from '../src/loss-log.ts';
import { forkRun, pivotRun } from '../src/pivot.ts';
import { resumeRun } from '../src/run.ts';
import { readRunManifest } from '../src/run-manifest.ts';
import { runStatus, verifyRun } from '../src/status.ts';
import { smallBpe } from './helpers/configs.ts';
import { runDirectory, stoppedRun, trainedRun } from './helpers/run-fixture.ts';
import { finalBytes, sameBytes, snapshotTree, type FinalBytes } from './helpers/run-files.ts';

const config = smallBpe();

async function stoppedAt(step: number): Promise<string> {
  return (await stoppedRun(config, step)).dir;
}

const lossOf = (dir: string) => parseLossLog(new Uint8Array(readFileSync(path.join(dir, 'loss.jsonl'))));

let reference: FinalBytes;
beforeAll(async () => {
  reference = finalBytes(await trainedRun(config));
});

describe('resumeRun with a new step budget', () => {
  it('extends an interrupted run as a recorded pivot of steps: the same bytes as pivotRun, then resumeRun', async () => {
    const longer = smallBpe({ steps: 50 });
    const viaPivot = await stoppedAt(20);
    await pivotRun(viaPivot, { config: longer, changes: ['steps'] });
    await resumeRun(viaPivot, { saveMode: 'inline' });
    const dir = await stoppedAt(20);
    const events: string[] = [];
    const result = await resumeRun(dir, { steps: 50, saveMode: 'inline', onEvent: (e) => events.push(e.type === 'budget-changed' ? e.description : e.type) });
    expect(result).toMatchObject({ status: 'completed', step: 50, totalSteps: 50, budgetChange: { step: 20, fromSteps: 40, toSteps: 50, pivot: 1 } });
    expect(events[0]).toMatch(/^extending from 40 to 50 steps; the schedule is constant: updates 21 to 50 use learning rate 0\.04$/);
    expect(readRunManifest(dir)?.events.map((e) => e.event)).toEqual(['created', 'stopped', 'pivot', 'resumed', 'completed']);
    expect(readRunManifest(dir)?.events[2]).toMatchObject({ event: 'pivot', pivot: 1, step: 20, changed: ['steps'] });
    expect(sameBytes(finalBytes(viaPivot), finalBytes(dir))).toBeNull();
    // The loss history runs on without a gap, the first 20 steps as the uninterrupted run's.
    expect(lossOf(dir).problem).toBeNull();
    expect(lossOf(dir).records.map((r) => r.step)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  });

  it('refuses steps with any other change (naming all of them) and a budget below the checkpoint, changing nothing', async () => {
    const dir = await stoppedAt(20);
    const before = snapshotTree(dir);
    const both = await resumeRun(dir, { config: smallBpe({ steps: 50, optimizer: { clipNorm: 0.5 } }) }).catch((e: unknown) => e);
    expect(both).toMatchObject({ code: 'TRAINER_CONFIG_CHANGED', fields: ['optimizer.clipNorm', 'steps'] });
    expect((both as Error).message).toMatch(/optimizer\.clipNorm, steps changed; a resume changes only the step budget by itself; apply these changes with a pivot/);
    const below = await resumeRun(dir, { steps: 10 }).catch((e: unknown) => e);
    expect(below).toMatchObject({ code: 'TRAINER_CONFIG_INVALID', fields: ['steps'] });
    expect(snapshotTree(dir)).toEqual(before);
  });
});

describe('pivotRun', () => {
  it('continues weights, moments and the loss history under a declared new policy, archiving samples and policy state', async () => {
    const dir = await stoppedAt(20);
    const before = readFileSync(path.join(dir, 'loss.jsonl'));
    appendFileSync(path.join(dir, 'loss.jsonl'), '{"step":21,"loss":9,"learningRate":0.04,"gradientNorm":1,"clipped":false,"tokens":512}\n'); // orphaned by a crash
    const samplesBefore = readFileSync(path.join(dir, 'samples.json'));
    const next = smallBpe({ steps: 50, schedule: { kind: 'constant', rate: 0.02 } });
    const result = await pivotRun(dir, { config: next, changes: ['steps', 'schedule'], reason: 'longer, gentler' });
    expect(result).toMatchObject({ pivot: 1, step: 20, slot: 'latest', changed: ['schedule.rate', 'steps'], unchanged: [], archive: path.join('archive', 'pivot-1') });
    expect(readdirSync(path.join(dir, 'archive', 'pivot-1')).sort()).toEqual(['config.json', 'job.json', 'samples.json']);
    expect(readFileSync(path.join(dir, 'archive', 'pivot-1', 'samples.json'))).toEqual(samplesBefore);
    expect(existsSync(path.join(dir, 'samples.json'))).toBe(false);
    expect(readFileSync(path.join(dir, 'loss.jsonl'))).toEqual(before); // the orphan was cut, nothing before it touched
    const pivotEvent = readRunManifest(dir)?.events.find((e) => e.event === 'pivot');
    expect(pivotEvent).toMatchObject({ pivot: 1, step: 20, changed: ['schedule.rate', 'steps'], reason: 'longer, gentler' });

    const resumed = await resumeRun(dir, { config: next, saveMode: 'inline' });
    expect(resumed).toMatchObject({ status: 'completed', step: 50 });
    const log = lossOf(dir);
    expect(log.problem).toBeNull();
    expect(log.records.map((r) => r.step)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    // The first 20 records are the uninterrupted run's, byte for byte.
    expect(readFileSync(path.join(dir, 'loss.jsonl')).subarray(0, before.length)).toEqual(reference.loss.subarray(0, before.length));
    expect(log.records.slice(20).every((r) => r.learningRate === 0.02)).toBe(true);
    expect(existsSync(path.join(dir, 'samples.json'))).toBe(true);
    expect(runStatus(dir)).toMatchObject({ state: 'complete', step: 50, totalSteps: 50, pivots: 1, lossRecords: 50 });
    expect((await verifyRun(dir)).ok).toBe(true);
  });

  it('refuses undeclared and non-policy changes without touching the run', async () => {
    const dir = await stoppedAt(10);
    const before = snapshotTree(dir);
    const attempt = async (next: ReturnType<typeof smallBpe>, changes: string[]): Promise<{ code: string; message: string; fields: readonly string[] }> => {
      try {
        await pivotRun(dir, { config: next, changes });
      } catch (e) {
        if (!isTrainerError(e)) throw e;
        return { code: e.code, message: e.message, fields: e.fields ?? [] };
      }
      throw new Error('expected a refusal');
    };
    const undeclared = await attempt(smallBpe({ steps: 60, optimizer: { clipNorm: 0.5 } }), ['steps']);
    expect(undeclared).toMatchObject({ code: 'TRAINER_CONFIG_CHANGED', fields: ['optimizer.clipNorm'] });
    expect(undeclared.message).toMatch(/not declared: optimizer\.clipNorm/);
    const structural = await attempt(smallBpe({ model: { width: 8 } }), ['model.width']);
    expect(structural).toMatchObject({ code: 'TRAINER_CONFIG_CHANGED', fields: ['model.width'] });
    expect(structural.message).toMatch(/only policy fields/);
    expect(snapshotTree(dir)).toEqual(before);
  });
});

describe('forkRun', () => {
  it('copies a checkpoint into a new run with its own config and lineage in both manifests', async () => {
    const source = await stoppedAt(22);
    const target = runDirectory('fork');
    const branch = smallBpe({ schedule: { kind: 'constant', rate: 0.01 } });
    const forkedState = decodeJob(new Uint8Array(readFileSync(path.join(source, 'checkpoints', 'step_000020', 'job.json')))).state.checksum;
    const fork = await forkRun(source, target, { slot: 'step_000020', config: branch, changes: ['schedule'], reason: 'audit: lower rate' });
    expect(fork).toMatchObject({ slot: 'step_000020', step: 20, changed: ['schedule.rate'] });
    const targetEvents = readRunManifest(target)?.events ?? [];
    expect(targetEvents.map((e) => e.event)).toEqual(['created', 'forked-from']);
    expect(targetEvents[1]).toMatchObject({ run: path.resolve(source), slot: 'step_000020', step: 20, changed: ['schedule.rate'] });
    expect(readRunManifest(source)?.events.at(-1)).toMatchObject({ event: 'forked-to', run: path.resolve(target), runId: fork.runId, step: 20 });
    // Both events name the forked state by its LLMCP35 checksum (llmcp-job/3 records no SHA-256 of it).
    for (const e of [targetEvents[1], readRunManifest(source)?.events.at(-1)]) {
      expect(e).toMatchObject({ stateChecksum: forkedState });
      expect(e).not.toHaveProperty('stateSha256');
    }
    const sourceLoss = readFileSync(path.join(source, 'loss.jsonl'));
    const targetLoss = readFileSync(path.join(target, 'loss.jsonl'));
    expect(lossOf(target).records).toHaveLength(20);
    expect(targetLoss).toEqual(sourceLoss.subarray(0, targetLoss.length));

    const resumed = await resumeRun(target, { saveMode: 'inline' });
    expect(resumed).toMatchObject({ status: 'completed', step: 40, resumedFrom: 'latest' });
    expect(lossOf(target).records.slice(20).every((r) => r.learningRate === 0.01)).toBe(true);
    expect((await verifyRun(target)).ok).toBe(true);
  });

  it('a fork with the same config continues exactly like the uninterrupted run', async () => {
    const source = await stoppedAt(20);
    const target = runDirectory('fork');
    await forkRun(source, target);
    await resumeRun(target, { saveMode: 'inline' });
    expect(sameBytes(reference, finalBytes(target))).toBeNull();
  });
});
