/**
 * Best-effort layout inspection (for `llmcp inspect` and the web inspector):
 * as much of the file as can be parsed, even when validation fails, plus the
 * verdict of the full decoder. Never throws on any byte input.
 */
import { decodeCheckpoint } from './decode.ts';
import { FormatError, isFormatError, type FormatErrorCategory, type FormatErrorCode } from './errors.ts';
import { checksumLabel, fnv1a64 } from './fnv1a64.ts';
import { checkedByteLength } from './geometry.ts';
import { parseFixedHeader, parseVariableHeader, type FixedHeader, type HeaderFieldTrace, type HeaderFieldType, type PartialHeader, type RawDecoderConfig } from './header.ts';
import { hexBytes } from './bits.ts';
import { fileChecksum } from './internal/bytes.ts';
import type { DecodedCheckpoint } from './layout.ts';
import { CHECKSUM_OFFSET, DTYPE_WIDTHS, FIXED_HEADER_BYTES, TOKENIZER_KIND_NAMES, U64_MAX, type RecordDType, type RecordRole } from './tags.ts';
import type { AdamWConfig } from './types.ts';

/** One header field: where it lies, its raw bytes and its value. */
export interface InspectedField {
  readonly field: string;
  readonly offset: number;
  readonly width: number;
  /** Stored type (`bytes` for the magic). */
  readonly type: HeaderFieldType | 'bytes';
  /** Raw bytes as hex (at most the first 64 bytes, then `…`). */
  readonly hex: string;
  readonly value: bigint | number | string;
}

/** Plain-data view of a {@link FormatError}. */
export interface InspectionError {
  readonly code: FormatErrorCode;
  readonly category: FormatErrorCategory;
  readonly reason: string;
  readonly message: string;
  readonly offset?: number;
  readonly field?: string;
  readonly recordName?: string;
  readonly recordIndex?: number;
  readonly elementIndex?: number;
  readonly expected?: string;
  readonly found?: string;
}

/** Which part of the payload a descriptor belongs to per the header counts. */
export type RecordSlice = 'tokenizer' | 'model' | 'optimizer' | 'beyond-partition';

/** One descriptor as stored, with per-row geometry checks. */
export interface InspectedDescriptor {
  readonly index: number;
  /** Where the entry lies in the header. */
  readonly entryOffset: number;
  readonly entryLength: number;
  readonly roleTag: number;
  readonly role: RecordRole | null;
  readonly name: string;
  readonly dtypeTag: number;
  readonly dtype: RecordDType | null;
  readonly shape: readonly bigint[];
  readonly offset: bigint;
  readonly byteLength: bigint;
  /** offset + byteLength, or null when that overflows u64. */
  readonly end: bigint | null;
  /** product(shape) × width, or null when it overflows u64 (or the dtype is unknown). */
  readonly expectedByteLength: bigint | null;
  /** Which slice the header counts assign this record to. */
  readonly slice: RecordSlice;
  readonly checks: {
    /** byte_len = product(shape) × dtype width. */
    readonly byteLengthMatchesShape: boolean;
    /** offset = end of the previous record (header_bytes for the first). */
    readonly contiguous: boolean;
    /** The record lies inside the file. */
    readonly withinFile: boolean;
  };
  /** `fnv1a64:%016x` of the record bytes when inside the file, else null. */
  readonly payloadChecksum: string | null;
}

/** Tokenizer summary. */
export interface InspectedTokenizer {
  readonly kindTag: number;
  readonly kind: 'literal' | 'bpe' | null;
  readonly kindName: 'literal-u32' | 'byte-bpe' | null;
  readonly declaredVocabulary: bigint | null;
  /** Literal: number of token records found; BPE: number of merges (from the record shape). */
  readonly records: number | null;
  readonly merges: bigint | null;
  /** First pieces (literal, as hex) or pairs (BPE), at most 16. */
  readonly preview: readonly string[];
}

/** Everything {@link inspectCheckpoint} could establish about a file. */
export interface CheckpointInspection {
  readonly fileLength: number;
  /** The six fixed-header fields (as many as the file holds). */
  readonly fixedHeader: readonly InspectedField[];
  /** Variable-header fields in file order up to the descriptor table (or up to where parsing stopped). */
  readonly fields: readonly InspectedField[];
  readonly headerBytes: bigint | null;
  readonly payloadBytes: bigint | null;
  readonly checksum: {
    readonly stored: bigint;
    readonly computed: bigint;
    readonly storedLabel: string;
    readonly computedLabel: string;
    readonly matches: boolean;
  } | null;
  readonly selectedStep: bigint | null;
  readonly samplingRngState: bigint | null;
  readonly tokenizer: InspectedTokenizer | null;
  readonly decoder: RawDecoderConfig | null;
  readonly adamw: AdamWConfig | null;
  readonly groupsFlag: number | null;
  readonly groups: { readonly decay: readonly string[]; readonly noDecay: readonly string[] } | null;
  readonly optimizerStep: bigint | null;
  readonly beta1Power: number | null;
  readonly beta2Power: number | null;
  readonly modelParameterCount: number | null;
  readonly optimizerStateCount: number | null;
  readonly descriptorCount: number | null;
  readonly descriptors: readonly InspectedDescriptor[];
  /** Running end of the records after the last parsed descriptor (null if none or overflowed). */
  readonly recordsEnd: bigint | null;
  /** Where header parsing stopped early (structural failure), if it did. */
  readonly parseStoppedAt: InspectionError | null;
  /** Value-rule violations seen while parsing the header leniently, in file order. */
  readonly headerIssues: readonly InspectionError[];
  /** The full decoder's verdict: valid with the decoded checkpoint, or the first failing rule. */
  readonly verdict: { readonly valid: true; readonly checkpoint: DecodedCheckpoint } | { readonly valid: false; readonly error: InspectionError };
}

/**
 * The plain-data (JSON-able) form of a {@link FormatError}: code, category,
 * reason, message and whichever context fields it carries — the shape of the
 * errors in a {@link CheckpointInspection} (for JSON reports such as
 * `llmcp verify --json`).
 *
 * @param e - a FormatError (e.g. caught from `decodeCheckpoint`).
 * @returns a fresh plain object; `JSON.stringify` keeps every field.
 * @example
 * ```ts
 * try { decodeCheckpoint(bytes); } catch (e) { if (isFormatError(e)) console.log(JSON.stringify(formatErrorData(e))); }
 * ```
 */
export function formatErrorData(e: FormatError): InspectionError {
  const out: { -readonly [K in keyof InspectionError]: InspectionError[K] } = { code: e.code, category: e.category, reason: e.reason, message: e.message };
  if (e.offset !== undefined) out.offset = e.offset;
  if (e.field !== undefined) out.field = e.field;
  if (e.recordName !== undefined) out.recordName = e.recordName;
  if (e.recordIndex !== undefined) out.recordIndex = e.recordIndex;
  if (e.elementIndex !== undefined) out.elementIndex = e.elementIndex;
  if (e.expected !== undefined) out.expected = e.expected;
  if (e.found !== undefined) out.found = e.found;
  return out;
}

/**
 * @param e - a caught error.
 * @returns its plain-data summary (non-FormatErrors become FORMAT_LIMIT_EXCEEDED with reason `internal`).
 */
function inspectionError(e: unknown): InspectionError {
  return formatErrorData(
    isFormatError(e) ? e : new FormatError('FORMAT_LIMIT_EXCEEDED', `unexpected failure: ${e instanceof Error ? e.message : String(e)}`, { reason: 'internal' }),
  );
}

/** The field as the inspector shows it: `at` (where and what it is) with its raw bytes as hex. */
function field(bytes: Uint8Array, at: Omit<InspectedField, 'hex'>): InspectedField {
  const { offset, width } = at;
  const raw = bytes.subarray(offset, Math.min(bytes.length, offset + Math.min(width, 64)));
  return { ...at, hex: hexBytes(raw) + (width > 64 ? ' …' : '') };
}

function fixedFields(bytes: Uint8Array): InspectedField[] {
  const out: InspectedField[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const spec: [string, number, number, InspectedField['type'], () => bigint | number | string][] = [
    ['magic', 0, 8, 'bytes', () => Array.from(bytes.subarray(0, 8), (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`)).join('')],
    ['format version', 8, 2, 'u16', () => view.getUint16(8, true)],
    ['endian marker', 10, 4, 'u32', () => `0x${view.getUint32(10, true).toString(16).padStart(8, '0')}`],
    ['header_bytes', 14, 8, 'u64', () => view.getBigUint64(14, true)],
    ['payload_bytes', 22, 8, 'u64', () => view.getBigUint64(22, true)],
    ['checksum', 30, 8, 'u64', () => checksumLabel(view.getBigUint64(30, true))],
  ];
  for (const [name, offset, width, type, read] of spec) {
    if (offset + width > bytes.length) break;
    out.push(field(bytes, { field: name, offset, width, type, value: read() }));
  }
  return out;
}

function literalPreview(bytes: Uint8Array, d: { offset: bigint; byteLength: bigint }): string {
  const start = Number(d.offset);
  const len = Number(d.byteLength);
  const raw = bytes.subarray(start, start + Math.min(len, 16));
  return hexBytes(raw) + (len > 16 ? ' …' : '');
}

/**
 * Inspects any bytes as an LLMCP35 v1 file: fixed-header fields with offsets
 * and raw bytes, stored vs computed checksum, the variable header parsed
 * leniently (value-rule violations are listed, parsing continues until a
 * structural failure), every descriptor with its header entry and per-row
 * geometry checks, summaries of tokenizer, decoder and AdamW configuration,
 * step and RNG state, and the verdict of the full {@link decodeCheckpoint}.
 *
 * @param bytes - any bytes.
 * @returns the inspection; never throws for a Uint8Array.
 * @throws TypeError only when `bytes` is not a Uint8Array.
 * @example
 * ```ts
 * const report = inspectCheckpoint(bytes);
 * if (!report.verdict.valid) console.log(report.verdict.error.code, report.verdict.error.offset);
 * ```
 */
export function inspectCheckpoint(bytes: Uint8Array): CheckpointInspection {
  if (!(bytes instanceof Uint8Array)) throw new TypeError('inspectCheckpoint: bytes must be a Uint8Array');
  let verdict: CheckpointInspection['verdict'];
  try {
    verdict = { valid: true, checkpoint: decodeCheckpoint(bytes) };
  } catch (e) {
    verdict = { valid: false, error: inspectionError(e) };
  }
  const fixedHeader = fixedFields(bytes);
  const partial: PartialHeader = {};
  const fields: InspectedField[] = [];
  const headerIssues: InspectionError[] = [];
  let parseStoppedAt: InspectionError | null = null;
  let checksum: CheckpointInspection['checksum'] = null;
  let headerBytes: bigint | null = null;
  let payloadBytes: bigint | null = null;
  if (bytes.length >= FIXED_HEADER_BYTES) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    headerBytes = view.getBigUint64(14, true);
    payloadBytes = view.getBigUint64(22, true);
    const stored = view.getBigUint64(CHECKSUM_OFFSET, true);
    // A valid verdict has already verified the stored checksum against the file's: do not hash it again.
    const computed = verdict.valid ? verdict.checkpoint.layout.checksum : fileChecksum(bytes);
    checksum = { stored, computed, storedLabel: checksumLabel(stored), computedLabel: checksumLabel(computed), matches: stored === computed };
  }
  try {
    let fixed: FixedHeader;
    try {
      fixed = parseFixedHeader(bytes, bytes.length);
    } catch (e) {
      // Keep going when the fixed header is readable: list the problem and
      // parse the variable header as far as the file's bytes allow.
      if (headerBytes === null || payloadBytes === null || headerBytes < BigInt(FIXED_HEADER_BYTES)) throw e;
      headerIssues.push(inspectionError(e));
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      fixed = {
        formatVersion: view.getUint16(8, true),
        endianMarker: view.getUint32(10, true),
        headerBytes: headerBytes < BigInt(bytes.length) ? headerBytes : BigInt(bytes.length),
        payloadBytes,
        storedChecksum: view.getBigUint64(CHECKSUM_OFFSET, true),
      };
    }
    parseVariableHeader(bytes, fixed, {
      onField: (t: HeaderFieldTrace) => {
        if (t.type !== 'descriptor') fields.push(field(bytes, { field: t.field, offset: t.offset, width: t.width, type: t.type, value: t.value }));
      },
      onIssue: (e) => headerIssues.push(inspectionError(e)),
      partial,
    });
  } catch (e) {
    parseStoppedAt = inspectionError(e);
  }

  // Descriptors with per-row checks, as far as they were parsed.
  const descriptors: InspectedDescriptor[] = [];
  const raw = partial.descriptors ?? [];
  const tokenizerCount = partial.tokenizerKindTag === 2 ? 1n : (partial.tokenizerVocabulary ?? 0n);
  const modelEnd = tokenizerCount + BigInt(partial.modelParameterCount ?? 0);
  const optimizerEnd = modelEnd + 2n * BigInt(partial.optimizerStateCount ?? 0);
  let position: bigint | null = headerBytes;
  for (const d of raw) {
    const expectedByteLength = d.dtype === undefined ? null : (checkedByteLength(d.shape, DTYPE_WIDTHS[d.dtype]) ?? null);
    const endRaw = d.offset + d.byteLength;
    const end = endRaw > U64_MAX ? null : endRaw;
    const withinFile = end !== null && end <= BigInt(bytes.length) && (headerBytes === null || d.offset >= headerBytes);
    const i = BigInt(d.index);
    descriptors.push({
      index: d.index,
      entryOffset: d.entryOffset,
      entryLength: d.entryLength,
      roleTag: d.roleTag,
      role: d.role ?? null,
      name: d.name,
      dtypeTag: d.dtypeTag,
      dtype: d.dtype ?? null,
      shape: d.shape,
      offset: d.offset,
      byteLength: d.byteLength,
      end,
      expectedByteLength,
      slice: i < tokenizerCount ? 'tokenizer' : i < modelEnd ? 'model' : i < optimizerEnd ? 'optimizer' : 'beyond-partition',
      checks: { byteLengthMatchesShape: expectedByteLength === d.byteLength, contiguous: position !== null && d.offset === position, withinFile },
      payloadChecksum: withinFile ? checksumLabel(fnv1a64(bytes.subarray(Number(d.offset), Number(end)))) : null,
    });
    position = end;
  }

  let tokenizer: InspectedTokenizer | null = null;
  if (partial.tokenizerKindTag !== undefined) {
    const tag = partial.tokenizerKindTag;
    const kind = tag === 1 ? 'literal' : tag === 2 ? 'bpe' : null;
    const preview: string[] = [];
    let merges: bigint | null = null;
    let records: number | null = null;
    if (kind === 'literal') {
      const slice = descriptors.filter((d) => d.slice === 'tokenizer');
      records = slice.length;
      for (const d of slice.slice(0, 16)) if (d.checks.withinFile) preview.push(literalPreview(bytes, d));
    } else if (kind === 'bpe' && descriptors[0] !== undefined) {
      const d = descriptors[0];
      records = 1;
      merges = d.shape.length === 2 ? (d.shape[0] as bigint) : null;
      if (d.checks.withinFile && d.dtype === 'u32') {
        const view = new DataView(bytes.buffer, bytes.byteOffset + Number(d.offset), Number(d.byteLength));
        for (let r = 0; r < 16 && 8 * r + 8 <= view.byteLength; r++) preview.push(`(${view.getUint32(8 * r, true)}, ${view.getUint32(8 * r + 4, true)})`);
      }
    }
    tokenizer = {
      kindTag: tag,
      kind,
      kindName: kind === null ? null : TOKENIZER_KIND_NAMES[tag as 1 | 2],
      declaredVocabulary: partial.tokenizerVocabulary ?? null,
      records,
      merges,
      preview,
    };
  }

  return {
    fileLength: bytes.length,
    fixedHeader,
    fields,
    headerBytes,
    payloadBytes,
    checksum,
    selectedStep: partial.selectedStep ?? null,
    samplingRngState: partial.samplingRngState ?? null,
    tokenizer,
    decoder: partial.decoder ?? null,
    adamw: partial.adamw ?? null,
    groupsFlag: partial.groupsFlag ?? null,
    groups: partial.groups === undefined || partial.groups === null ? null : { decay: partial.groups.decay.map((n) => n.name), noDecay: partial.groups.noDecay.map((n) => n.name) },
    optimizerStep: partial.optimizerStep ?? null,
    beta1Power: partial.beta1Power ?? null,
    beta2Power: partial.beta2Power ?? null,
    modelParameterCount: partial.modelParameterCount ?? null,
    optimizerStateCount: partial.optimizerStateCount ?? null,
    descriptorCount: partial.descriptorCount ?? null,
    descriptors,
    recordsEnd: descriptors.length === 0 ? null : position,
    parseStoppedAt,
    headerIssues,
    verdict,
  };
}
