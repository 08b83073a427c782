import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatLossRecord, LossLog, parseLossLog, planLossLogResume } from './loss-log.ts';
import { tempDir } from '../test/helpers/run-fixture.ts';

const record = (step: number) => ({ step, loss: 1 / (step + 0.1), learningRate: 0.04, gradientNorm: Math.PI * step, clipped: step % 2 === 0, tokens: 4 });

describe('formatLossRecord', () => {
  it('writes the deterministic fields in a fixed order with exact f64 decimals, timing apart', () => {
    const line = formatLossRecord({ step: 1, loss: 2.453998177776215, learningRate: 0.04, gradientNorm: 4.05136176268048, clipped: true, tokens: 4 }, null);
    expect(line).toBe('{"step":1,"loss":2.453998177776215,"learningRate":0.04,"gradientNorm":4.05136176268048,"clipped":true,"tokens":4}\n');
    const timed = formatLossRecord(record(2), { tokensPerSecond: 10, stepMs: 0.5, time: '2026-01-01T00:00:00.000Z' });
    const parsed = JSON.parse(timed) as Record<string, unknown>;
    expect(Object.keys(parsed)).toEqual(['step', 'loss', 'learningRate', 'gradientNorm', 'clipped', 'tokens', 'timing']);
    const { timing: _t, ...rest } = parsed;
    expect(JSON.stringify(rest)).toBe(formatLossRecord(record(2), null).trimEnd());
    expect(JSON.parse(formatLossRecord(record(3), null)).gradientNorm).toBe(Math.PI * 3);
  });
});

describe('LossLog', () => {
  it('appends one record per step and tracks length and SHA-256 of what it wrote', () => {
    const file = path.join(tempDir('llmcp-loss-'), 'loss.jsonl');
    const log = LossLog.create(file);
    for (let s = 1; s <= 3; s += 1) log.append(record(s), null);
    const pos = log.position();
    log.close();
    const bytes = readFileSync(file);
    expect(pos.records).toBe(3);
    expect(pos.bytes).toBe(bytes.length);
    expect(planLossLogResume(file, pos).orphanedRecords).toBe(0);
    expect(parseLossLog(new Uint8Array(bytes)).problem).toBeNull();
    expect(() => LossLog.resume(planLossLogResume(file, pos)).append(record(5), null)).toThrow(/step 5 appended after 3 records/);
  });

  it('cuts only the records a crash orphaned beyond the checkpoint and continues the hash', () => {
    const dir = tempDir('llmcp-loss-');
    const file = path.join(dir, 'loss.jsonl');
    const log = LossLog.create(file);
    log.append(record(1), null);
    log.append(record(2), null);
    const checkpoint = log.position();
    log.append(record(3), null);
    log.close();
    appendFileSync(file, '{"step":4,"lo'); // a torn write
    const before = readFileSync(file);
    const plan = planLossLogResume(file, checkpoint);
    expect(readFileSync(file)).toEqual(before); // planning changes nothing
    expect(plan.orphanedRecords).toBe(1);
    expect(plan.orphanedBytes).toBe(before.length - checkpoint.bytes);
    const resumed = LossLog.resume(plan);
    resumed.append(record(3), null);
    resumed.append(record(4), null);
    const after = resumed.position();
    resumed.close();

    const reference = path.join(dir, 'reference.jsonl');
    const straight = LossLog.create(reference);
    for (let s = 1; s <= 4; s += 1) straight.append(record(s), null);
    expect(straight.position()).toEqual(after);
    straight.close();
    expect(readFileSync(file)).toEqual(readFileSync(reference));
    expect(readFileSync(file).subarray(0, checkpoint.bytes)).toEqual(before.subarray(0, checkpoint.bytes));
  });

  it('refuses a log that is shorter than the checkpoint or whose prefix changed', () => {
    const file = path.join(tempDir('llmcp-loss-'), 'loss.jsonl');
    const log = LossLog.create(file);
    log.append(record(1), null);
    log.append(record(2), null);
    const pos = log.position();
    log.close();
    const text = readFileSync(file, 'utf8');
    writeFileSync(file, text.slice(0, 10));
    expect(() => planLossLogResume(file, pos)).toThrow(/history was lost/);
    writeFileSync(file, text.replace('"clipped":false', '"clipped":true '));
    expect(() => planLossLogResume(file, pos)).toThrow(/changed since the checkpoint/);
    expect(() => planLossLogResume(path.join(path.dirname(file), 'none.jsonl'), pos)).toThrow(/missing/);
  });
});

describe('parseLossLog', () => {
  it('reports the first gap or bad line', () => {
    const enc = new TextEncoder();
    const ok = formatLossRecord(record(1), null) + formatLossRecord(record(2), null);
    expect(parseLossLog(enc.encode(ok)).records).toHaveLength(2);
    expect(parseLossLog(enc.encode(formatLossRecord(record(1), null) + formatLossRecord(record(3), null))).problem).toMatch(/has step 3, expected 2/);
    expect(parseLossLog(enc.encode(`${ok}{"x`)).trailingBytes).toBe(3);
    expect(parseLossLog(enc.encode('nope\n')).problem).toMatch(/not valid JSON/);
  });
});

describe('evaluation records', () => {
  const evaluation = (step: number) => ({ step, validationLoss: 2 + 1 / (step + 1), trainingLoss: null });

  it('are written after the training record of their step, covered by the position, and counted apart from records', () => {
    const file = path.join(tempDir('llmcp-loss-'), 'loss.jsonl');
    const log = LossLog.create(file);
    log.appendEvaluation(evaluation(0));
    log.append(record(1), null);
    log.append(record(2), null);
    log.appendEvaluation(evaluation(2));
    expect(() => log.appendEvaluation(evaluation(2))).toThrow(/evaluation record for step 2 appended twice/);
    expect(() => log.appendEvaluation(evaluation(1))).toThrow(/evaluation record for step 1 appended after the training record of step 2/);
    const pos = log.position();
    log.append(record(3), null); // beyond the checkpoint: orphaned by a crash
    log.appendEvaluation(evaluation(3));
    log.close();
    expect(pos).toMatchObject({ records: 2 });
    const bytes = new Uint8Array(readFileSync(file));
    const parsed = parseLossLog(bytes);
    expect(parsed.problem).toBeNull();
    expect(parsed.records.map((r) => r.step)).toEqual([1, 2, 3]);
    expect(parsed.evaluations.map((e) => e.step)).toEqual([0, 2, 3]);
    const plan = planLossLogResume(file, pos);
    expect(plan).toMatchObject({ orphanedRecords: 1 });
    expect(plan.orphanedBytes).toBe(bytes.length - pos.bytes);
    // The kept prefix ends with step 2's evaluation: the resumed log refuses a second one, takes step 3.
    const resumed = LossLog.resume(plan, true);
    expect(() => resumed.appendEvaluation(evaluation(2))).toThrow(/twice/);
    resumed.append(record(3), null);
    resumed.close();
    expect(parseLossLog(new Uint8Array(readFileSync(file))).evaluations.map((e) => e.step)).toEqual([0, 2]);
  });

  it('follow the continuity rule: the step of the training record before, at most one per step', () => {
    const enc = new TextEncoder();
    const line = (step: number) => `{"step":${step},"validationLoss":2.5,"trainingLoss":null}\n`;
    const t = (step: number) => formatLossRecord(record(step), null);
    expect(parseLossLog(enc.encode(line(0) + t(1) + line(1) + t(2))).problem).toBeNull();
    expect(parseLossLog(enc.encode(t(1) + line(2))).problem).toMatch(/line 2 \(byte \d+\) is an evaluation of step 2, but the training record before it is of step 1/);
    expect(parseLossLog(enc.encode(t(1) + line(1) + line(1))).problem).toMatch(/line 3 .* is a second evaluation record of step 1/);
    expect(parseLossLog(enc.encode(t(1) + '{"step":1,"validationLoss":"x","trainingLoss":null}\n')).problem).toMatch(/line 2 .*"validationLoss" is not a finite number/);
    // A log of an old run, without evaluation records, is continuous as before.
    expect(parseLossLog(enc.encode(t(1) + t(2) + t(3))).problem).toBeNull();
  });
});
