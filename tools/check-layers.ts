/**
 * Enforces the package layering declared in tools/layers.json.
 *
 * For every workspace package (packages/*, apps/*, tools) it checks
 *  - package.json: every @llmcp/* entry in dependencies, peerDependencies and
 *    devDependencies is an allowed edge; zero-dependency packages declare no
 *    dependencies or peerDependencies at all;
 *  - sources: every import / export-from / dynamic import / require specifier
 *    in src/, test/ and bench/ names only allowed @llmcp/* packages, never a
 *    deep path into another package (`@llmcp/x/src/...`), never a relative
 *    path that leaves the package directory;
 *  - browser-safe packages: no `node:*` or Node built-in imports and no
 *    `Buffer` / `process` globals outside their Node entry (src/node.ts,
 *    src/node/**) and tests.
 *  - browser pages (`browserOnly`, e.g. the inspector): outside tests and
 *    vite.config.ts, the same Node ban, and @llmcp/* imports only of the
 *    declared `browserEntries` (so the inspector may import
 *    `@llmcp/trainer/loss-records` but not the trainer's Node main entry);
 *    each declared entry of a package that is not browser-safe as a whole is
 *    itself checked: its source file and every file it imports relatively
 *    use no Node built-in or global and import only other browser entries.
 *
 * Run: `tsx tools/check-layers.ts` (exit 1 on any violation).
 */
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface LayerRules {
  packages: Record<string, { layer: number | string; allow: string[] }>;
  zeroRuntimeDependencies: string[];
  browserSafe: string[];
  /** Packages whose sources (tests and vite.config.ts aside) run in a browser. */
  browserOnly?: string[];
  /** The only @llmcp/* specifiers a browserOnly package may import (exact: `@llmcp/format`, `@llmcp/trainer/loss-records`). */
  browserEntries?: string[];
}

export interface Violation {
  pkg: string;
  file: string;
  line?: number;
  message: string;
}

interface WorkspacePackage {
  name: string;
  dir: string;
  manifest: Record<string, unknown>;
}

const SOURCE_DIRS = ['src', 'test', 'bench', 'e2e'];
const SOURCE_EXT = /\.(?:[cm]?[jt]sx?)$/;
// Static imports/exports are matched at the start of a line (so source text inside
// string literals, e.g. in this tool's own tests, is not mistaken for an import);
// dynamic import() and require() anywhere.
const SPECIFIER_RE =
  /(?:^[ \t]*import\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?|^[ \t]*export\s+(?:type\s+)?[^'";]*?\s+from\s+|\bimport\s*\(\s*|\brequire\s*\(\s*)['"]([^'"]+)['"]/gm;
const NODE_BUILTINS = new Set(builtinModules);

function listWorkspacePackages(root: string): WorkspacePackage[] {
  const out: WorkspacePackage[] = [];
  const candidates: string[] = [];
  for (const group of ['packages', 'apps']) {
    const g = path.join(root, group);
    if (!existsSync(g)) continue;
    for (const d of readdirSync(g)) candidates.push(path.join(g, d));
  }
  candidates.push(path.join(root, 'tools'));
  for (const dir of candidates) {
    const pj = path.join(dir, 'package.json');
    if (!existsSync(pj)) continue;
    const manifest = JSON.parse(readFileSync(pj, 'utf8')) as Record<string, unknown>;
    out.push({ name: String(manifest.name), dir, manifest });
  }
  return out;
}

function walk(dir: string, files: string[]): void {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir)) {
    if (entry === 'node_modules' || entry === 'dist') continue;
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) walk(full, files);
    else if (SOURCE_EXT.test(entry)) files.push(full);
  }
}

function packageOf(specifier: string): string | null {
  if (!specifier.startsWith('@llmcp/')) return null;
  const parts = specifier.split('/');
  return `${parts[0]}/${parts[1]}`;
}

/**
 * The shared test support a package's tests may reach by relative path: the
 * one fixture home and its reader (tools/fixtures.ts). Sources never may.
 */
const SHARED_TEST_SUPPORT = ['tools/fixtures.ts', 'packages/conformance/fixtures/'];

function isTestFile(rel: string): boolean {
  return /\.test\.[cm]?[jt]sx?$/.test(rel) || rel.startsWith('test/') || rel.startsWith('bench/');
}

function isSharedTestSupport(root: string, resolved: string): boolean {
  const r = path.relative(root, resolved).split(path.sep).join('/');
  return SHARED_TEST_SUPPORT.some((s) => (s.endsWith('/') ? r.startsWith(s) : r === s));
}

function isNodeOnlyFile(rel: string): boolean {
  return (
    rel === 'src/node.ts' ||
    rel.startsWith('src/node/') ||
    /\.test\.[cm]?[jt]sx?$/.test(rel) ||
    rel.startsWith('test/') ||
    rel.startsWith('bench/')
  );
}

/** Node built-in imports and Node globals in one browser source text. */
function nodeUsage(text: string): { index: number; message: string }[] {
  const out: { index: number; message: string }[] = [];
  for (const m of text.matchAll(SPECIFIER_RE)) {
    const spec = m[1] ?? '';
    const bare = spec.startsWith('node:') ? spec.slice(5) : spec;
    if (spec.startsWith('node:') || (!spec.startsWith('.') && !spec.startsWith('@llmcp/') && NODE_BUILTINS.has(bare.split('/')[0] ?? ''))) out.push({ index: m.index ?? 0, message: `imports Node built-in ${spec}` });
  }
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  for (const g of ['Buffer', 'process', 'require']) {
    const re = new RegExp(`(?<![.\\w$'"\`])${g}\\s*[.(\\[]`, 'g');
    for (const m of code.matchAll(re)) out.push({ index: -1, message: `uses the Node global ${g} (${m[0].trim()})` });
  }
  return out;
}

/** Checks a declared browser entry of a package that is not browser-safe as a whole: the entry file and its relative imports. */
function checkBrowserEntry(spec: string, pkgs: readonly WorkspacePackage[], rules: LayerRules, violations: Violation[]): void {
  const name = packageOf(spec);
  const pkg = pkgs.find((p) => p.name === name);
  if (name === null || pkg === undefined) {
    violations.push({ pkg: String(name ?? spec), file: 'tools/layers.json', message: `browser entry ${spec} names no workspace package` });
    return;
  }
  const sub = spec === name ? '.' : `.${spec.slice(name.length)}`;
  const target = ((pkg.manifest.exports ?? {}) as Record<string, Record<string, unknown> | undefined>)[sub]?.['@llmcp/source'];
  if (typeof target !== 'string') {
    violations.push({ pkg: pkg.name, file: 'package.json', message: `browser entry ${spec} is not an export of ${pkg.name} with an @llmcp/source file` });
    return;
  }
  const entries = new Set(rules.browserEntries ?? []);
  const seen = new Set<string>();
  const queue = [path.resolve(pkg.dir, target)];
  while (queue.length > 0) {
    const file = queue.pop() as string;
    if (seen.has(file) || !existsSync(file)) continue;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    const r = path.relative(pkg.dir, file).split(path.sep).join('/');
    const lineOf = (index: number): number | undefined => (index < 0 ? undefined : text.slice(0, index).split('\n').length);
    for (const u of nodeUsage(text)) {
      const line = lineOf(u.index);
      violations.push({ pkg: pkg.name, file: r, ...(line === undefined ? {} : { line }), message: `browser entry ${spec} ${u.message}` });
    }
    for (const m of text.matchAll(SPECIFIER_RE)) {
      const s = m[1] ?? '';
      if (s.startsWith('.')) queue.push(path.resolve(path.dirname(file), s));
      else if (s.startsWith('@llmcp/') && !entries.has(s)) violations.push({ pkg: pkg.name, file: r, line: lineOf(m.index ?? 0) as number, message: `browser entry ${spec} imports ${s}, which is not a browser entry` });
    }
  }
}

/** Returns every layering violation in the workspace rooted at `root`. */
export function checkLayers(root: string, rules: LayerRules): Violation[] {
  const violations: Violation[] = [];
  const pkgs = listWorkspacePackages(root);
  for (const spec of rules.browserEntries ?? []) {
    if (!rules.browserSafe.includes(packageOf(spec) ?? '')) checkBrowserEntry(spec, pkgs, rules, violations);
  }
  for (const pkg of pkgs) {
    const rule = rules.packages[pkg.name];
    const rel = (f: string): string => path.relative(pkg.dir, f).split(path.sep).join('/');
    if (!rule) {
      violations.push({ pkg: pkg.name, file: 'package.json', message: `package ${pkg.name} is not declared in tools/layers.json` });
      continue;
    }
    const allow = new Set(rule.allow);
    for (const field of ['dependencies', 'peerDependencies', 'devDependencies', 'optionalDependencies']) {
      const deps = (pkg.manifest[field] ?? {}) as Record<string, string>;
      if (rules.zeroRuntimeDependencies.includes(pkg.name) && field !== 'devDependencies' && Object.keys(deps).length > 0) {
        violations.push({ pkg: pkg.name, file: 'package.json', message: `${pkg.name} must have no ${field}, found ${Object.keys(deps).join(', ')}` });
      }
      for (const dep of Object.keys(deps)) {
        if (dep.startsWith('@llmcp/') && !allow.has(dep)) {
          violations.push({ pkg: pkg.name, file: 'package.json', message: `${field} names ${dep}, which is not an allowed edge for ${pkg.name} (allowed: ${rule.allow.join(', ') || 'none'})` });
        }
      }
    }
    const files: string[] = [];
    const roots = pkg.name === '@llmcp/tools' ? [pkg.dir] : SOURCE_DIRS.map((d) => path.join(pkg.dir, d));
    for (const r of roots) walk(r, files);
    if (existsSync(path.join(pkg.dir, 'vite.config.ts'))) files.push(path.join(pkg.dir, 'vite.config.ts'));
    const browserOnly = (rules.browserOnly ?? []).includes(pkg.name);
    const entries = new Set(rules.browserEntries ?? []);
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      const r = rel(file);
      // The page of a browserOnly package: everything but its tests and its Vite config.
      const page = browserOnly && !isNodeOnlyFile(r) && !r.startsWith('e2e/') && r !== 'vite.config.ts';
      const browserSafe = rules.browserSafe.includes(pkg.name) || page;
      const lineOf = (index: number): number => text.slice(0, index).split('\n').length;
      for (const m of text.matchAll(SPECIFIER_RE)) {
        const spec = m[1] ?? '';
        const line = lineOf(m.index ?? 0);
        const target = packageOf(spec);
        if (target !== null) {
          if (target === pkg.name) {
            violations.push({ pkg: pkg.name, file: r, line, message: `imports its own package by name (${spec}); use a relative path` });
          } else if (!allow.has(target)) {
            violations.push({ pkg: pkg.name, file: r, line, message: `imports ${spec}: ${target} is not an allowed edge for ${pkg.name} (allowed: ${rule.allow.join(', ') || 'none'})` });
          } else if (/^@llmcp\/[^/]+\/(?:src|dist)(?:\/|$)/.test(spec)) {
            violations.push({ pkg: pkg.name, file: r, line, message: `deep import ${spec}; import the package's public entry point` });
          } else if (page && !entries.has(spec)) {
            violations.push({ pkg: pkg.name, file: r, line, message: `browser page imports ${spec}, which is not a browser entry (allowed: ${[...entries].join(', ') || 'none'})` });
          }
        } else if (spec.startsWith('.')) {
          const resolved = path.resolve(path.dirname(file), spec);
          if (!resolved.startsWith(pkg.dir + path.sep) && !(isTestFile(r) && isSharedTestSupport(root, resolved))) {
            violations.push({ pkg: pkg.name, file: r, line, message: `relative import ${spec} leaves the package directory` });
          }
        } else if (browserSafe && !isNodeOnlyFile(r)) {
          const bare = spec.startsWith('node:') ? spec.slice(5) : spec;
          if (spec.startsWith('node:') || NODE_BUILTINS.has(bare.split('/')[0] ?? '')) {
            violations.push({ pkg: pkg.name, file: r, line, message: `browser-safe package imports Node built-in ${spec}` });
          }
        }
      }
      if (browserSafe && !isNodeOnlyFile(r)) {
        const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
        for (const g of ['Buffer', 'process', 'require']) {
          const re = new RegExp(`(?<![.\\w$'"\`])${g}\\s*[.(\\[]`, 'g');
          for (const m of code.matchAll(re)) {
            violations.push({ pkg: pkg.name, file: r, message: `browser-safe package uses the Node global ${g} (${m[0].trim()})` });
          }
        }
      }
    }
  }
  return violations;
}

export function loadRules(root: string): LayerRules {
  return JSON.parse(readFileSync(path.join(root, 'tools', 'layers.json'), 'utf8')) as LayerRules;
}

const isMain = process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const violations = checkLayers(root, loadRules(root));
  for (const v of violations) console.error(`${v.pkg}: ${v.file}${v.line ? `:${v.line}` : ''}: ${v.message}`);
  if (violations.length > 0) {
    console.error(`check-layers: ${violations.length} violation(s)`);
    process.exit(1);
  }
  console.log('check-layers: ok');
}
