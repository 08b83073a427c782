/**
 * `llmcp verify` on a run being trained (defect 7): the verdict printed and
 * the exit code agree — ok is 0, FAILED (a failure seen while nothing
 * changed) is 1, UNSETTLED (the slots changed during every attempt: no
 * verdict) is 4, never "verification failed". It printed UNSETTLED and
 * exited 1 in 4 of 5 tries. Publications are made deterministic by the
 * slot-read hook of @llmcp/trainer/testing (latest and latest.backup swap
 * places between the two files of a read of latest).
 */
import { spawn } from 'node:child_process';
import { cpSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { publishDuringSlotReads, setSlotReadHooks } from '@llmcp/trainer/testing';
import { llmcp, tempDir } from './helpers.ts';

const tmp = tempDir('llmcp-verify-live-');
const template = path.join(tmp.dir, 'template');
// A live process that is not this one: the run.lock names it, so the run counts as being trained.
const owner = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
let n = 0;

beforeAll(async () => {
  expect((await llmcp(['train', template, '--preset', 'ch33', '--set', 'checkpoint.every=4', '--plain'])).code).toBe(0);
});
afterEach(() => setSlotReadHooks({}));
afterAll(() => {
  owner.kill('SIGKILL');
  tmp.cleanup();
});

function liveCopy(): string {
  const dir = path.join(tmp.dir, `run-${n++}`);
  cpSync(template, dir, { recursive: true });
  writeFileSync(path.join(dir, 'run.lock'), `${JSON.stringify({ format: 'llmcp-lock/1', host: hostname(), pid: owner.pid, started: null, boot: null, token: 't', since: '' })}\n`);
  return dir;
}

describe('llmcp verify <run being trained>: the verdict and the exit code agree', () => {
  it('slots replaced during a few reads: ok, exit 0 (no false failure)', async () => {
    const dir = liveCopy();
    // An even number: after an odd one latest would hold the older checkpoint, which no publication leaves
    // and the run's provenance check rightly reports (slots swapped).
    publishDuringSlotReads(2);
    const r = await llmcp(['verify', dir]);
    expect([r.code, r.stdout.split('\n')[0]]).toEqual([0, `run ${dir}: ok`]);
    expect(r.stdout).toMatch(/in use by process \d+ .*verified at a moment when no slot was changing/);
  });

  it('slots replaced during every read: UNSETTLED with exit 4, never exit 1 "verification failed", in text and JSON', async () => {
    const dir = liveCopy();
    publishDuringSlotReads(Number.POSITIVE_INFINITY);
    const r = await llmcp(['verify', dir]);
    expect([r.code, r.stdout.split('\n')[0]]).toEqual([4, `run ${dir}: UNSETTLED`]);
    const j = await llmcp(['verify', dir, '--json']);
    expect(j.code).toBe(4);
    expect(JSON.parse(j.stdout)).toMatchObject({ ok: false, run: { settled: false } });
  });

  it('a slot damaged while nothing changes: FAILED with exit 1', async () => {
    const dir = liveCopy();
    writeFileSync(path.join(dir, 'checkpoints', 'latest.backup', 'state.llmcp'), 'damaged');
    const r = await llmcp(['verify', dir]);
    expect([r.code, r.stdout.split('\n')[0]]).toEqual([1, `run ${dir}: FAILED`]);
  });
});
