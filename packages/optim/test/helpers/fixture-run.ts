/**
 * The ch33 training fixture (../../../../docs/spec/training.md §1–7) written out from its
 * definition — documents, windows, Fisher–Yates shuffle, batches, eight
 * clipped AdamW updates, evaluations and selection — recording everything the
 * golden trace records.
 */
import { SplitMix64 } from '@llmcp/format';
import { Decoder, type TokenBatch } from '@llmcp/model';
import { AdamW, CH33_FIXTURE, clipByGlobalNorm, listSchedule, NO_DECAY_GAINS, type Ch33Fixture, type ClipResult } from '../../src/index.ts';

export const DOCUMENTS: Ch33Fixture['documents'] = CH33_FIXTURE.documents;
export const CONTEXT: number = CH33_FIXTURE.contextLength;
export const RATES: readonly number[] = CH33_FIXTURE.learningRates;
export const ADAMW_CONFIG: Ch33Fixture['adamw'] = CH33_FIXTURE.adamw;
export const MAX_NORM: number = CH33_FIXTURE.maxGradientNorm;
export const VALIDATION_STEPS: readonly number[] = CH33_FIXTURE.validationSteps;

interface Doc {
  readonly id: string;
  readonly tokens: readonly number[];
}
export interface Window {
  readonly doc: Doc;
  readonly start: number;
  readonly name: string;
}

export function windows(docs: readonly Doc[]): Window[] {
  const out: Window[] = [];
  for (const doc of docs) for (let s = 0; s + CONTEXT + 1 <= doc.tokens.length; s++) out.push({ doc, start: s, name: `${doc.id}@${s}` });
  return out;
}

export function batch(ws: readonly Window[]): TokenBatch & { windows: string[] } {
  const inputs: number[] = [];
  const targets: number[] = [];
  for (const w of ws) {
    for (let t = 0; t < CONTEXT; t++) {
      inputs.push(w.doc.tokens[w.start + t]!);
      targets.push(w.doc.tokens[w.start + t + 1]!);
    }
  }
  return { inputs, targets, rows: ws.length, columns: CONTEXT, windows: ws.map((w) => w.name) };
}

export function batches(ws: readonly Window[], size: number): (TokenBatch & { windows: string[] })[] {
  const out = [];
  for (let i = 0; i < ws.length; i += size) out.push(batch(ws.slice(i, i + size)));
  return out;
}

export interface EvaluationRecord {
  readonly mean: number;
  readonly tokenCount: number;
  readonly batches: { windows: string[]; loss: number; weightedSumAfter: number; tokenCount: number }[];
}

export function evaluate(model: Decoder, list: (TokenBatch & { windows: string[] })[]): EvaluationRecord {
  let weighted = 0;
  let total = 0;
  const records = [];
  for (const b of list) {
    const loss = model.evaluateLoss(b);
    const count = b.rows * b.columns;
    weighted += loss * count;
    total += count;
    records.push({ windows: b.windows, loss, weightedSumAfter: weighted, tokenCount: count });
  }
  return { mean: weighted / total, tokenCount: total, batches: records };
}

export interface StepRecord {
  readonly step: number;
  readonly batch: TokenBatch & { windows: string[] };
  readonly learningRate: number;
  readonly loss: number;
  readonly clip: ClipResult;
  readonly gradients: Float64Array;
  readonly parameters: Float64Array;
  readonly optimizer: { step: number; beta1Power: number; beta2Power: number; first: Float64Array; second: Float64Array };
}

export interface FixtureRun {
  readonly model: Decoder;
  readonly optimizer: AdamW;
  readonly sequential: string[];
  readonly shuffleSelections: number[];
  readonly shuffled: string[];
  readonly shuffleState: bigint;
  readonly updateBatches: (TokenBatch & { windows: string[] })[];
  readonly initialParameters: Float64Array;
  readonly steps: StepRecord[];
  readonly checkpoints: { step: number; train: EvaluationRecord; validation: EvaluationRecord }[];
  readonly selectedStep: number;
  readonly selectedValidation: number;
}

/** Runs the fixture; `threads` > 1 uses worker threads (the bits must not change). */
export async function runFixture(threads = 1): Promise<FixtureRun> {
  const sequential = windows(DOCUMENTS.train);
  const order = sequential.slice();
  const rng = new SplitMix64(CH33_FIXTURE.shuffleSeed);
  const shuffleSelections: number[] = [];
  for (let i = order.length - 1; i >= 1; i--) {
    const j = rng.nextBelow(i + 1);
    shuffleSelections.push(j);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const updateBatches = batches(order, CH33_FIXTURE.updateBatchSize);
  const trainEval = batches(sequential, CH33_FIXTURE.trainEvaluationBatchSize);
  const validation = batches(windows(DOCUMENTS.validation), CH33_FIXTURE.validationBatchSize);

  const model = await Decoder.create(CH33_FIXTURE.decoder, { threads });
  model.initialize(CH33_FIXTURE.initSeed);
  const initialParameters = model.parameters.slice();
  const optimizer = new AdamW(model, { config: ADAMW_CONFIG, groups: NO_DECAY_GAINS });
  const schedule = listSchedule(RATES);
  const steps: StepRecord[] = [];
  const checkpoints: FixtureRun['checkpoints'] = [];
  let selectedStep = 0;
  let selectedValidation = Infinity;
  const checkpoint = (step: number): void => {
    const record = { step, train: evaluate(model, trainEval), validation: evaluate(model, validation) };
    checkpoints.push(record);
    if (record.validation.mean < selectedValidation) {
      selectedValidation = record.validation.mean;
      selectedStep = step;
    }
  };
  checkpoint(0);
  for (let step = 1; step <= RATES.length; step++) {
    const b = updateBatches[(step - 1) % updateBatches.length]!;
    const loss = model.trainStep(b);
    const clip = clipByGlobalNorm(model.gradients, MAX_NORM, model.layout);
    const learningRate = schedule(step);
    const gradients = model.gradients.slice();
    optimizer.step({ learningRate, clip });
    model.zeroGradients();
    steps.push({
      step,
      batch: b,
      learningRate,
      loss,
      clip,
      gradients,
      parameters: model.parameters.slice(),
      optimizer: {
        step: optimizer.stepCount,
        beta1Power: optimizer.beta1Power,
        beta2Power: optimizer.beta2Power,
        first: optimizer.first.slice(),
        second: optimizer.second.slice(),
      },
    });
    if (VALIDATION_STEPS.includes(step)) checkpoint(step);
  }
  return {
    model,
    optimizer,
    sequential: sequential.map((w) => w.name),
    shuffleSelections,
    shuffled: order.map((w) => w.name),
    shuffleState: rng.state,
    updateBatches,
    initialParameters,
    steps,
    checkpoints,
    selectedStep,
    selectedValidation,
  };
}
