/**
 * The final evaluation (../../../docs/spec/tokenizer-and-data.md §5.2–5.3, the reference's
 * chapters 34 and 39): after selection is closed, the test partition's window
 * list is built and scored exactly once by the selected decoder and by a
 * frozen add-α bigram baseline fitted on the training partition, on the same
 * ordered window-target slots. The decoder's parameters and gradients are
 * compared bit for bit before and after, so the evaluation provably leaves
 * the model as it found it.
 */
import { checksumLabel, Fnv1a64, type CheckpointState } from '@llmcp/format';
import { Decoder, exp, ln } from '@llmcp/model';
import { causalWindows, evaluationBatches, gatherBatch, type WindowRef } from '@llmcp/data';
import { TrainerError } from './errors.ts';

/** Version of the final-evaluation report (the reference's `report_version`). */
export const FINAL_EVALUATION_VERSION = 1;

/** One encoded document with its id. */
export interface EvaluationDocument {
  readonly id: string;
  /** Token ids, BOS/EOS included when the tokenizer adds them. */
  readonly tokens: ArrayLike<number>;
}

/** What a final evaluation needs. */
export interface FinalEvaluationOptions {
  /** The selected checkpoint state (only the decoder config and parameters are used). */
  readonly state: Pick<CheckpointState, 'decoder' | 'parameters'>;
  /** The selection this evaluation closes: the selected step and its validation loss (null when unknown, e.g. a bare checkpoint). */
  readonly selection: { readonly step: number; readonly validationLoss: number | null };
  /** Encoded training documents: the bigram baseline is fitted on them (never on test). */
  readonly train: readonly EvaluationDocument[];
  /** Encoded test documents, in partition order. */
  readonly test: readonly EvaluationDocument[];
  /** Context length T of the test windows (at most the decoder's `maxPositions`). */
  readonly contextLength: number;
  /** Window stride (default 1). */
  readonly stride?: number;
  /** Windows per evaluation batch (the token-weighted mean depends on it through rounding). */
  readonly batchSize: number;
  /** Add-α smoothing of the bigram (default 1.0). */
  readonly alpha?: number;
}

/** A model's score on the test slots. */
export interface SlotScore {
  /** Token-weighted mean negative log-likelihood (nats per slot). */
  readonly meanNll: number;
  /** `exp(meanNll)`. */
  readonly perplexity: number;
  /** Sum of the per-slot NLL (for the decoder: Σ batch mean × batch tokens). */
  readonly totalNll: number;
  /** Slots scored. */
  readonly targets: number;
}

/** The complete final-evaluation report. */
export interface FinalEvaluation {
  readonly version: typeof FINAL_EVALUATION_VERSION;
  readonly selection: { readonly step: number; readonly validationLoss: number | null; readonly criterion: 'validation-only' };
  readonly baseline: {
    readonly alpha: number;
    readonly fittedPartition: 'train';
    /** Training documents the counts came from. */
    readonly documents: number;
    /** Adjacent pairs counted (never across documents). */
    readonly transitions: number;
    readonly vocabularySize: number;
  };
  readonly test: {
    readonly documentIds: readonly string[];
    readonly contextLength: number;
    readonly stride: number;
    readonly windows: number;
    readonly batches: number;
    /** Window-target slots (windows × T), the unit of every mean. */
    readonly targets: number;
    /** FNV-1a 64 label over the slot set (§5.3). */
    readonly fingerprint: string;
    /** Distinct (document, target position) pairs the slots cover. */
    readonly transitions: number;
    /** For m = 1 … max: how many target positions occur in exactly m slots. */
    readonly multiplicities: readonly { readonly slots: number; readonly positions: number }[];
    /** The distinct amounts of left context the decoder sees across the slots (1 … T). */
    readonly slotContextLengths: readonly number[];
    /** Times the test window list was opened before scoring (always 0) and after (always 1). */
    readonly accessesBefore: number;
    readonly accesses: number;
  };
  readonly decoder: SlotScore & {
    /** Backward graphs recorded (the evaluation is forward-only). */
    readonly graphs: number;
    readonly parametersUnchanged: boolean;
    readonly gradientsUnchanged: boolean;
  };
  readonly bigram: SlotScore;
  readonly comparison: {
    readonly lowerLoss: 'selected-decoder' | 'bigram' | 'tie';
    /** Bigram mean − decoder mean (positive when the decoder is better). */
    readonly gap: number;
    /** Both models scored exactly the same ordered slots. */
    readonly sameTargets: boolean;
  };
}

function sameBits(a: Float64Array, b: Float64Array): boolean {
  if (a.length !== b.length) return false;
  const x = new BigUint64Array(a.buffer, a.byteOffset, a.length);
  const y = new BigUint64Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < x.length; i += 1) if (x[i] !== y[i]) return false;
  return true;
}

/** Private copy (its own aligned buffer). */
const copy = (a: Float64Array): Float64Array => new Float64Array(a);

/** The frozen add-α bigram of §5.2: exact integer counts, read-only after fitting. */
class FrozenBigram {
  readonly #rows = new Map<number, Map<number, number>>();
  readonly #rowTotals = new Map<number, number>();
  readonly alpha: number;
  readonly vocabularySize: number;
  readonly #alphaV: number;
  documents = 0;
  transitions = 0;

  constructor(vocabularySize: number, alpha: number, documents: readonly EvaluationDocument[]) {
    this.alpha = alpha;
    this.vocabularySize = vocabularySize;
    this.#alphaV = alpha * vocabularySize;
    for (const d of documents) {
      const t = d.tokens;
      for (let i = 0; i + 1 < t.length; i += 1) {
        const x = t[i] as number;
        const y = t[i + 1] as number;
        let row = this.#rows.get(x);
        if (row === undefined) this.#rows.set(x, (row = new Map()));
        row.set(y, (row.get(y) ?? 0) + 1);
        this.#rowTotals.set(x, (this.#rowTotals.get(x) ?? 0) + 1);
        this.transitions += 1;
      }
      this.documents += 1;
    }
  }

  /** −ln p(y | x); +0 for p = 1, +∞ for p = 0. */
  surprise(x: number, y: number): number {
    const count = this.#rows.get(x)?.get(y) ?? 0;
    const p = (count + this.alpha) / ((this.#rowTotals.get(x) ?? 0) + this.#alphaV);
    if (p === 1) return 0;
    if (p === 0) return Number.POSITIVE_INFINITY;
    return -ln(p);
  }
}

function slotFingerprint(test: readonly EvaluationDocument[], batches: readonly (readonly WindowRef[])[], contextLength: number): string {
  const hash = new Fnv1a64();
  const enc = new TextEncoder();
  const start = new Uint8Array(9);
  const startView = new DataView(start.buffer);
  start[0] = 0xff;
  const pair = new Uint8Array(8 * contextLength);
  const pairView = new DataView(pair.buffer);
  for (const batch of batches) {
    for (const w of batch) {
      const doc = test[w.documentIndex] as EvaluationDocument;
      startView.setBigUint64(1, BigInt(w.start), true);
      hash.update(enc.encode(doc.id)).update(start);
      for (let j = 0; j < contextLength; j += 1) {
        pairView.setUint32(8 * j, doc.tokens[w.start + j] as number, true);
        pairView.setUint32(8 * j + 4, doc.tokens[w.start + j + 1] as number, true);
      }
      hash.update(pair);
    }
  }
  return checksumLabel(hash.digest());
}

/**
 * Scores the test partition once with the selected decoder and the frozen
 * bigram baseline (../../../docs/spec/tokenizer-and-data.md §5.2–5.3).
 *
 * The decoder's mean is the token-weighted mean of batch means (Σ mean × w·T
 * in batch order, ÷ total), the bigram's the sum of per-slot surprises in slot
 * order ÷ slot count; perplexities are one correctly rounded `exp` each. The
 * parameters and gradients are copied before scoring and compared bit for bit
 * afterwards.
 *
 * @param options - selected state, selection, train and test documents, T, stride, batch size, α.
 * @returns the report.
 * @throws TrainerError `TRAINER_INPUT_INVALID` when the test partition gives no window or T exceeds the decoder's positions.
 * @example
 * ```ts
 * const report = await evaluateFinal({ state, selection: { step: 8, validationLoss }, train, test, contextLength: 2, batchSize: 4 });
 * report.decoder.meanNll; // 1.607679…
 * ```
 */
export async function evaluateFinal(options: FinalEvaluationOptions): Promise<FinalEvaluation> {
  const stride = options.stride ?? 1;
  const alpha = options.alpha ?? 1;
  const T = options.contextLength;
  const { state } = options;
  if (T > state.decoder.maxPositions) {
    throw new TrainerError('TRAINER_INPUT_INVALID', `context length ${T} exceeds the decoder's maxPositions ${state.decoder.maxPositions}`, { fields: ['data.contextLength'] });
  }
  // Frozen before the test gate opens: the baseline sees the training partition only.
  const bigram = new FrozenBigram(state.decoder.vocabularySize, alpha, options.train);
  const model = Decoder.fromCheckpoint(state);
  try {
    const parametersBefore = copy(model.parameters);
    const gradientsBefore = copy(model.gradients);
    const accessesBefore = 0;
    // The test gate: the window list of the test partition is built here, once.
    const testTokens = options.test.map((d) => d.tokens);
    const windows = causalWindows(testTokens, T, stride);
    const accesses = accessesBefore + 1;
    if (windows.length === 0) {
      const none = options.test.length === 0;
      throw new TrainerError(
        'TRAINER_INPUT_INVALID',
        `the test partition has no window of context length ${T} (${options.test.length} documents${none ? '' : `, ${testTokens.reduce((n, d) => n + d.length, 0)} tokens`}); ` +
          (none
            ? 'the run held out no test documents: a test split is chosen when a run starts (data.source.testFraction of a text corpus, e.g. --set data.source.testFraction=0.05; the test list of a split manifest)'
            : 'the test text is too short for one window: hold out more (data.source.testFraction) or use a shorter context'),
        { fields: ['data.source'] },
      );
    }
    const batches = evaluationBatches(windows, options.batchSize);
    let weighted = 0;
    let tokens = 0;
    let surprise = 0;
    for (const batchWindows of batches) {
      const batch = gatherBatch(testTokens, batchWindows, T);
      const count = batch.rows * batch.columns;
      weighted += model.evaluateLoss(batch) * count;
      tokens += count;
      for (let i = 0; i < count; i += 1) surprise += bigram.surprise(batch.inputs[i] as number, batch.targets[i] as number);
    }
    const parametersUnchanged = sameBits(parametersBefore, model.parameters);
    const gradientsUnchanged = sameBits(gradientsBefore, model.gradients);

    // Slot-set diagnostics (§5.3).
    const coverage = options.test.map((d) => new Uint32Array(d.tokens.length));
    for (const w of windows) {
      const c = coverage[w.documentIndex] as Uint32Array;
      for (let j = 0; j < T; j += 1) c[w.start + j + 1] = (c[w.start + j + 1] as number) + 1;
    }
    let transitions = 0;
    const histogram: number[] = [];
    for (const c of coverage) {
      for (const m of c) {
        if (m === 0) continue;
        transitions += 1;
        histogram[m] = (histogram[m] ?? 0) + 1;
      }
    }
    const multiplicities: { slots: number; positions: number }[] = [];
    for (let m = 1; m < histogram.length; m += 1) multiplicities.push({ slots: m, positions: histogram[m] ?? 0 });

    const decoderMean = weighted / tokens;
    const bigramMean = surprise / tokens;
    return {
      version: FINAL_EVALUATION_VERSION,
      selection: { step: options.selection.step, validationLoss: options.selection.validationLoss, criterion: 'validation-only' },
      baseline: { alpha, fittedPartition: 'train', documents: bigram.documents, transitions: bigram.transitions, vocabularySize: bigram.vocabularySize },
      test: {
        documentIds: options.test.map((d) => d.id),
        contextLength: T,
        stride,
        windows: windows.length,
        batches: batches.length,
        targets: tokens,
        fingerprint: slotFingerprint(options.test, batches, T),
        transitions,
        multiplicities,
        slotContextLengths: Array.from({ length: T }, (_, j) => j + 1),
        accessesBefore,
        accesses,
      },
      decoder: { meanNll: decoderMean, perplexity: exp(decoderMean), totalNll: weighted, targets: tokens, graphs: 0, parametersUnchanged, gradientsUnchanged },
      bigram: { meanNll: bigramMean, perplexity: exp(bigramMean), totalNll: surprise, targets: tokens },
      comparison: {
        lowerLoss: decoderMean < bigramMean ? 'selected-decoder' : bigramMean < decoderMean ? 'bigram' : 'tie',
        gap: bigramMean - decoderMean,
        sameTargets: true,
      },
    };
  } finally {
    await model.close();
  }
}
