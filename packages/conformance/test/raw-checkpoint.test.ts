import { decodeCheckpoint, fnv1a64 } from '@llmcp/format';
import { describe, expect, it } from 'vitest';
import { loadFixture, parseRawCheckpoint, rawChecksum, serializeRawCheckpoint, summarizeCheckpoint, loadManifest, withF64, f64Bytes } from '../src/index.ts';

const golden = loadFixture('golden-6330.llmcp');

describe('parseRawCheckpoint / serializeRawCheckpoint', () => {
  it('round-trips the golden file byte for byte', () => {
    const again = serializeRawCheckpoint(parseRawCheckpoint(golden));
    expect(again.length).toBe(golden.length);
    expect(Buffer.from(again).equals(Buffer.from(golden))).toBe(true);
  });

  it('computes the spec checksum with the field zeroed (not the plain FNV of the file)', () => {
    expect(rawChecksum(golden)).toBe(0x2b8b6097eaed6a91n);
    expect(fnv1a64(golden)).toBe(0x08bdaa2e0466e840n);
  });

  it('recomputes offsets after an edit and honours overrides', () => {
    const raw = parseRawCheckpoint(golden);
    raw.records[0] = { ...(raw.records[0] as (typeof raw.records)[number]), bytes: Uint8Array.of(0x41, 0x42) , shape: [2n] };
    const bytes = serializeRawCheckpoint(raw);
    expect(bytes.length).toBe(golden.length + 1);
    const view = new DataView(bytes.buffer);
    expect(view.getBigUint64(22, true)).toBe(3462n);
    const overridden = serializeRawCheckpoint(raw, { checksum: 7n, descriptorCount: 1 });
    expect(new DataView(overridden.buffer).getBigUint64(30, true)).toBe(7n);
    expect(new DataView(overridden.buffer).getUint32(536, true)).toBe(1);
  });

  it('writes f64 bit patterns exactly, including -0', () => {
    const bytes = withF64(f64Bytes([1, 2]), 1, -0);
    expect(Array.from(bytes.subarray(8))).toEqual([0, 0, 0, 0, 0, 0, 0, 0x80]);
  });
});

describe('summarizeCheckpoint', () => {
  it('summarizes the decoded golden file exactly as the manifest (derived from golden-6330.json) expects', () => {
    expect(summarizeCheckpoint(decodeCheckpoint(golden))).toEqual(loadManifest().golden.expected);
  });
});
