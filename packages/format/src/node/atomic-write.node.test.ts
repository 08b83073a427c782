import { existsSync, lstatSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { canMakeDeviceNodes, makeSpecialFile, SPECIAL_FILE_KINDS, type SpecialFileKind } from '../../../../tools/fixtures.ts';
import { goldenBytes } from '../../test/golden.ts';
import { decodeCheckpoint } from '../decode.ts';
import { encodeCheckpoint } from '../encode.ts';
import { expectedParameterShapes } from '../parameter-layout.ts';
import { isFormatError, type FormatError } from '../errors.ts';
import type { CheckpointState } from '../types.ts';
import { nodeFileSystem, TEMP_NAME_ATTEMPTS, writeFileAtomic, type AtomicFileSystem } from './atomic-write.ts';
import { loadCheckpoint } from './load.ts';
import { saveCheckpointAtomic } from './save.ts';

const GOLDEN = goldenBytes();
const STATE = decodeCheckpoint(GOLDEN);
/** A different valid state: the golden one at step 0. */
const NEXT: CheckpointState = { ...STATE, selectedStep: 0n, optimizer: { ...STATE.optimizer, step: 0n, beta1Power: 1, beta2Power: 1, moments: [] } };

let dir = '';
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'llmcp-atomic-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function failure(p: Promise<unknown>): Promise<FormatError> {
  try {
    await p;
  } catch (e) {
    if (isFormatError(e)) return e;
    throw e;
  }
  throw new Error('expected a failure');
}

type Stage = 'write' | 'mid-write' | 'sync' | 'rename' | 'sync-directory';

/** The real file system with one injected failure at `stage`. */
function failingAt(stage: Stage): AtomicFileSystem {
  const boom = (): Promise<never> => Promise.reject(Object.assign(new Error(`injected ${stage} failure`), { code: 'EIO' }));
  return {
    async open(p, flags) {
      const h = await nodeFileSystem.open(p, flags);
      if (flags === 'r') return { ...h, sync: stage === 'sync-directory' ? boom : h.sync };
      let writes = 0;
      return {
        write: (b, o, l, pos) => (stage === 'write' || (stage === 'mid-write' && ++writes === 2) ? boom() : h.write(b, o, l, pos)),
        sync: stage === 'sync' ? boom : h.sync,
        close: h.close,
      };
    },
    rename: stage === 'rename' ? boom : nodeFileSystem.rename,
    unlink: nodeFileSystem.unlink,
  };
}

const temporaries = (): string[] => readdirSync(dir).filter((f) => f.includes('.tmp-'));

describe('saveCheckpointAtomic', () => {
  for (const hashInWorker of [true, false]) {
    it(`writes exactly the bytes of encodeCheckpoint and reports the checksum (hashing ${hashInWorker ? 'on a worker' : 'in-thread'})`, async () => {
      const target = path.join(dir, 'state.llmcp');
      const result = await saveCheckpointAtomic(target, STATE, { hashInWorker });
      expect(result).toEqual({ byteLength: 6330, checksum: 0x2b8b6097eaed6a91n, checksumLabel: 'fnv1a64:2b8b6097eaed6a91' });
      expect(Buffer.from(readFileSync(target)).equals(Buffer.from(GOLDEN))).toBe(true);
      await saveCheckpointAtomic(target, NEXT, { hashInWorker });
      expect(Buffer.from(readFileSync(target)).equals(Buffer.from(encodeCheckpoint(NEXT)))).toBe(true);
      expect(temporaries()).toEqual([]);
    });
  }

  it('saves a 10 MB state (many ring slots and early datasyncs) identically with both hashing modes', async () => {
    const decoder = { ...NEXT.decoder, modelWidth: 64, feedForwardWidth: 2048, vocabularySize: 5 };
    const parameters = expectedParameterShapes(decoder).map((s, k) => ({ name: s.name, shape: [...s.shape], data: Float64Array.from({ length: s.shape.reduce((x, y) => x * y, 1) }, (_, i) => Math.sin(k * 977 + i)) }));
    const moments = parameters.map((p) => ({ name: p.name, shape: p.shape, first: p.data.map((x) => x / 7), second: p.data.map((x) => x * x) }));
    const big: CheckpointState = { ...STATE, decoder, parameters, optimizer: { ...STATE.optimizer, moments } };
    const a = path.join(dir, 'a.llmcp');
    const b = path.join(dir, 'b.llmcp');
    const ra = await saveCheckpointAtomic(a, big, { hashInWorker: true });
    const rb = await saveCheckpointAtomic(b, big, { hashInWorker: false });
    expect(ra.byteLength).toBeGreaterThan(9e6);
    expect(ra).toEqual(rb);
    const bytes = encodeCheckpoint(big);
    expect(Buffer.from(readFileSync(a)).equals(Buffer.from(bytes))).toBe(true);
    expect(Buffer.from(readFileSync(b)).equals(Buffer.from(bytes))).toBe(true);
  });

  for (const stage of ['write', 'mid-write', 'sync', 'rename'] as const) {
    it(`interrupted at ${stage === 'write' ? 'the first write (before anything is written)' : stage === 'mid-write' ? 'the second write (partial temporary file)' : stage === 'sync' ? 'the fsync (after the write)' : 'the rename'}: the previous checkpoint still loads and no temporary file is left`, async () => {
      const target = path.join(dir, 'state.llmcp');
      writeFileSync(target, GOLDEN);
      const e = await failure(saveCheckpointAtomic(target, NEXT, { fileSystem: failingAt(stage) }));
      expect(e.code).toBe('FORMAT_IO');
      expect(e.reason).toBe(stage === 'mid-write' ? 'write' : stage);
      expect(e.message).toContain(`injected ${stage} failure`);
      const loaded = await loadCheckpoint(target);
      expect(loaded.layout.checksumLabel).toBe('fnv1a64:2b8b6097eaed6a91');
      expect(loaded.optimizer.step).toBe(8n);
      expect(temporaries()).toEqual([]);
    });
  }

  it('interrupted after the rename (directory fsync fails): reports Io, the new checkpoint is complete, no temporary file', async () => {
    const target = path.join(dir, 'state.llmcp');
    writeFileSync(target, GOLDEN);
    const e = await failure(saveCheckpointAtomic(target, NEXT, { fileSystem: failingAt('sync-directory') }));
    expect([e.code, e.reason]).toEqual(['FORMAT_IO', 'sync-directory']);
    expect(e.message).toContain('already replaced');
    const loaded = await loadCheckpoint(target);
    expect(loaded.optimizer.step).toBe(0n);
    expect(temporaries()).toEqual([]);
  });

  it('touches nothing when the state is invalid', async () => {
    const target = path.join(dir, 'state.llmcp');
    const bad = { ...STATE, selectedStep: 9n };
    const e = await failure(saveCheckpointAtomic(target, bad));
    expect(e.code).toBe('FORMAT_STEP_MISMATCH');
    expect(readdirSync(dir)).toEqual([]);
  });

  it('uses .<name>.tmp-<pid>-<serial> names, skips existing ones, and gives up after 128 attempts', async () => {
    const tried: string[] = [];
    const busy = (limit: number): AtomicFileSystem => ({
      ...nodeFileSystem,
      open: (p, flags) => {
        if (flags === 'wx') {
          tried.push(path.basename(p));
          if (tried.length <= limit) return Promise.reject(Object.assign(new Error('exists'), { code: 'EEXIST' }));
        }
        return nodeFileSystem.open(p, flags);
      },
    });
    const target = path.join(dir, 'job.json');
    await writeFileAtomic(target, new TextEncoder().encode('{"a":1}'), { fileSystem: busy(3) });
    expect(readFileSync(target, 'utf8')).toBe('{"a":1}');
    expect(tried).toHaveLength(4);
    const serials = tried.map((name) => {
      const m = /^\.job\.json\.tmp-(\d+)-(\d+)$/.exec(name);
      expect(m?.[1]).toBe(String(process.pid));
      return Number(m?.[2]);
    });
    expect(serials).toEqual([serials[0], serials[0]! + 1, serials[0]! + 2, serials[0]! + 3]);
    tried.length = 0;
    const e = await failure(writeFileAtomic(target, new Uint8Array(1), { fileSystem: busy(Number.POSITIVE_INFINITY) }));
    expect([e.code, e.reason]).toEqual(['FORMAT_IO', 'create-temporary']);
    expect(tried).toHaveLength(TEMP_NAME_ATTEMPTS);
    expect(readFileSync(target, 'utf8')).toBe('{"a":1}');
  });

  it('fails with Io at once when the directory does not exist, and with Layout for a path without a file name', async () => {
    const e = await failure(writeFileAtomic(path.join(dir, 'missing', 'x.llmcp'), new Uint8Array(1)));
    expect([e.code, e.reason]).toEqual(['FORMAT_IO', 'create-temporary']);
    for (const p of ['', '/', '.', '..', `${dir}/..`]) {
      expect((await failure(writeFileAtomic(p, new Uint8Array(1)))).code).toBe('FORMAT_LAYOUT');
    }
    expect(existsSync(path.join(dir, 'missing'))).toBe(false);
  });

  it('writeFileAtomic replaces an existing file with the new content', async () => {
    const target = path.join(dir, 'job.json');
    writeFileSync(target, 'old content that is longer');
    await writeFileAtomic(`${target}`, new TextEncoder().encode('new'));
    expect(readFileSync(target, 'utf8')).toBe('new');
    expect(temporaries()).toEqual([]);
  });
});

describe('writeFileAtomic and saveCheckpointAtomic replace only a regular file', () => {
  const devices = canMakeDeviceNodes(tmpdir());
  /** What the destination is, to see that it was left alone. */
  const describeEntry = (p: string): string => {
    const st = lstatSync(p);
    return st.isSymbolicLink() ? `link → ${readlinkSync(p)}` : `${st.mode.toString(8)} ${st.isFile() ? readFileSync(p, 'hex') : ''}`;
  };
  const refuses = async (kind: SpecialFileKind): Promise<void> => {
    const target = makeSpecialFile(path.join(dir, 'out'), kind);
    const before = describeEntry(target);
    const before2 = readdirSync(dir).sort();
    for (const write of [() => writeFileAtomic(target, new Uint8Array([1, 2, 3])), () => saveCheckpointAtomic(target, NEXT)]) {
      const e = await failure(write());
      expect([e.code, e.reason]).toEqual(['FORMAT_IO', 'not-a-regular-file']);
      expect(e.message).toContain(target);
      expect(describeEntry(target)).toBe(before);
      expect(readdirSync(dir).sort()).toEqual(before2);
    }
  };
  it.each(SPECIAL_FILE_KINDS.filter((k) => !k.includes('device')))('refuses a destination that is %s, before anything is created, and leaves it as it was', refuses);
  // Device nodes need CAP_MKNOD (root in most containers); made in the scratch folder, never /dev.
  it.skipIf(!devices).each(SPECIAL_FILE_KINDS.filter((k) => k.includes('device')))('refuses a destination that is %s and leaves the node in place', refuses);

  it('refuses a destination swapped for a FIFO while the content was written, at once (never opened, never blocks), and removes its temporary file', async () => {
    const target = path.join(dir, 'model.safetensors');
    writeFileSync(target, 'old');
    const swapping: AtomicFileSystem = {
      ...nodeFileSystem,
      async open(p, flags) {
        const h = await nodeFileSystem.open(p, flags);
        if (flags !== 'wx') return h;
        // After the content is written and closed, the destination becomes a FIFO: the old writer opened it for reading here and blocked for ever.
        return { ...h, close: async () => {
          await h.close();
          unlinkSync(target);
          makeSpecialFile(target, 'fifo');
        } };
      },
    };
    const e = await failure(writeFileAtomic(target, new Uint8Array([1]), { fileSystem: swapping }));
    expect([e.code, e.reason, e.found]).toEqual(['FORMAT_IO', 'not-a-regular-file', 'fifo']);
    expect(lstatSync(target).isFIFO()).toBe(true);
    expect(temporaries()).toEqual([]);
  });

  it('replaces a symbolic link to a regular file or to nothing by a regular file, leaving the link target as it was', async () => {
    const other = path.join(dir, 'elsewhere.json');
    writeFileSync(other, 'keep');
    for (const [name, to] of [['to-file', other], ['dangling', path.join(dir, 'nothing')]] as const) {
      const link = path.join(dir, name);
      symlinkSync(to, link);
      await writeFileAtomic(link, new TextEncoder().encode('new'));
      expect(lstatSync(link).isFile()).toBe(true);
      expect(readFileSync(link, 'utf8')).toBe('new');
    }
    expect(readFileSync(other, 'utf8')).toBe('keep');
    expect(temporaries()).toEqual([]);
  });
});
