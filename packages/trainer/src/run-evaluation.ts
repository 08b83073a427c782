/**
 * Final evaluation of a run's checkpoint slot or of a bare checkpoint file:
 * loads and verifies the selected state, re-reads the inputs the run recorded
 * (refusing any that changed), and calls {@link evaluateFinal} once.
 */
import { decodeCheckpoint, type CheckpointState } from '@llmcp/format';
import { parseCorpus, parseSplitManifest, partitionCorpus } from '@llmcp/data';
import { tokenizerFromState } from '@llmcp/tokenizer';
import type { TrainerConfig } from './config.ts';
import { TrainerError } from './errors.ts';
import { readInputFile } from './internal/input-file.ts';
import { evaluateFinal, type EvaluationDocument, type FinalEvaluation } from './final-evaluation.ts';
import { diffInputs, prepareInputs, type PreparedInputs } from './inputs.ts';
import type { Job } from './job.ts';
import { windowDocuments } from './llmcp-engine.ts';
import { loadBestCheckpoint, verifySlot, type VerifiedSlot } from './run-directory.ts';

/** A final evaluation of a run slot, with what it was computed from. */
export interface RunEvaluation {
  readonly slot: string;
  readonly job: Job;
  readonly state: CheckpointState;
  readonly inputs: PreparedInputs;
  readonly evaluation: FinalEvaluation;
}

const documents = (ids: readonly string[], tokens: readonly Uint32Array[]): EvaluationDocument[] => tokens.map((t, i) => ({ id: ids[i] as string, tokens: t }));

/**
 * A partition as the run's windows see it: its documents, or under
 * `data.windows` `packed` one stream of them (id `<partition>:packed`), so the
 * test windows are cut as the run's validation windows were.
 */
function partitionDocuments(config: TrainerConfig, name: 'train' | 'test', partition: { readonly ids: readonly string[]; readonly tokens: readonly Uint32Array[] }): EvaluationDocument[] {
  const { ids, tokens } = partition;
  if (config.data.windows !== 'packed') return documents(ids, tokens);
  return tokens.length === 0 ? [] : [{ id: `${name}:packed`, tokens: windowDocuments(config, tokens)[0] as Uint32Array }];
}

/**
 * Loads a verified slot of a run (default `best`, the validation-selected state).
 *
 * @param runDir - the run directory.
 * @param slot - slot name, or undefined for `best` (else `best.backup`).
 * @returns the verified slot.
 * @throws TrainerError `TRAINER_NO_CHECKPOINT` when the run has no verifying best slot, or the errors of `verifySlot`.
 */
export async function loadSelectedSlot(runDir: string, slot?: string): Promise<VerifiedSlot> {
  if (slot !== undefined) return verifySlot(runDir, slot);
  const best = await loadBestCheckpoint(runDir);
  if (best === null) throw new TrainerError('TRAINER_NO_CHECKPOINT', `${runDir} has no best checkpoint yet (no validation has selected a state)`, { path: runDir });
  return best;
}

/**
 * Prepares the recorded inputs of a slot and refuses them if they changed.
 *
 * @param verified - the verified slot.
 * @returns the inputs (tokenizer from the checkpoint).
 * @throws TrainerError `TRAINER_INPUT_CHANGED` when the corpus, split, tokenizer or implementation differ.
 */
export async function recordedInputs(verified: VerifiedSlot): Promise<PreparedInputs> {
  const config: TrainerConfig = verified.job.config;
  const inputs = await prepareInputs(config, { tokenizerState: verified.state.tokenizer });
  const changes = diffInputs(verified.job.inputs, inputs.identity);
  if (changes.length > 0) {
    throw new TrainerError('TRAINER_INPUT_CHANGED', `the inputs of ${verified.slot} changed since it was written: ${changes.join('; ')}`, { fields: changes.map((c) => c.split(':')[0] ?? c) });
  }
  return inputs;
}

/**
 * The final evaluation of a run (../../../docs/spec/tokenizer-and-data.md §5.2): the selected
 * (`best`) slot, or a named one, scored once on the run's test partition with
 * the run's context length, evaluation stride and evaluation batch size,
 * against a bigram fitted on its train partition.
 *
 * @param runDir - the run directory.
 * @param options - `slot`: a slot name instead of `best`; `alpha`: bigram smoothing (default 1).
 * @returns the evaluation with the slot, job, state and inputs it used.
 * @throws TrainerError `TRAINER_NO_CHECKPOINT`, `TRAINER_INPUT_CHANGED`, `TRAINER_INPUT_INVALID` (no test window), and the slot verification errors.
 * @example
 * ```ts
 * const { evaluation } = await evaluateRun('runs/ch34');
 * evaluation.decoder.meanNll < evaluation.bigram.meanNll;
 * ```
 */
export async function evaluateRun(runDir: string, options: { readonly slot?: string; readonly alpha?: number } = {}): Promise<RunEvaluation> {
  const verified = await loadSelectedSlot(runDir, options.slot);
  const { job, state } = verified;
  const inputs = await recordedInputs(verified);
  const config = job.config;
  const selection =
    options.slot === undefined && job.best !== null
      ? { step: job.best.step, validationLoss: job.best.validationLoss }
      : { step: job.step, validationLoss: job.evaluations.find((e) => e.step === job.step)?.validationLoss ?? null };
  const evaluation = await evaluateFinal({
    state,
    selection,
    train: partitionDocuments(config, 'train', { ids: inputs.documentIds.train, tokens: inputs.partitions.train }),
    test: partitionDocuments(config, 'test', { ids: inputs.documentIds.test, tokens: inputs.partitions.test }),
    contextLength: config.data.contextLength,
    stride: config.evaluation.stride ?? config.data.stride,
    batchSize: config.evaluation.batchSize,
    ...(options.alpha === undefined ? {} : { alpha: options.alpha }),
  });
  return { slot: verified.slot, job, state, inputs, evaluation };
}

/** Options of {@link evaluateCheckpointFile}. */
export interface CheckpointEvaluationOptions {
  /** The reference-format JSON corpus (../../../docs/spec/tokenizer-and-data.md §1). */
  readonly corpus: string;
  /** Its split manifest. */
  readonly split: string;
  /** Context length (default: the decoder's `maxPositions`). */
  readonly contextLength?: number;
  /** Window stride (default 1). */
  readonly stride?: number;
  /** Evaluation batch size (default 128). */
  readonly batchSize?: number;
  /** Bigram smoothing (default 1). */
  readonly alpha?: number;
}

/**
 * The final evaluation of a bare LLMCP35 checkpoint on a corpus and split:
 * the documents are encoded with the checkpoint's own tokenizer; the
 * selection is the checkpoint's selected step (its validation loss is not
 * stored in the file, so it is `null`).
 *
 * @param file - the `.llmcp` file.
 * @param options - corpus, split, T, stride, batch size, α.
 * @returns the evaluation and the decoded state.
 * @throws TrainerError `TRAINER_STATE_INVALID` for a file that does not decode, `TRAINER_INPUT_INVALID` for bad inputs.
 */
export async function evaluateCheckpointFile(file: string, options: CheckpointEvaluationOptions): Promise<{ readonly state: CheckpointState; readonly evaluation: FinalEvaluation }> {
  const read = (f: string, what: string): Uint8Array => readInputFile(f, { what, code: 'TRAINER_INPUT_INVALID' });
  let state: CheckpointState;
  try {
    state = decodeCheckpoint(read(file, 'checkpoint'));
  } catch (cause) {
    if (cause instanceof TrainerError) throw cause;
    throw new TrainerError('TRAINER_STATE_INVALID', `${file} is not a valid LLMCP35 checkpoint: ${(cause as Error).message}`, { path: file, cause });
  }
  let train: EvaluationDocument[];
  let test: EvaluationDocument[];
  try {
    const corpus = parseCorpus(read(options.corpus, 'corpus'));
    const partitions = partitionCorpus(corpus, parseSplitManifest(read(options.split, 'split manifest')));
    const tokenizer = tokenizerFromState(state.tokenizer);
    train = partitions.train.map((d) => ({ id: d.id, tokens: tokenizer.encodeDocument(d.bytes) }));
    test = partitions.test.map((d) => ({ id: d.id, tokens: tokenizer.encodeDocument(d.bytes) }));
  } catch (cause) {
    if (cause instanceof TrainerError) throw cause;
    throw new TrainerError('TRAINER_INPUT_INVALID', `invalid evaluation inputs: ${(cause as Error).message}`, { cause });
  }
  const evaluation = await evaluateFinal({
    state,
    selection: { step: Number(state.selectedStep), validationLoss: null },
    train,
    test,
    contextLength: options.contextLength ?? state.decoder.maxPositions,
    stride: options.stride ?? 1,
    batchSize: options.batchSize ?? 128,
    ...(options.alpha === undefined ? {} : { alpha: options.alpha }),
  });
  return { state, evaluation };
}
