import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { goldenBytes } from '../../test/fixtures/golden-6330.ts';
import { buildFile, fixChecksum, openFile } from '../../test/helpers/raw-file.ts';
import { randomState } from '../../test/helpers/random-state.ts';
import { decodeCheckpoint } from '../decode.ts';
import { encodeCheckpoint } from '../encode.ts';
import { isFormatError } from '../errors.ts';
import { loadCheckpoint } from './load.ts';
import { saveCheckpointAtomic } from './save.ts';

const GOLDEN = goldenBytes();
const dir = mkdtempSync(path.join(tmpdir(), 'llmcp-load-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

function fileWith(bytes: Uint8Array): string {
  const p = path.join(dir, `f${n++}.llmcp`);
  writeFileSync(p, bytes);
  return p;
}

async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    return isFormatError(e) ? `${e.code}/${e.reason}` : `non-FormatError ${String(e)}`;
  }
}

function decodeOutcome(bytes: Uint8Array): string {
  try {
    decodeCheckpoint(bytes);
    return 'ok';
  } catch (e) {
    return isFormatError(e) ? `${e.code}/${e.reason}` : `non-FormatError ${String(e)}`;
  }
}

describe('loadCheckpoint', () => {
  it('loads the golden file exactly like decodeCheckpoint', async () => {
    const loaded = await loadCheckpoint(fileWith(GOLDEN));
    const decoded = decodeCheckpoint(GOLDEN);
    expect(loaded.layout).toEqual(decoded.layout);
    expect(loaded.parameters.map((p) => Array.from(p.data))).toEqual(decoded.parameters.map((p) => Array.from(p.data)));
    expect(loaded.optimizer.moments.map((m) => [m.name, Array.from(m.first), Array.from(m.second)])).toEqual(decoded.optimizer.moments.map((m) => [m.name, Array.from(m.first), Array.from(m.second)]));
    expect(encodeCheckpoint(loaded)).toEqual(GOLDEN);
  });

  it('loads a multi-megabyte checkpoint spanning many staging buffers bit for bit', async () => {
    const base = randomState(11n, { kind: 'bpe', step: 5n, groups: true, layers: 1 });
    const d = 64;
    const big = {
      ...base,
      decoder: { ...base.decoder, modelWidth: d, heads: 2, feedForwardWidth: 2048 },
    };
    const { expectedParameterShapes } = await import('../parameter-layout.ts');
    const shapes = expectedParameterShapes(big.decoder);
    const fill = (k: number, len: number): Float64Array => Float64Array.from({ length: len }, (_, i) => Math.sin(k * 1000 + i));
    const parameters = shapes.map((s, k) => ({ name: s.name, shape: [...s.shape], data: fill(k, s.shape.reduce((a, b) => a * b, 1)) }));
    const state = { ...big, parameters, optimizer: { ...big.optimizer, moments: parameters.map((p) => ({ name: p.name, shape: p.shape, first: p.data.map((x) => x / 3), second: p.data.map((x) => x * x)})) } };
    const target = path.join(dir, 'big.llmcp');
    const saved = await saveCheckpointAtomic(target, state);
    expect(saved.byteLength).toBeGreaterThan(9 * 1024 * 1024);
    const loaded = await loadCheckpoint(target);
    expect(loaded.layout.checksum).toBe(saved.checksum);
    const bytes = encodeCheckpoint(state);
    expect(Buffer.from(encodeCheckpoint(loaded)).equals(Buffer.from(bytes))).toBe(true);
  });

  it('reports the same code and reason as decodeCheckpoint for 300 mutated files', async () => {
    const fields = [14, 22, 38, 40, 42, 58, 59, 67, 83, 131, 171, 172, 504, 512, 528, 536, 540, 541, 545, 546, 547, 555, 563, 740, 760, 2868, 2869, 2874, 6000, 6329];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...fields), fc.nat({ max: 255 }), fc.boolean(), fc.nat({ max: 80 }), async (offset, value, fix, cut) => {
        let bytes: Uint8Array = GOLDEN.slice();
        bytes[offset] = value;
        if (cut > 70) bytes = bytes.slice(0, bytes.length - (cut - 70) * 100);
        if (fix) bytes = fixChecksum(bytes);
        expect(await outcome(loadCheckpoint(fileWith(bytes)))).toBe(decodeOutcome(bytes));
      }),
      { numRuns: 300, seed: 77 },
    );
  });

  it('finds non-canonical optimizer order from the header alone', async () => {
    const file = openFile(GOLDEN);
    const moments = file.descriptors.splice(16);
    for (const name of file.descriptors.slice(5, 16).map((d) => d.name)) file.descriptors.push(...moments.filter((d) => d.name === name));
    expect(await outcome(loadCheckpoint(fileWith(buildFile(file))))).toBe('FORMAT_NON_CANONICAL/re-encoding-differs');
  });

  it('reports a checksum mismatch before a header problem found while streaming', async () => {
    const bytes = GOLDEN.slice();
    bytes[171] = 7; // groups flag: a parse error, but the checksum no longer matches
    expect(await outcome(loadCheckpoint(fileWith(bytes)))).toBe('FORMAT_CHECKSUM_MISMATCH/checksum');
    expect(await outcome(loadCheckpoint(fileWith(fixChecksum(bytes))))).toBe('FORMAT_NON_CANONICAL/groups-flag');
  });

  it('fails with Io for a missing file or a directory', async () => {
    expect(await outcome(loadCheckpoint(path.join(dir, 'nope.llmcp')))).toBe('FORMAT_IO/read');
    expect(await outcome(loadCheckpoint(dir))).toMatch(/^FORMAT_IO\/read$/);
  });
});
