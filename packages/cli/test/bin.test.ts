import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { GOLDEN, PACKAGE_DIR, REPO_ROOT } from './helpers.ts';

/** Runs the real binary from sources (no build needed), as a child process. */
function bin(args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--conditions=@llmcp/source', '--import', 'tsx', path.join(PACKAGE_DIR, 'src/bin.ts'), ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', ...env },
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('the llmcp binary (child process)', () => {
  it('inspects the golden file and exits 0', () => {
    const r = bin(['inspect', GOLDEN]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('verdict: VALID (fnv1a64:2b8b6097eaed6a91)');
    expect(r.stdout).toContain('[6170,6330)');
  });

  it('exits 2 on an unknown flag with one line and a hint, no stack trace', () => {
    const r = bin(['verify', GOLDEN, '--frobnicate']);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe("llmcp verify: error: unknown option '--frobnicate'\nhint: run 'llmcp verify --help' for usage and examples\n");
  });

  it('exits 3 on a missing file, no stack trace', () => {
    const r = bin(['verify', 'no/such/file.llmcp']);
    expect(r.status).toBe(3);
    expect(r.stderr).toBe(`llmcp verify: error: checkpoint or run directory not found: no/such/file.llmcp\nhint: check the path (relative paths start from the current directory)\n`);
  });

  it('colours only when forced, never with NO_COLOR', () => {
    expect(bin(['verify', GOLDEN], { FORCE_COLOR: '1' }).stdout).toContain('\u001b[32mok\u001b[39m');
    expect(bin(['verify', GOLDEN], { FORCE_COLOR: '1', NO_COLOR: '1' }).stdout).not.toContain('\u001b[');
  });

  const built = path.join(PACKAGE_DIR, 'dist/bin.js');
  it.runIf(process.env.LLMCP_BUILT === '1' && existsSync(built))('the built dist/bin.js runs', () => {
    const r = spawnSync(process.execPath, [built, 'verify', GOLDEN, '--json'], { cwd: REPO_ROOT, encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, checksum: 'fnv1a64:2b8b6097eaed6a91' });
  });
});
