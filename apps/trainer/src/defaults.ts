/**
 * The app's default run: the embedded story corpus, a byte-level BPE tokenizer
 * of 512 ids, and model sizes chosen so that `pnpm start` shows a falling loss
 * and improving samples within minutes on a small machine.
 */
import { fileURLToPath } from 'node:url';

const corpusFile = (name: string): string => fileURLToPath(new URL(`../corpus/${name}`, import.meta.url));

/** A data source of the trainer config. */
export type CorpusChoice =
  | { readonly kind: 'corpus'; readonly corpus: string; readonly split: string }
  | { readonly kind: 'text'; readonly path: string };

/** Embedded corpora. */
export const CORPORA = {
  default: { kind: 'corpus', corpus: corpusFile('stories.json'), split: corpusFile('stories-split.json') },
  bilingual: { kind: 'corpus', corpus: corpusFile('bilingual/tiny-bilingual-corpus.json'), split: corpusFile('bilingual/splits.json') },
} as const satisfies Record<string, CorpusChoice>;

/** Model sizes (and the step budget that suits each). */
export const SIZES = {
  tiny: { width: 32, heads: 2, feedForwardWidth: 128, layers: 1, contextLength: 32, steps: 600, validateEvery: 50, checkpointEvery: 100 },
  small: { width: 64, heads: 4, feedForwardWidth: 256, layers: 2, contextLength: 64, steps: 1000, validateEvery: 100, checkpointEvery: 200 },
  medium: { width: 128, heads: 4, feedForwardWidth: 512, layers: 2, contextLength: 64, steps: 2000, validateEvery: 100, checkpointEvery: 200 },
} as const;

/** A size name. */
export type SizeName = keyof typeof SIZES;

/**
 * The config input of an app run (validated later by `parseConfig`).
 *
 * @param options - corpus, size, steps, timing.
 * @returns a trainer config input.
 */
export function appConfigInput(options: { readonly corpus: CorpusChoice; readonly size: SizeName; readonly steps?: number; readonly timing: boolean }): unknown {
  const size = SIZES[options.size];
  const steps = options.steps ?? size.steps;
  const validateEvery = Math.min(size.validateEvery, steps);
  return {
    steps,
    data: { source: options.corpus, contextLength: size.contextLength, stride: 1, batchSize: 8, shuffle: { seed: 1, epochs: 'reshuffle' } },
    tokenizer: { kind: 'bpe', merges: 254 },
    model: { width: size.width, heads: size.heads, feedForwardWidth: size.feedForwardWidth, layers: size.layers, initSeed: 1 },
    optimizer: { learningRate: 0.01, weightDecay: 0.01, clipNorm: 1 },
    schedule: { kind: 'warmup-cosine', warmupSteps: Math.min(100, Math.floor(steps / 10)), floor: 0.001 },
    evaluation: { validateEvery, batchSize: 32, stride: size.contextLength },
    checkpoint: { every: Math.max(validateEvery, Math.floor(Math.min(size.checkpointEvery, steps) / validateEvery) * validateEvery), keepSteps: 3 },
    sampling: { seed: 7, prompt: '', count: 2, maxNewTokens: 64, temperature: 0.8, topK: 40 },
    log: { timing: options.timing },
  };
}
