/**
 * Test helper: open an LLMCP35 file as editable parts (header fields,
 * descriptors, record bytes) and write it back with offsets, lengths and the
 * checksum recomputed — to build files that break exactly one rule.
 */
import { fileChecksum } from '../../src/internal/bytes.ts';
import { headerLength, parseFixedHeader, parseVariableHeader, writeHeader, type RawDecoderConfig } from '../../src/header.ts';
import type { AdamWConfig } from '../../src/types.ts';

export interface EditableDescriptor {
  roleTag: number;
  name: string;
  nameBytes?: Uint8Array;
  dtypeTag: number;
  shape: bigint[];
  /** Payload bytes of the record. */
  bytes: Uint8Array;
  /** When set, written instead of the computed offset / byte length. */
  offsetOverride?: bigint;
  byteLengthOverride?: bigint;
}

export interface EditableFile {
  selectedStep: bigint;
  samplingRngState: bigint;
  tokenizerKindTag: number;
  tokenizerVocabulary: bigint;
  decoder: RawDecoderConfig;
  adamw: { -readonly [K in keyof AdamWConfig]: AdamWConfig[K] };
  groups: { decay: string[]; noDecay: string[] } | null;
  optimizerStep: bigint;
  beta1Power: number;
  beta2Power: number;
  modelParameterCount: number;
  optimizerStateCount: number;
  descriptors: EditableDescriptor[];
}

export function openFile(bytes: Uint8Array): EditableFile {
  const fixed = parseFixedHeader(bytes, bytes.length);
  const h = parseVariableHeader(bytes, fixed);
  return {
    selectedStep: h.selectedStep,
    samplingRngState: h.samplingRngState,
    tokenizerKindTag: h.tokenizerKindTag,
    tokenizerVocabulary: h.tokenizerVocabulary,
    decoder: { ...h.decoder },
    adamw: { ...h.adamw },
    groups: h.groups === null ? null : { decay: h.groups.decay.map((n) => n.name), noDecay: h.groups.noDecay.map((n) => n.name) },
    optimizerStep: h.optimizerStep,
    beta1Power: h.beta1Power,
    beta2Power: h.beta2Power,
    modelParameterCount: h.modelParameterCount,
    optimizerStateCount: h.optimizerStateCount,
    descriptors: h.descriptors.map((d) => ({
      roleTag: d.roleTag,
      name: d.name,
      dtypeTag: d.dtypeTag,
      shape: [...d.shape],
      bytes: bytes.slice(Number(d.offset), Number(d.offset + d.byteLength)),
    })),
  };
}

const enc = new TextEncoder();

/** Writes the file; offsets, lengths, payload_bytes and checksum recomputed unless overridden. */
export function buildFile(f: EditableFile, options: { extraHeaderBytes?: number; checksum?: 'fix' | 'keep-zero' } = {}): Uint8Array {
  const groups = f.groups === null ? null : { decay: f.groups.decay.map((n) => enc.encode(n)), noDecay: f.groups.noDecay.map((n) => enc.encode(n)) };
  const names = f.descriptors.map((d) => d.nameBytes ?? enc.encode(d.name));
  const base = headerLength(groups, f.descriptors.map((d, i) => ({ nameBytes: names[i] as Uint8Array, rank: d.shape.length })));
  const extra = options.extraHeaderBytes ?? 0;
  let position = BigInt(base + extra);
  const descriptors = f.descriptors.map((d, i) => {
    const out = {
      roleTag: d.roleTag,
      nameBytes: names[i] as Uint8Array,
      dtypeTag: d.dtypeTag,
      shape: d.shape,
      offset: d.offsetOverride ?? position,
      byteLength: d.byteLengthOverride ?? BigInt(d.bytes.length),
    };
    position += BigInt(d.bytes.length);
    return out;
  });
  const payload = f.descriptors.reduce((n, d) => n + d.bytes.length, 0);
  const header = writeHeader({
    headerBytes: base,
    payloadBytes: payload,
    selectedStep: f.selectedStep,
    samplingRngState: f.samplingRngState,
    tokenizerKindTag: f.tokenizerKindTag,
    tokenizerVocabulary: f.tokenizerVocabulary,
    decoder: f.decoder,
    adamw: f.adamw,
    groups,
    optimizerStep: f.optimizerStep,
    beta1Power: f.beta1Power,
    beta2Power: f.beta2Power,
    modelParameterCount: f.modelParameterCount,
    optimizerStateCount: f.optimizerStateCount,
    descriptors,
  });
  const out = new Uint8Array(base + extra + payload);
  out.set(header, 0);
  const view = new DataView(out.buffer);
  view.setBigUint64(14, BigInt(base + extra), true);
  let p = base + extra;
  for (const d of f.descriptors) {
    out.set(d.bytes, p);
    p += d.bytes.length;
  }
  if (options.checksum !== 'keep-zero') view.setBigUint64(30, fileChecksum(out), true);
  return out;
}

/** Recomputes the checksum of `bytes` in place (files of >= 38 bytes). */
export function fixChecksum(bytes: Uint8Array): Uint8Array {
  if (bytes.length >= 38) new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).setBigUint64(30, fileChecksum(bytes), true);
  return bytes;
}

/** f64 values as little-endian record bytes. */
export function f64Bytes(values: readonly number[]): Uint8Array {
  const out = new Uint8Array(8 * values.length);
  const view = new DataView(out.buffer);
  values.forEach((v, i) => view.setFloat64(8 * i, v, true));
  return out;
}

/** Reads the f64 at `index` of record bytes. */
export function f64At(bytes: Uint8Array, index: number): number {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getFloat64(8 * index, true);
}

/** Sets the f64 at `index` of record bytes (copy). */
export function withF64(bytes: Uint8Array, index: number, value: number): Uint8Array {
  const out = bytes.slice();
  new DataView(out.buffer).setFloat64(8 * index, value, true);
  return out;
}
