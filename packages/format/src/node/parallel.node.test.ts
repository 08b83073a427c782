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
import type { DescriptorLayout } from '../layout.ts';
import { CHECKSUM_OFFSET, FIXED_HEADER_BYTES } from '../tags.ts';
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
  return sineState(64, 2048);
}

/** A one-layer BPE state with sine-filled tensors of the given widths (every value finite, second moments non-negative). */
function sineState(modelWidth: number, feedForwardWidth: number): CheckpointState {
  const base = randomState(11n, { kind: 'bpe', step: 5n, groups: true, layers: 1 });
  const decoder = { ...base.decoder, modelWidth, heads: 2, feedForwardWidth };
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

/** load.ts reads records of this many bytes and more straight into their buffers, in pieces of at most {@link LOAD_READ_BYTES}. */
const LOAD_DIRECT_MIN_BYTES = 64 << 10;
/** load.ts reads at most this many bytes at once; smaller records are grouped up to this size. */
const LOAD_READ_BYTES = 4 << 20;

/** Where loadCheckpoint's reads start, hence its hash chunks (the header is the first chunk): load.ts's planSegments, restated. */
function loadChunkStarts(descriptors: readonly DescriptorLayout[]): number[] {
  const starts: number[] = [];
  let grouped = -1; // bytes in the current group of small records, -1 for none
  for (const d of descriptors) {
    if (d.byteLength >= LOAD_DIRECT_MIN_BYTES) {
      grouped = -1;
      for (let at = 0; at < d.byteLength; at += LOAD_READ_BYTES) starts.push(d.offset + at);
    } else {
      if (grouped < 0 || grouped + d.byteLength > LOAD_READ_BYTES) {
        starts.push(d.offset);
        grouped = 0;
      }
      grouped += d.byteLength;
    }
  }
  return starts;
}

/** A damaged copy of a file and the error it must be refused with. */
interface Damage {
  readonly label: string;
  readonly bytes: Uint8Array;
  readonly code: string;
  readonly offset: number;
}

/**
 * Damage around every chunk boundary `b` of a load (the end of the fixed header, each read start, the end of the
 * file): a flipped byte at b-2, b-1, b, b+1 (checksum left stale: FORMAT_CHECKSUM_MISMATCH at the checksum field),
 * and in f64 records the element at b-16, b-8, b, b+8 replaced (checksum fixed): NaN at b-8 and b (the last element
 * before the boundary, the first after it), -Infinity at b-16 and b+8, and -1 at b-8 and b in second moments —
 * refused by the record's rule at that element's offset. With `ends`, only the first and the last `ends` boundaries.
 */
function boundaryDamage(bytes: Uint8Array, ends: number = Number.POSITIVE_INFINITY): Damage[] {
  const descriptors = decodeCheckpoint(bytes).layout.descriptors;
  const all = [FIXED_HEADER_BYTES, ...loadChunkStarts(descriptors), bytes.length];
  const boundaries = all.filter((_, i) => i < ends || i >= all.length - ends);
  const out: Damage[] = [];
  for (const b of boundaries) {
    for (const at of [b - 2, b - 1, b, b + 1]) {
      if (at < CHECKSUM_OFFSET + 8 || at >= bytes.length) continue;
      const flipped = bytes.slice();
      flipped[at] = (flipped[at] as number) ^ 0x10;
      out.push({ label: `byte ${at} flipped (boundary ${b})`, bytes: flipped, code: 'FORMAT_CHECKSUM_MISMATCH', offset: CHECKSUM_OFFSET });
    }
    for (const at of [b - 16, b - 8, b, b + 8]) {
      const d = descriptors.find((r) => r.dtypeTag === 3 && r.offset <= at && at + 8 <= r.end);
      if (d === undefined || (at - d.offset) % 8 !== 0) continue;
      const code = d.roleTag === 3 ? 'FORMAT_INVALID_PARAMETER' : 'FORMAT_ADAMW_STATE';
      const adjacent = at === b - 8 || at === b;
      const values = [adjacent ? Number.NaN : Number.NEGATIVE_INFINITY, ...(adjacent && d.roleTag === 5 ? [-1] : [])];
      for (const value of values) out.push({ label: `${value} at ${at} in record ${d.index} (boundary ${b})`, bytes: withValueAt(bytes, at, value), code, offset: at });
    }
  }
  return out;
}

// Records of 64 KiB are read alone, the small records around them in groups (~13 read boundaries in files of 700–800 KB):
// widths 16 × 512 end the file with a group of small records (every boundary damaged), widths 32 × 256 (a 66 KB
// embedding) begin the payload with a 24-byte group and end it with a record read alone (the first and last 3 damaged).
for (const [modelWidth, feedForwardWidth, lastRead, ends] of [
  [16, 512, 'a group of small records', Number.POSITIVE_INFINITY],
  [32, 256, 'one record', 3],
] as const) {
  describe(`loadCheckpoint: corruption in the first chunk, on both sides of read boundaries and in the last chunk (the last read: ${lastRead})`, () => {
    const bytes = encodeCheckpoint(sineState(modelWidth, feedForwardWidth));
    const damages = boundaryDamage(bytes, ends);

    it('the generated damage covers direct and grouped reads, the header and the last chunk', () => {
      const descriptors = decodeCheckpoint(bytes).layout.descriptors;
      expect(loadChunkStarts(descriptors).length).toBeGreaterThan(10);
      expect(descriptors.filter((d) => d.byteLength >= LOAD_DIRECT_MIN_BYTES).length).toBeGreaterThan(5);
      expect(descriptors.filter((d) => d.byteLength < LOAD_DIRECT_MIN_BYTES).length).toBeGreaterThan(5);
      expect((descriptors.at(-1)?.byteLength ?? 0) >= LOAD_DIRECT_MIN_BYTES).toBe(lastRead === 'one record');
      expect(damages.some((d) => d.offset === bytes.length - 8)).toBe(true);
      expect(damages.some((d) => d.label.startsWith(`byte ${bytes.length - 1} `))).toBe(true);
      expect(damages.some((d) => d.label.startsWith(`byte ${FIXED_HEADER_BYTES} `))).toBe(true);
    });

    it('refuses each with the code and offset of decodeCheckpoint, hashed on the worker and in-thread', async () => {
      const file = path.join(dir, `boundaries-${n++}.llmcp`);
      for (const damage of damages) {
        const expected = inThread(damage.bytes);
        expect([expected.split('/')[0], expected.split('/')[2]], damage.label).toEqual([damage.code, String(damage.offset)]);
        writeFileSync(file, damage.bytes);
        for (const hashInWorker of [true, false]) expect(await loadOutcome(loadCheckpoint(file, { hashInWorker })), `${damage.label}, hashInWorker ${hashInWorker}`).toBe(expected);
      }
      writeFileSync(file, bytes);
      for (const hashInWorker of [true, false]) expect(await loadOutcome(loadCheckpoint(file, { hashInWorker }))).toMatch(/^ok /);
    });
  });
}

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
