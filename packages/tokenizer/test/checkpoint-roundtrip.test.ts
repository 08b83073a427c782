/**
 * Acceptance: a tokenizer survives an LLMCP35 checkpoint (encode → bytes →
 * decode) and its JSON form as an identical tokenizer with the same identity.
 */
import { decodeCheckpoint, encodeCheckpoint, expectedParameterShapes, type CheckpointState, type DecoderConfig, type TokenizerState } from '@llmcp/format';
import { describe, expect, it } from 'vitest';
import { BpeTokenizer } from '../src/bpe-tokenizer.ts';
import { trainBpe } from '../src/bpe-training.ts';
import { tokenizerFromJSON, tokenizerFromState } from '../src/conversions.ts';
import { LiteralTokenizer } from '../src/literal-tokenizer.ts';
import type { Tokenizer } from '../src/tokenizer.ts';

/** The smallest valid checkpoint around a tokenizer: a 0-layer decoder at optimizer step 0. */
function checkpointOf(tokenizer: Tokenizer): CheckpointState {
  const decoder: DecoderConfig = {
    vocabularySize: tokenizer.vocabularySize,
    modelWidth: 2,
    heads: 1,
    feedForwardWidth: 2,
    layers: 0,
    maxPositions: 4,
    ropeBase: 10000,
    rmsEpsilon: 1e-6,
  };
  const parameters = expectedParameterShapes(decoder).map(({ name, shape }) => {
    const size = shape.reduce((a, b) => a * b, 1);
    return { name, shape: [...shape], data: Float64Array.from({ length: size }, (_, i) => (i % 7) / 8 - 0.25) };
  });
  return {
    tokenizer: tokenizer.toState(),
    decoder,
    parameters,
    optimizer: {
      config: { learningRate: 0.01, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 },
      groups: null,
      step: 0n,
      beta1Power: 1,
      beta2Power: 1,
      moments: [],
    },
    selectedStep: 0n,
    samplingRngState: 38n,
  };
}

function throughCheckpoint(tokenizer: Tokenizer): { state: TokenizerState; bytes: Uint8Array } {
  const bytes = encodeCheckpoint(checkpointOf(tokenizer));
  return { state: decodeCheckpoint(bytes).tokenizer, bytes };
}

describe('tokenizer round trips', () => {
  it('a trained BPE tokenizer comes back from a checkpoint and from JSON identical, with the same identity', () => {
    const enc = new TextEncoder();
    const { tokenizer } = trainBpe(['At dawn, Mira carries a blue notebook to the river.', 'На рассвете Мира приносит к реке синюю тетрадь.'].map((t) => enc.encode(t)), 40);
    const { state } = throughCheckpoint(tokenizer);
    expect(state.kind).toBe('bpe');
    const fromCheckpoint = tokenizerFromState(state) as BpeTokenizer;
    expect(fromCheckpoint.pairs()).toEqual(tokenizer.pairs());
    expect(fromCheckpoint.vocabularySize).toBe(tokenizer.vocabularySize);
    expect(fromCheckpoint.identity()).toBe(tokenizer.identity());
    const fromJson = tokenizerFromJSON(JSON.stringify(fromCheckpoint));
    expect(fromJson.identity()).toBe(tokenizer.identity());
    const probe = 'Мира carries the notebook';
    expect(Array.from(fromJson.encode(probe))).toEqual(Array.from(tokenizer.encode(probe)));
    // Re-encoding the reloaded tokenizer's checkpoint reproduces the bytes.
    expect(encodeCheckpoint(checkpointOf(fromCheckpoint))).toEqual(throughCheckpoint(tokenizer).bytes);
  });

  it('a literal tokenizer (including non-UTF-8 pieces) comes back identical', () => {
    const tokenizer = LiteralTokenizer.fromPieces(['0', '1', '2', '3', '4', Uint8Array.of(0xff), Uint8Array.of(0x00, 0xfe)]);
    const fromCheckpoint = tokenizerFromState(throughCheckpoint(tokenizer).state) as LiteralTokenizer;
    expect(fromCheckpoint.pieces()).toEqual(tokenizer.pieces());
    expect(fromCheckpoint.identity()).toBe(tokenizer.identity());
    expect(tokenizerFromJSON(fromCheckpoint.toJSON()).identity()).toBe(tokenizer.identity());
  });

  it('a changed merge order with the same vocabulary size is a different tokenizer after a checkpoint round trip', () => {
    const a = BpeTokenizer.fromPairs([
      [97, 98],
      [98, 99],
      [256, 99],
    ]);
    const b = BpeTokenizer.fromPairs([
      [98, 99],
      [97, 98],
      [257, 99],
    ]);
    const reloadedA = tokenizerFromState(throughCheckpoint(a).state);
    const reloadedB = tokenizerFromState(throughCheckpoint(b).state);
    expect(reloadedA.vocabularySize).toBe(reloadedB.vocabularySize);
    expect(reloadedA.identity()).toBe(a.identity());
    expect(reloadedB.identity()).toBe(b.identity());
    expect(reloadedA.identity()).not.toBe(reloadedB.identity());
  });
});
