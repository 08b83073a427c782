/**
 * CI slice of run-directory tampering (a seeded sample of the generated
 * cases; `pnpm soak` runs them all): verify, status and resume on a tampered
 * copy of a stopped run give typed errors or a correct resume.
 */
import { describe, expect, it } from 'vitest';
import { formatTamperReport, runTamperCampaign } from '../src/tamper.ts';
import { buildFaultShim } from '../src/shim.ts';

const shim = buildFaultShim();
if ('skip' in shim) console.warn(`[reliability] ${shim.skip}`);

describe.skipIf('skip' in shim)('runTamperCampaign', () => {
  it('every sampled tampering ends in a typed error or a correct resume, never an untyped error, a hang or a silent restart', async () => {
    const report = await runTamperCampaign({ sample: 6, seed: 0x7a3en });
    const text = formatTamperReport(report);
    console.log(text);
    expect(report.failures, text).toEqual([]);
    expect(report.cases).toBe(6);
  }, 170_000);
});
