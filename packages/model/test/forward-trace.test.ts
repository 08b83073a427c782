import { describe, expect, it } from 'vitest';
import { forwardTraceChecks } from './helpers/forward-trace.ts';
import { firstMismatch } from './helpers/bits.ts';
import { KERNEL_SETS } from './helpers/kernel-sets.ts';

describe.each(KERNEL_SETS)('forward-trace.json (model.md §15, backward.md §6), $name kernels$skipped', ({ name, missing }) => {
  it.skipIf(missing)('covers every activation, every tape node adjoint and every gradient, and reproduces each bit for bit (first divergence named)', () => {
    const checks = forwardTraceChecks(name);
    // 36 activations + 71 non-constant tape nodes + loss/scale + 11 gradients.
    expect(checks.length).toBe(120);
    const first = checks.map((c) => firstMismatch(c.name, c.actual, c.expected)).find((m) => m !== null) ?? null;
    expect(first).toBeNull();
  });
});
