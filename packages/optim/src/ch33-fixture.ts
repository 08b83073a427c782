/**
 * The ch33 training fixture — the reference's eight-update run whose selected
 * state is the golden 6330-byte checkpoint — defined once, as data
 * ([../../../docs/spec/training.md §1–7](../../../docs/spec/training.md), model in
 * [../../../docs/spec/model.md §2](../../../docs/spec/model.md)). `@llmcp/conformance`
 * regenerates the golden file from it, the trainer's `ch33` preset is built
 * from it, and this package's tests replay it step by step.
 */
import type { AdamWConfig, DecoderConfig } from '@llmcp/format';
import { FIXTURE_DECODER_CONFIG } from '@llmcp/model';

/** One fixture document: its id and token ids (the literal pieces "0"…"4"). */
export interface FixtureDocument {
  readonly id: string;
  readonly tokens: readonly number[];
}

/** The ch33 fixture's documents and settings. */
export interface Ch33Fixture {
  /** Train and validation documents, in processing order (../../../docs/spec/training.md §1). */
  readonly documents: { readonly train: readonly FixtureDocument[]; readonly validation: readonly FixtureDocument[] };
  readonly decoder: DecoderConfig;
  /** The literal tokenizer's pieces, token id order. */
  readonly literalPieces: readonly string[];
  readonly initSeed: bigint;
  /** Seed of the Fisher–Yates shuffle of the training windows (order reused every epoch). */
  readonly shuffleSeed: bigint;
  /** Raw state of the sampling stream stored in the checkpoint, and the draws discarded before it. */
  readonly samplingSeed: bigint;
  readonly samplingDiscard: number;
  readonly contextLength: number;
  readonly updateBatchSize: number;
  readonly trainEvaluationBatchSize: number;
  readonly validationBatchSize: number;
  /** The learning rate of each of the eight updates. */
  readonly learningRates: readonly number[];
  /** Global-norm clip threshold. */
  readonly maxGradientNorm: number;
  /** Steps after which both evaluations run (0 = before the first update). */
  readonly validationSteps: readonly number[];
  readonly adamw: AdamWConfig;
}

const freezeDocs = (docs: FixtureDocument[]): readonly FixtureDocument[] => Object.freeze(docs.map((d) => Object.freeze({ id: d.id, tokens: Object.freeze([...d.tokens]) })));

/**
 * The ch33 fixture (frozen).
 *
 * @example
 * ```ts
 * CH33_FIXTURE.learningRates.length; // 8 updates
 * ```
 */
export const CH33_FIXTURE: Ch33Fixture = Object.freeze({
  documents: Object.freeze({
    train: freezeDocs([
      { id: 'train-a', tokens: [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1] },
      { id: 'train-b', tokens: [2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3] },
    ]),
    validation: freezeDocs([
      { id: 'validation-a', tokens: [0, 1, 2, 3, 4, 0, 1, 2, 3] },
      { id: 'validation-b', tokens: [0, 0, 0, 0, 0, 0, 0, 0, 0] },
    ]),
  }),
  decoder: FIXTURE_DECODER_CONFIG,
  literalPieces: Object.freeze(['0', '1', '2', '3', '4']),
  initSeed: 33n,
  shuffleSeed: 33n,
  samplingSeed: 35n,
  samplingDiscard: 1,
  contextLength: 2,
  updateBatchSize: 2,
  trainEvaluationBatchSize: 5,
  validationBatchSize: 4,
  learningRates: Object.freeze([0.04, 0.04, 0.025, 0.025, 0.015, 0.015, 0.008, 0.008]),
  maxGradientNorm: 0.35,
  validationSteps: Object.freeze([0, 2, 4, 6, 8]),
  adamw: Object.freeze({ learningRate: 0.04, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01 }),
});
