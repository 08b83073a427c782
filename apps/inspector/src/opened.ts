/**
 * What the user opened: checkpoints (inspected with `@llmcp/format`, valid
 * or not), safetensors and GGUF files (their headers, read with
 * `@llmcp/format/foreign`), a run's `loss.jsonl` (training and validation
 * curves, read with the trainer's line parser), or a `job.json` (its
 * evaluation history, shown as a summary).
 */
import { MAGIC } from '@llmcp/format';
import { inspectCheckpoint, type CheckpointInspection } from '@llmcp/format/inspect';
import { detectFileKind, isForeignFileError, readForeignFile, type ForeignFile, type ForeignFileError } from '@llmcp/format/foreign';
import { parseLossLine } from '@llmcp/trainer/loss-records';
import { parseLossHistory, type LossHistory } from './loss-history.ts';

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

/** A parsed `loss.jsonl` (training records and the evaluation records written after them). */
export interface OpenedLossLog {
  readonly kind: 'loss';
  readonly name: string;
  readonly history: LossHistory;
}

/** A `job.json`: its evaluation history gives the validation curve. */
export interface OpenedJob {
  readonly kind: 'job';
  readonly name: string;
  readonly validation: readonly LossPoint[];
}

/** Anything that was opened. */
export type Opened = OpenedCheckpoint | OpenedForeign | OpenedLossLog | OpenedJob;

function isNumber(x: unknown): x is number {
  return typeof x === 'number' && Number.isFinite(x);
}

/**
 * Reads a `loss.jsonl` with the trainer's line parser (see loss-history.ts).
 *
 * @param name - the file name.
 * @param text - its text.
 * @returns the opened log.
 */
export function parseLossLog(name: string, text: string): OpenedLossLog {
  return { kind: 'loss', name, history: parseLossHistory(text) };
}

function hasMagic(bytes: Uint8Array): boolean {
  return bytes.length >= MAGIC.length && MAGIC.every((b, i) => bytes[i] === b);
}

/**
 * Reads the evaluation history of a `job.json`.
 * @param name - the file's name, kept for display.
 * @param value - the parsed JSON.
 * @returns the job's validation-loss points (entries without a numeric step and loss are skipped), or null when the JSON has no `evaluations` array.
 */
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
 * @param name - the file's name (its extension is one of the clues).
 * @param bytes - the file's contents.
 * @returns what the file was opened as, with its parsed content or the reason it did not parse.
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
  const lower = name.toLowerCase();
  if (!hasMagic(bytes) && !lower.endsWith('.llmcp')) {
    let text: string | null = null;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      text = null;
    }
    if (text !== null) {
      const trimmed = text.trimStart();
      if (lower.endsWith('.jsonl') || /^\{[^\n]*"loss"/.test(trimmed) || parseLossLine(trimmed.split('\n')[0] ?? '').kind !== 'problem') return parseLossLog(name, text);
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
