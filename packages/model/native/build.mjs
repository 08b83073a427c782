#!/usr/bin/env node
/**
 * Builds the optional native kernels (native/kernels.c → native/build/llmcp_kernels.node)
 * with the system C compiler, against the Node-API headers of `node-api-headers`.
 *
 * Run by the package's `install` script. It never fails the install: without a
 * compiler (or on any error) it prints one note and exits 0, and @llmcp/model
 * then uses its WebAssembly kernels (identical bits, slower).
 *
 * Flags: -O3 -ffp-contract=off (no fused multiply-add: the bits depend on it),
 * never -ffast-math. `CC` chooses the compiler (default: cc, then gcc, then clang).
 * `LLMCP_NATIVE_BUILD=0` skips the build. `--strict` exits 1 on failure (for development).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const source = path.join(here, 'kernels.c');
const outDir = path.join(here, 'build');
const output = path.join(outDir, 'llmcp_kernels.node');
const strict = process.argv.includes('--strict');

/** The flags, in one place (the README quotes them). */
export const CFLAGS = ['-O3', '-ffp-contract=off', '-fno-fast-math', '-std=gnu11', '-fPIC', '-shared', '-Wall'];

function note(message) {
  process.stdout.write(`@llmcp/model: ${message}\n`);
}

function headerDirs() {
  const dirs = [];
  try {
    const pkg = createRequire(import.meta.url).resolve('node-api-headers/package.json');
    dirs.push(path.join(path.dirname(pkg), 'include'));
  } catch {
    // not installed: fall back to the headers that come with Node itself, if any
  }
  dirs.push(path.join(path.dirname(process.execPath), '..', 'include', 'node'));
  return dirs.filter((d) => existsSync(path.join(d, 'node_api.h')));
}

function findCompiler() {
  const candidates = process.env.CC ? [process.env.CC] : ['cc', 'gcc', 'clang'];
  for (const cc of candidates) {
    const r = spawnSync(cc, ['--version'], { stdio: 'ignore' });
    if (r.status === 0) return cc;
  }
  return null;
}

function build() {
  if (process.env.LLMCP_NATIVE_BUILD === '0') return 'skipped (LLMCP_NATIVE_BUILD=0); the WebAssembly kernels will be used';
  if (process.platform === 'win32') return 'native kernels are not built on Windows; the WebAssembly kernels will be used';
  const cc = findCompiler();
  if (cc === null) return 'no C compiler found (set CC to build the native kernels); the WebAssembly kernels will be used';
  const includes = headerDirs();
  if (includes.length === 0) return 'Node-API headers not found; the WebAssembly kernels will be used';
  mkdirSync(outDir, { recursive: true });
  // Written under a temporary name, then renamed: a concurrent loader never sees half a binary.
  const tmp = path.join(outDir, `.llmcp_kernels-${process.pid}.node`);
  const args = [...CFLAGS, ...includes.map((d) => `-I${d}`), ...(process.platform === 'darwin' ? ['-undefined', 'dynamic_lookup'] : []), '-o', tmp, source];
  const r = spawnSync(cc, args, { encoding: 'utf8' });
  if (r.status !== 0) {
    rmSync(tmp, { force: true });
    const detail = `${r.error?.message ?? ''}${r.stderr ?? ''}`.trim().split('\n').slice(0, 5).join('\n  ');
    return `native kernels did not compile (${cc}); the WebAssembly kernels will be used\n  ${detail}`;
  }
  renameSync(tmp, output);
  return null;
}

let problem;
try {
  problem = build();
} catch (e) {
  problem = `native kernels not built (${e instanceof Error ? e.message : String(e)}); the WebAssembly kernels will be used`;
}
if (problem === null) note(`native kernels built: ${path.relative(process.cwd(), output) || output}`);
else note(problem);
process.exitCode = strict && problem !== null ? 1 : 0;
