import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { traceBpeTraining, trainBpe } from './bpe-training.ts';
import { TOKENIZER_ERROR_CODES } from './errors.ts';
import { MAX_REQUESTED_MERGES } from './tokenizer.ts';
import { tokenizerErrorOf } from '../test/helpers.ts';

/** Documents over a tiny alphabet, so ties, runs and chained merges are common. */
const smallDocuments = fc.array(
  fc.uint8Array({ maxLength: 40 }).map((b) => b.map((x) => 97 + (x % 3))),
  { minLength: 1, maxLength: 5 },
);

describe('trainBpe', () => {
  it('learns the same merges, counts and replacements as the literal reference algorithm', () => {
    fc.assert(
      fc.property(smallDocuments, fc.integer({ min: 0, max: 40 }), (docs, requested) => {
        const fast = trainBpe(docs, requested, { keepSequences: true });
        const slow = traceBpeTraining(docs, requested);
        expect(fast.merges).toEqual(slow.rounds.map(({ rank, left, right, count, replacements }) => ({ rank, left, right, count, replacements })));
        const last = slow.rounds.at(-1)?.sequencesAfter ?? slow.initialSequences;
        expect(fast.sequences?.map((s) => Array.from(s))).toEqual(last);
        expect(fast.learnedMerges).toBe(slow.rounds.length);
        expect(fast.requestedMerges).toBe(requested);
      }),
      { numRuns: 300 },
    );
  });

  it('agrees with the reference on arbitrary bytes (all 256 values)', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 60 }), { maxLength: 4 }), fc.integer({ min: 0, max: 30 }), (docs, requested) => {
        const fast = trainBpe(docs, requested);
        const slow = traceBpeTraining(docs, requested);
        expect(fast.merges.map((m) => [m.left, m.right, m.count, m.replacements])).toEqual(slow.rounds.map((m) => [m.left, m.right, m.count, m.replacements]));
      }),
      { numRuns: 200 },
    );
  });

  it('agrees with the reference on a few KB of text, where the working arrays are compacted several times', () => {
    const enc = new TextEncoder();
    const words = ['the', 'cat', 'sat', 'on', 'a', 'mat', 'and', 'then', 'ran', 'home', 'кот', 'дом', 'aaaa', 'abab'];
    const docs: Uint8Array[] = [];
    let seed = 7;
    for (let d = 0; d < 4; d++) {
      const parts: string[] = [];
      for (let w = 0; w < 300; w++) {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        parts.push(words[seed % words.length] as string);
      }
      docs.push(enc.encode(parts.join(d % 2 === 0 ? ' ' : ', ')));
    }
    const fast = trainBpe(docs, 120, { keepSequences: true });
    const slow = traceBpeTraining(docs, 120);
    expect(fast.merges).toEqual(slow.rounds.map(({ rank, left, right, count, replacements }) => ({ rank, left, right, count, replacements })));
    expect(fast.sequences?.map((s) => Array.from(s))).toEqual(slow.rounds.at(-1)?.sequencesAfter);
  });

  it('is deterministic: the same input gives the same table and identity', () => {
    fc.assert(
      fc.property(smallDocuments, fc.integer({ min: 0, max: 20 }), (docs, requested) => {
        const a = trainBpe(docs, requested);
        const b = trainBpe(docs.map((d) => d.slice()), requested);
        expect(b.merges).toEqual(a.merges);
        expect(b.tokenizer.identity()).toBe(a.tokenizer.identity());
      }),
      { numRuns: 100 },
    );
  });

  it('breaks ties numerically, never as strings: (97,98) before (98,97) before (256,97)', () => {
    const { rounds } = traceBpeTraining([new TextEncoder().encode('aaa'), new TextEncoder().encode('aba')], 2);
    expect(rounds[1]?.candidates.map((c) => [c.left, c.right])).toEqual([
      [97, 98],
      [98, 97],
      [256, 97],
    ]);
    expect(trainBpe([Uint8Array.of(97, 97, 97), Uint8Array.of(97, 98, 97)], 2).merges.map((m) => [m.left, m.right])).toEqual([
      [97, 97],
      [97, 98],
    ]);
  });

  it('counts overlapping occurrences but replaces without overlap', () => {
    const result = trainBpe([Uint8Array.of(120, 120, 120, 120, 120)], 1, { keepSequences: true });
    expect(result.merges[0]).toMatchObject({ left: 120, right: 120, count: 4, replacements: 2 });
    expect(Array.from(result.sequences?.[0] ?? [])).toEqual([256, 256, 120]);
  });

  it('reports progress once per merge', () => {
    const seen: number[] = [];
    // 'abcab' can take only 3 merges (ab; then ab·c and c·ab, then the last pair) before one id is left.
    const result = trainBpe([new TextEncoder().encode('abcab')], 5, { onMerge: (m) => seen.push(m.rank) });
    expect(seen).toEqual([0, 1, 2]);
    expect(result.learnedMerges).toBe(3);
  });

  it('rejects requests beyond the u32 id space before any work, and non-integer requests', () => {
    const error = tokenizerErrorOf(() => trainBpe([], MAX_REQUESTED_MERGES + 1));
    expect(error.code).toBe(TOKENIZER_ERROR_CODES.TOKENIZER_MERGE_REQUEST_TOO_LARGE);
    expect(trainBpe([Uint8Array.of(1, 2)], MAX_REQUESTED_MERGES).learnedMerges).toBe(1);
    expect(() => trainBpe([], -1)).toThrow(RangeError);
    expect(() => trainBpe([], 1.5)).toThrow(RangeError);
  });
});
