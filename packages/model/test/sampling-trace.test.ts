import { SplitMix64 } from '@llmcp/format';
import { describe, expect, it } from 'vitest';
import { Decoder, FIXTURE_DECODER_CONFIG, generate, sampleToken, tokenDistribution, type SamplingMode } from '../src/index.ts';
import { bits, f64, f64s, firstMismatch, fixture } from './helpers/bits.ts';

interface Bits {
  bits: string;
}
interface TraceMode {
  kind: 'greedy' | 'temperature_top_k';
  temperature?: Bits;
  top_k?: number;
}
interface Distribution {
  name: string;
  logits: Bits[];
  mode: TraceMode;
  ranks: number[];
  retained_token_ids: number[];
  probabilities_bits: string[];
}
interface Draw {
  rng_state_before: string;
  rng_state_after: string;
  token_id: number;
  interval_start: Bits;
  interval_end: Bits;
  raw_u64: string | null;
  unit_draw: Bits | null;
  probabilities_bits?: string[];
}
interface SamplingTrace {
  distributions: Distribution[];
  seeded_draws: { name: string; logits: Bits[]; mode: TraceMode; initial_rng_state: string; draws: Draw[] }[];
  generation: {
    initial_rng_state: string;
    steps: { prefix: number[]; last_position_logits_bits: string[]; probabilities_bits: string[]; rng_state_before: string; unit_draw: Bits; token_id: number }[];
    generated: number[];
    stop: string;
    rng_state_after: string;
  };
}
interface Ch33Trace {
  steps: { parameters_after: { name: string; shape: number[]; bits: string[] }[] }[];
}

const trace = fixture<SamplingTrace>('sampling-trace.json');
const hex = (v: bigint): string => v.toString(16).padStart(16, '0');

function mode(m: TraceMode): SamplingMode {
  return m.kind === 'greedy' ? { kind: 'greedy' } : { kind: 'temperature', temperature: f64(m.temperature!.bits), topK: m.top_k! };
}

describe('tokenDistribution (training.md §9, sampling-trace.json)', () => {
  it.each(trace.distributions.map((d) => [d.name, d] as const))('%s: ranking, retained ids and probability bits', (_name, d) => {
    const logits = d.logits.map((l) => f64(l.bits));
    const dist = tokenDistribution(logits, mode(d.mode));
    const ranks = new Array<number>(logits.length);
    dist.ranking.forEach((id, r) => (ranks[id] = r + 1));
    expect(ranks).toEqual(d.ranks);
    expect(dist.retained).toEqual(d.retained_token_ids);
    expect(firstMismatch(`${d.name} probabilities`, dist.probabilities, d.probabilities_bits)).toBeNull();
  });
});

describe('sampleToken (seeded draws)', () => {
  it.each(trace.seeded_draws.map((s) => [s.name, s] as const))('%s: states, raw outputs, unit draws, tokens and intervals', (_name, s) => {
    const rng = new SplitMix64(BigInt(`0x${s.initial_rng_state}`));
    const logits = s.logits.map((l) => f64(l.bits));
    for (const [i, d] of s.draws.entries()) {
      expect(hex(rng.state), `draw ${i} state before`).toBe(d.rng_state_before);
      const out = sampleToken(logits, mode(s.mode), rng);
      expect(hex(rng.state), `draw ${i} state after`).toBe(d.rng_state_after);
      expect(out.token, `draw ${i} token`).toBe(d.token_id);
      expect(out.draw === null ? null : hex(out.draw.raw), `draw ${i} raw`).toBe(d.raw_u64);
      expect(out.draw === null ? null : bits(out.draw.unit), `draw ${i} unit`).toBe(d.unit_draw?.bits ?? null);
      expect(bits(out.intervalStart), `draw ${i} interval start`).toBe(d.interval_start.bits);
      expect(bits(out.intervalEnd), `draw ${i} interval end`).toBe(d.interval_end.bits);
      if (d.probabilities_bits) expect(firstMismatch(`draw ${i} probabilities`, out.probabilities, d.probabilities_bits)).toBeNull();
    }
  });

  it('draws the ch36 fixture tokens 3, 2, 2, 2, 3, 3, 3, 3 from seed 36', () => {
    const rng = new SplitMix64(36n);
    const tokens = Array.from({ length: 8 }, () => sampleToken([0, 1, 1, 2], { kind: 'temperature', temperature: 1, topK: 3 }, rng).token);
    expect(tokens).toEqual([3, 2, 2, 2, 3, 3, 3, 3]);
  });
});

describe('generate (ch36 uncached generation)', () => {
  it('generates [4, 4] from the step-8 model and stops at the context limit, bit for bit', () => {
    const ch33 = fixture<Ch33Trace>('ch33-trace.json');
    const model = new Decoder(FIXTURE_DECODER_CONFIG);
    model.loadParameters(ch33.steps[7]!.parameters_after.map((p) => ({ name: p.name, shape: p.shape, data: f64s(p.bits) })));
    const g = trace.generation;
    const rng = new SplitMix64(BigInt(`0x${g.initial_rng_state}`));
    const out = generate(model, { prompt: [0], mode: { kind: 'temperature', temperature: 1, topK: 3 }, rng, maxNewTokens: 4 });
    expect(out.tokens).toEqual(g.generated);
    expect(out.stopReason).toBe(g.stop);
    expect(hex(rng.state)).toBe(g.rng_state_after);
    expect(out.steps).toHaveLength(g.steps.length);
    g.steps.forEach((s, i) => {
      const step = out.steps[i]!;
      expect(step.prefix).toEqual(s.prefix);
      expect(hex(step.rngStateBefore)).toBe(s.rng_state_before);
      expect(firstMismatch(`step ${i} logits`, step.logits, s.last_position_logits_bits)).toBeNull();
      expect(firstMismatch(`step ${i} probabilities`, step.probabilities, s.probabilities_bits)).toBeNull();
      expect(bits(step.draw!.unit)).toBe(s.unit_draw.bits);
      expect(step.token).toBe(s.token_id);
    });
  });
});
