/**
 * A raw, non-validating model of an LLMCP35 v1 file for building test files:
 * every header field and every record as stored, editable, and written back
 * with offsets, lengths, counts and the checksum recomputed unless
 * overridden. Deliberately independent of `@llmcp/format`'s parser, so the
 * corpus it builds does not inherit that implementation's mistakes.
 */

/** One descriptor with its record payload. */
export interface RawRecord {
  roleTag: number;
  /** Name as UTF-8 bytes (may be invalid UTF-8 on purpose). */
  name: Uint8Array;
  dtypeTag: number;
  shape: bigint[];
  /** The record's payload bytes. */
  bytes: Uint8Array;
  /** Written instead of the computed offset when set. */
  offset?: bigint;
  /** Written instead of `bytes.length` when set. */
  byteLength?: bigint;
}

/** All fields of a file; u64 as bigint, f64 as numbers (bit patterns preserved by DataView). */
export interface RawCheckpoint {
  magic: Uint8Array;
  formatVersion: number;
  endianMarker: number;
  tokenizerLayoutVersion: number;
  rngAlgorithmVersion: number;
  selectedStep: bigint;
  samplingRngState: bigint;
  tokenizerKind: number;
  tokenizerVocabulary: bigint;
  vocabularySize: bigint;
  modelWidth: bigint;
  heads: bigint;
  feedForwardWidth: bigint;
  layers: bigint;
  maxPositions: bigint;
  ropeBase: number;
  rmsEpsilon: number;
  learningRate: number;
  beta1: number;
  beta2: number;
  epsilon: number;
  weightDecay: number;
  groupsFlag: number;
  /** Name lists as UTF-8 bytes, written in this order (present when groupsFlag is 1). */
  decay: Uint8Array[];
  noDecay: Uint8Array[];
  optimizerStep: bigint;
  beta1Power: number;
  beta2Power: number;
  modelParameterCount: number;
  optimizerStateCount: number;
  records: RawRecord[];
}

/** Overrides applied when writing. */
export interface SerializeOptions {
  /** Written instead of `records.length`. */
  readonly descriptorCount?: number;
  /** Zero bytes appended to the header before the payload (header_bytes and offsets include them). */
  readonly extraHeaderBytes?: number;
  /** Written instead of the computed header_bytes / payload_bytes. */
  readonly headerBytes?: bigint;
  readonly payloadBytes?: bigint;
  /** `'compute'` (default) or a value to store as is. */
  readonly checksum?: 'compute' | bigint;
}

const TEXT = new TextEncoder();

/**
 * UTF-8 bytes of a string.
 *
 * @param text - any string (lone surrogates become U+FFFD).
 * @returns its UTF-8 encoding.
 */
export function utf8(text: string): Uint8Array {
  return TEXT.encode(text);
}

class Cursor {
  readonly view: DataView;
  pos: number;
  constructor(
    readonly bytes: Uint8Array,
    start: number,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.pos = start;
  }
  take(n: number): number {
    if (this.pos + n > this.bytes.length) throw new RangeError(`raw parse: need ${n} bytes at ${this.pos}, file has ${this.bytes.length}`);
    const at = this.pos;
    this.pos += n;
    return at;
  }
  u8(): number {
    return this.view.getUint8(this.take(1));
  }
  u16(): number {
    return this.view.getUint16(this.take(2), true);
  }
  u32(): number {
    return this.view.getUint32(this.take(4), true);
  }
  u64(): bigint {
    return this.view.getBigUint64(this.take(8), true);
  }
  f64(): number {
    return this.view.getFloat64(this.take(8), true);
  }
  str(): Uint8Array {
    const n = this.u32();
    const at = this.take(n);
    return this.bytes.slice(at, at + n);
  }
}

/**
 * Parses a structurally sound file (any field values) into a {@link RawCheckpoint}.
 * @param bytes - the file.
 * @returns the editable model; record payloads are copies.
 * @throws RangeError when the structure cannot be read.
 */
export function parseRawCheckpoint(bytes: Uint8Array): RawCheckpoint {
  const c = new Cursor(bytes, 0);
  const magic = bytes.slice(0, 8);
  c.take(8);
  const formatVersion = c.u16();
  const endianMarker = c.u32();
  c.u64(); // header_bytes
  c.u64(); // payload_bytes
  c.u64(); // checksum
  const raw: Partial<RawCheckpoint> = { magic, formatVersion, endianMarker };
  raw.tokenizerLayoutVersion = c.u16();
  raw.rngAlgorithmVersion = c.u16();
  raw.selectedStep = c.u64();
  raw.samplingRngState = c.u64();
  raw.tokenizerKind = c.u8();
  raw.tokenizerVocabulary = c.u64();
  raw.vocabularySize = c.u64();
  raw.modelWidth = c.u64();
  raw.heads = c.u64();
  raw.feedForwardWidth = c.u64();
  raw.layers = c.u64();
  raw.maxPositions = c.u64();
  raw.ropeBase = c.f64();
  raw.rmsEpsilon = c.f64();
  raw.learningRate = c.f64();
  raw.beta1 = c.f64();
  raw.beta2 = c.f64();
  raw.epsilon = c.f64();
  raw.weightDecay = c.f64();
  raw.groupsFlag = c.u8();
  raw.decay = [];
  raw.noDecay = [];
  if (raw.groupsFlag === 1) {
    for (let n = c.u32(); n > 0; n--) raw.decay.push(c.str());
    for (let n = c.u32(); n > 0; n--) raw.noDecay.push(c.str());
  }
  raw.optimizerStep = c.u64();
  raw.beta1Power = c.f64();
  raw.beta2Power = c.f64();
  raw.modelParameterCount = c.u32();
  raw.optimizerStateCount = c.u32();
  const count = c.u32();
  raw.records = [];
  for (let i = 0; i < count; i++) {
    const roleTag = c.u8();
    const name = c.str();
    const dtypeTag = c.u8();
    const shape: bigint[] = [];
    for (let rank = c.u32(); rank > 0; rank--) shape.push(c.u64());
    const offset = Number(c.u64());
    const length = Number(c.u64());
    if (offset + length > bytes.length) throw new RangeError(`raw parse: record ${i} lies outside the file`);
    raw.records.push({ roleTag, name, dtypeTag, shape, bytes: bytes.slice(offset, offset + length) });
  }
  return raw as RawCheckpoint;
}

/**
 * FNV-1a 64 of `bytes` with bytes 30..37 taken as zero (../../format/SPEC.md §3.1).
 * @param bytes - a file of at least 38 bytes.
 * @returns the checksum.
 */
export function rawChecksum(bytes: Uint8Array): bigint {
  let h = 0xcbf29ce484222325n;
  const mask = (1n << 64n) - 1n;
  for (let i = 0; i < bytes.length; i++) {
    const b = i >= 30 && i < 38 ? 0 : (bytes[i] as number);
    h = ((h ^ BigInt(b)) * 0x100000001b3n) & mask;
  }
  return h;
}

/**
 * Recomputes and stores the checksum of a complete file, in place.
 * @param bytes - a file of at least 38 bytes.
 * @returns the same array.
 */
export function withRawChecksum(bytes: Uint8Array): Uint8Array {
  new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).setBigUint64(30, rawChecksum(bytes), true);
  return bytes;
}

/**
 * Writes a {@link RawCheckpoint}: header fields in spec order, records
 * back-to-back after the header, offsets, byte lengths, header_bytes,
 * payload_bytes, descriptor count and checksum computed unless overridden.
 * @param raw - the model.
 * @param options - overrides.
 * @returns the file bytes.
 */
export function serializeRawCheckpoint(raw: RawCheckpoint, options: SerializeOptions = {}): Uint8Array {
  const parts: number[] = [];
  const view = new DataView(new ArrayBuffer(8));
  const push = (n: number): void => {
    for (let i = 0; i < n; i++) parts.push(view.getUint8(i));
  };
  const u8 = (v: number): void => {
    parts.push(v & 0xff);
  };
  const u16 = (v: number): void => {
    view.setUint16(0, v, true);
    push(2);
  };
  const u32 = (v: number): void => {
    view.setUint32(0, v, true);
    push(4);
  };
  const u64 = (v: bigint): void => {
    view.setBigUint64(0, v, true);
    push(8);
  };
  const f64 = (v: number): void => {
    view.setFloat64(0, v, true);
    push(8);
  };
  const str = (b: Uint8Array): void => {
    u32(b.length);
    for (const x of b) parts.push(x);
  };
  for (const x of raw.magic) parts.push(x);
  u16(raw.formatVersion);
  u32(raw.endianMarker);
  const headerBytesAt = parts.length;
  u64(0n);
  u64(0n);
  u64(0n);
  u16(raw.tokenizerLayoutVersion);
  u16(raw.rngAlgorithmVersion);
  u64(raw.selectedStep);
  u64(raw.samplingRngState);
  u8(raw.tokenizerKind);
  u64(raw.tokenizerVocabulary);
  for (const v of [raw.vocabularySize, raw.modelWidth, raw.heads, raw.feedForwardWidth, raw.layers, raw.maxPositions]) u64(v);
  for (const v of [raw.ropeBase, raw.rmsEpsilon, raw.learningRate, raw.beta1, raw.beta2, raw.epsilon, raw.weightDecay]) f64(v);
  u8(raw.groupsFlag);
  if (raw.groupsFlag === 1) {
    u32(raw.decay.length);
    raw.decay.forEach(str);
    u32(raw.noDecay.length);
    raw.noDecay.forEach(str);
  }
  u64(raw.optimizerStep);
  f64(raw.beta1Power);
  f64(raw.beta2Power);
  u32(raw.modelParameterCount);
  u32(raw.optimizerStateCount);
  u32(options.descriptorCount ?? raw.records.length);
  const entriesLength = raw.records.reduce((n, r) => n + 26 + r.name.length + 8 * r.shape.length, 0);
  const headerBytes = parts.length + entriesLength + (options.extraHeaderBytes ?? 0);
  let position = BigInt(headerBytes);
  for (const r of raw.records) {
    u8(r.roleTag);
    str(r.name);
    u8(r.dtypeTag);
    u32(r.shape.length);
    r.shape.forEach(u64);
    u64(r.offset ?? position);
    u64(r.byteLength ?? BigInt(r.bytes.length));
    position += BigInt(r.bytes.length);
  }
  for (let i = 0; i < (options.extraHeaderBytes ?? 0); i++) parts.push(0);
  const payload = raw.records.reduce((n, r) => n + r.bytes.length, 0);
  const out = new Uint8Array(parts.length + payload);
  out.set(parts, 0);
  let p = parts.length;
  for (const r of raw.records) {
    out.set(r.bytes, p);
    p += r.bytes.length;
  }
  const dv = new DataView(out.buffer);
  dv.setBigUint64(headerBytesAt, options.headerBytes ?? BigInt(headerBytes), true);
  dv.setBigUint64(headerBytesAt + 8, options.payloadBytes ?? BigInt(payload), true);
  dv.setBigUint64(30, options.checksum === undefined || options.checksum === 'compute' ? rawChecksum(out) : options.checksum, true);
  return out;
}

/**
 * f64 values as little-endian bytes.
 * @param values - the values.
 * @returns 8 bytes per value.
 */
export function f64Bytes(values: ArrayLike<number>): Uint8Array {
  const out = new Uint8Array(8 * values.length);
  const view = new DataView(out.buffer);
  for (let i = 0; i < values.length; i++) view.setFloat64(8 * i, values[i] as number, true);
  return out;
}

/**
 * Copy of record bytes with the f64 at `index` replaced.
 * @param bytes - f64 record bytes.
 * @param index - element index.
 * @param value - new value (bit pattern preserved, e.g. −0).
 * @returns the new bytes.
 */
export function withF64(bytes: Uint8Array, index: number, value: number): Uint8Array {
  const out = bytes.slice();
  new DataView(out.buffer).setFloat64(8 * index, value, true);
  return out;
}
