/**
 * The one error class of `@llmcp/data` and its stable codes.
 *
 * Codes are API: adding one is a minor change, renaming or removing one is a
 * major change. The conditions follow ../../../docs/spec/tokenizer-and-data.md §1 and §8.
 */

/** Every code a {@link DataError} can carry. */
export const DATA_ERROR_CODES = {
  /** Corpus bytes that are not strict JSON: invalid UTF-8, a BOM, syntax, duplicate key, lone surrogate escape, trailing data (`offset`). */
  DATA_CORPUS_INVALID_JSON: 'DATA_CORPUS_INVALID_JSON',
  /** Corpus JSON of the wrong shape: not an array of objects with exactly the four string members (`documentIndex`, `field`). */
  DATA_CORPUS_INVALID_SCHEMA: 'DATA_CORPUS_INVALID_SCHEMA',
  /** A corpus with no documents. */
  DATA_CORPUS_EMPTY: 'DATA_CORPUS_EMPTY',
  /** `id`, `language` or `provenance_group` is not a lowercase ASCII kebab identifier (`documentIndex`, `field`). */
  DATA_DOCUMENT_INVALID_IDENTIFIER: 'DATA_DOCUMENT_INVALID_IDENTIFIER',
  /** A document text that is empty after removing Unicode White_Space at both ends. */
  DATA_DOCUMENT_EMPTY_TEXT: 'DATA_DOCUMENT_EMPTY_TEXT',
  /** A document id equal to an earlier document's id. */
  DATA_DUPLICATE_DOCUMENT_ID: 'DATA_DUPLICATE_DOCUMENT_ID',
  /** A document text equal to an earlier document's text. */
  DATA_DUPLICATE_DOCUMENT_TEXT: 'DATA_DUPLICATE_DOCUMENT_TEXT',
  /** Split manifest bytes that are not strict JSON (`offset`). */
  DATA_SPLIT_INVALID_JSON: 'DATA_SPLIT_INVALID_JSON',
  /** Split manifest JSON of the wrong shape or number form (`field`). */
  DATA_SPLIT_INVALID_SCHEMA: 'DATA_SPLIT_INVALID_SCHEMA',
  /** `schema_version` other than 1. */
  DATA_SPLIT_UNSUPPORTED_VERSION: 'DATA_SPLIT_UNSUPPORTED_VERSION',
  /** `strategy` other than `fixed-paired-document-holdout-v1`. */
  DATA_SPLIT_UNSUPPORTED_STRATEGY: 'DATA_SPLIT_UNSUPPORTED_STRATEGY',
  /** The manifest's `corpus_checksum` differs from the corpus checksum. */
  DATA_SPLIT_CHECKSUM_MISMATCH: 'DATA_SPLIT_CHECKSUM_MISMATCH',
  /** A partition list with no ids (`partition`). */
  DATA_SPLIT_EMPTY_PARTITION: 'DATA_SPLIT_EMPTY_PARTITION',
  /** A partition whose known ids are not in strictly increasing source order (`partition`, `documentId`). */
  DATA_SPLIT_ORDER: 'DATA_SPLIT_ORDER',
  /** A partition naming a document the corpus does not have (`partition`, `documentId`). */
  DATA_SPLIT_UNKNOWN_DOCUMENT: 'DATA_SPLIT_UNKNOWN_DOCUMENT',
  /** A document named in more than one manifest position (`partition`, `documentId`). */
  DATA_SPLIT_REPEATED_DOCUMENT: 'DATA_SPLIT_REPEATED_DOCUMENT',
  /** A corpus document in no partition (`documentId`). */
  DATA_SPLIT_UNCOVERED_DOCUMENT: 'DATA_SPLIT_UNCOVERED_DOCUMENT',
  /** A provenance group split across partitions (`documentId`, `partition`). */
  DATA_SPLIT_GROUP_SPLIT: 'DATA_SPLIT_GROUP_SPLIT',
  /** Context length, stride or batch size that is not a positive integer (`field`). */
  DATA_INVALID_PARAMETER: 'DATA_INVALID_PARAMETER',
  /** A window that does not fit its document, or a token that is not a u32 (`documentIndex`, `position`). */
  DATA_WINDOW_OUT_OF_RANGE: 'DATA_WINDOW_OUT_OF_RANGE',
  /** A saved update-batch state that is malformed or does not fit the window list (`field`). */
  DATA_INVALID_BATCH_STATE: 'DATA_INVALID_BATCH_STATE',
  /** A plain-text corpus that cannot be used: not UTF-8, no `.txt` files, no documents (`path`, `offset`). */
  DATA_TEXT_CORPUS_INVALID: 'DATA_TEXT_CORPUS_INVALID',
  /** A file could not be read (`path`; the `cause` is the I/O error). */
  DATA_IO: 'DATA_IO',
} as const;

/** A stable data error code. */
export type DataErrorCode = (typeof DATA_ERROR_CODES)[keyof typeof DATA_ERROR_CODES];

/** Where a data error happened. Only the fields that apply are set. */
export interface DataErrorContext {
  /** Byte offset in the input file. */
  readonly offset?: number;
  /** 0-based index of the document (the reference's messages count from 1). */
  readonly documentIndex?: number;
  /** The document id involved. */
  readonly documentId?: string;
  /** JSON member or parameter name. */
  readonly field?: string;
  /** Partition name (`train`, `validation`, `test`). */
  readonly partition?: string;
  /** Position within a document's token list. */
  readonly position?: number;
  /** File path (plain-text corpora). */
  readonly path?: string;
  /** The underlying error (a JSON syntax error, a file-system error), set as the error's `cause`. */
  readonly cause?: unknown;
}

const CODE_SET: ReadonlySet<string> = new Set(Object.values(DATA_ERROR_CODES));

/**
 * Thrown by every public path of `@llmcp/data` on bad input.
 *
 * @example
 * ```ts
 * try { parseCorpus(bytes); } catch (e) { if (isDataError(e)) console.log(e.code, e.documentIndex, e.offset); }
 * ```
 */
export class DataError extends Error {
  /** Always `'DataError'`. */
  override readonly name = 'DataError' as const;
  /** The stable code. */
  readonly code: DataErrorCode;
  /** Byte offset, when it applies. */
  readonly offset: number | undefined;
  /** 0-based document index, when it applies. */
  readonly documentIndex: number | undefined;
  /** Document id, when it applies. */
  readonly documentId: string | undefined;
  /** JSON member or parameter name, when it applies. */
  readonly field: string | undefined;
  /** Partition name, when it applies. */
  readonly partition: string | undefined;
  /** Token position, when it applies. */
  readonly position: number | undefined;
  /** File path, when it applies. */
  readonly path: string | undefined;

  /**
   * @param code - the stable code.
   * @param message - what was expected, what was found, and where.
   * @param context - the location fields, and the underlying error (`cause`).
   */
  constructor(code: DataErrorCode, message: string, context: DataErrorContext = {}) {
    super(message, context.cause === undefined ? undefined : { cause: context.cause });
    this.code = code;
    this.offset = context.offset;
    this.documentIndex = context.documentIndex;
    this.documentId = context.documentId;
    this.field = context.field;
    this.partition = context.partition;
    this.position = context.position;
    this.path = context.path;
  }
}

/**
 * Whether `e` is a {@link DataError} (by `name` and a known `code`).
 *
 * @param e - any thrown value.
 * @returns true for data errors.
 */
export function isDataError(e: unknown): e is DataError {
  if (typeof e !== 'object' || e === null) return false;
  const candidate = e as { name?: unknown; code?: unknown };
  return candidate.name === 'DataError' && typeof candidate.code === 'string' && CODE_SET.has(candidate.code);
}
