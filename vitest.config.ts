import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { playwright } from '@vitest/browser-playwright';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';

const root = path.dirname(fileURLToPath(import.meta.url));

/**
 * Tests run on sources, not builds: every `@llmcp/*` export that has an
 * `@llmcp/source` condition is aliased to that source file.
 */
function sourceAliases(): { find: RegExp; replacement: string }[] {
  const aliases: { find: RegExp; replacement: string }[] = [];
  for (const dir of readdirSync(path.join(root, 'packages'))) {
    const pj = path.join(root, 'packages', dir, 'package.json');
    if (!existsSync(pj)) continue;
    const manifest = JSON.parse(readFileSync(pj, 'utf8')) as { name: string; exports?: Record<string, unknown> };
    for (const [sub, target] of Object.entries(manifest.exports ?? {})) {
      const source = (target as Record<string, unknown>)['@llmcp/source'];
      if (typeof source !== 'string') continue;
      const spec = sub === '.' ? manifest.name : `${manifest.name}/${sub.slice(2)}`;
      aliases.push({
        find: new RegExp(`^${spec.replace(/[/.]/g, (c) => `\\${c}`)}$`),
        replacement: path.join(root, 'packages', dir, source),
      });
    }
  }
  return aliases;
}

const NODE_ONLY = ['**/*.node.test.ts', '**/node_modules/**', '**/dist/**'];

function packageProject(dir: string): TestProjectInlineConfiguration {
  return {
    extends: true,
    test: {
      name: dir,
      root: path.join(root, 'packages', dir),
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      environment: 'node',
    },
  };
}

const packageDirs = readdirSync(path.join(root, 'packages')).filter((d) => existsSync(path.join(root, 'packages', d, 'package.json')));

const chromium = process.env.LLMCP_CHROMIUM ?? '/usr/bin/chromium';

export default defineConfig({
  resolve: { alias: sourceAliases() },
  // Checkpoint fixtures import as base64 data URLs (`golden-6330.llmcp?inline`), the same in Node and in the browser.
  assetsInclude: ['**/*.llmcp'],
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      ...packageDirs.map(packageProject),
      {
        extends: true,
        test: { name: 'tools', root: path.join(root, 'tools'), include: ['**/*.test.ts'], exclude: ['**/node_modules/**'], environment: 'node' },
      },
      {
        // The interop workspace (interop/, installed separately: `pnpm install --dir interop --frozen-lockfile`);
        // its tests skip with a message when that install is missing.
        extends: true,
        test: { name: 'interop', root: path.join(root, 'interop'), include: ['test/**/*.test.ts'], exclude: ['**/node_modules/**'], environment: 'node' },
      },
      {
        extends: true,
        test: { name: 'apps', root: path.join(root, 'apps'), include: ['*/src/**/*.test.ts', '*/test/**/*.test.ts', '*/e2e/**/*.test.ts'], exclude: ['**/node_modules/**', '**/dist/**'], environment: 'node' },
      },
      {
        extends: true,
        test: {
          name: 'format-browser',
          root: path.join(root, 'packages', 'format'),
          include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: NODE_ONLY,
          browser: {
            enabled: true,
            headless: true,
            screenshotFailures: false,
            provider: playwright({
              launchOptions: {
                executablePath: chromium,
                args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
              },
            }),
            instances: [{ browser: 'chromium' }],
          },
        },
      },
    ],
  },
});
