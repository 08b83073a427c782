/**
 * Regression tests for the holes a hostile test campaign found in run
 * handling (the numbered defects of the reliability issue). Each test failed
 * before its fix. Process-level races driven by the libc fault shim live in
 * tools/reliability; these drive the same mechanisms in-process, through
 * injected hooks and real child processes.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeCheckpoint } from '@llmcp/format';
import { inspectCheckpoint } from '@llmcp/format/inspect';
import { isTrainerError } from '../src/errors.ts';
import { decodeJob, encodeJob, JOB_FORMAT_V2, LEGACY_JOB_FORMAT, sealJob } from '../src/job.ts';
import { formatLossRecord, LossLog, planLossLogResume, scanLossLog, type LossRecord } from '../src/loss-log.ts';
import { forkRun, pivotRun } from '../src/pivot.ts';
import { resumeRun, trainRun } from '../src/run.ts';
import { readRunManifest, writeRunManifest } from '../src/run-manifest.ts';
import { verifySlot } from '../src/run-directory.ts';
import { verifyRun } from '../src/status.ts';
import { acquireRunLock, processStartTime, setRunLockHooks } from '../src/internal/run-lock.ts';
import { makeDirectories } from '../src/internal/durable-fs.ts';
import { ch33, smallBpe } from './helpers/configs.ts';
import { lockRecord, otherProcess } from './helpers/live-owner.ts';
import { tempDir } from './helpers/run-fixture.ts';
import { asWrittenBeforeManifests, finalBytes, sameBytes, snapshotTree } from './helpers/run-files.ts';

async function failure(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await p;
  } catch (e) {
    if (isTrainerError(e)) return { code: e.code, message: e.message };
    throw e;
  }
  throw new Error('expected a TrainerError');
}

async function stoppedAt(dir: string, config: ReturnType<typeof smallBpe>, step: number, after: 'step' | 'checkpoint-saved' = 'step'): Promise<void> {
  const controller = new AbortController();
  const r = await trainRun({
    runDir: dir,
    config,
    saveMode: 'inline',
    signal: controller.signal,
    onEvent: (e) => {
      if (e.type === after && e.step === step) controller.abort();
    },
  });
  expect(r).toMatchObject({ status: 'stopped', step });
}

afterEach(() => setRunLockHooks({}));

describe('defect 2: run.lock is taken atomically and never stolen from a live or unknown owner', () => {
  it('a lock file appears with its complete owner record: hostname, pid, process start time, token', () => {
    const dir = tempDir();
    const lock = acquireRunLock(dir);
    const record = JSON.parse(readFileSync(path.join(dir, 'run.lock'), 'utf8')) as Record<string, unknown>;
    expect(record).toMatchObject({ format: 'llmcp-lock/1', host: hostname(), pid: process.pid, started: processStartTime(process.pid), token: lock.owner.token });
    // Only the lock itself is left: the temporary it was linked from is gone.
    expect(readdirSync(dir)).toEqual(['run.lock']);
    lock();
    expect(readdirSync(dir)).toEqual([]);
  });

  it.each([
    ['an empty run.lock (a writer caught between create and write)', ''],
    ['a half-written run.lock', '{"format":"llmcp-lock/1","host":'],
  ])('refuses %s as locked by an unknown owner and leaves it alone', (_what, content) => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'run.lock'), content);
    expect(() => acquireRunLock(dir)).toThrow(expect.objectContaining({ code: 'TRAINER_RUN_LOCKED', message: expect.stringMatching(/unknown owner/) }));
    expect(readFileSync(path.join(dir, 'run.lock'), 'utf8')).toBe(content);
  });

  it('never steals the lock of a live owner, even one recorded by an earlier version ({"pid":N})', () => {
    const other = otherProcess();
    try {
      const dir = tempDir();
      writeFileSync(path.join(dir, 'run.lock'), lockRecord(other.pid, processStartTime(other.pid)));
      expect(() => acquireRunLock(dir)).toThrow(expect.objectContaining({ code: 'TRAINER_RUN_LOCKED', message: expect.stringMatching(new RegExp(`process ${other.pid}`)) }));
      writeFileSync(path.join(dir, 'run.lock'), JSON.stringify({ pid: other.pid }));
      expect(() => acquireRunLock(dir)).toThrow(expect.objectContaining({ code: 'TRAINER_RUN_LOCKED' }));
    } finally {
      other.stop();
    }
  });

  it('takes over a lock whose pid is alive but belongs to another process (pid reuse), and one whose pid is gone', () => {
    const other = otherProcess();
    try {
      const dir = tempDir();
      writeFileSync(path.join(dir, 'run.lock'), lockRecord(other.pid, '1'));
      const lock = acquireRunLock(dir);
      expect(JSON.parse(readFileSync(path.join(dir, 'run.lock'), 'utf8'))).toMatchObject({ pid: process.pid, token: lock.owner.token });
      lock();
      writeFileSync(path.join(dir, 'run.lock'), lockRecord(2 ** 22 + 12345, null));
      acquireRunLock(dir)();
    } finally {
      other.stop();
    }
  });

  it('two takeovers of the same stale lock cannot both succeed (the second finds the first one alive)', () => {
    const dir = tempDir();
    const file = path.join(dir, 'run.lock');
    writeFileSync(file, lockRecord(2 ** 22 + 12345, null, 'stale'));
    const other = otherProcess();
    try {
      // While this process is about to take over, a live competitor completes its takeover first.
      setRunLockHooks({
        beforeTakeover: () => {
          setRunLockHooks({});
          rmSync(file);
          writeFileSync(file, lockRecord(other.pid, processStartTime(other.pid), 'competitor'));
        },
      });
      expect(() => acquireRunLock(dir)).toThrow(expect.objectContaining({ code: 'TRAINER_RUN_LOCKED' }));
      expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ token: 'competitor' });
      expect(readdirSync(dir).sort()).toEqual(['run.lock']);
    } finally {
      other.stop();
    }
  });

  it('an owner notices when its lock was taken from it, and its release does not remove the new owner', () => {
    const dir = tempDir();
    const lock = acquireRunLock(dir);
    lock.assertHeld();
    writeFileSync(path.join(dir, 'run.lock'), lockRecord(process.pid + 1, null, 'intruder'));
    expect(() => lock.assertHeld()).toThrow(expect.objectContaining({ code: 'TRAINER_RUN_LOCKED' }));
    lock();
    expect(JSON.parse(readFileSync(path.join(dir, 'run.lock'), 'utf8'))).toMatchObject({ token: 'intruder' });
  });

  it('a run.lock that is a directory is a typed run error, not "rm returned EISDIR"', async () => {
    const dir = path.join(tempDir(), 'run');
    await trainRun({ runDir: dir, config: ch33(), saveMode: 'inline' });
    mkdirSync(path.join(dir, 'run.lock'));
    const f = await failure(resumeRun(dir, { saveMode: 'inline' }));
    expect(f.code).toBe('TRAINER_RUN_INVALID');
    expect(f.message).toMatch(/run\.lock is not a regular file \(a directory\)/);
  });
});

describe('defect 1: a process that did not create the run directory and take its lock touches nothing', () => {
  it('a losing trainRun leaves the winner’s directory, lock and files as they were', async () => {
    const other = otherProcess();
    try {
      const dir = path.join(tempDir(), 'race');
      // The winner: created the directory, holds the lock, has begun writing.
      mkdirSync(path.join(dir, 'checkpoints'), { recursive: true });
      writeFileSync(path.join(dir, 'run.lock'), lockRecord(other.pid, processStartTime(other.pid)));
      writeFileSync(path.join(dir, 'loss.jsonl'), '');
      const before = snapshotTree(dir);
      const f = await failure(trainRun({ runDir: dir, config: ch33(), saveMode: 'inline' }));
      expect(f.code).toBe('TRAINER_RUN_LOCKED');
      expect(snapshotTree(dir)).toEqual(before);
    } finally {
      other.stop();
    }
  });

  it('a start that fails after taking the lock removes only what it created', async () => {
    const parent = tempDir();
    const dir = path.join(parent, 'a', 'b', 'run');
    // An unwritable run.json path (a directory there) fails the start after the lock.
    makeDirectories(path.join(dir, 'run.json', 'x'));
    const f = await failure(trainRun({ runDir: dir, config: ch33(), saveMode: 'inline' }));
    expect(f.code).toBe('TRAINER_RUN_INVALID');
    expect(readdirSync(dir)).toEqual(['run.json']);
  });
});

describe('defect 12: errors of the right kind, never masked', () => {
  it('a run directory path that is a regular file is a wrong-kind run error, not EEXIST', async () => {
    const file = path.join(tempDir(), 'file');
    writeFileSync(file, 'x');
    const f = await failure(trainRun({ runDir: file, config: ch33(), saveMode: 'inline' }));
    expect(f).toMatchObject({ code: 'TRAINER_RUN_INVALID', message: expect.stringMatching(/exists and is not a directory/) });
    expect(readFileSync(file, 'utf8')).toBe('x');
  });

  it('a run directory that cannot be created under /proc fails at once (Node’s recursive mkdir spins there)', async () => {
    if (!existsSync('/proc/self')) return;
    const f = await failure(trainRun({ runDir: '/proc/llmcp-x/run', config: ch33(), saveMode: 'inline' }));
    expect(f.code).toBe('TRAINER_IO');
    expect(f.message).toMatch(/cannot create the run directory.*ENOENT/);
  });

  it('a run.json that cannot be written is an I/O error, not an input error', async () => {
    const dir = path.join(tempDir(), 'run');
    await trainRun({ runDir: dir, config: ch33(), saveMode: 'inline' });
    const manifest = readRunManifest(dir);
    rmSync(path.join(dir, 'checkpoints', 'latest'), { recursive: true, force: true });
    rmSync(path.join(dir, 'checkpoints', 'latest.backup'), { recursive: true, force: true });
    // run.json's directory entry is replaced by a directory: the atomic rename over it fails.
    rmSync(path.join(dir, 'run.json'));
    mkdirSync(path.join(dir, 'run.json'));
    writeFileSync(path.join(dir, 'run.json', 'keep'), '');
    await expect(writeRunManifest(dir, manifest as NonNullable<typeof manifest>)).rejects.toMatchObject({ code: 'TRAINER_IO', message: expect.stringMatching(/cannot write .*run\.json/) });
  });

  it('a save that fails before any checkpoint exists does not claim the previous one is intact', async () => {
    const dir = path.join(tempDir(), 'run');
    // checkpoints/ is a plain file from the start: the step-0 best save fails.
    mkdirSync(dir);
    const f = await failure(
      trainRun({
        runDir: dir,
        config: ch33(),
        saveMode: 'inline',
        onEvent: (e) => {
          if (e.type === 'start') {
            rmSync(path.join(dir, 'checkpoints'), { recursive: true });
            writeFileSync(path.join(dir, 'checkpoints'), 'not a directory');
          }
        },
      }),
    );
    expect(f.code).toBe('TRAINER_SAVE_FAILED');
    expect(f.message).toMatch(/no checkpoint of this run exists yet/);
    expect(f.message).not.toMatch(/intact/);
  });

  it('a failed save is reported even when releasing the lock fails too (the cleanup error never masks it)', async () => {
    const dir = path.join(tempDir(), 'run');
    const f = await failure(
      trainRun({
        runDir: dir,
        config: ch33(),
        saveMode: 'inline',
        onEvent: (e) => {
          if (e.type === 'checkpoint-saved' && e.step === 2) {
            rmSync(path.join(dir, 'checkpoints'), { recursive: true });
            writeFileSync(path.join(dir, 'checkpoints'), 'not a directory');
            rmSync(path.join(dir, 'run.lock'));
            mkdirSync(path.join(dir, 'run.lock'));
          }
        },
      }),
    );
    expect(f.code).not.toBe('TRAINER_IO');
    expect(['TRAINER_SAVE_FAILED', 'TRAINER_RUN_LOCKED']).toContain(f.code);
  });

  it.each([
    ['samples.json is a directory', (dir: string) => {
      rmSync(path.join(dir, 'samples.json'), { force: true });
      mkdirSync(path.join(dir, 'samples.json'));
    }, /samples\.json is a directory, expected a regular file/],
    ['loss.jsonl is a directory', (dir: string) => {
      rmSync(path.join(dir, 'loss.jsonl'));
      mkdirSync(path.join(dir, 'loss.jsonl'));
    }, /loss\.jsonl is a directory, expected a regular file/],
    ['best/ is a symbolic link to best.backup/', (dir: string) => {
      rmSync(path.join(dir, 'checkpoints', 'best'), { recursive: true });
      symlinkSync('best.backup', path.join(dir, 'checkpoints', 'best'));
    }, /checkpoints\/best is a symbolic link, expected a checkpoint slot directory/],
  ])('a run directory entry of the wrong kind (%s) is refused before anything changes', async (_what, tamper, message) => {
    const dir = path.join(tempDir(), 'run');
    await stoppedAt(dir, smallBpe(), 12);
    tamper(dir);
    const before = snapshotTree(dir);
    const f = await failure(resumeRun(dir, { saveMode: 'inline' }));
    expect(f.code).toBe('TRAINER_RUN_INVALID');
    expect(f.message).toMatch(message);
    expect(snapshotTree(dir)).toEqual(before);
    // verify reports it as a typed finding instead of failing with an untyped error.
    const v = await verifyRun(dir);
    expect(v.ok).toBe(false);
  });

  it('fork --slot accepts only a slot the run has (no path traversal)', async () => {
    const dir = path.join(tempDir(), 'run');
    await stoppedAt(dir, smallBpe(), 12);
    for (const slot of ['../../etc', '../run/checkpoints/latest', '.tmp-latest-1-1', 'step_999999']) {
      const target = path.join(tempDir(), 'fork');
      const f = await failure(forkRun(dir, target, { slot }));
      expect(f.code).toBe('TRAINER_RUN_INVALID');
      expect(f.message).toMatch(/has no slot .*its slots are: .*latest/);
      expect(existsSync(target)).toBe(false);
    }
  });
});

describe('defect 4: a slot older than a recorded pivot is never resumed silently', () => {
  it('after a pivot, a damaged latest is refused instead of resuming the pre-pivot latest.backup', async () => {
    const dir = path.join(tempDir(), 'run');
    await stoppedAt(dir, smallBpe(), 20);
    await pivotRun(dir, { config: smallBpe({ steps: 60 }), changes: ['steps'], reason: 'longer' });
    const state = path.join(dir, 'checkpoints', 'latest', 'state.llmcp');
    const bytes = readFileSync(state);
    bytes[3000] = (bytes[3000] as number) ^ 0x10;
    writeFileSync(state, bytes);
    const before = snapshotTree(dir);
    const f = await failure(resumeRun(dir, { saveMode: 'inline' }));
    expect(f.code).toBe('TRAINER_NO_CHECKPOINT');
    expect(f.message).toMatch(/latest\.backup was written before pivot 1 \(step 20\)/);
    expect(snapshotTree(dir)).toEqual(before);
  });

  it('an intact pivot still resumes under the new policy', async () => {
    const dir = path.join(tempDir(), 'run');
    await stoppedAt(dir, smallBpe(), 20);
    await pivotRun(dir, { config: smallBpe({ steps: 50 }), changes: ['steps'] });
    expect(await resumeRun(dir, { saveMode: 'inline' })).toMatchObject({ status: 'completed', step: 50, resumedFrom: 'latest' });
  });
});

describe('defect 8: resume completes every piece of a step that its checkpoint says was due', () => {
  it('a run killed after its final latest/ was published finishes its step snapshot, sample audit and completed event', async () => {
    const config = smallBpe({ steps: 20 });
    const reference = path.join(tempDir(), 'reference');
    await trainRun({ runDir: reference, config, saveMode: 'inline' });
    const dir = path.join(tempDir(), 'run');
    await trainRun({ runDir: dir, config, saveMode: 'inline' });
    // What a kill right after the final `latest` rename leaves: no step_000020, the previous audit, no 'completed' event.
    rmSync(path.join(dir, 'checkpoints', 'step_000020'), { recursive: true });
    const manifest = readRunManifest(dir) as NonNullable<ReturnType<typeof readRunManifest>>;
    await writeRunManifest(dir, { ...manifest, events: manifest.events.filter((e) => e.event !== 'completed') });
    const samples = path.join(dir, 'samples.json');
    writeFileSync(samples, readFileSync(samples, 'utf8').replace('"step": 20', '"step": 10'));

    const r = await resumeRun(dir, { saveMode: 'inline' });
    expect(r.status).toBe('already-complete');
    expect([...r.repaired].sort()).toEqual(['completed event', 'samples.json', 'step_000020']);
    expect(readFileSync(samples)).toEqual(readFileSync(path.join(reference, 'samples.json')));
    expect(readFileSync(path.join(dir, 'checkpoints', 'step_000020', 'state.llmcp'))).toEqual(readFileSync(path.join(reference, 'checkpoints', 'step_000020', 'state.llmcp')));
    expect(readRunManifest(dir)?.events.at(-1)).toMatchObject({ event: 'completed', step: 20 });
    expect(sameBytes(finalBytes(reference), finalBytes(dir))).toBeNull();
    expect((await verifyRun(dir)).ok).toBe(true);
    // Idempotent: nothing left to do the second time, and nothing changes.
    const settled = snapshotTree(dir);
    expect((await resumeRun(dir, { saveMode: 'inline' })).repaired).toEqual([]);
    expect(snapshotTree(dir)).toEqual(settled);
  });

  it('a kill between latest/ and the step snapshot of a cadence step mid-run loses no snapshot', async () => {
    const config = smallBpe();
    const dir = path.join(tempDir(), 'run');
    // Stopped right after the cadence checkpoint of step 20 (latest/ and step_000020 of the same save).
    await stoppedAt(dir, config, 20, 'checkpoint-saved');
    rmSync(path.join(dir, 'checkpoints', 'step_000020'), { recursive: true });
    const controller = new AbortController();
    const r = await resumeRun(dir, {
      saveMode: 'inline',
      signal: controller.signal,
      onEvent: (e) => {
        if (e.type === 'step') controller.abort();
      },
    });
    expect(r.repaired).toEqual(['step_000020']);
    expect((await verifySlot(dir, 'step_000020')).job.step).toBe(20);
    expect(readRunManifest(dir)?.events.find((e) => e.event === 'resumed')).toMatchObject({ repaired: ['step_000020'] });
  });

  it('a run killed after a best-only save but before its first latest resumes from best/ when nothing else exists', async () => {
    const dir = path.join(tempDir(), 'run');
    await stoppedAt(dir, smallBpe(), 7);
    for (const slot of readdirSync(path.join(dir, 'checkpoints'))) if (!slot.startsWith('best')) rmSync(path.join(dir, 'checkpoints', slot), { recursive: true });
    // Remove the evidence of the stop as well: as if the process had died right after best/ of step 5.
    const manifest = readRunManifest(dir) as NonNullable<ReturnType<typeof readRunManifest>>;
    await writeRunManifest(dir, { ...manifest, events: manifest.events.filter((e) => e.event === 'created') });
    const r = await resumeRun(dir, { saveMode: 'inline' });
    expect(r).toMatchObject({ status: 'completed', resumedFrom: 'best' });
  });
});

describe('defect 10: job.json records the LLMCP35 checksum of its state, and the pairing check compares it', () => {
  it('the ch33 run records fnv1a64:2b8b6097eaed6a91, the label `llmcp inspect` shows for the golden file', async () => {
    const dir = path.join(tempDir(), 'run');
    await trainRun({ runDir: dir, config: ch33(), saveMode: 'inline' });
    const job = decodeJob(new Uint8Array(readFileSync(path.join(dir, 'checkpoints', 'latest', 'job.json'))));
    const bytes = new Uint8Array(readFileSync(path.join(dir, 'checkpoints', 'latest', 'state.llmcp')));
    expect(job.state.checksum).toBe('fnv1a64:2b8b6097eaed6a91');
    const inspected = inspectCheckpoint(bytes);
    expect(inspected.checksum?.storedLabel).toBe(job.state.checksum);
    expect(decodeCheckpoint(bytes).layout.checksumLabel).toBe(job.state.checksum);
  });

  it('a job whose checksum label disagrees with its state (resealed, so the digest holds) is refused as not a pair', async () => {
    const dir = path.join(tempDir(), 'run');
    await trainRun({ runDir: dir, config: ch33(), saveMode: 'inline' });
    const file = path.join(dir, 'checkpoints', 'latest', 'job.json');
    const job = decodeJob(new Uint8Array(readFileSync(file)));
    writeFileSync(file, encodeJob(sealJob({ ...job, state: { ...job.state, checksum: 'fnv1a64:0000000000000001' } })));
    await expect(verifySlot(dir, 'latest')).rejects.toMatchObject({
      code: 'TRAINER_PAIR_MISMATCH',
      fields: ['state.checksum'],
      message: expect.stringMatching(/state file expected fnv1a64:0000000000000001 \(\d+ bytes\) \(from job\.json\), found fnv1a64:2b8b6097eaed6a91 \(\d+ bytes\)/),
    });
    // A second-format job (the SHA-256 of the state recorded too) compares both; the trainer that wrote those left no manifest.
    asWrittenBeforeManifests(dir);
    const stateBytes = readFileSync(path.join(dir, 'checkpoints', 'latest', 'state.llmcp'));
    const sha256 = `sha256:${createHash('sha256').update(stateBytes).digest('hex')}`;
    writeFileSync(file, encodeJob(sealJob({ ...job, format: JOB_FORMAT_V2, state: { ...job.state, sha256, checksum: 'fnv1a64:0000000000000001' } })));
    await expect(verifySlot(dir, 'latest')).rejects.toMatchObject({ code: 'TRAINER_PAIR_MISMATCH', message: expect.stringMatching(/LLMCP35 checksum expected fnv1a64:0000000000000001/) });
    writeFileSync(file, encodeJob(sealJob({ ...job, format: JOB_FORMAT_V2, state: { ...job.state, sha256 } })));
    expect((await verifySlot(dir, 'latest')).job.format).toBe(JOB_FORMAT_V2);
    // A first-format job recorded a plain FNV-1a there: still read, the SHA-256 covers the bytes.
    writeFileSync(file, encodeJob(sealJob({ ...job, format: LEGACY_JOB_FORMAT, state: { ...job.state, sha256, checksum: 'fnv1a64:08bdaa2e0466e840' } })));
    expect((await verifySlot(dir, 'latest')).job.format).toBe(LEGACY_JOB_FORMAT);
  });
});

describe('defect 11: the loss log is read in bounded chunks at any size', () => {
  const record = (step: number): LossRecord => ({ step, loss: 1 / step, learningRate: 0.01, gradientNorm: 0.5, clipped: false, tokens: 8 });

  it('chunked scans and resume plans agree with the whole-file reading at every chunk size', () => {
    const dir = tempDir();
    const file = path.join(dir, 'loss.jsonl');
    const log = LossLog.create(file);
    for (let s = 1; s <= 30; s += 1) log.append(record(s), null);
    const at20 = (() => {
      const text = Array.from({ length: 20 }, (_, i) => formatLossRecord(record(i + 1), null)).join('');
      return new TextEncoder().encode(text).length;
    })();
    const position = planLossLogResume(file, { records: 0, bytes: 0, sha256: `sha256:${'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'}` });
    expect(position.orphanedRecords).toBe(30);
    log.close();
    const whole = planLossLogResume(file, { records: 0, bytes: 0, sha256: position.keep.sha256 });
    for (const chunk of [1, 2, 3, 7, 64, 1 << 20]) {
      const scan = scanLossLog(file, at20, chunk);
      expect(scan).toMatchObject({ records: 30, trailingBytes: 0, problem: null, last: { step: 30 } });
      const plan = planLossLogResume(file, { records: 20, bytes: at20, sha256: scan.prefixSha256 as string }, chunk);
      expect(plan).toMatchObject({ orphanedRecords: 10, orphanedBytes: scan.bytes - at20 });
      expect(planLossLogResume(file, whole.keep, chunk).orphanedSha256).toBe(whole.orphanedSha256);
    }
  });

  it('reports a gap, a torn tail and an overlong line without buffering the file', () => {
    const dir = tempDir();
    const file = path.join(dir, 'loss.jsonl');
    writeFileSync(file, formatLossRecord(record(1), null) + formatLossRecord(record(3), null) + '{"step":4');
    expect(scanLossLog(file, null, 5)).toMatchObject({ records: 2, trailingBytes: 9, problem: expect.stringMatching(/has step 3, expected 2/) });
    writeFileSync(file, `${'x'.repeat((1 << 20) + 10)}\n${formatLossRecord(record(2), null)}`);
    expect(scanLossLog(file, null, 4096)).toMatchObject({ records: 2, problem: expect.stringMatching(/line 1 \(byte 0\) is longer than/) });
  });

  it('a fork copies exactly the recorded prefix of the loss log, streamed', async () => {
    const dir = path.join(tempDir(), 'run');
    await stoppedAt(dir, smallBpe(), 12);
    const target = path.join(tempDir(), 'fork');
    await forkRun(dir, target, { slot: 'step_000010' });
    const job = decodeJob(new Uint8Array(readFileSync(path.join(dir, 'checkpoints', 'step_000010', 'job.json'))));
    expect(readFileSync(path.join(target, 'loss.jsonl'))).toEqual(readFileSync(path.join(dir, 'loss.jsonl')).subarray(0, job.lossLog.bytes));
    copyFileSync(path.join(target, 'loss.jsonl'), path.join(tempDir(), 'copy'));
  });
});
