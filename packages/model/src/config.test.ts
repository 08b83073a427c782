import { decodeCheckpoint, encodeCheckpoint, expectedParameterShapes, type CheckpointState, type DecoderConfig } from '@llmcp/format';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Decoder } from './decoder.ts';
import { FIXTURE_DECODER_CONFIG, validateDecoderConfig } from './config.ts';
import { isModelError } from './errors.ts';

const SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const U64_MAX = (1n << 64n) - 1n;

/** A valid checkpoint of `decoder` at step 0 (the bytes go through @llmcp/format, so `exact` comes from the decoder). */
function checkpoint(decoder: DecoderConfig): CheckpointState {
  const parameters = expectedParameterShapes(decoder).map((p) => ({ name: p.name, shape: [...p.shape], data: new Float64Array(p.shape.reduce((a, b) => a * b, 1)).fill(0.25) }));
  const state: CheckpointState = {
    tokenizer: { kind: 'literal', pieces: ['a', 'b', 'c', 'd', 'e'].map((s) => new TextEncoder().encode(s)) },
    decoder,
    parameters,
    optimizer: { config: { learningRate: 0.01, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 }, groups: null, step: 0n, beta1Power: 1, beta2Power: 1, moments: [] },
    selectedStep: 0n,
    samplingRngState: 7n,
  };
  return decodeCheckpoint(encodeCheckpoint(state));
}

/** A 0-layer fixture-sized configuration whose F and/or P are the given u64 values. */
function wide(fields: { feedForwardWidth?: bigint; maxPositions?: bigint }): DecoderConfig {
  return {
    ...FIXTURE_DECODER_CONFIG,
    layers: 0,
    ...(fields.feedForwardWidth === undefined ? {} : { feedForwardWidth: Number(fields.feedForwardWidth) }),
    ...(fields.maxPositions === undefined ? {} : { maxPositions: Number(fields.maxPositions) }),
    exact: fields,
  };
}

function refusal(build: () => unknown): { code: string; field: string | undefined; message: string } {
  try {
    build();
  } catch (e) {
    if (isModelError(e)) return { code: e.code, field: e.field, message: e.message };
    throw e;
  }
  throw new Error('expected the model build to be refused');
}

describe('validateDecoderConfig', () => {
  it('refuses, with MODEL_INVALID_CONFIG naming the field and its exact value, sizes above 2^53 - 1 that a valid checkpoint may hold', () => {
    for (const v of [SAFE + 1n, SAFE + 2n, 1n << 63n, U64_MAX]) {
      for (const field of ['feedForwardWidth', 'maxPositions'] as const) {
        const state = checkpoint(wide({ [field]: v }));
        expect(state.decoder.exact?.[field]).toBe(v);
        for (const build of [() => Decoder.fromCheckpoint(state), () => new Decoder(state.decoder), () => validateDecoderConfig(state.decoder)]) {
          const e = refusal(build);
          expect([e.code, e.field]).toEqual(['MODEL_INVALID_CONFIG', field]);
          expect(e.message).toContain(String(v));
        }
      }
    }
  });

  it('refuses any generated u64 above 2^53 - 1 in either field, also with a 1-layer model', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: SAFE + 1n, max: ((1n << 63n) - 1n) / 8n }), (maxPositions) => {
        const state = checkpoint({ ...FIXTURE_DECODER_CONFIG, maxPositions: Number(maxPositions), exact: { maxPositions } });
        expect(refusal(() => Decoder.fromCheckpoint(state))).toMatchObject({ code: 'MODEL_INVALID_CONFIG', field: 'maxPositions' });
      }),
      { numRuns: 20, seed: 0x64 },
    );
  });

  it('refuses a bare number above 2^53 - 1 (no exact value) the same way', () => {
    expect(refusal(() => validateDecoderConfig({ ...FIXTURE_DECODER_CONFIG, maxPositions: 2 ** 60 }))).toMatchObject({ code: 'MODEL_INVALID_CONFIG', field: 'maxPositions' });
  });

  it('builds models at the largest safe sizes: max_positions 2^53 - 1 (RoPE rows built lazily) and F 2^53 - 1 with 0 layers', () => {
    const positions = Decoder.fromCheckpoint(checkpoint({ ...FIXTURE_DECODER_CONFIG, maxPositions: Number.MAX_SAFE_INTEGER }));
    const reference = Decoder.fromCheckpoint(checkpoint(FIXTURE_DECODER_CONFIG));
    expect(positions.logits([1, 2])).toEqual(reference.logits([1, 2]));
    const hidden = Decoder.fromCheckpoint(checkpoint({ ...FIXTURE_DECODER_CONFIG, layers: 0, feedForwardWidth: Number.MAX_SAFE_INTEGER }));
    expect(hidden.logits([3]).length).toBe(5);
  });
});
