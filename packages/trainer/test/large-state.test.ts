/**
 * Defect 11: checkpoints beyond 2 GiB. The trainer writes `state.llmcp`
 * through the format's streaming save and reads it back through its
 * streaming load, so neither `writeSync`'s nor `readFileSync`'s 2 GiB limit
 * applies and memory stays bounded. This writes and verifies a real 2.4 GB
 * state, so it belongs to the soak set: it runs when LLMCP_SOAK=1
 * (`pnpm soak`) and is skipped with that reason otherwise.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeJob } from '../src/job.ts';
import { publishSlot, verifySlot, writeCheckpointFromState } from '../src/run-directory.ts';
import { fakeJob, fakeState, tempDir } from './helpers/fake-checkpoint.ts';

const SOAK = process.env.LLMCP_SOAK === '1';

describe.skipIf(!SOAK)('a state.llmcp over 2 GiB (soak: LLMCP_SOAK=1)', () => {
  it('is saved, published and verified through the streaming paths', async () => {
    // D1024/F4096/L6: 100.7M parameters; with both AdamW moments, about 2.42 GB of f64 records.
    const decoder = { vocabularySize: 5, modelWidth: 1024, heads: 8, feedForwardWidth: 4096, layers: 6, maxPositions: 2, ropeBase: 10000, rmsEpsilon: 1e-6 };
    const run = tempDir();
    const state = fakeState(3, decoder);
    const { tmp, facts } = await writeCheckpointFromState(run, state, (f) => encodeJob(fakeJob(3, f)), 'latest');
    expect(facts.bytes).toBeGreaterThan(2 ** 31);
    publishSlot(run, tmp, 'latest', { keepBackup: true });
    expect(statSync(path.join(run, 'checkpoints', 'latest', 'state.llmcp')).size).toBe(facts.bytes);
    const verified = await verifySlot(run, 'latest');
    expect(verified.job.state).toEqual(facts);
    expect(verified.state.parameters.at(-1)?.data.length).toBe(1024);
    expect(verified.state.optimizer.moments[0]?.second[999]).toBe(state.optimizer.moments[0]?.second[999]);
  }, 600_000);
});
