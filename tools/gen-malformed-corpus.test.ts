import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildCorpus, FIXTURES, readGoldenInputs } from './gen-malformed-corpus.ts';

describe('gen-malformed-corpus', () => {
  const { bytes, json } = readGoldenInputs();
  const { manifest, files } = buildCorpus(bytes, json);

  it('reproduces the committed manifest exactly', () => {
    const committed = readFileSync(path.join(FIXTURES, 'manifest.json'), 'utf8');
    expect(`${JSON.stringify(manifest, null, 2)}\n`).toBe(committed);
  });

  it('reproduces every committed corpus file byte for byte', () => {
    for (const [file, content] of files) {
      const committed = new Uint8Array(readFileSync(path.join(FIXTURES, file)));
      expect(Buffer.from(committed).equals(Buffer.from(content)), file).toBe(true);
    }
  });

  it('is deterministic', () => {
    const again = buildCorpus(bytes, json);
    expect(JSON.stringify(again.manifest)).toBe(JSON.stringify(manifest));
  });
});
