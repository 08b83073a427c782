/**
 * The final evaluation (../../../docs/spec/tokenizer-and-data.md §5.2–5.3) reproduces the
 * reference's chapter-34 report on the ch34 fixture and chapter 39's test
 * section on the ch39 recipe, opens the test partition once, fits the bigram
 * on train only, and leaves the model's parameters and gradients bit for bit
 * as they were.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { decodeCheckpoint, SplitMix64, type CheckpointState } from '@llmcp/format';
import { inspectCheckpoint } from '@llmcp/format/inspect';
import { Decoder, generate, ln } from '@llmcp/model';
import { bundledCorpusFiles } from '@llmcp/data/node';
import { evaluateFinal } from '../src/final-evaluation.ts';
import { ch34Config, ch39Config } from '../src/presets.ts';
import { evaluateCheckpointFile, evaluateRun, type RunEvaluation } from '../src/run-evaluation.ts';
import { trainRun } from '../src/run.ts';
import { isTrainerError } from '../src/errors.ts';
import { goldenCheckpoint } from '../../../tools/fixtures.ts';
import { tempDir } from './helpers/run-fixture.ts';

const bits = (a: Float64Array): string => Array.from(new BigUint64Array(new Float64Array(a).buffer), (b) => b.toString(16)).join(',');

const tmp = { dir: tempDir() };

describe('evaluateRun on the ch34 fixture', () => {
  let result: RunEvaluation;
  beforeAll(async () => {
    const runDir = path.join(tmp.dir, 'ch34');
    await trainRun({ runDir, config: ch34Config() });
    result = await evaluateRun(runDir);
  }, 60_000);

  it('closes the selection at step 8 and scores the test documents once', () => {
    const e = result.evaluation;
    expect(e.selection.step).toBe(8);
    expect(e.selection.validationLoss?.toFixed(6)).toBe('1.595297');
    expect(e.test.documentIds).toEqual(['test-a', 'test-b']);
    expect([e.test.windows, e.test.batches, e.test.targets]).toEqual([12, 3, 24]);
    expect([e.test.accessesBefore, e.test.accesses]).toEqual([0, 1]);
    expect(e.test.fingerprint).toBe('fnv1a64:dac4bb4d76beeb59');
    expect([e.baseline.documents, e.baseline.transitions, e.baseline.alpha]).toEqual([2, 22, 1]);
  });

  it("gives the reference's decoder and bigram scores (its full-precision values)", () => {
    const e = result.evaluation;
    // The reference's ch34 unit test literals (it checks them at 1e-12; these are the exact values).
    expect(e.decoder.meanNll).toBe(1.6076794057966841);
    expect(e.decoder.perplexity).toBe(4.991215193147303);
    expect(e.bigram.meanNll).toBe(2.2367347707079044);
    expect(e.bigram.perplexity).toBe(9.362709927060473);
    expect(e.comparison.gap).toBe(0.6290553649112203);
    expect(e.comparison.lowerLoss).toBe('selected-decoder');
    expect(e.decoder.totalNll / e.decoder.targets).toBe(e.decoder.meanNll);
    expect(e.bigram.totalNll / e.bigram.targets).toBe(e.bigram.meanNll);
  });

  it("leaves the model's parameters and gradients bit for bit unchanged", async () => {
    const e = result.evaluation;
    expect([e.decoder.graphs, e.decoder.parametersUnchanged, e.decoder.gradientsUnchanged]).toEqual([0, true, true]);
    const state = result.state;
    const before = state.parameters.map((t) => bits(t.data));
    const again = await evaluateFinal({
      state,
      selection: e.selection,
      train: result.inputs.partitions.train.map((tokens, i) => ({ id: String(i), tokens })),
      test: result.inputs.partitions.test.map((tokens, i) => ({ id: result.inputs.documentIds.test[i] as string, tokens })),
      contextLength: 2,
      batchSize: 4,
    });
    expect(state.parameters.map((t) => bits(t.data))).toEqual(before);
    expect(again.decoder.meanNll).toBe(e.decoder.meanNll);
  });
});

describe('evaluateFinal', () => {
  const state: Pick<CheckpointState, 'decoder' | 'parameters'> = (() => {
    const golden = decodeCheckpoint(goldenCheckpoint());
    return { decoder: golden.decoder, parameters: golden.parameters };
  })();

  it('fits the bigram on the training documents only, one count per adjacent pair, never across documents', async () => {
    const e = await evaluateFinal({
      state,
      selection: { step: 8, validationLoss: null },
      train: [{ id: 'a', tokens: [0, 1, 0] }, { id: 'b', tokens: [2] }],
      test: [{ id: 't', tokens: [0, 1] }],
      contextLength: 1,
      batchSize: 4,
    });
    expect([e.baseline.documents, e.baseline.transitions]).toEqual([2, 2]);
    // p(1 | 0) = (1 + 1) / (1 + 1·5)
    expect(e.bigram.meanNll).toBe(-ln(2 / 6));
    expect(e.test.multiplicities).toEqual([{ slots: 1, positions: 1 }]);
  });

  it('refuses a test partition without a window and a context beyond the model', async () => {
    const base = { state, selection: { step: 8, validationLoss: null }, train: [{ id: 'a', tokens: [0, 1, 2] }], batchSize: 4 };
    const refused = async (p: Promise<unknown>): Promise<string> => p.then(() => 'accepted', (e: unknown) => (isTrainerError(e) ? e.code : String(e)));
    expect(await refused(evaluateFinal({ ...base, test: [{ id: 't', tokens: [0] }], contextLength: 2 }))).toBe('TRAINER_INPUT_INVALID');
    expect(await refused(evaluateFinal({ ...base, test: [{ id: 't', tokens: [0, 1, 2, 3] }], contextLength: 3 }))).toBe('TRAINER_INPUT_INVALID');
  });
});

describe('the ch39 preset', () => {
  const runDir = path.join(tmp.dir, 'ch39');
  let result: RunEvaluation;
  beforeAll(async () => {
    const r = await trainRun({ runDir, config: ch39Config() });
    expect(r.best?.step).toBe(32);
    result = await evaluateRun(runDir);
  }, 120_000);

  it("writes a checkpoint with the reference's structure (30994 bytes, header 2418, 34 records, step 32, RNG 38)", () => {
    const bytes = new Uint8Array(readFileSync(path.join(runDir, 'checkpoints', 'best', 'state.llmcp')));
    const inspection = inspectCheckpoint(bytes);
    expect(bytes.length).toBe(30994);
    expect(inspection.headerBytes).toBe(2418n);
    expect(inspection.descriptors.length).toBe(34);
    const state = decodeCheckpoint(bytes);
    expect([state.selectedStep, state.optimizer.step, state.samplingRngState]).toEqual([32n, 32n, 38n]);
    expect(state.parameters.reduce((n, t) => n + t.data.length, 0)).toBe(1188);
  });

  it('generates from the ch39 model with the key/value cache to the bits of the uncached path (every prompt and logit row)', () => {
    const state = decodeCheckpoint(new Uint8Array(readFileSync(path.join(runDir, 'checkpoints', 'best', 'state.llmcp'))));
    const model = Decoder.fromCheckpoint(state);
    const V = state.decoder.vocabularySize;
    const bits = (a: Float64Array): string => Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('hex');
    let rows = 0;
    for (let first = 0; first < V; first += 1) {
      for (const mode of [{ kind: 'greedy' }, { kind: 'temperature', temperature: 0.8, topK: 4 }] as const) {
        const run = (cache: boolean) => generate(model, { prompt: [first], mode, rng: new SplitMix64(38n), maxNewTokens: state.decoder.maxPositions - 1, cache });
        const cached = run(true);
        const uncached = run(false);
        expect(cached.cached).toBe(true);
        expect(cached.tokens).toEqual(uncached.tokens);
        expect(cached.steps.map((st) => [bits(st.logits), String(st.rngStateBefore)])).toEqual(uncached.steps.map((st) => [bits(st.logits), String(st.rngStateBefore)]));
        rows += cached.steps.length;
      }
    }
    expect(rows).toBeGreaterThan(V);
  });

  it("reproduces chapter 39's test section", () => {
    const e = result.evaluation;
    expect(e.test.documentIds).toEqual(['en-winter-window', 'ru-winter-window']);
    expect([e.test.windows, e.test.batches, e.test.targets, e.test.transitions]).toEqual([436, 4, 1744, 442]);
    expect(e.test.multiplicities.map((m) => `${m.slots}x${m.positions}`).join(',')).toBe('1x4,2x4,3x4,4x430');
    expect(e.test.fingerprint).toBe('fnv1a64:77b836869f848986');
    expect(e.decoder.meanNll.toFixed(9)).toBe('3.866087547');
    expect(e.decoder.perplexity.toFixed(9)).toBe('47.755180205');
    expect(e.bigram.meanNll.toFixed(9)).toBe('3.981342714');
    expect(e.bigram.perplexity.toFixed(9)).toBe('53.588940583');
    expect(e.comparison.gap.toFixed(9)).toBe('0.115255167');
    expect([e.decoder.parametersUnchanged, e.decoder.gradientsUnchanged]).toEqual([true, true]);
  });

  it('evaluates the bare checkpoint file on the corpus to the same bits', async () => {
    const [corpus, split] = bundledCorpusFiles('tiny-bilingual');
    const { evaluation } = await evaluateCheckpointFile(path.join(runDir, 'checkpoints', 'best', 'state.llmcp'), { corpus, split });
    expect(evaluation.decoder.meanNll).toBe(result.evaluation.decoder.meanNll);
    expect(evaluation.bigram.meanNll).toBe(result.evaluation.bigram.meanNll);
    expect(evaluation.test.fingerprint).toBe(result.evaluation.test.fingerprint);
    expect(evaluation.selection).toEqual({ step: 32, validationLoss: null, criterion: 'validation-only' });
  });
});
