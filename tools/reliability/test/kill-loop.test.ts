/**
 * CI slice of the kill loop: chains of SIGKILLed train/resume processes
 * (random times, publication renames, any file-system call), resumed to the
 * end and compared byte for byte with an uninterrupted run. `pnpm soak`
 * runs ≥ 1,000 kills.
 */
import { spawnSync } from 'node:child_process';
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

const PYTHON = process.env.LLMCP_PYTHON ?? '/usr/bin/python3';
const TORCH = spawnSync(PYTHON, ['-c', 'import torch, torch.distributed as d; assert d.is_gloo_available()']).status === 0;
if (!TORCH) console.warn(`[reliability] the torch engine's kill loop skips: PyTorch with gloo is not importable by ${PYTHON}`);

describe.skipIf('skip' in shim || !TORCH)('runKillLoop with the torch engine', () => {
  it.each([1, 2])('%i rank(s): SIGKILLs of the trainer and of single ranks resume to the bytes of an uninterrupted torch run; no rank outlives its trainer', async (worldSize) => {
    const report = await runKillLoop({ chains: 1, killsPerChain: 4, seed: 0x70c4n + BigInt(worldSize), engine: { worldSize, python: PYTHON } });
    const text = formatKillLoopReport(report);
    console.log(text);
    expect(report.failures, text).toEqual([]);
    expect(report.kills, text).toBeGreaterThanOrEqual(2);
    expect(report.identical).toBe(1);
    expect(report.ranksWatched).toBeGreaterThanOrEqual(worldSize);
    expect(report.orphans).toBe(0);
  }, 900_000);
});
