import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkImportCycles, findCycles, importGraph } from './check-import-cycles.ts';
import { scratchWorkspace } from './scratch-workspace.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function workspace(files: Record<string, string>): string {
  return scratchWorkspace('llmcp-cycles-', { 'packages/p/package.json': '{"name":"@llmcp/p"}', ...files });
}

describe('checkImportCycles', () => {
  it('finds no import cycle in any package of this repository', () => {
    expect(checkImportCycles(root)).toEqual([]);
  });

  it('the cli graph is the real one: cli.ts imports the commands, and no command imports cli.ts', () => {
    const src = path.join(root, 'packages/cli/src');
    const graph = importGraph(src);
    expect(graph.get(path.join(src, 'cli.ts'))).toContain(path.join(src, 'commands/verify.ts'));
    for (const [file, targets] of graph) if (file.includes(`${path.sep}commands${path.sep}`)) expect(targets, file).not.toContain(path.join(src, 'cli.ts'));
  });

  it('reports a cycle made by a type-only import, with its files', () => {
    const ws = workspace({
      'packages/p/src/cli.ts': "import { cmd } from './commands/cmd.ts';\nexport type SetExit = (n: number) => void;\n",
      'packages/p/src/commands/cmd.ts': "import type { SetExit } from '../cli.ts';\nexport const cmd = 1;\n",
    });
    expect(checkImportCycles(ws)).toEqual([{ dir: 'packages/p', cycles: [['src/cli.ts', 'src/commands/cmd.ts', 'src/cli.ts']] }]);
  });

  it('reports a cycle through export-from and extensionless specifiers, and a self-import', () => {
    const ws = workspace({
      'packages/p/src/a.ts': "export { b } from './b';\n",
      'packages/p/src/b.ts': "import { a } from './a.js';\nexport const b = a;\n",
      'packages/p/src/self.ts': "import { x } from './self.ts';\nexport const x = 1;\n",
    });
    const found = checkImportCycles(ws);
    expect(found).toHaveLength(1);
    expect(found[0]?.cycles).toEqual([
      ['src/a.ts', 'src/b.ts', 'src/a.ts'],
      ['src/self.ts', 'src/self.ts'],
    ]);
  });

  it('accepts a diamond, a dynamic import back and an import inside a string literal', () => {
    const ws = workspace({
      'packages/p/src/top.ts': "import { l } from './left.ts';\nimport { r } from './right.ts';\n",
      'packages/p/src/left.ts': "import { base } from './base.ts';\nexport const l = base;\n",
      'packages/p/src/right.ts': "import { base } from './base.ts';\nexport const r = base;\n",
      'packages/p/src/base.ts': "export const base = 1;\nexport const later = () => import('./top.ts');\nconst s = \"import { l } from './left.ts'\";\n",
    });
    expect(checkImportCycles(ws)).toEqual([]);
  });

  it('finds a longer cycle in a bare graph', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a', 'd']],
      ['d', []],
    ]);
    expect(findCycles(graph)).toEqual([['a', 'b', 'c', 'a']]);
  });
});
