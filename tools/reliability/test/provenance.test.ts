/**
 * CI slice of the provenance campaigns (`pnpm soak` runs them in full): a
 * seeded sample of the tamperings of a signed run, each detected by
 * `llmcp verify --trust-key` with the file or link named and no false alarm
 * on the untouched run; and a signed kill loop whose run verifies, provenance
 * included, after every SIGKILL or SIGINT stop and at the end.
 */
import { describe, expect, it } from 'vitest';
import { formatKillLoopReport, runKillLoop } from '../src/kill-loop.ts';
import { formatProvenanceTamperReport, runProvenanceTamperCampaign } from '../src/provenance-tamper.ts';
import { buildFaultShim } from '../src/shim.ts';

const shim = buildFaultShim();

describe('runProvenanceTamperCampaign', () => {
  it('detects every sampled tampering of a signed run, naming the file or link, with no false alarm on the untouched run', async () => {
    const report = await runProvenanceTamperCampaign({ sample: 8, seed: 0x51c4n });
    const text = formatProvenanceTamperReport(report);
    console.log(text);
    expect(report.falseAlarms, text).toEqual([]);
    expect(report.failures, text).toEqual([]);
    expect(report.cases).toBe(8);
  }, 170_000);
});

describe.skipIf('skip' in shim)(`runKillLoop with signed checkpoints${'skip' in shim ? ` (skipped: ${shim.skip})` : ''}`, () => {
  it('verifies the provenance of the run after every SIGKILL or SIGINT stop and at the end: no false alarm, an unbroken chain, the bytes of an uninterrupted run', async () => {
    const report = await runKillLoop({ chains: 2, killsPerChain: 3, seed: 0x5191n, provenance: true });
    const text = formatKillLoopReport(report);
    console.log(text);
    expect(report.failures, text).toEqual([]);
    expect(report.provenanceFalseAlarms).toBe(0);
    expect(report.provenanceChecks, text).toBeGreaterThanOrEqual(4);
    expect(report.identical).toBe(2);
  }, 170_000);
});
