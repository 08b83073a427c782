/**
 * Background persistence: the saved checkpoint is the step-boundary state
 * even while training continues; worker saves are byte-identical to inline
 * saves; a failed background save surfaces as TRAINER_SAVE_FAILED and the
 * previous checkpoint stays intact.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeCheckpoint } from '@llmcp/format';
import { CheckpointSaver } from '../src/background-saver.ts';
import { isTrainerError } from '../src/errors.ts';
import { prepareInputs } from '../src/inputs.ts';
import { createEngine } from '../src/llmcp-engine.ts';
import { trainRun } from '../src/run.ts';
import { chooseCheckpoint } from '../src/run-directory.ts';
import type { JobDraft } from '../src/save.ts';
import { canonicalDigest } from '../src/internal/canonical-json.ts';
import { smallBpe } from './helpers/configs.ts';
import { tempDir } from './helpers/run-fixture.ts';
import { finalBytes, sameBytes } from './helpers/run-files.ts';

const config = smallBpe();

describe('CheckpointSaver (worker)', () => {
  it('saves the state copied at the step boundary while the engine keeps updating', async () => {
    const inputs = await prepareInputs(config, {});
    const engine = await createEngine(config, inputs);
    for (let i = 0; i < 3; i += 1) engine.update(0.04);
    const snapshot = engine.snapshot(3, 7n);
    const expected = encodeCheckpoint(snapshot);
    const runDir = tempDir();
    const job: JobDraft = {
      step: 3,
      phase: { validated: true, audited: true },
      config,
      configDigest: canonicalDigest(config),
      inputs: inputs.identity,
      data: engine.dataState(),
      schedule: { step: 3, nextLearningRate: 0.04 },
      evaluations: [],
      best: null,
      sampling: { checkpointState: '0x0000000000000007', nextState: '0x0000000000000007', lastAuditStep: null },
      lossLog: { records: 0, bytes: 0, sha256: `sha256:${'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'}` },
      nextBatch: engine.nextBatchFingerprint(),
      run: { id: 'test', pivots: 0 },
    };
    const saver = new CheckpointSaver('worker');
    await saver.submit({ runDir, state: snapshot, job, slots: { latest: true, best: false, step: false }, audit: null, keepSteps: 0, latestIsValid: true, bestIsValid: true });
    // The request is in the worker now; training goes on and rewrites every parameter and moment.
    expect(snapshot.parameters[0]?.data.length).toBe(0); // transferred, not shared
    for (let i = 0; i < 5; i += 1) engine.update(0.04);
    const result = await saver.flush();
    await saver.close();
    await engine.dispose();
    expect(result?.step).toBe(3);
    expect(new Uint8Array(readFileSync(path.join(runDir, 'checkpoints', 'latest', 'state.llmcp')))).toEqual(expected);
    expect((await chooseCheckpoint(runDir)).chosen.job.step).toBe(3);
  });

  it('writes the same bytes as inline saves', async () => {
    const a = path.join(tempDir(), 'worker');
    const b = path.join(tempDir(), 'inline');
    await trainRun({ runDir: a, config, saveMode: 'worker' });
    await trainRun({ runDir: b, config, saveMode: 'inline' });
    expect(sameBytes(finalBytes(b), finalBytes(a))).toBeNull();
    expect(readFileSync(path.join(a, 'samples.json'))).toEqual(readFileSync(path.join(b, 'samples.json')));
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
