/**
 * The records of `loss.jsonl`, browser-safe: their types, their one text
 * form, and the one parser of a line. The trainer writes and scans the file
 * with these (see `loss-log.ts`, which adds the Node file handling); the
 * inspector reads a run's history with the same parser.
 *
 * Two kinds of line, each a JSON object with fixed key order:
 * - a training record, one per update step:
 *   `{"step":N,"loss":…,"learningRate":…,"gradientNorm":…,"clipped":…,"tokens":…}`
 *   plus, only with `log.timing` on, `"timing":{"tokensPerSecond":…,"stepMs":…,"time":"…"}`;
 * - an evaluation record, written right after the training record of the
 *   step it evaluated: `{"step":N,"validationLoss":…,"trainingLoss":…|null}`.
 *
 * Numbers are ECMAScript's shortest round-trip decimals (they read back to
 * the exact f64 bits), so with timing off the file is byte-identical between
 * an interrupted and an uninterrupted run.
 */

/** The deterministic part of one training record. */
export interface LossRecord {
  readonly step: number;
  readonly loss: number;
  readonly learningRate: number;
  readonly gradientNorm: number;
  readonly clipped: boolean;
  /** Target tokens in the batch. */
  readonly tokens: number;
}

/** Wall-clock measurements of one step (not reproducible, kept apart). */
export interface LossTiming {
  readonly tokensPerSecond: number;
  readonly stepMs: number;
  /** ISO-8601 UTC time the step finished. */
  readonly time: string;
}

/** One evaluation, as logged after the training record of its step. */
export interface EvaluationLogRecord {
  readonly step: number;
  readonly validationLoss: number;
  /** Training-evaluation loss, when configured, else null. */
  readonly trainingLoss: number | null;
}

/** One parsed line of `loss.jsonl`. */
export type LossLogLine =
  | { readonly kind: 'training'; readonly record: LossRecord; readonly timing: LossTiming | null }
  | { readonly kind: 'evaluation'; readonly record: EvaluationLogRecord };

function num(x: number): string {
  if (!Number.isFinite(x)) throw new RangeError(`loss record holds a non-finite number ${x}`);
  return JSON.stringify(x);
}

/**
 * Formats one training record as a line (with the final newline).
 *
 * @param record - deterministic fields.
 * @param timing - optional timing.
 * @returns the JSON line.
 * @throws RangeError when a number is not finite.
 */
export function formatLossRecord(record: LossRecord, timing: LossTiming | null): string {
  let line = `{"step":${record.step},"loss":${num(record.loss)},"learningRate":${num(record.learningRate)},"gradientNorm":${num(record.gradientNorm)},"clipped":${record.clipped},"tokens":${record.tokens}`;
  if (timing !== null) {
    line += `,"timing":{"tokensPerSecond":${num(timing.tokensPerSecond)},"stepMs":${num(timing.stepMs)},"time":${JSON.stringify(timing.time)}}`;
  }
  return `${line}}\n`;
}

/**
 * Formats one evaluation record as a line (with the final newline).
 *
 * @param record - the evaluation.
 * @returns the JSON line.
 * @throws RangeError when a loss is not finite.
 */
export function formatEvaluationRecord(record: EvaluationLogRecord): string {
  const training = record.trainingLoss === null ? 'null' : num(record.trainingLoss);
  return `{"step":${record.step},"validationLoss":${num(record.validationLoss)},"trainingLoss":${training}}\n`;
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

function isFiniteNumber(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

/**
 * Parses one line of `loss.jsonl` (without its newline) and checks its shape.
 *
 * @param text - the line's text.
 * @returns the line, or a problem saying what is wrong with it.
 */
export function parseLossLine(text: string): LossLogLine | { readonly kind: 'problem'; readonly problem: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { kind: 'problem', problem: `not valid JSON: ${(e as Error).message}` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { kind: 'problem', problem: 'not a JSON object' };
  const o = value as Record<string, unknown>;
  if (!isCount(o['step'])) return { kind: 'problem', problem: `"step" is ${JSON.stringify(o['step'])}, not a step number` };
  if ('validationLoss' in o) {
    if (!isFiniteNumber(o['validationLoss'])) return { kind: 'problem', problem: '"validationLoss" is not a finite number' };
    const t = o['trainingLoss'];
    if (t !== null && !isFiniteNumber(t)) return { kind: 'problem', problem: '"trainingLoss" is neither a finite number nor null' };
    return { kind: 'evaluation', record: { step: o['step'], validationLoss: o['validationLoss'], trainingLoss: t as number | null } };
  }
  for (const key of ['loss', 'learningRate', 'gradientNorm'] as const) {
    if (!isFiniteNumber(o[key])) return { kind: 'problem', problem: `"${key}" is not a finite number` };
  }
  if (typeof o['clipped'] !== 'boolean') return { kind: 'problem', problem: '"clipped" is not a boolean' };
  if (!isCount(o['tokens'])) return { kind: 'problem', problem: '"tokens" is not a count' };
  const record: LossRecord = {
    step: o['step'],
    loss: o['loss'] as number,
    learningRate: o['learningRate'] as number,
    gradientNorm: o['gradientNorm'] as number,
    clipped: o['clipped'],
    tokens: o['tokens'],
  };
  const t = o['timing'];
  let timing: LossTiming | null = null;
  if (t !== undefined) {
    const tt = t as Record<string, unknown>;
    if (typeof t !== 'object' || t === null || !isFiniteNumber(tt['tokensPerSecond']) || !isFiniteNumber(tt['stepMs']) || typeof tt['time'] !== 'string') {
      return { kind: 'problem', problem: '"timing" is not {tokensPerSecond, stepMs, time}' };
    }
    timing = { tokensPerSecond: tt['tokensPerSecond'], stepMs: tt['stepMs'], time: tt['time'] };
  }
  return { kind: 'training', record, timing };
}
