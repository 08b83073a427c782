/**
 * Plain text as a new user brings it: one short record per line. Packed
 * windows train on every document (none is dropped for being shorter than a
 * window), the documents mode says what it leaves out, the plan of a dry run
 * counts it all without writing, and an empty partition says why and what to
 * change.
 */
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig, type TrainerConfig } from '../src/config.ts';
import { planRun } from '../src/dry-run.ts';
import { isTrainerError } from '../src/errors.ts';
import { prepareInputs } from '../src/inputs.ts';
import { createEngine } from '../src/llmcp-engine.ts';
import { sizePresetConfigInput } from '../src/presets.ts';
import { runPlanOf } from '../src/run-plan.ts';
import { tempDir } from './helpers/run-fixture.ts';

/** Many short records, one a line; every `longEvery`-th is long (0: none). */
function textFile(lines: number, options: { readonly name?: string; readonly longEvery?: number } = {}): string {
  const file = path.join(tempDir(), options.name ?? 'records.txt');
  const long = options.longEvery ?? 25;
  const words = (i: number, n: number): string => Array.from({ length: n }, (_, k) => `w${(i * 31 + k * 17) % 997}`).join(' ');
  writeFileSync(file, Array.from({ length: lines }, (_, i) => `Record ${i} ${words(i, long > 0 && i % long === 0 ? 60 : i % 7)} end.`).join('\n'));
  return file;
}

function config(file: string, patch: Record<string, unknown> = {}): TrainerConfig {
  const input = sizePresetConfigInput({ source: { kind: 'text', path: file }, size: 'tiny', steps: 20 }) as { data: Record<string, unknown> };
  return parseConfig({ ...input, ...patch, data: { ...input.data, ...(patch.data as object | undefined) }, threads: 1 });
}

async function refusal(work: () => Promise<unknown>): Promise<{ code: string; message: string; fields: readonly string[] }> {
  try {
    await work();
  } catch (e) {
    if (!isTrainerError(e)) throw e;
    return { code: e.code, message: e.message, fields: e.fields ?? [] };
  }
  throw new Error('expected a refusal');
}

describe('a text source of one short record per line', () => {
  it('is read one document per line and packed: every document is trained on', async () => {
    const c = config(textFile(400));
    expect([c.data.windows, c.data.stride, c.data.source.kind === 'text' && c.data.source.testFraction]).toEqual(['packed', 32, 0.05]);
    const inputs = await prepareInputs(c, {});
    expect(inputs.textFiles.map((f) => [f.documents, f.documentCount])).toEqual([['lines', 400]]);
    const engine = await createEngine(c, inputs);
    try {
      const plan = runPlanOf(c, inputs, engine);
      expect(plan.documentsWithoutWindow).toBe(0);
      expect(plan.coveredTokens / plan.trainingTokens).toBeGreaterThanOrEqual(0.99);
      expect(plan.trainingTokens - plan.coveredTokens).toBeLessThan(33);
      // An epoch is one pass over the training tokens.
      expect(plan.stepsPerEpoch).toBe(Math.ceil(Math.floor((plan.trainingTokens - 1) / 32) / c.data.batchSize));
      expect(plan.partitions.test).toBeGreaterThan(0);
    } finally {
      await engine.dispose();
    }
  });

  it('in the documents mode, counts the documents too short for a window instead of dropping them silently', async () => {
    const c = config(textFile(400), { data: { windows: 'documents', stride: 1 } });
    const inputs = await prepareInputs(c, {});
    const engine = await createEngine(c, inputs);
    try {
      const plan = runPlanOf(c, inputs, engine);
      expect(plan.documentsWithoutWindow).toBeGreaterThan(plan.documents * 0.9);
      expect(plan.documentsWithoutWindow).toBeLessThan(plan.documents);
      expect(plan.coveredTokens + plan.tokensWithoutWindow).toBe(plan.trainingTokens);
      expect(plan.coveredTokens / plan.trainingTokens).toBeLessThan(0.8);
    } finally {
      await engine.dispose();
    }
  });

  it('refuses a documents-mode run whose train partition has no window, saying why and what to change', async () => {
    const c = config(textFile(400, { longEvery: 0 }), { data: { windows: 'documents', stride: 1 } });
    const r = await refusal(async () => createEngine(c, await prepareInputs(c, {})));
    expect(r.code).toBe('TRAINER_INPUT_INVALID');
    expect(r.message).toMatch(/^the train partition has no window of context length 32: its \d+ documents hold \d+ tokens, and none has the 33 a window needs; join short documents with --set data\.windows=packed, or shorten data\.contextLength$/);
  });

  it('says why a partition is empty and what to change: one document per file', async () => {
    const c = config(textFile(400), { data: { source: { kind: 'text', path: textFile(400, { name: 'one.txt' }), documents: 'file' } } });
    const r = await refusal(() => prepareInputs(c, {}));
    expect(r.code).toBe('TRAINER_INPUT_INVALID');
    expect(r.message).toMatch(/^the (validation|train) partition is empty: the text corpus gave 1 document \(data\.source\.documents 'file'\)/);
    expect(r.message).toContain('--set data.source.documents=lines');
    expect(r.fields).toContain('data.source.documents');
  });

  it('refuses packing with a tokenizer that has no end-of-document token', async () => {
    const c = parseConfig({ data: { source: { kind: 'inline', documents: [{ id: 'a', partition: 'train', text: '0101' }, { id: 'b', partition: 'validation', text: '1010' }] }, windows: 'packed', contextLength: 2 }, tokenizer: { kind: 'literal', pieces: ['0', '1'] }, threads: 1 });
    const r = await refusal(async () => createEngine(c, await prepareInputs(c, {})));
    expect(r).toMatchObject({ code: 'TRAINER_INPUT_INVALID', fields: ['data.windows'] });
  });
});

describe('planRun', () => {
  it('reads, tokenizes and measures with the injected clock and memory probe, and writes nothing', async () => {
    const file = textFile(300);
    let t = 0;
    const c = config(file);
    const plan = await planRun(c, {
      measureSteps: 3,
      now: () => {
        t += 5;
        return t;
      },
      peakResidentBytes: () => 100_000_000,
    });
    // Each timed piece spans one tick of 5 ms.
    expect(plan.stepMs).toBe(5);
    expect(plan.estimatedSecondsPerEpoch).toBe((plan.stepsPerEpoch * 5) / 1000);
    expect(plan.evaluationPassMs).toBe(5 * plan.evaluation.validationBatches);
    expect(plan.peakMemoryBytes).toBe(100_000_000 + 3 * 8 * plan.parameters);
    expect(plan.coveredTokens / plan.trainingTokens).toBeGreaterThanOrEqual(0.99);
    expect(plan.estimatedSecondsTotal).toBe((c.steps * 5 + plan.evaluation.passes * plan.evaluationPassMs) / 1000);
    expect(existsSync(path.join(path.dirname(file), 'runs'))).toBe(false);
  });
});
