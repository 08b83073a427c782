/**
 * The trainer config: a typed, validated JSON document (zod 4 schema) with
 * defaults that make a sensible small run. Unknown keys and bad values are
 * refused with a message naming the dotted key. This module holds the types,
 * the schema and the parsing; what may differ between configs is in
 * config-diff.ts, the cadence and learning-rate schedule in cadence.ts.
 *
 * The type is the schema's: `TrainerConfig` is written out (isolatedDeclarations
 * needs exported types that do not depend on an inferred value, and the
 * written type carries the field docs), and the compiler proves it equal to
 * `DeepReadonly<z.output<typeof schema>>` (see `SchemaMatchesType` below), so
 * neither can change without the other and no cast joins them.
 */
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { adamwConfigProblem, decoderConfigProblem } from '@llmcp/format';
import { MAX_TEXT_FILE_BYTES } from '@llmcp/format/node';
import { jsonDepthExceeded, MAX_JSON_DEPTH } from '@llmcp/data';
import { utf8ValidUpTo } from '@llmcp/tokenizer';
import { TrainerError } from './errors.ts';
import { readInputFile } from './internal/input-file.ts';

/** Where the documents come from. Paths are resolved against the config file's directory. */
export type DataSourceConfig =
  | {
      /** The reference-exact JSON corpus with a split manifest (../../../docs/spec/tokenizer-and-data.md §1). */
      readonly kind: 'corpus';
      readonly corpus: string;
      readonly split: string;
    }
  | {
      /** Plain text: a `.txt` or `.jsonl` file or a folder of them (documents split by `@llmcp/data`'s rule). */
      readonly kind: 'text';
      readonly path: string;
      /**
       * How files become documents (`@llmcp/data`): `auto` (JSON Lines for `.jsonl` files, else lines for a file
       * without blank lines, else paragraphs), blank-line separated paragraphs, lines, whole files, or JSON Lines
       * (`{"text": …}` per line).
       */
      readonly documents: 'auto' | 'paragraphs' | 'lines' | 'file' | 'jsonl';
      /** Share of documents held out for validation (deterministic hash split by document). */
      readonly validationFraction: number;
      /** Share held out for test. */
      readonly testFraction: number;
    }
  | {
      /** Documents written into the config itself (small fixtures such as ch33). */
      readonly kind: 'inline';
      readonly documents: readonly { readonly id: string; readonly partition: 'train' | 'validation' | 'test'; readonly text: string }[];
    };

/** The tokenizer of a run. */
export type TokenizerConfig =
  | { readonly kind: 'literal'; readonly pieces: readonly string[] }
  | {
      /** Byte-level BPE learned from the train partition (../../../docs/spec/tokenizer-and-data.md §2). */
      readonly kind: 'bpe';
      readonly merges: number;
      /** Refuse the run if fewer merges than requested are learned. */
      readonly requireAll: boolean;
    }
  | { readonly kind: 'file'; readonly path: string };

/** The learning-rate schedule, a pure function of the step. */
export type ScheduleConfig =
  | { readonly kind: 'constant'; readonly rate: number | null }
  | { readonly kind: 'list'; readonly rates: readonly number[] }
  | {
      readonly kind: 'warmup-cosine';
      readonly peak: number | null;
      readonly warmupSteps: number;
      /** Final rate (> 0); `null` = peak / 10. */
      readonly floor: number | null;
      /** Length of warm-up plus decay; `null` = `steps`. */
      readonly totalSteps: number | null;
    };

/**
 * Which engine computes the steps (../../../docs/engine-protocol.md). Absent means the
 * llmcp engine (`@llmcp/model` and `@llmcp/optim` in this process), whose bits
 * never change; `{ kind: 'llmcp' }` is read as absent.
 */
export type EngineConfig =
  | { readonly kind: 'llmcp' }
  | {
      /** PyTorch in separate processes (`python -m llmcp.engine`), one per rank, with torch.distributed. */
      readonly kind: 'torch';
      /** Ranks in all (the global batch is split between them by rows). */
      readonly worldSize: number;
      readonly device: 'cpu' | 'cuda';
      /** Precision of parameters, moments and arithmetic (f32 values are stored exactly in the f64 checkpoint). */
      readonly dtype: 'f64' | 'f32';
      /** Intra-op threads of each rank (part of the numerics: reductions may split by thread). */
      readonly threadsPerRank: number;
    };

/** A fully defaulted, validated trainer config. */
export interface TrainerConfig {
  /** The `"$schema"` key of a config file (editors use it; the trainer ignores it), when given. */
  readonly $schema?: string | undefined;
  /** Total number of update steps. */
  readonly steps: number;
  readonly data: {
    readonly source: DataSourceConfig;
    /** Context length T of every window. */
    readonly contextLength: number;
    /**
     * How windows are cut: `documents` — inside each document (the reference's rule; a document shorter
     * than T + 1 tokens gives none); `packed` — each partition's documents joined in source order, each keeping
     * its BOS … EOS, so an end-of-document token stands between neighbours and short documents are trained on
     * (nanoGPT, llm.c, Hugging Face `group_texts`). Default: `packed` for a text source, else `documents`.
     */
    readonly windows: 'documents' | 'packed';
    /** Window stride of the update list. Default: T under `packed` (each token trained once an epoch), else 1. */
    readonly stride: number;
    /** Windows per update batch. */
    readonly batchSize: number;
    readonly shuffle: {
      /** SplitMix64 seed of the Fisher–Yates shuffle (used as the raw state). */
      readonly seed: number;
      /** `repeat`: one shuffled order repeated (../../../docs/spec/training.md §3.2); `reshuffle`: a new order each epoch from the continuing RNG. */
      readonly epochs: 'repeat' | 'reshuffle';
    };
  };
  readonly tokenizer: TokenizerConfig;
  readonly model: {
    readonly width: number;
    readonly heads: number;
    readonly feedForwardWidth: number;
    readonly layers: number;
    /** Positional capacity, at most 65,536 (2^16); `null` = the context length. */
    readonly maxPositions: number | null;
    readonly ropeBase: number;
    readonly rmsEpsilon: number;
    /** SplitMix64 seed of the Xavier initialisation. */
    readonly initSeed: number;
  };
  readonly optimizer: {
    /** Base learning rate stored in the checkpoint (the schedule gives each step's rate). */
    readonly learningRate: number;
    readonly beta1: number;
    readonly beta2: number;
    readonly epsilon: number;
    readonly weightDecay: number;
    /** `gain-no-decay`: RMSNorm gains are not decayed; `none`: no groups, every parameter decays. */
    readonly groups: 'gain-no-decay' | 'none';
    /** Global gradient-norm clip (../../../docs/spec/training.md §5); `null` = no clipping. */
    readonly clipNorm: number | null;
  };
  readonly schedule: ScheduleConfig;
  readonly evaluation: {
    /** Validate at step 0, every N steps, and at the last step. */
    readonly validateEvery: number;
    /** Validation batch size. */
    readonly batchSize: number;
    /** Window stride of the evaluation lists; `null` = the update stride. */
    readonly stride: number | null;
    /** Also measure the training-evaluation loss (sequential train windows). */
    readonly trainingLoss: boolean;
    /** Batch size of the training evaluation; `null` = `batchSize`. */
    readonly trainingBatchSize: number | null;
    /**
     * Evaluate only the first n batches of each list; `null` = all. Default: the batches that hold a quarter of
     * the windows trained between two validations (`validateEvery × data.batchSize / 4`), at least one — a
     * forward pass costs about a third of a training step, so validation stays near a tenth of the run.
     */
    readonly maxBatches: number | null;
  };
  readonly checkpoint: {
    /** Checkpoint (with a sample audit) every M steps; `null` = every validation. Must be a multiple of `validateEvery`. */
    readonly every: number | null;
    /** How many rolling `step_NNNNNN/` snapshots to keep (0 = none). */
    readonly keepSteps: number;
    /**
     * Step snapshots to keep for good beside the rolling ones: every snapshot whose step is a multiple of this
     * (a multiple of the checkpoint cadence); `null` = none.
     */
    readonly keepEvery: number | null;
    /**
     * Also save `latest/` after any step when this many minutes of training passed since the last save; like a
     * SIGUSR1 checkpoint it has no sample audit and never changes what is computed. `null` = steps only.
     */
    readonly everyMinutes: number | null;
  };
  readonly sampling: {
    /** SplitMix64 seed of the sampling stream (used as the raw state). */
    readonly seed: number;
    /** Draws discarded after seeding (the golden fixture discards one). */
    readonly discard: number;
    /** Prompt text, encoded as content only (no BOS); empty = start from BOS. */
    readonly prompt: string;
    /** Samples per audit (0 = no audit). */
    readonly count: number;
    readonly maxNewTokens: number;
    /** 0 = greedy. */
    readonly temperature: number;
    /** `null` = the whole vocabulary. */
    readonly topK: number | null;
  };
  readonly log: {
    /** Put tokens/s and wall time in each loss record (under `timing`); off = byte-reproducible loss.jsonl. */
    readonly timing: boolean;
  };
  /** Worker threads for the model (default: {@link defaultThreads}; the bits never depend on it, and a change is never a config change). */
  readonly threads: number;
  /** The engine computing the steps; absent: the llmcp engine. A change is a pivot (the summation order changes with it). */
  readonly engine?: EngineConfig | undefined;
}

/** The most ranks a torch engine may have. */
export const MAX_WORLD_SIZE = 4096;

/** The most model worker threads a config may ask for. */
export const MAX_THREADS = 64;

/**
 * The default of `threads`: this machine's cores (`os.availableParallelism()`),
 * at most {@link MAX_THREADS}. The bits never depend on it.
 *
 * @returns the thread count.
 */
export function defaultThreads(): number {
  return Math.max(1, Math.min(MAX_THREADS, availableParallelism()));
}

const positiveInt = z.number().int().positive();
const nonNegativeInt = z.number().int().nonnegative();
const seed = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const positiveFinite = z.number().positive().refine(Number.isFinite, 'expected a finite number');
const unitInterval = z.number().nonnegative().lt(1);

/**
 * The share of the windows trained between two validations that the default evaluation budget
 * (`evaluation.maxBatches`) evaluates in a validation pass.
 */
export const VALIDATION_WINDOW_SHARE = 0.25;

/**
 * The default of `evaluation.maxBatches`: the batches of `evaluation.batchSize` windows that hold
 * {@link VALIDATION_WINDOW_SHARE} of the windows trained between two validations, at least one.
 *
 * @param config - `validateEvery` and the two batch sizes.
 * @returns the batch count.
 */
export function defaultEvaluationBatches(config: { readonly validateEvery: number; readonly updateBatchSize: number; readonly evaluationBatchSize: number }): number {
  return Math.max(1, Math.ceil((config.validateEvery * config.updateBatchSize * VALIDATION_WINDOW_SHARE) / config.evaluationBatchSize));
}

const dataSourceSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('corpus'), corpus: z.string().min(1), split: z.string().min(1) }),
  z.strictObject({
    kind: z.literal('text'),
    path: z.string().min(1),
    documents: z.enum(['auto', 'paragraphs', 'lines', 'file', 'jsonl']).default('auto'),
    validationFraction: z.number().gt(0).lt(1).default(0.05),
    testFraction: z.number().nonnegative().lt(1).default(0),
  }),
  z.strictObject({
    kind: z.literal('inline'),
    documents: z
      .array(
        z.strictObject({
          id: z.string().min(1),
          partition: z.enum(['train', 'validation', 'test']),
          text: z.string().min(1),
        }),
      )
      .min(1),
  }),
]);

const tokenizerSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('literal'),
    pieces: z
      .array(z.string().min(1))
      .min(1)
      .refine((p) => new Set(p).size === p.length, 'pieces must be distinct'),
  }),
  z.strictObject({ kind: z.literal('bpe'), merges: nonNegativeInt.max(65_536).default(256), requireAll: z.boolean().default(false) }),
  z.strictObject({ kind: z.literal('file'), path: z.string().min(1) }),
]);

const scheduleSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('constant'), rate: positiveFinite.nullable().default(null) }),
  z.strictObject({ kind: z.literal('list'), rates: z.array(positiveFinite).min(1) }),
  z.strictObject({
    kind: z.literal('warmup-cosine'),
    peak: positiveFinite.nullable().default(null),
    warmupSteps: nonNegativeInt.default(100),
    floor: positiveFinite.nullable().default(null),
    totalSteps: positiveInt.nullable().default(null),
  }),
]);

const engineSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('llmcp') }),
  z.strictObject({
    kind: z.literal('torch'),
    worldSize: positiveInt.max(MAX_WORLD_SIZE).default(1),
    device: z.enum(['cpu', 'cuda']).default('cpu'),
    dtype: z.enum(['f64', 'f32']).default('f64'),
    threadsPerRank: positiveInt.max(1024).default(1),
  }),
]);

const base = z.strictObject({
    $schema: z.string().optional(),
    steps: positiveInt.default(2000),
    data: z
      .strictObject({
        source: dataSourceSchema,
        contextLength: positiveInt.default(64),
        windows: z.enum(['documents', 'packed']).optional(),
        stride: positiveInt.optional(),
        batchSize: positiveInt.default(8),
        shuffle: z
          .strictObject({ seed: seed.default(1), epochs: z.enum(['repeat', 'reshuffle']).default('reshuffle') })
          .prefault({}),
      }),
    tokenizer: tokenizerSchema.prefault({ kind: 'bpe' }),
    model: z
      .strictObject({
        width: positiveInt.default(64),
        heads: positiveInt.default(4),
        feedForwardWidth: positiveInt.default(256),
        layers: nonNegativeInt.default(2),
        // At most 2^16: no context this f64 trainer can run comes near it (the attention weights of
        // one layer at 2^16 positions are 32 GiB per head), and it keeps every checkpoint it writes
        // cheap for readers that build RoPE tables for all declared positions up front.
        maxPositions: positiveInt.max(65_536, 'expected at most 65536 (2^16) positions').nullable().default(null),
        ropeBase: positiveFinite.default(10000),
        rmsEpsilon: z.number().nonnegative().refine(Number.isFinite, 'expected a finite number').default(1e-6),
        initSeed: seed.default(1),
      })
      .prefault({}),
    optimizer: z
      .strictObject({
        learningRate: positiveFinite.default(0.003),
        beta1: unitInterval.default(0.9),
        beta2: unitInterval.default(0.999),
        epsilon: positiveFinite.default(1e-8),
        weightDecay: z.number().nonnegative().refine(Number.isFinite, 'expected a finite number').default(0.01),
        groups: z.enum(['gain-no-decay', 'none']).default('gain-no-decay'),
        clipNorm: positiveFinite.nullable().default(1),
      })
      .prefault({}),
    schedule: scheduleSchema.prefault({ kind: 'warmup-cosine' }),
    evaluation: z
      .strictObject({
        validateEvery: positiveInt.default(100),
        batchSize: positiveInt.default(64),
        stride: positiveInt.nullable().default(null),
        trainingLoss: z.boolean().default(false),
        trainingBatchSize: positiveInt.nullable().default(null),
        maxBatches: positiveInt.nullable().optional(),
      })
      .prefault({}),
    checkpoint: z
      .strictObject({
        every: positiveInt.nullable().default(null),
        keepSteps: nonNegativeInt.default(3),
        keepEvery: positiveInt.nullable().default(null),
        everyMinutes: positiveFinite.nullable().default(null),
      })
      .prefault({}),
    sampling: z
      .strictObject({
        seed: seed.default(1),
        discard: nonNegativeInt.max(1_000_000).default(0),
        prompt: z.string().default(''),
        count: nonNegativeInt.max(64).default(2),
        maxNewTokens: positiveInt.max(4096).default(48),
        temperature: z.number().nonnegative().refine(Number.isFinite, 'expected a finite number').default(0.8),
        topK: positiveInt.nullable().default(null),
      })
      .prefault({}),
    log: z.strictObject({ timing: z.boolean().default(true) }).prefault({}),
    threads: positiveInt.max(MAX_THREADS).default(() => defaultThreads()),
    engine: engineSchema.optional(),
});

/** The defaults that depend on other keys: the window mode (by source), the stride (by mode) and the evaluation budget. */
function withDerivedDefaults(c: z.output<typeof base>) {
  const windows: 'documents' | 'packed' = c.data.windows ?? (c.data.source.kind === 'text' ? 'packed' : 'documents');
  const stride: number = c.data.stride ?? (windows === 'packed' ? c.data.contextLength : 1);
  const maxBatches: number | null =
    c.evaluation.maxBatches !== undefined
      ? c.evaluation.maxBatches
      : defaultEvaluationBatches({ validateEvery: c.evaluation.validateEvery, updateBatchSize: c.data.batchSize, evaluationBatchSize: c.evaluation.batchSize });
  return { ...c, data: { ...c.data, windows, stride }, evaluation: { ...c.evaluation, maxBatches } };
}

const schema = base
  .transform(withDerivedDefaults)
  .superRefine((c, ctx) => {
    // The decoder's shape rules are the format's (one home); the vocabulary comes from the tokenizer, checked there.
    const m = c.model;
    const shape = decoderConfigProblem({ vocabularySize: 1, modelWidth: m.width, heads: m.heads, feedForwardWidth: m.feedForwardWidth, layers: m.layers, maxPositions: m.maxPositions ?? c.data.contextLength, ropeBase: m.ropeBase, rmsEpsilon: m.rmsEpsilon });
    if (shape !== null) ctx.addIssue({ code: 'custom', path: ['model', shape.field === 'modelWidth' ? 'width' : shape.field], message: shape.message });
    if (c.model.maxPositions !== null && c.model.maxPositions < c.data.contextLength) {
      ctx.addIssue({
        code: 'custom',
        path: ['model', 'maxPositions'],
        message: `expected at least data.contextLength (${c.data.contextLength}), found ${c.model.maxPositions}`,
      });
    }
    if (c.schedule.kind === 'list' && c.schedule.rates.length < c.steps) {
      ctx.addIssue({
        code: 'custom',
        path: ['schedule', 'rates'],
        message: `the list schedule has ${c.schedule.rates.length} rates but steps is ${c.steps}; give one rate per step`,
      });
    }
    if (c.schedule.kind === 'warmup-cosine') {
      const peak = c.schedule.peak ?? c.optimizer.learningRate;
      const total = c.schedule.totalSteps ?? c.steps;
      if (total <= c.schedule.warmupSteps) {
        ctx.addIssue({ code: 'custom', path: ['schedule', 'warmupSteps'], message: `expected fewer warm-up steps than the schedule's ${total} total steps, found ${c.schedule.warmupSteps}` });
      }
      if (c.schedule.floor !== null && c.schedule.floor > peak) {
        ctx.addIssue({ code: 'custom', path: ['schedule', 'floor'], message: `expected at most the peak rate ${peak}, found ${c.schedule.floor}` });
      }
    }
    const every = c.checkpoint.every ?? c.evaluation.validateEvery;
    if (every % c.evaluation.validateEvery !== 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['checkpoint', 'every'],
        message: `expected a multiple of evaluation.validateEvery (${c.evaluation.validateEvery}), found ${every}`,
      });
    }
    if (c.checkpoint.keepEvery !== null && c.checkpoint.keepEvery % every !== 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['checkpoint', 'keepEvery'],
        message: `expected a multiple of the checkpoint cadence (${every} steps), found ${c.checkpoint.keepEvery}`,
      });
    }
    const adamw = adamwConfigProblem(c.optimizer);
    if (adamw !== null) ctx.addIssue({ code: 'custom', path: ['optimizer', adamw.field], message: `expected ${adamw.expected}, found ${adamw.found}` });
  });

/**
 * The zod schema of {@link TrainerConfig}. `parse` applies every default.
 *
 * @example
 * ```ts
 * const config = trainerConfigSchema.parse({ data: { source: { kind: 'text', path: 'stories.txt' } } });
 * ```
 */
export const trainerConfigSchema: z.ZodType<TrainerConfig> = schema;

/** Readonly all the way down (the schema's output is mutable; the config is not). */
type DeepReadonly<T> = T extends readonly (infer E)[] ? readonly DeepReadonly<E>[] : T extends object ? { readonly [K in keyof T]: DeepReadonly<T[K]> } : T;
/** Exact type equality (not mere assignability). */
type Equals<A, B> = (<X>() => X extends A ? 1 : 2) extends <X>() => X extends B ? 1 : 2 ? true : false;
/** Compile-time proof that {@link TrainerConfig} is exactly the schema's output type (a mismatch fails `tsc`). */
type SchemaMatchesType = Equals<DeepReadonly<z.output<typeof schema>>, TrainerConfig>;
const schemaMatchesType: SchemaMatchesType = true;
void schemaMatchesType;

function describeIssue(issue: z.core.$ZodIssue): string {
  const where = issue.path.length === 0 ? 'config' : `config.${issue.path.map(String).join('.')}`;
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((k) => `${where === 'config' ? 'config' : where}.${k}: unknown key`).join('; ');
  }
  return `${where}: ${issue.message}`;
}

/**
 * Validates a config object and applies the defaults.
 *
 * @param input - parsed JSON (or an object literal).
 * @returns the complete config.
 * @throws TrainerError `TRAINER_CONFIG_INVALID` naming every bad or unknown key.
 */
export function parseConfig(input: unknown): TrainerConfig {
  const result = schema.safeParse(input);
  if (!result.success) {
    const messages = result.error.issues.map(describeIssue);
    const fields = result.error.issues.map((i) => i.path.map(String).join('.'));
    throw new TrainerError('TRAINER_CONFIG_INVALID', `invalid trainer config: ${messages.join('; ')}`, { fields });
  }
  // The llmcp engine is the absence of an engine block: configs (and digests) of llmcp runs stay as they always were.
  if (result.data.engine?.kind === 'llmcp') {
    const { engine: _llmcp, ...rest } = result.data;
    return rest;
  }
  return result.data;
}

/**
 * The config keys added since configs were first recorded, with the value a
 * recorded config that lacks one meant (one home for the rule): a recorded
 * config is always written complete, so a missing key proves it was recorded
 * before the key existed. `data.windows` was `documents` (windows inside
 * documents) for every source; the checkpoint keys added with it default to
 * what they meant anyway (`null`).
 */
const KEYS_ADDED_SINCE_RECORDED: readonly { readonly path: readonly string[]; readonly meant: unknown }[] = [{ path: ['data', 'windows'], meant: 'documents' }];

/**
 * Reads a config recorded in a run (job.json, run.json, a pivot archive):
 * keys added since it was written get the values that reproduce what it
 * meant (a text run recorded before `data.windows` existed keeps its windows
 * inside documents), then it is validated like any config.
 *
 * @param recorded - the config as recorded (parsed JSON).
 * @returns the complete config.
 * @throws TrainerError `TRAINER_CONFIG_INVALID` naming every bad key.
 */
export function readRecordedConfig(recorded: unknown): TrainerConfig {
  if (recorded === null || typeof recorded !== 'object' || Array.isArray(recorded)) return parseConfig(recorded);
  const copy = structuredClone(recorded) as Record<string, unknown>;
  for (const { path: keys, meant } of KEYS_ADDED_SINCE_RECORDED) {
    let node: Record<string, unknown> | null = copy;
    for (const key of keys.slice(0, -1)) {
      const next: unknown = node[key];
      node = next !== null && typeof next === 'object' && !Array.isArray(next) ? (next as Record<string, unknown>) : null;
      if (node === null) break;
    }
    const last = keys.at(-1) as string;
    if (node !== null && !Object.hasOwn(node, last)) node[last] = meant;
  }
  return parseConfig(copy);
}

/**
 * Returns a copy of `config` whose file paths are absolute, resolved against `baseDir`.
 *
 * @param config - a validated config.
 * @param baseDir - directory that relative paths are relative to.
 * @returns the config with absolute paths.
 */
export function resolveConfigPaths(config: TrainerConfig, baseDir: string): TrainerConfig {
  const abs = (p: string): string => path.resolve(baseDir, p);
  const source = config.data.source;
  const resolvedSource: DataSourceConfig =
    source.kind === 'corpus'
      ? { ...source, corpus: abs(source.corpus), split: abs(source.split) }
      : source.kind === 'text'
        ? { ...source, path: abs(source.path) }
        : source;
  const tokenizer: TokenizerConfig = config.tokenizer.kind === 'file' ? { ...config.tokenizer, path: abs(config.tokenizer.path) } : config.tokenizer;
  return { ...config, data: { ...config.data, source: resolvedSource }, tokenizer };
}

/**
 * Reads, validates and defaults a JSON config file; relative paths inside it
 * are resolved against the file's directory.
 *
 * @param file - path of the JSON config.
 * @returns the complete config with absolute paths.
 * @throws TrainerError `TRAINER_CONFIG_UNREADABLE` or `TRAINER_CONFIG_INVALID`.
 */
export function loadConfig(file: string): TrainerConfig {
  return resolveConfigPaths(parseConfig(readConfigFile(file)), path.dirname(path.resolve(file)));
}

/**
 * Reads a JSON config file as it is written (not validated, no defaults, paths
 * as written): the input that overrides apply to before `parseConfig`.
 *
 * @param file - path of the JSON config.
 * @returns the parsed JSON.
 * @throws TrainerError `TRAINER_CONFIG_UNREADABLE` when it cannot be read or is not JSON.
 */
export function readConfigFile(file: string): unknown {
  // The input rule: a regular file (a FIFO or device is refused, never waited on), at most the longest string.
  const bytes = readInputFile(file, { what: 'config file', code: 'TRAINER_CONFIG_UNREADABLE', maxBytes: MAX_TEXT_FILE_BYTES });
  const valid = utf8ValidUpTo(bytes);
  if (valid !== bytes.length) throw new TrainerError('TRAINER_CONFIG_UNREADABLE', `config file ${file} is not valid UTF-8 (at byte ${valid})`, { path: file });
  return parseConfigJson(new TextDecoder().decode(bytes), file);
}

/**
 * Refuses the JSON text of a config or of a `--set` value that nests deeper
 * than `MAX_JSON_DEPTH` (`@llmcp/data`'s limit), before it is parsed: the
 * schema, the copy of overrides and the canonical digest all walk the value
 * recursively, and a config is a few levels deep.
 *
 * @param text - the JSON text.
 * @param where - what it is, for messages (`config file x.json`, `override steps`).
 * @param error - the code, and the path or field involved.
 * @throws TrainerError with `error.code` when it nests too deep.
 */
export function assertConfigJsonDepth(
  text: string,
  where: string,
  error: { readonly code: 'TRAINER_CONFIG_UNREADABLE' | 'TRAINER_CONFIG_INVALID'; readonly path?: string; readonly fields?: readonly string[] },
): void {
  const deep = jsonDepthExceeded(text);
  if (deep === null) return;
  const { code, ...context } = error;
  throw new TrainerError(code, `${where} nests deeper than ${MAX_JSON_DEPTH} levels (at character ${deep}); a config is a few levels deep`, context);
}

function parseConfigJson(text: string, file: string): unknown {
  assertConfigJsonDepth(text, `config file ${file}`, { code: 'TRAINER_CONFIG_UNREADABLE', path: file });
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new TrainerError('TRAINER_CONFIG_UNREADABLE', `config file ${file} is not valid JSON: ${(cause as Error).message}`, { path: file, cause });
  }
}
