/**
 * What the training benchmarks of this package share (train.bench.ts,
 * thread-scaling.bench.ts, peer-step.ts): the random batch they train on, the
 * median they report and one full training step — forward + backward,
 * clip at global norm 1, AdamW, zero-grad.
 */
import { SplitMix64, type DecoderConfig } from '@llmcp/format';
import type { Decoder, TokenBatch } from '@llmcp/model';
import { AdamW, clipByGlobalNorm } from '../src/index.ts';

/** The shapes of `pnpm bench:peers` (tools/bench-peers) the thread benchmarks use: B = 8. */
export const PEER_SHAPES: Readonly<Record<'medium' | 'large', { readonly config: DecoderConfig; readonly context: number; readonly batch: number }>> = {
  medium: { config: { vocabularySize: 512, modelWidth: 64, heads: 4, feedForwardWidth: 256, layers: 2, maxPositions: 64, ropeBase: 10000, rmsEpsilon: 1e-6 }, context: 64, batch: 8 },
  large: { config: { vocabularySize: 2048, modelWidth: 128, heads: 4, feedForwardWidth: 512, layers: 4, maxPositions: 128, ropeBase: 10000, rmsEpsilon: 1e-6 }, context: 128, batch: 8 },
};

/**
 * B × T uniform random tokens below V, inputs and targets drawn alternately.
 * @param rng - the generator.
 * @param V - vocabulary size.
 * @param B - rows.
 * @param T - columns.
 * @returns the batch (Int32Array inputs and targets).
 */
export function randomBatch(rng: SplitMix64, V: number, B: number, T: number): TokenBatch {
  const inputs = new Int32Array(B * T);
  const targets = new Int32Array(B * T);
  for (let i = 0; i < B * T; i++) {
    inputs[i] = rng.nextBelow(V);
    targets[i] = rng.nextBelow(V);
  }
  return { inputs, targets, rows: B, columns: T };
}

/**
 * @param xs - samples (not empty).
 * @returns their median (the mean of the middle two for an even count).
 */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

/** One training step of a decoder: its loss, and how long the AdamW update took (ms). */
export type TrainingStep = (batch: TokenBatch) => { loss: number; adamwMs: number };

/**
 * @param decoder - an initialized decoder.
 * @returns a step function: trainStep, clip at global norm 1, AdamW (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01), zero-grad.
 */
export function trainingStep(decoder: Decoder): TrainingStep {
  const opt = new AdamW(decoder, { config: { learningRate: 1e-3, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01 } });
  return (batch) => {
    const loss = decoder.trainStep(batch);
    const clip = clipByGlobalNorm(decoder.gradients, 1.0);
    const t = performance.now();
    opt.step({ clip });
    const adamwMs = performance.now() - t;
    decoder.zeroGradients();
    return { loss, adamwMs };
  };
}
