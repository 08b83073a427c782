/**
 * The published packages are ESM only (../docs/DESIGN.md, "Builds: ES modules only"): one build per
 * entry, no `require` condition, no `.cjs` files — and CommonJS code still
 * loads them, because Node ≥ 20.19 (the packages' `engines`) can `require()` an
 * ES module without top-level await. The second part runs on the built
 * `dist/` (pnpm test builds first) and skips where a package is not built.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const packages = readdirSync(path.join(root, 'packages'))
  .map((d) => path.join(root, 'packages', d))
  .filter((d) => existsSync(path.join(d, 'package.json')))
  .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as Record<string, unknown> }))
  .filter(({ manifest }) => manifest['private'] !== true);

/** Every `default` target of an exports map, by subpath (`./package.json` and plain files excluded). */
function entryPoints(exportsMap: Record<string, unknown>): [string, string][] {
  const out: [string, string][] = [];
  for (const [sub, target] of Object.entries(exportsMap)) {
    if (typeof target === 'object' && target !== null && typeof (target as { default?: unknown }).default === 'string') out.push([sub, (target as { default: string }).default]);
  }
  return out;
}

describe('ESM-only packages', () => {
  it.each(packages.map((p) => [String(p.manifest['name']), p] as const))('%s declares one ES module build per entry', (_name, { manifest }) => {
    const text = JSON.stringify(manifest);
    expect(text).not.toMatch(/"require"|\.cjs"|\.d\.cts"/);
    expect(manifest['module']).toBeUndefined();
    const entries = entryPoints(manifest['exports'] as Record<string, unknown>);
    expect(entries.length).toBeGreaterThan(0);
    for (const [, file] of entries) expect(file).toMatch(/^\.\/dist\/.+\.js$/);
  });

  it.each(packages.map((p) => [String(p.manifest['name']), p] as const))('%s: CommonJS code can require() every built entry', (name, { dir, manifest }) => {
    const entries = entryPoints(manifest['exports'] as Record<string, unknown>).filter(([, file]) => existsSync(path.join(dir, file)));
    if (entries.length === 0) {
      console.warn(`${name}: not built, require() check skipped`);
      return;
    }
    const script = entries.map(([sub, file]) => `{ const m = require(${JSON.stringify(path.join(dir, file))}); if (Object.keys(m).length === 0) throw new Error(${JSON.stringify(`${name} ${sub}: no exports`)}); }`).join('\n');
    expect(() => execFileSync(process.execPath, ['-e', script], { stdio: 'pipe' })).not.toThrow();
  });
});

describe('package commands', () => {
  const tracked = new Set(execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' }).split('\n'));
  const withBins = packages.filter(({ manifest }) => manifest['bin'] !== undefined);

  it.each(withBins.map((p) => [String(p.manifest['name']), p] as const))('%s: each command is a file of the sources, so installing the workspace links it before a build', (_name, { dir, manifest }) => {
    const bins = manifest['bin'] as Record<string, string>;
    for (const target of Object.values(bins)) {
      const file = path.relative(root, path.join(dir, target));
      expect(file.split(path.sep)).not.toContain('dist');
      expect(tracked.has(file.split(path.sep).join('/')), `${file} is tracked`).toBe(true);
      expect((manifest['files'] as string[]).some((f) => file.split(path.sep).join('/').startsWith(`${path.relative(root, dir)}/${f}/`))).toBe(true);
    }
  });
});
