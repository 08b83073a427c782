/**
 * The one error class of `@llmcp/format` (../SPEC.md §9.9).
 *
 * Every category of the reference's error table has exactly one stable,
 * package-prefixed code. Codes are API: adding one is a minor change,
 * renaming or removing one is a major change.
 */

/** Stable error codes, one per category of ../SPEC.md §9.9. */
export const FORMAT_ERROR_CODES = {
  /** The file is shorter than the 38-byte fixed header, or a variable-header read runs past `header_bytes`. */
  FORMAT_TRUNCATED: 'FORMAT_TRUNCATED',
  /** Bytes 0..7 are not `LLMCP35\0`. */
  FORMAT_BAD_MAGIC: 'FORMAT_BAD_MAGIC',
  /** The format version is not 1. */
  FORMAT_UNSUPPORTED_VERSION: 'FORMAT_UNSUPPORTED_VERSION',
  /** The endian marker is not 0x01020304. */
  FORMAT_UNSUPPORTED_ENDIANNESS: 'FORMAT_UNSUPPORTED_ENDIANNESS',
  /** `header_bytes` < 38, or `header_bytes + payload_bytes` differs from the file length (or overflows). */
  FORMAT_FILE_EXTENT: 'FORMAT_FILE_EXTENT',
  /** The stored checksum differs from the recomputed one. */
  FORMAT_CHECKSUM_MISMATCH: 'FORMAT_CHECKSUM_MISMATCH',
  /** The tokenizer layout version is not 1. */
  FORMAT_UNSUPPORTED_TOKENIZER_LAYOUT: 'FORMAT_UNSUPPORTED_TOKENIZER_LAYOUT',
  /** The sampling RNG algorithm version is not 1. */
  FORMAT_UNSUPPORTED_RNG_ALGORITHM: 'FORMAT_UNSUPPORTED_RNG_ALGORITHM',
  /** The tokenizer kind tag is not 1 or 2. */
  FORMAT_UNKNOWN_TOKENIZER_KIND: 'FORMAT_UNKNOWN_TOKENIZER_KIND',
  /** A descriptor role tag is not 1–5. */
  FORMAT_UNKNOWN_TENSOR_ROLE: 'FORMAT_UNKNOWN_TENSOR_ROLE',
  /** A descriptor dtype tag is not 1–3. */
  FORMAT_UNKNOWN_DTYPE: 'FORMAT_UNKNOWN_DTYPE',
  /** A header string is not valid UTF-8. */
  FORMAT_INVALID_UTF8: 'FORMAT_INVALID_UTF8',
  /** A size computation overflows u64, or (encoding) a count does not fit its field. */
  FORMAT_SIZE_OVERFLOW: 'FORMAT_SIZE_OVERFLOW',
  /** A declared size cannot be allocated in this runtime (the reference's Allocation category), or exceeds a limit of this implementation (../SPEC.md §15.2: `header_bytes` above 64 MiB). */
  FORMAT_LIMIT_EXCEEDED: 'FORMAT_LIMIT_EXCEEDED',
  /** Descriptor table or record layout invalid (names, roles, dtypes, shapes, lengths, contiguity, partition). */
  FORMAT_LAYOUT: 'FORMAT_LAYOUT',
  /** Literal tokenizer with no tokens or a repeated spelling. */
  FORMAT_TOKENIZER: 'FORMAT_TOKENIZER',
  /** BPE merge table invalid (layout overflow, unknown operand, duplicate pair). */
  FORMAT_BPE: 'FORMAT_BPE',
  /** AdamW configuration or parameter-group lists invalid. */
  FORMAT_ADAMW_CONFIG: 'FORMAT_ADAMW_CONFIG',
  /** AdamW moments, step, beta powers, state presence or group coverage invalid. */
  FORMAT_ADAMW_STATE: 'FORMAT_ADAMW_STATE',
  /** Model parameter name syntax invalid or a non-finite parameter value (the reference's Initialization category). */
  FORMAT_INVALID_PARAMETER: 'FORMAT_INVALID_PARAMETER',
  /** A model parameter shape whose row-major strides overflow u64 (the reference's Tensor category). */
  FORMAT_TENSOR_SHAPE: 'FORMAT_TENSOR_SHAPE',
  /** Decoder configuration, parameter count, parameter names or parameter shapes invalid. */
  FORMAT_MODEL: 'FORMAT_MODEL',
  /** Tokenizer vocabulary disagrees with the BPE table or with the decoder vocabulary. */
  FORMAT_VOCABULARY_MISMATCH: 'FORMAT_VOCABULARY_MISMATCH',
  /** Selected step differs from the optimizer step. */
  FORMAT_STEP_MISMATCH: 'FORMAT_STEP_MISMATCH',
  /** Step > 0 and the names with moment state differ from the model parameter names. */
  FORMAT_OPTIMIZER_NAMES: 'FORMAT_OPTIMIZER_NAMES',
  /** Step > 0 and a moment shape differs from its parameter's shape. */
  FORMAT_OPTIMIZER_SHAPE: 'FORMAT_OPTIMIZER_SHAPE',
  /** Groups flag not 0/1, leftover header bytes, or the canonical re-encoding differs from the input. */
  FORMAT_NON_CANONICAL: 'FORMAT_NON_CANONICAL',
  /** Reading, or (when saving) creating, writing, syncing or renaming a file failed. */
  FORMAT_IO: 'FORMAT_IO',
  /** Atomic save requested on a platform without atomic rename-over and directory sync (Windows). */
  FORMAT_UNSUPPORTED_ATOMIC_REPLACEMENT: 'FORMAT_UNSUPPORTED_ATOMIC_REPLACEMENT',
} as const;

/** One of the stable `FORMAT_*` error codes. */
export type FormatErrorCode = (typeof FORMAT_ERROR_CODES)[keyof typeof FORMAT_ERROR_CODES];

/**
 * The reference's error-category name for every code (../SPEC.md §9.9, left
 * column), so reports can be compared one-to-one with other implementations.
 */
export const FORMAT_ERROR_CATEGORIES = {
  FORMAT_TRUNCATED: 'Truncated',
  FORMAT_BAD_MAGIC: 'InvalidMagic',
  FORMAT_UNSUPPORTED_VERSION: 'UnsupportedVersion',
  FORMAT_UNSUPPORTED_ENDIANNESS: 'UnsupportedEndianness',
  FORMAT_FILE_EXTENT: 'FileExtent',
  FORMAT_CHECKSUM_MISMATCH: 'ChecksumMismatch',
  FORMAT_UNSUPPORTED_TOKENIZER_LAYOUT: 'UnsupportedTokenizerLayout',
  FORMAT_UNSUPPORTED_RNG_ALGORITHM: 'UnsupportedRngAlgorithm',
  FORMAT_UNKNOWN_TOKENIZER_KIND: 'UnknownTokenizerKind',
  FORMAT_UNKNOWN_TENSOR_ROLE: 'UnknownTensorRole',
  FORMAT_UNKNOWN_DTYPE: 'UnknownDType',
  FORMAT_INVALID_UTF8: 'InvalidUtf8',
  FORMAT_SIZE_OVERFLOW: 'SizeOverflow',
  FORMAT_LIMIT_EXCEEDED: 'Allocation',
  FORMAT_LAYOUT: 'Layout',
  FORMAT_TOKENIZER: 'Tokenizer',
  FORMAT_BPE: 'Bpe',
  FORMAT_ADAMW_CONFIG: 'AdamW',
  FORMAT_ADAMW_STATE: 'AdamWState',
  FORMAT_INVALID_PARAMETER: 'Initialization',
  FORMAT_TENSOR_SHAPE: 'Tensor',
  FORMAT_MODEL: 'Model',
  FORMAT_VOCABULARY_MISMATCH: 'VocabularyMismatch',
  FORMAT_STEP_MISMATCH: 'StepMismatch',
  FORMAT_OPTIMIZER_NAMES: 'OptimizerNames',
  FORMAT_OPTIMIZER_SHAPE: 'OptimizerShape',
  FORMAT_NON_CANONICAL: 'NonCanonical',
  FORMAT_IO: 'Io',
  FORMAT_UNSUPPORTED_ATOMIC_REPLACEMENT: 'UnsupportedAtomicReplacement',
} as const;

/** A reference error-category name (../SPEC.md §9.9), e.g. `'ChecksumMismatch'`. */
export type FormatErrorCategory = (typeof FORMAT_ERROR_CATEGORIES)[FormatErrorCode];

/** Where and what: the context a {@link FormatError} carries. All fields optional. */
export interface FormatErrorContext {
  /** Stable sub-kind within the code, e.g. `'invalid-beta-power'`, `'name-mismatch'`. */
  readonly reason?: string;
  /** Absolute byte offset in the file of the field or value involved. */
  readonly offset?: number;
  /** The header field or record field involved, e.g. `'header_bytes'`, `'descriptor[3].offset'`. */
  readonly field?: string;
  /** Name of the record (descriptor) or parameter involved. */
  readonly recordName?: string;
  /** Index of the descriptor / record involved (payload order). */
  readonly recordIndex?: number;
  /** Index of the offending element inside a record (row-major), or of a merge rank / token id. */
  readonly elementIndex?: number;
  /** The expected value, as text. */
  readonly expected?: string;
  /** The value found, as text. */
  readonly found?: string;
  /** The underlying error (I/O failures). */
  readonly cause?: unknown;
}

/**
 * Every failure of `@llmcp/format`: bad bytes, an invalid state handed to
 * the encoder, or a file-system failure in the `/node` entry.
 *
 * @example
 * ```ts
 * try { decodeCheckpoint(bytes); }
 * catch (e) { if (isFormatError(e)) console.log(e.code, e.category, e.offset); }
 * ```
 */
export class FormatError extends Error {
  /** Always `'FormatError'` (checked by {@link isFormatError}). */
  override readonly name = 'FormatError' as const;
  /** Stable code, one per spec category. */
  readonly code: FormatErrorCode;
  /** The reference's category name for `code`. */
  readonly category: FormatErrorCategory;
  /** Stable sub-kind within the code (see {@link FormatErrorContext.reason}). */
  readonly reason: string;
  /** Absolute byte offset involved, when known. */
  declare readonly offset?: number;
  /** Field involved, when known. */
  declare readonly field?: string;
  /** Record / parameter name involved, when known. */
  declare readonly recordName?: string;
  /** Descriptor / record index involved, when known. */
  declare readonly recordIndex?: number;
  /** Element index inside the record, when known. */
  declare readonly elementIndex?: number;
  /** Expected value, as text. */
  declare readonly expected?: string;
  /** Found value, as text. */
  declare readonly found?: string;

  /**
   * @param code - one of {@link FORMAT_ERROR_CODES}.
   * @param message - what is wrong: expected vs found, and where.
   * @param context - offset, field, record and values involved.
   */
  constructor(code: FormatErrorCode, message: string, context: FormatErrorContext = {}) {
    super(message, context.cause === undefined ? undefined : { cause: context.cause });
    this.code = code;
    this.category = FORMAT_ERROR_CATEGORIES[code];
    this.reason = context.reason ?? 'unspecified';
    if (context.offset !== undefined) this.offset = context.offset;
    if (context.field !== undefined) this.field = context.field;
    if (context.recordName !== undefined) this.recordName = context.recordName;
    if (context.recordIndex !== undefined) this.recordIndex = context.recordIndex;
    if (context.elementIndex !== undefined) this.elementIndex = context.elementIndex;
    if (context.expected !== undefined) this.expected = context.expected;
    if (context.found !== undefined) this.found = context.found;
  }
}

const CODE_SET: ReadonlySet<string> = new Set(Object.values(FORMAT_ERROR_CODES));

/**
 * True when `e` is a {@link FormatError}, also across two copies of the
 * package (checks `name` and `code`, not only `instanceof`).
 *
 * @param e - anything caught.
 * @returns whether `e` is a FormatError.
 */
export function isFormatError(e: unknown): e is FormatError {
  if (e instanceof FormatError) return true;
  if (typeof e !== 'object' || e === null) return false;
  const { name, code } = e as { name?: unknown; code?: unknown };
  return name === 'FormatError' && typeof code === 'string' && CODE_SET.has(code);
}
