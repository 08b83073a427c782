import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GOLDEN, llmcp, PACKAGE_DIR, REPO_ROOT, tempDir } from './helpers.ts';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
const run = path.join(tmp.dir, 'run');
beforeAll(async () => {
  expect((await llmcp(['train', run, '--preset', 'ch33', '--plain'])).code).toBe(0);
});

/** The real binary as a child, killed after `timeoutMs` (a hang must fail the test, not the worker). */
function bin(args: readonly string[], timeoutMs = 20_000): { status: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--conditions=@llmcp/source', '--import', 'tsx', path.join(PACKAGE_DIR, 'src/bin.ts'), ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', NO_COLOR: '1' },
    timeout: timeoutMs,
  });
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

describe('path arguments that are not valid UTF-8', () => {
  // A real directory whose name holds the byte 0xff; Node decodes that argv byte as U+FFFD.
  const rawName = Buffer.concat([Buffer.from(`${tmp.dir}/bad-`), Buffer.from([0xff])]);
  const decoded = `${tmp.dir}/bad-\uFFFD`;
  beforeAll(() => {
    mkdirSync(rawName);
    copyFileSync(GOLDEN, Buffer.concat([rawName, Buffer.from('/state.llmcp')]));
  });

  it('the binary, given the raw bytes by a shell, says the path is not representable (exit 3), not "not found"', () => {
    const r = spawnSync('/bin/sh', ['-c', `exec "$0" --conditions=@llmcp/source --import tsx "$1" inspect "$(printf '%s/bad-\\377/state.llmcp' "$2")"`, process.execPath, path.join(PACKAGE_DIR, 'src/bin.ts'), tmp.dir], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', NO_COLOR: '1' },
      timeout: 20_000,
    });
    expect(r.status).toBe(3);
    const [line, hint] = r.stderr.trimEnd().split('\n');
    expect(line).toBe(
      `llmcp inspect: error: checkpoint path ${decoded}/state.llmcp cannot be opened: it contains U+FFFD (\uFFFD), which Node substitutes for bytes of a path that are not valid UTF-8, and no file has that name`,
    );
    expect(hint).toMatch(/^hint: rename it to a UTF-8 name/);
    expect(r.stderr).not.toMatch(/not found/);
  });

  it.each([
    ['verify', ['verify', decoded], 'checkpoint or run directory'],
    ['status', ['status', decoded], 'run directory'],
    ['inspect --json', ['inspect', `${decoded}/state.llmcp`, '--json'], 'checkpoint'],
  ])('%s: CLI_PATH_NOT_UTF8, exit 3', async (_name, argv, what) => {
    const r = await llmcp(argv);
    expect(r.code).toBe(3);
    const text = argv.includes('--json') ? (JSON.parse(r.stdout) as { error: { code: string; message: string } }).error : { code: 'CLI_PATH_NOT_UTF8', message: r.stderr.split('\n')[0] ?? '' };
    expect(text.code).toBe('CLI_PATH_NOT_UTF8');
    expect(text.message).toContain(`${what} path ${argv[1]} cannot be opened: it contains U+FFFD`);
  });

  it('a path that really is named with U+FFFD (valid UTF-8) still opens', async () => {
    const named = path.join(tmp.dir, 'real-\uFFFD.llmcp');
    copyFileSync(GOLDEN, named);
    const r = await llmcp(['verify', named]);
    expect(r.code).toBe(0);
  });

  it('export -o into it: CLI_PATH_NOT_UTF8, exit 3 (not "directory does not exist", exit 4)', async () => {
    const r = await llmcp(['export', '--to', 'safetensors', GOLDEN, '-o', `${decoded}/out.safetensors`]);
    expect(r.code).toBe(3);
    expect(r.stderr.split('\n')[0]).toBe(
      `llmcp export: error: output path ${decoded}/out.safetensors cannot be opened: it contains U+FFFD (\uFFFD), which Node substitutes for bytes of a path that are not valid UTF-8, and no file has that name`,
    );
  });

  it('train refuses to create a run directory under a name that is not what was typed', async () => {
    const r = await llmcp(['train', path.join(decoded, 'run'), '--preset', 'ch33']);
    expect(r.code).toBe(3);
    expect(r.stderr.split('\n')[0]).toContain(`run directory path ${path.join(decoded, 'run')} cannot be opened: it contains U+FFFD`);
    expect(readdirSync(tmp.dir).filter((n) => n.startsWith('bad-'))).toEqual(['bad-\uFFFD']); // nothing created (the listing decodes 0xff too)
  });
});

describe('llmcp train / fork: where the new run directory cannot be', () => {
  it('an existing regular file: CLI_WRONG_FILE_KIND, exit 3 (not EEXIST, exit 4)', async () => {
    const file = path.join(tmp.dir, 'a-file');
    writeFileSync(file, 'not a directory\n');
    const r = await llmcp(['train', file, '--preset', 'ch33']);
    expect(r.code).toBe(3);
    expect(r.stderr).toBe(`llmcp train: error: ${file} is not a directory, expected a new run directory\nhint: give a new (or empty) directory for the run\n`);
  });

  it('below a regular file: CLI_WRONG_FILE_KIND, exit 3 (not ENOTDIR, exit 4)', async () => {
    const file = path.join(tmp.dir, 'a-file');
    const r = await llmcp(['train', path.join(file, 'run'), '--preset', 'ch33']);
    expect(r.code).toBe(3);
    expect(r.stderr.split('\n')[0]).toBe(`llmcp train: error: cannot create run directory ${path.join(file, 'run')}: ${file} is not a directory`);
  });

  it.runIf(existsSync('/proc/self'))('under /proc: a typed runtime error within the timeout, no endless mkdir (train)', () => {
    const r = bin(['train', '/proc/llmcp-no-such-dir/run', '--preset', 'ch33', '--plain']);
    expect(r.signal).toBeNull();
    expect(r.status).toBe(4);
    expect(r.stderr.split('\n')[0]).toBe(
      'llmcp train: error: train /proc/llmcp-no-such-dir/run: TRAINER_IO: cannot create the run directory /proc/llmcp-no-such-dir/run: mkdir /proc/llmcp-no-such-dir failed with ENOENT although /proc exists (its file system does not allow new directories there)',
    );
  });

  it.runIf(existsSync('/proc/self'))('under /proc: the same for a fork target', () => {
    const r = bin(['fork', run, '/proc/llmcp-no-such-dir']);
    expect(r.signal).toBeNull();
    expect(r.status).toBe(4);
    expect(r.stderr.split('\n')[0]).toMatch(/^llmcp fork: error: .*TRAINER_IO: cannot create the fork target \/proc\/llmcp-no-such-dir: mkdir \/proc\/llmcp-no-such-dir failed with ENOENT/);
  });
});

describe('llmcp fork --slot', () => {
  it.each(['../../etc', 'latest/../best', '/etc', 'step_1', 'latest.', '.tmp-latest-1-1', ''])('refuses %j (not a plain slot name) as an input error listing the slots, exit 3', async (slot) => {
    const target = path.join(tmp.dir, 'fork-bad');
    const r = await llmcp(['fork', run, target, '--slot', slot]);
    expect(r.code).toBe(3);
    expect(r.stderr.split('\n')[0]).toBe(
      `llmcp fork: error: --slot ${JSON.stringify(slot)} is not a slot name (latest, latest.backup, best, best.backup or step_NNNNNN); ${run} has: best, best.backup, latest, step_000008`,
    );
    expect(existsSync(target)).toBe(false);
  });

  it('refuses a slot name the run does not have, listing the slots, exit 3', async () => {
    const target = path.join(tmp.dir, 'fork-missing');
    const r = await llmcp(['fork', run, target, '--slot', 'step_000004']);
    expect(r.code).toBe(3);
    expect(r.stderr.split('\n')[0]).toBe(`llmcp fork: error: --slot step_000004: ${run} has no such slot; it has: best, best.backup, latest, step_000008`);
    expect(existsSync(target)).toBe(false);
  });

  it('accepts an existing plain slot name', async () => {
    const r = await llmcp(['fork', run, path.join(tmp.dir, 'fork-ok'), '--slot', 'best']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^forked .* \(best, step 8\)/);
  });
});
