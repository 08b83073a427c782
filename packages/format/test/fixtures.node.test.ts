import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { goldenCheckpoint, GOLDEN_PATH } from '../../../tools/fixtures.ts';
import { golden, goldenBytes } from './golden.ts';

describe('test fixtures', () => {
  it('the inlined golden bytes are exactly golden-6330.llmcp of the fixture home (its SHA-256 checked by the manifest)', () => {
    expect(Buffer.from(goldenBytes()).equals(readFileSync(GOLDEN_PATH))).toBe(true);
    expect(Buffer.from(goldenCheckpoint()).equals(Buffer.from(goldenBytes()))).toBe(true);
    expect(golden.size).toBe(6330);
  });
});
