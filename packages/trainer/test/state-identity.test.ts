/**
 * How `job.json` names its `state.llmcp` (job format `llmcp-job/3`): by size
 * and LLMCP35 checksum, the checksum the format computes while it encodes and
 * verifies over every byte while it loads. A save takes no second hash of the
 * state bytes (no SHA-256 pass); the pairing still refuses a state file of
 * another size, another checksum, or another valid checkpoint of the same
 * size; and jobs of `llmcp-job/2` (which record a SHA-256 of the state) still
 * verify and resume, their SHA-256 checked.
 *
 * The SHA-256 hashers are observed through a module mock of `node:crypto`
 * scoped to this file (vitest isolates each test file's module registry), so
 * nothing global is patched.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createHash as realCreateHash } from 'node:crypto';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { decodeCheckpoint, encodeCheckpoint } from '@llmcp/format';
import { decodeJob, encodeJob, JOB_FORMAT, JOB_FORMAT_V2, sealJob, type Job } from '../src/job.ts';
import { chooseCheckpoint, publishSlot, verifyPairing, verifySlot, writeCheckpointFromState, writeSlot } from '../src/run-directory.ts';
import { performSave, type SaveRequest } from '../src/save.ts';
import { resumeRun } from '../src/run.ts';
import { isTrainerError } from '../src/errors.ts';
import { fakeCheckpoint, fakeCheckpointV2, fakeJob, fakeState } from './helpers/fake-checkpoint.ts';
import { smallBpe } from './helpers/configs.ts';
import { stoppedRun, tempDir, trainedRun } from './helpers/run-fixture.ts';
import { asWrittenBeforeManifests } from './helpers/run-files.ts';

/** Bytes fed to each SHA-256 hasher created while `observing` is on. */
const sha256Feeds = vi.hoisted(() => ({ observing: false, hashers: [] as number[] }));

vi.mock('node:crypto', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:crypto')>();
  const createHash = (...args: Parameters<typeof actual.createHash>): ReturnType<typeof actual.createHash> => {
    const hash = actual.createHash(...args);
    if (!sha256Feeds.observing || args[0].toLowerCase() !== 'sha256') return hash;
    const index = sha256Feeds.hashers.push(0) - 1;
    const update = hash.update.bind(hash) as (data: unknown, encoding?: unknown) => typeof hash;
    hash.update = ((data: unknown, encoding?: unknown) => {
      sha256Feeds.hashers[index] = (sha256Feeds.hashers[index] ?? 0) + (typeof data === 'string' ? Buffer.byteLength(data, encoding as BufferEncoding | undefined) : (data as ArrayBufferView).byteLength);
      return update(data, encoding);
    }) as typeof hash.update;
    return hash;
  };
  return { ...actual, default: { ...actual, createHash }, createHash };
});

afterEach(() => {
  sha256Feeds.observing = false;
  sha256Feeds.hashers.length = 0;
});

/** Runs `action` and returns the byte counts of the SHA-256 hashers it created. */
async function sha256InputsOf(action: () => Promise<unknown>): Promise<number[]> {
  sha256Feeds.hashers.length = 0;
  sha256Feeds.observing = true;
  try {
    await action();
  } finally {
    sha256Feeds.observing = false;
  }
  return [...sha256Feeds.hashers];
}

/** A state of a few hundred kilobytes: far larger than any job.json. */
const WIDE = { vocabularySize: 5, modelWidth: 64, heads: 4, feedForwardWidth: 256, layers: 2, maxPositions: 2, ropeBase: 10000, rmsEpsilon: 1e-6 };

function saveRequest(runDir: string, step: number): SaveRequest {
  const { state: _state, digest: _digest, format: _format, ...draft } = fakeJob(step, { bytes: 0, checksum: 'fnv1a64:0000000000000000' });
  return {
    runDir,
    state: fakeState(step, WIDE),
    job: { ...draft, inputs: { ...draft.inputs } },
    slots: { latest: true, best: false, step: true },
    audit: null,
    retention: { keepSteps: 2, keepEvery: null },
    latestIsValid: true,
    bestIsValid: true,
  };
}

async function refusal(promise: Promise<unknown>): Promise<{ code: string; message: string; fields: readonly string[] }> {
  try {
    await promise;
  } catch (e) {
    if (isTrainerError(e)) return { code: e.code, message: e.message, fields: e.fields ?? [] };
    throw e;
  }
  throw new Error('expected a TrainerError');
}

/** Rewrites `job.json` of a slot with `change` applied and the digest resealed (a consistent, well-formed job). */
function resealJob(runDir: string, slot: string, change: (job: Job) => Job): void {
  const file = path.join(runDir, 'checkpoints', slot, 'job.json');
  writeFileSync(file, encodeJob(sealJob(change(decodeJob(new Uint8Array(readFileSync(file)))))));
}

/** The job as the previous trainer wrote it (`llmcp-job/2`): the SHA-256 of the slot's state file added, and no provenance manifest. */
function asV2(runDir: string, slot: string): void {
  asWrittenBeforeManifests(runDir);
  const stateBytes = readFileSync(path.join(runDir, 'checkpoints', slot, 'state.llmcp'));
  resealJob(runDir, slot, (job) => ({ ...job, format: JOB_FORMAT_V2, state: { ...job.state, sha256: `sha256:${realCreateHash('sha256').update(stateBytes).digest('hex')}` } }));
}

describe('a save hashes the state bytes once (the format\'s LLMCP35 checksum) and takes no SHA-256 of them', () => {
  it('performSave: every SHA-256 it takes is of a job-sized input, never of the state file', async () => {
    const run = tempDir();
    const hashed = await sha256InputsOf(() => performSave(saveRequest(run, 3)));
    const stateBytes = readFileSync(path.join(run, 'checkpoints', 'latest', 'state.llmcp')).length;
    const jobBytes = readFileSync(path.join(run, 'checkpoints', 'latest', 'job.json')).length;
    expect(stateBytes).toBeGreaterThan(20 * jobBytes);
    // The job's own digest is a SHA-256 (so the observer sees the save's hashers); none is fed the state.
    expect(hashed.length).toBeGreaterThan(0);
    expect(hashed.reduce((a, b) => a + b, 0)).toBeLessThan(stateBytes);
    const job = decodeJob(new Uint8Array(readFileSync(path.join(run, 'checkpoints', 'latest', 'job.json'))));
    expect(job.format).toBe(JOB_FORMAT);
    expect(job.state).toEqual({ bytes: stateBytes, checksum: decodeCheckpoint(new Uint8Array(readFileSync(path.join(run, 'checkpoints', 'latest', 'state.llmcp')))).layout.checksumLabel });
    expect((await verifySlot(run, 'step_000003')).job.digest).toBe(job.digest);
  });

  it('writeCheckpointFromState: the facts are size and checksum only, and verifying the slot takes no SHA-256 of the state either', async () => {
    const run = tempDir();
    const state = fakeState(2, WIDE);
    let facts: object = {};
    const writing = await sha256InputsOf(async () => {
      const written = await writeCheckpointFromState(run, { state, seal: (f) => encodeJob(fakeJob(2, f)) }, 'latest');
      facts = written.facts;
      publishSlot(run, { tmpDir: written.tmp, slot: 'latest' }, { keepBackup: true });
    });
    const size = readFileSync(path.join(run, 'checkpoints', 'latest', 'state.llmcp')).length;
    expect(Object.keys(facts).sort()).toEqual(['bytes', 'checksum']);
    expect(writing.reduce((a, b) => a + b, 0)).toBeLessThan(size);
    const loading = await sha256InputsOf(() => verifySlot(run, 'latest'));
    expect(loading.reduce((a, b) => a + b, 0)).toBeLessThan(size);
  });
});

describe('llmcp-job/3 pairing: size and the LLMCP35 checksum the load verified', () => {
  it('refuses a job whose size differs, whose checksum differs, or both, naming the fields and both values', async () => {
    const run = tempDir();
    writeSlot(run, { slot: 'latest', ...fakeCheckpoint(3) }, { keepBackup: true });
    const good = decodeJob(new Uint8Array(readFileSync(path.join(run, 'checkpoints', 'latest', 'job.json'))));
    const { bytes, checksum } = good.state;

    resealJob(run, 'latest', (job) => ({ ...job, state: { bytes: bytes + 8, checksum } }));
    const size = await refusal(verifySlot(run, 'latest'));
    expect(size).toMatchObject({ code: 'TRAINER_PAIR_MISMATCH', fields: ['state.bytes'] });
    expect(size.message).toBe(`latest: job.json and state.llmcp are not a pair: state file expected ${checksum} (${bytes + 8} bytes) (from job.json), found ${checksum} (${bytes} bytes) (in state.llmcp)`);

    resealJob(run, 'latest', (job) => ({ ...job, state: { bytes, checksum: 'fnv1a64:0000000000000001' } }));
    const sum = await refusal(verifySlot(run, 'latest'));
    expect(sum).toMatchObject({ code: 'TRAINER_PAIR_MISMATCH', fields: ['state.checksum'] });
    expect(sum.message).toContain(`state file expected fnv1a64:0000000000000001 (${bytes} bytes) (from job.json), found ${checksum} (${bytes} bytes) (in state.llmcp)`);

    resealJob(run, 'latest', (job) => ({ ...job, state: { bytes: 1, checksum: 'fnv1a64:0000000000000001' } }));
    expect(await refusal(verifySlot(run, 'latest'))).toMatchObject({ code: 'TRAINER_PAIR_MISMATCH', fields: ['state.bytes', 'state.checksum'] });

    resealJob(run, 'latest', (job) => ({ ...job, state: good.state }));
    expect((await verifySlot(run, 'latest')).job.digest).toBe(good.digest);
  });

  it('refuses a state file replaced by another valid checkpoint of the same size (and of another size)', async () => {
    const run = tempDir();
    writeSlot(run, { slot: 'latest', ...fakeCheckpoint(5) }, { keepBackup: true });
    const file = path.join(run, 'checkpoints', 'latest', 'state.llmcp');
    const job = decodeJob(new Uint8Array(readFileSync(file.replace('state.llmcp', 'job.json'))));
    // Same step and sampling state, other values, same size: only the checksum tells them apart.
    const other = fakeState(5);
    const twin = encodeCheckpoint({ ...other, parameters: other.parameters.map((p, i) => (i === 0 ? { ...p, data: p.data.map((x) => x + 0.5) } : p)) });
    expect(twin.length).toBe(job.state.bytes);
    writeFileSync(file, twin);
    const same = await refusal(verifySlot(run, 'latest'));
    expect(same).toMatchObject({ code: 'TRAINER_PAIR_MISMATCH', fields: ['state.checksum'] });
    expect(same.message).toContain(`expected ${job.state.checksum} (${job.state.bytes} bytes) (from job.json), found ${decodeCheckpoint(twin).layout.checksumLabel} (${twin.length} bytes)`);

    const bigger = encodeCheckpoint(fakeState(5, WIDE));
    writeFileSync(file, bigger);
    expect(await refusal(verifySlot(run, 'latest'))).toMatchObject({ code: 'TRAINER_PAIR_MISMATCH', fields: ['state.bytes', 'state.checksum'] });

    // A damaged byte is the load's to refuse (the LLMCP35 checksum over every byte), before any pairing.
    const damaged = encodeCheckpoint(fakeState(5));
    damaged[damaged.length - 3] = (damaged[damaged.length - 3] as number) ^ 1;
    writeFileSync(file, damaged);
    expect(await refusal(verifySlot(run, 'latest'))).toMatchObject({ code: 'TRAINER_STATE_INVALID' });
  });
});

describe('llmcp-job/2 jobs (the SHA-256 of the state recorded) are still read, their SHA-256 checked', () => {
  it('verifies a v2 slot by its SHA-256 (one hash of the state, at load) and refuses a v2 SHA-256 that disagrees', async () => {
    const run = tempDir();
    const v2 = fakeCheckpointV2(4);
    expect(v2.job.format).toBe(JOB_FORMAT_V2);
    expect(JSON.parse(new TextDecoder().decode(v2.jobBytes)).state).toEqual({ bytes: v2.stateBytes.length, sha256: expect.stringMatching(/^sha256:[0-9a-f]{64}$/), checksum: expect.any(String) });
    writeSlot(run, { slot: 'latest', ...v2 }, { keepBackup: true });
    const hashed = await sha256InputsOf(() => verifySlot(run, 'latest'));
    expect(hashed).toContain(v2.stateBytes.length);
    expect((await verifySlot(run, 'latest')).job.format).toBe(JOB_FORMAT_V2);

    resealJob(run, 'latest', (job) => ({ ...job, state: { ...job.state, sha256: `sha256:${'0'.repeat(64)}` } }));
    const r = await refusal(verifySlot(run, 'latest'));
    expect(r).toMatchObject({ code: 'TRAINER_PAIR_MISMATCH', fields: ['state.sha256'] });
    expect(r.message).toMatch(new RegExp(`state file expected sha256:0{64} \\(${v2.stateBytes.length} bytes\\) \\(from job\\.json\\), found sha256:[0-9a-f]{64} \\(${v2.stateBytes.length} bytes\\)`));

    // A v2 state file replaced by another valid checkpoint of the same size: the SHA-256 refuses it.
    const run2 = tempDir();
    writeSlot(run2, { slot: 'latest', ...fakeCheckpointV2(5) }, { keepBackup: true });
    const other = fakeState(5);
    writeFileSync(path.join(run2, 'checkpoints', 'latest', 'state.llmcp'), encodeCheckpoint({ ...other, parameters: other.parameters.map((p, i) => (i === 0 ? { ...p, data: p.data.map((x) => x + 0.5) } : p)) }));
    expect(await refusal(verifySlot(run2, 'latest'))).toMatchObject({ code: 'TRAINER_PAIR_MISMATCH', fields: ['state.sha256'] });
  });

  it('verifyPairing asks for the SHA-256 a v2 job pairs by (a caller that did not compute it is a programming error)', () => {
    const v2 = fakeCheckpointV2(2);
    const state = decodeCheckpoint(v2.stateBytes);
    const facts = { bytes: v2.stateBytes.length, checksum: state.layout.checksumLabel };
    expect(() => verifyPairing({ job: v2.job, state, facts }, 'latest')).toThrow(TypeError);
    expect(() => verifyPairing({ job: v2.job, state, facts: { ...facts, sha256: String(v2.job.state.sha256) } }, 'latest')).not.toThrow();
    const v3 = fakeCheckpoint(2);
    expect(() => verifyPairing({ job: v3.job, state, facts }, 'latest')).not.toThrow();
  });

  it('a run whose checkpoints are all llmcp-job/2 resumes bit for bit, and writes llmcp-job/3 from then on', async () => {
    const reference = await trainedRun(smallBpe(), 'reference');
    const { dir } = await stoppedRun(smallBpe(), 12);
    const { report } = await chooseCheckpoint(dir);
    const slots = report.map((r) => r.slot);
    for (const slot of slots) asV2(dir, slot);
    const choice = await chooseCheckpoint(dir);
    expect(choice.chosen.job.format).toBe(JOB_FORMAT_V2);
    expect(choice.chosen.slot).toBe('latest');
    const result = await resumeRun(dir, { saveMode: 'inline' });
    expect(result).toMatchObject({ status: 'completed', resumedFrom: 'latest' });
    const finalJob = decodeJob(new Uint8Array(readFileSync(path.join(dir, 'checkpoints', 'latest', 'job.json'))));
    expect(finalJob.format).toBe(JOB_FORMAT);
    expect(finalJob.state.sha256).toBeUndefined();
    expect(readFileSync(path.join(dir, 'checkpoints', 'latest', 'state.llmcp')).equals(readFileSync(path.join(reference, 'checkpoints', 'latest', 'state.llmcp')))).toBe(true);
  });
});
