import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { checkChangesets } from './check-changesets.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

let scratch: string | undefined;
afterEach(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  scratch = undefined;
});

function repo(): { dir: string; commit: (files: Record<string, string>, message: string) => string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'llmcp-changesets-'));
  scratch = dir;
  const git = (...args: string[]): string => execFileSync('git', args, { cwd: dir, encoding: 'utf8' }).trim();
  git('init', '-q');
  git('config', 'user.email', 't@example.com');
  git('config', 'user.name', 'test');
  const commit = (files: Record<string, string>, message: string): string => {
    for (const [rel, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
      writeFileSync(path.join(dir, rel), text);
    }
    git('add', '-A');
    git('commit', '-q', '-m', message);
    return git('rev-parse', 'HEAD');
  };
  return { dir, commit };
}

describe('every package change carries a changeset', () => {
  it('holds for this repository since the recorded baseline', () => {
    expect(checkChangesets(root)).toEqual([]);
  });

  it('flags a commit that changes a package without one, accepts a named or an empty changeset, ignores tests and private packages', () => {
    const { dir, commit } = repo();
    const base = commit(
      {
        'packages/a/package.json': JSON.stringify({ name: '@x/a', files: ['dist', 'fixtures'] }),
        'packages/b/package.json': JSON.stringify({ name: '@x/b' }),
        'packages/p/package.json': JSON.stringify({ name: '@x/p', private: true }),
      },
      'base',
    );
    commit({ 'packages/a/src/index.ts': 'export const a = 1;\n' }, 'a without changeset');
    commit({ 'packages/a/src/index.ts': 'export const a = 2;\n', '.changeset/a.md': '---\n"@x/a": minor\n---\n\nA is 2.\n' }, 'a with changeset');
    commit({ 'packages/a/src/a.test.ts': 'test\n', 'packages/p/src/x.ts': 'x\n', 'packages/a/README.md': 'docs\n' }, 'tests, private, docs');
    commit({ 'packages/b/src/b.ts': 'b\n', '.changeset/refactor.md': '---\n---\n\nNo user-visible change.\n' }, 'b refactor, empty changeset');
    commit({ 'packages/a/fixtures/g.bin': 'g', 'packages/b/src/b.ts': 'b2\n', '.changeset/b.md': '---\n"@x/b": patch\n---\n\nB.\n' }, 'a fixture and b, only b named');
    expect(checkChangesets(dir, base)).toEqual([
      { commit: expect.any(String), subject: 'a without changeset', packages: ['@x/a'] },
      { commit: expect.any(String), subject: 'a fixture and b, only b named', packages: ['@x/a'] },
    ]);
  });
});
