import { constants as bufferConstants } from 'node:buffer';
import { spawnSync } from 'node:child_process';
import { closeSync, ftruncateSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { goldenBytes } from '../../test/golden.ts';
import { buildFile, fixChecksum, openFile } from '../../test/helpers/raw-file.ts';
import { randomState } from '../../test/helpers/random-state.ts';
import { decodeCheckpoint } from '../decode.ts';
import { encodeCheckpoint } from '../encode.ts';
import { isFormatError } from '../errors.ts';
import { Fnv1a64 } from '../fnv1a64.ts';
import { MAX_HEADER_BYTES } from '../tags.ts';
import { loadCheckpoint } from './load.ts';
import { saveCheckpointAtomic } from './save.ts';

const GOLDEN = goldenBytes();
const here = path.dirname(fileURLToPath(import.meta.url));
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

  it('loads and saves u64 max_positions / feed_forward_width (SPEC §15.2) exactly like decodeCheckpoint', async () => {
    const u64Max = (1n << 64n) - 1n;
    for (const [layers, feedForwardWidth, maxPositions] of [[0n, u64Max, 1n << 63n], [0n, 4n, (1n << 53n) + 1n], [1n, 4n, ((1n << 63n) - 1n) / 8n]] as const) {
      const file = openFile(GOLDEN);
      file.decoder = { ...file.decoder, layers, feedForwardWidth, maxPositions };
      if (layers === 0n) {
        file.descriptors = [...file.descriptors.slice(0, 6), file.descriptors[15]!];
        file.modelParameterCount = 2;
        file.optimizerStateCount = 0;
        file.optimizerStep = 0n;
        file.selectedStep = 0n;
        file.beta1Power = 1;
        file.beta2Power = 1;
      }
      const bytes = buildFile(file);
      const loaded = await loadCheckpoint(fileWith(bytes));
      expect(loaded.decoder).toEqual(decodeCheckpoint(bytes).decoder);
      const target = path.join(dir, `u64-${n++}.llmcp`);
      await saveCheckpointAtomic(target, loaded);
      expect(new Uint8Array(readFileSync(target))).toEqual(bytes);
    }
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
    expect(await outcome(loadCheckpoint(path.join(dir, 'nope.llmcp')))).toBe('FORMAT_IO/not-found');
    expect(await outcome(loadCheckpoint(dir))).toBe('FORMAT_IO/not-a-regular-file');
  });
});

const FNV_PRIME = 0x100000001b3n;
const U64 = (1n << 64n) - 1n;

/**
 * A sparse file of `size` bytes: the golden file's first 4 KiB with `header_bytes` set (and
 * `payload_bytes` = size − header_bytes), then zeros (holes, no disk). The stored checksum is
 * correct: hashing n zero bytes multiplies the FNV-1a state by prime^n.
 */
function sparseFile(headerBytes: number, size: number): string {
  const head = GOLDEN.slice(0, 4096);
  const view = new DataView(head.buffer);
  view.setBigUint64(14, BigInt(headerBytes), true);
  view.setBigUint64(22, BigInt(size - headerBytes), true);
  view.setBigUint64(30, 0n, true);
  let h = new Fnv1a64().update(head).digest();
  for (let zeros = BigInt(size - head.length), f = FNV_PRIME; zeros > 0n; zeros >>= 1n, f = (f * f) & U64) if (zeros & 1n) h = (h * f) & U64;
  view.setBigUint64(30, h, true);
  const p = path.join(dir, `sparse${n++}.llmcp`);
  const fd = openSync(p, 'w');
  try {
    writeSync(fd, head);
    ftruncateSync(fd, size);
  } finally {
    closeSync(fd);
  }
  return p;
}

/** Loads `file` in a child process (a native abort must not take the test runner down) and returns what it threw. */
function loadInChild(file: string): Record<string, unknown> {
  const script = `import { loadCheckpoint } from ${JSON.stringify(path.join(here, 'load.ts'))};
try {
  await loadCheckpoint(${JSON.stringify(file)});
  process.stdout.write(JSON.stringify({ loaded: true }));
} catch (e) {
  process.stdout.write(JSON.stringify({ name: e?.name, code: e?.code, reason: e?.reason, field: e?.field, offset: e?.offset, message: String(e?.message) }));
}
`;
  const child = path.join(dir, `child${n++}.mts`);
  writeFileSync(child, script);
  const r = spawnSync(process.execPath, ['--import', 'tsx', child], { cwd: path.join(here, '..', '..'), encoding: 'utf8', timeout: 30_000 });
  expect({ status: r.status, signal: r.signal, stderr: r.stderr.slice(0, 400) }).toEqual({ status: 0, signal: null, stderr: '' });
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

describe('loadCheckpoint with a huge declared header', () => {
  it.each([
    ['2^31', 2 ** 31],
    ['2^32', 2 ** 32],
    ['5 GiB', 5 * 2 ** 30],
  ])('refuses header_bytes %s in a sparse file with FORMAT_LIMIT_EXCEEDED naming header_bytes, without aborting', (_, headerBytes) => {
    const file = sparseFile(headerBytes, headerBytes + 4096);
    expect(loadInChild(file)).toMatchObject({ name: 'FormatError', code: 'FORMAT_LIMIT_EXCEEDED', reason: 'header-too-large', field: 'header_bytes', offset: 14 });
  });

  // Where the engine refuses the length outright (Node 20: typed arrays up to 2^32 bytes), so the
  // case needs no memory; an engine that would try to allocate 1 TiB is not asked to.
  it.runIf(bufferConstants.MAX_LENGTH < 2 ** 40)('reports a record the engine cannot allocate as FORMAT_LIMIT_EXCEEDED naming the descriptor and offset', () => {
    const file = openFile(GOLDEN);
    const huge = 2 ** 40;
    const first = file.descriptors[0]!;
    const grow = huge - first.bytes.length;
    first.shape = [BigInt(huge)];
    first.byteLengthOverride = BigInt(huge);
    const built = buildFile(file, { checksum: 'keep-zero' });
    const headerBytes = Number(new DataView(built.buffer).getBigUint64(14, true));
    // Rewrite the header with every later record moved past the 1 TiB one, then leave holes.
    let offset = BigInt(headerBytes + huge);
    for (const d of file.descriptors.slice(1)) {
      d.offsetOverride = offset;
      offset += BigInt(d.bytes.length);
    }
    const header = buildFile(file, { checksum: 'keep-zero' }).slice(0, headerBytes);
    const size = built.length + grow;
    new DataView(header.buffer).setBigUint64(22, BigInt(size - headerBytes), true);
    const p = path.join(dir, `record${n++}.llmcp`);
    const fd = openSync(p, 'w');
    try {
      writeSync(fd, header);
      ftruncateSync(fd, size);
    } finally {
      closeSync(fd);
    }
    expect(loadInChild(p)).toMatchObject({ name: 'FormatError', code: 'FORMAT_LIMIT_EXCEEDED', reason: 'allocation', field: 'descriptor[0].byte_len', offset: headerBytes });
  });

  it('refuses one byte over MAX_HEADER_BYTES exactly like decodeCheckpoint, and reads a header at the limit', async () => {
    const over = sparseFile(MAX_HEADER_BYTES + 1, MAX_HEADER_BYTES + 4096);
    expect(await outcome(loadCheckpoint(over))).toBe('FORMAT_LIMIT_EXCEEDED/header-too-large');
    expect(decodeOutcome(new Uint8Array(readFileSync(over)))).toBe('FORMAT_LIMIT_EXCEEDED/header-too-large');
    // At the limit the header is read and parsed: the golden descriptors end long before header_bytes.
    const at = sparseFile(MAX_HEADER_BYTES, MAX_HEADER_BYTES + 4096);
    expect(await outcome(loadCheckpoint(at))).toBe('FORMAT_NON_CANONICAL/unparsed-header-bytes');
    expect(decodeOutcome(new Uint8Array(readFileSync(at)))).toBe('FORMAT_NON_CANONICAL/unparsed-header-bytes');
  });
});
