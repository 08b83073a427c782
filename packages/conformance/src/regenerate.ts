/**
 * Regenerates the golden LLMCP35 checkpoint from first principles: the ch33
 * training fixture (../../../docs/spec/training.md §1–7) run by `@llmcp/model` and
 * `@llmcp/optim`, encoded by `@llmcp/format`. Nothing is read from the golden
 * vectors: the documents and hyper-parameters are the fixture's
 * definition, written as code constants (`CH33_FIXTURE` of `@llmcp/optim`). If the result equals the shipped
 * 6330 bytes (`fnv1a64:2b8b6097eaed6a91`), the decoder, its backward pass,
 * AdamW, clipping, the data pipeline, sampling-state handling and the encoder
 * all agree with the reference bit for bit — the strongest check this
 * package has.
 */
import { encodeCheckpoint, SplitMix64, type AdamWState, type CheckpointState, type NamedTensor } from '@llmcp/format';
import { causalWindows, evaluationBatches, gatherBatch, shuffleInPlace, type WindowRef } from '@llmcp/data';
import { Decoder } from '@llmcp/model';
import { AdamW, CH33_FIXTURE, clipByGlobalNorm, listSchedule, NO_DECAY_GAINS, type Ch33Fixture } from '@llmcp/optim';

/** The fixture documents (../../../docs/spec/training.md §1), in processing order: `CH33_FIXTURE.documents` of `@llmcp/optim`. */
export const FIXTURE_DOCUMENTS: Ch33Fixture['documents'] = CH33_FIXTURE.documents;

/** The fixture's run settings: `CH33_FIXTURE` of `@llmcp/optim`, the one definition. */
export const FIXTURE_RUN: Ch33Fixture = CH33_FIXTURE;

/** One evaluation checkpoint of the regenerated run. */
export interface RegeneratedCheckpoint {
  readonly step: number;
  /** Token-weighted mean loss over the training windows (sequential, batches of 5). */
  readonly trainLoss: number;
  /** Token-weighted mean loss over the validation windows (batches of 4). */
  readonly validationLoss: number;
}

/** Everything the regenerated run produced. */
export interface RegeneratedRun {
  /** Loss of each of the eight updates. */
  readonly losses: readonly number[];
  /** Global gradient norm (before clipping) of each update. */
  readonly gradientNorms: readonly number[];
  /** The five evaluation checkpoints. */
  readonly checkpoints: readonly RegeneratedCheckpoint[];
  /** The selected step (strictly smaller validation loss wins; ties keep the earlier step). */
  readonly selectedStep: number;
  /** The checkpoint state of the selected step. */
  readonly state: CheckpointState;
  /** Its LLMCP35 v1 encoding. */
  readonly bytes: Uint8Array;
}

/** Token-weighted mean loss of `model` over the `windows` of `documents`, in batches of `batchSize` windows of `context` tokens. */
function evaluate(model: Decoder, split: { readonly documents: readonly (readonly number[])[]; readonly windows: readonly WindowRef[] }, batching: { readonly batchSize: number; readonly context: number }): number {
  const { documents, windows } = split;
  const { batchSize, context } = batching;
  let weighted = 0;
  let total = 0;
  for (const group of evaluationBatches(windows, batchSize)) {
    const batch = gatherBatch(documents, group, context);
    const count = batch.rows * batch.columns;
    weighted += model.evaluateLoss(batch) * count;
    total += count;
  }
  return weighted / total;
}

function snapshot(model: Decoder, optimizer: AdamW): { parameters: NamedTensor[]; optimizer: AdamWState } {
  const parameters = model.toCheckpointParameters().map((t) => ({ ...t, data: t.data.slice() }));
  const s = optimizer.toAdamWState();
  return { parameters, optimizer: { ...s, moments: s.moments.map((m) => ({ ...m, first: m.first.slice(), second: m.second.slice() })) } };
}

/**
 * Runs the ch33 fixture from its definition and returns the selected state,
 * its bytes and the run's evidence.
 *
 * @returns the regenerated run.
 * @example
 * ```ts
 * const run = regenerateCh33Run();
 * run.selectedStep; // 8
 * run.bytes.length; // 6330
 * ```
 */
export function regenerateCh33Run(): RegeneratedRun {
  const R = FIXTURE_RUN;
  const train = FIXTURE_DOCUMENTS.train.map((d) => d.tokens);
  const validation = FIXTURE_DOCUMENTS.validation.map((d) => d.tokens);
  const C = R.contextLength;

  const trainWindows = causalWindows(train, C);
  const validationWindows = causalWindows(validation, C);
  const updateOrder = trainWindows.slice();
  shuffleInPlace(updateOrder, new SplitMix64(R.shuffleSeed));
  const updateBatches = evaluationBatches(updateOrder, R.updateBatchSize).map((group) => gatherBatch(train, group, C));

  const model = new Decoder(R.decoder);
  model.initialize(R.initSeed);
  const optimizer = new AdamW(model, { config: R.adamw, groups: NO_DECAY_GAINS });
  const schedule = listSchedule(R.learningRates);

  const losses: number[] = [];
  const gradientNorms: number[] = [];
  const checkpoints: RegeneratedCheckpoint[] = [];
  let best = { step: 0, validationLoss: Infinity, ...snapshot(model, optimizer) };
  const checkpoint = (step: number): void => {
    const trainLoss = evaluate(model, { documents: train, windows: trainWindows }, { batchSize: R.trainEvaluationBatchSize, context: C });
    const validationLoss = evaluate(model, { documents: validation, windows: validationWindows }, { batchSize: R.validationBatchSize, context: C });
    checkpoints.push({ step, trainLoss, validationLoss });
    if (validationLoss < best.validationLoss) best = { step, validationLoss, ...snapshot(model, optimizer) };
  };

  checkpoint(0);
  for (let step = 1; step <= R.learningRates.length; step++) {
    const batch = updateBatches[(step - 1) % updateBatches.length]!;
    losses.push(model.trainStep(batch));
    const clip = clipByGlobalNorm(model.gradients, R.maxGradientNorm, model.layout);
    gradientNorms.push(clip.normBefore);
    optimizer.step({ learningRate: schedule(step), clip });
    model.zeroGradients();
    if (R.validationSteps.includes(step)) checkpoint(step);
  }

  // The demo's sampling stream: seed 35 used as the raw state, one output drawn and discarded.
  const sampling = new SplitMix64(R.samplingSeed);
  for (let i = 0; i < R.samplingDiscard; i++) sampling.nextU64();
  const encoder = new TextEncoder();
  const state: CheckpointState = {
    tokenizer: { kind: 'literal', pieces: R.literalPieces.map((p) => encoder.encode(p)) },
    decoder: R.decoder,
    parameters: best.parameters,
    optimizer: best.optimizer,
    selectedStep: BigInt(best.step),
    samplingRngState: sampling.state,
  };
  return { losses, gradientNorms, checkpoints, selectedStep: best.step, state, bytes: encodeCheckpoint(state) };
}

/**
 * The golden checkpoint, regenerated: init with seed 33 → the fixture's eight
 * updates → selection → encode. Equal to the shipped `golden-6330.llmcp`
 * byte for byte when every layer of llmcp is reference-exact.
 *
 * @returns the 6330 bytes.
 * @example
 * ```ts
 * decodeCheckpoint(regenerateGoldenCheckpoint()).layout.checksumLabel; // 'fnv1a64:2b8b6097eaed6a91'
 * ```
 */
export function regenerateGoldenCheckpoint(): Uint8Array {
  return regenerateCh33Run().bytes;
}
