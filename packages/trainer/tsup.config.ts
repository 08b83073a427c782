import { defineConfig } from 'tsup';

export default defineConfig({
  // The save worker is its own entry: background-saver.ts starts it from dist/save-worker.js.
  entry: { index: 'src/index.ts', 'save-worker': 'src/save-worker.ts', 'loss-records': 'src/loss-records.ts', provenance: 'src/provenance-entry.ts', terminal: 'src/terminal.ts', testing: 'src/testing.ts' },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'es2022',
  platform: 'node',
  shims: true,
});
