/**
 * What the user opened: checkpoints (inspected with `@llmcp/format`, valid
 * or not), safetensors and GGUF files (their headers, read with
 * `@llmcp/format/foreign`), a run's `loss.jsonl`, or a `job.json` (for the
 * validation curve).
 */
import { inspectCheckpoint, type CheckpointInspection } from '@llmcp/format';
import { detectFileKind, isForeignFileError, readForeignFile, type ForeignFile, type ForeignFileError } from '@llmcp/format/foreign';

/** An opened checkpoint (any bytes named or shaped like one). */
export interface OpenedCheckpoint {
  readonly kind: 'checkpoint';
  readonly name: string;
  readonly bytes: Uint8Array;
  readonly inspection: CheckpointInspection;
}

/** An opened safetensors or GGUF file: its header, or why it does not parse. */
export interface OpenedForeign {
  readonly kind: 'foreign';
  readonly name: string;
  readonly format: 'safetensors' | 'gguf';
  readonly fileLength: number;
  readonly header: ForeignFile | null;
  readonly error: ForeignFileError | null;
}

/** One point of a loss curve. */
export interface LossPoint {
  readonly step: number;
  readonly loss: number;
}

/** A parsed `loss.jsonl` (training loss per step, validation loss where a record carries one). */
export interface OpenedLossLog {
  readonly kind: 'loss';
  readonly name: string;
  readonly training: readonly LossPoint[];
  readonly validation: readonly LossPoint[];
  /** Lines that were not a JSON record with a numeric step and loss. */
  readonly badLines: number;
  /** First step out of sequence (expected 1, 2, 3, …), if any. */
  readonly problem: string | null;
}

/** A `job.json`: its evaluation history gives the validation curve. */
export interface OpenedJob {
  readonly kind: 'job';
  readonly name: string;
  readonly validation: readonly LossPoint[];
}

/** Anything that was opened. */
export type Opened = OpenedCheckpoint | OpenedForeign | OpenedLossLog | OpenedJob;

const MAGIC = 'LLMCP35';

function isNumber(x: unknown): x is number {
  return typeof x === 'number' && Number.isFinite(x);
}

/**
 * Parses `loss.jsonl` text: one JSON object per line with `step` and `loss`
 * (the trainer's record layout); `validationLoss` is used when present.
 */
export function parseLossLog(name: string, text: string): OpenedLossLog {
  const training: LossPoint[] = [];
  const validation: LossPoint[] = [];
  let badLines = 0;
  let problem: string | null = null;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] as string).trim();
    if (line === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      badLines += 1;
      continue;
    }
    const r = value as { step?: unknown; loss?: unknown; validationLoss?: unknown };
    if (typeof value !== 'object' || value === null || !isNumber(r.step) || !isNumber(r.loss)) {
      badLines += 1;
      continue;
    }
    if (problem === null && r.step !== training.length + 1) problem = `line ${i + 1} has step ${r.step}, expected ${training.length + 1}`;
    training.push({ step: r.step, loss: r.loss });
    if (isNumber(r.validationLoss)) validation.push({ step: r.step, loss: r.validationLoss });
  }
  return { kind: 'loss', name, training, validation, badLines, problem };
}

/** Reads the evaluation history of a `job.json`. Returns null when the JSON has none. */
export function parseJob(name: string, value: unknown): OpenedJob | null {
  const evaluations = (value as { evaluations?: unknown } | null)?.evaluations;
  if (!Array.isArray(evaluations)) return null;
  const validation: LossPoint[] = [];
  for (const e of evaluations) {
    const r = e as { step?: unknown; validationLoss?: unknown };
    if (isNumber(r.step) && isNumber(r.validationLoss)) validation.push({ step: r.step, loss: r.validationLoss });
  }
  return { kind: 'job', name, validation };
}

/**
 * Decides what a file is: safetensors or GGUF by their first bytes → its
 * header and tensor table; LLMCP35 magic or a `.llmcp` name → checkpoint;
 * `.jsonl` or JSON-lines content → loss log; JSON with `evaluations` → job;
 * anything else is inspected as a checkpoint (the audit says why it is not one).
 */
export function classify(name: string, bytes: Uint8Array): Opened {
  const format = detectFileKind(bytes);
  if (format === 'safetensors' || format === 'gguf') {
    try {
      return { kind: 'foreign', name, format, fileLength: bytes.length, header: readForeignFile(bytes), error: null };
    } catch (e) {
      if (!isForeignFileError(e)) throw e;
      return { kind: 'foreign', name, format, fileLength: bytes.length, header: null, error: e };
    }
  }
  const head = String.fromCharCode(...bytes.subarray(0, 7));
  const lower = name.toLowerCase();
  if (head !== MAGIC && !lower.endsWith('.llmcp')) {
    let text: string | null = null;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      text = null;
    }
    if (text !== null) {
      const trimmed = text.trimStart();
      if (lower.endsWith('.jsonl') || /^\{[^\n]*"loss"/.test(trimmed)) return parseLossLog(name, text);
      if (trimmed.startsWith('{')) {
        try {
          const job = parseJob(name, JSON.parse(text));
          if (job !== null) return job;
        } catch {
          // not JSON: fall through to the checkpoint audit
        }
      }
    }
  }
  return { kind: 'checkpoint', name, bytes, inspection: inspectCheckpoint(bytes) };
}
