/**
 * Test helper: random *valid* checkpoint states from a seed (SplitMix64), to
 * feed round-trip properties. Covers both tokenizer kinds, step 0 and
 * step > 0 (up to 2^64 - 1), with and without groups, 0–3 layers, and
 * arbitrary finite f64 bit patterns including −0 and subnormals.
 */
import { SplitMix64 } from '../../src/splitmix64.ts';
import { expectedParameterShapes } from '../../src/parameter-layout.ts';
import type { CheckpointState, DecoderConfig, MomentState, NamedTensor, TokenizerState } from '../../src/types.ts';

export interface StateOptions {
  kind?: 'literal' | 'bpe';
  layers?: number;
  step?: bigint;
  groups?: boolean;
}

const VIEW = new DataView(new ArrayBuffer(8));

/** A finite f64 from 64 random bits (an all-ones exponent is cleared to keep it finite); sometimes ±0, ±1, subnormal. */
export function randomFinite(rng: SplitMix64, nonNegative = false): number {
  const pick = rng.nextBelow(16);
  let v: number;
  if (pick === 0) v = -0;
  else if (pick === 1) v = 0;
  else if (pick === 2) v = 5e-324;
  else if (pick < 8) v = (rng.nextUnit() - 0.5) * 2;
  else {
    VIEW.setBigUint64(0, rng.nextU64());
    if ((VIEW.getUint16(0) & 0x7ff0) === 0x7ff0) VIEW.setUint16(0, VIEW.getUint16(0) & 0xbfff);
    v = VIEW.getFloat64(0);
  }
  if (nonNegative && v < 0) v = -v;
  if (nonNegative && Object.is(v, -0) && rng.nextBelow(2) === 0) v = 0;
  return v;
}

function tensor(rng: SplitMix64, shape: readonly number[], nonNegative = false): Float64Array {
  const n = shape.reduce((a, b) => a * b, 1);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = randomFinite(rng, nonNegative);
  return out;
}

function distinctPieces(rng: SplitMix64, count: number): Uint8Array[] {
  const seen = new Set<string>();
  const out: Uint8Array[] = [];
  while (out.length < count) {
    const len = 1 + rng.nextBelow(4);
    const piece = Uint8Array.from({ length: len }, () => rng.nextBelow(256));
    const key = piece.join(',');
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(piece);
  }
  return out;
}

function bpePairs(rng: SplitMix64, merges: number): [number, number][] {
  const seen = new Set<string>();
  const out: [number, number][] = [];
  while (out.length < merges) {
    const limit = 256 + out.length;
    const pair: [number, number] = [rng.nextBelow(limit), rng.nextBelow(limit)];
    const key = pair.join(',');
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(pair);
  }
  return out;
}

/** Random names for step-0 groups (need not be parameters; may hold non-BMP characters). */
function someNames(rng: SplitMix64, count: number): string[] {
  const alphabet = ['a', 'z', '.', '_', '\uFFFD', '\u{1F600}', 'é', '0'];
  const out = new Set<string>();
  while (out.size < count) out.add(Array.from({ length: 1 + rng.nextBelow(5) }, () => alphabet[rng.nextBelow(alphabet.length)]).join(''));
  return [...out];
}

/** A random valid state. */
export function randomState(seed: bigint, options: StateOptions = {}): CheckpointState {
  const rng = new SplitMix64(seed);
  const kind = options.kind ?? (rng.nextBelow(2) === 0 ? 'literal' : 'bpe');
  const layers = options.layers ?? rng.nextBelow(4);
  const step = options.step ?? (rng.nextBelow(3) === 0 ? 0n : rng.nextBelow(2) === 0 ? BigInt(1 + rng.nextBelow(1000)) : rng.nextU64() | 1n);
  const withGroups = options.groups ?? rng.nextBelow(2) === 0;
  let tokenizer: TokenizerState;
  let vocabulary: number;
  if (kind === 'literal') {
    vocabulary = 1 + rng.nextBelow(8);
    tokenizer = { kind: 'literal', pieces: distinctPieces(rng, vocabulary) };
  } else {
    const merges = rng.nextBelow(6);
    vocabulary = 258 + merges;
    tokenizer = { kind: 'bpe', pairs: bpePairs(rng, merges) };
  }
  const heads = 1 + rng.nextBelow(3);
  const headWidth = 2 * (1 + rng.nextBelow(2));
  const decoder: DecoderConfig = {
    vocabularySize: vocabulary,
    modelWidth: heads * headWidth,
    heads,
    feedForwardWidth: 1 + rng.nextBelow(6),
    layers,
    maxPositions: 1 + rng.nextBelow(64),
    ropeBase: [10000, 500, 1.5][rng.nextBelow(3)] as number,
    rmsEpsilon: [1e-6, 0, -0, 1e-5][rng.nextBelow(4)] as number,
  };
  const parameters: NamedTensor[] = expectedParameterShapes(decoder).map((p) => ({ name: p.name, shape: [...p.shape], data: tensor(rng, p.shape) }));
  const moments: MomentState[] =
    step === 0n ? [] : parameters.map((p) => ({ name: p.name, shape: [...p.shape], first: tensor(rng, p.shape), second: tensor(rng, p.shape, true) }));
  // Encoder must sort moments itself: hand them over in model order or shuffled.
  if (rng.nextBelow(2) === 0) moments.reverse();
  let groups: { decay: string[]; noDecay: string[] } | null = null;
  if (withGroups) {
    if (step === 0n) {
      const names = someNames(rng, 1 + rng.nextBelow(4));
      const cut = rng.nextBelow(names.length + 1);
      groups = { decay: names.slice(0, cut), noDecay: names.slice(cut) };
    } else {
      const decay: string[] = [];
      const noDecay: string[] = [];
      for (const p of parameters) (p.name.endsWith('.gain') ? noDecay : decay).push(p.name);
      groups = { decay, noDecay };
    }
  }
  const learningRate = 0.001 + rng.nextUnit() * 0.1;
  const beta = (): number => (step === 0n ? 1 : rng.nextBelow(8) === 0 ? -0 : rng.nextUnit());
  return {
    tokenizer,
    decoder,
    parameters,
    optimizer: {
      config: { learningRate, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: rng.nextBelow(2) === 0 ? 0 : 0.01 },
      groups,
      step,
      beta1Power: beta(),
      beta2Power: beta(),
      moments,
    },
    selectedStep: step,
    samplingRngState: rng.nextU64(),
  };
}
