import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkLayers, loadRules, type LayerRules } from './check-layers.ts';
import { scratchWorkspace } from './scratch-workspace.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const rules: LayerRules = {
  packages: {
    '@llmcp/format': { layer: 0, allow: [] },
    '@llmcp/model': { layer: 2, allow: ['@llmcp/format'] },
    '@llmcp/tools': { layer: 'tools', allow: [] },
  },
  zeroRuntimeDependencies: ['@llmcp/format'],
  browserSafe: ['@llmcp/format'],
};

function workspace(files: Record<string, string>): string {
  return scratchWorkspace('llmcp-layers-', {
    'packages/format/package.json': JSON.stringify({ name: '@llmcp/format' }),
    'packages/model/package.json': JSON.stringify({ name: '@llmcp/model', dependencies: { '@llmcp/format': 'workspace:^' } }),
    'tools/package.json': JSON.stringify({ name: '@llmcp/tools' }),
    ...files,
  });
}

describe('checkLayers', () => {
  it('finds no violation in this repository', () => {
    expect(checkLayers(root, loadRules(root))).toEqual([]);
  });

  it('accepts a downward import', () => {
    const ws = workspace({ 'packages/model/src/index.ts': "import { decodeCheckpoint } from '@llmcp/format';\n" });
    expect(checkLayers(ws, rules)).toEqual([]);
  });

  it('reports an upward import with file and line', () => {
    const ws = workspace({ 'packages/format/src/index.ts': "// a\nimport { x } from '@llmcp/model';\n" });
    const v = checkLayers(ws, rules);
    expect(v).toHaveLength(1);
    expect(v[0]).toMatchObject({ pkg: '@llmcp/format', file: 'src/index.ts', line: 2 });
  });

  it('reports an upward dependency in package.json', () => {
    const ws = workspace({ 'packages/format/package.json': JSON.stringify({ name: '@llmcp/format', devDependencies: { '@llmcp/model': 'workspace:^' } }) });
    expect(checkLayers(ws, rules).map((x) => x.message)).toEqual([expect.stringContaining('@llmcp/model')]);
  });

  it('reports any runtime dependency of a zero-dependency package', () => {
    const ws = workspace({ 'packages/format/package.json': JSON.stringify({ name: '@llmcp/format', dependencies: { tiny: '1' } }) });
    expect(checkLayers(ws, rules)[0]?.message).toContain('must have no dependencies');
  });

  it('reports deep imports and relative paths that leave the package', () => {
    const ws = workspace({
      'packages/model/src/a.ts': "import { x } from '@llmcp/format/src/codec';\nexport * from '../../format/src/index.ts';\n",
    });
    const messages = checkLayers(ws, rules).map((x) => x.message);
    expect(messages).toEqual([expect.stringContaining('deep import'), expect.stringContaining('leaves the package')]);
  });

  it('lets tests, and only tests, reach the shared fixture home and its reader by relative path', () => {
    const ws = workspace({
      'packages/model/test/a.test.ts': "import { vectorJson } from '../../../tools/fixtures.ts';\nimport g from '../../conformance/fixtures/golden-6330.json';\n",
      'packages/model/src/b.ts': "import { vectorJson } from '../../../tools/fixtures.ts';\n",
      'packages/model/test/c.test.ts': "import { x } from '../../../tools/other.ts';\n",
    });
    expect(checkLayers(ws, rules).map((v) => `${v.file}: ${v.message}`)).toEqual([
      'src/b.ts: relative import ../../../tools/fixtures.ts leaves the package directory',
      'test/c.test.ts: relative import ../../../tools/other.ts leaves the package directory',
    ]);
  });

  it('reports Node built-ins and globals in browser-safe sources but not in the node entry', () => {
    const ws = workspace({
      'packages/format/src/index.ts': "import { readFileSync } from 'node:fs';\nconst b = Buffer.from('x');\n",
      'packages/format/src/node.ts': "import { readFileSync } from 'node:fs';\nconst b = Buffer.from('x');\n",
    });
    const v = checkLayers(ws, rules);
    expect(v.map((x) => x.file)).toEqual(['src/index.ts', 'src/index.ts']);
  });

  it('lets a browser page import only the declared browser entries, and checks an entry of a Node package file by file', () => {
    const browserRules: LayerRules = {
      packages: { ...rules.packages, '@llmcp/trainer': { layer: 4, allow: ['@llmcp/format'] }, '@llmcp/app-inspector': { layer: 'app', allow: ['@llmcp/format', '@llmcp/trainer'] } },
      zeroRuntimeDependencies: ['@llmcp/format'],
      browserSafe: ['@llmcp/format'],
      browserOnly: ['@llmcp/app-inspector'],
      browserEntries: ['@llmcp/format', '@llmcp/trainer/loss-records'],
    };
    const trainer = JSON.stringify({
      name: '@llmcp/trainer',
      dependencies: { '@llmcp/format': 'workspace:^' },
      exports: { '.': { '@llmcp/source': './src/index.ts' }, './loss-records': { '@llmcp/source': './src/loss-records.ts' } },
    });
    const base = {
      'packages/trainer/package.json': trainer,
      'packages/trainer/src/index.ts': "import { readFileSync } from 'node:fs';\n",
      'packages/trainer/src/loss-records.ts': "import { parse } from './internal/json.ts';\nexport const x = parse;\n",
      'packages/trainer/src/internal/json.ts': 'export const parse = JSON.parse;\n',
      'apps/inspector/package.json': JSON.stringify({ name: '@llmcp/app-inspector', dependencies: { '@llmcp/format': 'workspace:^', '@llmcp/trainer': 'workspace:^' } }),
      'apps/inspector/src/main.ts': "import { parseLossLine } from '@llmcp/trainer/loss-records';\nimport { MAGIC } from '@llmcp/format';\n",
      // Tests and the Vite config run in Node: the whole trainer is fine there.
      'apps/inspector/e2e/page.test.ts': "import { trainRun } from '@llmcp/trainer';\nimport { readFileSync } from 'node:fs';\n",
      'apps/inspector/vite.config.ts': "import path from 'node:path';\n",
    };
    expect(checkLayers(workspace(base), browserRules)).toEqual([]);
    const bad = workspace({
      ...base,
      'apps/inspector/src/run.ts': "import { trainRun } from '@llmcp/trainer';\nimport { readFileSync } from 'node:fs';\n",
      'packages/trainer/src/internal/json.ts': "import { createHash } from 'node:crypto';\nexport const parse = JSON.parse;\n",
    });
    expect(checkLayers(bad, browserRules).map((v) => `${v.pkg} ${v.file}:${v.line} ${v.message.split(',')[0]}`)).toEqual([
      "@llmcp/trainer src/internal/json.ts:1 browser entry @llmcp/trainer/loss-records imports Node built-in node:crypto",
      "@llmcp/app-inspector src/run.ts:1 browser page imports @llmcp/trainer",
      "@llmcp/app-inspector src/run.ts:2 browser-safe package imports Node built-in node:fs",
    ]);
  });

  it('reports a package missing from layers.json', () => {
    const ws = workspace({ 'packages/rogue/package.json': JSON.stringify({ name: '@llmcp/rogue' }) });
    expect(checkLayers(ws, rules)[0]?.message).toContain('not declared');
  });
});
