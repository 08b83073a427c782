import { describe, expect, it } from 'vitest';
import { isForeignFileError } from './errors.ts';
import { detectFileKind } from './foreign-file.ts';
import { readGgufHeader } from './gguf.ts';
import { foreignFileJson, renderForeignFile } from './render.ts';

/**
 * A GGUF writer for tests, from ggml's GGUF specification (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md): little-endian; magic,
 * version u32, tensor_count u64, metadata_kv_count u64, key-value pairs
 * (string key, u32 type, value), tensor infos (string name, u32 n_dims, u64
 * dims, u32 type, u64 offset), padding to the alignment, data.
 */
class Writer {
  readonly parts: number[] = [];
  u8(v: number): this {
    this.parts.push(v & 0xff);
    return this;
  }
  u32(v: number): this {
    for (let i = 0; i < 4; i++) this.parts.push((v >>> (8 * i)) & 0xff);
    return this;
  }
  u64(v: bigint | number): this {
    let x = BigInt(v);
    for (let i = 0; i < 8; i++) {
      this.parts.push(Number(x & 0xffn));
      x >>= 8n;
    }
    return this;
  }
  f32(v: number): this {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, v, true);
    this.parts.push(...b);
    return this;
  }
  str(s: string | Uint8Array, length?: bigint): this {
    const b = typeof s === 'string' ? new TextEncoder().encode(s) : s;
    this.u64(length ?? BigInt(b.length));
    this.parts.push(...b);
    return this;
  }
  pad(alignment: number): this {
    while (this.parts.length % alignment !== 0) this.parts.push(0);
    return this;
  }
  bytes(): Uint8Array {
    return Uint8Array.from(this.parts);
  }
}

const T = { uint8: 0, uint32: 4, float32: 6, bool: 7, string: 8, array: 9, uint64: 10 } as const;

interface Spec {
  readonly version?: number;
  readonly alignment?: number;
  readonly tensorCount?: bigint;
  readonly kvCount?: bigint;
}

/** A small valid llama-like GGUF: 4 metadata keys, 2 F32 tensors of 16 and 6 elements. */
function gguf(spec: Spec = {}, tamper: (w: Writer, stage: 'kv' | 'tensors') => boolean = () => false): Uint8Array {
  const w = new Writer();
  w.u8(0x47).u8(0x47).u8(0x55).u8(0x46).u32(spec.version ?? 3);
  w.u64(spec.tensorCount ?? 2n).u64(spec.kvCount ?? 4n);
  if (!tamper(w, 'kv')) {
    w.str('general.architecture').u32(T.string).str('llama');
    w.str('llama.attention.layer_norm_rms_epsilon').u32(T.float32).f32(1e-6);
    w.str('general.alignment').u32(T.uint32).u32(spec.alignment ?? 32);
    w.str('tokenizer.ggml.tokens').u32(T.array).u32(T.string).u64(20);
    for (let i = 0; i < 20; i++) w.str(`t${i}`);
  }
  if (!tamper(w, 'tensors')) {
    w.str('token_embd.weight').u32(2).u64(4).u64(4).u32(0).u64(0);
    w.str('output_norm.weight').u32(1).u64(6).u32(0).u64(64);
  }
  w.pad(spec.alignment ?? 32);
  for (let i = 0; i < 64 + 24; i++) w.u8(i);
  return w.bytes();
}

function code(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (isForeignFileError(e)) return e.code;
    throw e;
  }
  return 'accepted';
}

describe('readGgufHeader', () => {
  it('reads version, metadata (arrays as length and first elements) and the tensor table', () => {
    const bytes = gguf();
    expect(detectFileKind(bytes)).toBe('gguf');
    const h = readGgufHeader(bytes);
    expect(h.version).toBe(3);
    expect(h.alignment).toBe(32);
    expect(h.metadata.map((m) => [m.key, m.type])).toEqual([
      ['general.architecture', 'string'],
      ['llama.attention.layer_norm_rms_epsilon', 'float32'],
      ['general.alignment', 'uint32'],
      ['tokenizer.ggml.tokens', 'array'],
    ]);
    expect(h.metadata[0]?.value).toBe('llama');
    expect(h.metadata[1]?.value).toBe(Math.fround(1e-6));
    const tokens = h.metadata[3]?.value as { elementType: string; length: number; head: string[] };
    expect(tokens.elementType).toBe('string');
    expect(tokens.length).toBe(20);
    expect(tokens.head).toHaveLength(16);
    expect(tokens.head[15]).toBe('t15');
    expect(h.dataStart % 32).toBe(0);
    expect(h.tensors.map((t) => [t.name, t.type, t.dims, t.elements, t.begin - h.dataStart, t.byteLength])).toEqual([
      ['token_embd.weight', 'F32', [4, 4], 16, 0, 64],
      ['output_norm.weight', 'F32', [6], 6, 64, 24],
    ]);
    expect(h.totalElements).toBe(22);
    expect(h.fileLength).toBe(bytes.length);
  });

  it('renders and summarises as JSON (bigints as strings)', () => {
    const h = readGgufHeader(gguf());
    const text = renderForeignFile(h, { file: 'm.gguf' });
    expect(text.split('\n')[0]).toBe(`m.gguf: ${h.fileLength} bytes, GGUF v3 (architecture llama), 2 tensors, 22 elements — not an LLMCP35 checkpoint`);
    expect(text).toContain('tokenizer.ggml.tokens');
    expect(text).toContain('array<string>[20]');
    expect(text).toContain(`  0  token_embd.weight   F32   [4, 4]        16  [${h.dataStart}, ${h.dataStart + 64})`);
    expect(JSON.parse(JSON.stringify(foreignFileJson(h))).tensors[1].name).toBe('output_norm.weight');
  });

  it('reads a prefix holding the header when the file length is given', () => {
    const bytes = gguf();
    const h = readGgufHeader(bytes);
    expect(readGgufHeader(bytes.subarray(0, h.dataStart), { fileLength: bytes.length }).tensors).toHaveLength(2);
    expect(code(() => readGgufHeader(bytes.subarray(0, 40), { fileLength: bytes.length }))).toBe('FOREIGN_TRUNCATED');
  });

  const cases: readonly (readonly [string, () => Uint8Array, string])[] = [
    ['version 1', () => gguf({ version: 1 }), 'FOREIGN_UNSUPPORTED_VERSION'],
    ['a big-endian file', () => gguf({ version: 0x03000000 }), 'FOREIGN_UNSUPPORTED_VERSION'],
    ['tensor_count 2^64 − 1', () => gguf({ tensorCount: 0xffffffffffffffffn }), 'FOREIGN_LIMIT_EXCEEDED'],
    ['tensor_count 10^12 (more than the file holds)', () => gguf({ tensorCount: 10n ** 12n }), 'FOREIGN_TRUNCATED'],
    ['metadata_kv_count 2^63', () => gguf({ kvCount: 2n ** 63n }), 'FOREIGN_LIMIT_EXCEEDED'],
    ['metadata_kv_count 10^9', () => gguf({ kvCount: 10n ** 9n }), 'FOREIGN_TRUNCATED'],
    ['a key of length 2^62', () => gguf({}, (w, s) => (s === 'kv' ? (w.str('general.architecture', 2n ** 62n), true) : false)), 'FOREIGN_LIMIT_EXCEEDED'],
    ['a key longer than the file', () => gguf({}, (w, s) => (s === 'kv' ? (w.str('ab', 1_000_000n), true) : false)), 'FOREIGN_TRUNCATED'],
    ['a key that is not UTF-8', () => gguf({ kvCount: 1n }, (w, s) => (s === 'kv' ? (w.str(Uint8Array.of(0xc3, 0x28)).u32(T.uint8).u8(1), true) : false)), 'FOREIGN_INVALID_UTF8'],
    ['an array of 2^60 bytes', () => gguf({ kvCount: 1n }, (w, s) => (s === 'kv' ? (w.str('a').u32(T.array).u32(T.uint8).u64(2n ** 60n), true) : false)), 'FOREIGN_LIMIT_EXCEEDED'],
    ['an array of 2^50 bytes', () => gguf({ kvCount: 1n }, (w, s) => (s === 'kv' ? (w.str('a').u32(T.array).u32(T.uint8).u64(2n ** 50n), true) : false)), 'FOREIGN_TRUNCATED'],
    ['an array of 2^40 strings', () => gguf({ kvCount: 1n }, (w, s) => (s === 'kv' ? (w.str('a').u32(T.array).u32(T.string).u64(2n ** 40n), true) : false)), 'FOREIGN_TRUNCATED'],
    [
      'arrays nested 5 deep',
      () =>
        gguf({ kvCount: 1n }, (w, s) => {
          if (s !== 'kv') return false;
          w.str('a').u32(T.array);
          for (let i = 0; i < 5; i++) w.u32(T.array).u64(1);
          w.u32(T.uint8).u64(1).u8(0);
          return true;
        }),
      'FOREIGN_LIMIT_EXCEEDED',
    ],
    ['value type 13', () => gguf({ kvCount: 1n }, (w, s) => (s === 'kv' ? (w.str('a').u32(13), true) : false)), 'FOREIGN_BAD_HEADER'],
    ['a bool of value 2', () => gguf({ kvCount: 1n }, (w, s) => (s === 'kv' ? (w.str('a').u32(T.bool).u8(2), true) : false)), 'FOREIGN_BAD_HEADER'],
    ['a repeated key', () => gguf({ kvCount: 2n }, (w, s) => (s === 'kv' ? (w.str('a').u32(T.uint8).u8(1).str('a').u32(T.uint8).u8(2), true) : false)), 'FOREIGN_BAD_HEADER'],
    ['an alignment that is not a power of two', () => gguf({ alignment: 24 }), 'FOREIGN_BAD_HEADER'],
    ['5 dimensions', () => gguf({ tensorCount: 1n }, (w, s) => (s === 'tensors' ? (w.str('x').u32(5).u64(1).u64(1).u64(1).u64(1).u64(1).u32(0).u64(0), true) : false)), 'FOREIGN_BAD_HEADER'],
    ['dims whose product overflows', () => gguf({ tensorCount: 1n }, (w, s) => (s === 'tensors' ? (w.str('x').u32(4).u64(2n ** 40n).u64(2n ** 40n).u64(2n ** 40n).u64(2n ** 40n).u32(0).u64(0), true) : false)), 'FOREIGN_BAD_HEADER'],
    ['a misaligned offset', () => gguf({ tensorCount: 1n }, (w, s) => (s === 'tensors' ? (w.str('x').u32(1).u64(4).u32(0).u64(4), true) : false)), 'FOREIGN_BAD_HEADER'],
    ['data past the end', () => gguf({ tensorCount: 1n }, (w, s) => (s === 'tensors' ? (w.str('x').u32(1).u64(64).u32(0).u64(0), true) : false)), 'FOREIGN_BAD_HEADER'],
    ['an offset of 2^63', () => gguf({ tensorCount: 1n }, (w, s) => (s === 'tensors' ? (w.str('x').u32(1).u64(4).u32(0).u64(2n ** 63n), true) : false)), 'FOREIGN_BAD_HEADER'],
    ['overlapping tensors', () => gguf({}, (w, s) => (s === 'tensors' ? (w.str('x').u32(1).u64(16).u32(0).u64(0).str('y').u32(1).u64(6).u32(0).u64(32), true) : false)), 'FOREIGN_BAD_HEADER'],
    ['a repeated tensor name', () => gguf({}, (w, s) => (s === 'tensors' ? (w.str('x').u32(1).u64(4).u32(0).u64(0).str('x').u32(1).u64(4).u32(0).u64(32), true) : false)), 'FOREIGN_BAD_HEADER'],
    ['a quantized row that does not fill its blocks', () => gguf({ tensorCount: 1n }, (w, s) => (s === 'tensors' ? (w.str('x').u32(1).u64(16).u32(8).u64(0), true) : false)), 'FOREIGN_BAD_HEADER'],
  ];
  it.for(cases)('refuses %s with %s, allocating nothing unbounded', ([_label, make, expected]) => {
    expect(code(() => readGgufHeader(make()))).toBe(expected);
  });

  it('sizes block-quantized types and names unknown ones without sizing them', () => {
    const q8 = gguf({ tensorCount: 2n }, (w, s) => (s === 'tensors' ? (w.str('q').u32(1).u64(32).u32(8).u64(0).str('u').u32(1).u64(3).u32(99).u64(64), true) : false));
    const h = readGgufHeader(q8);
    expect(h.tensors.map((t) => [t.type, t.byteLength])).toEqual([
      ['Q8_0', 34],
      ['type 99', null],
    ]);
  });

  it('never throws anything but its own error on randomly damaged headers (seeded)', () => {
    const good = gguf();
    let seed = 0x9e3779b9;
    const next = (): number => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return seed >>> 0;
    };
    const outcomes = new Set<string>();
    for (let round = 0; round < 3000; round++) {
      const bytes = good.slice();
      const flips = 1 + (next() % 4);
      for (let k = 0; k < flips; k++) bytes[8 + (next() % (bytes.length - 8))] = next() & 0xff;
      const cut = next() % 8 === 0 ? bytes.subarray(0, next() % bytes.length) : bytes;
      outcomes.add(code(() => readGgufHeader(cut)));
    }
    expect(outcomes.has('accepted')).toBe(true);
    expect(outcomes.has('FOREIGN_TRUNCATED')).toBe(true);
  });
});
