import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { batchCount, evaluationBatches, gatherBatch } from './batches.ts';
import { DATA_ERROR_CODES } from './errors.ts';
import { causalWindows, packDocuments, windowCount, windowCoverage } from './windows.ts';
import { dataErrorOf } from '../test/helpers.ts';

describe('causalWindows', () => {
  it('yields (L − (C + 1)) div S + 1 windows per document, in document then start order, never crossing documents', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(30), { maxLength: 6 }), fc.integer({ min: 1, max: 8 }), fc.integer({ min: 1, max: 5 }), (lengths, c, s) => {
        const docs = lengths.map((n) => new Uint32Array(n));
        const windows = causalWindows(docs, c, s);
        const expected = lengths.reduce((acc, l) => acc + (l < c + 1 ? 0 : Math.floor((l - (c + 1)) / s) + 1), 0);
        expect(windows.length).toBe(expected);
        for (let i = 1; i < windows.length; i++) {
          const [a, b] = [windows[i - 1], windows[i]];
          expect(a !== undefined && b !== undefined && (a.documentIndex < b.documentIndex || (a.documentIndex === b.documentIndex && b.start === a.start + s))).toBe(true);
        }
        for (const w of windows) expect(w.start + c + 1).toBeLessThanOrEqual(lengths[w.documentIndex] ?? -1);
        lengths.forEach((l) => expect(windowCount(l, c, s)).toBe(l < c + 1 ? 0 : Math.floor((l - c - 1) / s) + 1));
      }),
    );
  });

  it('reproduces the ch33 fixture: 10 windows per training document, 7 per validation document', () => {
    const trainA = [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1];
    const validationB = [0, 0, 0, 0, 0, 0, 0, 0, 0];
    expect(causalWindows([trainA], 2)).toHaveLength(10);
    expect(causalWindows([validationB], 2)).toHaveLength(7);
  });

  it('rejects a zero context length or stride', () => {
    for (const [c, s] of [
      [0, 1],
      [3, 0],
      [-1, 1],
      [1.5, 1],
    ] as const) {
      const error = dataErrorOf(() => causalWindows([[0, 1, 2]], c, s));
      expect(error.code).toBe(DATA_ERROR_CODES.DATA_INVALID_PARAMETER);
      expect(error.message).toContain('must be positive');
      expect(dataErrorOf(() => windowCount(5, c, s)).code).toBe(DATA_ERROR_CODES.DATA_INVALID_PARAMETER);
    }
  });
});

describe('gatherBatch', () => {
  it('lays out inputs and shifted targets row-major in batch order', () => {
    const docs = [Uint32Array.of(0, 10, 11, 12, 1), Uint32Array.of(0, 20, 21, 1)];
    const batch = gatherBatch(docs, [{ documentIndex: 1, start: 1 }, { documentIndex: 0, start: 0 }], 2);
    expect(Array.from(batch.inputs)).toEqual([20, 21, 0, 10]);
    expect(Array.from(batch.targets)).toEqual([21, 1, 10, 11]);
    expect([batch.rows, batch.columns]).toEqual([2, 2]);
    expect(gatherBatch(docs, [], 3).inputs).toHaveLength(0);
  });

  it('rejects windows outside their document and tokens that are not u32', () => {
    const docs = [[0, 5, 6, 1]];
    expect(dataErrorOf(() => gatherBatch(docs, [{ documentIndex: 1, start: 0 }], 2)).code).toBe(DATA_ERROR_CODES.DATA_WINDOW_OUT_OF_RANGE);
    const tail = dataErrorOf(() => gatherBatch(docs, [{ documentIndex: 0, start: 2 }], 2));
    expect([tail.code, tail.documentIndex, tail.position]).toEqual([DATA_ERROR_CODES.DATA_WINDOW_OUT_OF_RANGE, 0, 2]);
    const bad = dataErrorOf(() => gatherBatch([[0, -3, 6, 1]], [{ documentIndex: 0, start: 0 }], 2));
    expect(bad.position).toBe(1);
    expect(dataErrorOf(() => gatherBatch(docs, [{ documentIndex: 0, start: 0 }], 0)).code).toBe(DATA_ERROR_CODES.DATA_INVALID_PARAMETER);
  });
});

describe('evaluationBatches', () => {
  it('makes consecutive batches, the last one smaller, dropping and padding nothing', () => {
    const items = Array.from({ length: 14 }, (_, i) => i);
    expect(evaluationBatches(items, 4).map((b) => b.length)).toEqual([4, 4, 4, 2]);
    expect(evaluationBatches(items, 4).flat()).toEqual(items);
    expect(evaluationBatches([], 3)).toEqual([]);
    expect(batchCount(14, 4)).toBe(4);
    expect(dataErrorOf(() => evaluationBatches(items, 0)).message).toContain('must be positive');
  });
});

describe('packDocuments', () => {
  it('joins documents in order, so windows reach across their boundaries', () => {
    const docs = [Uint32Array.of(0, 40, 1), Uint32Array.of(0, 41, 42, 1)];
    const stream = packDocuments(docs);
    expect(Array.from(stream)).toEqual([0, 40, 1, 0, 41, 42, 1]);
    // Each document alone is too short for a window of 4; packed, both are trained on.
    expect(causalWindows(docs, 4, 4)).toEqual([]);
    expect(gatherBatch([stream], causalWindows([stream], 3, 3), 3).targets).toEqual(Uint32Array.of(40, 1, 0, 41, 42, 1));
    expect(dataErrorOf(() => packDocuments([[0, -1]])).code).toBe(DATA_ERROR_CODES.DATA_WINDOW_OUT_OF_RANGE);
  });
});

describe('windowCoverage', () => {
  it('counts what causalWindows reaches, without building it', () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 30 }), { maxLength: 8 }), fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 9 }), (lengths, C, S) => {
        const docs = lengths.map((n) => new Uint32Array(n));
        const windows = causalWindows(docs, C, S);
        const covered = docs.map((d) => new Uint8Array(d.length));
        for (const w of windows) for (let j = 0; j <= C; j++) (covered[w.documentIndex] as Uint8Array)[w.start + j] = 1;
        const short = lengths.filter((n) => n < C + 1);
        expect(windowCoverage(docs, C, S)).toEqual({
          tokens: lengths.reduce((a, b) => a + b, 0),
          coveredTokens: covered.reduce((a, c) => a + c.reduce((x, y) => x + y, 0), 0),
          windows: windows.length,
          documents: docs.length,
          documentsWithoutWindow: short.length,
          tokensWithoutWindow: short.reduce((a, b) => a + b, 0),
        });
        expect(windowCoverage(lengths, C, S)).toEqual(windowCoverage(docs, C, S));
      }),
      { numRuns: 200 },
    );
  });
});
