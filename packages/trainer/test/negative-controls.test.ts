/**
 * The equivalence tests can fail. Resuming without the
 * optimizer state, without the shuffle state, or with a re-seeded sampling
 * RNG each changes the final bytes, while the same resume without the fault
 * reproduces the uninterrupted run exactly.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { TrainerConfig } from '../src/config.ts';
import { resumeRunWithFaults, type ResumeFaults } from '../src/testing.ts';
import { ch33, smallBpe } from './helpers/configs.ts';
import { stoppedRun, trainedRun } from './helpers/run-fixture.ts';
import { finalBytes, sameBytes, type FinalBytes } from './helpers/run-files.ts';

async function interruptedRun(config: TrainerConfig, stopAfter: number, faults: ResumeFaults): Promise<FinalBytes> {
  const { dir } = await stoppedRun(config, stopAfter);
  const second = await resumeRunWithFaults(dir, { saveMode: 'inline' }, faults);
  expect(second.status).toBe('completed');
  return finalBytes(dir);
}

describe.each([
  { name: 'small BPE config', config: smallBpe(), stopAfter: 25 },
  { name: 'ch33 config (checkpoint every 2)', config: ch33({ checkpoint: { every: 2 } }), stopAfter: 5 },
])('negative controls: $name', ({ config, stopAfter }) => {
  let uninterrupted: FinalBytes;
  beforeAll(async () => {
    uninterrupted = finalBytes(await trainedRun(config));
  });

  it('a faithful resume gives identical bytes (the control)', async () => {
    expect(sameBytes(uninterrupted, await interruptedRun(config, stopAfter, {}))).toBeNull();
  });

  it('resuming without the optimizer state gives different final bytes', async () => {
    const bytes = await interruptedRun(config, stopAfter, { dropOptimizerState: true });
    expect(Buffer.compare(bytes.state, uninterrupted.state)).not.toBe(0);
    expect(Buffer.compare(bytes.loss, uninterrupted.loss)).not.toBe(0);
  });

  it('resuming without the shuffle state gives different final bytes', async () => {
    const bytes = await interruptedRun(config, stopAfter, { dropShuffleState: true });
    expect(Buffer.compare(bytes.state, uninterrupted.state)).not.toBe(0);
    expect(Buffer.compare(bytes.loss, uninterrupted.loss)).not.toBe(0);
  });

  it('resuming with a re-seeded sampling RNG gives different final bytes', async () => {
    const bytes = await interruptedRun(config, stopAfter, { reseedSampling: true });
    expect(Buffer.compare(bytes.state, uninterrupted.state)).not.toBe(0);
    // Sampling never feeds back into training: the loss history is unchanged.
    expect(Buffer.compare(bytes.loss, uninterrupted.loss)).toBe(0);
  });
});
