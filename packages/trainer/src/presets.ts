/**
 * Reference configs. `CH33_CONFIG` is the training fixture of ../../../docs/spec/training.md
 * (the reference's ch33 run): trained to step 8 it selects step 8, whose state
 * is the golden 6330-byte LLMCP35 file.
 */
import { bundledCorpusFiles } from '@llmcp/data/node';
import { CH33_FIXTURE } from '@llmcp/optim';
import { parseConfig, type TrainerConfig } from './config.ts';

const ch33Text = (tokens: readonly number[]): string => tokens.map((t) => CH33_FIXTURE.literalPieces[t] as string).join('');
const ch33Steps = CH33_FIXTURE.learningRates.length;
const ch33Decoder = CH33_FIXTURE.decoder;

/**
 * The ch33 fixture as a trainer config input, built from `@llmcp/optim`'s
 * `CH33_FIXTURE` (the one definition of the run): literal pieces "0"…"4", the
 * four documents of ../../../docs/spec/training.md §1, context 2, update
 * batches of 2 shuffled with seed 33 (repeat policy), init seed 33, the
 * eight-rate list schedule, clip 0.35, validation at steps 0, 2, 4, 6, 8
 * (training batches of 5, validation batches of 4) and the sampling stream of
 * the golden file (seed 35, one discarded draw). The trainer's own choices
 * are added: RMSNorm gains without decay, one checkpoint at the last step,
 * the ch36 audit (prompt "0", τ = 1, top-k 3, at most 4 new tokens), no
 * timing and one thread. Every key is given, so it is also a complete config.
 */
export const CH33_CONFIG_INPUT: TrainerConfig = {
  steps: ch33Steps,
  data: {
    source: {
      kind: 'inline',
      documents: [
        ...CH33_FIXTURE.documents.train.map((d) => ({ id: d.id, partition: 'train' as const, text: ch33Text(d.tokens) })),
        ...CH33_FIXTURE.documents.validation.map((d) => ({ id: d.id, partition: 'validation' as const, text: ch33Text(d.tokens) })),
      ],
    },
    contextLength: CH33_FIXTURE.contextLength,
    windows: 'documents',
    stride: 1,
    batchSize: CH33_FIXTURE.updateBatchSize,
    shuffle: { seed: Number(CH33_FIXTURE.shuffleSeed), epochs: 'repeat' },
  },
  tokenizer: { kind: 'literal', pieces: [...CH33_FIXTURE.literalPieces] },
  model: {
    width: ch33Decoder.modelWidth,
    heads: ch33Decoder.heads,
    feedForwardWidth: ch33Decoder.feedForwardWidth,
    layers: ch33Decoder.layers,
    maxPositions: ch33Decoder.maxPositions,
    ropeBase: ch33Decoder.ropeBase,
    rmsEpsilon: ch33Decoder.rmsEpsilon,
    initSeed: Number(CH33_FIXTURE.initSeed),
  },
  optimizer: { ...CH33_FIXTURE.adamw, groups: 'gain-no-decay', clipNorm: CH33_FIXTURE.maxGradientNorm },
  schedule: { kind: 'list', rates: [...CH33_FIXTURE.learningRates] },
  evaluation: {
    // The fixture's validation steps are 0, N, 2N, … (and the last step): N is the spacing.
    validateEvery: (CH33_FIXTURE.validationSteps[1] as number) - (CH33_FIXTURE.validationSteps[0] as number),
    batchSize: CH33_FIXTURE.validationBatchSize,
    stride: 1,
    trainingLoss: true,
    trainingBatchSize: CH33_FIXTURE.trainEvaluationBatchSize,
    maxBatches: null,
  },
  checkpoint: { every: ch33Steps, keepSteps: 3, keepEvery: null, everyMinutes: null },
  sampling: { seed: Number(CH33_FIXTURE.samplingSeed), discard: CH33_FIXTURE.samplingDiscard, prompt: '0', count: 1, maxNewTokens: 4, temperature: 1, topK: 3 },
  log: { timing: false },
  threads: 1,
};

/**
 * The validated ch33 fixture config.
 *
 * @returns a fresh copy of the config.
 */
export function ch33Config(): TrainerConfig {
  return parseConfig(JSON.parse(JSON.stringify(CH33_CONFIG_INPUT)));
}

/**
 * The chapter-39 end-to-end recipe (../../../docs/spec/tokenizer-and-data.md §6) as a trainer
 * config input, without the corpus location: byte-level BPE with exactly 8
 * merges learned on the train partition, D4/H1/F4/L1 at context 4 (stride 1),
 * update batches of 16 train windows shuffled with seed 39 (32 updates use
 * the first 32 batches of one order), init seed 39, AdamW 0.04 with no decay
 * and no groups, constant rate 0.04, clip 1.0, validation at steps 0 and 32
 * with sequential evaluation batches of 128 (training loss too), one
 * checkpoint at step 32, and the sampling stream of state 38 with the
 * chapter's generation (prompt "A", τ = 0.8, top-k 4, at most 3 new tokens).
 */
export const CH39_CONFIG_INPUT = {
  steps: 32,
  data: {
    contextLength: 4,
    stride: 1,
    batchSize: 16,
    shuffle: { seed: 39, epochs: 'repeat' },
  },
  tokenizer: { kind: 'bpe', merges: 8, requireAll: true },
  model: { width: 4, heads: 1, feedForwardWidth: 4, layers: 1, maxPositions: 4, ropeBase: 10000, rmsEpsilon: 1e-6, initSeed: 39 },
  optimizer: { learningRate: 0.04, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0, groups: 'none', clipNorm: 1 },
  schedule: { kind: 'constant', rate: 0.04 },
  evaluation: { validateEvery: 32, batchSize: 128, stride: 1, trainingLoss: true, trainingBatchSize: 128, maxBatches: null },
  checkpoint: { every: 32, keepSteps: 1 },
  sampling: { seed: 38, discard: 0, prompt: 'A', count: 1, maxNewTokens: 3, temperature: 0.8, topK: 4 },
  log: { timing: false },
  threads: 1,
} as const;

/**
 * The validated ch39 recipe config on a JSON corpus and split manifest.
 *
 * @param source - absolute paths of the corpus file and its split manifest; default: the reference's
 *   tiny bilingual corpus shipped with `@llmcp/data` (`bundledCorpusFiles('tiny-bilingual')`).
 * @returns a fresh copy of the config.
 * @example
 * ```ts
 * await trainRun({ runDir: 'runs/ch39', config: ch39Config() });
 * ```
 */
export function ch39Config(source?: { readonly corpus: string; readonly split: string }): TrainerConfig {
  const [corpus, split] = source === undefined ? bundledCorpusFiles('tiny-bilingual') : [source.corpus, source.split];
  const input = JSON.parse(JSON.stringify(CH39_CONFIG_INPUT)) as { data: Record<string, unknown> };
  input.data.source = { kind: 'corpus', corpus, split };
  return parseConfig(input);
}

/**
 * The two held-out test documents of the reference's chapter-34 fixture
 * (token ids 4 3 2 1 0 4 3 2 1 and 3 2 1 0 4 3 2, written as literal pieces).
 */
export const CH34_TEST_DOCUMENTS = [
  { id: 'test-a', partition: 'test', text: '432104321' },
  { id: 'test-b', partition: 'test', text: '3210432' },
] as const;

/**
 * The reference's chapter-34 fixture: the ch33 run plus
 * {@link CH34_TEST_DOCUMENTS}. Training never reads them, so the run selects
 * the same step-8 state as ch33 (the golden 6330-byte file); its final
 * evaluation (`evaluateRun`) scores them once, in test batches of 4 (the
 * evaluation batch size).
 *
 * @returns a fresh copy of the validated config.
 */
export function ch34Config(): TrainerConfig {
  const input = JSON.parse(JSON.stringify(CH33_CONFIG_INPUT)) as { data: { source: { documents: unknown[] } } };
  input.data.source.documents.push(...(JSON.parse(JSON.stringify(CH34_TEST_DOCUMENTS)) as unknown[]));
  return parseConfig(input);
}

/**
 * Model sizes for a run on your own corpus (and the step budget, validation
 * and checkpoint cadence that suit each): what `llmcp train --size` and the
 * trainer app's `--size` build on. One home for both.
 */
export const SIZE_PRESETS = {
  tiny: { width: 32, heads: 2, feedForwardWidth: 128, layers: 1, contextLength: 32, steps: 600, validateEvery: 50, checkpointEvery: 100 },
  small: { width: 64, heads: 4, feedForwardWidth: 256, layers: 2, contextLength: 64, steps: 1000, validateEvery: 100, checkpointEvery: 200 },
  medium: { width: 128, heads: 4, feedForwardWidth: 512, layers: 2, contextLength: 64, steps: 2000, validateEvery: 100, checkpointEvery: 200 },
} as const;

/** A name of {@link SIZE_PRESETS}. */
export type SizePresetName = keyof typeof SIZE_PRESETS;

/**
 * Whether `name` names one of {@link SIZE_PRESETS}.
 *
 * @param name - e.g. the value of `--size`.
 * @returns true for `tiny`, `small` or `medium`.
 */
export function isSizePresetName(name: string): name is SizePresetName {
  return Object.prototype.hasOwnProperty.call(SIZE_PRESETS, name);
}

/** Options of {@link sizePresetConfigInput}. */
export interface SizePresetOptions {
  /** The data source of the run (`data.source` of the config). */
  readonly source: DataSourceConfigInput;
  readonly size: SizePresetName;
  /** Update steps; default the size's own budget. */
  readonly steps?: number;
  /** Record timing in loss.jsonl (default true). */
  readonly timing?: boolean;
}

/** A `data.source` as written in a config file (defaults not yet applied). */
export type DataSourceConfigInput =
  | { readonly kind: 'corpus'; readonly corpus: string; readonly split: string }
  | {
      readonly kind: 'text';
      readonly path: string;
      readonly documents?: 'auto' | 'paragraphs' | 'lines' | 'file' | 'jsonl';
      readonly validationFraction?: number;
      readonly testFraction?: number;
    };

/** The test share of a size preset's text source (the validation share is the schema's default, 0.05). */
export const SIZE_TEST_FRACTION = 0.05;

/**
 * The config input of a run of one of {@link SIZE_PRESETS} on a corpus: a
 * byte-level BPE of 254 merges (512 ids with the 256 bytes and BOS/EOS),
 * AdamW 0.01 with warm-up and cosine decay, validation and checkpoints at the
 * size's cadence (validation on the default evaluation budget), and a sample
 * audit of two samples (τ = 0.8, top-k 40). A text source is packed
 * (`data.windows` `packed`, stride = context) and holds out
 * {@link SIZE_TEST_FRACTION} of its documents for test besides validation.
 * Validate it with `parseConfig` (after any overrides).
 *
 * @param options - corpus, size, steps, timing.
 * @returns a plain JSON config input.
 * @example
 * ```ts
 * const config = parseConfig(sizePresetConfigInput({ source: { kind: 'text', path: '/data/stories.txt' }, size: 'tiny' }));
 * ```
 */
export function sizePresetConfigInput(options: SizePresetOptions): Record<string, unknown> {
  const size = SIZE_PRESETS[options.size];
  const steps = options.steps ?? size.steps;
  const validateEvery = Math.min(size.validateEvery, steps);
  return {
    steps,
    // A text source is packed (windows of the context length across document boundaries, each token once an epoch)
    // and holds out a test split as well, so that `llmcp eval` and `llmcp report` work on the run.
    data: {
      source: options.source.kind === 'text' ? { testFraction: SIZE_TEST_FRACTION, ...options.source } : { ...options.source },
      contextLength: size.contextLength,
      batchSize: 8,
      shuffle: { seed: 1, epochs: 'reshuffle' },
    },
    tokenizer: { kind: 'bpe', merges: 254 },
    model: { width: size.width, heads: size.heads, feedForwardWidth: size.feedForwardWidth, layers: size.layers, initSeed: 1 },
    optimizer: { learningRate: 0.01, weightDecay: 0.01, clipNorm: 1 },
    schedule: { kind: 'warmup-cosine', warmupSteps: Math.min(100, Math.floor(steps / 10)), floor: 0.001 },
    evaluation: { validateEvery, batchSize: 32, stride: size.contextLength },
    checkpoint: { every: Math.max(validateEvery, Math.floor(Math.min(size.checkpointEvery, steps) / validateEvery) * validateEvery), keepSteps: 3 },
    sampling: { seed: 7, prompt: '', count: 2, maxNewTokens: 64, temperature: 0.8, topK: 40 },
    log: { timing: options.timing ?? true },
  };
}
