/**
 * Random mutations of the golden file end in a typed error or
 * in a state that re-encodes to the very same bytes — never another
 * exception. 10,000 runs per mutation family below.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeCheckpoint, encodeCheckpoint, isFormatError } from '../src/index.ts';
import { inspectCheckpoint } from '../src/inspect-entry.ts';
import { goldenBytes } from './golden.ts';
import { expectSameBytes } from './helpers/bytes.ts';
import { fixChecksum } from './helpers/raw-file.ts';

const GOLDEN = goldenBytes();
const REPORT = inspectCheckpoint(GOLDEN);

/** Every header field of the golden file with its width (fixed header, variable header, descriptor fields). */
const FIELDS: { offset: number; width: number }[] = (() => {
  const out = [...REPORT.fixedHeader, ...REPORT.fields].filter((f) => f.type !== 'string').map((f) => ({ offset: f.offset, width: f.width }));
  for (const f of REPORT.fields.filter((x) => x.type === 'string')) out.push({ offset: f.offset, width: 4 }); // string lengths
  for (const d of REPORT.descriptors) {
    const nameLength = d.entryLength - 26 - 8 * d.shape.length;
    out.push({ offset: d.entryOffset, width: 1 }, { offset: d.entryOffset + 1, width: 4 });
    const dtype = d.entryOffset + 5 + nameLength;
    out.push({ offset: dtype, width: 1 }, { offset: dtype + 1, width: 4 });
    d.shape.forEach((_, k) => out.push({ offset: dtype + 5 + 8 * k, width: 8 }));
    out.push({ offset: dtype + 5 + 8 * d.shape.length, width: 8 }, { offset: dtype + 13 + 8 * d.shape.length, width: 8 });
  }
  return out;
})();

type Mutation =
  | { kind: 'flip'; pos: number; bit: number }
  | { kind: 'truncate'; length: number }
  | { kind: 'insert'; pos: number; bytes: Uint8Array }
  | { kind: 'field'; field: number; value: bigint };

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), pos: fc.nat({ max: GOLDEN.length - 1 }), bit: fc.nat({ max: 7 }) }),
  fc.record({ kind: fc.constant('truncate' as const), length: fc.nat({ max: GOLDEN.length - 1 }) }),
  fc.record({ kind: fc.constant('insert' as const), pos: fc.nat({ max: GOLDEN.length }), bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }) }),
  fc.record({
    kind: fc.constant('field' as const),
    field: fc.nat({ max: FIELDS.length - 1 }),
    value: fc.oneof(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), fc.constantFrom(0n, 1n, 2n, 3n, 4n, 5n, 6n, 255n, 0xffffffffn, (1n << 64n) - 1n, 0x3ff0000000000000n, 0x7ff8000000000000n, 0x8000000000000000n)),
  }),
);

function apply(bytes: Uint8Array, m: Mutation): Uint8Array {
  switch (m.kind) {
    case 'flip': {
      if (bytes.length === 0) return bytes;
      const out = bytes.slice();
      const pos = m.pos % out.length;
      out[pos] = (out[pos] as number) ^ (1 << m.bit);
      return out;
    }
    case 'truncate':
      return bytes.slice(0, Math.min(m.length, bytes.length));
    case 'insert': {
      const pos = Math.min(m.pos, bytes.length);
      const out = new Uint8Array(bytes.length + m.bytes.length);
      out.set(bytes.subarray(0, pos), 0);
      out.set(m.bytes, pos);
      out.set(bytes.subarray(pos), pos + m.bytes.length);
      return out;
    }
    case 'field': {
      const f = FIELDS[m.field] as { offset: number; width: number };
      if (f.offset + f.width > bytes.length) return bytes;
      const out = bytes.slice();
      let v = m.value;
      for (let i = 0; i < f.width; i++) {
        out[f.offset + i] = Number(v & 0xffn);
        v >>= 8n;
      }
      return out;
    }
  }
}

/** Makes header_bytes + payload_bytes match the length again, so mutations get past the extent check. */
function fixExtent(bytes: Uint8Array): Uint8Array {
  if (bytes.length < 38) return bytes;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const header = view.getBigUint64(14, true);
  if (header <= BigInt(bytes.length)) view.setBigUint64(22, BigInt(bytes.length) - header, true);
  return bytes;
}

function check(bytes: Uint8Array): void {
  let decoded;
  try {
    decoded = decodeCheckpoint(bytes);
  } catch (e) {
    if (!isFormatError(e)) throw new Error(`decodeCheckpoint threw a non-FormatError: ${String(e)}`, { cause: e });
    return;
  }
  expectSameBytes(encodeCheckpoint(decoded), bytes, 'accepted file re-encoded');
}

describe('decodeCheckpoint under random mutation of the golden file', () => {
  it('ends every one of 10,000 single mutations (checksum recomputed) in a FormatError or a byte-identical re-encoding', () => {
    fc.assert(
      fc.property(mutationArb, fc.boolean(), (m, extent) => {
        let bytes = apply(GOLDEN, m);
        if (extent) bytes = fixExtent(bytes);
        check(fixChecksum(bytes));
      }),
      { numRuns: 10_000, seed: 0x11c35 },
    );
  });

  it('ends every one of 10,000 stacked mutations (1–4, optionally checksum-fixed) the same way', () => {
    fc.assert(
      fc.property(fc.array(mutationArb, { minLength: 1, maxLength: 4 }), fc.boolean(), fc.boolean(), (ms, extent, checksum) => {
        let bytes: Uint8Array = GOLDEN;
        for (const m of ms) bytes = apply(bytes, m);
        if (extent) bytes = fixExtent(bytes);
        check(checksum ? fixChecksum(bytes) : bytes);
      }),
      { numRuns: 10_000, seed: 0x6330 },
    );
  });

  it('never makes inspectCheckpoint throw, and its verdict agrees with decodeCheckpoint', () => {
    fc.assert(
      fc.property(fc.array(mutationArb, { minLength: 1, maxLength: 3 }), (ms) => {
        let bytes: Uint8Array = GOLDEN;
        for (const m of ms) bytes = apply(bytes, m);
        bytes = fixChecksum(fixExtent(bytes));
        const report = inspectCheckpoint(bytes);
        let code = 'valid';
        try {
          decodeCheckpoint(bytes);
        } catch (e) {
          code = isFormatError(e) ? e.code : 'other';
        }
        expect(report.verdict.valid ? 'valid' : report.verdict.error.code).toBe(code);
      }),
      { numRuns: 2_000, seed: 0x1a5 },
    );
  });
});
