import { describe, expect, it } from 'vitest';
import { goldenBytes } from '../test/fixtures/golden-6330.ts';
import { buildFile, fixChecksum, openFile } from '../test/helpers/raw-file.ts';
import { decodeCheckpoint } from './decode.ts';
import { isFormatError, type FormatError } from './errors.ts';

const GOLDEN = goldenBytes();

function failure(bytes: Uint8Array): FormatError {
  try {
    decodeCheckpoint(bytes);
  } catch (e) {
    if (isFormatError(e)) return e;
    throw e;
  }
  throw new Error('expected the file to be rejected');
}

function patch(offset: number, write: (v: DataView) => void): Uint8Array {
  const b = GOLDEN.slice();
  write(new DataView(b.buffer, offset));
  return fixChecksum(b);
}

describe('decodeCheckpoint', () => {
  it('rejects a non-Uint8Array with TypeError', () => {
    expect(() => decodeCheckpoint([1, 2, 3] as unknown as Uint8Array)).toThrow(TypeError);
  });

  it('decodes from a view at any byte offset of a larger buffer', () => {
    const host = new Uint8Array(GOLDEN.length + 7);
    host.set(GOLDEN, 3);
    expect(decodeCheckpoint(host.subarray(3, 3 + GOLDEN.length)).layout.checksumLabel).toBe('fnv1a64:2b8b6097eaed6a91');
  });

  describe('hostile headers fail before any allocation proportional to a declared size', () => {
    it('decay-name count 0xFFFFFFFF → Truncated', () => {
      const e = failure(patch(172, (v) => v.setUint32(0, 0xffffffff, true)));
      expect([e.code, e.reason]).toEqual(['FORMAT_TRUNCATED', 'header-read']);
    });

    it('string length 0xFFFFFFFF → Truncated naming the field', () => {
      const e = failure(patch(176, (v) => v.setUint32(0, 0xffffffff, true)));
      expect(e.code).toBe('FORMAT_TRUNCATED');
      expect(e.field).toBe('decay name 0');
      expect(e.offset).toBe(180);
    });

    it('a model record declaring 2^40 bytes (shape [2^37]) → Layout, not an allocation', () => {
      const file = openFile(GOLDEN);
      file.descriptors[6]!.shape = [1n << 37n];
      file.descriptors[6]!.byteLengthOverride = 1n << 40n;
      const e = failure(buildFile(file));
      expect(e.code).toBe('FORMAT_LAYOUT');
    });

    it('a literal tokenizer vocabulary of 2^64 - 1 → SizeOverflow in the record partition', () => {
      const e = failure(patch(59, (v) => v.setBigUint64(0, (1n << 64n) - 1n, true)));
      expect([e.code, e.reason]).toEqual(['FORMAT_SIZE_OVERFLOW', 'record-partition']);
    });

    it('max_positions 2^64 - 1 → Model (rotary table too large), without building the table', () => {
      const e = failure(patch(107, (v) => v.setBigUint64(0, (1n << 64n) - 1n, true)));
      expect([e.code, e.reason]).toEqual(['FORMAT_MODEL', 'rotary-table']);
    });

    it('a valid file whose feed_forward_width exceeds 2^53 (layers 0) → LimitExceeded (not representable as a number)', () => {
      const file = openFile(GOLDEN);
      file.decoder = { ...file.decoder, layers: 0n, feedForwardWidth: 1n << 60n };
      file.descriptors = [...file.descriptors.slice(0, 6), file.descriptors[15]!];
      file.modelParameterCount = 2;
      file.optimizerStateCount = 0;
      file.optimizerStep = 0n;
      file.selectedStep = 0n;
      file.beta1Power = 1;
      file.beta2Power = 1;
      const e = failure(buildFile(file));
      expect([e.code, e.category, e.reason]).toEqual(['FORMAT_LIMIT_EXCEEDED', 'Allocation', 'unsafe-integer']);
    });
  });

  describe('error context', () => {
    it('names the record, element index and both values of a non-finite parameter', () => {
      const file = openFile(GOLDEN);
      const rec = file.descriptors[7]!;
      const b = rec.bytes.slice();
      new DataView(b.buffer).setFloat64(8 * 3, Number.POSITIVE_INFINITY, true);
      rec.bytes = b;
      const e = failure(buildFile(file));
      expect(e).toMatchObject({ code: 'FORMAT_INVALID_PARAMETER', reason: 'non-finite-parameter', recordName: 'blocks.0.attention.query.weight', recordIndex: 7, elementIndex: 3, offset: 3066 + 24 });
      expect(e.message).toContain('expected a finite value');
    });

    it('finds the first non-finite element at every position of a record (blocks and tail)', () => {
      for (let k = 0; k < 20; k++) {
        for (const bad of [Number.NaN, Number.NEGATIVE_INFINITY]) {
          const file = openFile(GOLDEN);
          const rec = file.descriptors[5]!;
          const b = rec.bytes.slice();
          const view = new DataView(b.buffer);
          view.setFloat64(8 * k, bad, true);
          if (k + 3 < 20) view.setFloat64(8 * (k + 3), Number.POSITIVE_INFINITY, true);
          rec.bytes = b;
          expect(failure(buildFile(file))).toMatchObject({ code: 'FORMAT_INVALID_PARAMETER', recordName: 'token_embedding.weight', elementIndex: k, offset: 2874 + 8 * k });
        }
      }
    });

    it('reports the descriptor index and both offsets of a contiguity break', () => {
      const file = openFile(GOLDEN);
      file.descriptors[3]!.offsetOverride = 2875n;
      const e = failure(buildFile(file));
      expect(e).toMatchObject({ code: 'FORMAT_LAYOUT', reason: 'not-contiguous', recordIndex: 3, expected: '2872', found: '2875', field: 'descriptor[3].offset' });
    });
  });

  it('prefers a checksum mismatch over any later problem (SPEC §9.1 before §9.2)', () => {
    const b = GOLDEN.slice();
    b[171] = 9;
    expect(failure(b).code).toBe('FORMAT_CHECKSUM_MISMATCH');
    expect(failure(fixChecksum(b)).code).toBe('FORMAT_NON_CANONICAL');
  });
});
