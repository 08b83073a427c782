/**
 * The end-to-end report of a run (the reference's chapter 39): data,
 * tokenizer, model, training and selection, the one final evaluation, the
 * checkpoint's structure and reload checks, and generation from the reloaded
 * checkpoint — each value derived from the run's files and a fresh
 * computation, never copied from a reference.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decodeCheckpoint, encodeCheckpoint, SplitMix64, type CheckpointState, type NamedTensor } from '@llmcp/format';
import { inspectCheckpoint } from '@llmcp/format/inspect';
import { MAX_FILE_BYTES, MAX_TEXT_FILE_BYTES, readRegularFileSync } from '@llmcp/format/node';
import { readInputFile } from './internal/input-file.ts';
import { Decoder, generate, type Generation, type SamplingMode } from '@llmcp/model';
import { causalWindows, evaluationBatches, parseCorpus, parseSplitManifest } from '@llmcp/data';
import { tokenizerFromState } from '@llmcp/tokenizer';
import { TrainerError } from './errors.ts';
import type { FinalEvaluation } from './final-evaluation.ts';
import { learnedTokenizerIdentity, prepareInputs } from './inputs.ts';
import { newestCandidateJob, RUN_FILES } from './run-directory.ts';
import { evaluateRun } from './run-evaluation.ts';
import { trainRun } from './run.ts';
import { auditSettingsOf, sampleAuditOn, type SampleAudit } from './sample-audit.ts';
import { windowDocuments } from './llmcp-engine.ts';

/** Options of {@link reportRun}. */
export interface RunReportOptions {
  /** Slot to report (default `best`, the selected state). */
  readonly slot?: string;
  /** Train the recorded config again from scratch in a temporary directory and compare the selected state's bytes (default false). */
  readonly replay?: boolean;
  /** Text whose logits are compared between the reloaded and the in-memory model (default `At`, the reference's probe). */
  readonly logitProbe?: string;
}

/** The end-to-end report of a run. */
export interface RunReport {
  readonly data: {
    /** The corpus checksum: the FNV-1a 64 label of a JSON corpus (../../../docs/spec/tokenizer-and-data.md §1.4), else the SHA-256 identity. */
    readonly checksum: string;
    /** The split strategy (the manifest's), `inline` or `hash-split`. */
    readonly split: string;
    readonly train: readonly string[];
    readonly validation: readonly string[];
    readonly test: readonly string[];
  };
  readonly tokenizer: {
    /** Byte-level BPE layout version (1), or null for a literal tokenizer. */
    readonly layout: number | null;
    readonly requestedMerges: number | null;
    readonly learnedMerges: number | null;
    /** A tokenizer learned afresh from the train partition alone equals the stored one (null when not learned). */
    readonly trainingOnly: boolean | null;
    readonly vocabularySize: number;
    /** Encoded tokens of train, validation, test (BOS/EOS included). */
    readonly encodedTokens: readonly [number, number, number];
  };
  readonly model: {
    readonly layers: number;
    readonly heads: number;
    readonly width: number;
    readonly feedForward: number;
    readonly context: number;
    readonly parameters: number;
    readonly updateBatchSize: number;
    readonly evaluationBatchSize: number;
    /** Windows of the update list, the validation list and the test list. */
    readonly windows: readonly [number, number, number];
    /** Batches of the training-evaluation, validation and test lists. */
    readonly evaluationBatches: readonly [number, number, number];
  };
  readonly training: {
    readonly updates: number;
    readonly seed: number;
    readonly checkpoints: readonly { readonly step: number; readonly trainingLoss: number | null; readonly validationLoss: number; readonly selected: boolean }[];
    readonly selectedStep: number;
    readonly selectedValidationLoss: number | null;
    readonly optimizerStep: number;
    /** Whether a from-scratch replay gave identical selected-state bytes; null when not run. */
    readonly replayBitwise: boolean | null;
  };
  readonly evaluation: FinalEvaluation;
  readonly checkpoint: {
    readonly slot: string;
    readonly bytes: number;
    readonly header: number;
    readonly records: number;
    readonly checksum: string;
    readonly selectedStep: number;
    readonly optimizerStep: number;
    readonly rngState: bigint;
    readonly bytesRoundtrip: boolean;
    readonly modelBitsExact: boolean;
    readonly optimizerBitsExact: boolean;
    readonly tokenizerExact: boolean;
    readonly logitProbe: string;
    readonly logitProbeIds: readonly number[];
    readonly promptLogitsBitwise: boolean;
  };
  readonly generation: {
    readonly prompt: string;
    readonly promptIds: readonly number[];
    readonly temperature: number;
    readonly topK: number | null;
    readonly seed: number;
    readonly generated: readonly number[];
    /** Text of the new tokens (a final EOS dropped), or null when not valid UTF-8. */
    readonly text: string | null;
    /** Prefix length before each choice. */
    readonly prefixes: readonly number[];
    readonly stop: 'eos' | 'token-limit' | 'context-limit';
    /** Tokens a key/value cache processes: the prompt in one prefill, then one decode per fed-back token. */
    readonly prefill: number;
    readonly decode: number;
    readonly finalCache: number;
    /** Causal attention scores (per head and layer) a cached generation computes: Σ over its forward calls of new rows × cached keys. */
    readonly cachedScores: number;
    /** Attention scores a complete-prefix recomputation calculates: Σ over choices of prefix² (masked cells included). */
    readonly completePrefixScores: number;
    readonly rngInitial: bigint;
    readonly rngFinal: bigint;
    /** Generated ids equal the run's own sample audit (samples.json) of this checkpoint; true when there is none to compare but a second generation agrees. */
    readonly tokensExact: boolean;
    /** A second, independent generation made identical decisions (same logits, probabilities and draws, bit for bit). */
    readonly decisionsBitwise: boolean;
    /** The final generator state equals the run's recorded next state and the second generation's. */
    readonly rngExact: boolean;
  };
}

function tensorsEqual(a: readonly NamedTensor[], b: readonly NamedTensor[]): boolean {
  if (a.length !== b.length) return false;
  return a.every((t, i) => {
    const u = b[i] as NamedTensor;
    return t.name === u.name && t.shape.join(',') === u.shape.join(',') && bitsEqual(t.data, u.data);
  });
}

function bitsEqual(a: Float64Array, b: Float64Array): boolean {
  if (a.length !== b.length) return false;
  const x = new BigUint64Array(new Float64Array(a).buffer);
  const y = new BigUint64Array(new Float64Array(b).buffer);
  return x.every((v, i) => v === y[i]);
}

function optimizerEqual(a: CheckpointState['optimizer'], b: CheckpointState['optimizer']): boolean {
  return (
    a.step === b.step &&
    Object.is(a.beta1Power, b.beta1Power) &&
    Object.is(a.beta2Power, b.beta2Power) &&
    JSON.stringify(a.config) === JSON.stringify(b.config) &&
    JSON.stringify(a.groups) === JSON.stringify(b.groups) &&
    a.moments.length === b.moments.length &&
    a.moments.every((m, i) => {
      const n = b.moments[i];
      return n !== undefined && m.name === n.name && bitsEqual(m.first, n.first) && bitsEqual(m.second, n.second);
    })
  );
}

function sameGeneration(a: Generation, b: Generation): boolean {
  return (
    a.stopReason === b.stopReason &&
    a.tokens.length === b.tokens.length &&
    a.steps.every((s, i) => {
      const t = b.steps[i];
      return (
        t !== undefined &&
        s.token === t.token &&
        s.rngStateBefore === t.rngStateBefore &&
        s.draw?.raw === t.draw?.raw &&
        bitsEqual(s.logits, t.logits) &&
        bitsEqual(s.probabilities, t.probabilities)
      );
    })
  );
}

function readAudit(runDir: string): SampleAudit | null {
  const file = path.join(runDir, RUN_FILES.samples);
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(new TextDecoder().decode(readRegularFileSync(file, { maxBytes: MAX_TEXT_FILE_BYTES, what: 'samples.json' }))) as SampleAudit;
  } catch {
    return null;
  }
}

async function replaySelectedBytes(config: RunReportConfig): Promise<Uint8Array> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'llmcp-replay-'));
  try {
    const runDir = path.join(dir, 'run');
    await trainRun({ runDir, config, handleSignals: false });
    return readRegularFileSync(path.join(runDir, 'checkpoints', 'best', 'state.llmcp'), { maxBytes: MAX_FILE_BYTES, what: 'checkpoint' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

type RunReportConfig = Parameters<typeof prepareInputs>[0];

/** An input of the report, read whole under the input rule (refusals are `TRAINER_INPUT_INVALID`). */
function readInput(file: string, what: string): Uint8Array {
  return readInputFile(file, { what, code: 'TRAINER_INPUT_INVALID' });
}

/**
 * Builds the end-to-end report of a run: re-reads its inputs (refusing
 * changed ones), runs the final evaluation once on the selected slot,
 * re-encodes and reloads its checkpoint, and generates from the reloaded
 * state with the run's sampling settings.
 *
 * @param runDir - the run directory.
 * @param options - slot, replay, logit probe.
 * @returns the report.
 * @throws TrainerError `TRAINER_NO_CHECKPOINT`, `TRAINER_INPUT_CHANGED`, `TRAINER_INPUT_INVALID`, and the slot verification errors.
 * @example
 * ```ts
 * const report = await reportRun('runs/ch39', { replay: true });
 * report.checkpoint.bytes; // 30994
 * ```
 */
export async function reportRun(runDir: string, options: RunReportOptions = {}): Promise<RunReport> {
  // First, before the evaluation holds the encoded partitions: the tokenizer learned again from the train partition
  // alone (the tokenizer and the data are never policy, so every slot of the run records the same ones).
  const peeked = newestCandidateJob(runDir)?.job.config ?? null;
  const learned = peeked !== null && peeked.tokenizer.kind === 'bpe' ? await learnedTokenizerIdentity(peeked) : null;
  const { slot, job, state, inputs, evaluation } = await evaluateRun(runDir, options.slot === undefined ? {} : { slot: options.slot });
  const config = job.config;
  const source = config.data.source;

  let checksum = inputs.identity.corpus.sha256;
  let split = source.kind === 'text' ? 'hash-split' : 'inline';
  if (source.kind === 'corpus') {
    const corpus = parseCorpus(readInput(source.corpus, 'corpus'));
    checksum = corpus.checksum;
    split = parseSplitManifest(readInput(source.split, 'split manifest')).strategy;
  }

  const tokenizer = tokenizerFromState(state.tokenizer);
  const sum = (docs: readonly Uint32Array[]): number => docs.reduce((n, d) => n + d.length, 0);
  const T = config.data.contextLength;
  const evalStride = config.evaluation.stride ?? config.data.stride;
  const trainingBatchSize = config.evaluation.trainingBatchSize ?? config.evaluation.batchSize;
  const parameters = state.parameters.reduce((n, t) => n + t.data.length, 0);
  const train = windowDocuments(config, inputs.partitions.train);
  const validation = windowDocuments(config, inputs.partitions.validation);

  // Checkpoint structure and reload.
  const stateBytes = readInput(path.join(runDir, 'checkpoints', slot, 'state.llmcp'), 'checkpoint');
  const inspection = inspectCheckpoint(stateBytes);
  const reloaded = decodeCheckpoint(stateBytes);
  const reencoded = encodeCheckpoint(reloaded);
  const bytesRoundtrip = reencoded.length === stateBytes.length && reencoded.every((b, i) => b === stateBytes[i]);
  const probe = options.logitProbe ?? 'At';
  const probeIds = Array.from(tokenizer.encode(probe));
  const reloadedTokenizer = tokenizerFromState(reloaded.tokenizer);

  // Generation from the reloaded checkpoint, and an independent second one for comparison.
  const s = config.sampling;
  let promptIds = Array.from(reloadedTokenizer.encode(s.prompt));
  if (promptIds.length === 0 && reloadedTokenizer.bosId !== null) promptIds = [reloadedTokenizer.bosId];
  const V = reloaded.decoder.vocabularySize;
  const mode: SamplingMode = s.temperature === 0 ? { kind: 'greedy' } : { kind: 'temperature', temperature: s.temperature, topK: Math.min(s.topK ?? V, V) };
  const eos = reloadedTokenizer.eosId;
  const run = (model: Decoder, rng: SplitMix64): Generation =>
    generate(model, { prompt: promptIds, mode, rng, maxNewTokens: s.maxNewTokens, ...(eos === null ? {} : { endOfSequence: eos }) });
  const rng = new SplitMix64(reloaded.samplingRngState);
  const rng2 = new SplitMix64(state.samplingRngState);
  // The checkpoint's sample audit drew `sampling.count` samples from the stored state: regenerated, it must end in the
  // recorded next state (the report's generation below is the audit's first sample).
  const settings = auditSettingsOf(config);
  const auditDue = job.sampling.lastAuditStep === job.step && settings !== null;
  // One model at a time (each holds its kernel arena until it is collected): the reloaded state's, then the state's.
  let first: Generation;
  let modelBitsExact: boolean;
  let reloadedLogits: Float64Array | null;
  let auditEndsRight: boolean;
  const reloadedModel = Decoder.fromCheckpoint(reloaded);
  try {
    modelBitsExact = tensorsEqual(reloadedModel.toCheckpointParameters(), state.parameters) && tensorsEqual(reloaded.parameters, state.parameters);
    reloadedLogits = probeIds.length > 0 ? reloadedModel.logits(probeIds).slice() : null;
    first = run(reloadedModel, rng);
    auditEndsRight = !auditDue || sampleAuditOn(reloadedModel, { state: reloaded, settings, step: job.step }).rngStateAfter === job.sampling.nextState;
  } finally {
    await reloadedModel.close();
  }
  let second: Generation;
  let promptLogitsBitwise: boolean;
  const memoryModel = Decoder.fromCheckpoint(state);
  try {
    promptLogitsBitwise = reloadedLogits !== null && bitsEqual(reloadedLogits, memoryModel.logits(probeIds));
    second = run(memoryModel, rng2);
  } finally {
    await memoryModel.close();
  }
  const content = first.stopReason === 'end-of-sequence' ? first.tokens.slice(0, -1) : first.tokens;
  let text: string | null;
  try {
    text = content.includes(reloadedTokenizer.bosId ?? -1) ? null : reloadedTokenizer.decodeText(content);
  } catch {
    text = null;
  }
  const prefixes = first.steps.map((st) => st.prefix.length);
  const fedBack = Math.max(0, first.tokens.length - 1);
  const P = promptIds.length;
  let cachedScores = (P * (P + 1)) / 2;
  for (let k = 1; k <= fedBack; k += 1) cachedScores += P + k;
  const audit = readAudit(runDir);
  const auditMatches =
    audit !== null && audit.step === job.step && audit.rngState === `0x${reloaded.samplingRngState.toString(16).padStart(16, '0')}` && audit.samples.length > 0;
  const auditTokens = auditMatches ? (audit.samples[0]?.tokens ?? null) : null;

  let replayBitwise: boolean | null = null;
  if (options.replay === true) {
    if (slot !== 'best' && slot !== 'best.backup') throw new TrainerError('TRAINER_INPUT_INVALID', 'a replay compares the selected state: report the best slot', { fields: ['slot'] });
    const replayed = await replaySelectedBytes(config);
    replayBitwise = replayed.length === stateBytes.length && replayed.every((b, i) => b === stateBytes[i]);
  }

  const trainingOnly = config.tokenizer.kind === 'bpe' ? (learned ?? (await learnedTokenizerIdentity(config))) === tokenizer.identity() : null;

  const stopNames = { 'end-of-sequence': 'eos', 'max-new-tokens': 'token-limit', 'context-limit': 'context-limit' } as const;
  return {
    data: { checksum, split, train: inputs.documentIds.train, validation: inputs.documentIds.validation, test: inputs.documentIds.test },
    tokenizer: {
      layout: state.tokenizer.kind === 'bpe' ? 1 : null,
      requestedMerges: config.tokenizer.kind === 'bpe' ? config.tokenizer.merges : null,
      learnedMerges: state.tokenizer.kind === 'bpe' ? state.tokenizer.pairs.length : null,
      trainingOnly,
      vocabularySize: tokenizer.vocabularySize,
      encodedTokens: [sum(inputs.partitions.train), sum(inputs.partitions.validation), sum(inputs.partitions.test)],
    },
    model: {
      layers: state.decoder.layers,
      heads: state.decoder.heads,
      width: state.decoder.modelWidth,
      feedForward: state.decoder.feedForwardWidth,
      context: T,
      parameters,
      updateBatchSize: config.data.batchSize,
      evaluationBatchSize: config.evaluation.batchSize,
      windows: [causalWindows(train, T, config.data.stride).length, causalWindows(validation, T, evalStride).length, evaluation.test.windows],
      evaluationBatches: [
        config.evaluation.trainingLoss ? evaluationBatches(causalWindows(train, T, evalStride), trainingBatchSize).length : 0,
        evaluationBatches(causalWindows(validation, T, evalStride), config.evaluation.batchSize).length,
        evaluation.test.batches,
      ],
    },
    training: {
      updates: config.steps,
      seed: config.data.shuffle.seed,
      checkpoints: job.evaluations.map((e) => ({ step: e.step, trainingLoss: e.trainingLoss, validationLoss: e.validationLoss, selected: e.step === evaluation.selection.step })),
      selectedStep: evaluation.selection.step,
      selectedValidationLoss: evaluation.selection.validationLoss,
      optimizerStep: Number(state.optimizer.step),
      replayBitwise,
    },
    evaluation,
    checkpoint: {
      slot,
      bytes: stateBytes.length,
      header: Number(inspection.headerBytes ?? 0n),
      records: inspection.descriptors.length,
      checksum: job.state.checksum,
      selectedStep: Number(reloaded.selectedStep),
      optimizerStep: Number(reloaded.optimizer.step),
      rngState: reloaded.samplingRngState,
      bytesRoundtrip,
      modelBitsExact,
      optimizerBitsExact: optimizerEqual(reloaded.optimizer, state.optimizer) && optimizerEqual(decodeCheckpoint(reencoded).optimizer, state.optimizer),
      tokenizerExact: reloadedTokenizer.identity() === inputs.tokenizer.identity(),
      logitProbe: probe,
      logitProbeIds: probeIds,
      promptLogitsBitwise,
    },
    generation: {
      prompt: s.prompt,
      promptIds,
      temperature: s.temperature,
      topK: s.topK,
      seed: s.seed,
      generated: first.tokens,
      text,
      prefixes,
      stop: stopNames[first.stopReason],
      prefill: P,
      decode: fedBack,
      finalCache: P + fedBack,
      cachedScores,
      completePrefixScores: prefixes.reduce((n, p) => n + p * p, 0),
      rngInitial: reloaded.samplingRngState,
      rngFinal: rng.state,
      tokensExact: (auditTokens === null || auditTokens.join(',') === first.tokens.join(',')) && first.tokens.join(',') === second.tokens.join(','),
      decisionsBitwise: sameGeneration(first, second),
      rngExact: rng.state === rng2.state && auditEndsRight,
    },
  };
}
