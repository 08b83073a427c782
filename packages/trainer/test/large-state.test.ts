/**
 * Defect 11: checkpoints and loss logs beyond 2 GiB. The trainer writes `state.llmcp`
 * through the format's streaming save and reads it back through its
 * streaming load, so neither `writeSync`'s nor `readFileSync`'s 2 GiB limit
 * applies and memory stays bounded. This writes and verifies a real 2.4 GB
 * state, so it belongs to the soak set: it runs when LLMCP_SOAK=1
 * (`pnpm soak`) and is skipped with that reason otherwise.
 */
import { statSync, truncateSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeJob } from '../src/job.ts';
import { LossLog, planLossLogResume, scanLossLog } from '../src/loss-log.ts';
import { publishSlot, verifySlot, writeCheckpointFromState } from '../src/run-directory.ts';
import { fakeJob, fakeState } from './helpers/fake-checkpoint.ts';
import { tempDir } from './helpers/run-fixture.ts';

const SOAK = process.env.LLMCP_SOAK === '1';

describe.skipIf(!SOAK)('a state.llmcp over 2 GiB (soak: LLMCP_SOAK=1)', () => {
  it('is saved, published and verified through the streaming paths', async () => {
    // D1024/F4096/L6: 100.7M parameters; with both AdamW moments, about 2.42 GB of f64 records.
    const decoder = { vocabularySize: 5, modelWidth: 1024, heads: 8, feedForwardWidth: 4096, layers: 6, maxPositions: 2, ropeBase: 10000, rmsEpsilon: 1e-6 };
    const run = tempDir();
    const state = fakeState(3, decoder);
    const { tmp, facts } = await writeCheckpointFromState(run, { state, seal: (f) => encodeJob(fakeJob(3, f)) }, 'latest');
    expect(facts.bytes).toBeGreaterThan(2 ** 31);
    publishSlot(run, { tmpDir: tmp, slot: 'latest' }, { keepBackup: true });
    expect(statSync(path.join(run, 'checkpoints', 'latest', 'state.llmcp')).size).toBe(facts.bytes);
    const verified = await verifySlot(run, 'latest');
    expect(verified.job.state).toEqual(facts);
    expect(verified.state.parameters.at(-1)?.data.length).toBe(1024);
    expect(verified.state.optimizer.moments[0]?.second[999]).toBe(state.optimizer.moments[0]?.second[999]);
  }, 600_000);
});

describe.skipIf(!SOAK)('a loss.jsonl over 2 GiB (soak: LLMCP_SOAK=1)', () => {
  it('is scanned and planned in bounded memory: the records, then the damage, never a crash', () => {
    const file = path.join(tempDir(), 'loss.jsonl');
    const log = LossLog.create(file);
    for (let step = 1; step <= 100; step += 1) log.append({ step, loss: 1 / step, learningRate: 0.01, gradientNorm: 0.5, clipped: false, tokens: 8 }, null);
    const position = log.position();
    log.close();
    // A sparse tail of zero bytes takes the file past 2 GiB (readFileSync's limit) without writing it.
    truncateSync(file, 2 ** 31 + 4096);
    const scan = scanLossLog(file, position.bytes);
    expect(scan).toMatchObject({ bytes: 2 ** 31 + 4096, records: 100, prefixSha256: position.sha256 });
    expect(scan.last?.step).toBe(100);
    expect(scan.trailingBytes).toBe(2 ** 31 + 4096 - position.bytes);
    const plan = planLossLogResume(file, position);
    expect(plan).toMatchObject({ orphanedRecords: 0, orphanedBytes: 2 ** 31 + 4096 - position.bytes });
  }, 600_000);
});
