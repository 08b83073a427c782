import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts' },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'es2022',
  platform: 'node',
  // manifest.ts locates fixtures/ from import.meta.url; tsup shims it in the CJS build.
  shims: true,
});
