import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { goldenBytes } from '../../test/golden.ts';
import { randomState } from '../../test/helpers/random-state.ts';
import { decodeCheckpoint } from '../decode.ts';
import { encodeCheckpoint } from '../encode.ts';
import { isFormatError } from '../errors.ts';
import { loadCheckpoint } from './load.ts';
import { saveCheckpointAtomic } from './save.ts';

let dir = '';
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'llmcp-file-bytes-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

describe('onFileBytes: the file bytes in order, without a second read', () => {
  for (const hashInWorker of [true, false]) {
    it(`saveCheckpointAtomic hands over exactly the saved bytes (hashInWorker: ${hashInWorker}), the golden file included`, async () => {
      for (const state of [decodeCheckpoint(goldenBytes()), randomState(7n)]) {
        const target = path.join(dir, 'state.llmcp');
        const chunks: Uint8Array[] = [];
        const sha = createHash('sha256');
        const saved = await saveCheckpointAtomic(target, state, { hashInWorker, onFileBytes: (c) => {
          chunks.push(c.slice());
          sha.update(c);
        } });
        const file = new Uint8Array(readFileSync(target));
        expect(concat(chunks)).toEqual(file);
        expect(file).toEqual(encodeCheckpoint(state));
        expect(sha.digest('hex')).toBe(createHash('sha256').update(file).digest('hex'));
        expect(saved.byteLength).toBe(file.length);
      }
    });
  }

  it('loadCheckpoint hands over exactly the bytes it validated, also for a file it refuses', async () => {
    const good = encodeCheckpoint(randomState(11n));
    const target = path.join(dir, 'state.llmcp');
    writeFileSync(target, good);
    const chunks: Uint8Array[] = [];
    await loadCheckpoint(target, { onFileBytes: (c) => chunks.push(c.slice()) });
    expect(concat(chunks)).toEqual(good);
    const bad = good.slice();
    bad[bad.length - 1] = (bad[bad.length - 1] as number) ^ 1;
    writeFileSync(target, bad);
    chunks.length = 0;
    const e = await loadCheckpoint(target, { onFileBytes: (c) => chunks.push(c.slice()) }).catch((x: unknown) => x);
    expect(isFormatError(e) && e.code).toBe('FORMAT_CHECKSUM_MISMATCH');
    expect(concat(chunks)).toEqual(bad);
  });

  it('a throwing observer fails the save and leaves no file behind', async () => {
    const target = path.join(dir, 'state.llmcp');
    const e = await saveCheckpointAtomic(target, randomState(3n), { onFileBytes: () => {
      throw new Error('observer failed');
    } }).catch((x: unknown) => x);
    expect(isFormatError(e) && e.code).toBe('FORMAT_IO');
    expect(readFileSync.bind(null, target)).toThrow();
  });
});

describe('value rules folded into the hash (in-thread save)', () => {
  const base = randomState(5n, { step: 2n });
  const withParameter = (value: number): typeof base => ({ ...base, parameters: base.parameters.map((p, i) => (i === 1 ? { ...p, data: Float64Array.from(p.data, (x, j) => (j === 3 ? value : x)) } : p)) });
  const withSecond = (value: number): typeof base => ({
    ...base,
    optimizer: { ...base.optimizer, moments: base.optimizer.moments.map((m, i) => (i === 0 ? { ...m, second: Float64Array.from(m.second, (x, j) => (j === 0 ? value : x)) } : m)) },
  });
  const cases: [string, typeof base, string][] = [
    ['a NaN parameter', withParameter(Number.NaN), 'FORMAT_INVALID_PARAMETER'],
    ['an infinite parameter', withParameter(-Infinity), 'FORMAT_INVALID_PARAMETER'],
    ['a negative second moment', withSecond(-1e-9), 'FORMAT_ADAMW_STATE'],
    ['a NaN parameter and a step mismatch (the value comes first)', { ...withParameter(Number.NaN), selectedStep: 9n }, 'FORMAT_INVALID_PARAMETER'],
  ];
  for (const [what, state, expected] of cases) {
    it(`refuses ${what} like encodeCheckpoint, keeps the previous file and leaves no temporary file`, async () => {
      const target = path.join(dir, 'state.llmcp');
      const previous = encodeCheckpoint(base);
      writeFileSync(target, previous);
      const encodeError = ((): unknown => {
        try {
          encodeCheckpoint(state);
        } catch (e) {
          return e;
        }
        return null;
      })();
      expect(isFormatError(encodeError) && encodeError.code).toBe(expected);
      for (const hashInWorker of [false, true]) {
        const e = await saveCheckpointAtomic(target, state, { hashInWorker }).catch((x: unknown) => x);
        expect(isFormatError(e) && [e.code, e.reason, e.offset]).toEqual(isFormatError(encodeError) && [encodeError.code, encodeError.reason, encodeError.offset]);
        expect(new Uint8Array(readFileSync(target))).toEqual(previous);
        expect(readdirSync(dir)).toEqual(['state.llmcp']);
      }
    });
  }

  it('saves negative parameters, first moments and -0 second moments (only flagged, then searched)', async () => {
    const target = path.join(dir, 'state.llmcp');
    const state = withSecond(-0);
    await saveCheckpointAtomic(target, state, { hashInWorker: false });
    expect(new Uint8Array(readFileSync(target))).toEqual(encodeCheckpoint(state));
  });
});
