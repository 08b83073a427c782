/**
 * The key/value cache (ch37–ch38): cached logits have the bits of the
 * complete-prefix forward, generation is unchanged, the cache's errors leave
 * it unchanged, and its work counters reproduce the reference's figures.
 */
import { readFileSync } from 'node:fs';
import { decodeCheckpoint, SplitMix64, type DecoderConfig } from '@llmcp/format';
import { describe, expect, it } from 'vitest';
import { Decoder, FIXTURE_DECODER_CONFIG, generate, isModelError, KvCache, type SamplingMode } from '../src/index.ts';
import { attentionForward, linearForward, ropeForward, ropeTables } from '../src/reference/layers.ts';
import { matrix, rowsOf } from '../src/reference/matrix.ts';
import { KERNEL_SETS } from './helpers/kernel-sets.ts';

const GOLDEN = new URL('../../conformance/fixtures/golden-6330.llmcp', import.meta.url);

function goldenModel(): { model: Decoder; rngState: bigint; pieces: readonly Uint8Array[] } {
  const state = decodeCheckpoint(new Uint8Array(readFileSync(GOLDEN)));
  const pieces = state.tokenizer.kind === 'literal' ? state.tokenizer.pieces : [];
  return { model: Decoder.fromCheckpoint(state), rngState: state.samplingRngState, pieces };
}

const CH38_CONFIG: DecoderConfig = { vocabularySize: 5, modelWidth: 4, heads: 2, feedForwardWidth: 4, layers: 2, maxPositions: 4, ropeBase: 10000, rmsEpsilon: 1e-6 };
const MEDIUM: DecoderConfig = { vocabularySize: 512, modelWidth: 64, heads: 4, feedForwardWidth: 256, layers: 2, maxPositions: 64, ropeBase: 10000, rmsEpsilon: 1e-6 };

/** The first index whose bits differ (Object.is: −0 ≠ +0, NaN = NaN), as a message; null when all agree. */
function firstBitMismatch(what: string, actual: Float64Array, expected: Float64Array): string | null {
  if (actual.length !== expected.length) return `${what}: length ${actual.length} ≠ ${expected.length}`;
  for (let i = 0; i < actual.length; i++) {
    if (!Object.is(actual[i], expected[i])) return `${what}[${i}]: cached ${actual[i]} ≠ complete-prefix ${expected[i]}`;
  }
  return null;
}

/**
 * Prefills `tokens[0 … split−1]` and decodes the rest one by one; every
 * returned row must have the bits of the complete-prefix forward's last row
 * (and of the matching row of `logits(tokens)`), and the cached keys/values
 * must be those of the full forward. Returns the number of rows compared.
 */
function checkSequence(model: Decoder, cache: KvCache, tokens: readonly number[], split: number): number {
  const V = model.config.vocabularySize;
  const all = model.logits(tokens);
  cache.reset();
  const rows: Float64Array[] = [model.prefill(cache, tokens.slice(0, split))];
  for (let t = split; t < tokens.length; t++) rows.push(model.decodeNext(cache, tokens[t] as number));
  rows.forEach((row, i) => {
    const T = split + i;
    const label = `[${tokens.join(',')}] split ${split} row ${T - 1}`;
    expect(firstBitMismatch(label, row, model.nextTokenLogits(tokens.slice(0, T)))).toBeNull();
    expect(firstBitMismatch(`${label} (logits)`, row, all.subarray((T - 1) * V, T * V))).toBeNull();
  });
  expect(cache.length).toBe(tokens.length);
  return rows.length;
}

function allSequences(V: number, length: number): number[][] {
  const out: number[][] = [];
  const n = V ** length;
  for (let i = 0; i < n; i++) {
    const s: number[] = [];
    let r = i;
    for (let k = 0; k < length; k++) {
      s.push(r % V);
      r = Math.floor(r / V);
    }
    out.push(s);
  }
  return out;
}

function randomTokens(rng: SplitMix64, V: number, length: number): number[] {
  return Array.from({ length }, () => Number(rng.nextU64() % BigInt(V)));
}

/** A small model trained by plain gradient descent (no optimizer package needed) on a repeating pattern. */
function trainedModel(): Decoder {
  const config: DecoderConfig = { vocabularySize: 12, modelWidth: 16, heads: 4, feedForwardWidth: 32, layers: 2, maxPositions: 24, ropeBase: 10000, rmsEpsilon: 1e-6 };
  const model = new Decoder(config);
  model.initialize(7n);
  const rng = new SplitMix64(11n);
  for (let step = 0; step < 40; step++) {
    const B = 4;
    const T = 16;
    const inputs: number[] = [];
    const targets: number[] = [];
    for (let b = 0; b < B; b++) {
      const start = Number(rng.nextU64() % 12n);
      for (let t = 0; t < T; t++) {
        inputs.push((start + 3 * t) % 12);
        targets.push((start + 3 * (t + 1)) % 12);
      }
    }
    model.trainStep({ inputs, targets, rows: B, columns: T });
    const p = model.parameters;
    const g = model.gradients;
    for (let i = 0; i < p.length; i++) p[i] = p[i]! - 0.5 * g[i]!;
  }
  return model;
}

describe('Decoder.prefill / Decoder.decodeNext (bit identity)', () => {
  it('gives the complete-prefix bits for every sequence and split of the ch33 fixture model (golden-6330)', () => {
    const { model } = goldenModel();
    const cache = model.createKvCache();
    let rows = 0;
    for (const length of [1, 2]) {
      for (const tokens of allSequences(5, length)) for (let split = 1; split <= length; split++) rows += checkSequence(model, cache, tokens, split);
    }
    expect(rows).toBe(5 + 25 * 3);
  });

  it('gives the complete-prefix bits for every sequence up to the context of a 2-layer model (ch38 config)', () => {
    const model = new Decoder(CH38_CONFIG);
    model.initialize(38n);
    const cache = model.createKvCache();
    let rows = 0;
    for (const tokens of allSequences(5, 4)) rows += checkSequence(model, cache, tokens, 1);
    for (const tokens of allSequences(5, 3)) rows += checkSequence(model, cache, tokens, 2);
    expect(rows).toBe(625 * 4 + 125 * 2);
  });

  it('gives the complete-prefix bits on a trained small model over many prompts and lengths up to the context', () => {
    const model = trainedModel();
    const cache = model.createKvCache();
    const rng = new SplitMix64(37n);
    let rows = 0;
    for (let i = 0; i < 40; i++) {
      const length = 1 + Number(rng.nextU64() % 24n);
      const split = 1 + Number(rng.nextU64() % BigInt(length));
      rows += checkSequence(model, cache, randomTokens(rng, 12, length), split);
    }
    rows += checkSequence(model, cache, randomTokens(rng, 12, 24), 1);
    expect(rows).toBeGreaterThan(200);
  });

  for (const { name, missing, skipped } of KERNEL_SETS) {
    it.skipIf(missing)(`gives the complete-prefix bits for the medium config at context 64 (${name} kernels)${skipped}`, () => {
      const model = new Decoder(MEDIUM, { kernels: name });
      model.initialize(64n);
      const cache = model.createKvCache();
      const rng = new SplitMix64(5n);
      const tokens = randomTokens(rng, 512, 64);
      const all = model.logits(tokens);
      let logits = model.prefill(cache, tokens.slice(0, 3));
      for (let t = 3; ; t++) {
        expect(firstBitMismatch(`row ${t - 1}`, logits, all.subarray((t - 1) * 512, t * 512))).toBeNull();
        if (t === 64) break;
        logits = model.decodeNext(cache, tokens[t]!);
      }
      expect(cache.length).toBe(64);
    });
  }

  it('keeps the rotated keys and values of the full forward', () => {
    const model = new Decoder(CH38_CONFIG);
    model.initialize(38n);
    const a = model.createKvCache();
    const b = model.createKvCache();
    model.prefill(a, [0, 1, 2, 3]);
    model.prefill(b, [0]);
    for (const t of [1, 2, 3]) model.decodeNext(b, t);
    for (let l = 0; l < 2; l++) {
      expect(firstBitMismatch(`keys ${l}`, b.keys(l), a.keys(l))).toBeNull();
      expect(firstBitMismatch(`values ${l}`, b.values(l), a.values(l))).toBeNull();
      expect(a.keys(l)).toHaveLength(16);
    }
  });
});

function snapshot(cache: KvCache): unknown {
  const layers = Array.from({ length: cache.layers }, (_, l) => [Array.from(cache.keys(l)), Array.from(cache.values(l))]);
  return { length: cache.length, work: cache.work, layers };
}

function expectCode(fn: () => unknown, code: string, field?: string): void {
  let caught: unknown = null;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(isModelError(caught), String(caught)).toBe(true);
  expect((caught as { code: string }).code).toBe(code);
  if (field !== undefined) expect((caught as { field: string }).field).toBe(field);
}

describe('KvCache errors (each leaves the cache unchanged)', () => {
  const model = new Decoder(CH38_CONFIG);
  model.initialize(38n);

  it('rejects a decode step before any prefill, and a prefill into a non-empty cache', () => {
    const cache = model.createKvCache();
    const before = snapshot(cache);
    expectCode(() => model.decodeNext(cache, 1), 'MODEL_CACHE_STATE');
    expect(snapshot(cache)).toEqual(before);
    model.prefill(cache, [0, 1]);
    const filled = snapshot(cache);
    expectCode(() => model.prefill(cache, [2]), 'MODEL_CACHE_STATE');
    expect(snapshot(cache)).toEqual(filled);
  });

  it('rejects overflow past the capacity', () => {
    const full = model.createKvCache();
    model.prefill(full, [0, 1, 2, 3]);
    const before = snapshot(full);
    expectCode(() => model.decodeNext(full, 4), 'MODEL_CACHE_OVERFLOW');
    expect(snapshot(full)).toEqual(before);
    const small = model.createKvCache({ capacity: 2 });
    expectCode(() => model.prefill(small, [0, 1, 2]), 'MODEL_CACHE_OVERFLOW');
    expect(small.length).toBe(0);
    model.prefill(small, [0]);
    model.decodeNext(small, 1);
    expectCode(() => model.decodeNext(small, 2), 'MODEL_CACHE_OVERFLOW');
    expect(small.length).toBe(2);
    expectCode(() => model.createKvCache({ capacity: 5 }), 'MODEL_INVALID_CONFIG', 'capacity');
  });

  it('rejects a cache built for another model, configuration, head layout or RoPE table', () => {
    const cases: [Decoder, string][] = [];
    const rebuilt = new Decoder(CH38_CONFIG);
    rebuilt.initialize(38n);
    cases.push([rebuilt, 'model']);
    cases.push([new Decoder({ ...CH38_CONFIG, modelWidth: 8 }), 'modelWidth']);
    cases.push([new Decoder({ ...CH38_CONFIG, layers: 1 }), 'layers']);
    cases.push([new Decoder({ ...CH38_CONFIG, heads: 1 }), 'heads']);
    cases.push([new Decoder({ ...CH38_CONFIG, ropeBase: 20000 }), 'ropeBase']);
    cases.push([new Decoder({ ...CH38_CONFIG, maxPositions: 5 }), 'maxPositions']);
    for (const [other, field] of cases) {
      const empty = other.createKvCache();
      expectCode(() => model.prefill(empty, [0]), 'MODEL_CACHE_MISMATCH', field);
      expect(empty.length).toBe(0);
      const used = other.createKvCache();
      other.prefill(used, [0, 1]);
      const before = snapshot(used);
      expectCode(() => model.decodeNext(used, 2), 'MODEL_CACHE_MISMATCH', field);
      expect(snapshot(used)).toEqual(before);
    }
  });

  it('rejects a non-finite projection at prefill and at decode', () => {
    const bad = new Decoder(CH38_CONFIG);
    bad.initialize(38n);
    const cache = bad.createKvCache();
    bad.prefill(cache, [0, 1]);
    const before = snapshot(cache);
    // Gain and value weights at the largest f64: the next layer-0 value projection overflows.
    bad.parameter('blocks.0.attention_norm.gain').fill(Number.MAX_VALUE);
    bad.parameter('blocks.0.attention.value.weight').fill(Number.MAX_VALUE);
    expectCode(() => bad.decodeNext(cache, 3), 'MODEL_NON_FINITE');
    expect(snapshot(cache)).toEqual(before);
    const fresh = bad.createKvCache();
    expectCode(() => bad.prefill(fresh, [0, 3]), 'MODEL_NON_FINITE');
    expect(fresh.length).toBe(0);
    expectCode(() => bad.decodeNext(cache, 5), 'MODEL_TOKEN_OUT_OF_RANGE');
    expect(snapshot(cache)).toEqual(before);
  });
});

describe('KvCache.reset', () => {
  it('empties the cache and zeroes the work, reuses the allocation, and replays identically', () => {
    const model = new Decoder(CH38_CONFIG);
    model.initialize(38n);
    const cache = model.createKvCache();
    const first = [model.prefill(cache, [0, 1]), model.decodeNext(cache, 2)];
    const buffer = cache.keys(0).buffer;
    const allocated = cache.allocatedPositions;
    expect(cache.length).toBe(3);
    cache.reset();
    expect(cache.length).toBe(0);
    expect(cache.work.cachedScores).toBe(0);
    expect(cache.keys(0)).toHaveLength(0);
    const again = [model.prefill(cache, [0, 1]), model.decodeNext(cache, 2)];
    expect(cache.keys(0).buffer).toBe(buffer);
    expect(cache.allocatedPositions).toBe(allocated);
    again.forEach((row, i) => expect(firstBitMismatch(`replay ${i}`, row, first[i]!)).toBeNull());
  });
});

describe('attention of one new row over cached keys and values (ch37 incremental attention)', () => {
  it('reproduces ch37 step outputs and equals the full-prefix attention bits', () => {
    // ch37's layer: D4, H2, RoPE base 100, identity query/key/value, block-swap output.
    const D = 4;
    const input = [1.0, 0.0, 1.0, 0.0, 0.5403023058681398, -0.8414709848078965, 0.0, 1.0, -0.4161468365471424, -0.9092974268256817, 1.0, 1.0];
    const swap = { w: matrix(Float64Array.from([0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0]), D, D), t: null };
    const identity = { w: matrix(Float64Array.from([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]), D, D), t: null };
    const rope = ropeTables(4, 2, 100);
    const scale = 1.0 / Math.sqrt(2);
    const keys = matrix(new Float64Array(4 * D), 4, D);
    const values = matrix(new Float64Array(4 * D), 4, D);
    const expected = [
      ['1.000000000', '0.000000000', '1.000000000', '0.000000000'],
      ['0.213809009', '0.786190991', '0.770151153', '-0.420735492'],
      ['0.629044078', '0.945303958', '0.374718490', '-0.583589471'],
    ];
    const row = (): ReturnType<typeof matrix> => matrix(new Float64Array(D), 1, D);
    for (let t = 0; t < 3; t++) {
      // The new row at position t: its query, its key and value appended to the cache, attention over rows 0 … t.
      const x = matrix(Float64Array.from(input.slice(t * D, t * D + D)), 1, D);
      const [q, k, qr, merged, out] = [row(), row(), row(), row(), row()];
      linearForward(q, x, identity);
      linearForward(k, x, identity);
      linearForward(rowsOf(values, t, 1), x, identity);
      ropeForward(qr, q, rope, t);
      ropeForward(rowsOf(keys, t, 1), k, rope, t);
      attentionForward(merged, { q: qr, k: rowsOf(keys, 0, t + 1), v: rowsOf(values, 0, t + 1), prob: matrix(new Float64Array(2 * (t + 1)), 2, t + 1), trace: null }, 2, scale);
      linearForward(out, merged, swap);
      expect(Array.from(out.data, (z) => z.toFixed(9))).toEqual(expected[t]);
      // The full-prefix computation of the same rows.
      const T = t + 1;
      const X = matrix(Float64Array.from(input.slice(0, T * D)), T, D);
      const [Qr, Kr, full] = [matrix(new Float64Array(T * D), T, D), matrix(new Float64Array(T * D), T, D), matrix(new Float64Array(T * D), T, D)];
      ropeForward(Qr, X, rope, 0);
      ropeForward(Kr, X, rope, 0);
      attentionForward(full, { q: Qr, k: Kr, v: X, prob: matrix(new Float64Array(2 * T * T), 2 * T, T), trace: null }, 2, scale);
      expect(firstBitMismatch(`merged row ${t}`, merged.data, full.data.subarray(t * D, T * D))).toBeNull();
      expect(firstBitMismatch(`keys ${t}`, keys.data.subarray(0, T * D), Kr.data)).toBeNull();
    }
  });
});

describe('KvCache work (the counts ch37 and ch38 print)', () => {
  it('reproduces ch37: rows per projection of one layer over three single-token steps', () => {
    // ch37's layer: D4, H2 (head width 2), 3 tokens, capacity 4.
    const model = new Decoder({ vocabularySize: 5, modelWidth: 4, heads: 2, feedForwardWidth: 4, layers: 1, maxPositions: 5, ropeBase: 100, rmsEpsilon: 1e-6 });
    model.initialize(37n);
    const cache = model.createKvCache({ capacity: 4 });
    const newest: number[] = [];
    model.prefill(cache, [0]);
    newest.push(cache.length);
    for (const t of [1, 2]) {
      model.decodeNext(cache, t);
      newest.push(cache.length);
    }
    const w = cache.work;
    const reused = w.completePrefixRowsPerProjection - w.rowsPerProjection;
    // expected.txt: work=full_rows_per_projection:6 incremental_rows_per_projection:3 reused_rows_per_kv_projection:3 avoided_rows_across_kv:6
    expect([w.completePrefixRowsPerProjection, w.rowsPerProjection, reused, 2 * reused]).toEqual([6, 3, 3, 6]);
    // history=newest_query_key_rows:[1,2,3]; shape [1, heads, length, head width] = [1,2,3,2].
    expect(newest).toEqual([1, 2, 3]);
    expect([1, model.config.heads, cache.length, cache.keys(0).length / cache.length / model.config.heads]).toEqual([1, 2, 3, 2]);
    // reset=before:3 after:0 allocation_reused:true.
    const allocated = cache.allocatedPositions;
    cache.reset();
    expect([cache.length, cache.allocatedPositions]).toEqual([0, allocated]);
  });

  it('reproduces ch38: prefill [0,1] and decode 2 on the 2-layer model (scores, appends, qkv rows)', () => {
    const model = new Decoder(CH38_CONFIG);
    model.initialize(38n);
    const cache = model.createKvCache();
    const prefill = model.prefill(cache, [0, 1]);
    const p = cache.work;
    // prefill=... cache:0->2 cached_scores:12 complete_prefix_scores:16
    expect([cache.length, p.cachedScores, p.completePrefixScores]).toEqual([2, 12, 16]);
    const decode = model.decodeNext(cache, 2);
    const w = cache.work;
    // decode=... cache:2->3 cached_scores:12 complete_prefix_scores:36
    expect([cache.length, w.cachedScores - p.cachedScores, w.completePrefixScores - p.completePrefixScores]).toEqual([3, 12, 36]);
    // work=prefill_tokens:2 decode_tokens:1 layer_caches:2 cache_appends:6 qkv_rows:18 cached_scores:24 complete_prefix_scores:52
    expect([w.prefillTokens, w.decodeTokens, cache.layers, w.cacheAppends, w.qkvRows, w.cachedScores, w.completePrefixScores]).toEqual([2, 1, 2, 6, 18, 24, 52]);
    // history=... avoided_scores:28
    expect(w.completePrefixScores - w.cachedScores).toBe(28);
    expect([cache.keys(0).length, cache.keys(1).length]).toEqual([12, 12]);
    expect(cache.keys(0).buffer).not.toBe(cache.keys(1).buffer);
    // The reference prints these logits (its model from SplitMix64(38), the same initializer).
    expect(Array.from(prefill, (x) => x.toFixed(9))).toEqual(['1.768374438', '0.208825256', '1.056205728', '-0.451857108', '0.388467944']);
    expect(Array.from(decode, (x) => x.toFixed(9))).toEqual(['0.032908910', '-0.679583624', '1.408381841', '0.525525421', '-0.588014095']);
  });

  it('reproduces ch38 loaded generation: golden-6330, prompt [0], T=1 top-k 3 → [4,4] "44", and the EOS case', () => {
    const { model, rngState, pieces } = goldenModel();
    expect(rngState).toBe(0x9e3779b97f4a7c38n);
    const mode: SamplingMode = { kind: 'temperature', temperature: 1, topK: 3 };
    const cache = model.createKvCache();
    const rng = new SplitMix64(rngState);
    const out = generate(model, { prompt: [0], mode, rng, maxNewTokens: 4, cache });
    const plainRng = new SplitMix64(rngState);
    const plain = generate(model, { prompt: [0], mode, rng: plainRng, maxNewTokens: 4, cache: false });
    const text = new TextDecoder().decode(Uint8Array.from(out.tokens.flatMap((t) => Array.from(pieces[t]!))));
    const w = cache.work;
    // loaded=... generated:[4,4] text:44 prefixes:[1,2] stop:context-limit final_cache:2 prefill_tokens:1 decode_tokens:1 cached_scores:6 complete_prefix_scores:10
    expect(out.tokens).toEqual([4, 4]);
    expect(text).toBe('44');
    expect(out.steps.map((s) => s.prefix.length)).toEqual([1, 2]);
    expect(out.stopReason).toBe('context-limit');
    expect([cache.length, w.prefillTokens, w.decodeTokens, w.cachedScores, w.completePrefixScores]).toEqual([2, 1, 1, 6, 10]);
    expect([out.cached, plain.cached]).toEqual([true, false]);
    expect(plain.tokens).toEqual(out.tokens);
    expect(plainRng.state).toBe(rng.state);
    // eos=token:4 generated:[4] stop:eos final_cache:1 decode_tokens:0
    const eosRng = new SplitMix64(rngState);
    const eos = generate(model, { prompt: [0], mode, rng: eosRng, maxNewTokens: 4, endOfSequence: 4, cache });
    expect([eos.tokens, eos.stopReason, cache.length, cache.work.decodeTokens]).toEqual([[4], 'end-of-sequence', 1, 0]);
    const eosPlainRng = new SplitMix64(rngState);
    generate(model, { prompt: [0], mode, rng: eosPlainRng, maxNewTokens: 4, endOfSequence: 4, cache: false });
    expect(eosRng.state).toBe(eosPlainRng.state);
  });
});

describe('generate (cached by default)', () => {
  it('gives the uncached tokens, evidence bits and generator state on a trained model', () => {
    const model = trainedModel();
    const modes: SamplingMode[] = [{ kind: 'greedy' }, { kind: 'temperature', temperature: 0.8, topK: 5 }, { kind: 'temperature', temperature: 1.3, topK: 12 }];
    const rng = new SplitMix64(3n);
    for (const mode of modes) {
      for (let i = 0; i < 6; i++) {
        const prompt = randomTokens(rng, 12, 1 + i * 3);
        const seed = rng.nextU64();
        const a = new SplitMix64(seed);
        const b = new SplitMix64(seed);
        const cached = generate(model, { prompt, mode, rng: a, maxNewTokens: 30 });
        const plain = generate(model, { prompt, mode, rng: b, maxNewTokens: 30, cache: false });
        expect(cached.cached).toBe(true);
        expect(cached.tokens).toEqual(plain.tokens);
        expect(cached.stopReason).toBe(plain.stopReason);
        expect(a.state).toBe(b.state);
        cached.steps.forEach((s, k) => {
          const u = plain.steps[k]!;
          expect(s.prefix).toEqual(u.prefix);
          expect(s.rngStateBefore).toBe(u.rngStateBefore);
          expect(firstBitMismatch(`step ${k} logits`, s.logits, u.logits)).toBeNull();
          expect(firstBitMismatch(`step ${k} probabilities`, s.probabilities, u.probabilities)).toBeNull();
          expect(s.draw).toEqual(u.draw);
        });
      }
    }
  });

  it("slides the context window past maxPositions (contextOverflow: 'slide'): the cached path equals the uncached one bit for bit", () => {
    const model = trainedModel();
    const P = model.config.maxPositions;
    const rng = new SplitMix64(5n);
    for (const mode of [{ kind: 'greedy' }, { kind: 'temperature', temperature: 0.9, topK: 6 }] as SamplingMode[]) {
      for (const promptLength of [1, P - 1, P]) {
        const prompt = randomTokens(rng, 12, promptLength);
        const seed = rng.nextU64();
        const a = new SplitMix64(seed);
        const b = new SplitMix64(seed);
        const cache = model.createKvCache();
        const cached = generate(model, { prompt, mode, rng: a, maxNewTokens: 2 * P + 3, cache, contextOverflow: 'slide' });
        const plain = generate(model, { prompt, mode, rng: b, maxNewTokens: 2 * P + 3, cache: false, contextOverflow: 'slide' });
        expect(cached.stopReason).toBe('max-new-tokens');
        expect(cached.tokens).toHaveLength(2 * P + 3);
        expect(cached.tokens).toEqual(plain.tokens);
        expect(a.state).toBe(b.state);
        const all = [...prompt, ...cached.tokens];
        cached.steps.forEach((s, k) => {
          const u = plain.steps[k]!;
          // The window of step k: the last (at most) P tokens before the token it chose.
          const end = prompt.length + k;
          expect(s.prefix).toEqual(all.slice(Math.max(0, end - P), end));
          expect(u.prefix).toEqual(s.prefix);
          expect(firstBitMismatch(`step ${k} logits`, s.logits, u.logits)).toBeNull();
          // The uncached path on the window is a forward pass on exactly those tokens.
          expect(firstBitMismatch(`step ${k} forward`, u.logits, model.nextTokenLogits(s.prefix))).toBeNull();
          expect(s.draw).toEqual(u.draw);
        });
      }
    }
  });

  it("stops at the context limit by default, and refuses an unknown contextOverflow", () => {
    const model = trainedModel();
    const P = model.config.maxPositions;
    const out = generate(model, { prompt: [1], mode: { kind: 'greedy' }, rng: new SplitMix64(1n), maxNewTokens: 2 * P });
    expect(out.stopReason).toBe('context-limit');
    expect(out.tokens).toHaveLength(P);
    expectCode(() => generate(model, { prompt: [1], mode: { kind: 'greedy' }, rng: new SplitMix64(1n), maxNewTokens: 1, contextOverflow: 'wrap' as never }), 'MODEL_INVALID_SAMPLING', 'contextOverflow');
  });

  it('uses the uncached path for a model without a cached path', () => {
    const { model } = goldenModel();
    const source = { config: model.config, nextTokenLogits: (t: ArrayLike<number>) => model.nextTokenLogits(t) };
    const out = generate(source, { prompt: [0], mode: { kind: 'greedy' }, rng: new SplitMix64(1n), maxNewTokens: 2 });
    expect(out.cached).toBe(false);
    expect(out.tokens).toEqual(generate(model, { prompt: [0], mode: { kind: 'greedy' }, rng: new SplitMix64(1n), maxNewTokens: 2 }).tokens);
  });

  it('keeps FIXTURE_DECODER_CONFIG caches separate per decoder', () => {
    const a = new Decoder(FIXTURE_DECODER_CONFIG);
    const b = new Decoder(FIXTURE_DECODER_CONFIG);
    expectCode(() => generate(a, { prompt: [0], mode: { kind: 'greedy' }, rng: new SplitMix64(1n), maxNewTokens: 1, cache: b.createKvCache() }), 'MODEL_CACHE_MISMATCH', 'model');
  });
});
