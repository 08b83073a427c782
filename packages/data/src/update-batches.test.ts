import { SplitMix64 } from '@llmcp/format';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DATA_ERROR_CODES } from './errors.ts';
import { shuffleInPlace } from './shuffle.ts';
import { UpdateBatches, referenceBatchIndex, type UpdateBatch, type UpdateBatchStateJSONV1 } from './update-batches.ts';
import { causalWindows } from './windows.ts';
import { dataErrorOf } from '../test/helpers.ts';
import { versionOneBatchState } from '../../../tools/fixtures.ts';

const plain = (b: UpdateBatch): [number, number, number[]] => [b.epoch, b.batchIndex, Array.from(b.windowIndices)];

/** The version 1 JSON of a state (what jobs of llmcp-job/1 … 3 hold). */
const versionOne = (batches: UpdateBatches): UpdateBatchStateJSONV1 => versionOneBatchState(batches.state()) as unknown as UpdateBatchStateJSONV1;

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

  it('resumes bit-for-bit from its JSON at any step, in both policies, and from the version 1 JSON as well', () => {
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
          // The version 1 JSON converts to the same version 2 state.
          const converted = UpdateBatches.fromJSON(JSON.parse(JSON.stringify(versionOne(first))), windows);
          expect(converted.toJSON()).toEqual(first.toJSON());
          expect(plain(resumed.peek())).toEqual(expected[stopAt]);
          const fromV1 = [...got];
          for (let i = 0; i < 25; i++) got.push(plain(resumed.next()));
          for (let i = 0; i < 25; i++) fromV1.push(plain(converted.next()));
          expect(got).toEqual(expected);
          expect(fromV1).toEqual(expected);
          expect(JSON.stringify(resumed)).toBe(JSON.stringify(straight));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('saves a state of constant size: the epoch seed, epoch and cursor, never the order', () => {
    for (const windows of [100, 100_000]) {
      const batches = UpdateBatches.create(windows, { batchSize: 8, shuffleSeed: 77n, epochPolicy: 'reshuffle' });
      for (let i = 0; i < Math.ceil(windows / 8) + 3; i++) batches.next();
      const json = batches.toJSON();
      expect(Object.keys(json).sort()).toEqual(['batchSize', 'cursor', 'epoch', 'epochPolicy', 'epochSeed', 'shuffled', 'version', 'windowCount']);
      expect(JSON.stringify(json).length).toBeLessThan(200);
      expect([json.version, json.epoch, json.cursor]).toEqual([2, 1, 3]);
    }
  });

  it('refuses saved states that are malformed or belong to another window list', () => {
    const good = UpdateBatches.create(6, { batchSize: 4, shuffleSeed: 5n }).toJSON();
    const cases: [unknown, string][] = [
      [null, '(root)'],
      [{ ...good, version: 3 }, 'version'],
      [{ ...good, extra: 1 }, 'extra'],
      [{ ...good, order: [0, 1, 2, 3, 4, 5] }, 'order'],
      [{ ...good, cursor: 2 }, 'cursor'],
      [{ ...good, epoch: -1 }, 'epoch'],
      [{ ...good, epochSeed: '0x1' }, 'epochSeed'],
      [{ ...good, shuffled: false }, 'epochSeed'],
      [{ ...good, epochPolicy: 'sometimes' }, 'epochPolicy'],
      [{ ...good, batchSize: 0 }, 'batchSize'],
    ];
    const old = versionOne(UpdateBatches.create(6, { batchSize: 4, shuffleSeed: 5n }));
    const swapped = [...old.order];
    [swapped[0], swapped[1]] = [swapped[1] as number, swapped[0] as number];
    cases.push(
      [{ ...old, epochSeed: null }, 'epochSeed'],
      [{ ...old, order: [0, 1, 2, 3, 4] }, 'order'],
      [{ ...old, order: [0, 1, 2, 3, 4, 4] }, 'order[5]'],
      [{ ...old, order: swapped }, 'order'],
      [{ ...old, rngState: '0x1' }, 'rngState'],
      [{ ...old, shuffled: false }, 'rngState'],
      [{ ...old, shuffled: false, rngState: null }, `order[${old.order.findIndex((w, i) => w !== i)}]`],
    );
    for (const [json, field] of cases) {
      const error = dataErrorOf(() => UpdateBatches.fromJSON(json));
      expect([error.code, error.field], JSON.stringify(json)).toEqual([DATA_ERROR_CODES.DATA_INVALID_BATCH_STATE, field]);
    }
    expect(dataErrorOf(() => UpdateBatches.fromJSON(good, 7)).field).toBe('windowCount');
    expect(UpdateBatches.fromJSON(good, 6).cursor).toBe(0);
    expect(UpdateBatches.fromJSON(old, 6).toJSON()).toEqual(good);
  });

  it('rejects an empty window list and a zero batch size', () => {
    expect(dataErrorOf(() => UpdateBatches.create(0, { batchSize: 2, shuffleSeed: null })).field).toBe('windowCount');
    expect(dataErrorOf(() => UpdateBatches.create(5, { batchSize: 0, shuffleSeed: null })).message).toContain('must be positive');
  });
});
