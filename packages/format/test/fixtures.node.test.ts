import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { goldenBytes } from './fixtures/golden-6330.ts';
import golden from './fixtures/golden-6330.json';

describe('test fixtures', () => {
  it('golden-6330.ts holds exactly the bytes of golden-6330.llmcp (SHA-256 from golden-6330.json)', () => {
    const file = readFileSync(new URL('./fixtures/golden-6330.llmcp', import.meta.url));
    expect(Buffer.from(goldenBytes()).equals(file)).toBe(true);
    expect(createHash('sha256').update(file).digest('hex')).toBe(golden.sha256);
  });
});
