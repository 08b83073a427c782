/**
 * CI slice of the fault campaign: the fault points of one latest
 * publication are enumerated with the shim's log mode, and a sample of
 * them gets EIO / ENOSPC / short writes; each run must complete or stop with
 * a typed error, keep a loadable checkpoint and resume to identical bytes.
 * `pnpm soak` injects every fault at every point.
 */
import { describe, expect, it } from 'vitest';
import { enumerateFaultPoints, formatFaultReport, runFaultCampaign } from '../src/fault-points.ts';
import { buildFaultShim } from '../src/shim.ts';

const shim = buildFaultShim();
if ('skip' in shim) console.warn(`[reliability] ${shim.skip}`);

describe.skipIf('skip' in shim)('enumerateFaultPoints', () => {
  it('finds every call of one checkpoint publication: temporary directories, files, fsyncs, rotations, the rename into latest', async () => {
    const points = await enumerateFaultPoints();
    const labels = points.map((p) => p.label).join('\n');
    for (const want of [/^mkdir \/checkpoints\/\.tmp-latest-\*-\d+( #\d+)?$/m, /^write \/checkpoints\/\.tmp-\S+\/(state\.llmcp|job\.json)$/m, /^fsync \/checkpoints\/\.tmp-latest-\*-\d+/m, /^rename \/checkpoints\/latest → \/checkpoints\/latest\.backup( #\d+)?$/m, /^rename \/checkpoints\/\.tmp-latest-\*-\d+ → \/checkpoints\/latest( #\d+)?$/m, /^fsync \/checkpoints( #\d+)?$/m]) {
      expect(labels).toMatch(want);
    }
    for (const p of points) expect(p.nth).toBeGreaterThan(0);
  }, 60_000);
});

describe.skipIf('skip' in shim)('runFaultCampaign', () => {
  it('a sample of injected faults each ends in completion or a typed error, and the run resumes to identical bytes', async () => {
    const report = await runFaultCampaign({ sample: 5, seed: 0x5eedn });
    const text = formatFaultReport(report);
    console.log(text);
    expect(report.failures, text).toEqual([]);
    expect(report.injections).toBe(5);
    // Each injection trains, verifies and resumes a run in child processes: 60 s on an idle machine, about three times
    // that at load 20 — past the 170 s of the other slices.
  }, 300_000);
});
