/**
 * The torch engine against the llmcp engine (issue 29's parity check): 50
 * steps of the app's medium model on the embedded story corpus, torch with 1
 * and 2 ranks (CPU, f64) against llmcp. PyTorch sums in other orders, so the
 * comparison has stated tolerances, not bits: every step's training loss
 * within 1e-12 relative, and the final parameters within 1e-10 relative
 * (each tensor's largest difference against its largest magnitude). The
 * worst differences are printed. Skips, saying why, where Python with
 * PyTorch is absent.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { decodeCheckpoint } from '@llmcp/format';
import { parseConfig, trainRun, withEngine, type TrainerConfig } from '@llmcp/trainer';
import { appConfigInput, CORPORA } from '../src/defaults.ts';

const PYTHON = process.env.LLMCP_PYTHON ?? '/usr/bin/python3';
const SKIP = !existsSync(PYTHON)
  ? `${PYTHON} not found (set LLMCP_PYTHON)`
  : spawnSync(PYTHON, ['-c', 'import torch'], { timeout: 120_000 }).status === 0
    ? null
    : `PyTorch is not importable by ${PYTHON} (Debian: apt-get install python3-torch)`;

const STEPS = 50;
const LOSS_TOLERANCE = 1e-12;
const PARAMETER_TOLERANCE = 1e-10;

/** The app's medium model, 50 steps, validation only at the ends on two batches (the parity is in the training steps). */
function medium(): TrainerConfig {
  const input = appConfigInput({ corpus: CORPORA.default, size: 'medium', steps: STEPS, timing: false }) as Record<string, unknown>;
  return parseConfig({ ...input, evaluation: { ...(input.evaluation as object), validateEvery: STEPS, maxBatches: 2 }, checkpoint: { every: STEPS, keepSteps: 0 }, threads: 1 });
}

interface Trained {
  readonly losses: number[];
  readonly parameters: ReadonlyMap<string, Float64Array>;
}

async function train(config: TrainerConfig): Promise<Trained> {
  const dir = path.join(mkdtempSync(path.join(tmpdir(), 'llmcp-parity-')), 'run');
  const result = await trainRun({ runDir: dir, config, saveMode: 'inline', torch: { python: PYTHON } });
  expect(result.status).toBe('completed');
  const records = readFileSync(path.join(dir, 'loss.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { step: number; loss?: number });
  const losses = records.filter((r) => r.loss !== undefined).map((r) => r.loss as number);
  const state = decodeCheckpoint(readFileSync(path.join(dir, 'checkpoints', 'latest', 'state.llmcp')));
  return { losses, parameters: new Map(state.parameters.map((p) => [p.name, p.data])) };
}

describe.skipIf(SKIP !== null)(`torch engine against the llmcp engine: the app's medium model, ${STEPS} steps (${SKIP ?? PYTHON})`, { timeout: 600_000 }, () => {
  const config = medium();
  let llmcp: Trained;
  beforeAll(async () => {
    llmcp = await train(config);
  }, 600_000);

  it.each([1, 2])('torch with %i rank(s): every loss within 1e-12, the final parameters within 1e-10 (relative)', async (worldSize) => {
    const torch = await train(withEngine(config, { kind: 'torch', worldSize }));
    expect(torch.losses.length).toBe(STEPS);
    let worstLoss = { step: 0, relative: 0 };
    llmcp.losses.forEach((loss, i) => {
      const relative = Math.abs((torch.losses[i] as number) - loss) / Math.abs(loss);
      if (relative > worstLoss.relative) worstLoss = { step: i + 1, relative };
    });
    let worstParameter = { name: '', relative: 0 };
    for (const [name, reference] of llmcp.parameters) {
      const other = torch.parameters.get(name) as Float64Array;
      let difference = 0;
      let magnitude = 0;
      for (let i = 0; i < reference.length; i += 1) {
        difference = Math.max(difference, Math.abs((other[i] as number) - (reference[i] as number)));
        magnitude = Math.max(magnitude, Math.abs(reference[i] as number));
      }
      const relative = difference / magnitude;
      if (relative > worstParameter.relative) worstParameter = { name, relative };
    }
    console.log(
      `torch ${worldSize} rank(s) vs llmcp, ${STEPS} steps: worst loss ${worstLoss.relative.toExponential(2)} (step ${worstLoss.step}), worst parameter tensor ${worstParameter.relative.toExponential(2)} (${worstParameter.name})`,
    );
    expect(worstLoss.relative).toBeLessThan(LOSS_TOLERANCE);
    expect(worstParameter.relative).toBeLessThan(PARAMETER_TOLERANCE);
  });
});
