/**
 * CI slice of the kill loop: chains of SIGKILLed train/resume processes
 * (random times, publication renames, any file-system call), resumed to the
 * end and compared byte for byte with an uninterrupted run. `pnpm soak`
 * runs ≥ 1,000 kills.
 */
import { describe, expect, it } from 'vitest';
import { formatKillLoopReport, runKillLoop } from '../src/kill-loop.ts';
import { buildFaultShim } from '../src/shim.ts';

const shim = buildFaultShim();
if ('skip' in shim) console.warn(`[reliability] ${shim.skip}`);

describe.skipIf('skip' in shim)('runKillLoop', () => {
  it('resumes every chain of SIGKILLs to the bytes of an uninterrupted run, with no untyped error, hang or silent restart', async () => {
    const report = await runKillLoop({ chains: 3, killsPerChain: 3, seed: 0xc1n });
    const text = formatKillLoopReport(report);
    console.log(text);
    expect(report.failures, text).toEqual([]);
    expect(report.kills, text).toBeGreaterThanOrEqual(5);
    expect(report.identical).toBe(3);
  }, 170_000);
});
