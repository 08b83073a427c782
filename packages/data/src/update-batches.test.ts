import { SplitMix64 } from '@llmcp/format';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DATA_ERROR_CODES } from './errors.ts';
import { shuffleInPlace } from './shuffle.ts';
import { UpdateBatches, referenceBatchIndex, type UpdateBatch } from './update-batches.ts';
import { causalWindows } from './windows.ts';
import { dataErrorOf } from '../test/helpers.ts';

const plain = (b: UpdateBatch): [number, number, number[]] => [b.epoch, b.batchIndex, Array.from(b.windowIndices)];

describe('shuffleInPlace', () => {
  it('reproduces the ch33 shuffle (training.md §3.1): indices, final state and batches', () => {
    const docs = [
      [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1],
      [2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3],
    ];
    const ids = ['train-a', 'train-b'];
    const windows = causalWindows(docs, 2);
    const rng = new SplitMix64(33n);
    const drawn: number[] = [];
    const probe = rng.clone();
    for (let i = windows.length - 1; i >= 1; i--) drawn.push(probe.nextBelow(i + 1));
    expect(drawn).toEqual([16, 15, 13, 11, 9, 8, 5, 8, 4, 3, 6, 2, 5, 1, 3, 3, 3, 0, 1]);
    shuffleInPlace(windows, rng);
    expect(rng.state).toBe(0xbe1e08c4728735b0n);
    const labels = windows.map((w) => `${ids[w.documentIndex]}@${w.start}`);
    expect(labels).toEqual([
      'train-b@2', 'train-b@8', 'train-a@0', 'train-b@9', 'train-a@7', 'train-b@0', 'train-a@1', 'train-b@7', 'train-a@2', 'train-a@6',
      'train-a@3', 'train-a@4', 'train-b@4', 'train-a@5', 'train-a@8', 'train-a@9', 'train-b@1', 'train-b@3', 'train-b@5', 'train-b@6',
    ]);
  });

  it('permutes typed arrays and leaves 0- and 1-element lists untouched without drawing', () => {
    const rng = new SplitMix64(1n);
    const one = [42];
    shuffleInPlace(one, rng);
    shuffleInPlace([], rng);
    expect(one).toEqual([42]);
    expect(rng.state).toBe(1n);
    const order = Uint32Array.from({ length: 100 }, (_, i) => i);
    shuffleInPlace(order, rng);
    expect(Array.from(order).sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });
});

describe('UpdateBatches', () => {
  it('uses batch (k − 1) mod batchCount for step k and repeats the same order (reference policy)', () => {
    const batches = UpdateBatches.create(20, { batchSize: 2, shuffleSeed: 33n });
    expect(batches.batchCount).toBe(10);
    const first = Array.from({ length: 10 }, () => plain(batches.next()));
    const second = Array.from({ length: 10 }, () => plain(batches.next()));
    for (let k = 1; k <= 20; k++) expect(second[(k - 1) % 10]?.[1]).toBe(referenceBatchIndex(k, 10) % 10);
    expect(second.map(([, i, w]) => [i, w])).toEqual(first.map(([, i, w]) => [i, w]));
    expect(second.every(([e]) => e === 1)).toBe(true);
    // Batch 0 is windows 12 and 18: train-b@2 and train-b@8, as in the ch33 listing.
    expect(first[0]?.[2]).toEqual([12, 18]);
  });

  it('reshuffles each epoch from the sequential list with the continuing generator', () => {
    const batches = UpdateBatches.create(7, { batchSize: 3, shuffleSeed: 9n, epochPolicy: 'reshuffle' });
    const rng = new SplitMix64(9n);
    for (let epoch = 0; epoch < 3; epoch++) {
      const order = Array.from({ length: 7 }, (_, i) => i);
      shuffleInPlace(order, rng);
      const got = [batches.next(), batches.next(), batches.next()];
      expect(got.map((b) => b.epoch)).toEqual([epoch, epoch, epoch]);
      expect(got.flatMap((b) => Array.from(b.windowIndices))).toEqual(order);
      expect(got.map((b) => b.windowIndices.length)).toEqual([3, 3, 1]);
    }
  });

  it('resumes bit-for-bit from its JSON at any step, in both policies', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 9 }),
        fc.option(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), { nil: null }),
        fc.constantFrom('repeat' as const, 'reshuffle' as const),
        fc.integer({ min: 0, max: 60 }),
        (windows, batchSize, seed, epochPolicy, stopAt) => {
          const straight = UpdateBatches.create(windows, { batchSize, shuffleSeed: seed, epochPolicy });
          const expected = Array.from({ length: stopAt + 25 }, () => plain(straight.next()));
          const first = UpdateBatches.create(windows, { batchSize, shuffleSeed: seed, epochPolicy });
          const got = Array.from({ length: stopAt }, () => plain(first.next()));
          const saved = JSON.stringify(first);
          const resumed = UpdateBatches.fromJSON(JSON.parse(saved), windows);
          expect(plain(resumed.peek())).toEqual(expected[stopAt]);
          for (let i = 0; i < 25; i++) got.push(plain(resumed.next()));
          expect(got).toEqual(expected);
          expect(JSON.stringify(resumed)).toBe(JSON.stringify(straight));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('refuses saved states that are malformed or belong to another window list', () => {
    const good = UpdateBatches.create(6, { batchSize: 4, shuffleSeed: 5n }).toJSON();
    const cases: [unknown, string][] = [
      [null, '(root)'],
      [{ ...good, version: 2 }, 'version'],
      [{ ...good, extra: 1 }, 'extra'],
      [{ ...good, cursor: 2 }, 'cursor'],
      [{ ...good, epoch: -1 }, 'epoch'],
      [{ ...good, order: [0, 1, 2, 3, 4] }, 'order'],
      [{ ...good, order: [0, 1, 2, 3, 4, 4] }, 'order[5]'],
      [{ ...good, rngState: '0x1' }, 'rngState'],
      [{ ...good, shuffled: false }, 'rngState'],
      [{ ...good, shuffled: false, rngState: null }, `order[${good.order.findIndex((w, i) => w !== i)}]`],
      [{ ...good, epochPolicy: 'sometimes' }, 'epochPolicy'],
      [{ ...good, batchSize: 0 }, 'batchSize'],
    ];
    for (const [json, field] of cases) {
      const error = dataErrorOf(() => UpdateBatches.fromJSON(json));
      expect([error.code, error.field], JSON.stringify(json)).toEqual([DATA_ERROR_CODES.DATA_INVALID_BATCH_STATE, field]);
    }
    expect(dataErrorOf(() => UpdateBatches.fromJSON(good, 7)).field).toBe('windowCount');
    expect(UpdateBatches.fromJSON(good, 6).cursor).toBe(0);
  });

  it('rejects an empty window list and a zero batch size', () => {
    expect(dataErrorOf(() => UpdateBatches.create(0, { batchSize: 2, shuffleSeed: null })).field).toBe('windowCount');
    expect(dataErrorOf(() => UpdateBatches.create(5, { batchSize: 0, shuffleSeed: null })).message).toContain('must be positive');
  });
});
