/**
 * The one error class of `@llmcp/model` and its stable codes.
 */

/** Stable, package-prefixed error codes. Adding a code is a minor change; renaming or removing one is major. */
export const MODEL_ERROR_CODES = {
  /** A decoder configuration is unusable (non-integer or non-positive size, odd head width, …). */
  MODEL_INVALID_CONFIG: 'MODEL_INVALID_CONFIG',
  /** A batch's shape does not match its arrays (rows × columns ≠ length, empty batch, …). */
  MODEL_INVALID_BATCH: 'MODEL_INVALID_BATCH',
  /** A token id (input, target or prompt) is not an integer in [0, vocabulary size). */
  MODEL_TOKEN_OUT_OF_RANGE: 'MODEL_TOKEN_OUT_OF_RANGE',
  /** A sequence is longer than the model's maximum positions, or too long for its activations to be allocated. */
  MODEL_CONTEXT_TOO_LONG: 'MODEL_CONTEXT_TOO_LONG',
  /** A loss, logit or gradient is NaN or infinite; nothing was committed. */
  MODEL_NON_FINITE: 'MODEL_NON_FINITE',
  /** Named tensors do not match the model's parameter layout (missing, extra, reordered or misshapen). */
  MODEL_PARAMETER_MISMATCH: 'MODEL_PARAMETER_MISMATCH',
  /** A sampling mode is invalid (temperature not finite and > 0, top-k outside [1, V], bad EOS or limit). */
  MODEL_INVALID_SAMPLING: 'MODEL_INVALID_SAMPLING',
  /** The sampling probabilities do not sum to 1 within 1e-12 (../../../docs/spec/training.md §9 step 5). */
  MODEL_PROBABILITY_SUM: 'MODEL_PROBABILITY_SUM',
  /** A worker thread failed or could not be started. */
  MODEL_WORKER_FAILED: 'MODEL_WORKER_FAILED',
  /** The decoder was closed and can no longer run. */
  MODEL_CLOSED: 'MODEL_CLOSED',
  /** A key/value cache is used out of order: a decode step before any prefill, or a prefill into a non-empty cache. */
  MODEL_CACHE_STATE: 'MODEL_CACHE_STATE',
  /** A key/value cache is full: one more position would exceed its capacity (at most maxPositions). */
  MODEL_CACHE_OVERFLOW: 'MODEL_CACHE_OVERFLOW',
  /** A key/value cache was built for another decoder (instance, configuration, head layout or RoPE table). */
  MODEL_CACHE_MISMATCH: 'MODEL_CACHE_MISMATCH',
  /** The native kernels were required (`LLMCP_KERNELS=native` or `setKernels('native')`) but could not be loaded. */
  MODEL_KERNELS_UNAVAILABLE: 'MODEL_KERNELS_UNAVAILABLE',
} as const;

/** One of the {@link MODEL_ERROR_CODES}. */
export type ModelErrorCode = (typeof MODEL_ERROR_CODES)[keyof typeof MODEL_ERROR_CODES];

/** Context fields that locate a failure. */
export interface ModelErrorContext {
  /** Configuration field or option involved. */
  readonly field?: string;
  /** Parameter (tensor) name involved. */
  readonly tensorName?: string;
  /** Flat element index involved (within the tensor when `tensorName` is set). */
  readonly index?: number;
  /** Batch row (sequence) involved. */
  readonly row?: number;
  /** Batch column (position) involved. */
  readonly column?: number;
  /** The underlying error. */
  readonly cause?: unknown;
}

/**
 * The error every public path of `@llmcp/model` throws for bad data (caller
 * misuse such as a wrong argument type may also throw `TypeError`/`RangeError`).
 *
 * @example
 * ```ts
 * try { model.trainStep(batch); } catch (e) { if (isModelError(e) && e.code === 'MODEL_NON_FINITE') { ... } }
 * ```
 */
export class ModelError extends Error {
  override readonly name = 'ModelError';
  /** Stable code. */
  readonly code: ModelErrorCode;
  /** Configuration field or option involved. */
  readonly field: string | undefined;
  /** Parameter name involved. */
  readonly tensorName: string | undefined;
  /** Element index involved. */
  readonly index: number | undefined;
  /** Batch row involved. */
  readonly row: number | undefined;
  /** Batch column involved. */
  readonly column: number | undefined;

  /**
   * @param code - the stable code.
   * @param message - what was expected, what was found, and where.
   * @param context - locating fields and an optional cause.
   */
  constructor(code: ModelErrorCode, message: string, context: ModelErrorContext = {}) {
    super(message, context.cause === undefined ? undefined : { cause: context.cause });
    this.code = code;
    this.field = context.field;
    this.tensorName = context.tensorName;
    this.index = context.index;
    this.row = context.row;
    this.column = context.column;
  }
}

const CODES: ReadonlySet<string> = new Set(Object.values(MODEL_ERROR_CODES));

/**
 * Whether `e` is a {@link ModelError} (checked by `name` and `code`, so it also
 * recognizes errors from another copy of the package).
 * @param e - any value.
 * @returns true for a model error.
 */
export function isModelError(e: unknown): e is ModelError {
  if (typeof e !== 'object' || e === null) return false;
  const r = e as { name?: unknown; code?: unknown };
  return r.name === 'ModelError' && typeof r.code === 'string' && CODES.has(r.code);
}
