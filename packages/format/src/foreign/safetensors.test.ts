import { describe, expect, it } from 'vitest';
import { isForeignFileError } from './errors.ts';
import { detectFileKind, readForeignFile } from './foreign-file.ts';
import { renderForeignFile } from './render.ts';
import { MAX_SAFETENSORS_HEADER_BYTES, readSafetensorsHeader } from './safetensors.ts';

/** A safetensors file built from the format description: u64 N, JSON (padded with spaces), data. */
function build(header: unknown, dataBytes: number, options: { n?: bigint; raw?: Uint8Array } = {}): Uint8Array {
  const json = options.raw ?? new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.length / 8) * 8;
  const out = new Uint8Array(8 + padded + dataBytes);
  new DataView(out.buffer).setBigUint64(0, options.n ?? BigInt(padded), true);
  out.set(json, 8);
  out.fill(0x20, 8 + json.length, 8 + padded);
  return out;
}

const GOOD = {
  __metadata__: { format: 'pt', total_parameters: '10' },
  'a.weight': { dtype: 'F32', shape: [2, 3], data_offsets: [0, 24] },
  b: { dtype: 'F64', shape: [4], data_offsets: [24, 56] },
  scalar: { dtype: 'I8', shape: [], data_offsets: [56, 57] },
  empty: { dtype: 'BF16', shape: [0, 7], data_offsets: [57, 57] },
};

function code(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (isForeignFileError(e)) return e.code;
    throw e;
  }
  return 'accepted';
}

describe('readSafetensorsHeader', () => {
  it('reads metadata and the tensor table in data order, with absolute ranges', () => {
    const bytes = build(GOOD, 57);
    const h = readSafetensorsHeader(bytes);
    expect(h.metadata).toEqual({ format: 'pt', total_parameters: '10' });
    expect(h.tensors.map((t) => [t.name, t.dtype, t.shape, t.elements, t.begin - h.dataStart, t.end - h.dataStart])).toEqual([
      ['a.weight', 'F32', [2, 3], 6, 0, 24],
      ['b', 'F64', [4], 4, 24, 56],
      ['scalar', 'I8', [], 1, 56, 57],
      ['empty', 'BF16', [0, 7], 0, 57, 57],
    ]);
    expect(h.totalElements).toBe(11);
    expect(h.fileLength).toBe(bytes.length);
    expect(detectFileKind(bytes)).toBe('safetensors');
    expect(readForeignFile(bytes).kind).toBe('safetensors');
  });

  it('reads the header from a prefix when the file length is given', () => {
    const bytes = build(GOOD, 57);
    const h = readSafetensorsHeader(bytes.subarray(0, bytes.length - 57), { fileLength: bytes.length });
    expect(h.tensors).toHaveLength(4);
    const short = bytes.subarray(0, 20);
    expect(() => readSafetensorsHeader(short, { fileLength: bytes.length })).toThrow(expect.objectContaining({ code: 'FOREIGN_TRUNCATED', needed: h.dataStart }));
  });

  it.for([
    ['an empty file', () => new Uint8Array(0), 'FOREIGN_TRUNCATED'],
    ['a header length of 2^64 − 1', () => build(GOOD, 57, { n: 0xffffffffffffffffn }), 'FOREIGN_LIMIT_EXCEEDED'],
    ['a header length just above the limit', () => build(GOOD, 57, { n: BigInt(MAX_SAFETENSORS_HEADER_BYTES) + 1n }), 'FOREIGN_LIMIT_EXCEEDED'],
    ['a header length past the end of the file', () => build(GOOD, 57, { n: 99_999_999n }), 'FOREIGN_TRUNCATED'],
    ['a header that is not JSON', () => build(null, 0, { raw: new TextEncoder().encode('{"a": ') }), 'FOREIGN_BAD_HEADER'],
    ['a header that is not UTF-8', () => build(null, 0, { raw: Uint8Array.of(0x7b, 0x22, 0xff, 0x22, 0x7d) }), 'FOREIGN_INVALID_UTF8'],
    ['a JSON array', () => build(null, 0, { raw: new TextEncoder().encode('[1]') }), 'FOREIGN_BAD_HEADER'],
    ['a metadata value that is not a string', () => build({ __metadata__: { n: 1 } }, 0), 'FOREIGN_BAD_HEADER'],
    ['an unknown dtype', () => build({ a: { dtype: 'F128', shape: [1], data_offsets: [0, 16] } }, 16), 'FOREIGN_BAD_HEADER'],
    ['a negative dimension', () => build({ a: { dtype: 'U8', shape: [-1], data_offsets: [0, 1] } }, 1), 'FOREIGN_BAD_HEADER'],
    ['a span that does not match the shape', () => build({ a: { dtype: 'F32', shape: [2], data_offsets: [0, 4] } }, 4), 'FOREIGN_BAD_HEADER'],
    ['begin after end', () => build({ a: { dtype: 'U8', shape: [0], data_offsets: [4, 0] } }, 4), 'FOREIGN_BAD_HEADER'],
    ['a hole between tensors', () => build({ a: { dtype: 'U8', shape: [1], data_offsets: [0, 1] }, b: { dtype: 'U8', shape: [1], data_offsets: [2, 3] } }, 3), 'FOREIGN_BAD_HEADER'],
    ['overlapping tensors', () => build({ a: { dtype: 'U8', shape: [2], data_offsets: [0, 2] }, b: { dtype: 'U8', shape: [2], data_offsets: [1, 3] } }, 3), 'FOREIGN_BAD_HEADER'],
    ['trailing bytes', () => build({ a: { dtype: 'U8', shape: [1], data_offsets: [0, 1] } }, 2), 'FOREIGN_BAD_HEADER'],
    ['data past the end', () => build({ a: { dtype: 'U8', shape: [8], data_offsets: [0, 8] } }, 2), 'FOREIGN_BAD_HEADER'],
    ['a shape whose product overflows', () => build({ a: { dtype: 'F64', shape: [2 ** 40, 2 ** 40, 2 ** 40], data_offsets: [0, 8] } }, 8), 'FOREIGN_BAD_HEADER'],
    ['a huge dimension', () => build({ a: { dtype: 'U8', shape: [Number.MAX_SAFE_INTEGER], data_offsets: [0, 8] } }, 8), 'FOREIGN_BAD_HEADER'],
  ] as const)('refuses %s with %s, allocating nothing unbounded', ([_label, make, expected]) => {
    expect(code(() => readSafetensorsHeader(make()))).toBe(expected);
  });

  it('never throws anything but its own error on randomly damaged headers (seeded)', () => {
    const good = build(GOOD, 57);
    let seed = 0x2545f491;
    const next = (): number => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return seed >>> 0;
    };
    const outcomes = new Set<string>();
    for (let round = 0; round < 2000; round++) {
      const bytes = good.slice();
      const flips = 1 + (next() % 4);
      for (let k = 0; k < flips; k++) bytes[next() % bytes.length] = next() & 0xff;
      const cut = next() % 8 === 0 ? bytes.subarray(0, next() % bytes.length) : bytes;
      outcomes.add(code(() => readSafetensorsHeader(cut)));
    }
    expect(outcomes.has('accepted')).toBe(true);
    expect(outcomes.has('FOREIGN_BAD_HEADER')).toBe(true);
  });
});

describe('renderForeignFile', () => {
  it('says what the file is and lists metadata and tensors with byte ranges', () => {
    const bytes = build(GOOD, 57);
    const text = renderForeignFile(readSafetensorsHeader(bytes), { file: 'm.safetensors' });
    expect(text.split('\n')[0]).toBe(`m.safetensors: ${bytes.length} bytes, safetensors, 4 tensors, 11 elements — not an LLMCP35 checkpoint`);
    expect(text).toContain('total_parameters  string  10');
    expect(text).toContain(`  0  a.weight  F32    [2, 3]         6  [${bytes.length - 57}, ${bytes.length - 33})`);
  });
});
