/**
 * A run interrupted at several points — by an in-process stop,
 * by SIGTERM to a child process, by SIGKILL to a child process at a random
 * moment — and resumed each time ends with the same `state.llmcp`, `best/`
 * and `loss.jsonl` bytes as an uninterrupted run. For the ch33 fixture config
 * and for a small byte-level BPE config (whose epochs roll over every 15
 * steps, so interruptions land mid-epoch and exactly at epoch boundaries).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SplitMix64 } from '@llmcp/format';
import type { TrainerConfig } from '../src/config.ts';
import type { TrainerEvent } from '../src/events.ts';
import { resumeRun, trainRun, type RunResult } from '../src/run.ts';
import { verifyRun } from '../src/status.ts';
import { ch33, GOLDEN, SMALL_BPE_EPOCH, smallBpe } from './helpers/configs.ts';
import { tempDir, trainedRun } from './helpers/run-fixture.ts';
import { trainWithKills, trainWithSignals } from './helpers/child.ts';
import { finalBytes, sameBytes, type FinalBytes } from './helpers/run-files.ts';

/** Trains in-process, stopping (AbortSignal) after each listed step or evaluation batch, resuming until complete. */
async function trainWithStops(runDir: string, config: TrainerConfig, stops: readonly ({ step: number } | { evaluationAt: number; batch: number })[]): Promise<RunResult[]> {
  const pending = [...stops];
  const results: RunResult[] = [];
  let controller = new AbortController();
  const onEvent = (e: TrainerEvent): void => {
    const next = pending[0];
    if (next === undefined) return;
    const hit =
      'step' in next
        ? e.type === 'step' && e.step === next.step
        : e.type === 'evaluation-batch' && e.list === 'validation' && e.step === next.evaluationAt && e.index === next.batch;
    if (hit) {
      pending.shift();
      controller.abort();
    }
  };
  let result = await trainRun({ runDir, config, signal: controller.signal, onEvent, saveMode: 'inline' });
  results.push(result);
  while (result.status !== 'completed') {
    controller = new AbortController();
    result = await resumeRun(runDir, { signal: controller.signal, onEvent, saveMode: 'inline' });
    results.push(result);
  }
  return results;
}

async function reference(config: TrainerConfig): Promise<FinalBytes> {
  return finalBytes(await trainedRun(config));
}

describe('resume equivalence: ch33 fixture config', () => {
  const config = ch33();
  const every2 = ch33({ checkpoint: { every: 2 } });
  let uninterrupted: FinalBytes;
  let uninterruptedEvery2: FinalBytes;
  beforeAll(async () => {
    uninterrupted = await reference(config);
    uninterruptedEvery2 = await reference(every2);
  });

  it('the uninterrupted run writes the golden 6330-byte checkpoint', () => {
    expect(Buffer.compare(uninterrupted.state, GOLDEN)).toBe(0);
    expect(Buffer.compare(uninterrupted.best, GOLDEN)).toBe(0);
  });

  it('(a) in-process stops after steps 1, 2, 3, 5, 7 and mid-validation at step 4 give identical bytes', async () => {
    const dir = path.join(tempDir(), 'stops');
    const results = await trainWithStops(dir, config, [{ step: 1 }, { step: 2 }, { step: 3 }, { evaluationAt: 4, batch: 1 }, { step: 5 }, { step: 7 }]);
    expect(results.map((r) => r.status)).toEqual(['stopped', 'stopped', 'stopped', 'stopped', 'stopped', 'stopped', 'completed']);
    expect(results.map((r) => r.step)).toEqual([1, 2, 3, 4, 5, 7, 8]);
    expect(sameBytes(uninterrupted, finalBytes(dir))).toBeNull();
    expect(Buffer.compare(finalBytes(dir).best, GOLDEN)).toBe(0);
    expect((await verifyRun(dir)).ok).toBe(true);
  });

  it('(b) SIGTERM to a child process after steps 1, 3, 4, 6, 7 gives identical bytes', async () => {
    const dir = path.join(tempDir(), 'sigterm');
    const resumedFrom = await trainWithSignals(dir, config, [1, 3, 4, 6, 7], 'SIGTERM', 'inline');
    expect(resumedFrom).toEqual(['latest', 'latest', 'latest', 'latest', 'latest']);
    expect(sameBytes(uninterrupted, finalBytes(dir))).toBeNull();
  });

  it('(c) SIGKILL to a child process at random moments gives identical bytes', async () => {
    const dir = path.join(tempDir(), 'sigkill');
    const rng = new SplitMix64(2026n);
    const kills = [1, 2, 3, 4, 5, 6, 7].filter(() => rng.nextBelow(2) === 0).concat([2, 5]).sort((a, b) => a - b);
    const killed = await trainWithKills(dir, every2, kills, 25, 'inline');
    expect(killed).toBeGreaterThanOrEqual(5);
    expect(sameBytes(uninterruptedEvery2, finalBytes(dir))).toBeNull();
    expect((await verifyRun(dir)).lossLog).toMatchObject({ ok: true, records: 8, orphaned: 0 });
  });
});

describe('resume equivalence: small BPE config', () => {
  const config = smallBpe();
  let uninterrupted: FinalBytes;
  beforeAll(async () => {
    uninterrupted = await reference(config);
  });

  it('(a) in-process stops mid-epoch and exactly at both epoch boundaries give identical bytes', async () => {
    const dir = path.join(tempDir(), 'stops');
    const stops = [{ step: 3 }, { step: 7 }, { step: SMALL_BPE_EPOCH }, { evaluationAt: 20, batch: 2 }, { step: 22 }, { step: 2 * SMALL_BPE_EPOCH }, { step: 33 }];
    const results = await trainWithStops(dir, config, stops);
    expect(results.map((r) => r.step)).toEqual([3, 7, 15, 20, 22, 30, 33, 40]);
    expect(sameBytes(uninterrupted, finalBytes(dir))).toBeNull();
    expect((await verifyRun(dir)).ok).toBe(true);
  });

  it('(b) SIGTERM to a child process mid-epoch and at an epoch boundary gives identical bytes', async () => {
    const dir = path.join(tempDir(), 'sigterm');
    await trainWithSignals(dir, config, [4, SMALL_BPE_EPOCH, 21, 2 * SMALL_BPE_EPOCH, 37], 'SIGTERM', 'inline');
    expect(sameBytes(uninterrupted, finalBytes(dir))).toBeNull();
  });

  it('(c) SIGKILL to a child process at random moments gives identical bytes', async () => {
    const dir = path.join(tempDir(), 'sigkill');
    const rng = new SplitMix64(4242n);
    const kills = Array.from({ length: 6 }, () => 1 + rng.nextBelow(38)).sort((a, b) => a - b);
    const killed = await trainWithKills(dir, config, kills, 10);
    expect(killed).toBeGreaterThanOrEqual(5);
    expect(sameBytes(uninterrupted, finalBytes(dir))).toBeNull();
    expect((await verifyRun(dir)).lossLog).toMatchObject({ ok: true, records: 40, orphaned: 0 });
    // Seven child processes, each starting Node and the sources: 10.6 s on an idle machine, past 60 s at load 15 (the
    // budget of the reliability slices that start processes, tools/reliability/test).
  }, 170_000);
});

describe('resume equivalence with timing on', () => {
  it('gives records equal to an uninterrupted run once the timing key is removed', async () => {
    const config = ch33({ log: { timing: true } });
    const a = path.join(tempDir(), 'uninterrupted');
    await trainRun({ runDir: a, config, saveMode: 'inline' });
    const b = path.join(tempDir(), 'interrupted');
    await trainWithStops(b, config, [{ step: 3 }, { step: 6 }]);
    const strip = (dir: string): string[] =>
      readFileSync(path.join(dir, 'loss.jsonl'), 'utf8')
        .trimEnd()
        .split('\n')
        .map((line) => {
          const { timing, ...rest } = JSON.parse(line) as Record<string, unknown>;
          // Evaluation records carry no timing; training records always do.
          if ('validationLoss' in rest) expect(timing).toBeUndefined();
          else expect(timing).toMatchObject({ tokensPerSecond: expect.any(Number), stepMs: expect.any(Number), time: expect.any(String) });
          return JSON.stringify(rest);
        });
    expect(strip(b)).toEqual(strip(a));
    expect(strip(a).filter((l) => !l.includes('"validationLoss"'))).toHaveLength(8);
    expect(strip(a).filter((l) => l.includes('"validationLoss"'))).toHaveLength(5);
    expect(Buffer.compare(finalBytes(a).state, GOLDEN)).toBe(0);
    expect(Buffer.compare(finalBytes(b).state, GOLDEN)).toBe(0);
  });
});
