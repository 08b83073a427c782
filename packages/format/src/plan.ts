/**
 * Encoding plan (../SPEC.md §8): from a checkpoint state, the canonical record
 * list (tokenizer, model order, optimizer pairs sorted byte-wise by name),
 * offsets, the header bytes and a view of every record's payload — without
 * building the file. `encodeCheckpoint` copies the plan into one buffer; the
 * Node saver streams it to disk.
 *
 * Validation runs the decoder's own rules (header-size limit, AdamW, groups, geometry, §9.4–9.7)
 * on the planned records, in the decoder's order, so an invalid state fails
 * with the code the decoder would report for the file.
 */
import { validateAdamWConfig, validateGroups, type LocatedName } from './adamw-rules.ts';
import { FormatError } from './errors.ts';
import { checkGeometry } from './geometry.ts';
import { assertHeaderWithinLimit, descriptorEntryLength, headerLength, writeHeader, type RawDescriptor, type RawHeader } from './header.ts';
import { bytesOfFloat64 } from './internal/host-endian.ts';
import { validateRecords, type RecordSource } from './record-rules.ts';
import { BPE_BASE_VOCABULARY, BPE_RECORD_NAME, DTYPE_TAGS, ENDIAN_MARKER, FIRST_GROUP_NAME_OFFSET, FORMAT_VERSION, RNG_ALGORITHM_VERSION, ROLE_TAGS, TOKENIZER_LAYOUT_VERSION, U32_MAX, U64_MAX, type RecordDType, type RecordRole } from './tags.ts';
import type { CheckpointState, MomentState } from './types.ts';
import { compareByteWise, encodeUtf8Strict } from './utf8.ts';

/** A planned file: header bytes (checksum field zero) and each record's payload bytes. */
export interface CheckpointPlan {
  /** Canonical header with the checksum field (bytes 30..37) still zero. */
  readonly header: Uint8Array;
  /** The parsed form of the same header (for layout evidence and validation). */
  readonly raw: RawHeader;
  /** Payload of each record in file order (zero-copy views of f64 data on little-endian hosts). */
  readonly records: readonly Uint8Array[];
  /** Total file length. */
  readonly byteLength: number;
}

/** Options of {@link planCheckpoint}. */
export interface PlanOptions {
  /** Run the decoder's validation rules on the planned records (default true). */
  readonly validate?: boolean;
  /**
   * Screen flags of the f64 records by descriptor index (see
   * `RecordSource.screened`): a record whose flags are 0 is not searched for
   * non-finite or negative values. `() => 0` validates everything but the
   * values (a streaming writer screens those while it hashes).
   */
  readonly screened?: (index: number) => number | undefined;
}

interface PlannedRecord {
  readonly role: RecordRole;
  readonly name: string;
  readonly dtype: RecordDType;
  readonly shape: readonly number[];
  readonly bytes: Uint8Array;
  readonly values?: Float64Array;
}

function typeError(what: string): TypeError {
  return new TypeError(`encodeCheckpoint: ${what}`);
}

function u64Field(value: unknown, field: string): bigint {
  if (typeof value !== 'bigint') throw typeError(`${field} must be a bigint, got ${typeof value}`);
  if (value < 0n) throw new RangeError(`encodeCheckpoint: ${field} must be >= 0, got ${value}`);
  if (value > U64_MAX) {
    throw new FormatError('FORMAT_SIZE_OVERFLOW', `${field} ${value} does not fit in u64`, { reason: 'u64-field', field, expected: `<= ${U64_MAX}`, found: String(value) });
  }
  return value;
}

function countField(value: unknown, field: string): bigint {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`encodeCheckpoint: ${field} must be a non-negative safe integer, got ${String(value)}`);
  }
  return BigInt(value);
}

/**
 * A decoder field that may exceed 2^53 − 1 (../SPEC.md §15.2): the exact value
 * from `exact` when given (it must lie in [2^53, 2^64 − 1] and agree with the
 * number field), else the number field as a safe integer.
 */
function wideCountField(value: unknown, exact: unknown, field: string): bigint {
  if (exact === undefined) return countField(value, field);
  if (typeof exact !== 'bigint') throw typeError(`${field.replace('decoder.', 'decoder.exact.')} must be a bigint, got ${typeof exact}`);
  if (exact <= BigInt(Number.MAX_SAFE_INTEGER) || exact > U64_MAX) {
    throw new RangeError(`encodeCheckpoint: ${field.replace('decoder.', 'decoder.exact.')} must be in [2^53, 2^64 - 1] (smaller values belong in ${field}), got ${exact}`);
  }
  if (value !== Number(exact)) {
    throw new RangeError(`encodeCheckpoint: ${field} is ${String(value)} but ${field.replace('decoder.', 'decoder.exact.')} is ${exact} (expected ${field} = ${Number(exact)}; drop a stale exact when changing the field)`);
  }
  return exact;
}

function f64Field(value: unknown, field: string): number {
  if (typeof value !== 'number') throw typeError(`${field} must be a number, got ${typeof value}`);
  return value;
}

function utf8Name(name: unknown, field: string, offset: number): Uint8Array {
  if (typeof name !== 'string') throw typeError(`${field} must be a string, got ${typeof name}`);
  const bytes = encodeUtf8Strict(name);
  if (bytes === undefined) {
    throw new FormatError('FORMAT_INVALID_UTF8', `${field} "${name}" holds a lone UTF-16 surrogate and cannot be written as UTF-8`, {
      reason: 'invalid-utf8',
      offset,
      field,
      recordName: name,
      expected: 'a well-formed string',
      found: 'lone surrogate',
    });
  }
  if (bytes.length > U32_MAX) throw new FormatError('FORMAT_SIZE_OVERFLOW', `${field} is ${bytes.length} bytes long, more than a u32 string length`, { reason: 'string-length', field });
  return bytes;
}

function shapeOf(shape: unknown, field: string): number[] {
  if (!Array.isArray(shape)) throw typeError(`${field} must be an array of dimensions`);
  for (const d of shape) countField(d, `${field} dimension`);
  if (shape.length > U32_MAX) throw new FormatError('FORMAT_SIZE_OVERFLOW', `${field} rank ${shape.length} does not fit in u32`, { reason: 'rank', field });
  return shape as number[];
}

function float64Data(data: unknown, field: string): Float64Array {
  if (!(data instanceof Float64Array)) throw typeError(`${field} must be a Float64Array`);
  return data;
}

function tokenizerRecords(state: CheckpointState): { kindTag: number; vocabulary: bigint; records: PlannedRecord[] } {
  const tok = state.tokenizer as { kind?: unknown };
  if (tok?.kind === 'literal') {
    const pieces = state.tokenizer.kind === 'literal' ? state.tokenizer.pieces : [];
    if (!Array.isArray(pieces)) throw typeError('tokenizer.pieces must be an array of Uint8Array');
    const records = pieces.map((piece, i): PlannedRecord => {
      if (!(piece instanceof Uint8Array)) throw typeError(`tokenizer.pieces[${i}] must be a Uint8Array`);
      return { role: 'literal-token', name: String(i), dtype: 'u8', shape: [piece.length], bytes: piece };
    });
    return { kindTag: 1, vocabulary: BigInt(pieces.length), records };
  }
  if (tok?.kind === 'bpe') {
    const pairs = state.tokenizer.kind === 'bpe' ? state.tokenizer.pairs : [];
    if (!Array.isArray(pairs)) throw typeError('tokenizer.pairs must be an array of [left, right]');
    const bytes = new Uint8Array(8 * pairs.length);
    const view = new DataView(bytes.buffer);
    pairs.forEach((pair, r) => {
      const [left, right] = Array.isArray(pair) ? pair : [];
      for (const id of [left, right]) {
        if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > U32_MAX) {
          throw new RangeError(`encodeCheckpoint: tokenizer.pairs[${r}] must hold two integers in [0, 2^32), got ${String(pair)}`);
        }
      }
      view.setUint32(8 * r, left as number, true);
      view.setUint32(8 * r + 4, right as number, true);
    });
    return {
      kindTag: 2,
      vocabulary: BigInt(BPE_BASE_VOCABULARY) + BigInt(pairs.length),
      records: [{ role: 'bpe-pairs', name: BPE_RECORD_NAME, dtype: 'u32', shape: [pairs.length, 2], bytes }],
    };
  }
  throw typeError(`tokenizer.kind must be 'literal' or 'bpe', got ${String(tok?.kind)}`);
}

/** The parameter-group lists as planned: each list's names byte-wise sorted, as UTF-8 and located at their header offsets (for the value rules). */
interface PlannedGroups {
  readonly bytes: { decay: Uint8Array[]; noDecay: Uint8Array[] };
  readonly names: { decay: LocatedName[]; noDecay: LocatedName[] };
}

/** ../SPEC.md §4, §6.3: the group lists of a state, null when it has none. */
function planGroups(groups: CheckpointState['optimizer']['groups'] | undefined): PlannedGroups | null {
  if (groups === null || groups === undefined) return null;
  if (!Array.isArray(groups.decay) || !Array.isArray(groups.noDecay)) throw typeError('optimizer.groups must hold decay and noDecay arrays');
  let offset = FIRST_GROUP_NAME_OFFSET;
  const list = (names: readonly string[], label: string): { located: LocatedName[]; bytes: Uint8Array[] } => {
    const encoded = names.map((n, i) => ({ name: n, bytes: utf8Name(n, `${label} group[${i}]`, offset) }));
    encoded.sort((a, b) => compareByteWise(a.name, b.name));
    const located = encoded.map((e) => {
      const at = offset;
      offset += 4 + e.bytes.length;
      return { name: e.name, offset: at };
    });
    offset += 4;
    return { located, bytes: encoded.map((e) => e.bytes) };
  };
  const decay = list(groups.decay, 'decay');
  const noDecay = list(groups.noDecay, 'no-decay');
  if (decay.bytes.length > U32_MAX || noDecay.bytes.length > U32_MAX) throw new FormatError('FORMAT_SIZE_OVERFLOW', 'a parameter-group list has more than 2^32 - 1 names', { reason: 'count' });
  return { bytes: { decay: decay.bytes, noDecay: noDecay.bytes }, names: { decay: decay.located, noDecay: noDecay.located } };
}

/** ../SPEC.md §4.1, §4.3: the descriptor table of the planned records — entries after the header's fixed part, records contiguous after the header. */
function planDescriptors(records: readonly PlannedRecord[], nameBytes: readonly Uint8Array[], headerBytes: number): { descriptors: RawDescriptor[]; descriptorCountOffset: number; byteLength: number } {
  let entryOffset = headerBytes - records.reduce((sum, r, i) => sum + descriptorEntryLength((nameBytes[i] as Uint8Array).length, r.shape.length), 0);
  const descriptorCountOffset = entryOffset - 4;
  let position = BigInt(headerBytes);
  const descriptors: RawDescriptor[] = records.map((r, index) => {
    const nb = nameBytes[index] as Uint8Array;
    const entryLength = descriptorEntryLength(nb.length, r.shape.length);
    const d: RawDescriptor = {
      index,
      entryOffset,
      entryLength,
      roleTag: ROLE_TAGS[r.role],
      role: r.role,
      name: r.name,
      nameBytes: nb,
      dtypeTag: DTYPE_TAGS[r.dtype],
      dtype: r.dtype,
      shape: r.shape.map((x) => BigInt(x)),
      offset: position,
      byteLength: BigInt(r.bytes.length),
    };
    entryOffset += entryLength;
    position += d.byteLength;
    return d;
  });
  return { descriptors, descriptorCountOffset, byteLength: Number(position) };
}

/**
 * Plans the canonical file for `state`.
 *
 * @param state - the checkpoint state (moments and group names in any order).
 * @param options - `validate: false` skips the value rules (for sizing, or a state just decoded).
 * @returns header bytes, record views and total length.
 * @throws FormatError with the decoder's code for the first violated rule;
 *   TypeError / RangeError for values that are not representable at all.
 */
export function planCheckpoint(state: CheckpointState, options: PlanOptions = {}): CheckpointPlan {
  if (typeof state !== 'object' || state === null) throw typeError('state must be an object');
  const validate = options.validate ?? true;
  const selectedStep = u64Field(state.selectedStep, 'selectedStep');
  const samplingRngState = u64Field(state.samplingRngState, 'samplingRngState');
  const opt = state.optimizer;
  if (typeof opt !== 'object' || opt === null) throw typeError('optimizer must be an object');
  const optimizerStep = u64Field(opt.step, 'optimizer.step');
  const dc = state.decoder;
  if (typeof dc !== 'object' || dc === null) throw typeError('decoder must be an object');
  const exact: { readonly feedForwardWidth?: unknown; readonly maxPositions?: unknown } = dc.exact ?? {};
  if (typeof exact !== 'object' || exact === null) throw typeError('decoder.exact must be an object when present');
  const decoder = {
    vocabularySize: countField(dc.vocabularySize, 'decoder.vocabularySize'),
    modelWidth: countField(dc.modelWidth, 'decoder.modelWidth'),
    heads: countField(dc.heads, 'decoder.heads'),
    feedForwardWidth: wideCountField(dc.feedForwardWidth, exact.feedForwardWidth, 'decoder.feedForwardWidth'),
    layers: countField(dc.layers, 'decoder.layers'),
    maxPositions: wideCountField(dc.maxPositions, exact.maxPositions, 'decoder.maxPositions'),
    ropeBase: f64Field(dc.ropeBase, 'decoder.ropeBase'),
    rmsEpsilon: f64Field(dc.rmsEpsilon, 'decoder.rmsEpsilon'),
  };
  const cfg = opt.config;
  if (typeof cfg !== 'object' || cfg === null) throw typeError('optimizer.config must be an object');
  const adamw = {
    learningRate: f64Field(cfg.learningRate, 'optimizer.config.learningRate'),
    beta1: f64Field(cfg.beta1, 'optimizer.config.beta1'),
    beta2: f64Field(cfg.beta2, 'optimizer.config.beta2'),
    epsilon: f64Field(cfg.epsilon, 'optimizer.config.epsilon'),
    weightDecay: f64Field(cfg.weightDecay, 'optimizer.config.weightDecay'),
  };
  const beta1Power = f64Field(opt.beta1Power, 'optimizer.beta1Power');
  const beta2Power = f64Field(opt.beta2Power, 'optimizer.beta2Power');
  const tokenizer = tokenizerRecords(state);

  const planned = planGroups(opt.groups);
  const groupBytes = planned === null ? null : planned.bytes;
  const groupNames = planned === null ? null : planned.names;

  if (!Array.isArray(state.parameters)) throw typeError('parameters must be an array');
  if (!Array.isArray(opt.moments)) throw typeError('optimizer.moments must be an array');
  const records: PlannedRecord[] = [...tokenizer.records];
  state.parameters.forEach((p, i) => {
    const data = float64Data(p?.data, `parameters[${i}].data`);
    records.push({ role: 'model-parameter', name: p.name, dtype: 'f64', shape: shapeOf(p.shape, `parameters[${i}].shape`), bytes: bytesOfFloat64(data), values: data });
  });
  const moments = [...opt.moments].sort((a: MomentState, b: MomentState) => compareByteWise(String(a?.name), String(b?.name)));
  moments.forEach((m, i) => {
    const shape = shapeOf(m.shape, `moments[${i}].shape`);
    const first = float64Data(m.first, `moments[${i}].first`);
    const second = float64Data(m.second, `moments[${i}].second`);
    records.push({ role: 'first-moment', name: m.name, dtype: 'f64', shape, bytes: bytesOfFloat64(first), values: first });
    records.push({ role: 'second-moment', name: m.name, dtype: 'f64', shape, bytes: bytesOfFloat64(second), values: second });
  });
  for (const [count, field] of [
    [records.length, 'descriptor count'],
    [state.parameters.length, 'model parameter count'],
    [moments.length, 'optimizer state count'],
  ] as const) {
    if (count > U32_MAX) throw new FormatError('FORMAT_SIZE_OVERFLOW', `${field} ${count} does not fit in u32`, { reason: 'count', field });
  }

  // Descriptor entries: names as UTF-8.
  const nameBytes = records.map((r, i) => utf8Name(r.name, `descriptor[${i}].name`, 0));
  const headerBytes = headerLength(groupBytes, records.map((r, i) => ({ nameBytes: nameBytes[i] as Uint8Array, rank: r.shape.length })));

  // The value rules in the decoder's order: the header-size limit (checked with
  // the fixed header, ../SPEC.md §15.2), AdamW config, groups (§9.2 steps 6–7),
  // then the per-descriptor non-empty name (step 9).
  if (validate) {
    assertHeaderWithinLimit(headerBytes);
    validateAdamWConfig(adamw);
    if (groupNames !== null) validateGroups(groupNames.decay, groupNames.noDecay);
    const i = nameBytes.findIndex((b) => b.length === 0);
    if (i >= 0) {
      throw new FormatError('FORMAT_LAYOUT', `empty name in descriptor[${i}] (${(records[i] as PlannedRecord).role}): expected a non-empty record name`, { reason: 'empty-record-name', field: `descriptor[${i}].name`, recordIndex: i, expected: 'non-empty name', found: '""' });
    }
  }
  const { descriptors, descriptorCountOffset, byteLength } = planDescriptors(records, nameBytes, headerBytes);
  const payloadBytes = byteLength - headerBytes;
  const raw: RawHeader = {
    formatVersion: FORMAT_VERSION,
    endianMarker: ENDIAN_MARKER,
    headerBytes: BigInt(headerBytes),
    payloadBytes: BigInt(payloadBytes),
    storedChecksum: 0n,
    tokenizerLayoutVersion: TOKENIZER_LAYOUT_VERSION,
    rngAlgorithmVersion: RNG_ALGORITHM_VERSION,
    selectedStep,
    samplingRngState,
    tokenizerKindTag: tokenizer.kindTag,
    tokenizerVocabulary: tokenizer.vocabulary,
    decoder,
    adamw,
    groupsFlag: groupNames === null ? 0 : 1,
    groups: groupNames,
    optimizerStep,
    beta1Power,
    beta2Power,
    optimizerStepOffset: descriptorCountOffset - 32,
    modelParameterCount: state.parameters.length,
    optimizerStateCount: moments.length,
    descriptorCount: descriptors.length,
    descriptorCountOffset,
    descriptors,
  };
  if (validate) {
    const partition = checkGeometry(raw, byteLength);
    const source: RecordSource = {
      bytes: (i) => (records[i] as PlannedRecord).bytes,
      float64: (i) => (records[i] as PlannedRecord).values ?? new Float64Array(0),
      ...(options.screened === undefined ? {} : { screened: options.screened }),
    };
    validateRecords(raw, partition, source);
  }
  const header = writeHeader({
    headerBytes,
    payloadBytes,
    selectedStep,
    samplingRngState,
    tokenizerKindTag: tokenizer.kindTag,
    tokenizerVocabulary: tokenizer.vocabulary,
    decoder,
    adamw,
    groups: groupBytes,
    optimizerStep,
    beta1Power,
    beta2Power,
    modelParameterCount: state.parameters.length,
    optimizerStateCount: moments.length,
    descriptors,
  });
  return { header, raw, records: records.map((r) => r.bytes), byteLength };
}
