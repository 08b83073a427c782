import { describe, expect, it } from 'vitest';
import { goldenBytes } from '../test/golden.ts';
import { decodeCheckpoint } from './decode.ts';
import { checkpointByteSize, encodeCheckpoint } from './encode.ts';
import { isFormatError } from './errors.ts';
import { MAX_HEADER_BYTES } from './tags.ts';
import type { CheckpointState, NamedTensor } from './types.ts';

const STATE = decodeCheckpoint(goldenBytes());

function codeOf(state: CheckpointState): string {
  try {
    encodeCheckpoint(state);
    return 'ok';
  } catch (e) {
    return isFormatError(e) ? `${e.code}/${e.reason}` : (e as Error).name;
  }
}

const withParam = (i: number, p: Partial<NamedTensor>): CheckpointState => ({ ...STATE, parameters: STATE.parameters.map((q, k) => (k === i ? { ...q, ...p } : q)) });
const withOptimizer = (o: Partial<CheckpointState['optimizer']>): CheckpointState => ({ ...STATE, optimizer: { ...STATE.optimizer, ...o } });

describe('encodeCheckpoint', () => {
  it('reports an invalid state with the code the decoder would use', () => {
    const nan = STATE.parameters[2]!.data.slice();
    nan[1] = Number.NaN;
    const negative = STATE.optimizer.moments[0]!.second.slice();
    negative[0] = -1;
    expect(codeOf(withOptimizer({ config: { ...STATE.optimizer.config, learningRate: 0 } }))).toBe('FORMAT_ADAMW_CONFIG/invalid-learning-rate');
    expect(codeOf(withOptimizer({ groups: { decay: ['a', 'a'], noDecay: [] } }))).toBe('FORMAT_ADAMW_CONFIG/duplicate-group-name');
    expect(codeOf(withOptimizer({ groups: { decay: [], noDecay: [] } }))).toBe('FORMAT_ADAMW_CONFIG/empty-groups');
    expect(codeOf(withParam(2, { data: nan }))).toBe('FORMAT_INVALID_PARAMETER/non-finite-parameter');
    expect(codeOf(withParam(2, { data: new Float64Array(15) }))).toBe('FORMAT_LAYOUT/byte-length-mismatch');
    expect(codeOf(withParam(2, { name: '' }))).toBe('FORMAT_LAYOUT/empty-record-name');
    expect(codeOf(withParam(2, { name: 'x\uD800' }))).toBe('FORMAT_INVALID_UTF8/invalid-utf8');
    expect(codeOf(withParam(2, { name: 'blocks.0.attention.key.weight' }))).toBe('FORMAT_LAYOUT/duplicate-record');
    expect(codeOf(withParam(2, { name: 'blocks.0.attention.qquery.weight' }))).toBe('FORMAT_MODEL/name-mismatch');
    expect(codeOf(withOptimizer({ moments: STATE.optimizer.moments.map((m, i) => (i === 0 ? { ...m, second: negative } : m)) }))).toBe('FORMAT_ADAMW_STATE/negative-second-moment');
    expect(codeOf(withOptimizer({ moments: STATE.optimizer.moments.map((m, i) => (i === 0 ? { ...m, shape: [16] } : m)) }))).toBe('FORMAT_OPTIMIZER_SHAPE/optimizer-shape');
    expect(codeOf(withOptimizer({ moments: STATE.optimizer.moments.slice(1) }))).toBe('FORMAT_ADAMW_STATE/groups-mismatch');
    expect(codeOf({ ...withOptimizer({ moments: STATE.optimizer.moments.slice(1), groups: null }) })).toBe('FORMAT_OPTIMIZER_NAMES/optimizer-names');
    expect(codeOf({ ...STATE, decoder: { ...STATE.decoder, heads: 3 } })).toBe('FORMAT_MODEL/width-not-divisible-by-heads');
    expect(codeOf({ ...STATE, selectedStep: 9n })).toBe('FORMAT_STEP_MISMATCH/step-mismatch');
    expect(codeOf({ ...STATE, decoder: { ...STATE.decoder, vocabularySize: 6 } })).toBe('FORMAT_MODEL/embedding-vocabulary-mismatch');
    const pieces = [...(STATE.tokenizer.kind === 'literal' ? STATE.tokenizer.pieces : [])];
    expect(codeOf({ ...STATE, tokenizer: { kind: 'literal', pieces: [...pieces, Uint8Array.of(9)] } })).toBe('FORMAT_VOCABULARY_MISMATCH/decoder-vocabulary');
    expect(codeOf({ ...STATE, tokenizer: { kind: 'literal', pieces: [pieces[0]!, pieces[0]!, pieces[2]!, pieces[3]!, pieces[4]!] } })).toBe('FORMAT_TOKENIZER/repeated-spelling');
    expect(codeOf({ ...STATE, tokenizer: { kind: 'literal', pieces: [new Uint8Array(0), pieces[1]!, pieces[2]!, pieces[3]!, pieces[4]!] } })).toBe('FORMAT_LAYOUT/literal-record-shape');
    expect(codeOf({ ...STATE, tokenizer: { kind: 'literal', pieces: [] } })).toBe('FORMAT_TOKENIZER/empty-vocabulary');
    expect(codeOf({ ...STATE, tokenizer: { kind: 'bpe', pairs: [[256, 1]] } })).toBe('FORMAT_BPE/unknown-operand');
    expect(codeOf({ ...STATE, selectedStep: 1n << 64n, optimizer: { ...STATE.optimizer, step: 1n << 64n } })).toBe('FORMAT_SIZE_OVERFLOW/u64-field');
  });

  it('refuses a state whose header would exceed MAX_HEADER_BYTES, before any other rule, as the decoder does', () => {
    const long = 'x'.repeat(MAX_HEADER_BYTES);
    expect(codeOf(withOptimizer({ groups: { decay: [long], noDecay: [] } }))).toBe('FORMAT_LIMIT_EXCEEDED/header-too-large');
    // The decoder checks header_bytes with the fixed header, before the AdamW configuration.
    expect(codeOf(withOptimizer({ groups: { decay: [long], noDecay: [] }, config: { ...STATE.optimizer.config, learningRate: 0 } }))).toBe('FORMAT_LIMIT_EXCEEDED/header-too-large');
    expect(checkpointByteSize(withOptimizer({ groups: { decay: [long], noDecay: [] } }))).toBeGreaterThan(MAX_HEADER_BYTES);
  });

  it('throws TypeError / RangeError for values that are not representable at all', () => {
    expect(codeOf(withParam(1, { data: [1, 2, 3, 4] as unknown as Float64Array }))).toBe('TypeError');
    expect(codeOf({ ...STATE, selectedStep: 8 as unknown as bigint })).toBe('TypeError');
    expect(codeOf({ ...STATE, selectedStep: -1n })).toBe('RangeError');
    expect(codeOf({ ...STATE, decoder: { ...STATE.decoder, modelWidth: 4.5 } })).toBe('RangeError');
    expect(codeOf({ ...STATE, tokenizer: { kind: 'bpe', pairs: [[-1, 2]] } })).toBe('RangeError');
    expect(codeOf({ ...STATE, tokenizer: { kind: 'words' } as unknown as CheckpointState['tokenizer'] })).toBe('TypeError');
  });

  it('does not reorder or modify the caller’s arrays', () => {
    const moments = [...STATE.optimizer.moments].reverse();
    const groups = { decay: [...STATE.optimizer.groups!.decay].reverse(), noDecay: [...STATE.optimizer.groups!.noDecay] };
    const names = moments.map((m) => m.name);
    encodeCheckpoint(withOptimizer({ moments, groups }));
    expect(moments.map((m) => m.name)).toEqual(names);
    expect(groups.decay[0]).toBe('token_embedding.weight');
  });

  it('accepts tensors that are views into a larger buffer at unaligned positions of the file', () => {
    const big = new Float64Array(100);
    const view = big.subarray(37, 37 + 4);
    view.set(STATE.parameters[1]!.data);
    const bytes = encodeCheckpoint(withParam(1, { data: view }));
    expect(bytes).toEqual(goldenBytes());
  });
});

describe('encodeCheckpoint: u64 decoder fields (SPEC §15.2)', () => {
  const SAFE = BigInt(Number.MAX_SAFE_INTEGER);
  const U64_MAX = (1n << 64n) - 1n;
  /** The golden state with 0 layers at step 0 (only the embedding and the final norm). */
  const ZERO: CheckpointState = {
    ...STATE,
    decoder: { ...STATE.decoder, layers: 0 },
    parameters: [STATE.parameters[0]!, STATE.parameters[STATE.parameters.length - 1]!],
    optimizer: { ...STATE.optimizer, groups: null, step: 0n, beta1Power: 1, beta2Power: 1, moments: [] },
    selectedStep: 0n,
  };
  const withExact = (exact: { feedForwardWidth?: bigint; maxPositions?: bigint }): CheckpointState => ({
    ...ZERO,
    decoder: {
      ...ZERO.decoder,
      ...(exact.feedForwardWidth === undefined ? {} : { feedForwardWidth: Number(exact.feedForwardWidth) }),
      ...(exact.maxPositions === undefined ? {} : { maxPositions: Number(exact.maxPositions) }),
      exact,
    },
  });
  const u64At = (bytes: Uint8Array, offset: number): bigint => new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(offset, true);

  it('writes the exact value of `exact` (offsets 91 and 107) and decodes it back', () => {
    for (const v of [SAFE + 1n, SAFE + 2n, 1n << 63n, U64_MAX]) {
      const bytes = encodeCheckpoint(withExact({ feedForwardWidth: v, maxPositions: U64_MAX - v + SAFE + 1n }));
      expect([u64At(bytes, 91), u64At(bytes, 107)]).toEqual([v, U64_MAX - v + SAFE + 1n]);
      expect(decodeCheckpoint(bytes).decoder.exact).toEqual({ feedForwardWidth: v, maxPositions: U64_MAX - v + SAFE + 1n });
    }
  });

  it('refuses an `exact` that disagrees with its number field (a stale spread) or lies outside [2^53, 2^64 - 1] with RangeError', () => {
    const stale = { ...ZERO, decoder: { ...withExact({ maxPositions: 1n << 60n }).decoder, maxPositions: 8 } };
    expect(() => encodeCheckpoint(stale)).toThrow(RangeError);
    expect(() => encodeCheckpoint({ ...ZERO, decoder: { ...ZERO.decoder, exact: { maxPositions: SAFE } } })).toThrow(RangeError);
    expect(() => encodeCheckpoint({ ...ZERO, decoder: { ...ZERO.decoder, maxPositions: Number(U64_MAX + 1n), exact: { maxPositions: U64_MAX + 1n } } })).toThrow(RangeError);
    expect(() => encodeCheckpoint({ ...ZERO, decoder: { ...ZERO.decoder, maxPositions: 2 ** 53 } })).toThrow(RangeError);
    expect(() => encodeCheckpoint({ ...ZERO, decoder: { ...ZERO.decoder, exact: { maxPositions: 5 as unknown as bigint } } })).toThrow(TypeError);
  });

  it('validates an exact max_positions with the decoder rules (rotary table of a layer)', () => {
    const wide = { ...STATE, decoder: { ...STATE.decoder, maxPositions: 2 ** 63, exact: { maxPositions: 1n << 63n } } };
    expect(codeOf(wide)).toBe('FORMAT_MODEL/rotary-table');
  });
});

describe('checkpointByteSize', () => {
  it('equals the encoded length without encoding', () => {
    expect(checkpointByteSize(STATE)).toBe(6330);
  });
});
