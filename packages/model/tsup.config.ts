import { defineConfig } from 'tsup';

export default defineConfig({
  // The worker is its own entry so that dist/worker.js sits next to the bundle (src/parallel/pool.ts loads it).
  entry: { index: 'src/index.ts', worker: 'src/parallel/worker.ts', 'wasm-assembler': 'src/kernels/wasm-assembler.ts' },
  format: ['esm'],
  dts: { entry: { index: 'src/index.ts', 'wasm-assembler': 'src/kernels/wasm-assembler.ts' } },
  sourcemap: true,
  clean: true,
  target: 'es2022',
  platform: 'node',
  // import.meta.url locates the worker; shimmed in the CommonJS build.
  shims: true,
});
