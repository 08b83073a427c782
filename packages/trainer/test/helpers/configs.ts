/**
 * Test configs: the ch33 fixture and a small byte-level BPE config on the
 * reference bilingual corpus (ch39-like model, larger batches so that epochs
 * roll over within a short run).
 */
import { bundledCorpusFiles } from '@llmcp/data/node';
import { goldenCheckpoint } from '../../../../tools/fixtures.ts';
import { parseConfig, type TrainerConfig } from '../../src/config.ts';
import { CH33_CONFIG_INPUT } from '../../src/presets.ts';

/** The golden 6330-byte checkpoint (from the one fixture home, SHA-256 checked). */
export const GOLDEN: Uint8Array = goldenCheckpoint();

/** The reference's tiny bilingual corpus and split manifest, as shipped by `@llmcp/data`. */
const BILINGUAL: [string, string] = bundledCorpusFiles('tiny-bilingual');
/** The tiny bilingual corpus file. */
export const BILINGUAL_CORPUS: string = BILINGUAL[0];
/** Its split manifest. */
export const BILINGUAL_SPLIT: string = BILINGUAL[1];

type Patch = Record<string, unknown>;

function merge(base: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  if (base === null || typeof base !== 'object' || Array.isArray(base)) return patch;
  const kind = (patch as { kind?: unknown }).kind;
  if (kind !== undefined && kind !== (base as { kind?: unknown }).kind) return patch;
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) out[k] = merge(out[k], v);
  return out;
}

/** `LLMCP_TEST_THREADS=n` runs these configs with n model threads (the bits never depend on it; e.g. with `LLMCP_KERNELS=native`). */
const TEST_THREADS = process.env['LLMCP_TEST_THREADS'] === undefined ? undefined : Number(process.env['LLMCP_TEST_THREADS']);

/** The ch33 fixture config with a deep patch. */
export function ch33(patch: Patch = {}): TrainerConfig {
  return parseConfig(merge(merge(JSON.parse(JSON.stringify(CH33_CONFIG_INPUT)), TEST_THREADS === undefined ? {} : { threads: TEST_THREADS }), patch));
}

/**
 * A small BPE config: bilingual corpus, 8 merges (vocabulary 266), D4/H1/F4/L1,
 * context 4, update batches of 128 (15 per epoch of 1828 windows, reshuffled
 * each epoch), 40 steps, validation every 5 steps, checkpoints with a sample
 * audit every 10.
 */
export function smallBpe(patch: Patch = {}): TrainerConfig {
  const base = {
    steps: 40,
    data: {
      source: { kind: 'corpus', corpus: BILINGUAL_CORPUS, split: BILINGUAL_SPLIT },
      contextLength: 4,
      stride: 1,
      batchSize: 128,
      shuffle: { seed: 39, epochs: 'reshuffle' },
    },
    tokenizer: { kind: 'bpe', merges: 8, requireAll: true },
    model: { width: 4, heads: 1, feedForwardWidth: 4, layers: 1, initSeed: 39 },
    optimizer: { learningRate: 0.04, weightDecay: 0, groups: 'none', clipNorm: 1 },
    schedule: { kind: 'constant', rate: 0.04 },
    evaluation: { validateEvery: 5, batchSize: 128, maxBatches: null },
    checkpoint: { every: 10, keepSteps: 2 },
    sampling: { seed: 38, prompt: 'A', count: 1, maxNewTokens: 3, temperature: 0.8, topK: 4 },
    log: { timing: false },
    // One thread, as before threads defaulted to the machine's cores: these tiny models are fastest that way (bits are the same).
    threads: TEST_THREADS ?? 1,
  };
  return parseConfig(merge(base, patch));
}

/** Batches per epoch of the small BPE config (1828 windows / 128). */
export const SMALL_BPE_EPOCH = 15;
