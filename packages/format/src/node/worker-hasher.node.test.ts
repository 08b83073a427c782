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
