import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', inspect: 'src/inspect-entry.ts', node: 'src/node.ts', foreign: 'src/foreign.ts' },
  format: ['esm'],
  dts: true,
  // The Node entry needs Node types; the browser-safe build is still checked by tsconfig.json (typecheck).
  tsconfig: 'tsconfig.node.json',
  sourcemap: true,
  clean: true,
  target: 'es2022',
  platform: 'neutral',
  external: [/^node:/],
});
