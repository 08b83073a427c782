import { readFileSync } from 'node:fs';
import { decodeCheckpoint, type DecodedCheckpoint } from '@llmcp/format';
import { describe, expect, it } from 'vitest';
import { FIXTURE_DOCUMENTS, regenerateCh33Run, regenerateGoldenCheckpoint } from './regenerate.ts';

const golden = new Uint8Array(readFileSync(new URL('../fixtures/golden-6330.llmcp', import.meta.url)));
const hex = (x: number): string => {
  const v = new DataView(new ArrayBuffer(8));
  v.setFloat64(0, x);
  return v.getBigUint64(0).toString(16).padStart(16, '0');
};

/**
 * Names the first differing byte: the header, or the payload record and the
 * f64 element it falls in with both bit patterns.
 */
function firstDifference(actual: Uint8Array, expected: Uint8Array): string | null {
  const n = Math.min(actual.length, expected.length);
  let at = -1;
  for (let i = 0; i < n; i++) {
    if (actual[i] !== expected[i]) {
      at = i;
      break;
    }
  }
  if (at < 0) return actual.length === expected.length ? null : `lengths differ: ${actual.length} vs ${expected.length}`;
  const layout = (decodeCheckpoint(expected) as DecodedCheckpoint).layout;
  const d = layout.descriptors.find((x) => at >= x.offset && at < x.end);
  if (d === undefined) return `byte ${at} (header): expected ${expected[at]}, found ${actual[at]}`;
  if (d.dtype !== 'f64') return `byte ${at} in record ${d.name}: expected ${expected[at]}, found ${actual[at]}`;
  const index = Math.floor((at - d.offset) / 8);
  const read = (b: Uint8Array): string => hex(new DataView(b.buffer, b.byteOffset + d.offset + index * 8, 8).getFloat64(0, true));
  return `record ${d.name} (${d.role}) element ${index}: expected ${read(expected)}, found ${read(actual)}`;
}

describe('regenerateGoldenCheckpoint', () => {
  it('uses only the fixture definition (documents as code constants)', () => {
    expect(FIXTURE_DOCUMENTS.train.map((d) => d.tokens.length)).toEqual([12, 12]);
    expect(FIXTURE_DOCUMENTS.validation.map((d) => d.tokens.length)).toEqual([9, 9]);
  });

  it('reproduces the 6330 golden bytes (fnv1a64:2b8b6097eaed6a91) from seed 33 and eight updates', () => {
    const bytes = regenerateGoldenCheckpoint();
    expect(firstDifference(bytes, golden)).toBeNull();
    expect(bytes.length).toBe(6330);
    expect(decodeCheckpoint(bytes).layout.checksumLabel).toBe('fnv1a64:2b8b6097eaed6a91');
  });

  it('selects step 8 with the fixture losses along the way', () => {
    const run = regenerateCh33Run();
    expect(run.selectedStep).toBe(8);
    expect(run.checkpoints.map((c) => c.step)).toEqual([0, 2, 4, 6, 8]);
    // Decimal values from ../../../docs/spec/training.md §5/§7 (the bits are checked by the byte comparison above).
    expect(run.losses[0]).toBe(2.453998177776215);
    expect(run.checkpoints[4]!.validationLoss).toBe(1.5952972621720571);
  });
});
