/**
 * Descriptor geometry and record partition (../SPEC.md §9.3): every record's
 * byte length matches its shape, records are contiguous from `header_bytes`
 * to the end of the file, and the descriptor count splits into tokenizer,
 * model and optimizer slices. Header-only: nothing here touches the payload
 * or allocates from declared sizes.
 */
import { FormatError } from './errors.ts';
import type { RawDescriptor, RawHeader } from './header.ts';
import { DTYPE_WIDTHS, U64_MAX } from './tags.ts';

/** Where the three record slices start in the descriptor table. */
export interface RecordPartition {
  /** Tokenizer records: [0, tokenizerCount). */
  readonly tokenizerCount: number;
  /** Model records: [tokenizerCount, tokenizerCount + modelCount). */
  readonly modelCount: number;
  /** Optimizer records: the rest (2 × optimizer state count). */
  readonly optimizerCount: number;
}

/**
 * product(shape) × width with the reference's left-to-right overflow checks.
 * @param shape - dimensions.
 * @param width - element width in bytes.
 * @returns the byte length, or `undefined` when a partial product exceeds u64.
 */
export function checkedByteLength(shape: readonly bigint[], width: number): bigint | undefined {
  let n = 1n;
  for (const dim of shape) {
    n *= dim;
    if (n > U64_MAX) return undefined;
  }
  n *= BigInt(width);
  return n > U64_MAX ? undefined : n;
}

/**
 * Row-major strides overflow u64 (../SPEC.md §9.5: the reference's Tensor error,
 * possible only when a zero dimension precedes huge ones).
 * @param shape - dimensions.
 * @returns true when some stride exceeds u64.
 */
export function stridesOverflow(shape: readonly bigint[]): boolean {
  let stride = 1n;
  for (let i = shape.length - 1; i > 0; i--) {
    stride *= shape[i] as bigint;
    if (stride > U64_MAX) return true;
  }
  return false;
}

/** A FORMAT_LAYOUT error about descriptor `d`: its stable `reason`, and the field (default: the whole entry), expected and found values where they apply. */
function layout(message: string, d: RawDescriptor, extra: { reason: string; expected?: string; found?: string; field?: string }): FormatError {
  return new FormatError('FORMAT_LAYOUT', message, {
    reason: extra.reason,
    offset: d.entryOffset,
    field: extra.field ?? `descriptor[${d.index}]`,
    recordIndex: d.index,
    recordName: d.name,
    ...(extra.expected === undefined ? {} : { expected: extra.expected }),
    ...(extra.found === undefined ? {} : { found: extra.found }),
  });
}

/**
 * Checks ../SPEC.md §9.3 in order and returns the record partition.
 * @param header - the parsed header.
 * @param fileLength - total file length.
 * @returns the partition.
 * @throws FormatError FORMAT_LAYOUT or FORMAT_SIZE_OVERFLOW.
 */
export function checkGeometry(header: RawHeader, fileLength: number): RecordPartition {
  const seen = new Set<string>();
  let position = header.headerBytes;
  for (const d of header.descriptors) {
    const key = `${d.roleTag}\u0000${d.name}`;
    if (seen.has(key)) {
      throw layout(`duplicate record: descriptor[${d.index}] repeats role ${d.roleTag} with name "${d.name}" (entry at offset ${d.entryOffset})`, d, { reason: 'duplicate-record' });
    }
    seen.add(key);
    const width = DTYPE_WIDTHS[d.dtype ?? 'u8'];
    const expected = checkedByteLength(d.shape, width);
    if (expected === undefined) {
      throw new FormatError('FORMAT_SIZE_OVERFLOW', `size of descriptor[${d.index}] ("${d.name}", shape [${d.shape.join(', ')}] × ${width} bytes) overflows u64`, {
        reason: 'record-size',
        offset: d.entryOffset,
        field: `descriptor[${d.index}].shape`,
        recordIndex: d.index,
        recordName: d.name,
      });
    }
    if (d.byteLength !== expected) {
      throw layout(`byte_len of descriptor[${d.index}] ("${d.name}") is ${d.byteLength}: expected ${expected} (shape [${d.shape.join(', ')}] × ${width} bytes)`, d, {
        reason: 'byte-length-mismatch',
        expected: String(expected),
        found: String(d.byteLength),
        field: `descriptor[${d.index}].byte_len`,
      });
    }
    if (d.offset !== position) {
      throw layout(`descriptor[${d.index}] ("${d.name}") starts at offset ${d.offset}: expected ${position} (records must be contiguous)`, d, {
        reason: 'not-contiguous',
        expected: String(position),
        found: String(d.offset),
        field: `descriptor[${d.index}].offset`,
      });
    }
    const end = d.offset + d.byteLength;
    if (end > U64_MAX) {
      throw layout(`descriptor[${d.index}] ("${d.name}") end offset ${d.offset} + ${d.byteLength} overflows u64`, d, { reason: 'end-overflow', field: `descriptor[${d.index}].byte_len` });
    }
    position = end;
  }
  if (position !== BigInt(fileLength)) {
    throw new FormatError('FORMAT_LAYOUT', `records end at offset ${position}: expected the file length ${fileLength}`, {
      reason: 'records-end',
      offset: Number(position < BigInt(fileLength) ? position : BigInt(fileLength)),
      field: 'payload end',
      expected: String(fileLength),
      found: String(position),
    });
  }
  const tokenizer = header.tokenizerKindTag === 2 ? 1n : header.tokenizerVocabulary;
  const total = tokenizer + BigInt(header.modelParameterCount) + 2n * BigInt(header.optimizerStateCount);
  if (total > U64_MAX) {
    throw new FormatError('FORMAT_SIZE_OVERFLOW', `record partition ${tokenizer} + ${header.modelParameterCount} + 2 × ${header.optimizerStateCount} overflows u64`, {
      reason: 'record-partition',
      offset: header.descriptorCountOffset,
      field: 'record partition',
    });
  }
  if (total !== BigInt(header.descriptorCount)) {
    throw new FormatError(
      'FORMAT_LAYOUT',
      `record partition mismatch: expected descriptor count = tokenizer records (${tokenizer}) + model parameters (${header.modelParameterCount}) + 2 × optimizer states (${header.optimizerStateCount}) = ${total}, found ${header.descriptorCount}`,
      { reason: 'record-partition', offset: header.descriptorCountOffset, field: 'descriptor count', expected: String(total), found: String(header.descriptorCount) },
    );
  }
  return { tokenizerCount: Number(tokenizer), modelCount: header.modelParameterCount, optimizerCount: 2 * header.optimizerStateCount };
}
