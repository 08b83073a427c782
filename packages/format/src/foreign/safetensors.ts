/**
 * A bounded reader of safetensors headers (huggingface/safetensors README,
 * "Format"): 8 bytes little-endian u64 N, N bytes of UTF-8 JSON starting
 * with `{`, then the byte buffer. The JSON maps tensor names to
 * `{dtype, shape, data_offsets: [begin, end]}` (offsets relative to the
 * buffer) and may hold `__metadata__`, a map of strings to strings. Tensors
 * must cover the buffer exactly, without holes or overlaps, and each span
 * must be `product(shape) × width(dtype)` bytes. Tensor data is never read.
 *
 * Limits are checked before anything is allocated: N at most
 * {@link MAX_SAFETENSORS_HEADER_BYTES} and within the file; sizes are
 * multiplied with overflow checks against the file length.
 */
import { decodeUtf8Strict } from '../utf8.ts';
import { ForeignFileError } from './errors.ts';

/** Largest header this reader parses (the limit of the reference Rust implementation: 100,000,000 bytes). */
export const MAX_SAFETENSORS_HEADER_BYTES = 100_000_000;

/** Width in bits of every dtype of the safetensors specification. */
export const SAFETENSORS_DTYPE_BITS: Readonly<Record<string, number>> = {
  BOOL: 8,
  F4: 4,
  F6_E2M3: 6,
  F6_E3M2: 6,
  U8: 8,
  I8: 8,
  F8_E5M2: 8,
  F8_E4M3: 8,
  F8_E8M0: 8,
  I16: 16,
  U16: 16,
  F16: 16,
  BF16: 16,
  I32: 32,
  U32: 32,
  F32: 32,
  F64: 64,
  I64: 64,
  U64: 64,
  C64: 64,
};

/** One tensor of a safetensors header. */
export interface SafetensorsTensorInfo {
  readonly name: string;
  readonly dtype: string;
  readonly shape: readonly number[];
  /** Product of the shape (1 for a scalar). */
  readonly elements: number;
  /** Start and end of its data, absolute offsets in the file (half-open). */
  readonly begin: number;
  readonly end: number;
}

/** A parsed safetensors header. */
export interface SafetensorsHeader {
  readonly kind: 'safetensors';
  /** N, the JSON header's length in bytes. */
  readonly headerBytes: number;
  /** Absolute offset of the byte buffer (8 + N). */
  readonly dataStart: number;
  /** Length of the whole file. */
  readonly fileLength: number;
  /** `__metadata__`, or null when absent. */
  readonly metadata: Readonly<Record<string, string>> | null;
  /** Tensors in data order (by `begin`). */
  readonly tensors: readonly SafetensorsTensorInfo[];
  /** Sum of the tensors' elements. */
  readonly totalElements: number;
}

/** Options of the header readers. */
export interface ForeignReadOptions {
  /**
   * Length of the whole file, when `bytes` is only its beginning (a reader of
   * a multi-gigabyte file needs just the header). Default: `bytes.length`.
   */
  readonly fileLength?: number;
}

function bad(message: string, field: string, offset?: number): ForeignFileError {
  return new ForeignFileError('FOREIGN_BAD_HEADER', message, { field, ...(offset === undefined ? {} : { offset }) });
}

function isPlainObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function isCount(x: unknown): x is number {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
}

/**
 * Reads and validates a safetensors header.
 *
 * @param bytes - the file, or its beginning (then give `fileLength`).
 * @param options - the whole file's length.
 * @returns the header: metadata and tensor table.
 * @throws ForeignFileError `FOREIGN_TRUNCATED`, `FOREIGN_LIMIT_EXCEEDED`, `FOREIGN_INVALID_UTF8` or `FOREIGN_BAD_HEADER`.
 * @example
 * ```ts
 * const header = readSafetensorsHeader(bytes);
 * for (const t of header.tensors) console.log(t.name, t.dtype, t.shape);
 * ```
 */
export function readSafetensorsHeader(bytes: Uint8Array, options: ForeignReadOptions = {}): SafetensorsHeader {
  const fileLength = options.fileLength ?? bytes.length;
  if (fileLength < 8 || bytes.length < 8) {
    throw new ForeignFileError('FOREIGN_TRUNCATED', `a safetensors file starts with an 8-byte header length; found ${Math.min(fileLength, bytes.length)} bytes`, { offset: 0, field: 'header_length', needed: 8 });
  }
  const n64 = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getBigUint64(0, true);
  if (n64 > BigInt(MAX_SAFETENSORS_HEADER_BYTES)) {
    throw new ForeignFileError('FOREIGN_LIMIT_EXCEEDED', `safetensors header length ${n64} exceeds this reader's limit of ${MAX_SAFETENSORS_HEADER_BYTES} bytes`, { offset: 0, field: 'header_length' });
  }
  const n = Number(n64);
  if (8 + n > fileLength) {
    throw new ForeignFileError('FOREIGN_TRUNCATED', `safetensors header length ${n} runs past the end of the ${fileLength}-byte file`, { offset: 0, field: 'header_length', needed: 8 + n });
  }
  if (8 + n > bytes.length) {
    throw new ForeignFileError('FOREIGN_TRUNCATED', `the header needs the first ${8 + n} bytes; only ${bytes.length} were given`, { offset: bytes.length, field: 'header', needed: 8 + n });
  }
  if (n < 2 || bytes[8] !== 0x7b) throw bad(`the safetensors header must be a JSON object starting with '{' at offset 8`, 'header', 8);
  const text = decodeUtf8Strict(bytes.subarray(8, 8 + n));
  if (text === undefined) throw new ForeignFileError('FOREIGN_INVALID_UTF8', `the safetensors header (bytes [8, ${8 + n})) is not valid UTF-8`, { offset: 8, field: 'header' });
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw bad(`the safetensors header is not valid JSON: ${(e as Error).message}`, 'header', 8);
  }
  if (!isPlainObject(json)) throw bad('the safetensors header is not a JSON object', 'header', 8);
  const dataStart = 8 + n;
  const bufferLength = fileLength - dataStart;
  let metadata: Record<string, string> | null = null;
  const tensors: SafetensorsTensorInfo[] = [];
  for (const [name, value] of Object.entries(json)) {
    if (name === '__metadata__') {
      if (!isPlainObject(value)) throw bad('__metadata__ must be an object of strings', '__metadata__');
      const m: Record<string, string> = {};
      for (const [k, v] of Object.entries(value)) {
        if (typeof v !== 'string') throw bad(`__metadata__.${k} is a ${v === null ? 'null' : typeof v}; metadata values must be strings`, `__metadata__.${k}`);
        m[k] = v;
      }
      metadata = m;
      continue;
    }
    if (!isPlainObject(value)) throw bad(`tensor ${JSON.stringify(name)} is not an object`, name);
    const { dtype, shape, data_offsets: offsets } = value;
    if (typeof dtype !== 'string' || SAFETENSORS_DTYPE_BITS[dtype] === undefined) throw bad(`tensor ${JSON.stringify(name)} has unknown dtype ${JSON.stringify(dtype)}`, `${name}.dtype`);
    if (!Array.isArray(shape) || !shape.every(isCount)) throw bad(`tensor ${JSON.stringify(name)}: shape must be an array of non-negative integers`, `${name}.shape`);
    if (!Array.isArray(offsets) || offsets.length !== 2 || !isCount(offsets[0]) || !isCount(offsets[1]) || offsets[0] > offsets[1]) {
      throw bad(`tensor ${JSON.stringify(name)}: data_offsets must be [begin, end] with 0 ≤ begin ≤ end`, `${name}.data_offsets`);
    }
    const [begin, end] = offsets as [number, number];
    if (end > bufferLength) throw bad(`tensor ${JSON.stringify(name)}: data_offsets end ${end} lies past the ${bufferLength}-byte buffer`, `${name}.data_offsets`);
    // Elements: a zero dimension makes 0; otherwise the product grows with each
    // dimension and is checked against the buffer at every step (at most 2 per byte,
    // for 4-bit types), so it never leaves the safe integers.
    let elements = (shape as number[]).includes(0) ? 0 : 1;
    for (const d of elements === 0 ? [] : (shape as number[])) {
      elements *= d;
      if (elements > 2 * bufferLength) {
        throw bad(`tensor ${JSON.stringify(name)}: shape [${(shape as number[]).join(', ')}] needs more bytes than the ${bufferLength}-byte buffer holds`, `${name}.shape`);
      }
    }
    const bits = SAFETENSORS_DTYPE_BITS[dtype] as number;
    if ((elements * bits) % 8 !== 0 || (elements * bits) / 8 !== end - begin) {
      throw bad(`tensor ${JSON.stringify(name)}: data_offsets span ${end - begin} bytes, shape [${(shape as number[]).join(', ')}] of ${dtype} needs ${(elements * bits) / 8}`, `${name}.data_offsets`);
    }
    tensors.push({ name, dtype, shape: shape as number[], elements, begin: dataStart + begin, end: dataStart + end });
  }
  tensors.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let position = dataStart;
  let totalElements = 0;
  for (const t of tensors) {
    if (t.begin !== position) {
      throw bad(
        t.begin > position ? `a hole: no tensor covers bytes [${position}, ${t.begin}) before ${JSON.stringify(t.name)}` : `tensor ${JSON.stringify(t.name)} overlaps the previous one (starts at ${t.begin}, before ${position})`,
        `${t.name}.data_offsets`,
        t.begin,
      );
    }
    position = t.end;
    totalElements += t.elements;
  }
  if (position !== fileLength) throw bad(`the tensors cover bytes up to ${position}; the file has ${fileLength} (trailing bytes)`, 'data_offsets', position);
  return { kind: 'safetensors', headerBytes: n, dataStart, fileLength, metadata, tensors, totalElements };
}
