/**
 * `job.json`: everything the next step depends on that `state.llmcp` does not
 * hold — the full config, the identity of every input, the data order and
 * cursor with the shuffle RNG, the schedule position, evaluation history and
 * best so far, the paired state file's size and LLMCP35 checksum, a
 * fingerprint of the next batch, the loss-log position — sealed by a SHA-256
 * digest of its canonical JSON.
 */
import { z } from 'zod';
import { canonicalDigest, canonicalJson, type JsonValue } from './internal/canonical-json.ts';
import { TrainerError } from './errors.ts';
import { readRecordedConfig, type TrainerConfig } from './config.ts';
import type { LossLogPosition } from './loss-log.ts';

/**
 * The job file format tag, the one every save writes. Version 4 (v3 → v4: a
 * job's size no longer grows with the corpus) holds the data order as a
 * constant-size state — `@llmcp/data`'s update-batch state of version 2: the
 * epoch, the cursor and the epoch seed the order is drawn again from — where
 * the older formats stored the whole window order; and its config holds every
 * key of this version (a config recorded by an older format gets the values
 * that reproduce what it meant: see `readRecordedConfig`). Like version 3 it
 * pairs the state file by its size and LLMCP35 checksum.
 */
export const JOB_FORMAT = 'llmcp-job/4';

/**
 * The third job format, still read: the data state holds the whole window
 * order (`@llmcp/data`'s version 1), which a resume turns into the version 2
 * state; it pairs its state file by size and LLMCP35 checksum
 * (`state: { bytes, checksum }`).
 */
export const JOB_FORMAT_V3 = 'llmcp-job/3';

/**
 * The second job format, still read: `state` also holds the SHA-256 of the
 * whole state file (`state.sha256`), which the pairing check still compares —
 * resuming such a checkpoint hashes its state file once more.
 */
export const JOB_FORMAT_V2 = 'llmcp-job/2';

/**
 * The first job format, still read: as {@link JOB_FORMAT_V2} except that
 * `state.checksum` held a plain FNV-1a 64 of the whole state file rather than
 * its LLMCP35 checksum, so the pairing check leaves that field to the SHA-256.
 */
export const LEGACY_JOB_FORMAT = 'llmcp-job/1';

/** The job formats {@link decodeJob} reads. */
export type JobFormat = typeof JOB_FORMAT | typeof JOB_FORMAT_V3 | typeof JOB_FORMAT_V2 | typeof LEGACY_JOB_FORMAT;

/**
 * Whether a job pairs with its state file by SHA-256 (formats
 * `llmcp-job/1` and `llmcp-job/2`, which record `state.sha256`).
 *
 * @param job - a job (or just its format).
 * @returns true for the two older formats.
 */
export function pairsBySha256(job: { readonly format: JobFormat }): boolean {
  return job.format === JOB_FORMAT_V2 || job.format === LEGACY_JOB_FORMAT;
}

/**
 * The paired `state.llmcp` as `job.json` records it: its size and LLMCP35
 * checksum label (`fnv1a64:…`, as `llmcp inspect` shows it); `sha256` only in
 * jobs of `llmcp-job/1` and `llmcp-job/2`.
 */
export interface JobStateRecord {
  readonly bytes: number;
  readonly checksum: string;
  /** `sha256:` of the whole state file; present exactly in the formats before `llmcp-job/3`. */
  readonly sha256?: string;
}

/** Identity of the training inputs and the implementation that consumed them. */
export interface InputIdentity {
  /** SHA-256 of the corpus bytes (for inline sources: of the canonical document list). */
  readonly corpus: { readonly sha256: string; readonly documents: number };
  /** SHA-256 of the split (manifest bytes, or the canonical partition lists). */
  readonly split: { readonly sha256: string; readonly train: number; readonly validation: number; readonly test: number };
  /** The tokenizer's canonical identity (`sha256:…`) and vocabulary size. */
  readonly tokenizer: { readonly identity: string; readonly vocabularySize: number };
  /** Everything that decides the numerics; any difference refuses a resume. */
  readonly implementation: {
    /** One string that changes whenever any numeric behaviour may change. */
    readonly id: string;
    /** `MATH_VERSION` of `@llmcp/model`'s deterministic math. */
    readonly math: string;
    /** The checkpoint format. */
    readonly format: string;
    /** The trainer's numerics version (loop order, evaluation weighting, data order). */
    readonly trainer: string;
  };
}

/** One completed evaluation. */
export interface EvaluationRecord {
  readonly step: number;
  readonly validationLoss: number;
  /** Training-evaluation loss, when configured. */
  readonly trainingLoss: number | null;
}

/** Everything in `job.json` except its digest. */
export interface JobBody {
  readonly format: JobFormat;
  /** Updates completed. */
  readonly step: number;
  /** Work done at `step` beyond the update itself. */
  readonly phase: {
    /** Validation due at `step` is done (or none was due). */
    readonly validated: boolean;
    /** The cadence checkpoint and sample audit due at `step` is done (or none was due). */
    readonly audited: boolean;
  };
  readonly config: TrainerConfig;
  /** `sha256:` of the canonical config. */
  readonly configDigest: string;
  readonly inputs: InputIdentity;
  /** Data order, cursor and shuffle RNG state (engine-defined JSON). */
  readonly data: JsonValue;
  readonly schedule: { readonly step: number; readonly nextLearningRate: number | null };
  readonly evaluations: readonly EvaluationRecord[];
  readonly best: { readonly step: number; readonly validationLoss: number } | null;
  readonly sampling: {
    /** Raw SplitMix64 state stored in the paired `state.llmcp` (hex). */
    readonly checkpointState: string;
    /** Raw state of the sampling stream after this checkpoint's audit (hex): what the next checkpoint continues from. */
    readonly nextState: string;
    /** Step of the last sample audit, or null. */
    readonly lastAuditStep: number | null;
  };
  /** Position of `loss.jsonl` after the record of `step`. */
  readonly lossLog: LossLogPosition;
  /** The paired `state.llmcp`: size and LLMCP35 checksum label (and a SHA-256 in the older formats). */
  readonly state: JobStateRecord;
  /** FNV-1a 64 fingerprint of the inputs and targets of update `step + 1`, or null at the end. */
  readonly nextBatch: string | null;
  /** Run lineage. */
  readonly run: { readonly id: string; readonly pivots: number };
}

/** A sealed job: its body plus `digest`. */
export interface Job extends JobBody {
  /** `sha256:` of the canonical JSON of every other field. */
  readonly digest: string;
}

const hex64 = z.string().regex(/^0x[0-9a-f]{16}$/);
const sha = z.string().regex(/^sha256:[0-9a-f]{64}$/);
const count = z.number().int().nonnegative();
const finite = z.number().refine(Number.isFinite, 'expected a finite number');

const jobSchema = z.strictObject({
  format: z.union([z.literal(JOB_FORMAT), z.literal(JOB_FORMAT_V3), z.literal(JOB_FORMAT_V2), z.literal(LEGACY_JOB_FORMAT)]),
  step: count,
  phase: z.strictObject({ validated: z.boolean(), audited: z.boolean() }),
  config: z.unknown(),
  configDigest: sha,
  inputs: z.strictObject({
    corpus: z.strictObject({ sha256: sha, documents: count }),
    split: z.strictObject({ sha256: sha, train: count, validation: count, test: count }),
    tokenizer: z.strictObject({ identity: z.string().min(1), vocabularySize: count }),
    implementation: z.strictObject({ id: z.string().min(1), math: z.string().min(1), format: z.string().min(1), trainer: z.string().min(1) }),
  }),
  // Parsed JSON, so plain JSON data; the engine checks it in full when it restores the data order
  // (a schema walk over the whole window order of the older formats cost seconds at every read).
  data: z.unknown(),
  schedule: z.strictObject({ step: count, nextLearningRate: finite.nullable() }),
  evaluations: z.array(z.strictObject({ step: count, validationLoss: finite, trainingLoss: finite.nullable() })),
  best: z.strictObject({ step: count, validationLoss: finite }).nullable(),
  sampling: z.strictObject({ checkpointState: hex64, nextState: hex64, lastAuditStep: count.nullable() }),
  lossLog: z.strictObject({ records: count, bytes: count, sha256: sha }),
  state: z.strictObject({ bytes: count, sha256: sha.optional(), checksum: z.string().regex(/^fnv1a64:[0-9a-f]{16}$/) }),
  nextBatch: z.string().regex(/^fnv1a64:[0-9a-f]{16}$/).nullable(),
  run: z.strictObject({ id: z.string().min(1), pivots: count }),
  digest: sha,
}).superRefine((job, ctx) => {
  // `state.sha256` belongs to the formats that pair by it, and only to them.
  const bySha = pairsBySha256(job);
  if (bySha !== (job.state.sha256 !== undefined)) {
    ctx.addIssue({ code: 'custom', path: ['state', 'sha256'], message: bySha ? `${job.format} requires state.sha256` : `${job.format} records no state.sha256 (it pairs by size and LLMCP35 checksum)` });
  }
});

/**
 * Seals a job body with its digest.
 *
 * @param body - the job without a digest.
 * @returns the sealed job.
 */
export function sealJob(body: JobBody): Job {
  const { digest: _ignored, ...rest } = body as JobBody & { digest?: string };
  return { ...rest, digest: canonicalDigest(rest) };
}

/**
 * The bytes of `job.json`: canonical JSON (sorted keys, two-space indent) and a final newline.
 *
 * @param job - a sealed job.
 * @returns UTF-8 bytes.
 */
export function encodeJob(job: Job): Uint8Array {
  return new TextEncoder().encode(`${canonicalJson(job, '  ')}\n`);
}

/**
 * Parses and verifies `job.json` bytes: JSON, schema, digest, config.
 *
 * @param bytes - the file's bytes.
 * @param where - file name for messages.
 * @returns the verified job.
 * @throws TrainerError `TRAINER_JOB_INVALID` naming what is wrong.
 */
export function decodeJob(bytes: Uint8Array, where = 'job.json'): Job {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (cause) {
    throw new TrainerError('TRAINER_JOB_INVALID', `${where} is not valid UTF-8 JSON (${bytes.length} bytes): ${(cause as Error).message}`, {
      path: where,
      cause,
    });
  }
  const parsed = jobSchema.safeParse(json);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const field = first === undefined ? '' : first.path.map(String).join('.');
    throw new TrainerError('TRAINER_JOB_INVALID', `${where} does not match the job schema at ${field || '(root)'}: ${first?.message ?? 'invalid'}`, {
      path: where,
      fields: [field],
    });
  }
  const { digest, ...rest } = parsed.data;
  // One canonical serialisation of the job: the digest's. The config digest is over the config as recorded (a config
  // of an older format lacks the keys added since; reading it fills them in, below).
  const computed = canonicalDigest(rest);
  if (computed !== digest) {
    throw new TrainerError('TRAINER_JOB_INVALID', `${where} failed its SHA-256 digest check: stored ${digest}, computed ${computed}`, {
      path: where,
      fields: ['digest'],
    });
  }
  if (canonicalDigest(rest.config) !== rest.configDigest) {
    throw new TrainerError('TRAINER_JOB_INVALID', `${where}: configDigest does not match its config`, { path: where, fields: ['configDigest'] });
  }
  let config: TrainerConfig;
  try {
    config = readRecordedConfig(rest.config);
  } catch (cause) {
    throw new TrainerError('TRAINER_JOB_INVALID', `${where} holds an invalid config: ${(cause as Error).message}`, { path: where, cause });
  }
  return { ...(parsed.data as unknown as Job), config };
}
