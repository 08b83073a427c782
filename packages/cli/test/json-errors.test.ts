import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI_ERROR_CODES } from '../src/errors.ts';
import { GOLDEN, llmcp, tempDir } from './helpers.ts';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
const missing = path.join(tmp.dir, 'missing.llmcp');

interface ErrorJson {
  readonly schema: string;
  readonly error: { readonly code: string; readonly message: string; readonly exit: number; readonly command: string; readonly path?: string; readonly option?: string; readonly hint?: string };
}

/** Runs a command that must fail under --json: stdout is exactly one JSON error document, stderr is empty. */
async function failJson(argv: readonly string[]): Promise<{ code: number; doc: ErrorJson }> {
  const r = await llmcp(argv, { cwd: tmp.dir });
  expect(r.stderr).toBe('');
  const doc = JSON.parse(r.stdout) as ErrorJson;
  expect(doc.schema).toBe('llmcp-error/1');
  expect(Object.values(CLI_ERROR_CODES)).toContain(doc.error.code);
  expect(doc.error.exit).toBe(r.code);
  return { code: r.code, doc };
}

describe('--json failures print one JSON error document on stdout', () => {
  it.each([
    ['inspect', ['inspect', missing, '--json']],
    ['verify', ['verify', missing, '--json']],
    ['diff', ['diff', GOLDEN, missing, '--json']],
    ['sample', ['sample', missing, '--prompt', '0', '--json']],
    ['status', ['status', missing, '--json']],
  ])('%s: a missing path → CLI_FILE_NOT_FOUND, exit 3, with the path and the hint', async (name, argv) => {
    const { code, doc } = await failJson(argv);
    expect(code).toBe(3);
    expect(doc.error).toMatchObject({ code: 'CLI_FILE_NOT_FOUND', exit: 3, command: `llmcp ${name}`, path: missing, hint: 'check the path (relative paths start from the current directory)' });
    expect(doc.error.message).toMatch(/not found: .*missing\.llmcp$/);
  });

  it('a usage error found by the option parser (after --json) → CLI_USAGE, exit 2', async () => {
    const { code, doc } = await failJson(['inspect', GOLDEN, '--json', '--frobnicate']);
    expect(code).toBe(2);
    expect(doc.error).toEqual({ code: 'CLI_USAGE', message: "unknown option '--frobnicate'", exit: 2, command: 'llmcp inspect', hint: "run 'llmcp inspect --help' for usage and examples" });
  });

  it('a usage error found before --json was reached (bad option value) → CLI_USAGE, exit 2', async () => {
    const { code, doc } = await failJson(['sample', GOLDEN, '--top-k', '2.5', '--json']);
    expect(code).toBe(2);
    expect(doc.error.code).toBe('CLI_USAGE');
    expect(doc.error.message).toBe("option '--top-k <k>' argument '2.5' is invalid. expected an integer ≥ 1, found '2.5'.");
  });

  it('a missing argument → CLI_USAGE, exit 2', async () => {
    const { code, doc } = await failJson(['diff', GOLDEN, '--json']);
    expect(code).toBe(2);
    expect(doc.error).toMatchObject({ code: 'CLI_USAGE', message: "missing required argument 'b'", command: 'llmcp diff' });
  });

  it('an error thrown by the command itself (usage) keeps its option', async () => {
    const { code, doc } = await failJson(['sample', GOLDEN, '--prompt', '0', '--top-k', '6', '--json']);
    expect(code).toBe(2);
    expect(doc.error).toMatchObject({ code: 'CLI_USAGE', message: '--top-k 6 exceeds the vocabulary size 5', option: '--top-k' });
  });

  it('the alias (runs) is a --json command too', async () => {
    const { doc } = await failJson(['runs', missing, '--json']);
    expect(doc.error).toMatchObject({ code: 'CLI_FILE_NOT_FOUND', command: 'llmcp runs' });
  });

  it('without --json, errors stay one text line plus a hint on stderr', async () => {
    const r = await llmcp(['inspect', missing], { cwd: tmp.dir });
    expect(r.code).toBe(3);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`llmcp inspect: error: checkpoint not found: ${missing}\nhint: check the path (relative paths start from the current directory)\n`);
  });

  it('--json after -- is an operand, not the flag', async () => {
    const r = await llmcp(['inspect', '--', '--json'], { cwd: tmp.dir });
    expect(r.code).toBe(3);
    expect(r.stdout).toBe('');
    expect(r.stderr.split('\n')[0]).toBe('llmcp inspect: error: checkpoint not found: --json');
  });

  it('a command without --json rejects the flag in text', async () => {
    const r = await llmcp(['resume', path.join(tmp.dir, 'x'), '--json'], { cwd: tmp.dir });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.split('\n')[0]).toBe("llmcp resume: error: unknown option '--json'");
  });
});
