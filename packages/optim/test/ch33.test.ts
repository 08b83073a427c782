import { kernelInfo, setKernels, type KernelChoice } from '@llmcp/model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bits, f64, firstMismatch, fixture } from './helpers/bits.ts';
import { runFixture, type EvaluationRecord, type FixtureRun } from './helpers/fixture-run.ts';

interface Bits {
  bits: string;
}
interface NamedBits {
  name: string;
  shape: number[];
  bits: string[];
}
interface Moments {
  step_count: number;
  beta1_power: Bits;
  beta2_power: Bits;
  moments: { name: string; first_moment_bits: string[]; second_moment_bits: string[] }[];
}
interface TraceEval {
  mean_loss: Bits;
  token_count: number;
  batches: { windows: { windows: string[]; inputs: number[]; targets: number[] }; token_count: number; loss: Bits; weighted_sum_after: Bits }[];
}
interface Ch33 {
  shuffle: {
    sequential_windows: string[];
    fisher_yates_steps: { selected: number }[];
    shuffled_windows: string[];
    rng_state_after: string;
    update_batches: { windows: string[]; inputs: number[]; targets: number[] }[];
  };
  initial_parameters: NamedBits[];
  steps: {
    step: number;
    batch: { windows: string[]; inputs: number[]; targets: number[] };
    learning_rate: Bits;
    loss: Bits;
    gradient_norm: {
      before: Bits;
      after: Bits;
      largest_abs_gradient: Bits;
      scaled_sum_of_squares: Bits;
      sqrt_scaled_sum_of_squares: Bits;
      clipped: boolean;
      transform: { kind: string; scale: Bits };
    };
    gradients_before_clipping: NamedBits[];
    parameters_after: NamedBits[];
    optimizer_after: Moments;
  }[];
  optimizer_after_step_8: Moments;
  checkpoints: { step: number; selected: boolean; train_evaluation: TraceEval; validation: TraceEval }[];
  selection: { selected_step: number; validation_loss: Bits };
}

const trace = fixture<Ch33>('ch33-trace.json');

/** The first mismatch over every named tensor of a flat model-order array. */
function tensors(label: string, flat: Float64Array, expected: NamedBits[]): string | null {
  let off = 0;
  for (const t of expected) {
    const m = firstMismatch(`${label} ${t.name}`, flat.subarray(off, off + t.bits.length), t.bits);
    if (m !== null) return m;
    off += t.bits.length;
  }
  return off === flat.length ? null : `${label}: ${flat.length - off} extra values`;
}

function moments(label: string, run: FixtureRun['steps'][number]['optimizer'], expected: Moments): string | null {
  if (run.step !== expected.step_count) return `${label} step count: expected ${expected.step_count}, found ${run.step}`;
  const p = firstMismatch(`${label} beta powers`, [run.beta1Power, run.beta2Power], [expected.beta1_power.bits, expected.beta2_power.bits]);
  if (p !== null) return p;
  let off = 0;
  for (const m of expected.moments) {
    const n = m.first_moment_bits.length;
    const a = firstMismatch(`${label} first moment ${m.name}`, run.first.subarray(off, off + n), m.first_moment_bits);
    if (a !== null) return a;
    const b = firstMismatch(`${label} second moment ${m.name}`, run.second.subarray(off, off + n), m.second_moment_bits);
    if (b !== null) return b;
    off += n;
  }
  return null;
}

function evaluation(label: string, run: EvaluationRecord, expected: TraceEval): string | null {
  if (run.tokenCount !== expected.token_count) return `${label} token count: expected ${expected.token_count}, found ${run.tokenCount}`;
  if (run.batches.length !== expected.batches.length) return `${label}: expected ${expected.batches.length} batches, found ${run.batches.length}`;
  for (const [i, b] of expected.batches.entries()) {
    const r = run.batches[i]!;
    if (r.windows.join() !== b.windows.windows.join()) return `${label} batch ${i} windows: expected ${b.windows.windows.join()}, found ${r.windows.join()}`;
    const m = firstMismatch(`${label} batch ${i} loss, weighted sum`, [r.loss, r.weightedSumAfter], [b.loss.bits, b.weighted_sum_after.bits]);
    if (m !== null) return m;
  }
  return firstMismatch(`${label} mean`, [run.mean], [expected.mean_loss.bits]);
}

/** Why a kernel set cannot run here, or null (the choice is restored either way). */
function unavailable(kernels: KernelChoice): string | null {
  const saved = kernelInfo().requested;
  try {
    setKernels(kernels);
    return null;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  } finally {
    setKernels(saved);
  }
}

const SETS = (['scalar', 'wasm', 'native'] as const).map((kernels) => {
  const missing = unavailable(kernels);
  return { kernels, missing, note: missing === null ? '' : ` — skipped: ${missing}` };
});

describe.each(SETS)('ch33 training fixture (training.md, ch33-trace.json), $kernels kernels$note', ({ kernels, missing }) => {
  const check = it.skipIf(missing !== null);
  let run: FixtureRun;
  beforeAll(async () => {
    if (missing !== null) return;
    const saved = kernelInfo().requested;
    setKernels(kernels);
    try {
      run = await runFixture(1);
    } finally {
      setKernels(saved);
    }
  });
  afterAll(async () => {
    await run?.model.close();
  });

  check('builds the windows, the Fisher–Yates shuffle and the ten update batches of the trace', () => {
    expect(run.sequential).toEqual(trace.shuffle.sequential_windows);
    expect(run.shuffleSelections).toEqual(trace.shuffle.fisher_yates_steps.map((s) => s.selected));
    expect(run.shuffled).toEqual(trace.shuffle.shuffled_windows);
    expect(run.shuffleState.toString(16).padStart(16, '0')).toBe(trace.shuffle.rng_state_after);
    expect(run.updateBatches.map((b) => ({ windows: b.windows, inputs: Array.from(b.inputs), targets: Array.from(b.targets) }))).toEqual(
      trace.shuffle.update_batches.map((b) => ({ windows: b.windows, inputs: b.inputs, targets: b.targets })),
    );
  });

  check('initializes all 144 parameters from seed 33 bit for bit', () => {
    expect(tensors('initial', run.initialParameters, trace.initial_parameters)).toBeNull();
  });

  check.each([1, 2, 3, 4, 5, 6, 7, 8])('update %i: batch, rate, loss, norm and clip, gradients, parameters and AdamW state bit for bit', (k) => {
    const s = run.steps[k - 1]!;
    const t = trace.steps[k - 1]!;
    expect(s.batch.windows).toEqual(t.batch.windows);
    expect(Array.from(s.batch.inputs)).toEqual(t.batch.inputs);
    expect(Array.from(s.batch.targets)).toEqual(t.batch.targets);
    expect(firstMismatch(`step ${k} learning rate`, [s.learningRate], [t.learning_rate.bits])).toBeNull();
    expect(firstMismatch(`step ${k} loss`, [s.loss], [t.loss.bits])).toBeNull();
    const n = t.gradient_norm;
    expect(s.clip.clipped).toBe(n.clipped);
    expect(s.clip.transform.kind).toBe(n.transform.kind);
    expect(
      firstMismatch(
        `step ${k} norm (before, after, largest |g|, ssq, root, multiplier)`,
        [s.clip.normBefore, s.clip.normAfter, s.clip.largestAbs, s.clip.scaledSumOfSquares, s.clip.root, s.clip.multiplier],
        [n.before.bits, n.after.bits, n.largest_abs_gradient.bits, n.scaled_sum_of_squares.bits, n.sqrt_scaled_sum_of_squares.bits, n.transform.scale.bits],
      ),
    ).toBeNull();
    expect(tensors(`step ${k} gradient`, s.gradients, t.gradients_before_clipping)).toBeNull();
    expect(tensors(`step ${k} parameter`, s.parameters, t.parameters_after)).toBeNull();
    expect(moments(`step ${k} AdamW`, s.optimizer, t.optimizer_after)).toBeNull();
  });

  check('ends with the AdamW state of step 8 (b1pow 0.43046721000000016 by repeated multiplication)', () => {
    expect(moments('final AdamW', run.steps[7]!.optimizer, trace.optimizer_after_step_8)).toBeNull();
    expect(bits(run.optimizer.beta1Power)).toBe('3fdb8cc6573cd2c7');
  });

  check('evaluates the five checkpoints (token-weighted means of batch means) bit for bit', () => {
    expect(run.checkpoints.map((c) => c.step)).toEqual(trace.checkpoints.map((c) => c.step));
    for (const [i, c] of trace.checkpoints.entries()) {
      expect(evaluation(`step ${c.step} training evaluation`, run.checkpoints[i]!.train, c.train_evaluation)).toBeNull();
      expect(evaluation(`step ${c.step} validation`, run.checkpoints[i]!.validation, c.validation)).toBeNull();
    }
  });

  check('selects step 8 by strictly smaller validation loss', () => {
    expect(run.selectedStep).toBe(trace.selection.selected_step);
    expect(bits(run.selectedValidation)).toBe(trace.selection.validation_loss.bits);
    expect(trace.checkpoints.filter((c) => c.selected).map((c) => c.step)).toEqual([run.selectedStep]);
    expect(f64(trace.selection.validation_loss.bits)).toBe(run.selectedValidation);
  });
});
