import { existsSync, readdirSync, readFileSync, truncateSync, writeFileSync, cpSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fakeCheckpoint } from '../test/helpers/fake-checkpoint.ts';
import { tempDir } from '../test/helpers/run-fixture.ts';
import { isTrainerError } from './errors.ts';
import {
  applyRetention,
  checkpointsDir,
  chooseCheckpoint,
  publishSlot,
  stepSlotName,
  verifySlot,
  writeCheckpointDirectory,
  writeSlot,
  type PublishStage,
} from './run-directory.ts';
import { removeLeftovers } from './internal/durable-fs.ts';

function publish(runDir: string, step: number, slot = 'latest'): void {
  const { stateBytes, jobBytes } = fakeCheckpoint(step);
  writeSlot(runDir, { slot, stateBytes, jobBytes }, { keepBackup: slot === 'latest' || slot === 'best' });
}

function slotFile(runDir: string, slot: string, file: string): string {
  return path.join(checkpointsDir(runDir), slot, file);
}

describe('writeSlot / publishSlot', () => {
  it('publishes latest and keeps the previous one as latest.backup, leaving no temporary entries', async () => {
    const run = tempDir();
    publish(run, 1);
    publish(run, 2);
    publish(run, 3);
    expect(readdirSync(checkpointsDir(run)).sort()).toEqual(['latest', 'latest.backup']);
    expect((await verifySlot(run, 'latest')).job.step).toBe(3);
    expect((await verifySlot(run, 'latest.backup')).job.step).toBe(2);
  });

  const stages: PublishStage[] = ['written', 'old-backup-removed', 'rotated', 'renamed', 'synced'];
  it.each(stages)('leaves a complete, loadable checkpoint when a publication crashes after stage "%s"', async (stage) => {
    const run = tempDir();
    publish(run, 1);
    publish(run, 2);
    const { stateBytes, jobBytes } = fakeCheckpoint(3);
    const tmp = writeCheckpointDirectory(run, { stateBytes, jobBytes }, 'latest');
    expect(() =>
      publishSlot(run, { tmpDir: tmp, slot: 'latest' }, {
        keepBackup: true,
        hook: (s) => {
          if (s === stage) throw new Error(`crash after ${s}`);
        },
      }),
    ).toThrow(`crash after ${stage}`);
    const { chosen, report } = (await chooseCheckpoint(run));
    const expected = stage === 'renamed' || stage === 'synced' ? 3 : 2;
    expect(chosen.job.step).toBe(expected);
    expect(report.find((r) => r.status === 'used')?.slot).toBe(chosen.slot);
    // A later publication still works and start-up clears what the crash left.
    removeLeftovers(checkpointsDir(run));
    publish(run, 4);
    expect((await chooseCheckpoint(run)).chosen.job.step).toBe(4);
    expect(readdirSync(checkpointsDir(run)).filter((n) => n.startsWith('.'))).toEqual([]);
  });

  it('never reads a torn temporary directory', async () => {
    const run = tempDir();
    publish(run, 1);
    const { stateBytes, jobBytes } = fakeCheckpoint(2);
    const tmp = writeCheckpointDirectory(run, { stateBytes, jobBytes }, 'latest');
    truncateSync(path.join(tmp, 'state.llmcp'), 100);
    expect((await chooseCheckpoint(run)).chosen.job.step).toBe(1);
  });
});

describe('chooseCheckpoint', () => {
  it('falls back to latest.backup when latest is corrupted and says why latest was refused', async () => {
    const run = tempDir();
    publish(run, 1);
    publish(run, 2);
    const state = slotFile(run, 'latest', 'state.llmcp');
    const bytes = readFileSync(state);
    bytes[bytes.length - 3] = (bytes[bytes.length - 3] as number) ^ 0x40;
    writeFileSync(state, bytes);
    const { chosen, report } = (await chooseCheckpoint(run));
    expect(chosen.slot).toBe('latest.backup');
    expect(chosen.job.step).toBe(1);
    const latest = report.find((r) => r.slot === 'latest');
    expect(latest?.status).toBe('refused');
    expect(latest?.code).toBe('TRAINER_STATE_INVALID');
    expect(latest?.reason).toMatch(/latest\/state\.llmcp is not a valid LLMCP35 checkpoint: .*checksum/i);
  });

  it('refuses a tampered job.json by digest, a truncated state, and a job/state pair from different checkpoints', async () => {
    const run = tempDir();
    publish(run, 1);
    publish(run, 2);
    const job = slotFile(run, 'latest', 'job.json');
    writeFileSync(job, readFileSync(job, 'utf8').replace('"step": 2', '"step": 5'));
    expect((await chooseCheckpoint(run)).report[0]).toMatchObject({ slot: 'latest', status: 'refused', code: 'TRAINER_JOB_INVALID' });
    expect((await chooseCheckpoint(run)).report[0]?.reason).toMatch(/SHA-256 digest check/);

    const run2 = tempDir();
    publish(run2, 1);
    publish(run2, 2);
    truncateSync(slotFile(run2, 'latest', 'state.llmcp'), 1000);
    expect((await chooseCheckpoint(run2)).report[0]).toMatchObject({ slot: 'latest', status: 'refused', code: 'TRAINER_STATE_INVALID' });
    expect((await chooseCheckpoint(run2)).report[0]?.reason).toMatch(/file length 1000/);

    const run3 = tempDir();
    publish(run3, 4);
    publish(run3, 5);
    cpSync(slotFile(run3, 'latest.backup', 'job.json'), slotFile(run3, 'latest', 'job.json'));
    // latest now holds step 4's job with step 5's state: the pair is refused, step 4's backup is used.
    const { chosen, report } = (await chooseCheckpoint(run3));
    expect(chosen.slot).toBe('latest.backup');
    const latest = report.find((r) => r.slot === 'latest');
    expect(latest?.code).toBe('TRAINER_PAIR_MISMATCH');
    // Same size, another valid checkpoint: the LLMCP35 checksums differ, and the message names both.
    expect(latest?.reason).toMatch(/not a pair: state file expected fnv1a64:[0-9a-f]{16} \((\d+) bytes\) \(from job\.json\), found fnv1a64:[0-9a-f]{16} \(\1 bytes\) \(in state\.llmcp\)/);
  });

  it('prefers a verified snapshot of the same step over an older backup', async () => {
    const run = tempDir();
    publish(run, 1);
    publish(run, 2);
    publish(run, 2, stepSlotName(2));
    truncateSync(slotFile(run, 'latest', 'state.llmcp'), 10);
    const { chosen, report } = (await chooseCheckpoint(run));
    expect(chosen.slot).toBe('step_000002');
    expect(report.map((r) => [r.slot, r.status])).toEqual([
      ['latest', 'refused'],
      ['latest.backup', 'older'],
      ['step_000002', 'used'],
    ]);
  });

  it('reports every refusal when nothing verifies', async () => {
    const run = tempDir();
    publish(run, 1);
    truncateSync(slotFile(run, 'latest', 'job.json'), 5);
    try {
      (await chooseCheckpoint(run));
      throw new Error('expected a refusal');
    } catch (e) {
      expect(isTrainerError(e) && e.code).toBe('TRAINER_NO_CHECKPOINT');
      expect((e as Error).message).toMatch(/latest: latest\/job\.json is not valid UTF-8 JSON/);
    }
  });
});

describe('applyRetention', () => {
  it('keeps the newest snapshots and never touches best or latest', async () => {
    const run = tempDir();
    for (const s of [1, 2, 3, 4, 5]) {
      publish(run, s);
      publish(run, s, stepSlotName(s));
    }
    publish(run, 1, 'best');
    const r = (await applyRetention(run, 2, 'latest'));
    expect(r.removed).toEqual(['step_000003', 'step_000002', 'step_000001']);
    expect(readdirSync(checkpointsDir(run)).sort()).toEqual(['best', 'latest', 'latest.backup', 'step_000004', 'step_000005']);
    expect((await verifySlot(run, 'best')).job.step).toBe(1);
  });

  it('keeps the newest verified checkpoint even beyond the limit', async () => {
    const run = tempDir();
    for (const s of [1, 2, 3, 4]) publish(run, s, stepSlotName(s));
    publish(run, 4);
    publish(run, 4);
    for (const slot of ['latest', 'latest.backup', 'step_000004', 'step_000003']) truncateSync(slotFile(run, slot, 'state.llmcp'), 50);
    const r = (await applyRetention(run, 1));
    expect(r.protectedSlot).toBe('step_000002');
    expect(r.kept).toEqual(['step_000004', 'step_000002']);
    expect(existsSync(path.join(checkpointsDir(run), 'step_000002'))).toBe(true);
    expect((await chooseCheckpoint(run)).chosen.slot).toBe('step_000002');
  });
});
