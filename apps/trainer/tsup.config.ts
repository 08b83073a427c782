import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { main: 'src/main.ts' },
  format: ['esm'],
  clean: true,
  target: 'es2022',
  platform: 'node',
});
