/**
 * Reference configs. `CH33_CONFIG` is the training fixture of training.md
 * (the reference's ch33 run): trained to step 8 it selects step 8, whose state
 * is the golden 6330-byte LLMCP35 file.
 */
import { parseConfig, type TrainerConfig } from './config.ts';

/**
 * The ch33 fixture as a trainer config input: literal pieces "0"…"4", the four
 * documents of training.md §1, context 2, update batches of 2 shuffled with
 * seed 33 (repeat policy), init seed 33, the eight-rate list schedule, clip
 * 0.35, RMSNorm gains without decay, validation at steps 0, 2, 4, 6, 8
 * (training batches of 5, validation batches of 4), one checkpoint at step 8,
 * and the sampling stream of the golden file (seed 35, one discarded draw)
 * with the ch36 audit (prompt "0", τ = 1, top-k 3, at most 4 new tokens).
 */
export const CH33_CONFIG_INPUT = {
  steps: 8,
  data: {
    source: {
      kind: 'inline',
      documents: [
        { id: 'train-a', partition: 'train', text: '012340123401' },
        { id: 'train-b', partition: 'train', text: '234012340123' },
        { id: 'validation-a', partition: 'validation', text: '012340123' },
        { id: 'validation-b', partition: 'validation', text: '000000000' },
      ],
    },
    contextLength: 2,
    stride: 1,
    batchSize: 2,
    shuffle: { seed: 33, epochs: 'repeat' },
  },
  tokenizer: { kind: 'literal', pieces: ['0', '1', '2', '3', '4'] },
  model: { width: 4, heads: 2, feedForwardWidth: 4, layers: 1, maxPositions: 2, ropeBase: 10000, rmsEpsilon: 1e-6, initSeed: 33 },
  optimizer: { learningRate: 0.04, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01, groups: 'gain-no-decay', clipNorm: 0.35 },
  schedule: { kind: 'list', rates: [0.04, 0.04, 0.025, 0.025, 0.015, 0.015, 0.008, 0.008] },
  evaluation: { validateEvery: 2, batchSize: 4, stride: 1, trainingLoss: true, trainingBatchSize: 5, maxBatches: null },
  checkpoint: { every: 8, keepSteps: 3 },
  sampling: { seed: 35, discard: 1, prompt: '0', count: 1, maxNewTokens: 4, temperature: 1, topK: 3 },
  log: { timing: false },
  threads: 1,
} as const;

/**
 * The validated ch33 fixture config.
 *
 * @returns a fresh copy of the config.
 */
export function ch33Config(): TrainerConfig {
  return parseConfig(JSON.parse(JSON.stringify(CH33_CONFIG_INPUT)));
}
