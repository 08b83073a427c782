/**
 * The torch engine's own Python tests (python/tests/test_engine.py, unittest),
 * which drive `python -m llmcp.engine` through `llmcp.engine.client` without
 * Node: a resume from the handed-over state bit for bit on 1 and 2 ranks, 1
 * and 2 ranks to rounding, evaluation, the non-finite and protocol refusals,
 * f32 state exact in f64. The trainer-side tests are
 * packages/trainer/test/torch-engine.test.ts. Skips, saying why, where Python
 * with PyTorch is absent.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PYTHON = process.env.LLMCP_PYTHON ?? '/usr/bin/python3';
const SKIP = !existsSync(PYTHON)
  ? `${PYTHON} not found (set LLMCP_PYTHON)`
  : spawnSync(PYTHON, ['-c', 'import torch, torch.distributed as d; assert d.is_gloo_available()']).status === 0
    ? null
    : `PyTorch with gloo is not importable by ${PYTHON} (Debian: apt-get install python3-torch)`;

describe.skipIf(SKIP !== null)(`the torch engine driven from Python (${SKIP ?? PYTHON})`, () => {
  it('passes python/tests/test_engine.py', () => {
    const r = spawnSync(PYTHON, [path.join(ROOT, 'python', 'tests', 'run.py'), '--only', 'test_engine'], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
    const report = `${r.stdout}\n${r.stderr}`;
    expect(r.status, report).toBe(0);
    expect(report).toMatch(/Ran 6 tests/);
    expect(report).not.toMatch(/skipped/);
  }, 600_000);
});
