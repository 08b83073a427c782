import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { decodeCheckpoint, encodeCheckpoint, type CheckpointState } from '@llmcp/format';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { checkpointFromAndreaBin, decodeAndreaBin, encodeAndreaBin } from '../src/andrea-bin.ts';
import { andreaImportConfigJson, parseAndreaImportConfig } from '../src/import-config.ts';
import { FIXTURES, GOLDEN, llmcp, tempDir } from './helpers.ts';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
const golden = decodeCheckpoint(new Uint8Array(readFileSync(GOLDEN)));
const N = 144;

function bits(x: number): bigint {
  const v = new DataView(new ArrayBuffer(8));
  v.setFloat64(0, x, true);
  return v.getBigUint64(0, true);
}

/** First element whose bit pattern differs from `want`, with both patterns. */
function firstMismatch(got: Float64Array, want: Float64Array): string | null {
  if (got.length !== want.length) return `length ${got.length} vs ${want.length}`;
  for (let i = 0; i < got.length; i++) {
    if (bits(got[i] as number) !== bits(want[i] as number)) return `[${i}] 0x${bits(got[i] as number).toString(16)} vs 0x${bits(want[i] as number).toString(16)}`;
  }
  return null;
}

const f32 = (a: Float64Array): Float64Array => Float64Array.from(a, Math.fround);

describe('llmcp export --to andrea-bin / import --from andrea-bin', () => {
  const bin = path.join(tmp.dir, 'step_000008.bin');
  const config = path.join(tmp.dir, 'golden.import.json');
  const restored = path.join(tmp.dir, 'restored.llmcp');

  it('writes [i32 step][i32 n][f32 w][f32 m][f32 v] with 8 + 12·n bytes, saying it is lossy', async () => {
    const r = await llmcp(['export', '--to', 'andrea-bin', GOLDEN, '-o', bin, '--config-out', config]);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe(`wrote ${bin}: ANDREA .bin, step 8, n_params 144, 1736 bytes = 8 + 12·144`);
    expect(r.stderr).toMatch(/^note: the \.bin stores f32: 432 of 432 values \(weights, m, v\) were rounded, max \|Δ\| [0-9.e-]+;/);
    const bytes = readFileSync(bin);
    expect(bytes.length).toBe(8 + 12 * N);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    expect(view.getInt32(0, true)).toBe(8);
    expect(view.getInt32(4, true)).toBe(N);
    // Weights in model order; m and v in model order too (not the file's sorted moment order).
    expect(view.getFloat32(8, true)).toBe(Math.fround(-0.44815663836203995));
    const embeddingM = golden.optimizer.moments.find((m) => m.name === 'token_embedding.weight');
    expect(view.getFloat32(8 + 4 * N, true)).toBe(Math.fround(embeddingM?.first[0] as number));
    expect(view.getFloat32(8 + 8 * N + 4 * 19, true)).toBe(Math.fround(embeddingM?.second[19] as number));
    expect(view.getFloat32(8 + 8 * N + 4 * 19, true)).toBe(Math.fround(3.251265271984172e-5));
  });

  it('round-trips: weights to f32 precision, m and v exactly at f32, step and powers restored', async () => {
    const r = await llmcp(['import', '--from', 'andrea-bin', bin, '--config', config, '-o', restored]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`wrote ${restored}: LLMCP35 v1, step 8, 11 parameter tensors (144 values from f32), 11 moment pairs, 6330 bytes\n`);
    const back = decodeCheckpoint(new Uint8Array(readFileSync(restored)));
    for (let i = 0; i < golden.parameters.length; i++) {
      const want = golden.parameters[i];
      const got = back.parameters[i];
      expect(got?.name).toBe(want?.name);
      expect(firstMismatch(got?.data as Float64Array, f32(want?.data as Float64Array)), want?.name).toBeNull();
    }
    for (const m of golden.optimizer.moments) {
      const got = back.optimizer.moments.find((x) => x.name === m.name);
      expect(firstMismatch(got?.first as Float64Array, f32(m.first)), `m ${m.name}`).toBeNull();
      expect(firstMismatch(got?.second as Float64Array, f32(m.second)), `v ${m.name}`).toBeNull();
    }
    expect(back.optimizer.step).toBe(8n);
    expect(back.selectedStep).toBe(8n);
    // The optimizer's powers come from repeated multiplication: the golden bits exactly.
    expect(bits(back.optimizer.beta1Power)).toBe(0x3fdb8cc6573cd2c7n);
    expect(bits(back.optimizer.beta2Power)).toBe(0x3fefbeb1630ff3efn);
    expect(back.tokenizer).toEqual(golden.tokenizer);
    expect(back.decoder).toEqual(golden.decoder);
    expect(back.optimizer.config).toEqual(golden.optimizer.config);
    expect(back.optimizer.groups).toEqual(golden.optimizer.groups);
    expect(back.samplingRngState).toBe(golden.samplingRngState);
  });

  it('a second export of the import gives the same .bin bytes (f32 values survive exactly)', async () => {
    const again = path.join(tmp.dir, 'again.bin');
    expect((await llmcp(['export', '--to', 'andrea-bin', restored, '-o', again])).code).toBe(0);
    expect(readFileSync(again).equals(readFileSync(bin))).toBe(true);
  });

  it('accepts a checkpoint as the config template', async () => {
    const out = path.join(tmp.dir, 'from-template.llmcp');
    expect((await llmcp(['import', '--from', 'andrea-bin', bin, '--config', GOLDEN, '-o', out])).code).toBe(0);
    expect(readFileSync(out).equals(readFileSync(restored))).toBe(true);
  });

  it('handles step 0: m and v written as zeros, no moments on import', () => {
    const step0 = decodeCheckpoint(new Uint8Array(readFileSync(path.join(FIXTURES, 'malformed/step-zero.llmcp'))));
    const { bytes } = encodeAndreaBin(step0);
    const decoded = decodeAndreaBin(bytes);
    expect(decoded.step).toBe(0);
    expect(decoded.m.every((x) => x === 0) && decoded.v.every((x) => x === 0)).toBe(true);
    const config = parseAndreaImportConfig(new Uint8Array(readFileSync(path.join(FIXTURES, 'malformed/step-zero.llmcp'))), 'step-zero.llmcp');
    const back = checkpointFromAndreaBin(decoded, config);
    expect(back.optimizer.moments).toEqual([]);
    expect(back.optimizer.beta1Power).toBe(1);
    // A step-0 .bin with a non-zero moment is refused.
    const tampered = bytes.slice();
    new DataView(tampered.buffer).setFloat32(8 + 4 * N + 4 * 3, 0.5, true);
    expect(() => checkpointFromAndreaBin(decodeAndreaBin(tampered), config)).toThrow(/step is 0 but moment value 3 is non-zero/);
  });

  it('restores the beta powers of repeated multiplication for any i32 step, stopping where they stop changing', () => {
    const golden8 = decodeCheckpoint(new Uint8Array(readFileSync(GOLDEN)));
    const config = parseAndreaImportConfig(encodeCheckpoint(golden8), 'golden');
    const bin = decodeAndreaBin(encodeAndreaBin(golden8).bytes);
    /** The optimizer's rule, one multiplication per step (up to `limit`). */
    const naive = (step: number, limit: number): [number, number] => {
      let p1 = 1;
      let p2 = 1;
      for (let t = 0; t < Math.min(step, limit); t++) {
        p1 *= config.adamw.beta1;
        p2 *= config.adamw.beta2;
      }
      return [p1, p2];
    };
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20_000 }), (step) => {
        const back = checkpointFromAndreaBin({ ...bin, step }, config);
        expect([back.optimizer.beta1Power, back.optimizer.beta2Power]).toEqual(naive(step, step));
      }),
      { numRuns: 50 },
    );
    // 0.999 reaches 5e-324, which it rounds back to itself: the powers stop changing there (the old loop went on 2^31 times).
    const settled = naive(2_000_000, 2_000_000);
    expect(settled[1] * config.adamw.beta2).toBe(settled[1]);
    const last = checkpointFromAndreaBin({ ...bin, step: 2 ** 31 - 1 }, config);
    expect([last.optimizer.beta1Power, last.optimizer.beta2Power]).toEqual(settled);
  });

  it('carries every u64 size of a 0-layer model exactly through the import config (digits in a string above 2^53 − 1)', () => {
    const g = decodeCheckpoint(new Uint8Array(readFileSync(GOLDEN)));
    const zero: CheckpointState = { ...g, decoder: { ...g.decoder, layers: 0 }, parameters: [g.parameters[0]!, g.parameters[g.parameters.length - 1]!], optimizer: { ...g.optimizer, groups: null, step: 0n, beta1Power: 1, beta2Power: 1, moments: [] }, selectedStep: 0n };
    const size = fc.oneof(fc.integer({ min: 1, max: 2 ** 40 }).map(BigInt), fc.bigInt({ min: BigInt(Number.MAX_SAFE_INTEGER) + 1n, max: (1n << 64n) - 1n }));
    fc.assert(
      fc.property(size, size, (f, p) => {
        const safe = (v: bigint): boolean => v <= BigInt(Number.MAX_SAFE_INTEGER);
        const exact = { ...(safe(f) ? {} : { feedForwardWidth: f }), ...(safe(p) ? {} : { maxPositions: p }) };
        const state: CheckpointState = { ...zero, decoder: { ...zero.decoder, feedForwardWidth: Number(f), maxPositions: Number(p), ...(Object.keys(exact).length === 0 ? {} : { exact }) } };
        const config = parseAndreaImportConfig(new TextEncoder().encode(andreaImportConfigJson(state)), 'x.json');
        expect(BigInt(config.decoder.exact?.feedForwardWidth ?? config.decoder.feedForwardWidth)).toBe(f);
        expect(BigInt(config.decoder.exact?.maxPositions ?? config.decoder.maxPositions)).toBe(p);
        expect(encodeCheckpoint(checkpointFromAndreaBin(decodeAndreaBin(encodeAndreaBin(state).bytes), config))).toEqual(encodeCheckpoint({ ...state, parameters: state.parameters.map((t) => ({ ...t, data: t.data.map(Math.fround) })) }));
      }),
      { numRuns: 60 },
    );
  });

  it('keeps −0 in the import config (bit form for f64 fields)', () => {
    const state: CheckpointState = { ...golden, decoder: { ...golden.decoder, rmsEpsilon: -0 } };
    const encoded = encodeCheckpoint(state);
    const config = parseAndreaImportConfig(encoded, 'x');
    expect(Object.is(config.decoder.rmsEpsilon, -0)).toBe(true);
  });
});

describe('malformed .bin files are refused with clear errors (exit 3)', () => {
  const good = encodeAndreaBin(golden).bytes;
  const write = (name: string, bytes: Uint8Array): string => {
    const file = path.join(tmp.dir, name);
    writeFileSync(file, bytes);
    return file;
  };
  const i32 = (bytes: Uint8Array, offset: number, value: number): Uint8Array => {
    const out = bytes.slice();
    new DataView(out.buffer).setInt32(offset, value, true);
    return out;
  };
  const cases: [string, Uint8Array, string][] = [
    ['empty', new Uint8Array(0), 'file is 0 bytes, shorter than the 8-byte header [i32 step][i32 n_params]'],
    ['seven-bytes', good.subarray(0, 7), 'file is 7 bytes, shorter than the 8-byte header [i32 step][i32 n_params]'],
    ['short', good.subarray(0, good.length - 1), 'file is 1735 bytes; n_params = 144 needs 8 + 12·144 = 1736 bytes (truncated by 1)'],
    ['trailing', Uint8Array.from([...good, 0, 0, 0]), 'file is 1739 bytes; n_params = 144 needs 8 + 12·144 = 1736 bytes (3 trailing bytes)'],
    ['n-plus-one', i32(good, 4, 145), 'file is 1736 bytes; n_params = 145 needs 8 + 12·145 = 1748 bytes (truncated by 12)'],
    ['n-zero', i32(good, 4, 0), 'n_params at offset 4 is 0; expected a count ≥ 1'],
    ['n-negative', i32(good, 4, -144), 'n_params at offset 4 is -144; expected a count ≥ 1'],
    ['step-negative', i32(good, 0, -1), 'step at offset 0 is -1; expected a step ≥ 0'],
  ];

  it.each(cases)('%s', async (name, bytes, message) => {
    const file = write(`${name}.bin`, bytes);
    const out = path.join(tmp.dir, `${name}.llmcp`);
    const r = await llmcp(['import', '--from', 'andrea-bin', file, '--config', GOLDEN, '-o', out]);
    expect(r.code).toBe(3);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `llmcp import: error: ${file}: ${message}\nhint: an ANDREA .bin is [i32 step][i32 n_params][f32 weights × n][f32 m × n][f32 v × n], exactly 8 + 12·n bytes\n`,
    );
    expect(() => readFileSync(out)).toThrow(/ENOENT/);
  });

  it('refuses a count that is consistent with the size but not with the config', async () => {
    // 8 + 12·143 bytes with n = 143: the sizes agree, the model has 144 values.
    const bytes = new Uint8Array(8 + 12 * 143);
    const v = new DataView(bytes.buffer);
    v.setInt32(0, 8, true);
    v.setInt32(4, 143, true);
    const file = write('n-143.bin', bytes);
    const r = await llmcp(['import', '--from', 'andrea-bin', file, '--config', GOLDEN, '-o', path.join(tmp.dir, 'n-143.llmcp')]);
    expect(r.code).toBe(3);
    expect(r.stderr).toBe("llmcp import: error: n_params is 143, but the config's decoder has 144 parameters\nhint: check that --config describes the model this .bin was saved from\n");
  });

  it('refuses values that break an LLMCP35 rule (negative second moment)', async () => {
    const bad = good.slice();
    new DataView(bad.buffer).setFloat32(8 + 8 * N, -1, true);
    const file = write('negative-v.bin', bad);
    const r = await llmcp(['import', '--from', 'andrea-bin', file, '--config', GOLDEN, '-o', path.join(tmp.dir, 'negative-v.llmcp')]);
    expect(r.code).toBe(3);
    expect(r.stderr.split('\n')[0]).toMatch(/^llmcp import: error: the imported state breaks an LLMCP35 rule: FORMAT_ADAMW_STATE: /);
  });

  it('refuses a config JSON with a wrong member, naming it', async () => {
    const json = JSON.parse(readFileSync(path.join(tmp.dir, 'golden.import.json'), 'utf8')) as { decoder: { heads: unknown } };
    json.decoder.heads = 'two';
    const cfg = path.join(tmp.dir, 'bad-config.json');
    writeFileSync(cfg, JSON.stringify(json));
    const r = await llmcp(['import', '--from', 'andrea-bin', write('ok.bin', good), '--config', cfg, '-o', path.join(tmp.dir, 'x.llmcp')]);
    expect(r.code).toBe(3);
    expect(r.stderr.split('\n')[0]).toMatch(/^llmcp import: error: config .*bad-config\.json: decoder\.heads: /);
  });
});
