import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeCheckpoint } from '@llmcp/format';
import { saveCheckpointAtomic } from '@llmcp/format/node';
import { ShardHasher, shardBytes, shardFile } from './shard-hasher.ts';
import { WrittenShardHasher } from './written-shards.ts';
import { fakeState } from '../test/helpers/fake-checkpoint.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'llmcp-shards-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let serial = 0;

describe('ShardHasher', () => {
  it('gives the same shard digests however the bytes are cut into chunks', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 700 }), fc.array(fc.nat({ max: 200 }), { maxLength: 12 }), fc.integer({ min: 1, max: 128 }), (bytes, cuts, size) => {
        const h = new ShardHasher('f', size);
        let at = 0;
        for (const c of cuts) {
          h.update(bytes.subarray(at, at + c));
          at = Math.min(bytes.length, at + c);
        }
        h.update(bytes.subarray(at));
        const file = path.join(dir, `f-${serial++}`);
        writeFileSync(file, bytes);
        expect(h.finish()).toEqual(shardFile(file, 'f', size).shards);
        expect(shardBytes('f', bytes)).toEqual(shardFile(file, 'f').shards);
      }),
    );
  });
});

describe('WrittenShardHasher', () => {
  it('hashes the file as finally written, whatever order the writes complete in and whatever is written again', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 1, maxLength: 900, size: 'max' }),
        fc.array(fc.integer({ min: 1, max: 150 }), { minLength: 1, maxLength: 20 }),
        fc.array(fc.tuple(fc.nat(), fc.uint8Array({ minLength: 1, maxLength: 12 }), fc.boolean()), { maxLength: 3 }),
        fc.integer({ min: 8, max: 200 }),
        fc.infiniteStream(fc.nat()),
        async (content, sizes, rewrites, shardSize, order) => {
          // Pieces of the file, written in a shuffled order; some ranges written again, before or after the rest.
          const pieces: { at: number; bytes: Uint8Array }[] = [];
          for (let at = 0, i = 0; at < content.length; i += 1) {
            const n = Math.min(content.length - at, sizes[i % sizes.length] as number);
            pieces.push({ at, bytes: content.slice(at, at + n) });
            at += n;
          }
          const shuffled = [...pieces];
          const it = order[Symbol.iterator]();
          for (let i = shuffled.length - 1; i > 0; i -= 1) {
            const j = (it.next().value as number) % (i + 1);
            [shuffled[i], shuffled[j]] = [shuffled[j] as (typeof pieces)[number], shuffled[i] as (typeof pieces)[number]];
          }
          const final = content.slice();
          const late: { at: number; bytes: Uint8Array }[] = [];
          for (const [where, bytes, first] of rewrites) {
            const at = where % content.length;
            const piece = { at, bytes: bytes.subarray(0, content.length - at) };
            if (first) shuffled.splice(0, 0, { at, bytes: content.slice(at, at + piece.bytes.length) });
            late.push(piece);
            final.set(piece.bytes, at);
          }
          const tap = new WrittenShardHasher('f', shardSize);
          const file = path.join(dir, `w-${serial++}`);
          const handle = await tap.fileSystem.open(file, 'wx');
          for (const p of shuffled) await handle.write(p.bytes, 0, p.bytes.length, p.at);
          // Every shard written so far is hashed before the late writes change some of them.
          await tap.whenHashed();
          for (const p of late) await handle.write(p.bytes, 0, p.bytes.length, p.at);
          await handle.sync();
          await handle.close();
          expect(readFileSync(file).equals(final)).toBe(true);
          expect(await tap.digests()).toEqual(shardFile(file, 'f', shardSize).shards);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('hashes a checkpoint saved through the format\'s atomic writer exactly as the file on disk', async () => {
    const wide = { vocabularySize: 5, modelWidth: 64, heads: 4, feedForwardWidth: 256, layers: 2, maxPositions: 2, ropeBase: 10000, rmsEpsilon: 1e-6 };
    const state = fakeState(3, wide);
    for (const shardSize of [4096, 65536, 1 << 22]) {
      const tap = new WrittenShardHasher('state.llmcp', shardSize);
      const file = path.join(dir, `s-${serial++}.llmcp`);
      await saveCheckpointAtomic(file, state, { hashInWorker: false, fileSystem: tap.fileSystem });
      const digests = await tap.digests();
      expect(readFileSync(file).equals(encodeCheckpoint(state))).toBe(true);
      expect(digests).toEqual(shardFile(file, 'state.llmcp', shardSize).shards);
      expect(digests.length).toBe(Math.ceil(readFileSync(file).length / shardSize));
    }
  });

  it('takes over the shards of a hash thread that stalls, or that cannot start, with the same digests', async () => {
    const content = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7) & 0xff);
    // A thread that takes every job and never answers (a starved idle-priority thread), and none at all.
    const stuck: Worker[] = [];
    for (const hashThread of [(): Worker => stuck[stuck.push(new Worker('setInterval(() => {}, 1000)', { eval: true })) - 1] as Worker, (): null => null]) {
      const tap = new WrittenShardHasher('f', 64, hashThread);
      const file = path.join(dir, `stall-${serial++}`);
      const handle = await tap.fileSystem.open(file, 'wx');
      for (let at = 0; at < content.length; at += 100) await handle.write(content.subarray(at, at + 100), 0, Math.min(100, content.length - at), at);
      await handle.sync();
      await handle.close();
      expect(await tap.digests()).toEqual(shardFile(file, 'f', 64).shards);
    }
    for (const w of stuck) await w.terminate();
  });

  it('refuses to give digests of a file with bytes never written, and lets everything go after a failed save', async () => {
    const tap = new WrittenShardHasher('f', 16);
    const handle = await tap.fileSystem.open(path.join(dir, `g-${serial++}`), 'wx');
    await handle.write(new Uint8Array(8), 0, 8, 0);
    await handle.write(new Uint8Array(8), 0, 8, 20);
    await handle.sync();
    await handle.close();
    await expect(tap.digests()).rejects.toThrow(/bytes \[16, 28\) of f were not all written|bytes \[0, 16\) of f were not all written/);
    const idle = new WrittenShardHasher('f', 16);
    idle.dispose();
    await expect(idle.digests()).rejects.toThrow(/no file was written/);
  });
});
