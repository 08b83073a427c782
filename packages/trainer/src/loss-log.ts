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
import { closeSync, existsSync, fsyncSync, ftruncateSync, openSync, readSync, renameSync, rmSync, constants } from 'node:fs';
import { createHash, type Hash } from 'node:crypto';
import { TrainerError } from './errors.ts';
import { sha256Hex } from './internal/canonical-json.ts';
import { writeAllSync } from './internal/durable-fs.ts';
import { formatLossRecord as formatRecordLine, type LossRecord, type LossTiming } from './loss-records.ts';

export type { LossRecord, LossTiming } from './loss-records.ts';

/** Position of the log after a given record. */
export interface LossLogPosition {
  readonly records: number;
  readonly bytes: number;
  readonly sha256: string;
}

/** The position of an empty loss log (no records, the SHA-256 of no bytes). */
export const EMPTY_LOSS_LOG: LossLogPosition = { records: 0, bytes: 0, sha256: `sha256:${sha256Hex(new Uint8Array(0))}` };

const ENCODER = new TextEncoder();

/**
 * Formats one training record as a line; a non-finite number is a typed error.
 *
 * @param record - deterministic fields.
 * @param timing - optional timing.
 * @returns the JSON line.
 * @throws TrainerError `TRAINER_NON_FINITE` when a number is not finite.
 */
export function formatLossRecord(record: LossRecord, timing: LossTiming | null): string {
  try {
    return formatRecordLine(record, timing);
  } catch (e) {
    if (e instanceof RangeError) throw new TrainerError('TRAINER_NON_FINITE', e.message, { step: record.step });
    throw e;
  }
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

/** Longest line the scanner accepts; a longer one is reported (and skipped) instead of buffered. */
const MAX_LINE_BYTES = 1 << 20;

/** Bytes per read when streaming `loss.jsonl` (any size, bounded memory). */
const READ_CHUNK = 4 << 20;

const NOT_A_RECORD: LossRecord = { step: Number.NaN, loss: Number.NaN, learningRate: Number.NaN, gradientNorm: Number.NaN, clipped: false, tokens: 0 };

/**
 * The one reader of `loss.jsonl` lines: fed bytes in any chunking, it checks
 * every complete line (valid UTF-8 JSON, steps 1, 2, 3, … without gaps) and
 * hands each record on; memory stays bounded by {@link MAX_LINE_BYTES}.
 */
class LossLineScanner {
  readonly #decoder = new TextDecoder('utf-8', { fatal: true });
  readonly #onRecord: (record: LossRecord & { timing?: LossTiming }, end: number) => void;
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  #overlong = false;
  #offset = 0;
  #lineStart = 0;
  records = 0;
  problem: string | null = null;

  constructor(onRecord: (record: LossRecord & { timing?: LossTiming }, end: number) => void) {
    this.#onRecord = onRecord;
  }

  #line(bytes: Uint8Array, end: number): void {
    const start = this.#lineStart;
    let value: LossRecord & { timing?: LossTiming };
    if (this.#overlong) {
      if (this.problem === null) this.problem = `line ${this.records + 1} (byte ${start}) is longer than ${MAX_LINE_BYTES} bytes`;
      value = NOT_A_RECORD;
    } else {
      try {
        value = JSON.parse(this.#decoder.decode(bytes)) as LossRecord & { timing?: LossTiming };
        if (this.problem === null && value.step !== this.records + 1) {
          this.problem = `record ${this.records + 1} (byte ${start}) has step ${String(value.step)}, expected ${this.records + 1}`;
        }
      } catch (e) {
        if (this.problem === null) this.problem = `line ${this.records + 1} (byte ${start}) is not valid JSON: ${(e as Error).message}`;
        value = NOT_A_RECORD;
      }
    }
    this.records += 1;
    this.#onRecord(value, end);
  }

  /** Feeds the next bytes of the file. */
  push(chunk: Uint8Array): void {
    let from = 0;
    while (from < chunk.length) {
      const nl = chunk.indexOf(0x0a, from);
      const upto = nl < 0 ? chunk.length : nl;
      if (!this.#overlong) {
        if (this.#pendingBytes + (upto - from) > MAX_LINE_BYTES) {
          this.#overlong = true;
          this.#pending = [];
          this.#pendingBytes = 0;
        } else if (upto > from) {
          this.#pending.push(chunk.slice(from, upto));
          this.#pendingBytes += upto - from;
        }
      }
      if (nl < 0) {
        this.#offset += chunk.length - from;
        return;
      }
      this.#offset += nl + 1 - from;
      const line = this.#pending.length === 1 ? (this.#pending[0] as Uint8Array) : concat(this.#pending, this.#pendingBytes);
      this.#line(line, this.#offset);
      this.#pending = [];
      this.#pendingBytes = 0;
      this.#overlong = false;
      this.#lineStart = this.#offset;
      from = nl + 1;
    }
  }

  /** Bytes after the last complete line. */
  get trailingBytes(): number {
    return this.#offset - this.#lineStart;
  }
}

function concat(parts: readonly Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
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
  const scanner = new LossLineScanner((record, end) => {
    records.push(record);
    ends.push(end);
  });
  scanner.push(bytes);
  return { records, ends, trailingBytes: scanner.trailingBytes, problem: scanner.problem };
}

/**
 * Reads a file front to back in bounded chunks (any size, including beyond
 * the 2 GiB `readFileSync` limit), handing each chunk to `onChunk` (the view
 * is reused: copy what must be kept).
 *
 * @param file - the file.
 * @param onChunk - receives each chunk and its file offset.
 * @param chunkBytes - read size.
 * @returns the number of bytes read.
 */
export function streamFile(file: string, onChunk: (chunk: Uint8Array, offset: number) => void, chunkBytes: number = READ_CHUNK): number {
  const fd = openSync(file, constants.O_RDONLY);
  try {
    const buffer = new Uint8Array(chunkBytes);
    let offset = 0;
    for (;;) {
      const n = readSync(fd, buffer, 0, buffer.length, offset);
      if (n === 0) return offset;
      onChunk(buffer.subarray(0, n), offset);
      offset += n;
    }
  } finally {
    closeSync(fd);
  }
}

/** What {@link scanLossLog} found, without holding the records. */
export interface LossLogScan {
  readonly bytes: number;
  readonly records: number;
  readonly last: (LossRecord & { readonly timing?: LossTiming }) | null;
  readonly trailingBytes: number;
  readonly problem: string | null;
  /** SHA-256 of the first `prefixBytes` bytes, when asked for and the file is that long. */
  readonly prefixSha256: string | null;
}

/**
 * Scans `loss.jsonl` in bounded memory: the continuity check of
 * {@link parseLossLog}, the record count, the last record and, optionally,
 * the SHA-256 of a prefix.
 *
 * @param file - path of `loss.jsonl` (a missing file scans as empty).
 * @param prefixBytes - length of the prefix to hash, or null.
 * @param chunkBytes - read size (tests use tiny ones).
 * @returns the scan.
 * @throws TrainerError `TRAINER_LOSS_LOG_INVALID` when the file cannot be read (e.g. it is a directory).
 */
export function scanLossLog(file: string, prefixBytes: number | null = null, chunkBytes: number = READ_CHUNK): LossLogScan {
  let last: (LossRecord & { timing?: LossTiming }) | null = null;
  const scanner = new LossLineScanner((record) => {
    last = record;
  });
  const hash = createHash('sha256');
  let size = 0;
  if (existsSync(file)) {
    try {
      size = streamFile(
        file,
        (chunk, offset) => {
          scanner.push(chunk);
          if (prefixBytes !== null && offset < prefixBytes) hash.update(chunk.subarray(0, Math.min(chunk.length, prefixBytes - offset)));
        },
        chunkBytes,
      );
    } catch (cause) {
      throw new TrainerError('TRAINER_LOSS_LOG_INVALID', `loss.jsonl cannot be read: ${(cause as Error).message}`, { path: file, cause });
    }
  }
  const prefixSha256 = prefixBytes !== null && size >= prefixBytes ? `sha256:${hash.digest('hex')}` : null;
  return { bytes: size, records: scanner.records, last, trailingBytes: scanner.trailingBytes, problem: scanner.problem, prefixSha256 };
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
 * changing anything (streamed: any file size).
 *
 * @param file - path of `loss.jsonl`.
 * @param expected - position recorded in the checkpoint's job.
 * @param chunkBytes - read size (tests use tiny ones).
 * @returns the plan (what to cut).
 * @throws TrainerError `TRAINER_LOSS_LOG_INVALID` when the file is missing, shorter, or its prefix changed.
 */
export function planLossLogResume(file: string, expected: LossLogPosition, chunkBytes: number = READ_CHUNK): LossLogResumePlan {
  const prefixHash = createHash('sha256');
  const tailHash = createHash('sha256');
  let size = 0;
  let orphanedRecords = 0;
  if (!existsSync(file)) {
    if (expected.bytes !== 0) {
      throw new TrainerError('TRAINER_LOSS_LOG_INVALID', `loss.jsonl is missing but the checkpoint recorded ${expected.records} records (${expected.bytes} bytes)`, { path: file });
    }
  } else {
    size = streamFile(
      file,
      (chunk, offset) => {
        const cut = Math.max(0, Math.min(chunk.length, expected.bytes - offset));
        if (cut > 0) prefixHash.update(chunk.subarray(0, cut));
        if (cut < chunk.length) {
          const tail = chunk.subarray(cut);
          tailHash.update(tail);
          for (let i = tail.indexOf(0x0a); i >= 0; i = tail.indexOf(0x0a, i + 1)) orphanedRecords += 1;
        }
      },
      chunkBytes,
    );
  }
  if (size < expected.bytes) {
    throw new TrainerError(
      'TRAINER_LOSS_LOG_INVALID',
      `loss.jsonl has ${size} bytes but the checkpoint recorded ${expected.records} records in ${expected.bytes} bytes: history was lost`,
      { path: file },
    );
  }
  const sha = `sha256:${prefixHash.copy().digest('hex')}`;
  if (sha !== expected.sha256) {
    throw new TrainerError(
      'TRAINER_LOSS_LOG_INVALID',
      `the first ${expected.bytes} bytes of loss.jsonl changed since the checkpoint: expected ${expected.sha256}, found ${sha}`,
      { path: file },
    );
  }
  const orphanedBytes = size - expected.bytes;
  return {
    file,
    keep: expected,
    orphanedRecords,
    orphanedBytes,
    orphanedSha256: orphanedBytes === 0 ? null : `sha256:${tailHash.digest('hex')}`,
    prefixHash,
  };
}

/**
 * Writes the first `expected.bytes` bytes of a loss log to a new file (a
 * fork's history), streamed, verified against the recorded SHA-256, fsynced,
 * and renamed into place; nothing is left behind on failure.
 *
 * @param from - the source `loss.jsonl`.
 * @param to - the new `loss.jsonl` (must not exist).
 * @param expected - the position recorded by the fork's checkpoint.
 * @throws TrainerError `TRAINER_LOSS_LOG_INVALID` when the source prefix is not the recorded one.
 */
export async function copyLossLogPrefix(from: string, to: string, expected: LossLogPosition): Promise<void> {
  const tmp = `${to}.tmp-${process.pid}`;
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
  let ok = false;
  try {
    const hash = createHash('sha256');
    let copied = 0;
    if (expected.bytes > 0) {
      streamFile(from, (chunk, offset) => {
        const n = Math.max(0, Math.min(chunk.length, expected.bytes - offset));
        if (n === 0) return;
        hash.update(chunk.subarray(0, n));
        writeAllSync(fd, chunk.subarray(0, n));
        copied += n;
      });
    }
    const sha = `sha256:${hash.digest('hex')}`;
    if (copied !== expected.bytes || sha !== expected.sha256) {
      throw new TrainerError('TRAINER_LOSS_LOG_INVALID', `the loss log ${from} does not hold the history the checkpoint recorded (${expected.records} records, ${expected.sha256})`, { path: from });
    }
    fsyncSync(fd);
    ok = true;
  } finally {
    closeSync(fd);
    if (!ok) rmSync(tmp, { force: true });
  }
  renameSync(tmp, to);
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
    writeAllSync(this.#fd, bytes);
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
