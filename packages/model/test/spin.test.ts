/**
 * The bounded watch before a thread sleeps on the control block
 * (protocol.ts spinWhile): it sees a change another thread makes, gives up
 * after its bound, and watches not at all with a bound of 0; a threaded
 * decoder gives one thread's bits whether its threads watch or sleep at once.
 */
import { Worker } from 'node:worker_threads';
import { SplitMix64, type DecoderConfig } from '@llmcp/format';
import { afterEach, describe, expect, it } from 'vitest';
import { Decoder, type TokenBatch } from '../src/index.ts';
import { CTRL, CTRL_LENGTH, spinTuning, spinWhile } from '../src/parallel/protocol.ts';
import { bits, firstMismatch } from './helpers/bits.ts';

const block = (us: number): Int32Array => {
  const b = new Int32Array(new SharedArrayBuffer(CTRL_LENGTH * 4));
  b[CTRL.SPIN_US] = us;
  return b;
};

describe('spinWhile', () => {
  it('sees a change another thread makes while it watches', async () => {
    // A bound of half an hour: were the change missed, the test would time out.
    const b = block(1_800_000_000);
    b[CTRL.DONE] = 7;
    const GO = 30;
    const worker = new Worker(
      `const { workerData: b } = require('node:worker_threads');
       Atomics.wait(b, ${GO}, 0);
       Atomics.store(b, ${CTRL.DONE}, 8);`,
      { eval: true, workerData: b },
    );
    try {
      Atomics.store(b, GO, 1);
      Atomics.notify(b, GO);
      expect(spinWhile(b, CTRL.DONE, 7)).toBe(true);
      expect(Atomics.load(b, CTRL.DONE)).toBe(8);
    } finally {
      await worker.terminate();
    }
  });

  it('gives up once its clock passes the bound when nothing changes', () => {
    // A clock that moves 0.5 ms at every look: started at 0.5, the 2 ms bound ends at 2.5, first passed at 3.0.
    let t = 0;
    const looks: number[] = [];
    const clock = (): number => {
      t += 0.5;
      looks.push(t);
      return t;
    };
    expect(spinWhile(block(2000), CTRL.DONE, 0, clock)).toBe(false);
    expect(looks).toEqual([0.5, 1, 1.5, 2, 2.5, 3]);
  });

  it('returns at once with a bound of 0, or when the slot already differs', () => {
    expect(spinWhile(block(0), CTRL.DONE, 0)).toBe(false);
    const b = block(1_800_000_000);
    b[CTRL.DONE] = 1;
    expect(spinWhile(b, CTRL.DONE, 0)).toBe(true);
  });
});

describe('threads watching or sleeping', () => {
  const saved = spinTuning.microseconds;
  afterEach(() => {
    spinTuning.microseconds = saved;
  });

  it('give the bits of one thread either way', async () => {
    const config: DecoderConfig = { vocabularySize: 40, modelWidth: 8, heads: 2, feedForwardWidth: 16, layers: 2, maxPositions: 6, ropeBase: 10000, rmsEpsilon: 1e-6 };
    const rng = new SplitMix64(5n);
    const batch: TokenBatch = { inputs: Uint32Array.from({ length: 24 }, () => rng.nextBelow(40)), targets: Uint32Array.from({ length: 24 }, () => rng.nextBelow(40)), rows: 4, columns: 6 };
    const one = new Decoder(config);
    one.initialize(3n);
    const loss = one.trainStep(batch);
    const two = await Decoder.create(config, { threads: 2 });
    try {
      two.initialize(3n);
      for (const us of [0, 100_000, 0]) {
        spinTuning.microseconds = us;
        expect(two.trainStep(batch)).toBe(loss);
        expect(firstMismatch(`gradients, spinning ${us} µs`, two.gradients, Array.from(one.gradients, bits))).toBeNull();
      }
    } finally {
      await two.close();
    }
  });
});
