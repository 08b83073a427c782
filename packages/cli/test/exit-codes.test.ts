/**
 * The exit-code table of `src/exit-codes.ts` is the one home of `llmcp`'s
 * exit codes: `llmcp --help` is rendered from it, and everything else that
 * lists or relies on the codes is checked against it here — the README's
 * table, `tools/pnpm-llmcp.sh` (which hands the clean-stop code to pnpm as 0),
 * the reliability harness's known exits, and the numbers each command's
 * `Exit status:` help and the trainer app's help name.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES, EXIT_CODE_MEANINGS, exitCodesHelp, type ExitCodeName } from '../src/exit-codes.ts';
import { llmcp, PACKAGE_DIR, REPO_ROOT } from './helpers.ts';

const NAMES = Object.keys(EXIT_CODES) as ExitCodeName[];
const VALUES: ReadonlySet<number> = new Set(Object.values(EXIT_CODES));
const read = (rel: string): string => readFileSync(path.join(REPO_ROOT, rel), 'utf8');

describe('the exit-code table', () => {
  it('has a meaning for every code and distinct values', () => {
    expect(Object.keys(EXIT_CODE_MEANINGS).sort()).toEqual([...NAMES].sort());
    expect(VALUES.size).toBe(NAMES.length);
  });

  it('is what the README lists under "Exit codes", row by row', () => {
    const readme = read('packages/cli/README.md');
    const start = readme.indexOf('### Exit codes');
    const end = readme.indexOf('\n#', start + 1);
    const section = readme.slice(start, end === -1 ? undefined : end);
    const rows = [...section.matchAll(/^\| (\d+) \| (.+) \|$/gm)].map((m) => [Number(m[1]), m[2]]);
    expect(rows).toEqual(NAMES.map((n) => [EXIT_CODES[n], EXIT_CODE_MEANINGS[n]]));
  });

  it('is what `llmcp --help` prints', async () => {
    const r = await llmcp(['--help']);
    expect(r.stdout).toContain(exitCodesHelp());
    for (const n of NAMES) expect(exitCodesHelp()).toMatch(new RegExp(`^  ${EXIT_CODES[n]} +\\S`, 'm'));
    for (const line of exitCodesHelp().split('\n')) expect(line.length, line).toBeLessThanOrEqual(100);
  });

  it('gives the clean stop of `pnpm llmcp` (tools/pnpm-llmcp.sh) as INTERRUPTED', () => {
    const script = read('tools/pnpm-llmcp.sh');
    expect([...script.matchAll(/-eq (\d+)/g)].map((m) => Number(m[1]))).toEqual([EXIT_CODES.INTERRUPTED]);
  });

  it('is the set of known exits of the reliability harness', () => {
    const harness = read('tools/reliability/src/run-harness.ts');
    const known = /KNOWN_EXITS = new Set\(\[([\d, ]+)\]\)/.exec(harness)?.[1];
    expect(known?.split(',').map(Number).sort((a, b) => a - b)).toEqual([...VALUES].sort((a, b) => a - b));
  });

  it("holds every code a command's `Exit status:` help and the trainer app's help name", () => {
    const texts: [string, string][] = readdirSync(path.join(PACKAGE_DIR, 'src/commands')).map((f) => [`commands/${f}`, readFileSync(path.join(PACKAGE_DIR, 'src/commands', f), 'utf8')]);
    texts.push(['apps/trainer/src/main.ts', read('apps/trainer/src/main.ts')]);
    let seen = 0;
    for (const [file, text] of texts) {
      for (const m of text.matchAll(/Exit status: ([^'`]*)/g)) {
        // Each code is a number followed by its meaning: at the start, or after a comma, semicolon or `as llmcp:`.
        for (const c of (m[1] as string).matchAll(/(?:^|[,;:]\s+)(\d+) /g)) {
          seen += 1;
          expect(VALUES.has(Number(c[1])), `${file}: exit ${c[1]} in "${m[0].slice(0, 60)}…"`).toBe(true);
        }
      }
    }
    expect(seen).toBeGreaterThan(20);
  });
});
