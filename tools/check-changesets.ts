/**
 * Every commit that changes what a published package ships carries a
 * changeset naming that package, in the same commit. A behaviour-preserving
 * change says so with an empty changeset (`pnpm changeset --empty`), so the
 * decision is always written down.
 *
 * "What a package ships" is its `src/` outside tests, its `package.json`
 * (dependencies, exports), and any other file its `files` list publishes
 * besides `dist`. Commits are checked from the baseline recorded in
 * `.changeset/baseline` (the commit that introduced this rule) to `HEAD`;
 * merge commits are skipped. The test suite runs the check
 * (`check-changesets.test.ts`); `tsx tools/check-changesets.ts` prints it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** A commit that changed a published package without a changeset for it. */
export interface ChangesetProblem {
  readonly commit: string;
  readonly subject: string;
  readonly packages: readonly string[];
}

interface Published {
  readonly name: string;
  /** Directory relative to the root, with a trailing slash. */
  readonly dir: string;
  /** Published paths relative to `dir` besides `dist` (from `files`). */
  readonly extra: readonly string[];
}

function git(root: string, args: readonly string[]): string {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 });
}

function publishedPackages(root: string): Published[] {
  const out: Published[] = [];
  const base = path.join(root, 'packages');
  if (!existsSync(base)) return out;
  for (const d of readdirSync(base)) {
    const file = path.join(base, d, 'package.json');
    if (!existsSync(file)) continue;
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name: string; private?: boolean; files?: string[] };
    if (pkg.private === true) continue;
    out.push({ name: pkg.name, dir: `packages/${d}/`, extra: (pkg.files ?? []).filter((f) => f !== 'dist' && !f.startsWith('dist/')) });
  }
  return out;
}

/**
 * Whether a changed path is part of what a package ships.
 *
 * @param pkg - the package.
 * @param file - a changed path relative to the root.
 * @returns true when a user of the published package could notice it.
 */
function ships(pkg: Published, file: string): boolean {
  if (!file.startsWith(pkg.dir)) return false;
  const rel = file.slice(pkg.dir.length);
  if (rel === 'package.json') return true;
  if (/\.test\.[cm]?ts$/.test(rel) || rel.includes('/test/') || rel.startsWith('test/')) return false;
  if (rel.startsWith('src/')) return true;
  return pkg.extra.some((e) => rel === e || rel.startsWith(`${e.replace(/\/$/, '')}/`));
}

/** Package names a changeset file's front matter lists (empty for an empty changeset). */
function changesetPackages(text: string): string[] | null {
  const m = /^---\r?\n([\s\S]*?)^---\s*$/m.exec(text);
  if (m === null) return null;
  return [...(m[1] as string).matchAll(/^\s*["']?(@?[\w./-]+)["']?\s*:\s*(major|minor|patch)\s*$/gm)].map((x) => x[1] as string);
}

/**
 * Checks the commits from the baseline to `HEAD`.
 *
 * @param root - repository root (a git work tree).
 * @param baseline - the first commit NOT checked (default: `.changeset/baseline`).
 * @returns the commits that lack a changeset for a package they change.
 */
export function checkChangesets(root: string, baseline: string = readFileSync(path.join(root, '.changeset', 'baseline'), 'utf8').trim()): ChangesetProblem[] {
  const packages = publishedPackages(root);
  const problems: ChangesetProblem[] = [];
  const commits = git(root, ['rev-list', '--no-merges', '--reverse', `${baseline}..HEAD`]).split('\n').filter(Boolean);
  for (const commit of commits) {
    const files = git(root, ['diff-tree', '--no-commit-id', '--name-only', '-r', '--root', commit]).split('\n').filter(Boolean);
    const changed = packages.filter((p) => files.some((f) => ships(p, f))).map((p) => p.name);
    if (changed.length === 0) continue;
    const covered = new Set<string>();
    let empty = false;
    for (const f of files) {
      if (!/^\.changeset\/[^/]+\.md$/.test(f) || f === '.changeset/README.md') continue;
      let text: string;
      try {
        text = git(root, ['show', `${commit}:${f}`]);
      } catch {
        continue; // deleted in this commit (a release consumed it)
      }
      const names = changesetPackages(text);
      if (names === null) continue;
      if (names.length === 0) empty = true;
      for (const n of names) covered.add(n);
    }
    const missing = empty ? [] : changed.filter((n) => !covered.has(n));
    if (missing.length > 0) problems.push({ commit: commit.slice(0, 10), subject: git(root, ['log', '-1', '--format=%s', commit]).trim().slice(0, 100), packages: missing });
  }
  return problems;
}

const isMain = process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const problems = checkChangesets(root);
  for (const p of problems) console.log(`${p.commit} ${p.subject}\n  changes ${p.packages.join(', ')} without a changeset (add one, or an empty one with \`pnpm changeset --empty\` for a change no user notices)`);
  console.log(problems.length === 0 ? 'every package change carries a changeset' : `${problems.length} commits lack a changeset`);
  process.exitCode = problems.length === 0 ? 0 : 1;
}
