/**
 * Randomly generated valid states — both
 * tokenizer kinds, step 0 and step > 0, with and without groups, 0–3 layers —
 * encode to bytes that decode to the same state and re-encode identically.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeCheckpoint, encodeCheckpoint, sortByteWise, compareByteWise, checkpointByteSize, type CheckpointState } from '../src/index.ts';
import { expectSameBytes } from './helpers/bytes.ts';
import { randomState } from './helpers/random-state.ts';

function bitsOf(values: Float64Array): string[] {
  const view = new DataView(values.buffer, values.byteOffset, values.byteLength);
  return Array.from({ length: values.length }, (_, i) => view.getBigUint64(8 * i, true).toString(16));
}

/** Compares a decoded state with the original, bit for bit; names the first differing tensor and index. */
function expectSameState(actual: CheckpointState, expected: CheckpointState): void {
  expect(actual.tokenizer.kind).toBe(expected.tokenizer.kind);
  if (actual.tokenizer.kind === 'literal' && expected.tokenizer.kind === 'literal') {
    expect(actual.tokenizer.pieces.map((p) => Array.from(p))).toEqual(expected.tokenizer.pieces.map((p) => Array.from(p)));
  }
  if (actual.tokenizer.kind === 'bpe' && expected.tokenizer.kind === 'bpe') expect(actual.tokenizer.pairs).toEqual(expected.tokenizer.pairs);
  expect(actual.decoder).toEqual(expected.decoder);
  expect(Object.is(actual.decoder.rmsEpsilon, expected.decoder.rmsEpsilon)).toBe(true);
  expect(actual.selectedStep).toBe(expected.selectedStep);
  expect(actual.samplingRngState).toBe(expected.samplingRngState);
  const o = actual.optimizer;
  const e = expected.optimizer;
  expect(o.config).toEqual(e.config);
  expect(o.step).toBe(e.step);
  expect(Object.is(o.beta1Power, e.beta1Power) && Object.is(o.beta2Power, e.beta2Power)).toBe(true);
  expect(o.groups).toEqual(e.groups === null ? null : { decay: sortByteWise(e.groups.decay), noDecay: sortByteWise(e.groups.noDecay) });
  const tensors = (s: CheckpointState): [string, Float64Array][] => [
    ...s.parameters.map((p): [string, Float64Array] => [`parameter ${p.name}`, p.data]),
    ...[...s.optimizer.moments].sort((a, b) => compareByteWise(a.name, b.name)).flatMap((m): [string, Float64Array][] => [[`m ${m.name}`, m.first], [`v ${m.name}`, m.second]]),
  ];
  const a = tensors(actual);
  const b = tensors(expected);
  expect(a.map(([n]) => n)).toEqual(b.map(([n]) => n));
  a.forEach(([name, values], t) => {
    const x = bitsOf(values);
    const y = bitsOf((b[t] as [string, Float64Array])[1]);
    const i = x.findIndex((bits, k) => bits !== y[k]);
    expect(i, `${name}: first differing index ${i}, bits ${x[i]} vs ${y[i]}`).toBe(-1);
    expect(x.length).toBe(y.length);
  });
}

const seedArb = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });

describe('encodeCheckpoint / decodeCheckpoint round trip', () => {
  it('is byte-stable and bit-exact for 300 random valid states of every kind', () => {
    fc.assert(
      fc.property(seedArb, (seed) => {
        const state = randomState(seed);
        const bytes = encodeCheckpoint(state);
        expect(bytes.length).toBe(checkpointByteSize(state));
        const decoded = decodeCheckpoint(bytes);
        expectSameState(decoded, state);
        const again = encodeCheckpoint(decoded);
        expectSameBytes(again, bytes);
      }),
      { numRuns: 300, seed: 42 },
    );
  });

  for (const kind of ['literal', 'bpe'] as const) {
    for (const step of [0n, 1n, 0xffffffffffffffffn]) {
      for (const groups of [false, true]) {
        for (const layers of [0, 1, 3]) {
          it(`round-trips a ${kind} state at step ${step}, ${groups ? 'with' : 'without'} groups, ${layers} layer(s)`, () => {
            const state = randomState(BigInt(layers * 7 + Number(step % 5n) * 3 + (groups ? 1 : 0)) + 99n, { kind, step, groups, layers });
            const bytes = encodeCheckpoint(state);
            const decoded = decodeCheckpoint(bytes);
            expectSameState(decoded, state);
            expectSameBytes(encodeCheckpoint(decoded), bytes);
            expect(decoded.layout.tokenizerKindName).toBe(kind === 'literal' ? 'literal-u32' : 'byte-bpe');
            expect(decoded.layout.optimizerStateCount).toBe(step === 0n ? 0 : decoded.parameters.length);
          });
        }
      }
    }
  }

  it('encodes the same state twice to identical bytes', () => {
    const state = randomState(7n, { kind: 'bpe', step: 3n, groups: true, layers: 2 });
    expectSameBytes(encodeCheckpoint(state), encodeCheckpoint(state));
  });
});
