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

function isNodeOnlyFile(rel: string): boolean {
  return (
    rel === 'src/node.ts' ||
    rel.startsWith('src/node/') ||
    /\.test\.[cm]?[jt]sx?$/.test(rel) ||
    rel.startsWith('test/') ||
    rel.startsWith('bench/')
  );
}

/** Returns every layering violation in the workspace rooted at `root`. */
export function checkLayers(root: string, rules: LayerRules): Violation[] {
  const violations: Violation[] = [];
  const pkgs = listWorkspacePackages(root);
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
    const browserSafe = rules.browserSafe.includes(pkg.name);
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      const r = rel(file);
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
          }
        } else if (spec.startsWith('.')) {
          const resolved = path.resolve(path.dirname(file), spec);
          if (!resolved.startsWith(pkg.dir + path.sep)) {
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
