import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { scratchWorkspace } from './scratch-workspace.ts';

const guard = path.join(path.dirname(fileURLToPath(import.meta.url)), 'prepack-guard.mjs');

function run(files: Record<string, string>): { status: number; stderr: string } {
  const scratch = scratchWorkspace('llmcp-prepack-', files);
  try {
    execFileSync(process.execPath, [guard], { cwd: scratch, stdio: 'pipe' });
    return { status: 0, stderr: '' };
  } catch (e) {
    const err = e as { status: number; stderr: Buffer };
    return { status: err.status, stderr: err.stderr.toString() };
  }
}

const manifest = JSON.stringify({
  name: '@x/p',
  exports: { '.': { '@llmcp/source': './src/index.ts', import: { types: './dist/index.d.ts', default: './dist/index.js' } } },
  bin: { p: './dist/bin.js' },
});

describe('prepack guard', () => {
  it('refuses to pack without dist, naming the missing files', () => {
    const r = run({ 'package.json': manifest, LICENSE: 'MIT', 'dist/index.js': '' });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('missing ./dist/index.d.ts, ./dist/bin.js');
  });
  it('refuses to pack without a LICENSE', () => {
    const r = run({ 'package.json': manifest, 'dist/index.js': '', 'dist/index.d.ts': '', 'dist/bin.js': '' });
    expect(r.stderr).toContain('missing LICENSE');
  });
  it('packs when every published entry exists', () => {
    expect(run({ 'package.json': manifest, LICENSE: 'MIT', 'dist/index.js': '', 'dist/index.d.ts': '', 'dist/bin.js': '' }).status).toBe(0);
  });
});
