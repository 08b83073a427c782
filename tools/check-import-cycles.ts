/**
 * Import cycles between the modules of one package's `src/`: every relative
 * `import … from`, `import type … from`, `export … from` and side-effect
 * `import '…'` is an edge (a type-only import is an edge too: it ties the two
 * modules together as much as a value import, and is how cycles start).
 * Dynamic `import()` is not an edge: it is how a module loads another lazily,
 * on purpose. Imports of other packages are the layer check's business
 * (check-layers.ts), not this one's.
 *
 * Run: `node --import tsx tools/check-import-cycles.ts` (exit 1 and one line
 * per cycle when there is one).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** One cycle: the files (relative to the package's directory), the first repeated at the end. */
export type ImportCycle = readonly string[];

// Static imports/exports at the start of a line (source text inside string literals is not mistaken for one).
const STATIC_IMPORT_RE = /^[ \t]*(?:import\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?|export\s+(?:type\s+)?[^'";]*?\s+from\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;
const SOURCE_EXT = /\.(?:ts|tsx|mts|js|mjs)$/;

function walk(dir: string, files: string[]): void {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir)) {
    if (entry === 'node_modules' || entry === 'dist') continue;
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) walk(full, files);
    else if (SOURCE_EXT.test(entry) && !entry.endsWith('.d.ts')) files.push(full);
  }
}

/** The file a relative specifier names: as written (`./a.ts`), or with `.ts` for `.js` or none, or an `index.ts`. */
function resolveRelative(from: string, specifier: string, known: ReadonlySet<string>): string | null {
  const base = path.resolve(path.dirname(from), specifier);
  const candidates = [base, base.replace(/\.js$/, '.ts'), `${base}.ts`, path.join(base, 'index.ts')];
  return candidates.find((c) => known.has(c)) ?? null;
}

/**
 * The relative-import graph of the source files under `srcDir`.
 *
 * @param srcDir - a package's `src/` directory (absolute).
 * @returns each file (absolute) with the files it imports statically.
 */
export function importGraph(srcDir: string): Map<string, string[]> {
  const files: string[] = [];
  walk(srcDir, files);
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const targets: string[] = [];
    for (const m of text.matchAll(STATIC_IMPORT_RE)) {
      const target = resolveRelative(file, m[1] as string, known);
      if (target !== null && !targets.includes(target)) targets.push(target);
    }
    graph.set(file, targets);
  }
  return graph;
}

/**
 * The import cycles of a graph: one cycle per back edge of a depth-first
 * search (so every graph with a cycle reports at least one; a cycle is
 * reported once, from where the search first entered it).
 *
 * @param graph - each node with the nodes it points to.
 * @returns the cycles, each a path whose first node is repeated at its end.
 */
export function findCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      const s = state.get(next);
      if (s === 'open') cycles.push([...stack.slice(stack.indexOf(next)), next]);
      else if (s === undefined) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return cycles;
}

/**
 * The import cycles inside each workspace package's `src/` (packages/*, apps/*).
 *
 * @param root - the repository root.
 * @returns each package directory (relative to `root`) that has a cycle, with its cycles (files relative to the package).
 */
export function checkImportCycles(root: string): { readonly dir: string; readonly cycles: readonly ImportCycle[] }[] {
  const out: { dir: string; cycles: ImportCycle[] }[] = [];
  for (const group of ['packages', 'apps']) {
    const g = path.join(root, group);
    if (!existsSync(g)) continue;
    for (const d of readdirSync(g).sort()) {
      const dir = path.join(g, d);
      const src = path.join(dir, 'src');
      if (!existsSync(path.join(dir, 'package.json')) || !existsSync(src)) continue;
      const cycles = findCycles(importGraph(src)).map((c) => c.map((f) => path.relative(dir, f)));
      if (cycles.length > 0) out.push({ dir: path.relative(root, dir), cycles });
    }
  }
  return out;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const found = checkImportCycles(root);
  for (const { dir, cycles } of found) for (const c of cycles) console.log(`${dir}: ${c.join(' → ')}`);
  process.exit(found.length === 0 ? 0 : 1);
}
