/**
 * The error of the foreign-file readers (`@llmcp/format/foreign`): headers
 * of safetensors and GGUF files, which are not LLMCP35 checkpoints, so their
 * failures are not categories of the LLMCP35 error table (../../SPEC.md §9.9) and
 * get their own class and codes. Codes are API: adding one is a minor
 * change, renaming or removing one is a major change.
 */

/** Stable error codes of the foreign-file readers. */
export const FOREIGN_ERROR_CODES = {
  /** The bytes are neither a safetensors nor a GGUF file (nor LLMCP35). */
  FOREIGN_UNKNOWN_KIND: 'FOREIGN_UNKNOWN_KIND',
  /** The file ends (or the given prefix ends) before the header does. */
  FOREIGN_TRUNCATED: 'FOREIGN_TRUNCATED',
  /** A GGUF version this reader does not read (v1, a big-endian file, or newer than v3). */
  FOREIGN_UNSUPPORTED_VERSION: 'FOREIGN_UNSUPPORTED_VERSION',
  /** The header is malformed: not JSON, a wrong field type, an unknown type tag, overlapping or out-of-file tensor data, a repeated name. */
  FOREIGN_BAD_HEADER: 'FOREIGN_BAD_HEADER',
  /** A header string is not valid UTF-8. */
  FOREIGN_INVALID_UTF8: 'FOREIGN_INVALID_UTF8',
  /** A declared size or count exceeds a limit of this reader, or the bytes left in the file (checked before allocating). */
  FOREIGN_LIMIT_EXCEEDED: 'FOREIGN_LIMIT_EXCEEDED',
} as const;

/** One of the {@link FOREIGN_ERROR_CODES}. */
export type ForeignErrorCode = (typeof FOREIGN_ERROR_CODES)[keyof typeof FOREIGN_ERROR_CODES];

/** Context of a {@link ForeignFileError}; every field is optional. */
export interface ForeignErrorContext {
  /** Absolute byte offset of the field involved. */
  readonly offset?: number;
  /** The field involved, e.g. `'tensor_count'`, `'model.norm.weight.data_offsets'`. */
  readonly field?: string;
  /** Bytes the header needs from the start of the file, when a prefix was too short. */
  readonly needed?: number;
}

/**
 * Every failure of the safetensors and GGUF header readers.
 *
 * @example
 * ```ts
 * try { readForeignFile(bytes); }
 * catch (e) { if (isForeignFileError(e)) console.log(e.code, e.offset); }
 * ```
 */
export class ForeignFileError extends Error {
  /** Always `'ForeignFileError'` (checked by {@link isForeignFileError}). */
  override readonly name = 'ForeignFileError' as const;
  /** Stable code. */
  readonly code: ForeignErrorCode;
  /** Absolute byte offset involved, when known. */
  declare readonly offset?: number;
  /** Field involved, when known. */
  declare readonly field?: string;
  /** Bytes needed from the start of the file (a truncated prefix). */
  declare readonly needed?: number;

  /**
   * @param code - one of {@link FOREIGN_ERROR_CODES}.
   * @param message - what is wrong: expected vs found, and where.
   * @param context - offset, field, bytes needed.
   */
  constructor(code: ForeignErrorCode, message: string, context: ForeignErrorContext = {}) {
    super(message);
    this.code = code;
    if (context.offset !== undefined) this.offset = context.offset;
    if (context.field !== undefined) this.field = context.field;
    if (context.needed !== undefined) this.needed = context.needed;
  }
}

const CODE_SET: ReadonlySet<string> = new Set(Object.values(FOREIGN_ERROR_CODES));

/**
 * True when `e` is a {@link ForeignFileError}, also across two copies of the
 * package (checks `name` and `code`, not only `instanceof`).
 *
 * @param e - anything caught.
 * @returns whether `e` is a ForeignFileError.
 */
export function isForeignFileError(e: unknown): e is ForeignFileError {
  if (e instanceof ForeignFileError) return true;
  if (typeof e !== 'object' || e === null) return false;
  const { name, code } = e as { name?: unknown; code?: unknown };
  return name === 'ForeignFileError' && typeof code === 'string' && CODE_SET.has(code);
}
