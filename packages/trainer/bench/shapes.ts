/**
 * The configurations of the checkpoint bench (checkpoint.bench.ts, save-cost.ts) and their corpora.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { SplitMix64 } from '@llmcp/format';

/** The configurations of the checkpoint bench. */
export type ConfigName = 'medium' | 'large';

/** How one configuration is built. */
export interface Shape {
  readonly label: string;
  /** Word-list size, corpus size, and sentences per paragraph (a paragraph is a document): `min + below(spread)`. */
  readonly corpus: { readonly seed: bigint; readonly words: number; readonly bytes: number; readonly sentences: readonly [number, number] };
  readonly merges: number;
  readonly model: { readonly width: number; readonly heads: number; readonly feedForwardWidth: number; readonly layers: number };
  readonly contextLength: number;
  readonly defaultSteps: number;
}

/** The medium and large configurations. */
export const SHAPES: Record<ConfigName, Shape> = {
  medium: {
    label: 'medium (V512 BPE/D64/H4/F256/L2, ctx 64, batch 8)',
    corpus: { seed: 512n, words: 400, bytes: 300_000, sentences: [3, 5] },
    merges: 254,
    model: { width: 64, heads: 4, feedForwardWidth: 256, layers: 2 },
    contextLength: 64,
    defaultSteps: 300,
  },
  large: {
    label: 'large (V2048 BPE/D128/H4/F512/L4, ctx 128, batch 8)',
    // Long paragraphs: at 2048 tokens a short paragraph is shorter than one 129-token window.
    corpus: { seed: 2048n, words: 2000, bytes: 1_200_000, sentences: [24, 16] },
    merges: 1790,
    model: { width: 128, heads: 4, feedForwardWidth: 512, layers: 4 },
    contextLength: 128,
    defaultSteps: 200,
  },
};

/**
 * Writes a deterministic pseudo-English text corpus from a seeded word list.
 *
 * @param dir - the directory to write `corpus-<seed>.txt` into.
 * @param shape - seed, word-list size, size and paragraph length.
 * @returns the file's path.
 */
export function writeCorpus(dir: string, shape: Shape['corpus']): string {
  const rng = new SplitMix64(shape.seed);
  const syllables = ['ka', 'lo', 'mi', 'ta', 're', 'su', 'no', 'vi', 'de', 'an', 'or', 'el', 'is', 'um', 'pe', 'ro', 'sa', 'ti', 'ne', 'ba'];
  const words = Array.from({ length: shape.words }, () => Array.from({ length: 1 + rng.nextBelow(3) }, () => syllables[rng.nextBelow(syllables.length)]).join(''));
  const paragraphs: string[] = [];
  let size = 0;
  while (size < shape.bytes) {
    const sentences = Array.from({ length: shape.sentences[0] + rng.nextBelow(shape.sentences[1]) }, () => {
      const n = 4 + rng.nextBelow(10);
      const s = Array.from({ length: n }, () => words[Math.min(rng.nextBelow(words.length), rng.nextBelow(words.length))]).join(' ');
      return `${s.charAt(0).toUpperCase()}${s.slice(1)}.`;
    });
    const p = sentences.join(' ');
    paragraphs.push(p);
    size += p.length + 2;
  }
  const file = path.join(dir, `corpus-${shape.seed}.txt`);
  writeFileSync(file, `${paragraphs.join('\n\n')}\n`);
  return file;
}

/** The run-specific part of a bench config. */
export interface RunSettings {
  readonly corpus: string;
  readonly steps: number;
  readonly validateEvery: number;
  readonly checkpointEvery: number;
  readonly keepSteps: number;
  readonly threads: number;
}

/**
 * The trainer config input of a bench run (for `parseConfig`): BPE with every merge required, constant rate 0.003,
 * validation of 2 batches of 32 windows, one 32-token audit sample per cadence checkpoint, timing in the loss log.
 *
 * @param shape - the configuration.
 * @param run - corpus, steps, cadences and threads.
 * @returns the config input.
 */
export function trainerConfigInput(shape: Shape, run: RunSettings): Record<string, unknown> {
  return {
    steps: run.steps,
    data: { source: { kind: 'text', path: run.corpus, validationFraction: 0.02 }, contextLength: shape.contextLength, batchSize: 8, shuffle: { seed: 1 } },
    tokenizer: { kind: 'bpe', merges: shape.merges, requireAll: true },
    model: shape.model,
    optimizer: { learningRate: 0.003 },
    schedule: { kind: 'constant', rate: 0.003 },
    evaluation: { validateEvery: run.validateEvery, batchSize: 32, stride: shape.contextLength, maxBatches: 2 },
    checkpoint: { every: run.checkpointEvery, keepSteps: run.keepSteps },
    sampling: { count: 1, maxNewTokens: 32 },
    log: { timing: true },
    threads: run.threads,
  };
}
