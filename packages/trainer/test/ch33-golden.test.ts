/**
 * The ch33 fixture as a trainer run reproduces the reference: every loss
 * record and evaluation of ../../../docs/spec/training.md, the golden 6330-byte checkpoint as both
 * `best/` (the selected step 8) and `latest/`, and the ch36 sample audit
 * ([4, 4], stopped at the context limit) from the checkpoint's own RNG state.
 * Run with background saves in the worker thread, as in real use.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { decodeJob } from '../src/job.ts';
import { parseLossLog } from '../src/loss-log.ts';
import { trainRun, type RunResult } from '../src/run.ts';
import { verifyRun } from '../src/status.ts';
import type { TrainerEvent } from '../src/events.ts';
import { ch33, GOLDEN } from './helpers/configs.ts';
import { tempDir } from './helpers/run-fixture.ts';

const bits = (x: number): string => {
  const v = new DataView(new ArrayBuffer(8));
  v.setFloat64(0, x);
  return v.getBigUint64(0).toString(16).padStart(16, '0');
};

// ../../../docs/spec/training.md §5 and §7 (shortest round-trip decimals are exact f64 values).
const LOSSES = [2.453998177776215, 1.6367322789938998, 1.8096883681952716, 1.1164941983832595, 1.1692238060030815, 1.771532993887185, 1.0192718846021271, 1.6981702634659523];
const NORMS = [4.05136176268048, 3.11335190523836, 1.8619596646719843, 1.5357914185471035, 1.6973764661255575, 1.7069534040165908, 1.1684972288402495, 1.4905352765055722];
const EVALUATIONS = [
  { step: 0, trainingLoss: 2.095016344382695, validationLoss: 1.9181674945716778 },
  { step: 2, trainingLoss: 1.5620261708206766, validationLoss: 1.6963097905270819 },
  { step: 4, trainingLoss: 1.453259160787589, validationLoss: 1.6877878115298472 },
  { step: 6, trainingLoss: 1.3698318719353506, validationLoss: 1.6425992784868235 },
  { step: 8, trainingLoss: 1.3228973134398792, validationLoss: 1.5952972621720571 },
];

describe('trainRun on the ch33 fixture config', () => {
  const dir = path.join(tempDir(), 'ch33');
  let result: RunResult;
  const events: TrainerEvent[] = [];
  beforeAll(async () => {
    result = await trainRun({ runDir: dir, config: ch33(), onEvent: (e) => events.push(e) });
  });

  it('selects step 8 and writes the golden 6330-byte checkpoint as best/ and latest/', async () => {
    expect(result).toMatchObject({ status: 'completed', step: 8, best: { step: 8, validationLoss: 1.5952972621720571 } });
    for (const slot of ['best', 'latest', 'step_000008']) {
      const bytes = readFileSync(path.join(dir, 'checkpoints', slot, 'state.llmcp'));
      expect(bytes.length).toBe(6330);
      expect(Buffer.compare(bytes, GOLDEN), slot).toBe(0);
    }
  });

  it('logs every step with the reference loss, gradient norm, clip decision and rate, bit for bit', async () => {
    const log = parseLossLog(new Uint8Array(readFileSync(path.join(dir, 'loss.jsonl'))));
    expect(log.problem).toBeNull();
    expect(log.records.map((r) => bits(r.loss))).toEqual(LOSSES.map(bits));
    expect(log.records.map((r) => bits(r.gradientNorm))).toEqual(NORMS.map(bits));
    expect(log.records.map((r) => r.clipped)).toEqual(Array(8).fill(true));
    expect(log.records.map((r) => r.learningRate)).toEqual([0.04, 0.04, 0.025, 0.025, 0.015, 0.015, 0.008, 0.008]);
    expect(log.records.every((r) => r.timing === undefined)).toBe(true);
  });

  it('records the five evaluations of training.md §7 in job.json', async () => {
    const job = decodeJob(new Uint8Array(readFileSync(path.join(dir, 'checkpoints', 'latest', 'job.json'))));
    expect(job.evaluations.map((e) => [e.step, bits(e.trainingLoss ?? Number.NaN), bits(e.validationLoss)])).toEqual(
      EVALUATIONS.map((e) => [e.step, bits(e.trainingLoss), bits(e.validationLoss)]),
    );
    expect(job.sampling.checkpointState).toBe('0x9e3779b97f4a7c38');
    expect(job.phase).toEqual({ validated: true, audited: true });
    expect(job.nextBatch).toMatch(/^fnv1a64:[0-9a-f]{16}$/);
  });

  it('writes the ch36 sample audit from the checkpoint RNG state', async () => {
    const samples = JSON.parse(readFileSync(path.join(dir, 'samples.json'), 'utf8')) as Record<string, unknown>;
    expect(samples).toMatchObject({ step: 8, rngState: '0x9e3779b97f4a7c38', samples: [{ promptTokens: [0], tokens: [4, 4], stopReason: 'context-limit', text: '44' }] });
    const job = decodeJob(new Uint8Array(readFileSync(path.join(dir, 'checkpoints', 'latest', 'job.json'))));
    expect(job.sampling.nextState).toBe(samples.rngStateAfter);
    expect(job.sampling.nextState).not.toBe(job.sampling.checkpointState);
  });

  it('publishes best at every strictly better validation and saves in the background', async () => {
    const bestSaves = events.filter((e) => e.type === 'checkpoint' && e.reason === 'best').map((e) => (e as { step: number }).step);
    expect(bestSaves).toEqual([0, 2, 4, 6]);
    expect(events.filter((e) => e.type === 'checkpoint-saved').length).toBe(5);
    expect((await verifyRun(dir))).toMatchObject({ ok: true, resumeSlot: 'latest', lossLog: { ok: true, records: 8, orphaned: 0 } });
  });
});
