/**
 * Record validation and state assembly (../SPEC.md §9.4–§9.7): tokenizer
 * records, model records, optimizer records and the cross-component checks,
 * in the reference's order. Used by the in-memory decoder, the streaming
 * loader and (on the records it plans) the encoder.
 */
import { f64BitsHex } from './bits.ts';
import { validateBetaPowers, validateGroupCoverage, validateStatePresence } from './adamw-rules.ts';
import { bpeMergeCountProblem, bpeMergeTableProblem, type BpeMergeTableProblem } from './bpe-rules.ts';
import { validateDecoderConfig, validateModelShapes, type ModelRecordShape } from './decoder-rules.ts';
import { FormatError } from './errors.ts';
import { SCAN_NEGATIVE, SCAN_NON_FINITE } from './internal/fnv1a64-scan-wasm.ts';
import { stridesOverflow, type RecordPartition } from './geometry.ts';
import type { RawDescriptor, RawHeader } from './header.ts';
import { modelParameterName, parameterNameProblem } from './parameter-layout.ts';
import { BPE_BASE_VOCABULARY, BPE_RECORD_NAME, SELECTED_STEP_OFFSET, TOKENIZER_VOCABULARY_OFFSET } from './tags.ts';
import type { CheckpointState, DecoderConfig, MomentState, NamedTensor, TokenizerState } from './types.ts';
import { compareByteWise } from './utf8.ts';

/** Access to payload records by descriptor index. */
export interface RecordSource {
  /** The record's bytes exactly as stored (little-endian elements). */
  bytes(index: number): Uint8Array;
  /** The record's f64 elements in an aligned array the caller may keep. */
  float64(index: number): Float64Array;
  /**
   * Optional screen of an f64 record, from hashing it with the fused kernel
   * (`internal/scanning-hasher.ts`): a clear SCAN_NON_FINITE / SCAN_NEGATIVE
   * bit proves the record holds no such value, so its search is skipped; a
   * set bit (or no screen) runs the exact search, which finds and reports it.
   */
  screened?(index: number): number | undefined;
}

function mayHold(source: RecordSource, index: number, flag: number): boolean {
  const flags = source.screened?.(index);
  return flags === undefined || (flags & flag) !== 0;
}

function describe(d: RawDescriptor): string {
  return `descriptor[${d.index}] ("${d.name}", role ${d.roleTag}, dtype ${d.dtypeTag}, shape [${d.shape.join(', ')}])`;
}

function layoutError(d: RawDescriptor, reason: string, expected: string): FormatError {
  return new FormatError('FORMAT_LAYOUT', `${describe(d)} at entry offset ${d.entryOffset}: expected ${expected}`, {
    reason,
    offset: d.entryOffset,
    field: `descriptor[${d.index}]`,
    recordIndex: d.index,
    recordName: d.name,
    expected,
    found: `role ${d.roleTag}, dtype ${d.dtypeTag}, name "${d.name}", shape [${d.shape.join(', ')}]`,
  });
}

/**
 * First index of a non-finite value, or -1. Eight values at a time: `v * 0`
 * is ±0 for finite `v` and NaN for NaN and ±∞, so the sum is non-zero (NaN)
 * exactly when the block holds a non-finite value; only then is the block
 * searched.
 */
function firstNonFinite(values: Float64Array): number {
  const n = values.length;
  const m = n - (n % 8);
  for (let i = 0; i < m; i += 8) {
    const s =
      (values[i] as number) * 0 +
      (values[i + 1] as number) * 0 +
      (values[i + 2] as number) * 0 +
      (values[i + 3] as number) * 0 +
      (values[i + 4] as number) * 0 +
      (values[i + 5] as number) * 0 +
      (values[i + 6] as number) * 0 +
      (values[i + 7] as number) * 0;
    if (s !== 0) return firstNonFiniteFrom(values, i);
  }
  return firstNonFiniteFrom(values, m);
}

function firstNonFiniteFrom(values: Float64Array, from: number): number {
  for (let i = from; i < values.length; i++) {
    const v = values[i] as number;
    if (v - v !== 0) return i;
  }
  return -1;
}

/** First index of a value below zero (−0 is not), or -1. */
function firstNegative(values: Float64Array): number {
  for (let i = 0; i < values.length; i++) if ((values[i] as number) < 0) return i;
  return -1;
}

function elementOffset(d: RawDescriptor, index: number, width: number): number {
  return Number(d.offset) + index * width;
}

/** The FORMAT_BPE error of a broken merge-table rule (bpe-rules.ts) in the BPE record `d`, located in the file. */
function bpeError(d: RawDescriptor, p: BpeMergeTableProblem): FormatError {
  const at = { recordIndex: d.index, recordName: d.name };
  switch (p.reason) {
    case 'layout-overflow':
      return new FormatError('FORMAT_BPE', `BPE table with ${p.merges} merges: vocabulary 258 + M - 1 does not fit in u32`, { reason: p.reason, ...at });
    case 'unknown-operand':
      return new FormatError('FORMAT_BPE', `BPE merge rank ${p.rank}: unknown ${p.side} operand ${p.id}, expected an id below ${p.limit}`, {
        reason: p.reason,
        offset: elementOffset(d, p.rank, 8) + (p.side === 'left' ? 0 : 4),
        field: `training-pairs[${p.rank}].${p.side}`,
        ...at,
        elementIndex: p.rank,
        expected: `< ${p.limit}`,
        found: String(p.id),
      });
    case 'duplicate-pair':
      return new FormatError('FORMAT_BPE', `BPE merge rank ${p.rank}: duplicate pair (${p.left}, ${p.right}) of an earlier rank`, {
        reason: p.reason,
        offset: elementOffset(d, p.rank, 8),
        field: `training-pairs[${p.rank}]`,
        ...at,
        elementIndex: p.rank,
        found: `(${p.left}, ${p.right})`,
      });
  }
}

function validateTokenizer(header: RawHeader, slice: readonly RawDescriptor[], source: RecordSource): TokenizerState {
  if (header.tokenizerKindTag === 1) {
    const pieces: Uint8Array[] = [];
    for (let i = 0; i < slice.length; i++) {
      const d = slice[i] as RawDescriptor;
      if (d.roleTag !== 1 || d.dtypeTag !== 1 || d.name !== String(i)) {
        throw layoutError(d, 'literal-record', `a literal token record: role 1, dtype u8, name "${i}"`);
      }
      if (d.shape.length !== 1 || d.shape[0] === 0n) throw layoutError(d, 'literal-record-shape', 'a literal token shape [n] with n >= 1');
      pieces.push(source.bytes(d.index).slice());
    }
    if (pieces.length === 0) {
      throw new FormatError('FORMAT_TOKENIZER', 'literal tokenizer with no tokens: expected at least one piece', { reason: 'empty-vocabulary', offset: TOKENIZER_VOCABULARY_OFFSET, field: 'tokenizer vocabulary', expected: '>= 1', found: '0' });
    }
    const seen = new Map<string, number>();
    for (let id = 0; id < pieces.length; id++) {
      const key = latin1(pieces[id] as Uint8Array);
      const earlier = seen.get(key);
      if (earlier !== undefined) {
        const d = slice[id] as RawDescriptor;
        throw new FormatError('FORMAT_TOKENIZER', `literal token ${id} repeats the spelling of token ${earlier}: expected pairwise distinct pieces`, {
          reason: 'repeated-spelling',
          offset: Number(d.offset),
          field: `descriptor[${d.index}]`,
          recordIndex: d.index,
          recordName: d.name,
          elementIndex: id,
          expected: 'a new spelling',
          found: `the spelling of token ${earlier}`,
        });
      }
      seen.set(key, id);
    }
    return { kind: 'literal', pieces };
  }
  const d = slice[0] as RawDescriptor;
  if (d.roleTag !== 2 || d.dtypeTag !== 2 || d.name !== BPE_RECORD_NAME) throw layoutError(d, 'bpe-record', `the BPE record: role 2, dtype u32, name "${BPE_RECORD_NAME}"`);
  if (d.shape.length !== 2 || d.shape[1] !== 2n) throw layoutError(d, 'bpe-record-shape', 'a BPE shape [M, 2]');
  const merges = d.shape[0] as bigint;
  const overflow = bpeMergeCountProblem(merges);
  if (overflow !== null) throw bpeError(d, overflow);
  const bytes = source.bytes(d.index);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const m = Number(merges);
  const flat = new Uint32Array(2 * m);
  for (let i = 0; i < flat.length; i++) flat[i] = view.getUint32(4 * i, true);
  const problem = bpeMergeTableProblem(flat);
  if (problem !== null) throw bpeError(d, problem);
  const pairs: (readonly [number, number])[] = [];
  for (let r = 0; r < m; r++) pairs.push([flat[2 * r] as number, flat[2 * r + 1] as number]);
  const derived = BigInt(BPE_BASE_VOCABULARY) + merges;
  if (derived !== header.tokenizerVocabulary) {
    // Quirk kept from the reference: "tokenizer" = 258 + M, "decoder" = the declared tokenizer vocabulary.
    throw new FormatError('FORMAT_VOCABULARY_MISMATCH', `BPE table with ${merges} merges defines ${derived} ids: expected the declared tokenizer vocabulary ${header.tokenizerVocabulary} to equal 258 + M`, {
      reason: 'bpe-vocabulary',
      offset: TOKENIZER_VOCABULARY_OFFSET,
      field: 'tokenizer vocabulary',
      expected: String(derived),
      found: String(header.tokenizerVocabulary),
    });
  }
  return { kind: 'bpe', pairs };
}

function latin1(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 4096) s += String.fromCharCode(...bytes.subarray(i, i + 4096));
  return s;
}

function safeNumber(value: bigint, field: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new FormatError('FORMAT_LIMIT_EXCEEDED', `decoder ${field} ${value} exceeds 2^53 - 1, the largest integer this runtime represents exactly`, {
      reason: 'unsafe-integer',
      field,
      expected: `<= ${Number.MAX_SAFE_INTEGER}`,
      found: String(value),
    });
  }
  return Number(value);
}

function shapeNumbers(shape: readonly bigint[]): number[] {
  return shape.map((d) => Number(d));
}

function sameShape(a: readonly bigint[], b: readonly bigint[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** ../SPEC.md §9.5: the model records (role, dtype, strides, names, finite values), the decoder configuration, the parameter count, order and shapes. Returns each record's values. */
function validateModelRecords(header: RawHeader, modelSlice: readonly RawDescriptor[], source: RecordSource): Float64Array[] {
  if (modelSlice.length === 0) {
    throw new FormatError('FORMAT_LAYOUT', 'model parameter count is 0: expected at least the embedding and the final norm', {
      reason: 'empty-model-slice',
      field: 'model parameter count',
      expected: '>= 2',
      found: '0',
    });
  }
  const modelData: Float64Array[] = [];
  for (const d of modelSlice) {
    if (d.roleTag !== 3 || d.dtypeTag !== 3) throw layoutError(d, 'model-record', 'a model parameter record: role 3, dtype f64');
    const data = source.float64(d.index);
    if (stridesOverflow(d.shape)) {
      throw new FormatError('FORMAT_TENSOR_SHAPE', `parameter "${d.name}" shape [${d.shape.join(', ')}]: row-major strides overflow u64`, {
        reason: 'stride-overflow',
        offset: d.entryOffset,
        recordIndex: d.index,
        recordName: d.name,
      });
    }
    const problem = parameterNameProblem(d.name);
    if (problem !== undefined) {
      throw new FormatError('FORMAT_INVALID_PARAMETER', `parameter name "${d.name}" (descriptor[${d.index}]) is invalid (${problem}): expected lowercase ASCII letters, digits, "_" and "." with no empty segment`, {
        reason: problem,
        offset: d.entryOffset,
        field: `descriptor[${d.index}].name`,
        recordIndex: d.index,
        recordName: d.name,
      });
    }
    const bad = mayHold(source, d.index, SCAN_NON_FINITE) ? firstNonFinite(data) : -1;
    if (bad >= 0) {
      throw new FormatError('FORMAT_INVALID_PARAMETER', `parameter "${d.name}" element ${bad} at offset ${elementOffset(d, bad, 8)} is ${data[bad]} (bits ${f64BitsHex(data[bad] as number)}): expected a finite value`, {
        reason: 'non-finite-parameter',
        offset: elementOffset(d, bad, 8),
        recordIndex: d.index,
        recordName: d.name,
        elementIndex: bad,
        expected: 'finite',
        found: String(data[bad]),
      });
    }
    modelData.push(data);
  }
  validateDecoderConfig(header.decoder);
  const layers = header.decoder.layers;
  if (BigInt(modelSlice.length) !== 2n + 9n * layers) {
    throw new FormatError('FORMAT_MODEL', `model has ${modelSlice.length} parameter records: expected 2 + 9 × ${layers} layers = ${2n + 9n * layers}`, {
      reason: 'parameter-count-mismatch',
      field: 'model parameter count',
      expected: String(2n + 9n * layers),
      found: String(modelSlice.length),
    });
  }
  const l = Number(layers);
  for (let i = 0; i < modelSlice.length; i++) {
    const d = modelSlice[i] as RawDescriptor;
    const expected = modelParameterName(i, l);
    if (d.name !== expected) {
      throw new FormatError('FORMAT_MODEL', `model parameter ${i} is named "${d.name}": expected "${expected}" (model order, SPEC.md §7)`, {
        reason: 'name-mismatch',
        offset: d.entryOffset,
        recordIndex: d.index,
        recordName: d.name,
        elementIndex: i,
        expected,
        found: d.name,
      });
    }
  }
  validateModelShapes(header.decoder, modelSlice.map((d): ModelRecordShape => ({ index: d.index, name: d.name, shape: d.shape })));
  return modelData;
}

/** A moment pair as validated: its name, shape and both value arrays. */
interface ValidatedMoment {
  readonly name: string;
  readonly shape: readonly bigint[];
  readonly first: Float64Array;
  readonly second: Float64Array;
}

/** ../SPEC.md §9.6: the optimizer records in pairs (roles, dtypes, names, shapes, finite and non-negative values), the beta powers, state presence and group coverage. Returns the moment pairs. */
function validateOptimizerRecords(header: RawHeader, optimizerSlice: readonly RawDescriptor[], source: RecordSource): ValidatedMoment[] {
  const moments: ValidatedMoment[] = [];
  for (let p = 0; p + 1 < optimizerSlice.length; p += 2) {
    const first = optimizerSlice[p] as RawDescriptor;
    const second = optimizerSlice[p + 1] as RawDescriptor;
    if (first.roleTag !== 4 || first.dtypeTag !== 3) throw layoutError(first, 'first-moment-record', 'a first-moment record: role 4, dtype f64');
    if (second.roleTag !== 5 || second.dtypeTag !== 3 || second.name !== first.name) {
      throw layoutError(second, 'second-moment-record', `a second-moment record for "${first.name}": role 5, dtype f64`);
    }
    if (!sameShape(first.shape, second.shape)) throw layoutError(second, 'moment-shape-mismatch', `the shape of its first moment [${first.shape.join(', ')}]`);
    const m = source.float64(first.index);
    const v = source.float64(second.index);
    for (const [d, values] of [
      [first, m],
      [second, v],
    ] as const) {
      const bad = mayHold(source, d.index, SCAN_NON_FINITE) ? firstNonFinite(values) : -1;
      if (bad >= 0) {
        throw new FormatError('FORMAT_ADAMW_STATE', `${d.roleTag === 4 ? 'first' : 'second'} moment of "${d.name}" element ${bad} at offset ${elementOffset(d, bad, 8)} is ${values[bad]}: expected a finite value`, {
          reason: 'non-finite-moment',
          offset: elementOffset(d, bad, 8),
          recordIndex: d.index,
          recordName: d.name,
          elementIndex: bad,
          expected: 'finite',
          found: String(values[bad]),
        });
      }
    }
    const negative = mayHold(source, second.index, SCAN_NEGATIVE) ? firstNegative(v) : -1;
    if (negative >= 0) {
      throw new FormatError('FORMAT_ADAMW_STATE', `second moment of "${second.name}" element ${negative} at offset ${elementOffset(second, negative, 8)} is ${v[negative]}: expected a value >= 0`, {
        reason: 'negative-second-moment',
        offset: elementOffset(second, negative, 8),
        recordIndex: second.index,
        recordName: second.name,
        elementIndex: negative,
        expected: '>= 0',
        found: String(v[negative]),
      });
    }
    moments.push({ name: first.name, shape: first.shape, first: m, second: v });
  }
  const step = header.optimizerStep;
  validateBetaPowers(step, [header.beta1Power, header.beta2Power], [header.optimizerStepOffset + 8, header.optimizerStepOffset + 16]);
  validateStatePresence(step, moments.length);
  if (header.groups !== null && step > 0n) {
    validateGroupCoverage(
      header.groups.decay.map((n) => n.name),
      header.groups.noDecay.map((n) => n.name),
      moments.map((m) => m.name),
    );
  }
  return moments;
}

/** The slices and moments the cross-component checks compare. */
interface ValidatedSlices {
  readonly modelSlice: readonly RawDescriptor[];
  readonly optimizerSlice: readonly RawDescriptor[];
  readonly moments: readonly ValidatedMoment[];
}

/** ../SPEC.md §9.7: tokenizer and decoder vocabularies, selected and optimizer steps, and (after step 0) moment names and shapes against the model's. */
function validateCrossComponent(header: RawHeader, slices: ValidatedSlices): void {
  const { modelSlice, optimizerSlice, moments } = slices;
  const step = header.optimizerStep;
  if (header.tokenizerVocabulary !== header.decoder.vocabularySize) {
    throw new FormatError('FORMAT_VOCABULARY_MISMATCH', `tokenizer vocabulary ${header.tokenizerVocabulary} differs from decoder vocabulary_size ${header.decoder.vocabularySize}`, {
      reason: 'decoder-vocabulary',
      offset: TOKENIZER_VOCABULARY_OFFSET,
      field: 'tokenizer vocabulary',
      expected: String(header.decoder.vocabularySize),
      found: String(header.tokenizerVocabulary),
    });
  }
  if (header.selectedStep !== step) {
    throw new FormatError('FORMAT_STEP_MISMATCH', `selected step ${header.selectedStep} at offset ${SELECTED_STEP_OFFSET} differs from optimizer step ${step}`, {
      reason: 'step-mismatch',
      offset: SELECTED_STEP_OFFSET,
      field: 'selected step',
      expected: String(step),
      found: String(header.selectedStep),
    });
  }
  if (header.selectedStep > 0n) {
    const momentNames = moments.map((m) => m.name).sort(compareByteWise);
    const modelNames = modelSlice.map((d) => d.name).sort(compareByteWise);
    const n = Math.max(momentNames.length, modelNames.length);
    for (let i = 0; i < n; i++) {
      if (momentNames[i] !== modelNames[i]) {
        throw new FormatError('FORMAT_OPTIMIZER_NAMES', `optimizer moment names differ from model parameter names at sorted position ${i}: expected ${modelNames[i] ?? '(none)'}, found ${momentNames[i] ?? '(none)'}`, {
          reason: 'optimizer-names',
          elementIndex: i,
          expected: modelNames[i] ?? '(none)',
          found: momentNames[i] ?? '(none)',
        });
      }
    }
    const modelShapes = new Map(modelSlice.map((d) => [d.name, d.shape] as const));
    const byName = new Map(optimizerSlice.filter((d) => d.roleTag === 4).map((d) => [d.name, d] as const));
    for (const name of momentNames) {
      const d = byName.get(name) as RawDescriptor;
      const shape = modelShapes.get(name) as readonly bigint[];
      if (!sameShape(d.shape, shape)) {
        throw new FormatError('FORMAT_OPTIMIZER_SHAPE', `moment shape of "${name}" is [${d.shape.join(', ')}]: expected the parameter shape [${shape.join(', ')}]`, {
          reason: 'optimizer-shape',
          offset: d.entryOffset,
          recordIndex: d.index,
          recordName: name,
          expected: `[${shape.join(', ')}]`,
          found: `[${d.shape.join(', ')}]`,
        });
      }
    }
  }
}

/**
 * Validates every record after the geometry check and returns the state.
 *
 * @param header - the parsed header.
 * @param partition - from the geometry check.
 * @param source - record payload access.
 * @returns the decoded checkpoint state (tensors from `source.float64`).
 * @throws FormatError in the categories of ../SPEC.md §9.4–§9.7.
 */
export function validateRecords(header: RawHeader, partition: RecordPartition, source: RecordSource): CheckpointState {
  const all = header.descriptors;
  const tokenizerSlice = all.slice(0, partition.tokenizerCount);
  const modelSlice = all.slice(partition.tokenizerCount, partition.tokenizerCount + partition.modelCount);
  const optimizerSlice = all.slice(partition.tokenizerCount + partition.modelCount);

  // §9.4 tokenizer
  const tokenizer = validateTokenizer(header, tokenizerSlice, source);

  // §9.5 model
  const modelData = validateModelRecords(header, modelSlice, source);

  // §9.6 optimizer
  const moments = validateOptimizerRecords(header, optimizerSlice, source);
  const step = header.optimizerStep;

  // §9.7 cross-component
  validateCrossComponent(header, { modelSlice, optimizerSlice, moments });

  const c = header.decoder;
  // SPEC §15.2: feed_forward_width (0 layers) and max_positions may be any
  // u64; above 2^53 - 1 the exact value goes to `exact`. The other fields are
  // bounded by record shapes, hence by the file size.
  const safe = BigInt(Number.MAX_SAFE_INTEGER);
  const exact: { feedForwardWidth?: bigint; maxPositions?: bigint } = {};
  if (c.feedForwardWidth > safe) exact.feedForwardWidth = c.feedForwardWidth;
  if (c.maxPositions > safe) exact.maxPositions = c.maxPositions;
  const decoder: DecoderConfig = {
    vocabularySize: safeNumber(c.vocabularySize, 'vocabularySize'),
    modelWidth: safeNumber(c.modelWidth, 'modelWidth'),
    heads: safeNumber(c.heads, 'heads'),
    feedForwardWidth: Number(c.feedForwardWidth),
    layers: safeNumber(c.layers, 'layers'),
    maxPositions: Number(c.maxPositions),
    ropeBase: c.ropeBase,
    rmsEpsilon: c.rmsEpsilon,
    ...(exact.feedForwardWidth === undefined && exact.maxPositions === undefined ? {} : { exact }),
  };
  const groups = header.groups === null ? null : { decay: header.groups.decay.map((n) => n.name), noDecay: header.groups.noDecay.map((n) => n.name) };
  return {
    tokenizer,
    decoder,
    parameters: modelSlice.map((d, i): NamedTensor => ({ name: d.name, shape: shapeNumbers(d.shape), data: modelData[i] as Float64Array })),
    optimizer: {
      config: header.adamw,
      groups,
      step,
      beta1Power: header.beta1Power,
      beta2Power: header.beta2Power,
      moments: moments.map((m): MomentState => ({ name: m.name, shape: shapeNumbers(m.shape), first: m.first, second: m.second })),
    },
    selectedStep: header.selectedStep,
    samplingRngState: header.samplingRngState,
  };
}
