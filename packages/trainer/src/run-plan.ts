/**
 * What a run will do before it does it: how much of the text its windows
 * reach, what an epoch is, how often it validates and on how many batches
 * (`runPlanOf`, shown when a run starts and by a dry run, dry-run.ts).
 */
import { checkpointEvery } from './cadence.ts';
import type { TrainerConfig } from './config.ts';
import type { TrainingEngine } from './engine.ts';
import type { PreparedInputs } from './inputs.ts';

/** How the run's data and evaluation are laid out (from the engine; no timing). */
export interface RunPlan {
  /** Parameters of the model. */
  readonly parameters: number;
  /** Tokens of the train partition (every document, BOS and EOS included). */
  readonly trainingTokens: number;
  /** Tokens of the train partition inside at least one update window. */
  readonly coveredTokens: number;
  /** Update windows (`data.windows`, context length, stride). */
  readonly windows: number;
  /** Update steps in one epoch: one pass over the update windows (with the default packed stride, over the training tokens). */
  readonly stepsPerEpoch: number;
  /** Epochs the step budget runs. */
  readonly epochs: number;
  /** How windows are cut (`data.windows`), the context length and the stride. */
  readonly windowMode: TrainerConfig['data']['windows'];
  readonly contextLength: number;
  readonly stride: number;
  /** Training documents, and those that give no window (shorter than a window under `documents`) with their tokens. */
  readonly documents: number;
  readonly documentsWithoutWindow: number;
  readonly tokensWithoutWindow: number;
  /** Files of a text source: the rule each was divided by, its documents and its skipped records. */
  readonly files: readonly { readonly path: string; readonly documents: string; readonly documentCount: number; readonly skippedRecords: number }[];
  /** Documents of each partition. */
  readonly partitions: { readonly train: number; readonly validation: number; readonly test: number };
  /** Validation cadence and budget: batches evaluated per pass and available (`evaluation.maxBatches`). */
  readonly evaluation: {
    readonly validateEvery: number;
    readonly checkpointEvery: number;
    /** Evaluation passes over the step budget (step 0, every N, the last step). */
    readonly passes: number;
    readonly validationBatches: number;
    readonly validationBatchesAvailable: number;
    readonly trainingBatches: number;
    readonly trainingBatchesAvailable: number;
  };
}

/**
 * The plan of a run on its prepared inputs and engine.
 *
 * @param config - the run config.
 * @param inputs - its prepared inputs.
 * @param engine - its engine (not advanced).
 * @returns the plan.
 */
export function runPlanOf(config: TrainerConfig, inputs: PreparedInputs, engine: TrainingEngine): RunPlan {
  const c = engine.coverage;
  const N = config.evaluation.validateEvery;
  const lists = engine.evaluationLists;
  return {
    parameters: engine.parameterCount,
    trainingTokens: c.tokens,
    coveredTokens: c.coveredTokens,
    windows: c.windows,
    stepsPerEpoch: engine.stepsPerEpoch,
    epochs: config.steps / engine.stepsPerEpoch,
    windowMode: config.data.windows,
    contextLength: config.data.contextLength,
    stride: config.data.stride,
    documents: c.documents,
    documentsWithoutWindow: c.documentsWithoutWindow,
    tokensWithoutWindow: c.tokensWithoutWindow,
    files: inputs.textFiles.map((f) => ({ path: f.path, documents: f.documents, documentCount: f.documentCount, skippedRecords: f.skippedRecords })),
    partitions: { train: inputs.identity.split.train, validation: inputs.identity.split.validation, test: inputs.identity.split.test },
    evaluation: {
      validateEvery: N,
      checkpointEvery: checkpointEvery(config),
      passes: 1 + Math.floor(config.steps / N) + (config.steps % N === 0 ? 0 : 1),
      validationBatches: lists.validation.batches,
      validationBatchesAvailable: lists.validation.available,
      trainingBatches: lists.training.batches,
      trainingBatchesAvailable: lists.training.available,
    },
  };
}

const count = (n: number): string => n.toLocaleString('en-US');
/** A share as a percentage with two decimals, rounded down (never 100.00% for a share short of the whole). */
const percent = (part: number, whole: number): string => (whole === 0 || part === whole ? `${whole === 0 ? 0 : 100}%` : `${(Math.floor((10_000 * part) / whole) / 100).toFixed(2)}%`);

/**
 * The lines that say what a run trains on and how it validates (printed when
 * a run starts and by a dry run): the tokens its windows reach, the epoch,
 * the documents each file gave, any text left out (never silently), and the
 * validation budget with the key that changes it.
 *
 * @param plan - from {@link runPlanOf}.
 * @returns lines without newlines.
 */
export function describeRunPlan(plan: RunPlan): string[] {
  const lines: string[] = [];
  const mode = plan.windowMode === 'packed' ? 'packed windows' : 'windows inside documents';
  lines.push(
    `data: ${count(plan.trainingTokens)} training tokens in ${count(plan.documents)} documents, ${percent(plan.coveredTokens, plan.trainingTokens)} in ${count(plan.windows)} ${mode} of ${plan.contextLength} (stride ${plan.stride}); ` +
      `an epoch is ${count(plan.stepsPerEpoch)} steps, the budget ${plan.epochs >= 10 ? plan.epochs.toFixed(0) : plan.epochs.toFixed(2)} epochs`,
  );
  if (plan.files.length > 0) {
    const shown = plan.files.slice(0, 4).map((f) => `${f.path}: ${count(f.documentCount)} ${f.documents === 'lines' ? 'lines' : f.documents === 'paragraphs' ? 'paragraphs' : f.documents === 'jsonl' ? 'records' : 'file'}${f.skippedRecords > 0 ? `, ${count(f.skippedRecords)} records without text skipped` : ''}`);
    const more = plan.files.length > 4 ? `, and ${plan.files.length - 4} more files` : '';
    lines.push(`  documents (data.source.documents): ${shown.join('; ')}${more}; partitions train ${count(plan.partitions.train)}, validation ${count(plan.partitions.validation)}, test ${count(plan.partitions.test)}`);
  }
  if (plan.documentsWithoutWindow > 0) {
    lines.push(
      `  not trained on: ${count(plan.documentsWithoutWindow)} of ${count(plan.documents)} documents (${count(plan.tokensWithoutWindow)} tokens, ${percent(plan.tokensWithoutWindow, plan.trainingTokens)}) are shorter than a window of ${plan.contextLength + 1} tokens; --set data.windows=packed trains on them`,
    );
  }
  const uncovered = plan.trainingTokens - plan.coveredTokens - plan.tokensWithoutWindow;
  if (uncovered > 0) lines.push(`  not trained on: ${count(uncovered)} tokens past the last window (${plan.windowMode === 'packed' ? 'the end of the packed stream' : 'document tails shorter than a stride'})`);
  const e = plan.evaluation;
  const budget = e.validationBatches < e.validationBatchesAvailable ? `${count(e.validationBatches)} of ${count(e.validationBatchesAvailable)} batches` : `all ${count(e.validationBatchesAvailable)} batches`;
  lines.push(
    `validation: ${budget} at step 0, every ${count(e.validateEvery)} steps and at the end (${count(e.passes)} passes)` +
      (e.trainingBatches > 0 ? `, and ${count(e.trainingBatches)} training-loss batches` : '') +
      `; change with --set evaluation.maxBatches=<n> (null: all)`,
  );
  return lines;
}
