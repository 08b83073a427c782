/**
 * The merge-table rules have one home, `bpeMergeTableProblem` of
 * `@llmcp/format`; the checkpoint decoder (FORMAT_BPE) and the tokenizer
 * (`BpeTokenizer.fromPairs`, TokenizerError) both report its first problem.
 * Checked here on generated hostile tables — operands at and past each rank's
 * bound, u32 extremes, repeated pairs — through the three paths: the rule
 * itself, the tokenizer, and a whole checkpoint file whose BPE record holds
 * the table.
 */
import { bpeMergeTableProblem, decodeCheckpoint, encodeCheckpoint, expectedParameterShapes, isFormatError, type BpeMergeTableProblem, type CheckpointState, type DecoderConfig } from '@llmcp/format';
import { BpeTokenizer, isTokenizerError } from '@llmcp/tokenizer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseRawCheckpoint, serializeRawCheckpoint } from '../src/index.ts';

/** An outcome both sides can be compared on: accepted, or the problem's reason and where. */
type Outcome = { readonly ok: true } | { readonly ok: false; readonly reason: 'unknown-operand' | 'duplicate-pair'; readonly rank: number; readonly id?: number };

function fromRule(p: BpeMergeTableProblem | null): Outcome {
  if (p === null) return { ok: true };
  if (p.reason === 'layout-overflow') throw new Error('not generated');
  return p.reason === 'unknown-operand' ? { ok: false, reason: p.reason, rank: p.rank, id: p.id } : { ok: false, reason: p.reason, rank: p.rank };
}

function fromTokenizer(flat: Uint32Array): Outcome {
  try {
    BpeTokenizer.fromPairs(flat);
    return { ok: true };
  } catch (e) {
    if (!isTokenizerError(e)) throw e;
    if (e.code === 'TOKENIZER_UNKNOWN_MERGE_OPERAND') return { ok: false, reason: 'unknown-operand', rank: e.rank as number, id: e.tokenId as number };
    if (e.code === 'TOKENIZER_DUPLICATE_MERGE_PAIR') return { ok: false, reason: 'duplicate-pair', rank: e.rank as number };
    throw e;
  }
}

function fromDecoder(bytes: Uint8Array): Outcome {
  try {
    decodeCheckpoint(bytes);
    return { ok: true };
  } catch (e) {
    if (!isFormatError(e) || e.code !== 'FORMAT_BPE') throw e;
    const rank = e.elementIndex as number;
    return e.reason === 'unknown-operand' ? { ok: false, reason: 'unknown-operand', rank, id: Number(e.found) } : { ok: false, reason: e.reason as 'duplicate-pair', rank };
  }
}

/** The smallest valid checkpoint around a BPE tokenizer of `m` merges: a 0-layer decoder at step 0. */
function checkpointWithMerges(m: number): CheckpointState {
  const tokenizer = BpeTokenizer.fromPairs(Array.from({ length: m }, (_, r) => [97, r] as const));
  const decoder: DecoderConfig = { vocabularySize: tokenizer.vocabularySize, modelWidth: 2, heads: 1, feedForwardWidth: 2, layers: 0, maxPositions: 4, ropeBase: 10000, rmsEpsilon: 1e-6 };
  const parameters = expectedParameterShapes(decoder).map(({ name, shape }) => ({ name, shape: [...shape], data: new Float64Array(shape.reduce((a, b) => a * b, 1)).fill(0.125) }));
  return {
    tokenizer: tokenizer.toState(),
    decoder,
    parameters,
    optimizer: { config: { learningRate: 0.01, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0 }, groups: null, step: 0n, beta1Power: 1, beta2Power: 1, moments: [] },
    selectedStep: 0n,
    samplingRngState: 38n,
  };
}

const templates = new Map<number, Uint8Array>();

/** A checkpoint file whose BPE record holds `flat` (everything else valid, checksum recomputed). */
function fileWithTable(flat: Uint32Array): Uint8Array {
  const m = flat.length / 2;
  let template = templates.get(m);
  if (template === undefined) {
    template = encodeCheckpoint(checkpointWithMerges(m));
    templates.set(m, template);
  }
  const raw = parseRawCheckpoint(template);
  const record = raw.records.find((r) => r.roleTag === 2);
  if (record === undefined) throw new Error('no BPE record');
  const bytes = new Uint8Array(8 * m);
  const view = new DataView(bytes.buffer);
  flat.forEach((id, i) => view.setUint32(4 * i, id, true));
  record.bytes = bytes;
  return serializeRawCheckpoint(raw);
}

/** A hostile table of `m` merges: operands mostly at, just below or past each rank's bound, a few u32 extremes, and many repeats. */
const hostileTable = (maxMerges: number): fc.Arbitrary<Uint32Array> =>
  fc.integer({ min: 1, max: maxMerges }).chain((m) => {
    const operand = fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(97, 98, 256, 257) },
      { weight: 4, arbitrary: fc.integer({ min: 250, max: 256 + m + 1 }) },
      { weight: 1, arbitrary: fc.integer({ min: 0, max: 255 }) },
      { weight: 1, arbitrary: fc.constantFrom(0x1fffff, 0x200000, 0x7fffffff, 0xfffffffe, 0xffffffff) },
    );
    const pair = fc.tuple(operand, operand);
    // Repeats: every rank may copy an earlier rank's pair.
    return fc.array(fc.tuple(pair, fc.nat()), { minLength: m, maxLength: m }).map((ranks) => {
      const pairs: [number, number][] = [];
      for (const [[l, r], copy] of ranks) pairs.push(pairs.length > 0 && copy % 3 === 0 ? ([...(pairs[copy % pairs.length] as [number, number])] as [number, number]) : [l, r]);
      return Uint32Array.from(pairs.flat());
    });
  });

describe('BPE merge-table rules: one home', () => {
  it('the tokenizer reports the rule\'s first problem on generated hostile tables', () => {
    fc.assert(
      fc.property(hostileTable(40), (flat) => {
        expect(fromTokenizer(flat)).toEqual(fromRule(bpeMergeTableProblem(flat)));
      }),
      { numRuns: 400 },
    );
  });

  it('the checkpoint decoder reports the same problem at the same rank as the tokenizer', () => {
    const seen = { accepted: 0, 'unknown-operand': 0, 'duplicate-pair': 0 };
    fc.assert(
      fc.property(hostileTable(6), (flat) => {
        const decoded = fromDecoder(fileWithTable(flat));
        expect(decoded).toEqual(fromTokenizer(flat));
        seen[decoded.ok ? 'accepted' : decoded.reason] += 1;
      }),
      { numRuns: 300 },
    );
    // The generator reaches every outcome (about 10%, 80% and 10% of the runs).
    for (const [outcome, n] of Object.entries(seen)) expect(n, outcome).toBeGreaterThan(5);
  });

  it('agrees on the boundaries: an operand equal to 256 + r is refused, one below it accepted, left before right', () => {
    const cases: [number[], Outcome][] = [
      [[255, 255], { ok: true }],
      [[256, 0], { ok: false, reason: 'unknown-operand', rank: 0, id: 256 }],
      [[0, 256], { ok: false, reason: 'unknown-operand', rank: 0, id: 256 }],
      [[300, 0xffffffff], { ok: false, reason: 'unknown-operand', rank: 0, id: 300 }],
      [[97, 98, 256, 256], { ok: true }],
      [[97, 98, 257, 0], { ok: false, reason: 'unknown-operand', rank: 1, id: 257 }],
      [[97, 98, 98, 97, 97, 98], { ok: false, reason: 'duplicate-pair', rank: 2 }],
    ];
    for (const [pairs, expected] of cases) {
      const flat = Uint32Array.from(pairs);
      expect(fromRule(bpeMergeTableProblem(flat)), String(pairs)).toEqual(expected);
      expect(fromTokenizer(flat), String(pairs)).toEqual(expected);
      expect(fromDecoder(fileWithTable(flat)), String(pairs)).toEqual(expected);
    }
  });
});
