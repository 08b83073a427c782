import { describe, expect, it } from 'vitest';
import { goldenBytes } from '../test/golden.ts';
import { buildFile, fixChecksum, openFile } from '../test/helpers/raw-file.ts';
import fc from 'fast-check';
import { decodeCheckpoint } from './decode.ts';
import { encodeCheckpoint } from './encode.ts';
import { isFormatError, type FormatError } from './errors.ts';
import { inspectCheckpoint } from './inspect.ts';
import { renderInspection } from './inspect-text.ts';

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

describe('decodeCheckpoint: u64 decoder fields (SPEC §15.2)', () => {
  const SAFE = BigInt(Number.MAX_SAFE_INTEGER);
  const U64_MAX = (1n << 64n) - 1n;
  /** The largest max_positions the golden layer's rotary table (head width 2: one pair) admits (SPEC §6.1). */
  const ROTARY_MAX = ((1n << 63n) - 1n) / 8n;
  const BOUNDARIES = [SAFE, SAFE + 1n, SAFE + 2n, 1n << 63n, U64_MAX];

  /** The golden file with layers 0 (embedding + final norm), step 0, and the given decoder fields. */
  function layersZero(fields: { feedForwardWidth?: bigint; maxPositions?: bigint }): Uint8Array {
    const file = openFile(GOLDEN);
    file.decoder = { ...file.decoder, layers: 0n, ...fields };
    file.descriptors = [...file.descriptors.slice(0, 6), file.descriptors[15]!];
    file.modelParameterCount = 2;
    file.optimizerStateCount = 0;
    file.optimizerStep = 0n;
    file.selectedStep = 0n;
    file.beta1Power = 1;
    file.beta2Power = 1;
    return buildFile(file);
  }

  /** The golden file (one layer, step 8) with another max_positions. */
  function goldenWithPositions(maxPositions: bigint): Uint8Array {
    const file = openFile(GOLDEN);
    file.decoder = { ...file.decoder, maxPositions };
    return buildFile(file);
  }

  /** Decodes, checks the exact values, re-encodes to the identical bytes and renders the exact values. */
  function roundTrip(bytes: Uint8Array, expected: { feedForwardWidth: bigint; maxPositions: bigint }): void {
    const c = decodeCheckpoint(bytes);
    expect(c.decoder.feedForwardWidth).toBe(Number(expected.feedForwardWidth));
    expect(c.decoder.maxPositions).toBe(Number(expected.maxPositions));
    const exact = { ...(expected.feedForwardWidth > SAFE ? { feedForwardWidth: expected.feedForwardWidth } : {}), ...(expected.maxPositions > SAFE ? { maxPositions: expected.maxPositions } : {}) };
    if (Object.keys(exact).length === 0) expect(c.decoder).not.toHaveProperty('exact');
    else expect(c.decoder.exact).toEqual(exact);
    for (const field of ['feedForwardWidth', 'maxPositions'] as const) {
      if (expected[field] > SAFE) expect(Number.isSafeInteger(c.decoder[field])).toBe(false);
    }
    expect(encodeCheckpoint(c)).toEqual(bytes);
    const inspection = inspectCheckpoint(bytes);
    expect(inspection.verdict.valid).toBe(true);
    expect(inspection.decoder).toMatchObject(expected);
    const text = renderInspection(bytes);
    expect(text).toContain(`feed-forward ${expected.feedForwardWidth}, `);
    expect(text).toContain(`max positions ${expected.maxPositions}, `);
    expect(text).toContain('verdict: VALID');
  }

  it('accepts feed_forward_width and max_positions of a 0-layer model at 2^53 - 1, 2^53, 2^53 + 1, 2^63 and 2^64 - 1, exactly', () => {
    for (const v of BOUNDARIES) {
      roundTrip(layersZero({ feedForwardWidth: v }), { feedForwardWidth: v, maxPositions: 2n });
      roundTrip(layersZero({ maxPositions: v }), { feedForwardWidth: 4n, maxPositions: v });
      roundTrip(layersZero({ feedForwardWidth: v, maxPositions: U64_MAX - v + SAFE }), { feedForwardWidth: v, maxPositions: U64_MAX - v + SAFE });
    }
  });

  it('accepts any generated u64 above 2^53 - 1 in both fields of a 0-layer model and re-encodes it to the identical bytes', () => {
    const wide = fc.bigInt({ min: SAFE - 2n, max: U64_MAX });
    fc.assert(
      fc.property(wide, wide, (feedForwardWidth, maxPositions) => {
        roundTrip(layersZero({ feedForwardWidth, maxPositions }), { feedForwardWidth, maxPositions });
      }),
      { numRuns: 60, seed: 0x64 },
    );
  });

  it('accepts max_positions above 2^53 with layers while the rotary table is realisable, up to (2^63 - 1) / 8 entries', () => {
    for (const v of [SAFE, SAFE + 1n, SAFE + 2n, ROTARY_MAX]) roundTrip(goldenWithPositions(v), { feedForwardWidth: 4n, maxPositions: v });
  });

  it('rejects max_positions beyond the rotary-table limit with layers (2^63, 2^64 - 1) as Model, like the reference', () => {
    for (const v of [ROTARY_MAX + 1n, 1n << 63n, U64_MAX]) {
      expect([failure(goldenWithPositions(v)).code, failure(goldenWithPositions(v)).reason]).toEqual(['FORMAT_MODEL', 'rotary-table']);
    }
  });

  it('still requires max_positions >= 1 and feed_forward_width >= 1 with 0 layers, and F to match the blocks with layers', () => {
    expect(failure(layersZero({ maxPositions: 0n })).reason).toBe('invalid-max-positions');
    expect(failure(layersZero({ feedForwardWidth: 0n })).reason).toBe('invalid-feed-forward-width');
    const file = openFile(GOLDEN);
    file.decoder = { ...file.decoder, feedForwardWidth: SAFE + 1n };
    expect([failure(buildFile(file)).code, failure(buildFile(file)).reason]).toEqual(['FORMAT_MODEL', 'hidden-width-mismatch']);
  });
});
