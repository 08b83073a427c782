/**
 * ../SPEC.md §14 "Pitfalls for reimplementers": one test per pitfall, plus the
 * byte-level BPE and step-0 round trips of acceptance point 4.
 */
import { describe, expect, it } from 'vitest';
import {
  decodeCheckpoint,
  encodeCheckpoint,
  expectedParameterShapes,
  fnv1a64,
  isFormatError,
  tokenizerVocabularySize,
  type CheckpointState,
  type FormatErrorCode,
} from '../src/index.ts';
import { expectSameBytes } from './helpers/bytes.ts';
import { buildFile, f64Bytes, fixChecksum, openFile, withF64 } from './helpers/raw-file.ts';
import { goldenBytes } from './golden.ts';

const GOLDEN = goldenBytes();
const STATE = decodeCheckpoint(GOLDEN);

function codeOf(fn: () => unknown): FormatErrorCode | 'ok' {
  try {
    fn();
    return 'ok';
  } catch (e) {
    if (isFormatError(e)) return e.code;
    throw e;
  }
}

function stepZero(state: CheckpointState): CheckpointState {
  return { ...state, selectedStep: 0n, optimizer: { ...state.optimizer, step: 0n, beta1Power: 1, beta2Power: 1, moments: [] } };
}

function bpeState(pairs: [number, number][]): CheckpointState {
  const v = 258 + pairs.length;
  const zero = stepZero(STATE);
  const parameters = zero.parameters.map((p, i) => (i === 0 ? { name: p.name, shape: [v, 4], data: Float64Array.from({ length: v * 4 }, (_, k) => Math.cos(k)) } : p));
  return { ...zero, tokenizer: { kind: 'bpe', pairs }, decoder: { ...zero.decoder, vocabularySize: v }, parameters };
}

describe('SPEC §14 pitfalls', () => {
  it('1. optimizer records are sorted byte-wise by name, first/second moments interleaved', () => {
    const modelOrder = STATE.parameters.map((p) => STATE.optimizer.moments.find((m) => m.name === p.name)!);
    expectSameBytes(encodeCheckpoint({ ...STATE, optimizer: { ...STATE.optimizer, moments: modelOrder } }), GOLDEN);
    const optimizer = STATE.layout.descriptors.slice(16);
    expect(optimizer.map((d) => d.roleTag)).toEqual(Array.from({ length: 22 }, (_, i) => (i % 2 === 0 ? 4 : 5)));
    expect(optimizer.filter((d) => d.roleTag === 4).map((d) => d.name)).toEqual([
      'blocks.0.attention.key.weight',
      'blocks.0.attention.output.weight',
      'blocks.0.attention.query.weight',
      'blocks.0.attention.value.weight',
      'blocks.0.attention_norm.gain',
      'blocks.0.ffn.down.weight',
      'blocks.0.ffn.gate.weight',
      'blocks.0.ffn.up.weight',
      'blocks.0.ffn_norm.gain',
      'final_norm.gain',
      'token_embedding.weight',
    ]);
  });

  it('2. parameter-group lists are written sorted whatever order the caller gives', () => {
    const groups = STATE.optimizer.groups!;
    const shuffled = { decay: [...groups.decay].reverse(), noDecay: [groups.noDecay[1]!, groups.noDecay[2]!, groups.noDecay[0]!] };
    expectSameBytes(encodeCheckpoint({ ...STATE, optimizer: { ...STATE.optimizer, groups: shuffled } }), GOLDEN);
  });

  it('3. the checksum covers the whole file with its own field zeroed, stored little-endian', () => {
    expect(STATE.layout.checksum).toBe(0x2b8b6097eaed6a91n);
    expect(fnv1a64(GOLDEN)).toBe(0x08bdaa2e0466e840n); // the plain hash is not the checksum
    expect(Array.from(GOLDEN.subarray(30, 38))).toEqual([0x91, 0x6a, 0xed, 0xea, 0x97, 0x60, 0x8b, 0x2b]);
    const lastFlipped = GOLDEN.slice();
    lastFlipped[6329] = (lastFlipped[6329] as number) ^ 1;
    expect(codeOf(() => decodeCheckpoint(lastFlipped))).toBe('FORMAT_CHECKSUM_MISMATCH');
  });

  it('4. header_bytes includes the 38-byte fixed header (208 + groups + descriptor entries)', () => {
    const entries = STATE.layout.descriptors.reduce((n, d) => n + d.entryLength, 0);
    expect(entries).toBe(2329);
    expect(STATE.layout.headerBytes).toBe(208 + 332 + entries);
    expect(STATE.layout.descriptors[0]!.offset).toBe(2869);
  });

  it('5. the endian marker reads 0x01020304 and is stored as 04 03 02 01', () => {
    expect(Array.from(GOLDEN.subarray(10, 14))).toEqual([4, 3, 2, 1]);
    const big = GOLDEN.slice();
    big.set([1, 2, 3, 4], 10);
    try {
      decodeCheckpoint(fixChecksum(big));
      expect.unreachable();
    } catch (e) {
      expect(isFormatError(e) && e.code).toBe('FORMAT_UNSUPPORTED_ENDIANNESS');
      expect(isFormatError(e) && e.found).toBe('0x04030201');
    }
  });

  it('6. every u64 is a BigInt: RNG state and step above 2^53 survive exactly', () => {
    expect(STATE.samplingRngState).toBe(0x9e3779b97f4a7c38n);
    const s = { ...STATE, selectedStep: 0xfffffffffffffffen, samplingRngState: 0xffffffffffffffffn, optimizer: { ...STATE.optimizer, step: 0xfffffffffffffffen } };
    const back = decodeCheckpoint(encodeCheckpoint(s));
    expect([back.selectedStep, back.optimizer.step, back.samplingRngState]).toEqual([0xfffffffffffffffen, 0xfffffffffffffffen, 0xffffffffffffffffn]);
  });

  it('7. payload f64 values are unaligned on disk (first at odd offset 2874) and decoded exactly', () => {
    expect(STATE.layout.descriptors[5]!.offset).toBe(2874);
    expect(STATE.parameters[0]!.data[0]).toBe(-0.44815663836203995);
    expect(STATE.parameters[0]!.data.byteOffset % 8).toBe(0);
  });

  it('8. f64 bit patterns are preserved, including -0 and subnormals', () => {
    const file = openFile(GOLDEN);
    const rec = file.descriptors[6]!;
    rec.bytes = withF64(withF64(rec.bytes, 0, -0), 1, 5e-324);
    const decoded = decodeCheckpoint(buildFile(file));
    expect(Object.is(decoded.parameters[1]!.data[0], -0)).toBe(true);
    expect(decoded.parameters[1]!.data[1]).toBe(5e-324);
    expectSameBytes(encodeCheckpoint(decoded), buildFile(file));
  });

  it('9. step 0 means powers of exactly 1.0 and no optimizer records; step > 0 needs powers in [0, 1) and moments', () => {
    const zero = stepZero(STATE);
    const bytes = encodeCheckpoint(zero);
    const decoded = decodeCheckpoint(bytes);
    expect(decoded.layout.descriptors.some((d) => d.roleTag === 4 || d.roleTag === 5)).toBe(false);
    expect(decoded.layout.optimizerStateCount).toBe(0);
    expect(codeOf(() => encodeCheckpoint({ ...zero, optimizer: { ...zero.optimizer, beta1Power: 0.9999999999999999 } }))).toBe('FORMAT_ADAMW_STATE');
    expect(codeOf(() => encodeCheckpoint({ ...STATE, optimizer: { ...STATE.optimizer, beta2Power: 1 } }))).toBe('FORMAT_ADAMW_STATE');
    expect(codeOf(() => encodeCheckpoint({ ...STATE, optimizer: { ...STATE.optimizer, moments: [] } }))).toBe('FORMAT_ADAMW_STATE');
  });

  it('10. literal record names are decimal ids; the BPE record is "training-pairs" even with no merges', () => {
    const pieces = Array.from({ length: 11 }, (_, i) => new TextEncoder().encode(`t${i}`));
    const zero = stepZero(STATE);
    const eleven = {
      ...zero,
      tokenizer: { kind: 'literal' as const, pieces },
      decoder: { ...zero.decoder, vocabularySize: 11 },
      parameters: zero.parameters.map((p, i) => (i === 0 ? { name: p.name, shape: [11, 4], data: new Float64Array(44).fill(0.5) } : p)),
    };
    const literal = decodeCheckpoint(encodeCheckpoint(eleven));
    expect(literal.layout.descriptors.slice(0, 11).map((d) => d.name)).toEqual(['0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '10']);
    const bpe = decodeCheckpoint(encodeCheckpoint(bpeState([])));
    expect(bpe.layout.descriptors[0]).toMatchObject({ name: 'training-pairs', roleTag: 2, dtype: 'u32', shape: [0, 2], byteLength: 0 });
    expect(bpe.layout.tokenizerVocabulary).toBe(258);
  });

  it('11. a BPE vocabulary is 258 + merges and pairs stay in the un-shifted training id space', () => {
    const state = bpeState([
      [97, 98],
      [256, 99],
    ]);
    const bytes = encodeCheckpoint(state);
    const decoded = decodeCheckpoint(bytes);
    expect(decoded.tokenizer).toEqual({ kind: 'bpe', pairs: [[97, 98], [256, 99]] });
    expect(tokenizerVocabularySize(decoded.tokenizer)).toBe(260);
    expect(decoded.layout.tokenizerVocabulary).toBe(260);
    expectSameBytes(encodeCheckpoint(decoded), bytes);
    const view = new DataView(bytes.buffer, bytes.byteOffset + decoded.layout.descriptors[0]!.offset);
    expect([view.getUint32(0, true), view.getUint32(4, true), view.getUint32(8, true), view.getUint32(12, true)]).toEqual([97, 98, 256, 99]);
  });

  it('12. linear weights are [input, output]: the down projection is [F, D]', () => {
    const shapes = expectedParameterShapes({ ...STATE.decoder, feedForwardWidth: 6 });
    expect(shapes.find((s) => s.name === 'blocks.0.ffn.gate.weight')!.shape).toEqual([4, 6]);
    expect(shapes.find((s) => s.name === 'blocks.0.ffn.down.weight')!.shape).toEqual([6, 4]);
    const zero = stepZero(STATE);
    const wide = { ...zero, decoder: { ...zero.decoder, feedForwardWidth: 6 }, parameters: shapes.map((s) => ({ name: s.name, shape: [...s.shape], data: new Float64Array(s.shape.reduce((a, b) => a * b, 1)).fill(0.25) })) };
    expect(decodeCheckpoint(encodeCheckpoint(wide)).parameters[9]!.shape).toEqual([6, 4]);
    const wrong = { ...wide, parameters: wide.parameters.map((p) => (p.name === 'blocks.0.ffn.down.weight' ? { ...p, shape: [4, 6] } : p)) };
    expect(codeOf(() => encodeCheckpoint(wrong))).toBe('FORMAT_MODEL');
  });

  it('13. validation order: checksum first, AdamW config while parsing the header, decoder config only during model validation', () => {
    const kind3 = GOLDEN.slice();
    kind3[58] = 3;
    expect(codeOf(() => decodeCheckpoint(kind3))).toBe('FORMAT_CHECKSUM_MISMATCH');
    expect(codeOf(() => decodeCheckpoint(fixChecksum(kind3)))).toBe('FORMAT_UNKNOWN_TOKENIZER_KIND');

    const lrAndRole = openFile(GOLDEN);
    lrAndRole.adamw.learningRate = 0;
    lrAndRole.descriptors[5]!.roleTag = 6;
    expect(codeOf(() => decodeCheckpoint(buildFile(lrAndRole)))).toBe('FORMAT_ADAMW_CONFIG');

    const headsAndNan = openFile(GOLDEN);
    headsAndNan.decoder = { ...headsAndNan.decoder, heads: 3n };
    headsAndNan.descriptors[6]!.bytes = withF64(headsAndNan.descriptors[6]!.bytes, 0, Number.NaN);
    expect(codeOf(() => decodeCheckpoint(buildFile(headsAndNan)))).toBe('FORMAT_INVALID_PARAMETER');

    const vocab = openFile(GOLDEN);
    vocab.decoder = { ...vocab.decoder, vocabularySize: 6n };
    expect(codeOf(() => decodeCheckpoint(buildFile(vocab)))).toBe('FORMAT_MODEL');
  });

  it('14. decoding ends with a canonical re-encode: unsorted optimizer records or group lists are rejected', () => {
    const unsortedGroups = openFile(GOLDEN);
    unsortedGroups.groups!.decay.reverse();
    expect(codeOf(() => decodeCheckpoint(buildFile(unsortedGroups)))).toBe('FORMAT_NON_CANONICAL');
    const modelOrder = openFile(GOLDEN);
    const moments = modelOrder.descriptors.splice(16);
    const names = modelOrder.descriptors.slice(5, 16).map((d) => d.name);
    for (const name of names) modelOrder.descriptors.push(...moments.filter((d) => d.name === name));
    const bytes = buildFile(modelOrder);
    expect(codeOf(() => decodeCheckpoint(bytes))).toBe('FORMAT_NON_CANONICAL');
    // the same content, canonically ordered, is the golden file
    expectSameBytes(buildFile(openFile(GOLDEN)), GOLDEN);
  });
});

describe('acceptance 4: byte-level BPE and step-0 checkpoints', () => {
  it('round-trips a byte-level BPE checkpoint with 40 merges at step 3', () => {
    const pairs: [number, number][] = Array.from({ length: 40 }, (_, r) => [(r * 37) % (256 + r), (r * 11 + 5) % (256 + r)]);
    const base = bpeState(pairs);
    const moments = base.parameters.map((p) => ({ name: p.name, shape: p.shape, first: p.data.map((x) => x / 10), second: p.data.map((x) => x * x) }));
    const state: CheckpointState = { ...base, selectedStep: 3n, optimizer: { ...base.optimizer, step: 3n, beta1Power: 0.729, beta2Power: 0.997002999, moments } };
    const bytes = encodeCheckpoint(state);
    const decoded = decodeCheckpoint(bytes);
    expect(decoded.layout.tokenizerKindName).toBe('byte-bpe');
    expect(decoded.tokenizer.kind === 'bpe' && decoded.tokenizer.pairs.length).toBe(40);
    expect(decoded.decoder.vocabularySize).toBe(298);
    expectSameBytes(encodeCheckpoint(decoded), bytes);
  });

  it('round-trips a step-0 checkpoint (no optimizer records, powers exactly 1.0)', () => {
    const bytes = encodeCheckpoint(stepZero(STATE));
    const decoded = decodeCheckpoint(bytes);
    expect(decoded.optimizer.step).toBe(0n);
    expect(decoded.optimizer.moments).toEqual([]);
    expect([decoded.optimizer.beta1Power, decoded.optimizer.beta2Power]).toEqual([1, 1]);
    expect(decoded.layout.descriptorCount).toBe(16);
    expectSameBytes(encodeCheckpoint(decoded), bytes);
  });

  it('keeps f64 payloads identical to the golden records (parameters in model order)', () => {
    expect(f64Bytes(Array.from(STATE.parameters[0]!.data))).toEqual(GOLDEN.slice(2874, 3034));
  });
});
