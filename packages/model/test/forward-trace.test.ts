import { afterAll, describe, expect, it } from 'vitest';
import { setGemmBackend } from '../src/index.ts';
import { forwardTraceChecks } from './helpers/forward-trace.ts';
import { firstMismatch } from './helpers/bits.ts';

afterAll(() => setGemmBackend('auto'));

describe.each(['auto', 'scalar', 'simd'] as const)('forward-trace.json (model.md §15, backward.md §6), %s matrix products', (backend) => {
  setGemmBackend(backend);
  const checks = forwardTraceChecks();
  setGemmBackend('auto');

  it('covers every activation, every tape node adjoint and every gradient', () => {
    // 36 activations + 71 non-constant tape nodes + loss/scale + 11 gradients.
    expect(checks.length).toBe(120);
  });

  it('reproduces every activation, adjoint and gradient bit for bit (first divergence named)', () => {
    const first = checks.map((c) => firstMismatch(c.name, c.actual, c.expected)).find((m) => m !== null) ?? null;
    expect(first).toBeNull();
  });
});
