#!/usr/bin/env node
// prepack guard: a package tarball is never packed without its build output.
// Every published package runs this from its `prepack` script (npm, pnpm and
// changesets' publish all run prepack); it checks that each file the
// package's `exports`, `main`, `module`, `types` and `bin` point into `dist/`
// exists, and that a LICENSE ships, and exits 1 naming what is missing.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

const dir = process.cwd();
const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
const targets = new Set();
const collect = (v) => {
  if (typeof v === 'string') {
    if (v.startsWith('./dist/') || v.startsWith('dist/')) targets.add(v);
  } else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) if (k !== '@llmcp/source') collect(x);
  }
};
for (const field of ['exports', 'main', 'module', 'types', 'bin']) collect(pkg[field]);
const missing = [...targets].filter((t) => !existsSync(path.join(dir, t)));
if (!existsSync(path.join(dir, 'LICENSE'))) missing.push('LICENSE');
if (missing.length > 0) {
  console.error(`${pkg.name}: refusing to pack without its build output; missing ${missing.join(', ')}. Run \`pnpm build\` first.`);
  process.exit(1);
}
