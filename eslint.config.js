// ESLint flat config. The import bans are generated from tools/layers.json, so
// the layering is declared once (check-layers.ts enforces the same rules on
// package.json and on every import; lint shows them in the editor).
import { readFileSync } from 'node:fs';
import js from '@eslint/js';
import jsdoc from 'eslint-plugin-jsdoc';
import tseslint from 'typescript-eslint';

const layers = JSON.parse(readFileSync(new URL('./tools/layers.json', import.meta.url), 'utf8'));
const dirOf = (name) => {
  if (name === '@llmcp/app-trainer') return 'apps/trainer';
  if (name === '@llmcp/app-inspector') return 'apps/inspector';
  if (name === '@llmcp/tools') return 'tools';
  return `packages/${name.slice('@llmcp/'.length)}`;
};
const all = Object.keys(layers.packages);

const layerBans = Object.entries(layers.packages).map(([name, rule]) => ({
  files: [`${dirOf(name)}/src/**/*.ts`],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          { group: all.filter((p) => p !== name && !rule.allow.includes(p)), message: `${name} may import only ${rule.allow.join(', ') || 'nothing'} (tools/layers.json)` },
          { group: ['@llmcp/*/src', '@llmcp/*/src/*'], message: "import a package's public entry point, never its sources" },
          { group: ['../../*/src/*', '../../../packages/*'], message: 'never import another package by relative path' },
          ...(layers.browserSafe.includes(name) ? [{ group: ['node:*'], message: `${name} is browser-safe: no Node built-ins` }] : []),
        ],
      },
    ],
  },
}));

/** Exported functions and the methods of exported classes. */
const EXPORTED = [
  'ExportNamedDeclaration > FunctionDeclaration',
  'ExportNamedDeclaration > VariableDeclaration > VariableDeclarator > ArrowFunctionExpression',
  'ExportNamedDeclaration > ClassDeclaration > ClassBody > MethodDefinition[accessibility!="private"][key.type!="PrivateIdentifier"]',
];

const NODE_GLOBALS = Object.fromEntries(['process', 'console', 'Buffer', 'URL', 'setTimeout', 'clearTimeout', 'setImmediate', 'TextEncoder', 'TextDecoder'].map((g) => [g, 'readonly']));

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/*.d.ts', 'interop/**', '**/test-artifacts/**', 'packages/*/native/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { jsdoc },
    rules: {
      'max-params': ['error', 3],
      'no-console': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', caughtErrors: 'none' }],
      // TSDoc on every export, with its parameters and result (internal helpers may be documented more briefly).
      'jsdoc/require-jsdoc': ['error', { publicOnly: true, require: { FunctionDeclaration: true, ClassDeclaration: true, MethodDefinition: false }, contexts: ['TSInterfaceDeclaration', 'TSTypeAliasDeclaration'] }],
      'jsdoc/require-param': ['error', { checkDestructured: false, contexts: EXPORTED }],
      'jsdoc/require-returns': ['error', { contexts: EXPORTED }],
    },
  },
  { files: ['**/*.mjs', '**/*.js'], languageOptions: { globals: NODE_GLOBALS } },
  ...layerBans,
  // The format's Node entry and Node-only tests may use Node built-ins.
  { files: ['packages/format/src/node.ts', 'packages/format/src/node/**', '**/*.node.test.ts'], rules: { 'no-restricted-imports': 'off' } },
  // Numeric kernels take (array, offset, stride, …) by design, and package-internal modules are not the surface:
  // no parameter limit, and brief docs are enough there. The entry points above them take option objects.
  {
    files: ['packages/*/src/kernels/**', 'packages/*/src/math/**', 'packages/*/src/internal/**', 'packages/*/src/parallel/**'],
    rules: { 'max-params': 'off', 'jsdoc/require-param': 'off', 'jsdoc/require-returns': 'off' },
  },
  // The model's reference layers and pass are numeric kernels that take matrices as views: at most eight parameters (STYLE §23).
  { files: ['packages/model/src/reference/**'], rules: { 'max-params': ['error', 8] } },
  // Programs and tools talk to the terminal.
  { files: ['packages/cli/**', 'apps/**', 'tools/**', '**/bench/**', '**/scripts/**'], rules: { 'no-console': 'off' } },
  // Tests: no TSDoc requirement, free-form helpers.
  { files: ['**/*.test.ts', '**/test/**', '**/e2e/**', '**/bench/**', 'tools/**'], rules: { 'jsdoc/require-jsdoc': 'off', 'jsdoc/require-param': 'off', 'jsdoc/require-returns': 'off', 'max-params': 'off', '@typescript-eslint/no-explicit-any': 'off' } },
);
