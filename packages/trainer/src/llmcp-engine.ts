/**
 * The engines of a run: `@llmcp/data`'s windows, batches and resumable update
 * order here, and the numerics either on the llmcp packages in this process
 * (`@llmcp/model`'s decoder, `@llmcp/optim`'s AdamW and clipping) or on
 * PyTorch (torch-engine.ts). One update is exactly ../../../docs/spec/training.md §4:
 * forward → backward → finite check → clip → AdamW step → zero-grad.
 */
import { checksumLabel, fnv1a64, type AdamWConfig, type AdamWState, type CheckpointState, type DecoderConfig, type NamedTensor, type MomentState } from '@llmcp/format';
import { Decoder, kernelInfo, namedViews, type ParameterLayout } from '@llmcp/model';
import { AdamW, clipByGlobalNorm, NO_DECAY_GAINS } from '@llmcp/optim';
import { causalWindows, evaluationBatches, gatherBatch, packDocuments, UpdateBatches, windowCoverage, type Batch, type WindowCoverage, type WindowRef } from '@llmcp/data';
import type { TrainerConfig } from './config.ts';
import type { EngineCompute, EngineDescription, EngineEvaluationLists, EngineUpdate, EvaluationList, TrainingEngine } from './engine.ts';
import { TrainerError } from './errors.ts';
import type { JsonValue } from './internal/canonical-json.ts';
import type { PreparedInputs } from './inputs.ts';
import { startTorchCompute, type TorchEngineOptions } from './torch-engine.ts';

/** Deliberately dropped state (negative-control tests only). */
export interface EngineFaults {
  /** Start AdamW fresh (step 0, zero moments) instead of restoring it. */
  readonly dropOptimizerState?: boolean;
  /** Start the data order fresh from the seed instead of restoring it. */
  readonly dropShuffleState?: boolean;
}

/**
 * The AdamW hyper-parameters a config stores in the checkpoint (the base learning rate).
 *
 * @param config - the run config.
 * @returns the AdamW config.
 */
export function adamWConfigOf(config: TrainerConfig): AdamWConfig {
  const o = config.optimizer;
  return { learningRate: o.learningRate, beta1: o.beta1, beta2: o.beta2, epsilon: o.epsilon, weightDecay: o.weightDecay };
}

/**
 * The decoder configuration of a run.
 *
 * @param config - the run config.
 * @param vocabularySize - the tokenizer's vocabulary size.
 * @returns the decoder config.
 */
export function decoderConfigOf(config: TrainerConfig, vocabularySize: number): DecoderConfig {
  const m = config.model;
  return {
    vocabularySize,
    modelWidth: m.width,
    heads: m.heads,
    feedForwardWidth: m.feedForwardWidth,
    layers: m.layers,
    maxPositions: m.maxPositions ?? config.data.contextLength,
    ropeBase: m.ropeBase,
    rmsEpsilon: m.rmsEpsilon,
  };
}

function fingerprint(batch: Batch): string {
  const bytes = new Uint8Array(8 + 8 * batch.inputs.length);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, batch.rows, true);
  view.setUint32(4, batch.columns, true);
  let o = 8;
  for (const x of batch.inputs) {
    view.setUint32(o, x, true);
    o += 4;
  }
  for (const x of batch.targets) {
    view.setUint32(o, x, true);
    o += 4;
  }
  return checksumLabel(fnv1a64(bytes));
}

/**
 * The token lists a partition's windows are cut from under `data.windows`:
 * its documents (`documents`), or one stream of them joined in source order,
 * each keeping its BOS … EOS (`packed`; `@llmcp/data`'s `packDocuments`).
 *
 * @param config - the run config.
 * @param documents - a partition's encoded documents.
 * @returns the lists the windows index.
 */
export function windowDocuments(config: TrainerConfig, documents: readonly Uint32Array[]): readonly Uint32Array[] {
  return config.data.windows === 'packed' ? [packDocuments(documents)] : documents;
}

/**
 * What the training windows of a config reach of the train partition's tokens
 * (`@llmcp/data`'s `windowCoverage` over {@link windowDocuments}), with the
 * documents that give no window counted on the documents themselves.
 *
 * @param config - the run config.
 * @param train - the train partition's encoded documents.
 * @returns the coverage of the update windows.
 */
export function trainingCoverage(config: TrainerConfig, train: readonly Uint32Array[]): WindowCoverage {
  const T = config.data.contextLength;
  if (config.data.windows !== 'packed') return windowCoverage(train, T, config.data.stride);
  let tokens = 0;
  for (const d of train) tokens += d.length;
  const whole = windowCoverage([tokens], T, config.data.stride);
  return { ...whole, documents: train.length, documentsWithoutWindow: whole.windows === 0 ? train.length : 0, tokensWithoutWindow: whole.windows === 0 ? tokens : 0 };
}

/**
 * A job's data state in the current form (`@llmcp/data`'s update-batch state
 * of version 2, constant size): a version 1 state of an older job format
 * (the whole window order) is restored and saved again.
 *
 * @param data - the job's data state.
 * @returns the version 2 state.
 * @throws DataError `DATA_INVALID_BATCH_STATE` for a malformed state.
 */
export function currentDataState(data: JsonValue): JsonValue {
  return UpdateBatches.fromJSON(data).toJSON() as unknown as JsonValue;
}


function sameDecoder(a: DecoderConfig, b: DecoderConfig): boolean {
  return (
    a.vocabularySize === b.vocabularySize &&
    a.modelWidth === b.modelWidth &&
    a.heads === b.heads &&
    a.feedForwardWidth === b.feedForwardWidth &&
    a.layers === b.layers &&
    a.maxPositions === b.maxPositions &&
    Object.is(a.ropeBase, b.ropeBase) &&
    Object.is(a.rmsEpsilon, b.rmsEpsilon)
  );
}

/** The llmcp engine's numerics: `@llmcp/model`'s decoder and `@llmcp/optim`'s AdamW in this process. */
class LocalCompute implements EngineCompute {
  readonly parameterCount: number;
  readonly description: EngineDescription;
  readonly #model: Decoder;
  readonly #optimizer: AdamW;
  readonly #clipNorm: number | null;

  constructor(model: Decoder, optimizer: AdamW, clipNorm: number | null) {
    this.#model = model;
    this.#optimizer = optimizer;
    this.#clipNorm = clipNorm;
    this.parameterCount = model.parameters.length;
    this.description = { kind: 'llmcp', worldSize: 1, detail: `llmcp f64, ${kernelInfo().kind} kernels`, processes: [] };
  }

  update(batch: Batch, learningRate: number): Promise<Omit<EngineUpdate, 'tokens'>> {
    const model = this.#model;
    const loss = model.trainStep(batch);
    const maxNorm = this.#clipNorm;
    const clip = clipByGlobalNorm(model.gradients, maxNorm ?? Number.MAX_VALUE, model.layout);
    this.#optimizer.step(maxNorm === null ? { learningRate } : { learningRate, clip });
    model.zeroGradients();
    return Promise.resolve({ loss, gradientNorm: clip.normBefore, clipped: maxNorm !== null && clip.clipped });
  }

  evaluate(batch: Batch): Promise<number> {
    return Promise.resolve(this.#model.evaluateLoss(batch));
  }

  state(): Promise<{ parameters: NamedTensor[]; optimizer: AdamWState }> {
    const model = this.#model;
    return Promise.resolve(optimizerSnapshot(model.layout, model.parameters, this.#optimizer));
  }

  async dispose(): Promise<void> {
    await this.#model.close();
  }
}

/**
 * Private copies of parameters and AdamW state, named in model order.
 *
 * @param layout - the parameter layout.
 * @param parameters - the flat parameters.
 * @param optimizer - the optimizer (its moments are copied when it has stepped).
 * @returns the named tensors and the AdamW state.
 */
function optimizerSnapshot(layout: ParameterLayout, parameters: Float64Array, optimizer: AdamW): { parameters: NamedTensor[]; optimizer: AdamWState } {
  const opt = optimizer.toAdamWState();
  let moments: MomentState[] = [];
  if (opt.moments.length > 0) {
    const first = namedViews(layout, optimizer.first.slice());
    const second = namedViews(layout, optimizer.second.slice());
    moments = first.map((f, i) => ({ name: f.name, shape: f.shape, first: f.data, second: second[i]!.data }));
  }
  return { parameters: namedViews(layout, parameters.slice()), optimizer: { ...opt, moments } };
}

/** What an engine runs on: its compute, the decoder and the data order. */
interface EngineParts {
  readonly compute: EngineCompute;
  readonly decoder: DecoderConfig;
  readonly order: DataOrder;
}

/** An engine: the data order of `@llmcp/data` here, the numerics wherever its compute runs. */
class RunEngine implements TrainingEngine {
  readonly parameterCount: number;
  readonly vocabularySize: number;
  readonly tokensPerStep: number;
  readonly description: EngineDescription;
  readonly coverage: WindowCoverage;
  readonly stepsPerEpoch: number;
  readonly evaluationLists: EngineEvaluationLists;
  readonly #config: TrainerConfig;
  readonly #inputs: PreparedInputs;
  readonly #compute: EngineCompute;
  readonly #decoder: DecoderConfig;
  readonly #order: DataOrder;
  readonly #evaluation: Record<EvaluationList, { readonly documents: readonly Uint32Array[]; readonly batches: readonly (readonly WindowRef[])[] }>;

  constructor(config: TrainerConfig, inputs: PreparedInputs, parts: EngineParts) {
    const { compute, decoder, order } = parts;
    const { batches, updateWindows, trainDocuments } = order;
    this.#order = order;
    this.#config = config;
    this.#inputs = inputs;
    this.#compute = compute;
    this.#decoder = decoder;
    this.parameterCount = compute.parameterCount;
    this.vocabularySize = decoder.vocabularySize;
    this.description = compute.description;
    const T = config.data.contextLength;
    this.tokensPerStep = Math.min(config.data.batchSize, updateWindows.length) * T;
    this.coverage = trainingCoverage(config, inputs.partitions.train);
    this.stepsPerEpoch = batches.batchCount;
    const ev = config.evaluation;
    const stride = ev.stride ?? config.data.stride;
    const available: Partial<Record<EvaluationList, number>> = {};
    const list = (name: EvaluationList, documents: readonly Uint32Array[], batchSize: number): (readonly WindowRef[])[] => {
      const all = evaluationBatches(causalWindows(documents, T, stride), batchSize);
      available[name] = all.length;
      return ev.maxBatches === null ? all : all.slice(0, ev.maxBatches);
    };
    const validation = windowDocuments(config, inputs.partitions.validation);
    this.#evaluation = {
      validation: { documents: validation, batches: list('validation', validation, ev.batchSize) },
      training: { documents: trainDocuments, batches: ev.trainingLoss ? list('training', trainDocuments, ev.trainingBatchSize ?? ev.batchSize) : [] },
    };
    if (this.#evaluation.validation.batches.length === 0) {
      const tokens = inputs.partitions.validation.reduce((n, d) => n + d.length, 0);
      throw new TrainerError(
        'TRAINER_INPUT_INVALID',
        `the validation partition has no window of context length ${T}: its ${inputs.partitions.validation.length} documents hold ${tokens} tokens${
          config.data.windows === 'packed' ? ' in all' : ', and none has the ' + String(T + 1) + ' a window needs'
        }; ${config.data.windows === 'packed' ? 'hold out more text (data.source.validationFraction) or' : "join short documents with --set data.windows=packed,"} shorten data.contextLength`,
        { fields: ['data.contextLength'] },
      );
    }
    this.evaluationLists = {
      validation: { batches: this.#evaluation.validation.batches.length, available: available.validation ?? 0 },
      training: { batches: this.#evaluation.training.batches.length, available: available.training ?? 0 },
    };
  }

  async update(learningRate: number): Promise<EngineUpdate> {
    const batch = batchOf(this.#order, this.#order.batches.peek().windowIndices, this.#config.data.contextLength);
    const result = await this.#compute.update(batch, learningRate);
    this.#order.batches.next();
    return { ...result, tokens: batch.rows * batch.columns };
  }

  nextBatchFingerprint(): string {
    return nextBatchFingerprintOf(this.#order, this.#config);
  }

  evaluationBatches(list: EvaluationList): number {
    return this.#evaluation[list].batches.length;
  }

  async evaluateBatch(list: EvaluationList, index: number): Promise<{ loss: number; tokens: number }> {
    const e = this.#evaluation[list];
    const windows = e.batches[index];
    if (windows === undefined) throw new RangeError(`${list} batch ${index} does not exist`);
    const batch = gatherBatch(e.documents, windows, this.#config.data.contextLength);
    return { loss: await this.#compute.evaluate(batch), tokens: batch.rows * batch.columns };
  }

  async snapshot(step: number, samplingRngState: bigint): Promise<CheckpointState> {
    const { parameters, optimizer } = await this.#compute.state();
    return {
      tokenizer: this.#inputs.tokenizer.toState(),
      decoder: { ...this.#decoder },
      parameters,
      optimizer,
      selectedStep: optimizer.step,
      samplingRngState,
    };
  }

  dataState(): JsonValue {
    return this.#order.batches.toJSON() as unknown as JsonValue;
  }

  dispose(): Promise<void> {
    return this.#compute.dispose();
  }
}

/** A run's data order: the token lists its update windows are cut from, the windows, and the resumable order over them. */
export interface DataOrder {
  readonly trainDocuments: readonly Uint32Array[];
  readonly updateWindows: readonly WindowRef[];
  readonly batches: UpdateBatches;
}

/**
 * The data order of a run, fresh from the config's shuffle seed or restored
 * from a job's data state: everything an engine's batches come from, without
 * the model (a resume checks the next batch against the job with it before
 * any engine starts).
 *
 * @param config - the run config.
 * @param inputs - prepared inputs.
 * @param restored - the job's data state, or null for a fresh order.
 * @returns the data order.
 * @throws TrainerError `TRAINER_INPUT_INVALID` when the train partition gives no window.
 */
export function dataOrderOf(config: TrainerConfig, inputs: PreparedInputs, restored: JsonValue | null): DataOrder {
  const T = config.data.contextLength;
  if (config.data.windows === 'packed' && inputs.tokenizer.eosId === null) {
    throw new TrainerError('TRAINER_INPUT_INVALID', "data.windows 'packed' joins documents with the tokenizer's end-of-document token, and a literal tokenizer has none; set data.windows to 'documents'", {
      fields: ['data.windows'],
    });
  }
  const trainDocuments = windowDocuments(config, inputs.partitions.train);
  const updateWindows = causalWindows(trainDocuments, T, config.data.stride);
  if (updateWindows.length === 0) {
    const tokens = inputs.partitions.train.reduce((n, d) => n + d.length, 0);
    throw new TrainerError(
      'TRAINER_INPUT_INVALID',
      `the train partition has no window of context length ${T}: its ${inputs.partitions.train.length} documents hold ${tokens} tokens${
        config.data.windows === 'packed' ? ' in all; add text or' : `, and none has the ${T + 1} a window needs; join short documents with --set data.windows=packed, or`
      } shorten data.contextLength`,
      { fields: ['data.contextLength'] },
    );
  }
  const batches =
    restored === null
      ? UpdateBatches.create(updateWindows.length, { batchSize: config.data.batchSize, shuffleSeed: BigInt(config.data.shuffle.seed), epochPolicy: config.data.shuffle.epochs })
      : UpdateBatches.fromJSON(restored, updateWindows.length);
  return { trainDocuments, updateWindows, batches };
}

/**
 * FNV-1a 64 label of the inputs and targets of a data order's next update batch (without advancing it).
 *
 * @param order - the data order.
 * @param config - the run config.
 * @returns the `fnv1a64:…` label.
 */
export function nextBatchFingerprintOf(order: DataOrder, config: TrainerConfig): string {
  return fingerprint(batchOf(order, order.batches.peek().windowIndices, config.data.contextLength));
}

function batchOf(order: DataOrder, indices: ArrayLike<number>, contextLength: number): Batch {
  const windows: WindowRef[] = [];
  for (let i = 0; i < indices.length; i += 1) windows.push(order.updateWindows[indices[i] as number] as WindowRef);
  return gatherBatch(order.trainDocuments, windows, contextLength);
}

/** Where a run's engine starts from, and the machine-local settings of a torch engine. */
export interface EngineStart {
  /** Checkpoint state and job data state to continue from (null or absent: a fresh run). */
  readonly restore?: { readonly state: CheckpointState; readonly data: JsonValue } | null;
  /** Negative-control faults (tests only). */
  readonly faults?: EngineFaults;
  /** Settings of this machine for a torch engine (interpreter, rendezvous); never part of the config. */
  readonly torch?: TorchEngineOptions;
  /** The data order, when the caller has made it already ({@link dataOrderOf}); default: made from `restore`. */
  readonly order?: DataOrder;
}

/**
 * Creates the engine of a run: a fresh model (Xavier init from `model.initSeed`),
 * AdamW and data order, or all three restored from a checkpoint. The numerics
 * run in this process (the llmcp engine) or in PyTorch processes (`engine.kind`
 * `torch`), which start from exactly these weights and this optimizer state.
 *
 * @param config - the run config.
 * @param inputs - prepared inputs.
 * @param from - what to start from, faults (tests only) and the torch engine's machine-local settings.
 * @returns the engine.
 * @throws TrainerError `TRAINER_INPUT_INVALID` when there are no windows, `TRAINER_PAIR_MISMATCH` when the checkpoint does not fit the config, `TRAINER_ENGINE_UNAVAILABLE` / `TRAINER_ENGINE_FAILED` when a torch engine cannot start.
 */
export async function createEngine(config: TrainerConfig, inputs: PreparedInputs, from: EngineStart = {}): Promise<TrainingEngine> {
  const restore = from.restore ?? null;
  const faults: EngineFaults = from.faults ?? {};
  const decoder = decoderConfigOf(config, inputs.tokenizer.vocabularySize);
  const order = from.order ?? dataOrderOf(config, inputs, restore === null || faults.dropShuffleState === true ? null : restore.data);
  const torch = config.engine?.kind === 'torch' ? config.engine : null;
  // The torch engine starts from llmcp's own initial weights and a validated optimizer state, so both engines begin from the same bits.
  const model = await Decoder.create(decoder, { threads: torch === null ? config.threads : 1 });
  let compute: EngineCompute;
  try {
    const groups = config.optimizer.groups === 'none' ? null : NO_DECAY_GAINS;
    let optimizer: AdamW;
    if (restore === null) {
      model.initialize(BigInt(config.model.initSeed));
      optimizer = new AdamW(model, { config: adamWConfigOf(config), groups });
    } else {
      if (!sameDecoder(restore.state.decoder, decoder)) {
        throw new TrainerError('TRAINER_PAIR_MISMATCH', 'the checkpoint\'s decoder configuration does not match the config and tokenizer', { fields: ['model'] });
      }
      const want = adamWConfigOf(config);
      const have = restore.state.optimizer.config;
      if ((Object.keys(want) as (keyof AdamWConfig)[]).some((k) => !Object.is(want[k], have[k]))) {
        throw new TrainerError('TRAINER_PAIR_MISMATCH', 'the checkpoint\'s AdamW hyper-parameters do not match the config', { fields: ['optimizer'] });
      }
      if ((restore.state.optimizer.groups === null) !== (groups === null)) {
        throw new TrainerError('TRAINER_PAIR_MISMATCH', 'the checkpoint\'s AdamW parameter groups do not match optimizer.groups', { fields: ['optimizer.groups'] });
      }
      model.loadParameters(restore.state.parameters);
      optimizer =
        faults.dropOptimizerState === true ? new AdamW(model, { config: want, groups }) : AdamW.fromAdamWState(model, restore.state.optimizer);
    }
    if (torch === null) {
      compute = new LocalCompute(model, optimizer, config.optimizer.clipNorm);
    } else {
      const start = optimizerSnapshot(model.layout, model.parameters, optimizer);
      await model.close();
      compute = await startTorchCompute(torch, { decoder, clipNorm: config.optimizer.clipNorm, groups: config.optimizer.groups, start }, from.torch ?? {});
    }
  } catch (e) {
    await model.close();
    throw e;
  }
  return new RunEngine(config, inputs, { compute, decoder, order });
}
