/**
 * A temporary directory tree for one test of the repository checks (layers,
 * citations, import cycles, the prepack guard): the files given, by path
 * relative to the tree's root, removed when the test finishes.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { onTestFinished } from 'vitest';

/**
 * Writes `files` under a fresh temporary directory (call it inside a test).
 * @param prefix - the directory name's prefix (e.g. `llmcp-layers-`).
 * @param files - file contents by relative path.
 * @returns the directory.
 */
export function scratchWorkspace(prefix: string, files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  for (const [rel, text] of Object.entries(files)) {
    const full = path.join(dir, rel);
    mkdirSync(path.dirname(full), { recursive: true });
    writeFileSync(full, text);
  }
  return dir;
}
