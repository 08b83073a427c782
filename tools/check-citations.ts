/**
 * Citations that lead somewhere: every Markdown document a code comment names
 * must be a relative path that resolves from the citing file, and a section
 * it cites (`§4.2`) must exist in that document (a heading `## 4.2 …`, or a
 * numbered item `4. …` for list-shaped documents such as
 * [../docs/STYLE.md](../docs/STYLE.md)). Comments may not cite things a
 * contributor does not have ("Acceptance 3" of an issue, "STYLE §19" without
 * the file).
 *
 * `tsx tools/check-citations.ts` reports every broken citation and exits 1;
 * `--fix` rewrites bare document names (`../docs/spec/model.md §4`, `SPEC.md §5.1`) into
 * relative paths when the name identifies exactly one document of the
 * repository (the citing package's own document first). The test suite runs
 * the check (`check-citations.test.ts`).
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** One citation that does not resolve. */
export interface CitationProblem {
  /** Path relative to the repository root. */
  readonly file: string;
  readonly line: number;
  readonly citation: string;
  readonly message: string;
}

/** Directories scanned for source files, relative to the root. */
const SOURCE_GLOBS: readonly (readonly [string, readonly string[]])[] = [
  ['packages', ['src', 'test', 'bench', 'scripts', 'native']],
  ['apps', ['src', 'test', 'e2e']],
];
const SKIP_DIRS = new Set(['node_modules', 'dist', '.turbo', 'test-artifacts', 'fixtures']);
const SOURCE_EXT = /\.(ts|mts|cts|js|mjs|c|h|py)$/;

/** A Markdown file name, optionally a path, optionally followed by a section sign and number. */
const CITATION = /((?:\.{1,2}\/|[\w-]+\/)*[\w.-]*[\w-]\.md)\b(?:\)?\s*§\s*(\d+(?:\.\d+)*))?/g;
/** A Markdown link `[text](href)`. */
const MARKDOWN_LINK = /\[([^\]]*)\]\(([^)\s]+)\)/g;
/** References to documents a contributor does not have. */
const FORBIDDEN: readonly (readonly [RegExp, string])[] = [
  [/\bAcceptance \d+\b/, 'cites an issue\'s acceptance point; say what the test proves instead'],
  [/\bSTYLE §/, 'cites STYLE without its path; write a relative link to docs/STYLE.md'],
];

function walk(dir: string, out: string[]): void {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!SKIP_DIRS.has(entry.name)) walk(path.join(dir, entry.name), out);
    } else if (SOURCE_EXT.test(entry.name)) {
      out.push(path.join(dir, entry.name));
    }
  }
}

/**
 * The source files whose comments are checked.
 *
 * @param root - repository root.
 * @returns absolute paths.
 */
export function citingFiles(root: string): string[] {
  const out: string[] = [];
  for (const [top, subdirs] of SOURCE_GLOBS) {
    const base = path.join(root, top);
    if (!existsSync(base)) continue;
    for (const pkg of readdirSync(base)) {
      for (const sub of subdirs) walk(path.join(base, pkg, sub), out);
      for (const f of readdirSync(path.join(base, pkg))) if (SOURCE_EXT.test(f)) out.push(path.join(base, pkg, f));
    }
  }
  for (const f of readdirSync(path.join(root, 'tools'))) {
    const full = path.join(root, 'tools', f);
    if (SOURCE_EXT.test(f)) out.push(full);
    else if (!SKIP_DIRS.has(f) && statSync(full).isDirectory()) walk(full, out);
  }
  walk(path.join(root, 'python'), out);
  // The checker and its test hold example citations, good and bad, by design.
  const self = new Set(['tools/check-citations.ts', 'tools/check-citations.test.ts'].map((f) => path.join(root, f)));
  return out.filter((f) => !self.has(f)).sort();
}

/**
 * The comment text of one line (the part after `//` or `#`, or a line of a
 * block comment), or null when the line holds no comment.
 *
 * @param line - a source line.
 * @param inBlock - whether a block comment is open at the line's start.
 * @returns the comment text and whether a block comment is open after it.
 */
function commentOf(line: string, inBlock: boolean, python: boolean): { text: string | null; inBlock: boolean } {
  if (python) {
    const at = line.indexOf('#');
    return { text: at >= 0 ? line.slice(at + 1) : null, inBlock: false };
  }
  if (inBlock) {
    const end = line.indexOf('*/');
    return end >= 0 ? { text: line.slice(0, end), inBlock: false } : { text: line, inBlock: true };
  }
  const open = line.indexOf('/*');
  const slash = line.search(/(^|[^:])\/\//);
  if (open >= 0 && (slash < 0 || open < slash)) {
    const end = line.indexOf('*/', open + 2);
    return end >= 0 ? { text: line.slice(open + 2, end), inBlock: false } : { text: line.slice(open + 2), inBlock: true };
  }
  if (slash >= 0) return { text: line.slice(line.indexOf('//', slash) + 2), inBlock: false };
  return { text: null, inBlock: false };
}

const headingCache = new Map<string, ReadonlySet<string>>();

/** Section numbers a Markdown document defines (headings and numbered items). */
function sectionsOf(file: string): ReadonlySet<string> {
  let s = headingCache.get(file);
  if (s === undefined) {
    const found = new Set<string>();
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      const h = /^#{1,6}\s+(?:§\s*)?(\d+(?:\.\d+)*)\.?\s/.exec(line);
      if (h) found.add(h[1] as string);
      const item = /^(\d+)\.\s/.exec(line);
      if (item) found.add(item[1] as string);
    }
    s = found;
    headingCache.set(file, s);
  }
  return s;
}

/**
 * Checks every citation in the repository's source comments.
 *
 * @param root - repository root.
 * @returns the problems, empty when every citation resolves.
 */
export function checkCitations(root: string): CitationProblem[] {
  const problems: CitationProblem[] = [];
  for (const file of citingFiles(root)) {
    const rel = path.relative(root, file);
    let inBlock = false;
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        const c = commentOf(line, inBlock, file.endsWith('.py'));
        inBlock = c.inBlock;
        if (c.text === null) return;
        const report = (citation: string, message: string): void => {
          problems.push({ file: rel, line: i + 1, citation, message });
        };
        const resolve = (citation: string, cited: string, section: string | undefined): void => {
          if (!cited.startsWith('./') && !cited.startsWith('../')) return report(citation, `names ${cited} without a relative path from this file`);
          const target = path.resolve(path.dirname(file), cited);
          if (!existsSync(target)) return report(citation, `${cited} does not exist (resolved to ${path.relative(root, target)})`);
          if (section !== undefined && !sectionsOf(target).has(section)) report(citation, `${path.relative(root, target)} has no section ${section}`);
        };
        // Markdown links first: the link target is what must resolve, the text may name the section.
        const plain = c.text.replace(MARKDOWN_LINK, (whole, text: string, href: string) => {
          if (/^[a-z]+:/.test(href) || !/\.md(#|$)/.test(href)) return ' ';
          resolve(whole, href.replace(/#.*$/, ''), /§\s*(\d+(?:\.\d+)*)/.exec(text)?.[1]);
          return ' ';
        });
        for (const [re, message] of FORBIDDEN) {
          const m = re.exec(plain);
          if (m) report(m[0], message);
        }
        for (const m of plain.matchAll(CITATION)) {
          if (/(https?:\/\/|\w:\/\/)\S*$/.test(plain.slice(0, m.index))) continue;
          resolve(m[0], m[1] as string, m[2]);
        }
      });
  }
  return problems;
}

/** Every Markdown document of the repository, by base name (for `--fix`). */
function documentsByName(root: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const visit = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.') || SKIP_DIRS.has(entry.name)) continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) visit(full);
      else if (entry.name.endsWith('.md')) out.set(entry.name, [...(out.get(entry.name) ?? []), full]);
    }
  };
  visit(root);
  return out;
}

/** Names the reference's specification used for documents that have another name here. */
const RENAMED: Readonly<Record<string, string>> = { 'format.md': 'packages/format/SPEC.md', 'STYLE.md': 'docs/STYLE.md' };
/** Where a bare name goes when the citing package has no document of that name ("SPEC.md" is the checkpoint format's). */
const FALLBACK: Readonly<Record<string, string>> = { 'SPEC.md': 'packages/format/SPEC.md' };

/**
 * Rewrites bare document names into relative paths where the name identifies
 * one document (the citing file's own package first).
 *
 * @param root - repository root.
 * @returns the number of citations rewritten.
 */
export function fixCitations(root: string): number {
  const docs = documentsByName(root);
  let fixed = 0;
  for (const file of citingFiles(root)) {
    const text = readFileSync(file, 'utf8');
    const pkgRoot = path.relative(root, file).split(path.sep).slice(0, 2).join(path.sep);
    let inBlock = false;
    const lines = text.split('\n').map((line) => {
      const c = commentOf(line, inBlock, file.endsWith('.py'));
      inBlock = c.inBlock;
      if (c.text === null) return line;
      return line.replace(CITATION, (whole, cited: string) => {
        if (cited.startsWith('./') || cited.startsWith('../')) return whole;
        const base = path.basename(cited);
        let target: string | undefined;
        if (cited.includes('/') && existsSync(path.join(root, cited))) target = path.join(root, cited);
        else if (RENAMED[base] !== undefined) target = path.join(root, RENAMED[base]);
        else {
          const all = docs.get(base) ?? [];
          const own = all.filter((d) => d.startsWith(path.join(root, pkgRoot) + path.sep));
          const candidates = own.length > 0 ? own : all;
          if (candidates.length === 1) target = candidates[0];
          else if (own.length === 0 && FALLBACK[base] !== undefined) target = path.join(root, FALLBACK[base]);
        }
        if (target === undefined) return whole;
        let relative = path.relative(path.dirname(file), target).split(path.sep).join('/');
        if (!relative.startsWith('.')) relative = `./${relative}`;
        fixed += 1;
        return whole.replace(cited, relative);
      });
    });
    const next = lines.join('\n');
    if (next !== text) writeFileSync(file, next);
  }
  return fixed;
}

const isMain = process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  if (process.argv.includes('--fix')) console.log(`rewrote ${fixCitations(root)} citations`);
  const problems = checkCitations(root);
  for (const p of problems) console.log(`${p.file}:${p.line}: ${p.citation}: ${p.message}`);
  console.log(problems.length === 0 ? 'every citation resolves' : `${problems.length} citations do not resolve`);
  process.exitCode = problems.length === 0 ? 0 : 1;
}
