/**
 * One fixture home: every golden vector and the golden checkpoint exist once
 * in the repository (packages/conformance/fixtures), their SHA-256 sums hold,
 * and no other tracked file is a copy of one of them (a copy could drift).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXTURES_DIR, goldenCheckpoint, VECTORS_DIR, vectorBytes } from './fixtures.ts';

const root = path.resolve(FIXTURES_DIR, '..', '..', '..');
const manifest = JSON.parse(readFileSync(path.join(VECTORS_DIR, 'manifest.json'), 'utf8')) as { files: Record<string, { sha256: string; bytes: number }> };

describe('the fixture home', () => {
  it.each(Object.keys(manifest.files))('%s matches its recorded SHA-256', (name) => {
    expect(vectorBytes(name).length).toBe(manifest.files[name]?.bytes);
  });

  it('the golden checkpoint matches the conformance manifest', () => {
    expect(goldenCheckpoint().length).toBe(6330);
  });

  it('no tracked file outside the home is a copy of a fixture, and the bilingual corpus is shipped once', () => {
    const sums = new Map<string, string>();
    for (const [name, e] of Object.entries(manifest.files)) sums.set(e.sha256, path.join(VECTORS_DIR, name));
    const golden = createHash('sha256').update(goldenCheckpoint()).digest('hex');
    sums.set(golden, path.join(FIXTURES_DIR, 'golden-6330.llmcp'));
    const sizes = new Set([...Object.values(manifest.files).map((e) => e.bytes), 6330]);
    const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' }).split('\0').filter(Boolean);
    const copies: string[] = [];
    const corpora: string[] = [];
    for (const rel of tracked) {
      const full = path.join(root, rel);
      if (path.basename(rel) === 'tiny-bilingual-corpus.json') corpora.push(rel);
      let size: number;
      try {
        size = statSync(full).size;
      } catch {
        continue; // deleted in the work tree
      }
      if (!sizes.has(size)) continue;
      const home = sums.get(createHash('sha256').update(readFileSync(full)).digest('hex'));
      if (home !== undefined && !full.startsWith(FIXTURES_DIR + path.sep)) copies.push(`${rel} is a copy of ${path.relative(root, home)}`);
    }
    expect(copies).toEqual([]);
    expect(corpora).toEqual(['packages/data/corpora/tiny-bilingual/tiny-bilingual-corpus.json']);
  });
});
