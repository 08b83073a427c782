/**
 * A bounded reader of GGUF headers (ggml's GGUF specification, https://github.com/ggml-org/ggml/blob/master/docs/gguf.md, versions 2 and
 * 3), little-endian:
 *
 * | field | type |
 * |---|---|
 * | magic | `GGUF` (4 bytes) |
 * | version | u32 |
 * | tensor_count | u64 |
 * | metadata_kv_count | u64 |
 * | metadata | `metadata_kv_count` × (key: string, value_type: u32, value) |
 * | tensor infos | `tensor_count` × (name: string, n_dims: u32, dims: u64 × n_dims, type: u32, offset: u64) |
 * | padding | to `general.alignment` (default 32) |
 * | tensor data | each tensor at data start + offset (a multiple of the alignment) |
 *
 * A string is a u64 byte length and UTF-8 bytes (no terminator); an array
 * value is an element type (u32), a u64 count and the elements. Tensor data
 * is never read. Every count and length is checked against the bytes left
 * before anything is allocated, so a hostile header costs at most a walk
 * over the bytes it really has; arrays are kept as a length and their first
 * {@link GGUF_ARRAY_PREVIEW} elements.
 */
import { decodeUtf8Strict } from '../utf8.ts';
import { ForeignFileError } from './errors.ts';
import type { ForeignReadOptions } from './safetensors.ts';

/** `GGUF` as a little-endian u32. */
const GGUF_MAGIC = 0x46554747;
/** Default `general.alignment`. */
export const GGUF_DEFAULT_ALIGNMENT = 32;
/** Elements of an array kept in a {@link GgufArray} (the rest are counted, not kept). */
export const GGUF_ARRAY_PREVIEW = 16;
/** Largest string this reader accepts (keys, string values, tensor names). */
export const MAX_GGUF_STRING_BYTES: number = 16 * 1024 * 1024;
/** Most dimensions of a tensor (`GGML_MAX_DIMS`). */
export const GGUF_MAX_DIMS = 4;

/** Names of the metadata value types, by their tag. */
export const GGUF_VALUE_TYPES: readonly GgufValueType[] = ['uint8', 'int8', 'uint16', 'int16', 'uint32', 'int32', 'float32', 'bool', 'string', 'array', 'uint64', 'int64', 'float64'];

/** One metadata value type name (tag = index in {@link GGUF_VALUE_TYPES}). */
export type GgufValueType = 'uint8' | 'int8' | 'uint16' | 'int16' | 'uint32' | 'int32' | 'float32' | 'bool' | 'string' | 'array' | 'uint64' | 'int64' | 'float64';

/** A metadata array: its element type, its length and its first elements. */
export interface GgufArray {
  readonly elementType: GgufValueType;
  readonly length: number;
  /** The first {@link GGUF_ARRAY_PREVIEW} elements (nested arrays as {@link GgufArray}). */
  readonly head: readonly GgufScalar[];
}

/** A metadata scalar; u64/i64 values as bigint. */
export type GgufScalar = number | bigint | boolean | string | GgufArray;

/** One metadata key-value pair. */
export interface GgufMetadataEntry {
  readonly key: string;
  readonly type: GgufValueType;
  readonly value: GgufScalar;
  /** Absolute offset of the key. */
  readonly offset: number;
}

/** ggml tensor types: name, elements per block and bytes per block (null: unknown to this reader). */
const GGML_TYPES: Readonly<Record<number, readonly [string, number, number]>> = {
  0: ['F32', 1, 4],
  1: ['F16', 1, 2],
  2: ['Q4_0', 32, 18],
  3: ['Q4_1', 32, 20],
  6: ['Q5_0', 32, 22],
  7: ['Q5_1', 32, 24],
  8: ['Q8_0', 32, 34],
  9: ['Q8_1', 32, 36],
  10: ['Q2_K', 256, 84],
  11: ['Q3_K', 256, 110],
  12: ['Q4_K', 256, 144],
  13: ['Q5_K', 256, 176],
  14: ['Q6_K', 256, 210],
  15: ['Q8_K', 256, 292],
  24: ['I8', 1, 1],
  25: ['I16', 1, 2],
  26: ['I32', 1, 4],
  27: ['I64', 1, 8],
  28: ['F64', 1, 8],
  30: ['BF16', 1, 2],
};

/** One tensor of a GGUF header. */
export interface GgufTensorInfo {
  readonly name: string;
  /** ggml `ne` order: `dims[0]` is the innermost (contiguous) dimension. */
  readonly dims: readonly number[];
  /** ggml type tag. */
  readonly typeId: number;
  /** ggml type name (`F32`, `Q8_0`, …), or `type <n>` when unknown to this reader. */
  readonly type: string;
  readonly elements: number;
  /** Start of its data (absolute), and its byte length (null for a type this reader does not size). */
  readonly begin: number;
  readonly byteLength: number | null;
}

/** A parsed GGUF header. */
export interface GgufHeader {
  readonly kind: 'gguf';
  readonly version: number;
  readonly metadata: readonly GgufMetadataEntry[];
  readonly tensors: readonly GgufTensorInfo[];
  readonly alignment: number;
  /** Absolute offset of the tensor data. */
  readonly dataStart: number;
  readonly fileLength: number;
  readonly totalElements: number;
}

class Cursor {
  #pos = 0;
  readonly #view: DataView;
  constructor(
    readonly bytes: Uint8Array,
    readonly fileLength: number,
  ) {
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  get position(): number {
    return this.#pos;
  }
  /** Bytes left in the file after the cursor. */
  get remaining(): number {
    return this.fileLength - this.#pos;
  }
  need(width: number, field: string): number {
    const at = this.#pos;
    if (width > this.fileLength - at) {
      throw new ForeignFileError('FOREIGN_TRUNCATED', `GGUF header truncated reading ${field} at offset ${at}: needs ${width} byte(s), the file has ${Math.max(0, this.fileLength - at)} left`, { offset: at, field, needed: at + width });
    }
    if (width > this.bytes.length - at) {
      throw new ForeignFileError('FOREIGN_TRUNCATED', `reading ${field} needs the first ${at + width} bytes of the file; only ${this.bytes.length} were given`, { offset: at, field, needed: at + width });
    }
    this.#pos += width;
    return at;
  }
  skip(width: number, field: string): void {
    this.need(width, field);
  }
  u8(field: string): number {
    return this.#view.getUint8(this.need(1, field));
  }
  i8(field: string): number {
    return this.#view.getInt8(this.need(1, field));
  }
  u16(field: string): number {
    return this.#view.getUint16(this.need(2, field), true);
  }
  i16(field: string): number {
    return this.#view.getInt16(this.need(2, field), true);
  }
  u32(field: string): number {
    return this.#view.getUint32(this.need(4, field), true);
  }
  i32(field: string): number {
    return this.#view.getInt32(this.need(4, field), true);
  }
  f32(field: string): number {
    return this.#view.getFloat32(this.need(4, field), true);
  }
  f64(field: string): number {
    return this.#view.getFloat64(this.need(8, field), true);
  }
  u64(field: string): bigint {
    return this.#view.getBigUint64(this.need(8, field), true);
  }
  i64(field: string): bigint {
    return this.#view.getBigInt64(this.need(8, field), true);
  }
  /**
   * A u64 count, checked before anything is allocated: above `hardMax` (a
   * limit of this reader) it is FOREIGN_LIMIT_EXCEEDED, above `fileBound`
   * (what the bytes left in the file can hold) FOREIGN_TRUNCATED.
   */
  count(field: string, what: string, bounds: { readonly fileBound: number; readonly hardMax: number }): number {
    const { fileBound, hardMax } = bounds;
    const at = this.#pos;
    const n = this.u64(field);
    if (n > BigInt(hardMax)) {
      throw new ForeignFileError('FOREIGN_LIMIT_EXCEEDED', `${field} ${n} at offset ${at} exceeds this reader's limit of ${hardMax} ${what}`, { offset: at, field });
    }
    if (n > BigInt(fileBound)) {
      throw new ForeignFileError('FOREIGN_TRUNCATED', `${field} ${n} at offset ${at} needs more bytes than the ${this.fileLength}-byte file has left (room for at most ${fileBound} ${what})`, { offset: at, field });
    }
    return Number(n);
  }
  string(field: string): string {
    const at = this.#pos;
    const length = this.count(`${field} length`, 'string bytes', { fileBound: Math.max(0, this.remaining - 8), hardMax: MAX_GGUF_STRING_BYTES });
    const start = this.need(length, field);
    const text = decodeUtf8Strict(this.bytes.subarray(start, start + length));
    if (text === undefined) throw new ForeignFileError('FOREIGN_INVALID_UTF8', `${field} at offset ${at} is not valid UTF-8`, { offset: at, field });
    return text;
  }
}

/** Width in bytes of a fixed-size value type; 0 for string/array. */
const VALUE_WIDTH: readonly number[] = [1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8];

function valueType(c: Cursor, field: string): GgufValueType {
  const at = c.position;
  const tag = c.u32(field);
  const type = GGUF_VALUE_TYPES[tag];
  if (type === undefined) throw new ForeignFileError('FOREIGN_BAD_HEADER', `${field} ${tag} at offset ${at} is not a GGUF value type (0–12)`, { offset: at, field });
  return type;
}

/** Reads one value of `type`: `at` names the field (for errors) and how deep in arrays it is. */
function scalar(c: Cursor, type: GgufValueType, at: { readonly field: string; readonly depth: number }): GgufScalar {
  const { field, depth } = at;
  switch (type) {
    case 'uint8':
      return c.u8(field);
    case 'int8':
      return c.i8(field);
    case 'uint16':
      return c.u16(field);
    case 'int16':
      return c.i16(field);
    case 'uint32':
      return c.u32(field);
    case 'int32':
      return c.i32(field);
    case 'float32':
      return c.f32(field);
    case 'bool': {
      const at = c.position;
      const b = c.u8(field);
      if (b > 1) throw new ForeignFileError('FOREIGN_BAD_HEADER', `${field} at offset ${at} is a bool of value ${b} (expected 0 or 1)`, { offset: at, field });
      return b === 1;
    }
    case 'string':
      return c.string(field);
    case 'uint64':
      return c.u64(field);
    case 'int64':
      return c.i64(field);
    case 'float64':
      return c.f64(field);
    case 'array':
      return array(c, field, depth);
  }
}

function array(c: Cursor, field: string, depth: number): GgufArray {
  if (depth >= 4) throw new ForeignFileError('FOREIGN_LIMIT_EXCEEDED', `${field}: arrays nested more than 4 deep`, { offset: c.position, field });
  const elementType = valueType(c, `${field} element type`);
  const width = VALUE_WIDTH[GGUF_VALUE_TYPES.indexOf(elementType)] as number;
  // Every element takes at least its width (a string or an array at least its 8-byte length).
  const length = c.count(`${field} length`, 'elements', { fileBound: Math.floor(Math.max(0, c.remaining - 8) / (width === 0 ? 8 : width)), hardMax: Number.MAX_SAFE_INTEGER });
  const head: GgufScalar[] = [];
  const kept = Math.min(length, GGUF_ARRAY_PREVIEW);
  for (let i = 0; i < kept; i++) head.push(scalar(c, elementType, { field: `${field}[${i}]`, depth: depth + 1 }));
  if (width > 0) c.skip((length - kept) * width, `${field} elements`);
  else for (let i = kept; i < length; i++) scalar(c, elementType, { field: `${field}[${i}]`, depth: depth + 1 });
  return { elementType, length, head };
}

/**
 * Reads and validates a GGUF header: version, metadata and tensor table.
 * Checks: the magic; version 2 or 3 (v1 and big-endian files are named as
 * such); value types 0–12, bools 0/1, UTF-8 strings; unique keys and tensor
 * names; 1–4 dimensions; a power-of-two `general.alignment` (u32) when
 * present; every tensor offset a multiple of the alignment and, for types
 * this reader sizes, every tensor inside the file and none overlapping.
 *
 * @param bytes - the file, or its beginning (then give `fileLength`).
 * @param options - the whole file's length.
 * @returns the header.
 * @throws ForeignFileError `FOREIGN_TRUNCATED`, `FOREIGN_UNSUPPORTED_VERSION`, `FOREIGN_LIMIT_EXCEEDED`, `FOREIGN_INVALID_UTF8` or `FOREIGN_BAD_HEADER`.
 * @example
 * ```ts
 * const header = readGgufHeader(bytes);
 * header.metadata.find((m) => m.key === 'general.architecture')?.value; // 'llama'
 * ```
 */
export function readGgufHeader(bytes: Uint8Array, options: ForeignReadOptions = {}): GgufHeader {
  const fileLength = options.fileLength ?? bytes.length;
  const c = new Cursor(bytes, fileLength);
  if (c.u32('magic') !== GGUF_MAGIC) throw new ForeignFileError('FOREIGN_BAD_HEADER', 'bytes 0–3 are not the GGUF magic "GGUF"', { offset: 0, field: 'magic' });
  const version = c.u32('version');
  if (version !== 2 && version !== 3) {
    const why = version === 1 ? 'GGUF v1 (32-bit counts) is not read; convert it to v3' : version >= 0x01000000 && version % 0x100 === 0 ? `a big-endian GGUF file (version bytes ${version.toString(16)}) is not read` : `GGUF version ${version} is not supported (2 or 3)`;
    throw new ForeignFileError('FOREIGN_UNSUPPORTED_VERSION', why, { offset: 4, field: 'version' });
  }
  // A tensor info is at least 8 (name) + 4 (n_dims) + 8 (one dim) + 4 (type) + 8 (offset) bytes; a key-value pair at least 8 + 4 + 1.
  const tensorCount = c.count('tensor_count', 'tensor infos', { fileBound: Math.floor(Math.max(0, c.remaining - 8) / 32), hardMax: Number.MAX_SAFE_INTEGER });
  const kvCount = c.count('metadata_kv_count', 'key-value pairs', { fileBound: Math.floor(c.remaining / 13), hardMax: Number.MAX_SAFE_INTEGER });
  const metadata: GgufMetadataEntry[] = [];
  const keys = new Set<string>();
  for (let i = 0; i < kvCount; i++) {
    const offset = c.position;
    const key = c.string(`metadata[${i}] key`);
    if (keys.has(key)) throw new ForeignFileError('FOREIGN_BAD_HEADER', `metadata key ${JSON.stringify(key)} at offset ${offset} repeats an earlier key`, { offset, field: key });
    keys.add(key);
    const type = valueType(c, `${key} value type`);
    metadata.push({ key, type, value: scalar(c, type, { field: key, depth: 0 }), offset });
  }
  let alignment = GGUF_DEFAULT_ALIGNMENT;
  const a = metadata.find((m) => m.key === 'general.alignment');
  if (a !== undefined) {
    if (a.type !== 'uint32' || typeof a.value !== 'number' || a.value === 0 || (a.value & (a.value - 1)) !== 0) {
      throw new ForeignFileError('FOREIGN_BAD_HEADER', `general.alignment must be a uint32 power of two; found ${a.type} ${String(a.value)}`, { offset: a.offset, field: 'general.alignment' });
    }
    alignment = a.value;
  }
  const infos: { name: string; dims: number[]; typeId: number; offset: bigint; at: number }[] = [];
  const names = new Set<string>();
  for (let i = 0; i < tensorCount; i++) {
    const at = c.position;
    const name = c.string(`tensor[${i}] name`);
    if (names.has(name)) throw new ForeignFileError('FOREIGN_BAD_HEADER', `tensor name ${JSON.stringify(name)} at offset ${at} repeats an earlier tensor`, { offset: at, field: name });
    names.add(name);
    const nAt = c.position;
    const nDims = c.u32(`${name} n_dims`);
    if (nDims < 1 || nDims > GGUF_MAX_DIMS) throw new ForeignFileError('FOREIGN_BAD_HEADER', `tensor ${JSON.stringify(name)} has ${nDims} dimensions at offset ${nAt} (expected 1–${GGUF_MAX_DIMS})`, { offset: nAt, field: `${name} n_dims` });
    const dims: number[] = [];
    for (let k = 0; k < nDims; k++) dims.push(c.count(`${name} dims[${k}]`, 'elements', { fileBound: Number.MAX_SAFE_INTEGER, hardMax: Number.MAX_SAFE_INTEGER }));
    const typeId = c.u32(`${name} type`);
    const offset = c.u64(`${name} offset`);
    infos.push({ name, dims, typeId, offset, at });
  }
  const dataStart = Math.ceil(c.position / alignment) * alignment;
  if (tensorCount > 0 && dataStart > fileLength) {
    throw new ForeignFileError('FOREIGN_TRUNCATED', `the tensor data would start at ${dataStart}, past the end of the ${fileLength}-byte file`, { offset: c.position, field: 'padding', needed: dataStart });
  }
  const dataBytes = fileLength - dataStart;
  const tensors: GgufTensorInfo[] = [];
  let totalElements = 0;
  for (const t of infos) {
    const known = GGML_TYPES[t.typeId];
    // A zero dimension makes 0 elements; otherwise the product is checked against the data at each step (at most 2 elements per byte for 4-bit types).
    let elements = t.dims.includes(0) ? 0 : 1;
    for (const d of elements === 0 ? [] : t.dims) {
      elements *= d;
      if (elements > 2 * dataBytes + 256) throw new ForeignFileError('FOREIGN_BAD_HEADER', `tensor ${JSON.stringify(t.name)} dims [${t.dims.join(', ')}] need more bytes than the file's ${dataBytes} bytes of tensor data`, { offset: t.at, field: t.name });
    }
    if (t.offset % BigInt(alignment) !== 0n) {
      throw new ForeignFileError('FOREIGN_BAD_HEADER', `tensor ${JSON.stringify(t.name)} offset ${t.offset} is not a multiple of the alignment ${alignment}`, { offset: t.at, field: `${t.name} offset` });
    }
    if (t.offset > BigInt(dataBytes)) throw new ForeignFileError('FOREIGN_BAD_HEADER', `tensor ${JSON.stringify(t.name)} offset ${t.offset} lies past the ${dataBytes} bytes of tensor data`, { offset: t.at, field: `${t.name} offset` });
    const begin = dataStart + Number(t.offset);
    let byteLength: number | null = null;
    if (known !== undefined) {
      const [, block, size] = known;
      if (elements % block !== 0 || (t.dims[0] as number) % block !== 0) {
        throw new ForeignFileError('FOREIGN_BAD_HEADER', `tensor ${JSON.stringify(t.name)}: ${known[0]} packs ${block} elements per block; dims[0] = ${t.dims[0]} is not a multiple`, { offset: t.at, field: t.name });
      }
      byteLength = (elements / block) * size;
      if (begin + byteLength > fileLength) {
        throw new ForeignFileError('FOREIGN_BAD_HEADER', `tensor ${JSON.stringify(t.name)} data [${begin}, ${begin + byteLength}) runs past the end of the ${fileLength}-byte file`, { offset: t.at, field: `${t.name} offset` });
      }
    }
    tensors.push({ name: t.name, dims: t.dims, typeId: t.typeId, type: known?.[0] ?? `type ${t.typeId}`, elements, begin, byteLength });
    totalElements += elements;
  }
  const sized = tensors.filter((t) => t.byteLength !== null).sort((x, y) => x.begin - y.begin);
  for (let i = 1; i < sized.length; i++) {
    const prev = sized[i - 1] as GgufTensorInfo;
    const cur = sized[i] as GgufTensorInfo;
    if (cur.begin < prev.begin + (prev.byteLength as number)) {
      throw new ForeignFileError('FOREIGN_BAD_HEADER', `tensor ${JSON.stringify(cur.name)} (at ${cur.begin}) overlaps ${JSON.stringify(prev.name)} ([${prev.begin}, ${prev.begin + (prev.byteLength as number)}))`, { field: cur.name });
    }
  }
  return { kind: 'gguf', version, metadata, tensors, alignment, dataStart, fileLength, totalElements };
}
