import { describe, expect, it } from 'vitest';
import { quotedBytes } from './bits.ts';
import { MAX_SPELLED_BYTES, spellBpeMerges } from './bpe-merges.ts';

/** A BPE pair record: u32 LE `left, right` per pair, placed at an odd offset to exercise unaligned reads. */
function record(pairs: readonly (readonly [number, number])[]): Uint8Array {
  const out = new Uint8Array(1 + 8 * pairs.length);
  const view = new DataView(out.buffer);
  pairs.forEach(([l, r], i) => {
    view.setUint32(1 + 8 * i, l, true);
    view.setUint32(1 + 8 * i + 4, r, true);
  });
  return out.subarray(1);
}

const A = 0x61;
const B = 0x62;
const C = 0x63;

describe('spellBpeMerges', () => {
  it('spells each merge from bytes and earlier merges (training ids 256 + r)', () => {
    const t = spellBpeMerges(record([[A, B], [256, C], [257, 256]]), 16);
    expect(t.total).toBe(3);
    expect(t.unknownOperand).toBeNull();
    expect(t.spellingStoppedAt).toBeNull();
    expect(t.merges.map((m) => [m.rank, m.left, m.right, quotedBytes(m.leftBytes), quotedBytes(m.rightBytes), quotedBytes(m.bytes)])).toEqual([
      [0, A, B, '"a"', '"b"', '"ab"'],
      [1, 256, C, '"ab"', '"c"', '"abc"'],
      [2, 257, 256, '"abc"', '"ab"', '"abcab"'],
    ]);
  });

  it('spells only the first `limit` merges but counts them all', () => {
    const t = spellBpeMerges(record([[A, B], [256, C], [257, 256]]), 1);
    expect(t.total).toBe(3);
    expect(t.merges.map((m) => m.rank)).toEqual([0]);
    expect(spellBpeMerges(record([[A, B]]), 0).merges).toEqual([]);
  });

  it('reports the first operand not defined yet at its rank, even beyond the limit', () => {
    // At rank 1 the only merge id is 256; 257 is its own id and not defined yet.
    const t = spellBpeMerges(record([[A, B], [257, A], [A, C]]), 16);
    expect(t.unknownOperand).toEqual({ rank: 1, left: 257, right: A });
    expect(t.merges.map((m) => m.rank)).toEqual([0]);
    expect(spellBpeMerges(record([[A, B], [A, C], [0xffffffff, A]]), 1).unknownOperand).toEqual({ rank: 2, left: 0xffffffff, right: A });
  });

  it('ignores a trailing partial pair', () => {
    const bytes = new Uint8Array(12);
    new DataView(bytes.buffer).setUint32(0, A, true);
    new DataView(bytes.buffer).setUint32(4, B, true);
    expect(spellBpeMerges(bytes, 16).total).toBe(1);
    expect(spellBpeMerges(new Uint8Array(7), 16)).toEqual({ total: 0, merges: [], unknownOperand: null, spellingStoppedAt: null });
  });

  it('bounds the bytes it spells when merges double in length (hostile table)', () => {
    // Merge r joins merge r-1 with itself: spelling r has 2^(r+1) bytes.
    const pairs: [number, number][] = [[A, A]];
    for (let r = 1; r < 64; r++) pairs.push([256 + r - 1, 256 + r - 1]);
    const t = spellBpeMerges(record(pairs), 64);
    const held = t.merges.reduce((n, m) => n + m.bytes.length, 0);
    expect(held).toBeLessThanOrEqual(MAX_SPELLED_BYTES);
    expect(t.spellingStoppedAt).toBe(t.merges.length);
    expect(t.merges.at(-1)?.bytes.length).toBe(2 ** t.merges.length);
    expect(t.unknownOperand).toBeNull();
  });

  it('rejects a limit that is not a non-negative integer', () => {
    expect(() => spellBpeMerges(new Uint8Array(8), -1)).toThrow(RangeError);
    expect(() => spellBpeMerges(new Uint8Array(8), 1.5)).toThrow(RangeError);
  });
});
