import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fnv1a64 } from '../fnv1a64.ts';
import { WorkerHasher } from './worker-hasher.ts';

describe('WorkerHasher', () => {
  it('hashes a stream pushed in arbitrary pieces through a small ring exactly like fnv1a64', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.uint8Array({ maxLength: 3000 }), { maxLength: 12 }), fc.boolean(), async (pieces, eager) => {
        const hasher = WorkerHasher.start(512, 3);
        expect(hasher).not.toBeNull();
        if (hasher === null) return;
        let skip = 0;
        if (eager && pieces[0] !== undefined) skip = hasher.pushAvailable(pieces[0]);
        const joined = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0));
        let at = 0;
        for (const p of pieces) {
          joined.set(p, at);
          at += p.length;
        }
        let offset = 0;
        for (const p of pieces) {
          const from = Math.max(0, skip - offset);
          offset += p.length;
          if (from < p.length) await hasher.push(p.subarray(from));
        }
        expect(await hasher.digest()).toBe(fnv1a64(joined));
      }),
      { numRuns: 25, seed: 9 },
    );
  });

  it('queues only what free slots hold without waiting', async () => {
    const hasher = WorkerHasher.start(100, 2);
    if (hasher === null) throw new Error('no worker');
    const bytes = new Uint8Array(1000).fill(1);
    expect(hasher.pushAvailable(bytes)).toBe(200);
    await hasher.push(bytes.subarray(200));
    expect(await hasher.digest()).toBe(fnv1a64(bytes));
  });

  it('reuses a parked worker with a fresh state, and replaces one whose stream was abandoned', async () => {
    const bytes = new Uint8Array(5000).map((_, i) => i * 7);
    const a = WorkerHasher.start(1024, 2);
    if (a === null) throw new Error('no worker');
    await a.push(bytes);
    expect(await a.digest()).toBe(fnv1a64(bytes));
    const b = WorkerHasher.start(1024, 2);
    if (b === null) throw new Error('no worker');
    await b.push(bytes.subarray(0, 1000));
    b.close();
    const c = WorkerHasher.start(1024, 2);
    if (c === null) throw new Error('no worker');
    await c.push(bytes.subarray(10));
    expect(await c.digest()).toBe(fnv1a64(bytes.subarray(10)));
  });
});

/** Geometries (slot bytes, slots) a worker may be parked with: those the tests above start, then the last one used below. */
let parkable: (readonly [number, number])[] = [
  [512, 3],
  [100, 2],
  [1024, 2],
];

/**
 * A hasher with `slotBytes` × 3 slots. One idle worker is kept at most, and a worker of another geometry is
 * then terminated when it finishes: an idle one of another geometry is released first, so this geometry's
 * worker is the one parked and reused between the streams of a test (instead of one worker start per stream).
 * @param slotBytes - bytes per slot.
 * @returns the hasher.
 */
function startHasher(slotBytes: number): WorkerHasher {
  for (const g of parkable) if (g[0] !== slotBytes || g[1] !== 3) WorkerHasher.start(...g)?.close();
  parkable = [[slotBytes, 3]];
  const hasher = WorkerHasher.start(slotBytes, 3);
  if (hasher === null) throw new Error('no worker');
  return hasher;
}

/** Chunk boundaries of a stream of `length` bytes pushed at once through slots of `slotBytes`, with the first and last byte. */
function boundaryOffsets(length: number, slotBytes: number): number[] {
  const at = new Set([0, 1, length - 2, length - 1]);
  for (let b = slotBytes; b < length; b += slotBytes) for (const d of [-2, -1, 0, 1]) at.add(b + d);
  return [...at].filter((x) => x >= 0 && x < length).sort((x, y) => x - y);
}

describe('WorkerHasher: corruption at chunk boundaries (first chunk, both sides of each boundary, last chunk)', () => {
  for (const slotBytes of [7, 8, 24, 64, 1000]) {
    it(`a byte flipped at each generated offset changes the digest to fnv1a64 of the damaged stream (slots of ${slotBytes} bytes)`, async () => {
      const bytes = new Uint8Array(4 * slotBytes + 3).map((_, i) => (i * 31) ^ (i >> 3));
      const intact = fnv1a64(bytes);
      const offsets = boundaryOffsets(bytes.length, slotBytes);
      expect(offsets).toContain(bytes.length - 1);
      for (const at of offsets) {
        const damaged = bytes.slice();
        damaged[at] = (damaged[at] as number) ^ 0x01;
        const hasher = startHasher(slotBytes);
        await hasher.push(damaged);
        const digest = await hasher.digest();
        expect(digest, `byte ${at}`).toBe(fnv1a64(damaged));
        expect(digest, `byte ${at}`).not.toBe(intact);
      }
    });
  }

  // Two f64 records pushed under tags 0 and 1, the second starting a new chunk (with slots over 24 bytes the first ends in a partial one).
  for (const slotBytes of [8, 24, 64, 4096]) {
    it(`a NaN, -Infinity or negative element next to each boundary is flagged under its own record's tag only (slots of ${slotBytes} bytes)`, async () => {
      const lengths = [3 * slotBytes + 24, 2 * slotBytes + 8];
      const chunkStarts = [0, ...lengths.flatMap((len, r) => Array.from({ length: Math.ceil(len / slotBytes) }, (_, k) => (r === 0 ? 0 : (lengths[0] as number)) + k * slotBytes))];
      const total = (lengths[0] as number) + (lengths[1] as number);
      const elements = new Set<number>();
      for (const b of [...chunkStarts, total]) for (const d of [-16, -8, 0, 8]) if (b + d >= 0 && b + d < total) elements.add(b + d);
      expect(elements).toContain(total - 8);
      for (const at of elements) {
        for (const [value, flag] of [
          [Number.NaN, 1],
          [Number.NEGATIVE_INFINITY, 3],
          [-1, 2],
        ] as const) {
          const stream = new Float64Array(total / 8).map((_, i) => 1 + i / 7);
          stream[at / 8] = value;
          const bytes = new Uint8Array(stream.buffer);
          const hasher = startHasher(slotBytes);
          await hasher.push(bytes.subarray(0, lengths[0]), 0);
          await hasher.push(bytes.subarray(lengths[0]), 1);
          expect(await hasher.digest()).toBe(fnv1a64(bytes));
          const tag = at < (lengths[0] as number) ? 0 : 1;
          expect([hasher.flags(0), hasher.flags(1)], `${value} at byte ${at}`).toEqual(tag === 0 ? [flag, 0] : [0, flag]);
        }
      }
    });
  }
});
