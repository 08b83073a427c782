/**
 * The repository's one test command (`pnpm test`), used unchanged by CI.
 *
 * Stages, in the order of ../docs/STYLE.md §22: build → typecheck → lint → vitest (every
 * package, the tools, the apps, and the browser project) → publint and
 * attw on every published package. The layer check runs inside vitest
 * (tools/check-layers.test.ts).
 *
 * It ends with one line `N passed, N failed` summed over all stages: vitest
 * tests come from its JSON report, each build/typecheck/publint/attw step
 * counts as one test. Exit status is 0 only if nothing failed.
 *
 * Options: any argument is passed to vitest (e.g. `pnpm test --project format`);
 * LLMCP_SKIP_BROWSER=1 leaves out the browser projects (for machines without
 * Chromium; CI never sets it).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
let passed = 0;
let failed = 0;
const failures: string[] = [];

function step(label: string, cmd: string, args: string[], cwd = root): boolean {
  console.log(`\n▶ ${label}: ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { cwd, stdio: 'inherit', env: process.env });
  const ok = r.status === 0;
  if (ok) passed += 1;
  else {
    failed += 1;
    failures.push(label);
  }
  return ok;
}

const vitestArgs = process.argv.slice(2);
const built = step('build', 'pnpm', ['exec', 'turbo', 'run', 'build', '--output-logs=errors-only']);
step('typecheck', 'pnpm', ['exec', 'turbo', 'run', 'typecheck', '--output-logs=errors-only']);
// ESLint over the whole repository (eslint.config.js: TSDoc on exports, max-params, no-console, the layer bans).
step('lint', 'pnpm', ['exec', 'eslint', '.', '--max-warnings=0']);
// The interop workspace (interop/, llama.cpp through node-llama-cpp) is installed separately; its vitest project skips without it.
if (existsSync(path.join(root, 'interop', 'node_modules'))) step('typecheck interop', 'pnpm', ['exec', 'tsc', '-p', 'interop/tsconfig.json', '--noEmit']);
else console.log('\n▶ interop workspace not installed (pnpm install --dir interop --frozen-lockfile): its llama.cpp tests will skip');

const resultsDir = path.join(root, '.vitest-results');
rmSync(resultsDir, { recursive: true, force: true });
mkdirSync(resultsDir, { recursive: true });
const resultsFile = path.join(resultsDir, 'results.json');
const projectArgs: string[] = [];
if (process.env.LLMCP_SKIP_BROWSER === '1' && !vitestArgs.some((a) => a.startsWith('--project'))) {
  const dirs = readdirSync(path.join(root, 'packages')).filter((d) => existsSync(path.join(root, 'packages', d, 'package.json')));
  for (const p of [...dirs, 'tools', 'apps', 'interop']) projectArgs.push('--project', p);
}
console.log('\n▶ vitest');
const v = spawnSync('pnpm', ['exec', 'vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${resultsFile}`, ...projectArgs, ...vitestArgs], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, LLMCP_BUILT: built ? '1' : '0' },
});
if (existsSync(resultsFile)) {
  const report = JSON.parse(readFileSync(resultsFile, 'utf8')) as {
    numPassedTests: number;
    numFailedTests: number;
    testResults: { name: string; status: string; message?: string; assertionResults: unknown[] }[];
  };
  passed += report.numPassedTests;
  failed += report.numFailedTests;
  // A file that fails to load (syntax error, failed import) has no test results: count it.
  for (const file of report.testResults) {
    if (file.status === 'failed' && file.assertionResults.length === 0) {
      failed += 1;
      failures.push(`vitest: ${path.relative(root, file.name)} did not load`);
    }
  }
  if (report.numFailedTests > 0) failures.push(`vitest: ${report.numFailedTests} failed test(s)`);
} else {
  failed += 1;
  failures.push(`vitest exited with ${v.status} and wrote no report`);
}
if (v.status !== 0 && !failures.some((f) => f.startsWith('vitest'))) {
  failed += 1;
  failures.push(`vitest exited with status ${v.status}`);
}

// Package hygiene: publint and attw (ESM profile) on every published package.
for (const dir of readdirSync(path.join(root, 'packages'))) {
  const pj = path.join(root, 'packages', dir, 'package.json');
  if (!existsSync(pj)) continue;
  const manifest = JSON.parse(readFileSync(pj, 'utf8')) as { name: string; private?: boolean };
  if (manifest.private) continue;
  const cwd = path.dirname(pj);
  step(`publint ${manifest.name}`, 'pnpm', ['exec', 'publint', '--strict'], cwd);
  step(`attw ${manifest.name}`, 'pnpm', ['exec', 'attw', '--pack', '.', '--profile', 'esm-only', '--format', 'table-flipped'], cwd);
}

if (failures.length > 0) {
  console.log('\nFailed:');
  for (const f of failures) console.log(`  - ${f}`);
}
console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
