/**
 * Background persistence: the saved checkpoint is the step-boundary state
 * even while training continues; worker saves are byte-identical to inline
 * saves and report where they ran (LLMCP_SAVE_PRIORITY, refused when unknown
 * before anything is created); a failed background save surfaces as
 * TRAINER_SAVE_FAILED and the previous checkpoint stays intact.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { hasChrt, scheduleOf } from './helpers/platform.ts';
import { encodeCheckpoint } from '@llmcp/format';
import { CheckpointSaver } from '../src/background-saver.ts';
import { isTrainerError } from '../src/errors.ts';
import { prepareInputs } from '../src/inputs.ts';
import { createEngine } from '../src/llmcp-engine.ts';
import { resumeRun, trainRun } from '../src/run.ts';
import { canRestorePriority, restoreThreadPriority, SAVE_PRIORITY_ENV, SCHED_IDLE } from '../src/save-priority.ts';
import { chooseCheckpoint } from '../src/run-directory.ts';
import type { JobDraft, SaveRequest } from '../src/save.ts';
import type { TrainingEngine } from '../src/engine.ts';
import { canonicalDigest } from '../src/internal/canonical-json.ts';
import { smallBpe } from './helpers/configs.ts';
import { tempDir } from './helpers/run-fixture.ts';
import { finalBytes, sameBytes, snapshotTree } from './helpers/run-files.ts';

const config = smallBpe();

/** A save request of the state after `steps` updates, with the job fields a save needs. */
async function saveRequest(steps: number): Promise<{ request: SaveRequest; engine: TrainingEngine; expected: Uint8Array }> {
  const inputs = await prepareInputs(config, {});
  const engine = await createEngine(config, inputs);
  for (let i = 0; i < steps; i += 1) await engine.update(0.04);
  const snapshot = await engine.snapshot(steps, 7n);
  const expected = encodeCheckpoint(snapshot);
  const job: JobDraft = {
    step: steps,
    phase: { validated: true, audited: true },
    config,
    configDigest: canonicalDigest(config),
    inputs: inputs.identity,
    data: engine.dataState(),
    schedule: { step: steps, nextLearningRate: 0.04 },
    evaluations: [],
    best: null,
    sampling: { checkpointState: '0x0000000000000007', nextState: '0x0000000000000007', lastAuditStep: null },
    lossLog: { records: 0, bytes: 0, sha256: `sha256:${'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'}` },
    nextBatch: engine.nextBatchFingerprint(),
    run: { id: 'test', pivots: 0 },
  };
  const request: SaveRequest = { runDir: tempDir(), state: snapshot, job, slots: { latest: true, best: false, step: false }, audit: null, retention: { keepSteps: 0, keepEvery: null }, latestIsValid: true, bestIsValid: true };
  return { request, engine, expected };
}

describe('CheckpointSaver (worker)', () => {
  it('saves the state copied at the step boundary while the engine keeps updating', async () => {
    const { request, engine, expected } = await saveRequest(3);
    const { runDir, state: snapshot } = request;
    const saver = new CheckpointSaver('worker');
    await saver.submit(request);
    // The request is in the worker now; training goes on and rewrites every parameter and moment.
    expect(snapshot.parameters[0]?.data.length).toBe(0); // transferred, not shared
    for (let i = 0; i < 5; i += 1) await engine.update(0.04);
    const result = await saver.flush();
    await saver.close();
    await engine.dispose();
    expect(result?.step).toBe(3);
    expect(new Uint8Array(readFileSync(path.join(runDir, 'checkpoints', 'latest', 'state.llmcp')))).toEqual(expected);
    expect((await chooseCheckpoint(runDir)).chosen.job.step).toBe(3);
  });

  it.skipIf(!hasChrt || !canRestorePriority())('gives an idle save thread the training threads’ priority back while a save is waited for, and idles it again before it answers', async () => {
    const restored: number[] = [];
    const whileWaited: { policy: number; nice: number }[] = [];
    const saved = new Set<string>();
    const saver = new CheckpointSaver('worker', {
      priority: 'idle',
      restorePriority: (tid) => {
        restored.push(tid);
        const ok = restoreThreadPriority(tid);
        whileWaited.push(scheduleOf(tid));
        return ok;
      },
    });
    try {
      const first = await saveRequest(2);
      await saver.submit(first.request);
      // Waited for at once: the worker is still starting (its answer is a macrotask, flush runs before it).
      const result = await saver.flush();
      await first.engine.dispose();
      expect(result?.step).toBe(2);
      expect(new Uint8Array(readFileSync(path.join(first.request.runDir, 'checkpoints', 'latest', 'state.llmcp')))).toEqual(first.expected);
      expect(restored.length).toBe(1);
      expect(saver.restoredSaves).toBe(1);
      const tid = restored[0] as number;
      expect(whileWaited).toEqual([{ policy: 0, nice: 0 }]);
      // Before it answered, the save thread dropped to idle again for the next save.
      expect(scheduleOf(tid)).toEqual({ policy: SCHED_IDLE, nice: 10 });
      // The next save, not waited for, runs idle.
      const second = await saveRequest(3);
      await saver.submit(second.request);
      expect(saver.busy).toBe(true);
      await new Promise<void>((resolve) => {
        const check = (): void => {
          if (!saver.busy) resolve();
          else setImmediate(check);
        };
        check();
      });
      await second.engine.dispose();
      saved.add(String(saver.thread));
      expect(scheduleOf(tid)).toEqual({ policy: SCHED_IDLE, nice: 10 });
      expect(restored.length).toBe(1);
      expect([...saved]).toEqual(['idle']);
      expect(new Uint8Array(readFileSync(path.join(second.request.runDir, 'checkpoints', 'latest', 'state.llmcp')))).toEqual(second.expected);
    } finally {
      await saver.close();
    }
  });

  it.skipIf(!hasChrt)('makes an idle save urgent after hurryAfterSteps steps in flight, before anyone waits for it', async () => {
    for (const steps of [1, 2]) {
      const restored: number[] = [];
      const saver = new CheckpointSaver('worker', { priority: 'idle', hurryAfterSteps: 2, restorePriority: (tid) => restored.push(tid) > 0 });
      try {
        const { request, engine } = await saveRequest(1);
        await saver.submit(request);
        for (let i = 0; i < steps; i += 1) saver.stepDone();
        // The worker's first message (its thread id) comes before its answer: once it is in, an urgent save has been restored.
        await new Promise<void>((resolve) => {
          const check = (): void => {
            if (saver.thread !== null) resolve();
            else setImmediate(check);
          };
          check();
        });
        expect(restored.length).toBe(steps === 2 ? 1 : 0);
        await saver.flush();
        await engine.dispose();
        // Waiting makes it urgent too, once per save.
        expect(restored.length).toBe(1);
      } finally {
        await saver.close();
      }
    }
  });

  it('writes the same bytes as inline saves, and says where each save ran', async () => {
    const a = path.join(tempDir(), 'worker');
    const b = path.join(tempDir(), 'inline');
    const threads = { worker: new Set<string>(), inline: new Set<string>() };
    await trainRun({ runDir: a, config, saveMode: 'worker', onEvent: (e) => e.type === 'checkpoint-saved' && threads.worker.add(e.saveThread) });
    await trainRun({ runDir: b, config, saveMode: 'inline', onEvent: (e) => e.type === 'checkpoint-saved' && threads.inline.add(e.saveThread) });
    expect(sameBytes(finalBytes(b), finalBytes(a))).toBeNull();
    expect(readFileSync(path.join(a, 'samples.json'))).toEqual(readFileSync(path.join(b, 'samples.json')));
    expect([...threads.inline]).toEqual(['inline']);
    expect([...threads.worker]).toEqual([process.platform !== 'linux' ? 'normal' : hasChrt && canRestorePriority() ? 'idle' : 'low']);
  });

  it(`${SAVE_PRIORITY_ENV}=low runs the save thread niced only, with the same bytes`, async () => {
    const a = path.join(tempDir(), 'low');
    const b = path.join(tempDir(), 'inline');
    const threads = new Set<string>();
    const saved = process.env[SAVE_PRIORITY_ENV];
    process.env[SAVE_PRIORITY_ENV] = 'low';
    try {
      await trainRun({ runDir: a, config, saveMode: 'worker', onEvent: (e) => e.type === 'checkpoint-saved' && threads.add(e.saveThread) });
    } finally {
      if (saved === undefined) delete process.env[SAVE_PRIORITY_ENV];
      else process.env[SAVE_PRIORITY_ENV] = saved;
    }
    await trainRun({ runDir: b, config, saveMode: 'inline' });
    expect(sameBytes(finalBytes(b), finalBytes(a))).toBeNull();
    expect([...threads]).toEqual([process.platform === 'linux' ? 'low' : 'normal']);
  });

  it(`refuses an unknown ${SAVE_PRIORITY_ENV} before it touches anything (train and resume)`, async () => {
    const parent = tempDir();
    const fresh = path.join(parent, 'fresh');
    const existing = path.join(parent, 'existing');
    await trainRun({ runDir: existing, config: { ...config, steps: 10 }, saveMode: 'inline' });
    const before = snapshotTree(existing);
    const saved = process.env[SAVE_PRIORITY_ENV];
    const codes: unknown[] = [];
    process.env[SAVE_PRIORITY_ENV] = 'lowest';
    try {
      for (const start of [() => trainRun({ runDir: fresh, config, saveMode: 'worker' }), () => resumeRun(existing, { steps: 20 })]) {
        try {
          await start();
          codes.push('started');
        } catch (e) {
          codes.push(isTrainerError(e) && e.message.includes(SAVE_PRIORITY_ENV) && e.message.includes('"lowest"') ? e.code : e);
        }
      }
      // Inline saves do not read it.
      await trainRun({ runDir: path.join(parent, 'inline'), config: { ...config, steps: 10 }, saveMode: 'inline' });
    } finally {
      if (saved === undefined) delete process.env[SAVE_PRIORITY_ENV];
      else process.env[SAVE_PRIORITY_ENV] = saved;
    }
    expect(codes).toEqual(['TRAINER_CONFIG_INVALID', 'TRAINER_CONFIG_INVALID']);
    expect(existsSync(fresh)).toBe(false);
    expect(snapshotTree(existing)).toEqual(before);
  });

  it('surfaces a failed background save as TRAINER_SAVE_FAILED and keeps the previous checkpoint', async () => {
    const dir = path.join(tempDir(), 'run');
    const checkpoints = path.join(dir, 'checkpoints');
    let error: unknown = null;
    try {
      await trainRun({
        runDir: dir,
        config,
        saveMode: 'worker',
        onEvent: (e) => {
          if (e.type === 'checkpoint-saved' && e.step === 10) {
            // The step-10 save is complete and none is in flight. Now the disk "fails": checkpoints/ is
            // replaced by a plain file, so the next save (step 15's best or step 20's cadence) cannot write.
            renameSync(checkpoints, `${checkpoints}.saved`);
            writeFileSync(checkpoints, 'not a directory');
          }
        },
      });
    } catch (e) {
      error = e;
    }
    expect(isTrainerError(error) && error.code).toBe('TRAINER_SAVE_FAILED');
    expect((error as Error).message).toMatch(/a checkpoint save failed; the previous checkpoint is intact: .*(ENOTDIR|EEXIST|not a directory)/);
    renameSync(checkpoints, `${checkpoints}.file`);
    renameSync(`${checkpoints}.saved`, checkpoints);
    expect((await chooseCheckpoint(dir)).chosen.job.step).toBe(10);
  });
});
