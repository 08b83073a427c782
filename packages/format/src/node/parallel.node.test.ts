import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { goldenBytes } from '../../test/golden.ts';
import { fixChecksum } from '../../test/helpers/raw-file.ts';
import { randomState } from '../../test/helpers/random-state.ts';
import { decodeCheckpoint, type DecodeOptions } from '../decode.ts';
import { encodeCheckpoint } from '../encode.ts';
import { isFormatError } from '../errors.ts';
import { setParallelScanHasherFactory } from '../internal/parallel-hash.ts';
import { expectedParameterShapes } from '../parameter-layout.ts';
import type { CheckpointState } from '../types.ts';
import { loadCheckpoint } from './load.ts';
import { saveCheckpointAtomic } from './save.ts';
import { injectSyncWorkerFaultForTesting, startSyncWorkerHasher, tuneSyncWorkerForTesting } from './sync-hasher.ts';
import { injectWorkerFaultForTesting } from './worker-hasher.ts';

const GOLDEN = goldenBytes();
const dir = mkdtempSync(path.join(tmpdir(), 'llmcp-parallel-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

function fileWith(bytes: Uint8Array): string {
  const p = path.join(dir, `f${n++}.llmcp`);
  writeFileSync(p, bytes);
  return p;
}

function decodeOutcome(bytes: Uint8Array, options?: DecodeOptions): string {
  try {
    const d = decodeCheckpoint(bytes, options);
    return `ok ${d.layout.checksumLabel} ${Buffer.from(encodeCheckpoint(d)).equals(Buffer.from(bytes))}`;
  } catch (e) {
    return isFormatError(e) ? `${e.code}/${e.reason}/${e.offset ?? ''}/${e.recordName ?? ''}` : `non-FormatError ${String(e)}`;
  }
}

async function loadOutcome(p: Promise<{ layout: { checksumLabel: string } }>): Promise<string> {
  try {
    return `ok ${(await p).layout.checksumLabel}`;
  } catch (e) {
    return isFormatError(e) ? `${e.code}/${e.reason}/${e.offset ?? ''}/${e.recordName ?? ''}` : `non-FormatError ${String(e)}`;
  }
}

/** The decode outcome hashed in-thread (no parallel hasher installed). */
function inThread(bytes: Uint8Array, options?: DecodeOptions): string {
  setParallelScanHasherFactory(null);
  try {
    return decodeOutcome(bytes, options);
  } finally {
    setParallelScanHasherFactory(startSyncWorkerHasher);
  }
}

/** A state of about 10 MB: several f64 records longer than one 4 MiB ring slot. */
function bigState(): CheckpointState {
  const base = randomState(11n, { kind: 'bpe', step: 5n, groups: true, layers: 1 });
  const decoder = { ...base.decoder, modelWidth: 64, heads: 2, feedForwardWidth: 2048 };
  const fill = (k: number, len: number): Float64Array => Float64Array.from({ length: len }, (_, i) => Math.sin(k * 1000 + i));
  const parameters = expectedParameterShapes(decoder).map((s, k) => ({ name: s.name, shape: [...s.shape], data: fill(k, s.shape.reduce((a, b) => a * b, 1)) }));
  return { ...base, decoder, parameters, optimizer: { ...base.optimizer, moments: parameters.map((p) => ({ name: p.name, shape: p.shape, first: p.data.map((x) => x / 3), second: p.data.map((x) => x * x) })) } };
}

/** `bytes` with the f64 value at `at` (an element of the last record) replaced, checksum fixed. */
function withValueAt(bytes: Uint8Array, at: number, value: number): Uint8Array {
  const out = bytes.slice();
  new DataView(out.buffer).setFloat64(at, value, true);
  return fixChecksum(out);
}

describe('decodeCheckpoint with the synchronous hash worker (slots of 64 bytes: every record crosses slot boundaries)', () => {
  beforeAll(() => tuneSyncWorkerForTesting({ slotBytes: 64, minBytes: 0 }));
  afterAll(() => tuneSyncWorkerForTesting());
  afterEach(() => injectSyncWorkerFaultForTesting(null));

  it('decodes random states (copies and views) exactly like the in-thread hash', () => {
    for (const seed of [1n, 2n, 3n, 4n]) {
      const bytes = encodeCheckpoint(randomState(seed, { kind: seed % 2n === 0n ? 'bpe' : 'literal', step: seed, groups: true }));
      for (const tensors of ['copy', 'view'] as const) {
        const expected = inThread(bytes, { tensors });
        expect(expected.startsWith('ok ')).toBe(true);
        expect(decodeOutcome(bytes, { tensors })).toBe(expected);
      }
      const a = decodeCheckpoint(bytes);
      setParallelScanHasherFactory(null);
      const b = decodeCheckpoint(bytes);
      setParallelScanHasherFactory(startSyncWorkerHasher);
      expect(a).toEqual(b);
    }
  });

  it('reports the same code, reason and offset as the in-thread hash for 150 mutated files', () => {
    fc.assert(
      fc.property(fc.nat({ max: GOLDEN.length - 1 }), fc.nat({ max: 255 }), fc.boolean(), (offset, value, fix) => {
        let bytes: Uint8Array = GOLDEN.slice();
        bytes[offset] = value;
        if (fix) bytes = fixChecksum(bytes);
        expect(decodeOutcome(bytes)).toBe(inThread(bytes));
      }),
      { numRuns: 150, seed: 41 },
    );
  });

  it('refuses corruption in the last chunk: a flipped last byte, a NaN or a negative second moment in the last record', () => {
    const flipped = GOLDEN.slice();
    flipped[flipped.length - 1] = (flipped[flipped.length - 1] as number) ^ 1;
    expect(decodeOutcome(flipped)).toMatch(/^FORMAT_CHECKSUM_MISMATCH/);
    expect(decodeOutcome(flipped)).toBe(inThread(flipped));
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY, -1e-300]) {
      const bad = withValueAt(GOLDEN, GOLDEN.length - 8, value); // the last record is a second moment
      const expected = inThread(bad);
      expect(expected).toMatch(/^FORMAT_/);
      expect(decodeOutcome(bad)).toBe(expected);
      expect(decodeOutcome(bad, { tensors: 'view' })).toBe(inThread(bad, { tensors: 'view' }));
    }
  });

  for (const after of [0, 3, 40]) {
    it(`a worker that fails after ${after} chunks changes nothing: the decoder hashes in-thread`, () => {
      injectSyncWorkerFaultForTesting(after);
      expect(decodeOutcome(GOLDEN)).toBe(inThread(GOLDEN));
      const bad = withValueAt(GOLDEN, GOLDEN.length - 8, Number.NaN);
      injectSyncWorkerFaultForTesting(after);
      expect(decodeOutcome(bad)).toBe(inThread(bad));
      expect(decodeOutcome(GOLDEN)).toBe(inThread(GOLDEN)); // and the next decode gets a fresh worker
    });
  }
});

describe('loadCheckpoint with the hash worker', () => {
  const state = bigState();
  const bytes = encodeCheckpoint(state);
  afterEach(() => injectWorkerFaultForTesting(null));

  it('loads a 10 MB file (records across 4 MiB slots) bit for bit, hashInWorker true and false', async () => {
    expect(bytes.length).toBeGreaterThan(9e6);
    const target = fileWith(bytes);
    for (const hashInWorker of [true, false]) {
      const loaded = await loadCheckpoint(target, { hashInWorker });
      expect(Buffer.from(encodeCheckpoint(loaded)).equals(Buffer.from(bytes))).toBe(true);
    }
  });

  it('refuses corruption in the last chunk like decodeCheckpoint', async () => {
    const flipped = bytes.slice();
    flipped[flipped.length - 1] = (flipped[flipped.length - 1] as number) ^ 0x80;
    const nan = withValueAt(bytes, bytes.length - 8, Number.NaN);
    const negative = withValueAt(bytes, bytes.length - 16, -2);
    for (const damaged of [flipped, nan, negative]) {
      const expected = inThread(damaged);
      expect(expected).toMatch(/^FORMAT_/);
      const file = fileWith(damaged);
      for (const hashInWorker of [true, false]) expect(await loadOutcome(loadCheckpoint(file, { hashInWorker }))).toBe(expected);
    }
  });

  it('reports the same outcome as decodeCheckpoint for 60 mutated small files hashed on the worker', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: GOLDEN.length - 1 }), fc.nat({ max: 255 }), fc.boolean(), async (offset, value, fix) => {
        let damaged: Uint8Array = GOLDEN.slice();
        damaged[offset] = value;
        if (fix) damaged = fixChecksum(damaged);
        const expected = inThread(damaged);
        expect(await loadOutcome(loadCheckpoint(fileWith(damaged), { hashInWorker: true }))).toBe(expected.startsWith('ok ') ? expected.replace(/ (true|false)$/, '') : expected);
      }),
      { numRuns: 60, seed: 43 },
    );
  });

  for (const after of [0, 1, 2]) {
    it(`a worker that fails after ${after} chunks: the load re-hashes in-thread, the same result, every byte observed once`, async () => {
      const target = fileWith(bytes);
      injectWorkerFaultForTesting(after);
      const sha = createHash('sha256');
      const loaded = await loadCheckpoint(target, { hashInWorker: true, onFileBytes: (c) => sha.update(c) });
      expect(sha.digest('hex')).toBe(createHash('sha256').update(bytes).digest('hex'));
      expect(Buffer.from(encodeCheckpoint(loaded)).equals(Buffer.from(bytes))).toBe(true);
      injectWorkerFaultForTesting(after);
      const nan = withValueAt(bytes, bytes.length - 8, Number.NaN);
      expect(await loadOutcome(loadCheckpoint(fileWith(nan), { hashInWorker: true }))).toBe(inThread(nan));
    });
  }
});

describe('saveCheckpointAtomic with a failing hash worker', () => {
  const state = bigState();
  afterEach(() => injectWorkerFaultForTesting(null));

  for (const after of [0, 2]) {
    it(`a worker failing after ${after} chunks: the save hashes in-thread and writes exactly encodeCheckpoint`, async () => {
      const target = path.join(dir, `save-${n++}.llmcp`);
      injectWorkerFaultForTesting(after);
      const saved = await saveCheckpointAtomic(target, state);
      const bytes = encodeCheckpoint(state);
      expect(Buffer.from(readFileSync(target)).equals(Buffer.from(bytes))).toBe(true);
      expect(saved.checksum).toBe(decodeCheckpoint(bytes).layout.checksum);
    });
  }

  it('a NaN in the last record with a failing worker: the decoder error, the previous file kept, no temporary file', async () => {
    const sub = mkdtempSync(path.join(dir, 'nan-'));
    const target = path.join(sub, 'state.llmcp');
    const previous = encodeCheckpoint(state);
    writeFileSync(target, previous);
    const last = state.optimizer.moments.length - 1;
    const bad: CheckpointState = {
      ...state,
      optimizer: { ...state.optimizer, moments: state.optimizer.moments.map((m, i) => (i === last ? { ...m, second: Float64Array.from(m.second, (x, j) => (j === m.second.length - 1 ? Number.NaN : x)) } : m)) },
    };
    const expected = ((): unknown => {
      try {
        encodeCheckpoint(bad);
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(isFormatError(expected)).toBe(true);
    injectWorkerFaultForTesting(1);
    const e = await saveCheckpointAtomic(target, bad).catch((x: unknown) => x);
    expect(isFormatError(e) && [e.code, e.reason, e.recordName]).toEqual(isFormatError(expected) && [expected.code, expected.reason, expected.recordName]);
    expect(Buffer.from(readFileSync(target)).equals(Buffer.from(previous))).toBe(true);
    expect(readdirSync(sub)).toEqual(['state.llmcp']);
  });
});
