/**
 * The torch engine (../../../docs/engine-protocol.md) under the trainer: the same run
 * lifecycle as the llmcp engine. A torch run stopped, SIGTERMed, SIGKILLed or
 * losing a rank resumes byte for byte equal to the uninterrupted torch run,
 * at the same world size; no rank outlives its trainer; a dead or stopped
 * rank is a typed error naming it; what the machine lacks is one clear line;
 * two nodes on one machine give the bits of one node with two ranks. Skips,
 * saying why, where Python with PyTorch is absent.
 */
import { spawn } from 'node:child_process';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { decodeCheckpoint } from '@llmcp/format';
import type { TrainerConfig } from '../src/config.ts';
import { withEngine } from '../src/engine-settings.ts';
import { isTrainerError } from '../src/errors.ts';
import type { TrainerEvent } from '../src/events.ts';
import { pivotRun } from '../src/pivot.ts';
import { readRunManifest } from '../src/run-manifest.ts';
import { resumeRun, trainRun, type RunResult } from '../src/run.ts';
import { verifyRun } from '../src/status.ts';
import type { TorchEngineOptions } from '../src/torch-engine.ts';
import { ch33, smallBpe } from './helpers/configs.ts';
import { TrainerChild, trainWithSignals } from './helpers/child.ts';
import { tempDir } from './helpers/run-fixture.ts';
import { finalBytes, sameBytes, snapshotTree, type FinalBytes } from './helpers/run-files.ts';
import { TORCH_PYTHON, TORCH_SKIP, waitGone } from './helpers/torch.ts';

const REPO_PYTHON = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'python');
/** Machine settings of these tests: Debian's Python, quick heartbeats. */
const TORCH: TorchEngineOptions = { python: TORCH_PYTHON, heartbeatSeconds: 0.2, hangSeconds: 5 };

/** The small BPE config (epochs of 15 steps) on the torch engine with `worldSize` ranks. */
function torchConfig(worldSize: number, patch: Record<string, unknown> = {}): TrainerConfig {
  return withEngine(smallBpe({ steps: 20, evaluation: { validateEvery: 5, maxBatches: 2 }, ...patch }), { kind: 'torch', worldSize });
}

async function uninterrupted(config: TrainerConfig): Promise<FinalBytes> {
  const dir = path.join(tempDir(), 'uninterrupted');
  const r = await trainRun({ runDir: dir, config, saveMode: 'inline', torch: TORCH });
  expect(r.status).toBe('completed');
  return finalBytes(dir);
}

/** Trains to completion, resuming after every failure or stop, calling `during` with each run's events. */
async function trainUntilComplete(dir: string, config: TrainerConfig, onEvent: (e: TrainerEvent, controller: AbortController) => void): Promise<{ results: RunResult[]; errors: unknown[] }> {
  const results: RunResult[] = [];
  const errors: unknown[] = [];
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const controller = new AbortController();
    const options = { signal: controller.signal, onEvent: (e: TrainerEvent) => onEvent(e, controller), saveMode: 'inline' as const, torch: TORCH };
    try {
      const r = attempt === 0 ? await trainRun({ ...options, runDir: dir, config }) : await resumeRun(dir, options);
      results.push(r);
      if (r.status !== 'stopped') return { results, errors };
    } catch (e) {
      errors.push(e);
    }
  }
  throw new Error('the run did not complete in 20 attempts');
}

/** Each of these starts PyTorch processes several times: bounds far above their minutes on a loaded 2-core machine. */
const PROCESS_TESTS = { timeout: 400_000 };

describe.skipIf(TORCH_SKIP !== null)(`torch engine (${TORCH_SKIP ?? TORCH_PYTHON})`, PROCESS_TESTS, () => {
  const reference = new Map<number, FinalBytes>();
  beforeAll(async () => {
    // Two ranks: the distributed path (the one-rank path's resume is exact in python/tests/test_engine.py and the kill-loop slice).
    reference.set(2, await uninterrupted(torchConfig(2)));
  }, 600_000);

  it('trains the ch33 fixture near the llmcp engine, and records the engine in run.json', async () => {
    const dir = path.join(tempDir(), 'ch33');
    let started: Extract<TrainerEvent, { type: 'start' }> | null = null;
    await trainRun({ runDir: dir, config: withEngine(ch33(), { kind: 'torch', worldSize: 2 }), saveMode: 'inline', torch: TORCH, onEvent: (e) => void (e.type === 'start' && (started = e)) });
    expect(started).not.toBeNull();
    expect((started as unknown as { engine: string }).engine).toMatch(/^torch .*, 2 ranks, cpu f64/);
    const llmcp = path.join(tempDir(), 'ch33-llmcp');
    await trainRun({ runDir: llmcp, config: ch33(), saveMode: 'inline' });
    const losses = (d: string): number[] => readFileSync(path.join(d, 'loss.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { loss?: number; validationLoss?: number }).map((r) => r.loss ?? (r.validationLoss as number));
    const a = losses(dir);
    const b = losses(llmcp);
    expect(a.length).toBe(b.length);
    for (let i = 0; i < a.length; i += 1) expect(Math.abs((a[i] as number) - (b[i] as number)) / Math.abs(b[i] as number)).toBeLessThan(1e-12);
    const events = readRunManifest(dir)?.events ?? [];
    expect(events[0]).toMatchObject({ event: 'created', engine: { kind: 'torch', worldSize: 2 }, config: { engine: { kind: 'torch', worldSize: 2, device: 'cpu', dtype: 'f64', threadsPerRank: 1 } } });
    expect((await verifyRun(dir)).ok).toBe(true);
  });

  it.each([2])('stopped after steps 3, 5 (a validation step), 11 and 17, %i ranks: resumes byte for byte equal to the uninterrupted torch run', async (worldSize) => {
    const dir = path.join(tempDir(), `stops-${worldSize}`);
    const stops = [3, 5, 11, 17];
    const { results } = await trainUntilComplete(dir, torchConfig(worldSize), (e, c) => {
      if (e.type === 'step' && e.step === stops[0]) {
        stops.shift();
        c.abort();
      }
    });
    expect(results.map((r) => r.status)).toEqual(['stopped', 'stopped', 'stopped', 'stopped', 'completed']);
    expect(sameBytes(reference.get(worldSize) as FinalBytes, finalBytes(dir))).toBeNull();
    expect((readRunManifest(dir)?.events ?? []).filter((e) => e.event === 'resumed').map((e) => (e as { engine?: unknown }).engine)).toEqual(Array(4).fill({ kind: 'torch', worldSize }));
  });

  it.each([2])('the trainer SIGKILLed after steps 4 and 13, %i ranks: no rank outlives it, and the resumed run is byte-identical', async (worldSize) => {
    const dir = path.join(tempDir(), `kills-${worldSize}`);
    const config = torchConfig(worldSize);
    let mode: 'train' | 'resume' = 'train';
    let kills = 0;
    for (const step of [4, 13, null]) {
      const child = new TrainerChild({ runDir: dir, config, mode, saveMode: 'worker', torch: TORCH });
      const start = await child.waitFor((e) => e.type === 'start');
      const ranks = start.engineProcesses as number[];
      expect(ranks.length).toBe(worldSize);
      if (step !== null) {
        await child.waitFor((e) => e.type === 'step' && (e.step as number) >= step);
        child.signal('SIGKILL');
        await child.exited;
        kills += 1;
        // The ranks notice that their trainer is gone (their standard input ends; the parent-death signal) and exit.
        await waitGone(ranks, 20_000);
      } else {
        expect((await child.result()).status).toBe('completed');
        await waitGone(ranks, 20_000);
      }
      mode = 'resume';
    }
    expect(kills).toBe(2);
    expect(sameBytes(reference.get(worldSize) as FinalBytes, finalBytes(dir))).toBeNull();
  });

  it('SIGTERM after steps 2 and 7, and SIGUSR1 (checkpoint and continue): the same bytes as without signals', async () => {
    const config = torchConfig(2);
    const dir = path.join(tempDir(), 'sigterm');
    const resumedFrom = await trainWithSignals(dir, config, [2, 7], 'SIGTERM', 'worker', TORCH);
    expect(resumedFrom).toEqual(['latest', 'latest']);
    expect(sameBytes(reference.get(2) as FinalBytes, finalBytes(dir))).toBeNull();
    const usr1 = path.join(tempDir(), 'sigusr1');
    const child = new TrainerChild({ runDir: usr1, config, mode: 'train', saveMode: 'inline', torch: TORCH, pauseAt: { type: 'step', step: 6 } });
    await child.waitForPause();
    child.signal('SIGUSR1');
    child.release();
    expect((await child.result()).status).toBe('completed');
    expect(child.events.some((e) => e.type === 'checkpoint' && e.reason === 'signal' && e.step === 6)).toBe(true);
    expect(sameBytes(reference.get(2) as FinalBytes, finalBytes(usr1))).toBeNull();
  });

  it('a rank SIGKILLed mid-run: a typed error naming that rank and its stderr; every rank stopped; resumed byte-identical', async () => {
    const dir = path.join(tempDir(), 'rank-kill');
    let ranks: readonly number[] = [];
    let killed = false;
    const { errors, results } = await trainUntilComplete(dir, torchConfig(2), (e) => {
      if (e.type === 'start') ranks = e.engineProcesses ?? [];
      if (e.type === 'step' && e.step === 7 && !killed) {
        killed = true;
        process.kill(ranks[1] as number, 'SIGKILL');
      }
    });
    expect(errors.length).toBe(1);
    const error = errors[0];
    expect(isTrainerError(error) && error.code).toBe('TRAINER_ENGINE_FAILED');
    expect((error as Error).message).toMatch(/rank 1 of the torch engine was killed by SIGKILL/);
    expect(results.at(-1)?.status).toBe('completed');
    expect(sameBytes(reference.get(2) as FinalBytes, finalBytes(dir))).toBeNull();
  });

  it('a stopped rank (SIGSTOP): a typed error within the hang bound naming it; resumed byte-identical', async () => {
    const dir = path.join(tempDir(), 'rank-stop');
    let ranks: readonly number[] = [];
    let stopped = false;
    const { errors, results } = await trainUntilComplete(dir, torchConfig(2), (e) => {
      if (e.type === 'start') ranks = e.engineProcesses ?? [];
      if (e.type === 'step' && e.step === 12 && !stopped) {
        stopped = true;
        process.kill(ranks[1] as number, 'SIGSTOP');
      }
    });
    expect(errors.length).toBe(1);
    expect((errors[0] as Error).message).toMatch(/rank 1 of the torch engine sent no heartbeat for \d+ s \(stopped or hung\)/);
    await waitGone(ranks, 20_000);
    expect(results.at(-1)?.status).toBe('completed');
    expect(sameBytes(reference.get(2) as FinalBytes, finalBytes(dir))).toBeNull();
  });

  it('two nodes on one machine (rank 1 started by hand with the documented command) give the bits of one node with two ranks', async () => {
    const port = await new Promise<number>((resolve) => {
      const server = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (server.address() as net.AddressInfo).port;
        server.close(() => resolve(p));
      });
    });
    const node1 = spawn(TORCH_PYTHON, ['-m', 'llmcp.engine', '--rank', '1', '--world-size', '2', '--master-addr', '127.0.0.1', '--master-port', String(port)], {
      env: { ...process.env, PYTHONPATH: REPO_PYTHON },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => node1.on('exit', (code) => resolve(code)));
    const dir = path.join(tempDir(), 'two-nodes');
    const lines: string[] = [];
    const r = await trainRun({ runDir: dir, config: torchConfig(2), saveMode: 'inline', torch: { ...TORCH, localRanks: 1, masterPort: port }, onEvent: (e) => void (e.type === 'engine-status' && lines.push(e.message)) });
    expect(r.status).toBe('completed');
    expect(await exited).toBe(0);
    expect(lines.join('\n')).toContain(`python -m llmcp.engine --rank <r> --world-size 2 --master-addr 127.0.0.1 --master-port ${port}`);
    expect(sameBytes(reference.get(2) as FinalBytes, finalBytes(dir))).toBeNull();
  });

  it('a resume whose engine cannot start leaves the run as it was; a finished run resumes without starting one', async () => {
    const dir = path.join(tempDir(), 'no-engine');
    const controller = new AbortController();
    await trainRun({ runDir: dir, config: torchConfig(1), saveMode: 'inline', torch: TORCH, signal: controller.signal, onEvent: (e) => void (e.type === 'step' && e.step === 3 && controller.abort()) });
    const before = snapshotTree(dir);
    const refused = await resumeRun(dir, { saveMode: 'inline', torch: { ...TORCH, python: '/nonexistent/python3' } }).catch((e: unknown) => e);
    expect(isTrainerError(refused) && refused.code).toBe('TRAINER_ENGINE_UNAVAILABLE');
    expect(snapshotTree(dir)).toEqual(before);
    expect((await resumeRun(dir, { saveMode: 'inline', torch: TORCH })).status).toBe('completed');
    // Nothing left to train: no interpreter is needed (none is started).
    expect((await resumeRun(dir, { saveMode: 'inline', torch: { ...TORCH, python: '/nonexistent/python3' } })).status).toBe('already-complete');
  });

  it('changing the engine is a pivot: a resume that asks for it is refused naming engine fields; after the pivot the run goes on with the torch engine', async () => {
    const dir = path.join(tempDir(), 'pivot');
    const llmcp = smallBpe({ steps: 20, evaluation: { validateEvery: 5, maxBatches: 2 } });
    const controller = new AbortController();
    await trainRun({ runDir: dir, config: llmcp, saveMode: 'inline', signal: controller.signal, onEvent: (e) => void (e.type === 'step' && e.step === 10 && controller.abort()) });
    const refused = await resumeRun(dir, { saveMode: 'inline', torch: TORCH, engine: { kind: 'torch', worldSize: 2 } }).catch((e: unknown) => e);
    expect(isTrainerError(refused) && refused.code).toBe('TRAINER_CONFIG_CHANGED');
    expect(isTrainerError(refused) && refused.fields).toEqual(expect.arrayContaining(['engine.kind', 'engine.worldSize']));
    await pivotRun(dir, { config: withEngine(llmcp, { kind: 'torch', worldSize: 2 }), changes: ['engine'], reason: 'move to PyTorch' });
    const r = await resumeRun(dir, { saveMode: 'inline', torch: TORCH });
    expect(r.status).toBe('completed');
    const events = readRunManifest(dir)?.events ?? [];
    expect(events.find((e) => e.event === 'pivot')).toMatchObject({ changed: expect.arrayContaining(['engine.kind', 'engine.worldSize']) });
    expect(events.at(-2)).toMatchObject({ event: 'resumed', engine: { kind: 'torch', worldSize: 2 } });
    expect((await verifyRun(dir)).ok).toBe(true);
    expect(decodeCheckpoint(readFileSync(path.join(dir, 'checkpoints', 'latest', 'state.llmcp'))).selectedStep).toBe(20n);
  });
});

const CUDA = TORCH_SKIP === null && spawnSync(TORCH_PYTHON, ['-c', 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)']).status === 0;

describe.skipIf(TORCH_SKIP !== null)('torch engine: what the machine lacks is one clear typed error, and nothing is left behind', PROCESS_TESTS, () => {
  async function refusal(torch: TorchEngineOptions, config: TrainerConfig = torchConfig(1)): Promise<{ code: string; message: string; dir: string }> {
    const dir = path.join(tempDir(), 'refused');
    const e = await trainRun({ runDir: dir, config, saveMode: 'inline', torch: { ...TORCH, ...torch } }).catch((x: unknown) => x);
    if (!isTrainerError(e)) throw new Error(`expected a trainer error, got ${String(e)}`);
    // Refused before the run directory was made.
    expect(existsSync(dir)).toBe(false);
    return { code: e.code, message: e.message, dir };
  }

  it('no such interpreter', async () => {
    const r = await refusal({ python: '/nonexistent/python3' });
    expect(r).toMatchObject({ code: 'TRAINER_ENGINE_UNAVAILABLE', message: expect.stringMatching(/the Python interpreter \/nonexistent\/python3 was not found/) });
  });

  it('an interpreter without PyTorch', async () => {
    // A stand-in `torch` that fails to import, first on the path.
    const shadow = path.join(tempDir(), 'no-torch');
    mkdirSync(path.join(shadow, 'torch'), { recursive: true });
    writeFileSync(path.join(shadow, 'torch', '__init__.py'), 'raise ImportError("No module named torch")\n');
    const r = await refusal({ pythonPath: [REPO_PYTHON, shadow].join(path.delimiter) });
    expect(r).toMatchObject({ code: 'TRAINER_ENGINE_UNAVAILABLE', message: expect.stringMatching(/PyTorch is not installed for .*apt-get install python3-torch/) });
  });

  it('an interpreter that cannot import the llmcp package', async () => {
    const r = await refusal({ pythonPath: path.join(tempDir(), 'empty') });
    expect(r).toMatchObject({ code: 'TRAINER_ENGINE_UNAVAILABLE', message: expect.stringMatching(/the llmcp Python package is not importable .*pip install \.\/python/) });
  });

  it.skipIf(CUDA)('CUDA asked for where PyTorch has none', async () => {
    const r = await refusal({}, withEngine(smallBpe(), { kind: 'torch', device: 'cuda' }));
    expect(r).toMatchObject({ code: 'TRAINER_ENGINE_UNAVAILABLE', message: expect.stringMatching(/CUDA is not available to PyTorch .*: train on the CPU \(--device cpu\)/) });
  });

  it('a rendezvous port in use', async () => {
    const server = net.createServer();
    const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)));
    try {
      const r = await refusal({ masterPort: port }, torchConfig(2));
      expect(r).toMatchObject({ code: 'TRAINER_ENGINE_UNAVAILABLE', message: `the rendezvous port ${port} is in use: give a free one with --master-port` });
    } finally {
      server.close();
    }
  });

  it('an engine speaking another protocol version', async () => {
    // A stand-in engine package that answers init with another protocol.
    const fake = path.join(tempDir(), 'fake-engine');
    mkdirSync(path.join(fake, 'llmcp', 'engine'), { recursive: true });
    writeFileSync(path.join(fake, 'llmcp', '__init__.py'), '');
    writeFileSync(path.join(fake, 'llmcp', 'engine', '__init__.py'), '');
    writeFileSync(
      path.join(fake, 'llmcp', 'engine', '__main__.py'),
      [
        'import json, os, struct, sys',
        'out = os.fdopen(3, "wb", buffering=0)',
        'n, p = struct.unpack("<IQ", sys.stdin.buffer.read(12)); sys.stdin.buffer.read(n + p)',
        'h = json.dumps({"kind": "ready", "protocol": "llmcp-engine/999", "torch": "0", "device": "cpu", "blas": []}).encode()',
        'out.write(struct.pack("<IQ", len(h), 0) + h)',
        'sys.stdin.buffer.read()',
      ].join('\n'),
    );
    const r = await refusal({ pythonPath: fake });
    expect(r).toMatchObject({ code: 'TRAINER_ENGINE_PROTOCOL', message: 'the torch engine speaks llmcp-engine/999, the trainer llmcp-engine/1' });
  });
});
