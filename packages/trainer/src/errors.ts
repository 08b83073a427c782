/**
 * The one error class of `@llmcp/trainer`. Every failure on a public path is a
 * {@link TrainerError} with a stable, package-prefixed `code` (codes are API:
 * adding one is a minor change, renaming or removing one is major).
 */

/** Stable error codes of `@llmcp/trainer`. */
export const TRAINER_ERROR_CODES = {
  /** The config file or object does not match the schema (the message names the key). */
  TRAINER_CONFIG_INVALID: 'TRAINER_CONFIG_INVALID',
  /** A config file could not be read or is not valid JSON. */
  TRAINER_CONFIG_UNREADABLE: 'TRAINER_CONFIG_UNREADABLE',
  /** A resume, pivot or fork was asked to change fields it may not change (the fields are listed). */
  TRAINER_CONFIG_CHANGED: 'TRAINER_CONFIG_CHANGED',
  /** A training input (corpus, split, tokenizer) differs from the one the run recorded. */
  TRAINER_INPUT_CHANGED: 'TRAINER_INPUT_CHANGED',
  /** The run was written by a different implementation (numerics) version. */
  TRAINER_IMPLEMENTATION_CHANGED: 'TRAINER_IMPLEMENTATION_CHANGED',
  /** A training input could not be read or parsed (corpus, split, tokenizer file). */
  TRAINER_INPUT_INVALID: 'TRAINER_INPUT_INVALID',
  /** `job.json` is not valid JSON, fails its schema, or its SHA-256 digest does not match. */
  TRAINER_JOB_INVALID: 'TRAINER_JOB_INVALID',
  /** `state.llmcp` is missing or fails LLMCP35 validation (the format error is the cause). */
  TRAINER_STATE_INVALID: 'TRAINER_STATE_INVALID',
  /** `job.json` and `state.llmcp` of one slot do not belong together. */
  TRAINER_PAIR_MISMATCH: 'TRAINER_PAIR_MISMATCH',
  /**
   * No checkpoint slot of the run verifies (the report lists why each was refused), or the ones left are
   * older than what run.json or best/ prove the run had (slots missing, never silently skipped).
   */
  TRAINER_NO_CHECKPOINT: 'TRAINER_NO_CHECKPOINT',
  /** A slot report's code (never thrown): the slot predates a pivot recorded in run.json and is passed over, since resuming it would undo the pivot. */
  TRAINER_SLOT_SUPERSEDED: 'TRAINER_SLOT_SUPERSEDED',
  /**
   * A slot holds a checkpoint of another run (its job's run id is not the one in run.json, e.g. a `best/` copied
   * in from another run): never a resume candidate, never evidence or the best, reported as such.
   */
  TRAINER_SLOT_FOREIGN: 'TRAINER_SLOT_FOREIGN',
  /** The directory is not a run directory, or it already holds a run where a new one was asked for. */
  TRAINER_RUN_INVALID: 'TRAINER_RUN_INVALID',
  /** Another live process holds the run directory's lock. */
  TRAINER_RUN_LOCKED: 'TRAINER_RUN_LOCKED',
  /** `loss.jsonl` disagrees with the checkpoint (missing, shorter, or its history hash differs). */
  TRAINER_LOSS_LOG_INVALID: 'TRAINER_LOSS_LOG_INVALID',
  /** The restored data order does not produce the batch the checkpoint recorded next. */
  TRAINER_RESTORE_MISMATCH: 'TRAINER_RESTORE_MISMATCH',
  /** A loss or gradient became non-finite; training stopped without saving the bad state. */
  TRAINER_NON_FINITE: 'TRAINER_NON_FINITE',
  /** A (background) checkpoint save failed; the previous checkpoint is intact. */
  TRAINER_SAVE_FAILED: 'TRAINER_SAVE_FAILED',
  /** A file-system operation on the run directory failed. */
  TRAINER_IO: 'TRAINER_IO',
  /**
   * The torch engine cannot start on this machine: no such Python interpreter, PyTorch or the llmcp Python
   * package not importable by it, no CUDA device, or the rendezvous port in use (the message says what to install or change).
   */
  TRAINER_ENGINE_UNAVAILABLE: 'TRAINER_ENGINE_UNAVAILABLE',
  /** A rank of the torch engine died, hung or failed (the message names the rank and the last lines of its stderr); the last checkpoint is intact. */
  TRAINER_ENGINE_FAILED: 'TRAINER_ENGINE_FAILED',
  /** The trainer and the torch engine speak different protocol versions, or a message broke the protocol. */
  TRAINER_ENGINE_PROTOCOL: 'TRAINER_ENGINE_PROTOCOL',
  /** A provenance manifest (`model.sig`, `<file>.sig`, `lineage/*.sig`) cannot be read: not the model-signing layout, not canonical, or its subject digest disagrees with its resources (the message names the file). */
  TRAINER_MANIFEST_INVALID: 'TRAINER_MANIFEST_INVALID',
  /** The files do not match their manifest: a shard's SHA-256 differs, a listed file is missing or another file is there, or the manifest belongs to another checkpoint, step, slot or run (the message names the file). */
  TRAINER_MANIFEST_MISMATCH: 'TRAINER_MANIFEST_MISMATCH',
  /** A manifest is not signed by the trusted key: unsigned, signed with another key, or its signature does not verify. */
  TRAINER_SIGNATURE_INVALID: 'TRAINER_SIGNATURE_INVALID',
  /** A lineage link does not hold: its parent is in no manifest of the run (nor named as pruned), or the parent disagrees with the link (run, step), or a link is missing (the message names the manifest and the link). */
  TRAINER_LINEAGE_BROKEN: 'TRAINER_LINEAGE_BROKEN',
  /** A signing or trusted key cannot be used: not a PEM key, encrypted, or not ECDSA P-256/P-384 or Ed25519. */
  TRAINER_KEY_INVALID: 'TRAINER_KEY_INVALID',
} as const;

/** A stable `@llmcp/trainer` error code. */
export type TrainerErrorCode = (typeof TRAINER_ERROR_CODES)[keyof typeof TRAINER_ERROR_CODES];

/** Context carried by a {@link TrainerError}; every field is optional. */
export interface TrainerErrorContext {
  /** File or directory involved. */
  readonly path?: string;
  /** Checkpoint slot involved (`latest`, `latest.backup`, `best`, `step_000100`, …). */
  readonly slot?: string;
  /** Dotted config keys or job fields involved. */
  readonly fields?: readonly string[];
  /** Training step involved. */
  readonly step?: number;
  /** The underlying error. */
  readonly cause?: unknown;
}

/**
 * The error thrown by every public function of `@llmcp/trainer`.
 *
 * @example
 * ```ts
 * try { await resumeRun('runs/a'); } catch (e) { if (isTrainerError(e)) console.error(e.code, e.message); }
 * ```
 */
export class TrainerError extends Error {
  override readonly name = 'TrainerError';
  /** Stable code (see {@link TRAINER_ERROR_CODES}). */
  readonly code: TrainerErrorCode;
  /** File or directory involved. */
  readonly path: string | undefined;
  /** Checkpoint slot involved. */
  readonly slot: string | undefined;
  /** Config keys or job fields involved. */
  readonly fields: readonly string[] | undefined;
  /** Step involved. */
  readonly step: number | undefined;

  /**
   * @param code - the stable error code.
   * @param message - what was expected, what was found, and where.
   * @param context - optional context fields and cause.
   */
  constructor(code: TrainerErrorCode, message: string, context: TrainerErrorContext = {}) {
    super(message, context.cause === undefined ? undefined : { cause: context.cause });
    this.code = code;
    this.path = context.path;
    this.slot = context.slot;
    this.fields = context.fields;
    this.step = context.step;
  }
}

const CODES: ReadonlySet<string> = new Set(Object.values(TRAINER_ERROR_CODES));

/**
 * Whether `e` is a {@link TrainerError} (checked by `name` and `code`, so it also
 * recognises errors from another copy of the package).
 *
 * @param e - any thrown value.
 * @returns true for a trainer error.
 */
export function isTrainerError(e: unknown): e is TrainerError {
  if (typeof e !== 'object' || e === null) return false;
  const r = e as { name?: unknown; code?: unknown };
  return r.name === 'TrainerError' && typeof r.code === 'string' && CODES.has(r.code);
}

/**
 * Converts any error leaving a public function into a {@link TrainerError}
 * (keeping the original as `cause`): file-system errors become `TRAINER_IO`,
 * non-finite numerics `TRAINER_NON_FINITE`, errors of the input packages
 * (corpus, split, tokenizer, model configuration) `TRAINER_INPUT_INVALID`.
 * A programming error (`TypeError`, `RangeError`, `ReferenceError`,
 * `SyntaxError`) is a bug, not an I/O or input problem: it is rethrown as it
 * is, so it reaches the user (and the test) with its own stack.
 *
 * @param e - the thrown value.
 * @returns a trainer error.
 * @throws the original error when it is a programming error.
 */
export function toTrainerError(e: unknown): TrainerError {
  if (isTrainerError(e)) return e;
  if (e instanceof TypeError || e instanceof RangeError || e instanceof ReferenceError || e instanceof SyntaxError) throw e;
  const err = e as { name?: unknown; code?: unknown; message?: unknown; path?: unknown };
  const message = typeof err?.message === 'string' ? err.message : String(e);
  const code = typeof err?.code === 'string' ? err.code : '';
  const file = typeof err?.path === 'string' ? { path: err.path } : {};
  if (/^E[A-Z]+$/.test(code)) return new TrainerError('TRAINER_IO', `file-system error: ${message}`, { cause: e, ...file });
  // Another package's I/O failure (e.g. FORMAT_IO from an atomic write) is an I/O error here too, not bad input.
  if (/_IO$/.test(code)) return new TrainerError('TRAINER_IO', `${message}`, { cause: e, ...file });
  if (code.includes('NON_FINITE')) return new TrainerError('TRAINER_NON_FINITE', message, { cause: e });
  if (typeof err?.name === 'string' && /^(Data|Tokenizer|Model|Optim|Format)Error$/.test(err.name)) {
    return new TrainerError('TRAINER_INPUT_INVALID', `${err.name} ${code}: ${message}`, { cause: e });
  }
  return new TrainerError('TRAINER_IO', message, { cause: e });
}

/**
 * Runs `f`, converting anything it throws with {@link toTrainerError}.
 *
 * @param f - the operation.
 * @returns its result.
 */
export async function publicErrors<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw toTrainerError(e);
  }
}
