/**
 * The bounded watch before a thread sleeps on the control block
 * (protocol.ts spinWhile): it sees a change another thread makes, gives up
 * after its bound, and watches not at all with a bound of 0; a threaded
 * decoder gives one thread's bits whether its threads watch or sleep at once.
 */
import { Worker } from 'node:worker_threads';
import { SplitMix64, type DecoderConfig } from '@llmcp/format';
import { describe, expect, it } from 'vitest';
import { Decoder, type TokenBatch } from '../src/index.ts';
import { CTRL, CTRL_LENGTH, spinWhile, waitForChange } from '../src/parallel/protocol.ts';
import type { ThreadTuning } from '../src/parallel/tuning.ts';
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

describe('waitForChange', () => {
  it('reads the slot again after every wake-up: a notify sent for an earlier change does not end the wait', () => {
    // A worker ran generation 5 (seen while watching) and sleeps on it; the notify of that bump arrives late and
    // wakes it with the slot still 5: it must sleep again, not run generation 5 a second time (threads.test.ts saw
    // a REDUCE slice added twice and another left out so, under load). The second sleep ends with the slot at 6.
    const b = block(0);
    b[CTRL.GENERATION] = 5;
    const sleeps: number[] = [];
    const sleep = (blk: Int32Array, index: number, value: number): void => {
      sleeps.push(value);
      if (sleeps.length === 2) Atomics.store(blk, index, 6);
    };
    expect(waitForChange(b, CTRL.GENERATION, 5, sleep)).toBe(6);
    expect(sleeps).toEqual([5, 5]);
  });

  it('returns at once when the slot already differs, and sleeps on Atomics.wait until another thread changes it', async () => {
    expect(waitForChange(block(0), CTRL.DONE, 1, () => expect.unreachable('no sleep'))).toBe(0);
    const b = block(0);
    const worker = new Worker(
      `const { workerData: b } = require('node:worker_threads');
       Atomics.store(b, ${CTRL.GENERATION}, 1);
       Atomics.notify(b, ${CTRL.GENERATION});`,
      { eval: true, workerData: b },
    );
    try {
      expect(waitForChange(b, CTRL.GENERATION, 0)).toBe(1);
    } finally {
      await worker.terminate();
    }
  });
});

describe('threads watching or sleeping', () => {
  it('give the bits of one thread either way', async () => {
    const config: DecoderConfig = { vocabularySize: 40, modelWidth: 8, heads: 2, feedForwardWidth: 16, layers: 2, maxPositions: 6, ropeBase: 10000, rmsEpsilon: 1e-6 };
    const rng = new SplitMix64(5n);
    const batch: TokenBatch = { inputs: Uint32Array.from({ length: 24 }, () => rng.nextBelow(40)), targets: Uint32Array.from({ length: 24 }, () => rng.nextBelow(40)), rows: 4, columns: 6 };
    const one = new Decoder(config);
    one.initialize(3n);
    const loss = one.trainStep(batch);
    const tuning: ThreadTuning = {};
    const two = await Decoder.create(config, { threads: 2, tuning });
    try {
      two.initialize(3n);
      for (const us of [0, 100_000, 0]) {
        tuning.spinMicroseconds = us;
        expect(two.trainStep(batch)).toBe(loss);
        expect(firstMismatch(`gradients, spinning ${us} µs`, two.gradients, Array.from(one.gradients, bits))).toBeNull();
      }
    } finally {
      await two.close();
    }
  });
});
