import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { goldenBytes } from '../test/golden.ts';
import { buildFile, openFile } from '../test/helpers/raw-file.ts';
import { encodeCheckpoint } from './encode.ts';
import { inspectCheckpoint } from './inspect.ts';
import { prefixSpans } from './inspect-prefix.ts';
import { renderInspection } from './inspect-text.ts';
import { expectedParameterShapes } from './parameter-layout.ts';
import type { CheckpointState, DecoderConfig } from './types.ts';

const GOLDEN = goldenBytes();

/** A small valid BPE checkpoint at step 0 with the given merge pairs. */
function bpeCheckpoint(pairs: readonly (readonly [number, number])[]): Uint8Array {
  const decoder: DecoderConfig = { vocabularySize: 258 + pairs.length, modelWidth: 2, heads: 1, feedForwardWidth: 2, layers: 0, maxPositions: 4, ropeBase: 10000, rmsEpsilon: 1e-6 };
  const state: CheckpointState = {
    tokenizer: { kind: 'bpe', pairs },
    decoder,
    parameters: expectedParameterShapes(decoder).map((p) => ({ name: p.name, shape: [...p.shape], data: new Float64Array(p.shape.reduce((a, b) => a * b, 1)) })),
    optimizer: { config: { learningRate: 0.01, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 }, groups: null, step: 0n, beta1Power: 1, beta2Power: 1, moments: [] },
    selectedStep: 0n,
    samplingRngState: 7n,
  };
  return encodeCheckpoint(state);
}

describe('renderInspection', () => {
  const text = renderInspection(GOLDEN, { file: 'golden-6330.llmcp' });
  const lines = text.split('\n');

  it('opens with the title and the verdict and closes with the verdict again', () => {
    expect(lines[0]).toBe('golden-6330.llmcp: 6330 bytes, LLMCP35 v1 layout audit');
    expect(lines[1]).toBe('verdict: VALID (fnv1a64:2b8b6097eaed6a91)');
    expect(text.endsWith('\nverdict: VALID (fnv1a64:2b8b6097eaed6a91)\n')).toBe(true);
    expect(renderInspection(GOLDEN).split('\n')[0]).toBe('checkpoint: 6330 bytes, LLMCP35 v1 layout audit');
  });

  it('annotates the first 16 bytes and lists the header fields with raw bytes and exact values', () => {
    expect(text).toContain('\n  4c 4c 4d 43 50 33 35 00 01 00 04 03 02 01 35 0b\n');
    expect(text).toContain('\n  [0,8)    4c 4c 4d 43 50 33 35 00  magic: "LLMCP35\\x00" (ok)\n');
    expect(text).toMatch(/\n\s+0\s+8\s+magic\s+4c 4c 4d 43 50 33 35 00\s+LLMCP35\\x00\n/);
    expect(text).toContain('checksum: stored fnv1a64:2b8b6097eaed6a91, computed fnv1a64:2b8b6097eaed6a91 — match');
    expect(text).toMatch(/\n\s+512\s+8\s+beta1 power\s+0\.43046721000000016 \(bits 0x3fdb8cc6573cd2c7\)\n/);
    expect(text).toMatch(/sampling RNG state\s+11400714819323198520 \(0x9e3779b97f4a7c38\)\n/);
    expect(text).toContain('  sampling RNG: SplitMix64 state 0x9e3779b97f4a7c38\n');
    expect(text).toContain('  pieces: 0="0"  1="1"  2="2"  3="3"  4="4"\n');
  });

  it('prints every descriptor row with its half-open range and check, aligned in columns', () => {
    const rows = lines.filter((l) => /^\s+\d+\s{2}\S.*\[\d+,\d+\)/.test(l));
    expect(rows).toHaveLength(38);
    expect(rows[0]).toMatch(/^\s+0\s+literal-token\s+0\s+u8\s+\[1\]\s+\[2869,2870\)\s+1\s+ok$/);
    expect(new Set(rows.map((r) => r.indexOf('['))).size).toBe(1);
    expect(text).toContain('  records end at 6330; file length 6330 — ok\n');
  });

  it('marks up through the style hooks, computing column widths on the plain text', () => {
    const style = { ok: (t: string) => `<ok>${t}</ok>`, bad: (t: string) => `<bad>${t}</bad>`, dim: (t: string) => `<dim>${t}</dim>`, bold: (t: string) => `<b>${t}</b>` };
    const styled = renderInspection(GOLDEN, { file: 'golden-6330.llmcp', style });
    expect(styled.split('\n')[1]).toBe('verdict: <ok><b>VALID</b></ok> (fnv1a64:2b8b6097eaed6a91)');
    expect(styled).toContain('\n<b>descriptor table: 38 of 38 rows parsed</b>\n');
    expect(styled).toContain('<dim>offset</dim>');
    expect(styled).toContain('<ok>ok</ok>');
    expect(styled.replace(/<\/?(ok|bad|dim|b)>/g, '')).toBe(text);
    // A partial style leaves the other marks as plain text.
    expect(renderInspection(GOLDEN, { file: 'golden-6330.llmcp', style: { bold: style.bold } }).replace(/<\/?b>/g, '')).toBe(text);
  });

  it('uses the inspection it is given', () => {
    const cut = inspectCheckpoint(GOLDEN.subarray(0, 37));
    expect(renderInspection(GOLDEN, { inspection: cut }).split('\n')[1]).toMatch(/^verdict: INVALID FORMAT_TRUNCATED \(Truncated\/fixed-header\) at offset 0, fixed header: /);
  });

  it('marks the descriptor row where a damaged file breaks, with the failing code', () => {
    const file = openFile(GOLDEN);
    file.descriptors[1]!.offsetOverride = 2871n;
    const damaged = renderInspection(buildFile(file), { style: { bad: (t) => `<bad>${t}</bad>` } });
    expect(damaged).toMatch(/\[2871,2872\)\s+1\s+<bad>starts at 2871, previous ended at 2870<\/bad><bad> ◀ FORMAT_LAYOUT<\/bad>\n/);
    expect(damaged.split('\n')[1]).toMatch(/^verdict: <bad>INVALID<\/bad> FORMAT_LAYOUT /);
  });

  it('reports a file shorter than the fixed header', () => {
    const empty = renderInspection(new Uint8Array(0));
    expect(empty).toContain('\n  (empty file)\n');
    expect(empty).toContain('the file is shorter than the 38-byte fixed header (0 bytes)');
    expect(empty).toContain('  tokenizer: not reached');
    expect(renderInspection(GOLDEN.subarray(0, 12))).toContain('endian marker: u32 LE (cut short)');
  });

  it('spells BPE merges up to the token limit and counts the rest', () => {
    const bytes = bpeCheckpoint([[0x61, 0x62], [256, 0x63]]);
    const bpe = renderInspection(bytes);
    expect(bpe).toContain('  tokenizer: bpe (byte-bpe), declared vocabulary 260, 2 merges\n');
    expect(bpe).toContain('\n    merge 0: id 258 = "a" + "b" → "ab"   (training ids 97, 98)\n    merge 1: id 259 = "ab" + "c" → "abc"   (training ids 256, 99)\n');
    const one = renderInspection(bytes, { tokens: 1 });
    expect(one).not.toContain('merge 1:');
    expect(one).toContain('\n    … 1 more merges\n');
  });

  it('names a merge whose operand is not defined yet', () => {
    const file = openFile(bpeCheckpoint([[0x61, 0x62], [256, 0x63]]));
    new DataView(file.descriptors[0]!.bytes.buffer).setUint32(8, 300, true);
    const bad = renderInspection(buildFile(file));
    expect(bad).toContain('\n    merge 1: (300, 99) → unknown operand\n');
    expect(bad.split('\n')[1]).toMatch(/^verdict: INVALID FORMAT_/);
  });

  it('rejects a token limit that is not a non-negative integer', () => {
    expect(() => renderInspection(GOLDEN, { tokens: -1 })).toThrow(RangeError);
  });

  it('never throws on damaged bytes and always ends with the verdict', () => {
    fc.assert(
      fc.property(fc.nat({ max: GOLDEN.length }), fc.array(fc.tuple(fc.nat({ max: GOLDEN.length - 1 }), fc.integer({ min: 1, max: 255 })), { maxLength: 4 }), (cut, flips) => {
        const b = GOLDEN.slice(0, cut);
        for (const [at, x] of flips) if (at < b.length) b[at] = (b[at] as number) ^ x;
        const out = renderInspection(b);
        expect(out.trimEnd().split('\n').at(-1)).toBe(out.split('\n')[1]);
      }),
      { numRuns: 60 },
    );
  });
});

describe('prefixSpans', () => {
  it('splits the first 16 bytes of the golden file at field boundaries', () => {
    expect(prefixSpans(GOLDEN, inspectCheckpoint(GOLDEN))).toEqual([
      { start: 0, end: 8, field: 'magic', hex: '4c 4c 4d 43 50 33 35 00', meaning: '"LLMCP35\\x00" (ok)' },
      { start: 8, end: 10, field: 'format version', hex: '01 00', meaning: 'u16 LE = 1' },
      { start: 10, end: 14, field: 'endian marker', hex: '04 03 02 01', meaning: 'u32 LE = 0x01020304' },
      { start: 14, end: 16, field: 'header_bytes', hex: '35 0b', meaning: 'u64 LE, bytes 1–2 of 8 (header_bytes = 2869)' },
    ]);
  });

  it('says when the magic is wrong or a field is cut short', () => {
    const bad = GOLDEN.slice(0, 9);
    bad[0] = 0x58;
    const spans = prefixSpans(bad, inspectCheckpoint(bad));
    expect(spans.map((s) => s.meaning)).toEqual(['"XLMCP35\\x00", expected "LLMCP35\\x00"', 'u16 LE (cut short)']);
    expect(prefixSpans(GOLDEN.subarray(0, 3), inspectCheckpoint(GOLDEN.subarray(0, 3)))).toEqual([{ start: 0, end: 3, field: 'magic', hex: '4c 4c 4d', meaning: '"LLM" (cut short)' }]);
    expect(prefixSpans(new Uint8Array(0), inspectCheckpoint(new Uint8Array(0)))).toEqual([]);
  });
});
