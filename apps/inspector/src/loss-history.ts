/**
 * A run's `loss.jsonl` as curves, read with the trainer's one line parser
 * (`parseLossLine` of `@llmcp/trainer/loss-records`): per training record the
 * loss, learning rate and gradient norm; per evaluation record (written after
 * the training record of its step) the validation loss — so the validation
 * curve needs nothing but `loss.jsonl`.
 */
import { parseLossLine } from '@llmcp/trainer/loss-records';

/** One step of the training curves. */
export interface TrainingPoint {
  readonly step: number;
  readonly loss: number;
  readonly learningRate: number;
  readonly gradientNorm: number;
  readonly clipped: boolean;
}

/** The wall-clock facts of one training step (records written with `log.timing` on). */
export interface TimingPoint {
  readonly step: number;
  readonly tokensPerSecond: number;
  readonly stepMs: number;
  /** Milliseconds since the first timed record (from each record's time of day), or null when a time does not parse. */
  readonly elapsedMs: number | null;
}

/** One evaluation. */
export interface EvaluationPoint {
  readonly step: number;
  readonly validationLoss: number;
  readonly trainingLoss: number | null;
}

/** A line that is not a loss record, with the parser's reason. */
export interface BadLine {
  /** 1-based line number. */
  readonly line: number;
  readonly problem: string;
}

/** The curves of one `loss.jsonl`. */
export interface LossHistory {
  readonly training: readonly TrainingPoint[];
  readonly evaluations: readonly EvaluationPoint[];
  /** Throughput and wall clock per training step; empty when the run logged no timing. */
  readonly timing: readonly TimingPoint[];
  /** Lines the parser refused (at most the first 20 listed; `badLineCount` counts all). */
  readonly badLines: readonly BadLine[];
  readonly badLineCount: number;
  /** First training record out of sequence (expected 1, 2, 3, …), if any. */
  readonly problem: string | null;
}

const LISTED_BAD_LINES = 20;

/**
 * Parses the text of a `loss.jsonl`. A last line without its newline (a
 * record being appended) is parsed like the others.
 *
 * @param text - the file's text.
 * @returns the curves, the refused lines and the first continuity problem.
 */
export function parseLossHistory(text: string): LossHistory {
  const training: TrainingPoint[] = [];
  const evaluations: EvaluationPoint[] = [];
  const timing: TimingPoint[] = [];
  let firstTime: number | null = null;
  const badLines: BadLine[] = [];
  let badLineCount = 0;
  let problem: string | null = null;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line.trim() === '') continue;
    const parsed = parseLossLine(line);
    if (parsed.kind === 'problem') {
      badLineCount += 1;
      if (badLines.length < LISTED_BAD_LINES) badLines.push({ line: i + 1, problem: parsed.problem });
      continue;
    }
    if (parsed.kind === 'evaluation') {
      const r = parsed.record;
      evaluations.push({ step: r.step, validationLoss: r.validationLoss, trainingLoss: r.trainingLoss });
      continue;
    }
    const r = parsed.record;
    const expected = (training.at(-1)?.step ?? 0) + 1;
    if (problem === null && r.step !== expected) problem = `line ${i + 1} has step ${r.step}, expected ${expected}`;
    training.push({ step: r.step, loss: r.loss, learningRate: r.learningRate, gradientNorm: r.gradientNorm, clipped: r.clipped });
    if (parsed.timing !== null) {
      const at = Date.parse(parsed.timing.time);
      if (firstTime === null && Number.isFinite(at)) firstTime = at;
      timing.push({ step: r.step, tokensPerSecond: parsed.timing.tokensPerSecond, stepMs: parsed.timing.stepMs, elapsedMs: Number.isFinite(at) && firstTime !== null ? at - firstTime : null });
    }
  }
  return { training, evaluations, timing, badLines, badLineCount, problem };
}

/**
 * Exponential moving average (the usual loss-curve smoothing):
 * `s₀ = x₀`, `sₖ = α·sₖ₋₁ + (1 − α)·xₖ`. α = 0 returns the values unchanged.
 *
 * @param values - the series.
 * @param alpha - smoothing weight in [0, 1).
 * @returns the smoothed series (same length).
 * @throws RangeError when alpha is outside [0, 1).
 */
export function ema(values: readonly number[], alpha: number): number[] {
  if (!(alpha >= 0 && alpha < 1)) throw new RangeError(`ema: alpha must be in [0, 1), got ${alpha}`);
  const out: number[] = [];
  let s = 0;
  for (let i = 0; i < values.length; i++) {
    const x = values[i] as number;
    s = i === 0 ? x : alpha * s + (1 - alpha) * x;
    out.push(s);
  }
  return out;
}
