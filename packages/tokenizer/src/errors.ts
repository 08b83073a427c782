/**
 * The one error class of `@llmcp/tokenizer` and its stable codes.
 *
 * Codes are API: adding one is a minor change, renaming or removing one is a
 * major change. The conditions follow ../../../docs/spec/tokenizer-and-data.md §8.
 */

/** Every code a {@link TokenizerError} can carry. */
export const TOKENIZER_ERROR_CODES = {
  /** A literal tokenizer with no pieces. */
  TOKENIZER_EMPTY_VOCABULARY: 'TOKENIZER_EMPTY_VOCABULARY',
  /** A literal piece of zero bytes (`tokenId` names it). */
  TOKENIZER_EMPTY_PIECE: 'TOKENIZER_EMPTY_PIECE',
  /** A literal piece equal to an earlier piece (`tokenId` is the later id). */
  TOKENIZER_DUPLICATE_PIECE: 'TOKENIZER_DUPLICATE_PIECE',
  /** Literal encoding found no piece starting at byte `offset`. */
  TOKENIZER_UNENCODABLE: 'TOKENIZER_UNENCODABLE',
  /** A BPE training request above 4294967040 merges (the u32 token-id space). */
  TOKENIZER_MERGE_REQUEST_TOO_LARGE: 'TOKENIZER_MERGE_REQUEST_TOO_LARGE',
  /** More merge ranks than layout version 1 can number in u32 ids. */
  TOKENIZER_LAYOUT_OVERFLOW: 'TOKENIZER_LAYOUT_OVERFLOW',
  /** Merge `rank` names a training id (`tokenId`) that does not exist yet at that rank. */
  TOKENIZER_UNKNOWN_MERGE_OPERAND: 'TOKENIZER_UNKNOWN_MERGE_OPERAND',
  /** Merge `rank` repeats the pair of an earlier rank. */
  TOKENIZER_DUPLICATE_MERGE_PAIR: 'TOKENIZER_DUPLICATE_MERGE_PAIR',
  /** BOS (0) or EOS (1) at `position` of a content id list. */
  TOKENIZER_CONTROL_TOKEN_IN_CONTENT: 'TOKENIZER_CONTROL_TOKEN_IN_CONTENT',
  /** An id outside the vocabulary (or not an integer) at `position`. */
  TOKENIZER_UNKNOWN_TOKEN: 'TOKENIZER_UNKNOWN_TOKEN',
  /** A document id list shorter than 2 (`length`). */
  TOKENIZER_DOCUMENT_TOO_SHORT: 'TOKENIZER_DOCUMENT_TOO_SHORT',
  /** A document id list whose first id is not BOS (0). */
  TOKENIZER_EXPECTED_BOS: 'TOKENIZER_EXPECTED_BOS',
  /** A document id list whose last id is not EOS (1). */
  TOKENIZER_EXPECTED_EOS: 'TOKENIZER_EXPECTED_EOS',
  /** BOS or EOS strictly inside a document id list, at `position`. */
  TOKENIZER_INTERIOR_CONTROL_TOKEN: 'TOKENIZER_INTERIOR_CONTROL_TOKEN',
  /** Decoded bytes are not valid UTF-8; `offset` is the length of the longest valid prefix. */
  TOKENIZER_INVALID_UTF8: 'TOKENIZER_INVALID_UTF8',
  /** A tokenizer JSON document that is not of the stable form (`field` names the member). */
  TOKENIZER_INVALID_JSON: 'TOKENIZER_INVALID_JSON',
  /** An input beyond a documented implementation limit (decoded size, id space of the pair index). */
  TOKENIZER_LIMIT_EXCEEDED: 'TOKENIZER_LIMIT_EXCEEDED',
} as const;

/** A stable tokenizer error code. */
export type TokenizerErrorCode = (typeof TOKENIZER_ERROR_CODES)[keyof typeof TOKENIZER_ERROR_CODES];

/** Where a tokenizer error happened. Only the fields that apply are set. */
export interface TokenizerErrorContext {
  /** Index in an id list. */
  readonly position?: number;
  /** Byte offset in an input or decoded byte string. */
  readonly offset?: number;
  /** The token id (or training id) involved. */
  readonly tokenId?: number;
  /** The merge rank involved. */
  readonly rank?: number;
  /** Length of the offending list. */
  readonly length?: number;
  /** JSON member path, e.g. `pairs[3][1]`. */
  readonly field?: string;
  /** The underlying error (a JSON syntax error), set as the error's `cause`. */
  readonly cause?: unknown;
}

const CODE_SET: ReadonlySet<string> = new Set(Object.values(TOKENIZER_ERROR_CODES));

/**
 * Thrown by every public path of `@llmcp/tokenizer` on bad input.
 *
 * @example
 * ```ts
 * try { tokenizer.decode([0]); } catch (e) { if (isTokenizerError(e)) console.log(e.code, e.position); }
 * ```
 */
export class TokenizerError extends Error {
  /** Always `'TokenizerError'`. */
  override readonly name = 'TokenizerError' as const;
  /** The stable code. */
  readonly code: TokenizerErrorCode;
  /** Index in an id list, when it applies. */
  readonly position: number | undefined;
  /** Byte offset, when it applies. */
  readonly offset: number | undefined;
  /** Token (or training) id involved, when it applies. */
  readonly tokenId: number | undefined;
  /** Merge rank involved, when it applies. */
  readonly rank: number | undefined;
  /** Length of the offending list, when it applies. */
  readonly length: number | undefined;
  /** JSON member path, when it applies. */
  readonly field: string | undefined;

  /**
   * @param code - the stable code.
   * @param message - what was expected, what was found, and where.
   * @param context - the location fields, and the underlying error (`cause`).
   */
  constructor(code: TokenizerErrorCode, message: string, context: TokenizerErrorContext = {}) {
    super(message, context.cause === undefined ? undefined : { cause: context.cause });
    this.code = code;
    this.position = context.position;
    this.offset = context.offset;
    this.tokenId = context.tokenId;
    this.rank = context.rank;
    this.length = context.length;
    this.field = context.field;
  }
}

/**
 * Whether `e` is a {@link TokenizerError} (by `name` and a known `code`, so it
 * also recognises errors from another copy of this package).
 *
 * @param e - any thrown value.
 * @returns true for tokenizer errors.
 */
export function isTokenizerError(e: unknown): e is TokenizerError {
  if (typeof e !== 'object' || e === null) return false;
  const candidate = e as { name?: unknown; code?: unknown };
  return candidate.name === 'TokenizerError' && typeof candidate.code === 'string' && CODE_SET.has(candidate.code);
}
