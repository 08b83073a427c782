/**
 * The header of an LLMCP35 v1 file (../SPEC.md §3, §4): its raw parsed form,
 * the fixed-header checks (§9.1), the variable-header parse (§9.2), and the
 * canonical header writer (§8). Raw u64 values stay `bigint` here: hostile
 * files carry values far above 2^53.
 */
import { validateAdamWConfig, validateGroups, type LocatedName } from './adamw-rules.ts';
import { hexBytes } from './bits.ts';
import { ByteReader } from './byte-reader.ts';
import { FormatError } from './errors.ts';
import {
  BASE_HEADER_BYTES,
  CHECKSUM_OFFSET,
  ENDIAN_MARKER,
  FIXED_HEADER_BYTES,
  FORMAT_VERSION,
  GROUPS_FLAG_OFFSET,
  MAGIC,
  MAX_HEADER_BYTES,
  RNG_ALGORITHM_VERSION,
  TOKENIZER_LAYOUT_VERSION,
  U64_MAX,
  dtypeOfTag,
  roleOfTag,
  type RecordDType,
  type RecordRole,
} from './tags.ts';
import type { AdamWConfig } from './types.ts';

/** The fixed 38-byte header as read (../SPEC.md §3). */
export interface FixedHeader {
  readonly formatVersion: number;
  readonly endianMarker: number;
  readonly headerBytes: bigint;
  readonly payloadBytes: bigint;
  readonly storedChecksum: bigint;
}

/** The decoder configuration exactly as stored (u64 fields as bigint). */
export interface RawDecoderConfig {
  readonly vocabularySize: bigint;
  readonly modelWidth: bigint;
  readonly heads: bigint;
  readonly feedForwardWidth: bigint;
  readonly layers: bigint;
  readonly maxPositions: bigint;
  readonly ropeBase: number;
  readonly rmsEpsilon: number;
}

/** One descriptor entry as stored (../SPEC.md §4.1). */
export interface RawDescriptor {
  readonly index: number;
  /** Absolute offset of the entry in the header, and its length. */
  readonly entryOffset: number;
  readonly entryLength: number;
  readonly roleTag: number;
  readonly role: RecordRole | undefined;
  /** Decoded name (lossy only in lenient parses of invalid UTF-8). */
  readonly name: string;
  readonly nameBytes: Uint8Array;
  readonly dtypeTag: number;
  readonly dtype: RecordDType | undefined;
  readonly shape: readonly bigint[];
  readonly offset: bigint;
  readonly byteLength: bigint;
}

/** Parameter-group lists with the offset of each name. */
export interface RawGroups {
  readonly decay: readonly LocatedName[];
  readonly noDecay: readonly LocatedName[];
}

/** Everything the header says, fields in file order (../SPEC.md §3–§4). */
export interface RawHeader extends FixedHeader {
  readonly tokenizerLayoutVersion: number;
  readonly rngAlgorithmVersion: number;
  readonly selectedStep: bigint;
  readonly samplingRngState: bigint;
  readonly tokenizerKindTag: number;
  readonly tokenizerVocabulary: bigint;
  readonly decoder: RawDecoderConfig;
  readonly adamw: AdamWConfig;
  readonly groupsFlag: number;
  readonly groups: RawGroups | null;
  readonly optimizerStep: bigint;
  readonly beta1Power: number;
  readonly beta2Power: number;
  /** Offset of the optimizer step field (after the groups). */
  readonly optimizerStepOffset: number;
  readonly modelParameterCount: number;
  readonly optimizerStateCount: number;
  readonly descriptorCount: number;
  /** Offset of the descriptor count field; entries start 4 bytes later. */
  readonly descriptorCountOffset: number;
  readonly descriptors: readonly RawDescriptor[];
}

/** A header field seen while parsing: name, absolute offset, width and value. */
export interface HeaderFieldTrace {
  readonly field: string;
  readonly offset: number;
  readonly width: number;
  /** Stored type: integer widths, `f64`, a `string` (u32 length + UTF-8), or a whole `descriptor` entry. */
  readonly type: HeaderFieldType;
  readonly value: bigint | number | string;
}

/** Stored type of a traced header field. */
export type HeaderFieldType = 'u8' | 'u16' | 'u32' | 'u64' | 'f64' | 'string' | 'descriptor';

function hex(value: bigint | number, digits: number): string {
  return `0x${value.toString(16).padStart(digits, '0')}`;
}

/**
 * Checks ../SPEC.md §9.1 steps 1–5 on the first bytes of a file, then the
 * header-size limit of §15.2.
 * @param head - at least the first 38 bytes (or the whole file if shorter).
 * @param fileLength - the total file length.
 * @returns the fixed header.
 * @throws FormatError FORMAT_TRUNCATED, FORMAT_BAD_MAGIC, FORMAT_UNSUPPORTED_VERSION,
 *   FORMAT_UNSUPPORTED_ENDIANNESS, FORMAT_FILE_EXTENT or FORMAT_LIMIT_EXCEEDED.
 */
export function parseFixedHeader(head: Uint8Array, fileLength: number): FixedHeader {
  if (fileLength < FIXED_HEADER_BYTES || head.length < FIXED_HEADER_BYTES) {
    throw new FormatError('FORMAT_TRUNCATED', `file of ${fileLength} bytes is shorter than the 38-byte fixed header`, {
      reason: 'fixed-header',
      offset: 0,
      field: 'fixed header',
      expected: '>= 38 bytes',
      found: `${fileLength} bytes`,
    });
  }
  for (let i = 0; i < MAGIC.length; i++) {
    if (head[i] !== MAGIC[i]) {
      const found = hexBytes(head.subarray(0, 8));
      throw new FormatError('FORMAT_BAD_MAGIC', `bad magic at offset 0: expected 4c 4c 4d 43 50 33 35 00 ("LLMCP35\\0"), found ${found}`, {
        reason: 'magic',
        offset: i,
        field: 'magic',
        expected: '4c 4c 4d 43 50 33 35 00',
        found,
      });
    }
  }
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  const formatVersion = view.getUint16(8, true);
  if (formatVersion !== FORMAT_VERSION) {
    throw new FormatError('FORMAT_UNSUPPORTED_VERSION', `unsupported format version at offset 8: expected 1, found ${formatVersion}`, {
      reason: 'format-version',
      offset: 8,
      field: 'format version',
      expected: '1',
      found: String(formatVersion),
    });
  }
  const endianMarker = view.getUint32(10, true);
  if (endianMarker !== ENDIAN_MARKER) {
    throw new FormatError('FORMAT_UNSUPPORTED_ENDIANNESS', `unsupported endian marker at offset 10: expected 0x01020304 (bytes 04 03 02 01), found ${hex(endianMarker, 8)}`, {
      reason: 'endian-marker',
      offset: 10,
      field: 'endian marker',
      expected: '0x01020304',
      found: hex(endianMarker, 8),
    });
  }
  const headerBytes = view.getBigUint64(14, true);
  const payloadBytes = view.getBigUint64(22, true);
  const sum = headerBytes + payloadBytes;
  if (headerBytes < BigInt(FIXED_HEADER_BYTES) || sum > U64_MAX || sum !== BigInt(fileLength)) {
    const why =
      headerBytes < BigInt(FIXED_HEADER_BYTES)
        ? 'header_bytes is below 38'
        : sum > U64_MAX
          ? 'header_bytes + payload_bytes overflows u64'
          : 'header_bytes + payload_bytes differs from the file length';
    throw new FormatError(
      'FORMAT_FILE_EXTENT',
      `file extent mismatch: ${why} (header_bytes ${headerBytes}, payload_bytes ${payloadBytes}, file length ${fileLength})`,
      { reason: 'file-extent', offset: 14, field: 'header_bytes/payload_bytes', expected: `header_bytes >= 38 and header_bytes + payload_bytes = ${fileLength}`, found: `${headerBytes} + ${payloadBytes}` },
    );
  }
  assertHeaderWithinLimit(Number(headerBytes));
  return { formatVersion, endianMarker, headerBytes, payloadBytes, storedChecksum: view.getBigUint64(CHECKSUM_OFFSET, true) };
}

/**
 * The implementation limit on `header_bytes` (../SPEC.md §15.2): checked right
 * after the file extent (§9.1 step 5) and before the checksum, so a hostile
 * length is refused from 38 bytes without reading, hashing or allocating
 * the header it declares. The encoder applies the same check first.
 * @param headerBytes - the declared (or planned) header length.
 * @throws FormatError FORMAT_LIMIT_EXCEEDED (reason `header-too-large`).
 */
export function assertHeaderWithinLimit(headerBytes: number): void {
  if (headerBytes > MAX_HEADER_BYTES) {
    throw new FormatError(
      'FORMAT_LIMIT_EXCEEDED',
      `header_bytes at offset 14 is too large: expected at most ${MAX_HEADER_BYTES} (64 MiB, SPEC §15.2; a header holds only names and descriptors), found ${headerBytes}`,
      { reason: 'header-too-large', offset: 14, field: 'header_bytes', expected: `<= ${MAX_HEADER_BYTES}`, found: String(headerBytes) },
    );
  }
}

/** Options of {@link parseVariableHeader}. */
export interface ParseHeaderOptions {
  /** Called for each field read (used by the inspector). */
  readonly onField?: (trace: HeaderFieldTrace) => void;
  /**
   * Lenient mode (inspector): value-rule violations are reported here and
   * parsing continues; only structural failures (truncation, an unknown
   * groups flag) still throw. Strict mode (default) throws the first error.
   */
  readonly onIssue?: (error: FormatError) => void;
  /** Receives fields as they are parsed (for partial inspection: it holds what was read when parsing throws). */
  readonly partial?: PartialHeader;
}

/** The fields parsed so far; complete when parsing returns (the inspector reads partial results). */
export type PartialHeader = { -readonly [K in keyof RawHeader]?: RawHeader[K] };

/** What the entry readers share: the reader, where value-rule failures go, and the field tracer. */
interface HeaderReading {
  readonly r: ByteReader;
  readonly fail: (e: FormatError) => void;
  readonly trace: ParseHeaderOptions['onField'];
}

/**
 * Parses the variable header `bytes[38, header_bytes)` in the order of ../SPEC.md
 * §9.2, validating AdamW configuration and groups on the way.
 *
 * @param header - buffer holding at least the whole header (offsets absolute).
 * @param fixed - the checked fixed header.
 * @param options - lenient mode, field tracing, and the object that receives fields as they are parsed.
 * @returns the complete raw header.
 * @throws FormatError in the categories of ../SPEC.md §9.2.
 */
export function parseVariableHeader(header: Uint8Array, fixed: FixedHeader, options: ParseHeaderOptions = {}): RawHeader {
  const partial: PartialHeader = options.partial ?? {};
  const headerEnd = Number(fixed.headerBytes); // <= file length, checked by parseFixedHeader
  const r = new ByteReader(header, FIXED_HEADER_BYTES, headerEnd);
  const trace = options.onField;
  const fail = (error: FormatError): void => {
    if (options.onIssue === undefined) throw error;
    options.onIssue(error);
  };
  Object.assign(partial, fixed);
  const WIDTH = { u8: 1, u16: 2, u32: 4, u64: 8, f64: 8 } as const;
  const read = <T extends bigint | number>(field: string, type: keyof typeof WIDTH, fn: () => T): T => {
    const offset = r.position;
    const value = fn();
    trace?.({ field, offset, width: WIDTH[type], type, value });
    return value;
  };

  const tokenizerLayoutVersion = read('tokenizer layout version', 'u16', () => r.u16('tokenizer layout version'));
  partial.tokenizerLayoutVersion = tokenizerLayoutVersion;
  if (tokenizerLayoutVersion !== TOKENIZER_LAYOUT_VERSION) {
    fail(
      new FormatError('FORMAT_UNSUPPORTED_TOKENIZER_LAYOUT', `unsupported tokenizer layout version at offset 38: expected 1, found ${tokenizerLayoutVersion}`, {
        reason: 'tokenizer-layout-version',
        offset: 38,
        field: 'tokenizer layout version',
        expected: '1',
        found: String(tokenizerLayoutVersion),
      }),
    );
  }
  const rngAlgorithmVersion = read('sampling RNG algorithm version', 'u16', () => r.u16('sampling RNG algorithm version'));
  partial.rngAlgorithmVersion = rngAlgorithmVersion;
  if (rngAlgorithmVersion !== RNG_ALGORITHM_VERSION) {
    fail(
      new FormatError('FORMAT_UNSUPPORTED_RNG_ALGORITHM', `unsupported sampling RNG algorithm version at offset 40: expected 1 (SplitMix64), found ${rngAlgorithmVersion}`, {
        reason: 'rng-algorithm-version',
        offset: 40,
        field: 'sampling RNG algorithm version',
        expected: '1',
        found: String(rngAlgorithmVersion),
      }),
    );
  }
  partial.selectedStep = read('selected step', 'u64', () => r.u64('selected step'));
  partial.samplingRngState = read('sampling RNG state', 'u64', () => r.u64('sampling RNG state'));
  const tokenizerKindTag = read('tokenizer kind', 'u8', () => r.u8('tokenizer kind'));
  partial.tokenizerKindTag = tokenizerKindTag;
  if (tokenizerKindTag !== 1 && tokenizerKindTag !== 2) {
    fail(
      new FormatError('FORMAT_UNKNOWN_TOKENIZER_KIND', `unknown tokenizer kind at offset 58: expected 1 (literal) or 2 (byte-level BPE), found ${tokenizerKindTag}`, {
        reason: 'tokenizer-kind',
        offset: 58,
        field: 'tokenizer kind',
        expected: '1 or 2',
        found: String(tokenizerKindTag),
      }),
    );
  }
  partial.tokenizerVocabulary = read('tokenizer vocabulary', 'u64', () => r.u64('tokenizer vocabulary'));
  const decoder: RawDecoderConfig = {
    vocabularySize: read('decoder vocabulary_size', 'u64', () => r.u64('decoder vocabulary_size')),
    modelWidth: read('decoder model_width', 'u64', () => r.u64('decoder model_width')),
    heads: read('decoder heads', 'u64', () => r.u64('decoder heads')),
    feedForwardWidth: read('decoder feed_forward_width', 'u64', () => r.u64('decoder feed_forward_width')),
    layers: read('decoder layers', 'u64', () => r.u64('decoder layers')),
    maxPositions: read('decoder max_positions', 'u64', () => r.u64('decoder max_positions')),
    ropeBase: read('decoder rope_base', 'f64', () => r.f64('decoder rope_base')),
    rmsEpsilon: read('decoder rms_epsilon', 'f64', () => r.f64('decoder rms_epsilon')),
  };
  partial.decoder = decoder;
  const adamw: AdamWConfig = {
    learningRate: read('AdamW learning_rate', 'f64', () => r.f64('AdamW learning_rate')),
    beta1: read('AdamW beta1', 'f64', () => r.f64('AdamW beta1')),
    beta2: read('AdamW beta2', 'f64', () => r.f64('AdamW beta2')),
    epsilon: read('AdamW epsilon', 'f64', () => r.f64('AdamW epsilon')),
    weightDecay: read('AdamW weight_decay', 'f64', () => r.f64('AdamW weight_decay')),
  };
  partial.adamw = adamw;
  try {
    validateAdamWConfig(adamw);
  } catch (e) {
    fail(e as FormatError);
  }
  const groupsFlag = read('parameter-groups flag', 'u8', () => r.u8('parameter-groups flag'));
  partial.groupsFlag = groupsFlag;
  readGroupLists({ r, fail, trace }, groupsFlag, partial);
  const optimizerStepOffset = r.position;
  partial.optimizerStepOffset = optimizerStepOffset;
  partial.optimizerStep = read('optimizer step', 'u64', () => r.u64('optimizer step'));
  partial.beta1Power = read('beta1 power', 'f64', () => r.f64('beta1 power'));
  partial.beta2Power = read('beta2 power', 'f64', () => r.f64('beta2 power'));
  partial.modelParameterCount = read('model parameter count', 'u32', () => r.u32('model parameter count'));
  partial.optimizerStateCount = read('optimizer state count', 'u32', () => r.u32('optimizer state count'));
  const descriptorCountOffset = r.position;
  partial.descriptorCountOffset = descriptorCountOffset;
  const descriptorCount = read('descriptor count', 'u32', () => r.u32('descriptor count'));
  partial.descriptorCount = descriptorCount;
  // No allocation from the declared count (../SPEC.md §9.10): entries are
  // appended as they are read, each read bounded by header_bytes.
  const descriptors: RawDescriptor[] = [];
  partial.descriptors = descriptors;
  for (let index = 0; index < descriptorCount; index++) {
    descriptors.push(readDescriptor({ r, fail, trace }, index));
  }
  if (r.remaining > 0) {
    fail(
      new FormatError('FORMAT_NON_CANONICAL', `${r.remaining} unparsed header byte(s) at offset ${r.position}: expected the header to end after the last descriptor at ${r.position}, found header_bytes ${headerEnd}`, {
        reason: 'unparsed-header-bytes',
        offset: r.position,
        field: 'header end',
        expected: String(r.position),
        found: String(headerEnd),
      }),
    );
  }
  return partial as RawHeader;
}

/**
 * ../SPEC.md §9.2 step 7: after the parameter-groups flag, the decay and
 * no-decay name lists when it is 1 (their rules checked), nothing when it is
 * 0; any other flag is structural (the rest of the header cannot be located).
 * Stores the lists (null for flag 0) in `partial` as they are read.
 */
function readGroupLists(reading: HeaderReading, groupsFlag: number, partial: PartialHeader): void {
  const { fail } = reading;
  if (groupsFlag === 1) {
    const decay = readNameList(reading, 'decay');
    partial.groups = { decay, noDecay: [] };
    const noDecay = readNameList(reading, 'no-decay');
    partial.groups = { decay, noDecay };
    try {
      validateGroups(decay, noDecay);
    } catch (e) {
      fail(e as FormatError);
    }
  } else if (groupsFlag !== 0) {
    // Structural: with an unknown flag the rest of the header cannot be located.
    throw new FormatError('FORMAT_NON_CANONICAL', `parameter-groups flag at offset ${GROUPS_FLAG_OFFSET}: expected 0 or 1, found ${groupsFlag}`, {
      reason: 'groups-flag',
      offset: GROUPS_FLAG_OFFSET,
      field: 'parameter-groups flag',
      expected: '0 or 1',
      found: String(groupsFlag),
    });
  } else {
    partial.groups = null;
  }
}

function readNameList(reading: HeaderReading, label: string): LocatedName[] {
  const { r, fail, trace } = reading;
  const countOffset = r.position;
  const count = r.u32(`${label} name count`);
  trace?.({ field: `${label} name count`, offset: countOffset, width: 4, type: 'u32', value: count });
  const names: LocatedName[] = [];
  for (let i = 0; i < count; i++) {
    const { text, raw, offset } = r.string(`${label} name ${i}`);
    trace?.({ field: `${label} name ${i}`, offset, width: 4 + raw.length, type: 'string', value: text ?? lossy(raw) });
    if (text === undefined) fail(invalidUtf8(`${label} name ${i}`, offset + 4, raw));
    names.push({ name: text ?? lossy(raw), offset });
  }
  return names;
}

function lossy(raw: Uint8Array): string {
  return new TextDecoder('utf-8', { ignoreBOM: true }).decode(raw);
}

function invalidUtf8(field: string, offset: number, raw: Uint8Array): FormatError {
  const found = hexBytes(raw.subarray(0, 32));
  return new FormatError('FORMAT_INVALID_UTF8', `${field} at offset ${offset} is not valid UTF-8: found bytes ${found}${raw.length > 32 ? ' …' : ''}`, {
    reason: 'invalid-utf8',
    offset,
    field,
    expected: 'valid UTF-8',
    found,
  });
}

function readDescriptor(reading: HeaderReading, index: number): RawDescriptor {
  const { r, fail, trace } = reading;
  const entryOffset = r.position;
  const at = `descriptor[${index}]`;
  const roleTag = r.u8(`${at} role tag`);
  const role = roleOfTag(roleTag);
  if (role === undefined) {
    fail(
      new FormatError('FORMAT_UNKNOWN_TENSOR_ROLE', `unknown role tag in ${at} at offset ${entryOffset}: expected 1–5, found ${roleTag}`, {
        reason: 'role-tag',
        offset: entryOffset,
        field: `${at}.role`,
        recordIndex: index,
        expected: '1..5',
        found: String(roleTag),
      }),
    );
  }
  const { text, raw, offset: nameOffset } = r.string(`${at} name`);
  if (text === undefined) fail(invalidUtf8(`${at}.name`, nameOffset + 4, raw));
  const name = text ?? lossy(raw);
  if (raw.length === 0) {
    fail(
      new FormatError('FORMAT_LAYOUT', `empty name in ${at} at offset ${nameOffset}: expected a non-empty record name`, {
        reason: 'empty-record-name',
        offset: nameOffset,
        field: `${at}.name`,
        recordIndex: index,
        expected: 'non-empty name',
        found: '""',
      }),
    );
  }
  const dtypeOffset = r.position;
  const dtypeTag = r.u8(`${at} dtype tag`);
  const dtype = dtypeOfTag(dtypeTag);
  if (dtype === undefined) {
    fail(
      new FormatError('FORMAT_UNKNOWN_DTYPE', `unknown dtype tag in ${at} ("${name}") at offset ${dtypeOffset}: expected 1 (u8), 2 (u32) or 3 (f64), found ${dtypeTag}`, {
        reason: 'dtype-tag',
        offset: dtypeOffset,
        field: `${at}.dtype`,
        recordIndex: index,
        recordName: name,
        expected: '1..3',
        found: String(dtypeTag),
      }),
    );
  }
  const rank = r.u32(`${at} rank`);
  const shape: bigint[] = [];
  for (let k = 0; k < rank; k++) shape.push(r.u64(`${at} shape[${k}]`));
  const offset = r.u64(`${at} offset`);
  const byteLength = r.u64(`${at} byte_len`);
  const entryLength = r.position - entryOffset;
  trace?.({ field: at, offset: entryOffset, width: entryLength, type: 'descriptor', value: name });
  return { index, entryOffset, entryLength, roleTag, role, name, nameBytes: raw, dtypeTag, dtype, shape, offset, byteLength };
}

/** Bytes of a descriptor entry besides its name and shape (../SPEC.md §4.1): role u8, name length u32, dtype u8, rank u32, offset u64, byte_len u64. */
const DESCRIPTOR_ENTRY_FIXED_BYTES = 1 + 4 + 1 + 4 + 8 + 8;

/**
 * Length of one descriptor entry (../SPEC.md §4.1, §4.3): the fixed fields,
 * the name and a u64 per dimension.
 * @param nameBytes - the name's UTF-8 length.
 * @param rank - the number of dimensions.
 * @returns the entry's length in bytes, `26 + nameBytes + 8 × rank`.
 */
export function descriptorEntryLength(nameBytes: number, rank: number): number {
  return DESCRIPTOR_ENTRY_FIXED_BYTES + nameBytes + 8 * rank;
}

/**
 * Header length from the formula of ../SPEC.md §4.3.
 * @param groups - UTF-8 group names, or null when the flag is 0.
 * @param descriptors - name byte lengths and ranks of every descriptor.
 * @returns header_bytes.
 */
export function headerLength(groups: { decay: readonly Uint8Array[]; noDecay: readonly Uint8Array[] } | null, descriptors: readonly { nameBytes: Uint8Array; rank: number }[]): number {
  let total = BASE_HEADER_BYTES;
  if (groups !== null) {
    total += 8;
    for (const n of groups.decay) total += 4 + n.length;
    for (const n of groups.noDecay) total += 4 + n.length;
  }
  for (const d of descriptors) total += descriptorEntryLength(d.nameBytes.length, d.rank);
  return total;
}

/** What the header writer needs; offsets and lengths already assigned. */
export interface HeaderPlan {
  readonly headerBytes: number;
  readonly payloadBytes: number;
  readonly selectedStep: bigint;
  readonly samplingRngState: bigint;
  readonly tokenizerKindTag: number;
  readonly tokenizerVocabulary: bigint;
  readonly decoder: RawDecoderConfig;
  readonly adamw: AdamWConfig;
  readonly groups: { decay: readonly Uint8Array[]; noDecay: readonly Uint8Array[] } | null;
  readonly optimizerStep: bigint;
  readonly beta1Power: number;
  readonly beta2Power: number;
  readonly modelParameterCount: number;
  readonly optimizerStateCount: number;
  readonly descriptors: readonly {
    readonly roleTag: number;
    readonly nameBytes: Uint8Array;
    readonly dtypeTag: number;
    readonly shape: readonly bigint[];
    readonly offset: bigint;
    readonly byteLength: bigint;
  }[];
}

/**
 * Writes the canonical header (../SPEC.md §8 step 4) with a zero checksum field.
 * @param plan - field values; `plan.headerBytes` must equal {@link headerLength}.
 * @returns exactly `plan.headerBytes` bytes.
 */
export function writeHeader(plan: HeaderPlan): Uint8Array {
  const out = new Uint8Array(plan.headerBytes);
  const view = new DataView(out.buffer);
  let p = 0;
  const u8 = (v: number): void => {
    view.setUint8(p, v);
    p += 1;
  };
  const u16 = (v: number): void => {
    view.setUint16(p, v, true);
    p += 2;
  };
  const u32 = (v: number): void => {
    view.setUint32(p, v, true);
    p += 4;
  };
  const u64 = (v: bigint): void => {
    view.setBigUint64(p, v, true);
    p += 8;
  };
  const f64 = (v: number): void => {
    view.setFloat64(p, v, true);
    p += 8;
  };
  const bytes = (b: Uint8Array): void => {
    out.set(b, p);
    p += b.length;
  };
  const str = (b: Uint8Array): void => {
    u32(b.length);
    bytes(b);
  };
  bytes(MAGIC);
  u16(FORMAT_VERSION);
  u32(ENDIAN_MARKER);
  u64(BigInt(plan.headerBytes));
  u64(BigInt(plan.payloadBytes));
  u64(0n); // checksum, patched after hashing
  u16(TOKENIZER_LAYOUT_VERSION);
  u16(RNG_ALGORITHM_VERSION);
  u64(plan.selectedStep);
  u64(plan.samplingRngState);
  u8(plan.tokenizerKindTag);
  u64(plan.tokenizerVocabulary);
  const d = plan.decoder;
  for (const v of [d.vocabularySize, d.modelWidth, d.heads, d.feedForwardWidth, d.layers, d.maxPositions]) u64(v);
  f64(d.ropeBase);
  f64(d.rmsEpsilon);
  const a = plan.adamw;
  for (const v of [a.learningRate, a.beta1, a.beta2, a.epsilon, a.weightDecay]) f64(v);
  if (plan.groups === null) {
    u8(0);
  } else {
    u8(1);
    u32(plan.groups.decay.length);
    for (const n of plan.groups.decay) str(n);
    u32(plan.groups.noDecay.length);
    for (const n of plan.groups.noDecay) str(n);
  }
  u64(plan.optimizerStep);
  f64(plan.beta1Power);
  f64(plan.beta2Power);
  u32(plan.modelParameterCount);
  u32(plan.optimizerStateCount);
  u32(plan.descriptors.length);
  for (const desc of plan.descriptors) {
    u8(desc.roleTag);
    str(desc.nameBytes);
    u8(desc.dtypeTag);
    u32(desc.shape.length);
    for (const dim of desc.shape) u64(dim);
    u64(desc.offset);
    u64(desc.byteLength);
  }
  if (p !== plan.headerBytes) throw new Error(`internal: header writer wrote ${p} bytes, planned ${plan.headerBytes}`);
  return out;
}
