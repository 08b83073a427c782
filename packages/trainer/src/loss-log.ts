/**
 * `loss.jsonl`: the run's history, append-only, never archived or reset. Two
 * kinds of record (their one text form and parser live in `loss-records.ts`):
 * a training record for every update step, and an evaluation record for
 * every evaluation, written right after the training record of the step it
 * evaluated (step 0's first of all). The continuity rule: training steps run
 * 1, 2, 3, … without gaps; an evaluation record's step equals the step of the
 * training record before it (0 before the first), at most one per step. Runs
 * written before evaluation records existed simply have none; they resume.
 *
 * "Records" counts training records (= steps logged) everywhere: in a
 * checkpoint's recorded position (`job.json` `lossLog.records`, whose `bytes`
 * and `sha256` cover both kinds), in `runStatus().lossRecords`, in
 * `verifyRun().lossLog.records` and `orphaned`, and in a resume's cut count;
 * evaluation records are counted apart (`evaluations`).
 *
 * Each checkpoint records the log's length and the SHA-256 of that prefix; a
 * resume verifies the prefix unchanged and cuts only what a crash left beyond
 * the checkpoint (the count of training records cut and the SHA-256 of the
 * cut bytes go to `run.json`), so after any sequence of kills and resumes the
 * file holds exactly one training record per step, in order, each evaluation
 * after its step.
 *
 * Training record layout (fixed key order): `step`, `loss`, `learningRate`,
 * `gradientNorm`, `clipped`, `tokens`, then — only with `log.timing` on —
 * `timing: { tokensPerSecond, stepMs, time }`; evaluation records are
 * `{"step":N,"validationLoss":…,"trainingLoss":…|null}`. Numbers are
 * ECMAScript's shortest round-trip decimals, which read back to the exact f64
 * bits. With timing off the file is byte-identical between an interrupted and
 * an uninterrupted run; with timing on it is identical once `timing` is removed.
 */
import { closeSync, existsSync, fsyncSync, ftruncateSync, openSync, readSync, renameSync, rmSync, constants } from 'node:fs';
import { createHash, type Hash } from 'node:crypto';
import { isFormatError } from '@llmcp/format';
import { openRegularFileSync } from '@llmcp/format/node';
import { TrainerError } from './errors.ts';
import { sha256Hex } from './internal/canonical-json.ts';
import { writeAllSync } from './internal/durable-fs.ts';
import {
  formatEvaluationRecord as formatEvaluationLine,
  formatLossRecord as formatRecordLine,
  parseLossLine,
  type EvaluationLogRecord,
  type LossLogLine,
  type LossRecord,
  type LossTiming,
} from './loss-records.ts';

export type { EvaluationLogRecord, LossRecord, LossTiming } from './loss-records.ts';

/** Position of the log after a given record. */
export interface LossLogPosition {
  /** Training records (one per update step) up to here; evaluation records are not counted (the bytes and hash cover them). */
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
  /** The training records, one per step (a damaged line is left out; `problem` names it). */
  readonly records: readonly (LossRecord & { readonly timing?: LossTiming })[];
  /** Byte offset just after each training record's newline. */
  readonly ends: readonly number[];
  /** The evaluation records, each right after the training record of its step (step 0's first of all). */
  readonly evaluations: readonly EvaluationLogRecord[];
  /** Bytes after the last complete line (a torn write), 0 when clean. */
  readonly trailingBytes: number;
  /** First problem found (bad JSON, step out of sequence), or null. */
  readonly problem: string | null;
}

/** Longest line the scanner accepts; a longer one is reported (and skipped) instead of buffered. */
const MAX_LINE_BYTES = 1 << 20;

/** Bytes per read when streaming `loss.jsonl` (any size, bounded memory). */
const READ_CHUNK = 4 << 20;

/** Where a scan starts: at the beginning of the file, or after a prefix already known (a resume's checkpoint). */
interface ScanStart {
  /** Training records before the scanned bytes. */
  readonly records: number;
  /** Byte offset of the scanned bytes in the file. */
  readonly offset: number;
}

/**
 * The one reader of `loss.jsonl` lines: fed bytes in any chunking, it parses
 * every complete line with {@link parseLossLine} and checks the continuity
 * rule — training records carry steps 1, 2, 3, … without gaps; an evaluation
 * record's step equals the step of the training record before it (0 before
 * the first), at most one per step — handing each line on; memory stays
 * bounded by {@link MAX_LINE_BYTES}.
 *
 * `records` counts the training records (one per step; a damaged line counts
 * as one where it stands), `evaluations` the evaluation records.
 */
class LossLineScanner {
  readonly #decoder = new TextDecoder('utf-8', { fatal: true });
  readonly #onLine: (line: LossLogLine | null, end: number) => void;
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  #overlong = false;
  #offset: number;
  #lineStart: number;
  #lines = 0;
  #evaluatedStep: number | null = null;
  records: number;
  evaluations = 0;
  problem: string | null = null;

  constructor(onLine: (line: LossLogLine | null, end: number) => void, start: ScanStart = { records: 0, offset: 0 }) {
    this.#onLine = onLine;
    this.records = start.records;
    this.#offset = start.offset;
    this.#lineStart = start.offset;
  }

  #report(problem: string): void {
    if (this.problem === null) this.problem = problem;
  }

  #line(bytes: Uint8Array, end: number): void {
    const where = `line ${this.#lines + 1} (byte ${this.#lineStart})`;
    this.#lines += 1;
    let parsed: ReturnType<typeof parseLossLine>;
    if (this.#overlong) parsed = { kind: 'problem', problem: `is longer than ${MAX_LINE_BYTES} bytes` };
    else {
      let text: string;
      try {
        text = this.#decoder.decode(bytes);
        parsed = parseLossLine(text);
      } catch (e) {
        parsed = { kind: 'problem', problem: `is not valid UTF-8: ${(e as Error).message}` };
      }
    }
    if (parsed.kind === 'problem') {
      this.#report(`${where} ${parsed.problem.startsWith('is ') ? parsed.problem : `is ${parsed.problem.startsWith('not ') ? '' : 'not a loss record: '}${parsed.problem}`}`);
      this.records += 1;
      this.#onLine(null, end);
      return;
    }
    if (parsed.kind === 'evaluation') {
      const step = parsed.record.step;
      if (step !== this.records) this.#report(`${where} is an evaluation of step ${step}, but the training record before it is of step ${this.records}`);
      else if (this.#evaluatedStep === step) this.#report(`${where} is a second evaluation record of step ${step}`);
      this.#evaluatedStep = step;
      this.evaluations += 1;
    } else {
      if (parsed.record.step !== this.records + 1) this.#report(`record ${this.records + 1} (byte ${this.#lineStart}) has step ${parsed.record.step}, expected ${this.records + 1}`);
      this.records += 1;
    }
    this.#onLine(parsed, end);
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
 * Parses `loss.jsonl` bytes and checks the continuity rule (training steps
 * 1, 2, 3, … without gaps; each evaluation record of the step of the training
 * record before it, at most one per step).
 *
 * @param bytes - the file's bytes.
 * @returns records, their end offsets, and the first problem.
 */
export function parseLossLog(bytes: Uint8Array): ParsedLossLog {
  const records: (LossRecord & { timing?: LossTiming })[] = [];
  const ends: number[] = [];
  const evaluations: EvaluationLogRecord[] = [];
  const scanner = new LossLineScanner((line, end) => {
    if (line?.kind === 'evaluation') evaluations.push(line.record);
    else if (line?.kind === 'training') {
      records.push(line.timing === null ? line.record : { ...line.record, timing: line.timing });
      ends.push(end);
    }
  });
  scanner.push(bytes);
  return { records, ends, evaluations, trailingBytes: scanner.trailingBytes, problem: scanner.problem };
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
 * @throws TrainerError `TRAINER_LOSS_LOG_INVALID` when the file is not a regular file or cannot be opened.
 */
export function streamFile(file: string, onChunk: (chunk: Uint8Array, offset: number) => void, chunkBytes: number = READ_CHUNK): number {
  let fd: number;
  try {
    // The input rule: a regular file, opened without blocking (a FIFO in the run's place of loss.jsonl is refused).
    fd = openRegularFileSync(file, 'loss log').fd;
  } catch (cause) {
    throw new TrainerError('TRAINER_LOSS_LOG_INVALID', isFormatError(cause) ? cause.message : `cannot read ${file}: ${(cause as Error).message}`, { path: file, cause });
  }
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
  /** Training records (one per step; a damaged line counts as one). */
  readonly records: number;
  /** Evaluation records. */
  readonly evaluations: number;
  /** The last training record. */
  readonly last: (LossRecord & { readonly timing?: LossTiming }) | null;
  /** The last evaluation record. */
  readonly lastEvaluation: EvaluationLogRecord | null;
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
  let lastEvaluation: EvaluationLogRecord | null = null;
  const scanner = new LossLineScanner((line) => {
    if (line?.kind === 'training') last = line.timing === null ? line.record : { ...line.record, timing: line.timing };
    else if (line?.kind === 'evaluation') lastEvaluation = line.record;
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
  return {
    bytes: size,
    records: scanner.records,
    evaluations: scanner.evaluations,
    last,
    lastEvaluation,
    trailingBytes: scanner.trailingBytes,
    problem: scanner.problem,
    prefixSha256,
  };
}

/** What a resume will do to `loss.jsonl`, decided before anything is changed. */
export interface LossLogResumePlan {
  readonly file: string;
  readonly keep: LossLogPosition;
  /** Complete training records (steps) beyond the checkpoint, orphaned by a crash (evaluation records among them are cut too, not counted). */
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
  // The tail is read with the one line reader, starting after the checkpoint's records, to count its training records.
  const tail = new LossLineScanner(() => {}, { records: expected.records, offset: expected.bytes });
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
          tailHash.update(chunk.subarray(cut));
          tail.push(chunk.subarray(cut));
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
    orphanedRecords: tail.records - expected.records,
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
  #evaluatedStep: number | null;

  private constructor(fd: number, hash: Hash, position: { records: number; bytes: number; evaluatedStep: number | null }) {
    this.#fd = fd;
    this.#hash = hash;
    this.#records = position.records;
    this.#bytes = position.bytes;
    this.#evaluatedStep = position.evaluatedStep;
  }

  /**
   * Opens a new, empty log (a fresh run).
   *
   * @param file - path of `loss.jsonl` (truncated if it exists).
   * @returns the log.
   */
  static create(file: string): LossLog {
    const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_APPEND, 0o644);
    return new LossLog(fd, createHash('sha256'), { records: 0, bytes: 0, evaluatedStep: null });
  }

  /**
   * Applies a resume plan: cuts the orphaned tail (nothing before it is
   * rewritten) and opens the log for appending.
   *
   * @param plan - from {@link planLossLogResume}.
   * @param evaluated - whether the kept prefix already ends with the evaluation record of its last step (the checkpoint was validated at its step and logged it).
   * @returns the log positioned after the checkpoint's record.
   */
  static resume(plan: LossLogResumePlan, evaluated = false): LossLog {
    const fd = openSync(plan.file, constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND, 0o644);
    try {
      if (plan.orphanedBytes > 0) ftruncateSync(fd, plan.keep.bytes);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
    return new LossLog(fd, plan.prefixHash.copy(), { records: plan.keep.records, bytes: plan.keep.bytes, evaluatedStep: evaluated ? plan.keep.records : null });
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
    this.#write(formatLossRecord(record, timing));
    this.#records += 1;
  }

  /**
   * Appends the evaluation record of the current step, right after its training record (step 0's first of all).
   *
   * @param record - the evaluation.
   * @throws TrainerError `TRAINER_LOSS_LOG_INVALID` for another step than the last training record's, or a second evaluation of a step; `TRAINER_NON_FINITE` for a non-finite loss.
   */
  appendEvaluation(record: EvaluationLogRecord): void {
    if (record.step !== this.#records || this.#evaluatedStep === record.step) {
      throw new TrainerError(
        'TRAINER_LOSS_LOG_INVALID',
        `evaluation record for step ${record.step} appended ${this.#evaluatedStep === record.step ? 'twice' : `after the training record of step ${this.#records}`}`,
        { step: record.step },
      );
    }
    let line: string;
    try {
      line = formatEvaluationLine(record);
    } catch (e) {
      if (e instanceof RangeError) throw new TrainerError('TRAINER_NON_FINITE', e.message, { step: record.step });
      throw e;
    }
    this.#write(line);
    this.#evaluatedStep = record.step;
  }

  #write(line: string): void {
    const bytes = ENCODER.encode(line);
    writeAllSync(this.#fd, bytes);
    this.#hash.update(bytes);
    this.#bytes += bytes.length;
  }

  /**
   * The current position (training records, bytes and SHA-256 of everything written, evaluation records included).
   *
   * @returns the position, as a checkpoint records it.
   */
  position(): LossLogPosition {
    return { records: this.#records, bytes: this.#bytes, sha256: `sha256:${this.#hash.copy().digest('hex')}` };
  }

  /** Closes the file. */
  close(): void {
    closeSync(this.#fd);
  }
}
