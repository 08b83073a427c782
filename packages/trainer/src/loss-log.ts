/**
 * `loss.jsonl`: one JSON record per update step, append-only, never archived or
 * reset. Each checkpoint records the log's length and the SHA-256 of that
 * prefix; a resume verifies the prefix unchanged and cuts only the records a
 * crash left beyond the checkpoint (their count and hash go to `run.json`), so
 * after any sequence of kills and resumes the file holds exactly one record per
 * step, in order.
 *
 * Record layout (fixed key order): `step`, `loss`, `learningRate`,
 * `gradientNorm`, `clipped`, `tokens`, then — only with `log.timing` on —
 * `timing: { tokensPerSecond, stepMs, time }`. Numbers are ECMAScript's
 * shortest round-trip decimals, which read back to the exact f64 bits. With
 * timing off the file is byte-identical between an interrupted and an
 * uninterrupted run; with timing on it is identical once `timing` is removed.
 */
import { closeSync, existsSync, ftruncateSync, openSync, readFileSync, writeSync, constants } from 'node:fs';
import { createHash, type Hash } from 'node:crypto';
import { TrainerError } from './errors.ts';
import { sha256Hex } from './internal/canonical-json.ts';

/** The deterministic part of one loss record. */
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

/** Position of the log after a given record. */
export interface LossLogPosition {
  readonly records: number;
  readonly bytes: number;
  readonly sha256: string;
}

/** The position of an empty loss log (no records, the SHA-256 of no bytes). */
export const EMPTY_LOSS_LOG: LossLogPosition = { records: 0, bytes: 0, sha256: `sha256:${sha256Hex(new Uint8Array(0))}` };

const ENCODER = new TextEncoder();

function num(x: number): string {
  if (!Number.isFinite(x)) throw new TrainerError('TRAINER_NON_FINITE', `loss record holds a non-finite number ${x}`);
  return JSON.stringify(x);
}

/**
 * Formats one record as a line (with the final newline).
 *
 * @param record - deterministic fields.
 * @param timing - optional timing.
 * @returns the JSON line.
 */
export function formatLossRecord(record: LossRecord, timing: LossTiming | null): string {
  let line = `{"step":${record.step},"loss":${num(record.loss)},"learningRate":${num(record.learningRate)},"gradientNorm":${num(record.gradientNorm)},"clipped":${record.clipped},"tokens":${record.tokens}`;
  if (timing !== null) {
    line += `,"timing":{"tokensPerSecond":${num(timing.tokensPerSecond)},"stepMs":${num(timing.stepMs)},"time":${JSON.stringify(timing.time)}}`;
  }
  return `${line}}\n`;
}

/** Parsed view of `loss.jsonl`. */
export interface ParsedLossLog {
  readonly records: readonly (LossRecord & { readonly timing?: LossTiming })[];
  /** Byte offset just after each record's newline. */
  readonly ends: readonly number[];
  /** Bytes after the last complete line (a torn write), 0 when clean. */
  readonly trailingBytes: number;
  /** First problem found (bad JSON, step out of sequence), or null. */
  readonly problem: string | null;
}

/**
 * Parses `loss.jsonl` bytes and checks that steps run 1, 2, 3, … without gaps.
 *
 * @param bytes - the file's bytes.
 * @returns records, their end offsets, and the first problem.
 */
export function parseLossLog(bytes: Uint8Array): ParsedLossLog {
  const records: (LossRecord & { timing?: LossTiming })[] = [];
  const ends: number[] = [];
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let start = 0;
  let problem: string | null = null;
  while (start < bytes.length) {
    const nl = bytes.indexOf(0x0a, start);
    if (nl < 0) break;
    try {
      const value = JSON.parse(decoder.decode(bytes.subarray(start, nl))) as LossRecord & { timing?: LossTiming };
      if (problem === null && value.step !== records.length + 1) {
        problem = `record ${records.length + 1} (byte ${start}) has step ${String(value.step)}, expected ${records.length + 1}`;
      }
      records.push(value);
    } catch (e) {
      if (problem === null) problem = `line ${records.length + 1} (byte ${start}) is not valid JSON: ${(e as Error).message}`;
      records.push({ step: Number.NaN, loss: Number.NaN, learningRate: Number.NaN, gradientNorm: Number.NaN, clipped: false, tokens: 0 });
    }
    ends.push(nl + 1);
    start = nl + 1;
  }
  return { records, ends, trailingBytes: bytes.length - start, problem };
}

/** What a resume will do to `loss.jsonl`, decided before anything is changed. */
export interface LossLogResumePlan {
  readonly file: string;
  readonly keep: LossLogPosition;
  /** Complete records beyond the checkpoint (orphaned by a crash). */
  readonly orphanedRecords: number;
  readonly orphanedBytes: number;
  /** SHA-256 of the orphaned bytes (recorded in run.json), or null. */
  readonly orphanedSha256: string | null;
  /** Hash state over the kept prefix, to continue incrementally. */
  readonly prefixHash: Hash;
}

/**
 * Verifies `loss.jsonl` against a checkpoint's recorded position without
 * changing anything.
 *
 * @param file - path of `loss.jsonl`.
 * @param expected - position recorded in the checkpoint's job.
 * @returns the plan (what to cut).
 * @throws TrainerError `TRAINER_LOSS_LOG_INVALID` when the file is missing, shorter, or its prefix changed.
 */
export function planLossLogResume(file: string, expected: LossLogPosition): LossLogResumePlan {
  let bytes: Uint8Array;
  if (!existsSync(file)) {
    if (expected.bytes === 0) bytes = new Uint8Array(0);
    else throw new TrainerError('TRAINER_LOSS_LOG_INVALID', `loss.jsonl is missing but the checkpoint recorded ${expected.records} records (${expected.bytes} bytes)`, { path: file });
  } else {
    bytes = new Uint8Array(readFileSync(file));
  }
  if (bytes.length < expected.bytes) {
    throw new TrainerError(
      'TRAINER_LOSS_LOG_INVALID',
      `loss.jsonl has ${bytes.length} bytes but the checkpoint recorded ${expected.records} records in ${expected.bytes} bytes: history was lost`,
      { path: file },
    );
  }
  const prefixHash = createHash('sha256').update(bytes.subarray(0, expected.bytes));
  const sha = `sha256:${prefixHash.copy().digest('hex')}`;
  if (sha !== expected.sha256) {
    throw new TrainerError(
      'TRAINER_LOSS_LOG_INVALID',
      `the first ${expected.bytes} bytes of loss.jsonl changed since the checkpoint: expected ${expected.sha256}, found ${sha}`,
      { path: file },
    );
  }
  const tail = bytes.subarray(expected.bytes);
  const orphanedRecords = tail.reduce((n, b) => (b === 0x0a ? n + 1 : n), 0);
  return {
    file,
    keep: expected,
    orphanedRecords,
    orphanedBytes: tail.length,
    orphanedSha256: tail.length === 0 ? null : `sha256:${sha256Hex(tail)}`,
    prefixHash,
  };
}

/** The open, append-only loss log of a running job. */
export class LossLog {
  readonly #fd: number;
  readonly #hash: Hash;
  #records: number;
  #bytes: number;

  private constructor(fd: number, hash: Hash, records: number, bytes: number) {
    this.#fd = fd;
    this.#hash = hash;
    this.#records = records;
    this.#bytes = bytes;
  }

  /**
   * Opens a new, empty log (a fresh run).
   *
   * @param file - path of `loss.jsonl` (truncated if it exists).
   * @returns the log.
   */
  static create(file: string): LossLog {
    const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_APPEND, 0o644);
    return new LossLog(fd, createHash('sha256'), 0, 0);
  }

  /**
   * Applies a resume plan: cuts the orphaned tail (nothing before it is
   * rewritten) and opens the log for appending.
   *
   * @param plan - from {@link planLossLogResume}.
   * @returns the log positioned after the checkpoint's record.
   */
  static resume(plan: LossLogResumePlan): LossLog {
    const fd = openSync(plan.file, constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND, 0o644);
    try {
      if (plan.orphanedBytes > 0) ftruncateSync(fd, plan.keep.bytes);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
    return new LossLog(fd, plan.prefixHash.copy(), plan.keep.records, plan.keep.bytes);
  }

  /**
   * Appends one record.
   *
   * @param record - deterministic fields.
   * @param timing - wall-clock fields, or null.
   */
  append(record: LossRecord, timing: LossTiming | null): void {
    if (record.step !== this.#records + 1) {
      throw new TrainerError('TRAINER_LOSS_LOG_INVALID', `loss record for step ${record.step} appended after ${this.#records} records`, { step: record.step });
    }
    const bytes = ENCODER.encode(formatLossRecord(record, timing));
    let offset = 0;
    while (offset < bytes.length) offset += writeSync(this.#fd, bytes, offset, bytes.length - offset);
    this.#hash.update(bytes);
    this.#records += 1;
    this.#bytes += bytes.length;
  }

  /** The current position (records, bytes, SHA-256 of everything written). */
  position(): LossLogPosition {
    return { records: this.#records, bytes: this.#bytes, sha256: `sha256:${this.#hash.copy().digest('hex')}` };
  }

  /** Closes the file. */
  close(): void {
    closeSync(this.#fd);
  }
}
