/**
 * The one error class of `@llmcp/optim` and its stable codes.
 */

/** Stable, package-prefixed error codes. Adding a code is a minor change; renaming or removing one is major. */
export const OPTIM_ERROR_CODES = {
  /** AdamW hyper-parameters break a rule of format SPEC §6.2 (e.g. beta1 ≥ 1, epsilon ≤ 0). */
  OPTIM_INVALID_CONFIG: 'OPTIM_INVALID_CONFIG',
  /** Parameter groups are malformed or do not partition the model's parameters (SPEC §6.3). */
  OPTIM_INVALID_GROUPS: 'OPTIM_INVALID_GROUPS',
  /** A step's learning rate is not finite and > 0, or `lr · weightDecay` is outside (0, 1). */
  OPTIM_INVALID_LEARNING_RATE: 'OPTIM_INVALID_LEARNING_RATE',
  /** A clipping threshold or multiplier is unusable (not finite, ≤ 0). */
  OPTIM_INVALID_CLIP: 'OPTIM_INVALID_CLIP',
  /** A gradient element is NaN or infinite (../../../docs/spec/training.md §4 step 3). */
  OPTIM_NON_FINITE_GRADIENT: 'OPTIM_NON_FINITE_GRADIENT',
  /** An AdamW update produced a non-finite value; nothing was changed. */
  OPTIM_NON_FINITE_UPDATE: 'OPTIM_NON_FINITE_UPDATE',
  /** AdamW state breaks a rule of SPEC §6.4 (beta powers, moment presence, non-finite or negative moments, step range). */
  OPTIM_INVALID_STATE: 'OPTIM_INVALID_STATE',
  /** AdamW state does not fit the model (moment names or shapes differ from the parameters). */
  OPTIM_STATE_MISMATCH: 'OPTIM_STATE_MISMATCH',
  /** A schedule was asked for a step it does not cover (not an integer ≥ 1, or past the end of a list). */
  OPTIM_SCHEDULE_STEP: 'OPTIM_SCHEDULE_STEP',
  /** A schedule definition is invalid (empty list, non-finite rate, warm-up longer than the run, …). */
  OPTIM_INVALID_SCHEDULE: 'OPTIM_INVALID_SCHEDULE',
} as const;

/** One of the {@link OPTIM_ERROR_CODES}. */
export type OptimErrorCode = (typeof OPTIM_ERROR_CODES)[keyof typeof OPTIM_ERROR_CODES];

/** Context fields that locate a failure. */
export interface OptimErrorContext {
  /** Hyper-parameter, option or state field involved. */
  readonly field?: string;
  /** Parameter (tensor) name involved. */
  readonly tensorName?: string;
  /** Element index within the tensor (or the flat index when no tensor is named). */
  readonly index?: number;
  /** Update step involved. */
  readonly step?: number;
  /** The underlying error. */
  readonly cause?: unknown;
}

/**
 * The error every public path of `@llmcp/optim` throws for bad data.
 *
 * @example
 * ```ts
 * try { clipByGlobalNorm(model.gradients, 0.35); } catch (e) { if (isOptimError(e)) console.error(e.code, e.tensorName); }
 * ```
 */
export class OptimError extends Error {
  override readonly name = 'OptimError';
  /** Stable code. */
  readonly code: OptimErrorCode;
  /** Field involved. */
  readonly field: string | undefined;
  /** Parameter name involved. */
  readonly tensorName: string | undefined;
  /** Element index involved. */
  readonly index: number | undefined;
  /** Step involved. */
  readonly step: number | undefined;

  /**
   * @param code - the stable code.
   * @param message - what was expected, what was found, and where.
   * @param context - locating fields and an optional cause.
   */
  constructor(code: OptimErrorCode, message: string, context: OptimErrorContext = {}) {
    super(message, context.cause === undefined ? undefined : { cause: context.cause });
    this.code = code;
    this.field = context.field;
    this.tensorName = context.tensorName;
    this.index = context.index;
    this.step = context.step;
  }
}

const CODES: ReadonlySet<string> = new Set(Object.values(OPTIM_ERROR_CODES));

/**
 * Whether `e` is an {@link OptimError} (checked by `name` and `code`, so it also
 * recognizes errors from another copy of the package).
 * @param e - any value.
 * @returns true for an optim error.
 */
export function isOptimError(e: unknown): e is OptimError {
  if (typeof e !== 'object' || e === null) return false;
  const r = e as { name?: unknown; code?: unknown };
  return r.name === 'OptimError' && typeof r.code === 'string' && CODES.has(r.code);
}
