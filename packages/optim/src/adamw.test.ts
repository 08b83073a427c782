import { describe, expect, it } from 'vitest';
import { Decoder, FIXTURE_DECODER_CONFIG } from '@llmcp/model';
import { code } from '../test/helpers/errors.ts';
import { AdamW, NO_DECAY_GAINS } from './adamw.ts';
import { clipByGlobalNorm } from './clip.ts';
import { isOptimError } from './errors.ts';

const CONFIG = { learningRate: 0.04, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01 };
const BATCH = { inputs: [0, 1, 2, 3], targets: [1, 2, 3, 4], rows: 2, columns: 2 };

function setup(): { model: Decoder; opt: AdamW } {
  const model = new Decoder(FIXTURE_DECODER_CONFIG);
  model.initialize(33n);
  return { model, opt: new AdamW(model, { config: CONFIG }) };
}

const bits = (a: Float64Array): string[] => Array.from(a, (x) => new DataView(Float64Array.of(x).buffer).getBigUint64(0, true).toString(16));

describe('AdamW.step', () => {
  it('follows training.md §6.3 for one element, operation by operation', () => {
    const { model, opt } = setup();
    model.trainStep(BATCH);
    const i = 3;
    const w = model.parameters[i]!;
    const g = model.gradients[i]! * 0.5;
    opt.step({ learningRate: 0.02, clipMultiplier: 0.5 });
    const m = 0.9 * 0 + (1.0 - 0.9) * g;
    const v = 0.999 * 0 + (1.0 - 0.999) * (g * g);
    const direction = m / (1.0 - 0.9) / (Math.sqrt(v / (1.0 - 0.999)) + 1e-8);
    expect(opt.first[i]).toBe(m);
    expect(opt.second[i]).toBe(v);
    expect(model.parameters[i]).toBe(w - 0.02 * direction - 0.02 * 0.01 * w);
  });

  it('keeps beta powers by repeated multiplication (0.43046721000000016 after 8 steps)', () => {
    const { model, opt } = setup();
    for (let k = 0; k < 8; k++) {
      model.trainStep(BATCH);
      opt.step();
    }
    expect(opt.stepCount).toBe(8);
    expect(opt.beta1Power).toBe(0.43046721000000016);
  });

  it('does not decay the no-decay group (gains) and decays everything else', () => {
    const { model, opt } = setup();
    expect(opt.groups?.noDecay).toEqual(['blocks.0.attention_norm.gain', 'blocks.0.ffn_norm.gain', 'final_norm.gain']);
    expect(opt.decays('final_norm.gain')).toBe(false);
    expect(opt.decays('token_embedding.weight')).toBe(true);
    model.zeroGradients();
    const before = model.parameters.slice();
    opt.step({ learningRate: 0.5 });
    expect(Array.from(model.parameter('final_norm.gain'))).toEqual([1, 1, 1, 1]);
    expect(model.parameters[0]).toBe(before[0]! - 0.5 * 0 - 0.5 * 0.01 * before[0]!);
  });

  it('applies a clip decision exactly like the equivalent multiplier', () => {
    const a = setup();
    const b = setup();
    a.model.trainStep(BATCH);
    b.model.trainStep(BATCH);
    const clip = clipByGlobalNorm(a.model.gradients, 0.35);
    expect(clip.clipped).toBe(true);
    a.opt.step({ clip });
    b.opt.step({ clipMultiplier: clip.multiplier });
    expect(bits(a.model.parameters)).toEqual(bits(b.model.parameters));
  });

  it('changes nothing when an update is not finite', () => {
    const { model, opt } = setup();
    model.trainStep(BATCH);
    opt.step();
    const state = [model.parameters.slice(), opt.first.slice(), opt.second.slice()];
    model.gradients[100] = NaN;
    try {
      opt.step();
      throw new Error('accepted NaN');
    } catch (e) {
      expect(isOptimError(e) && e.code === 'OPTIM_NON_FINITE_UPDATE' && e.tensorName === 'blocks.0.ffn.gate.weight' && e.index === 8).toBe(true);
    }
    expect(bits(model.parameters)).toEqual(bits(state[0]!));
    expect(bits(opt.first)).toEqual(bits(state[1]!));
    expect(bits(opt.second)).toEqual(bits(state[2]!));
    expect(opt.stepCount).toBe(1);
  });

  it('validates the learning rate of each step', () => {
    const { opt } = setup();
    expect(code(() => opt.step({ learningRate: 0 }))).toBe('OPTIM_INVALID_LEARNING_RATE');
    expect(code(() => opt.step({ learningRate: 200 }))).toBe('OPTIM_INVALID_LEARNING_RATE');
    expect(code(() => opt.step({ clipMultiplier: -1 }))).toBe('OPTIM_INVALID_CLIP');
    expect(opt.stepCount).toBe(0);
  });
});

describe('AdamW configuration and groups', () => {
  it('checks the hyper-parameters in the order of format SPEC §6.2', () => {
    const model = new Decoder(FIXTURE_DECODER_CONFIG);
    for (const [field, bad] of [
      ['learningRate', { ...CONFIG, learningRate: 0 }],
      ['beta1', { ...CONFIG, beta1: 1 }],
      ['beta2', { ...CONFIG, beta2: -0.1 }],
      ['epsilon', { ...CONFIG, epsilon: 0 }],
      ['weightDecay', { ...CONFIG, weightDecay: -1 }],
      ['weightDecay', { ...CONFIG, learningRate: 10, weightDecay: 0.5 }],
    ] as const) {
      try {
        new AdamW(model, { config: bad });
        throw new Error(`accepted ${field}`);
      } catch (e) {
        expect(isOptimError(e) && e.code === 'OPTIM_INVALID_CONFIG' && e.field === field, String(e)).toBe(true);
      }
    }
  });

  it('accepts explicit groups that partition the parameters and refuses others', () => {
    const model = new Decoder(FIXTURE_DECODER_CONFIG);
    const names = model.layout.entries.map((e) => e.name);
    const noDecay = names.filter((n) => n.endsWith('.gain'));
    const decay = names.filter((n) => !n.endsWith('.gain'));
    expect(new AdamW(model, { config: CONFIG, groups: { decay, noDecay } }).decays('final_norm.gain')).toBe(false);
    expect(code(() => new AdamW(model, { config: CONFIG, groups: { decay: decay.slice(1), noDecay } }))).toBe('OPTIM_INVALID_GROUPS');
    expect(code(() => new AdamW(model, { config: CONFIG, groups: { decay: [...decay, noDecay[0]!], noDecay } }))).toBe('OPTIM_INVALID_GROUPS');
    expect(code(() => new AdamW(model, { config: CONFIG, groups: { decay: [...decay, 'extra'], noDecay } }))).toBe('OPTIM_INVALID_GROUPS');
    expect(code(() => new AdamW(model, { config: CONFIG, groups: { decay: [...decay, decay[0]!], noDecay } }))).toBe('OPTIM_INVALID_GROUPS');
    const all = new AdamW(model, { config: CONFIG, groups: null });
    expect(all.groups).toBeNull();
    expect(all.decays('final_norm.gain')).toBe(true);
  });
});

describe('AdamW state persistence', () => {
  it('round-trips through the format state and continues bit for bit', () => {
    const a = setup();
    for (let k = 0; k < 3; k++) {
      a.model.trainStep(BATCH);
      a.opt.step({ learningRate: 0.01 });
    }
    const state = a.opt.toAdamWState();
    expect(state.step).toBe(3n);
    expect(state.moments.map((m) => m.name)).toEqual(a.model.layout.entries.map((e) => e.name));
    const model2 = Decoder.fromCheckpoint({ decoder: FIXTURE_DECODER_CONFIG, parameters: a.model.toCheckpointParameters().map((t) => ({ ...t, data: t.data.slice() })) });
    const frozen = { ...state, moments: state.moments.map((m) => ({ ...m, first: m.first.slice(), second: m.second.slice() })) };
    const b = AdamW.fromAdamWState(model2, frozen);
    for (const x of [a, { model: model2, opt: b }]) {
      x.model.trainStep(BATCH);
      x.opt.step({ learningRate: 0.01 });
    }
    expect(bits(model2.parameters)).toEqual(bits(a.model.parameters));
    expect(b.beta2Power).toBe(a.opt.beta2Power);
  });

  it('has no moments at step 0 and restores a step-0 state', () => {
    const { model, opt } = setup();
    const s = opt.toAdamWState();
    expect(s.moments).toEqual([]);
    expect(s.beta1Power).toBe(1);
    expect(AdamW.fromAdamWState(model, s).stepCount).toBe(0);
  });

  it('validates state like the format does and changes nothing on error', () => {
    const { model, opt } = setup();
    model.trainStep(BATCH);
    opt.step();
    const good = opt.toAdamWState();
    const copy = (over: object) => ({ ...good, ...over });
    const moments = (f: (m: (typeof good.moments)[number], i: number) => object) => good.moments.map((m, i) => ({ ...m, ...f(m, i) }));
    const cases: [string, object][] = [
      ['OPTIM_INVALID_STATE', { step: 0n }],
      ['OPTIM_INVALID_STATE', { step: -1n }],
      ['OPTIM_INVALID_STATE', { beta1Power: 1 }],
      ['OPTIM_INVALID_STATE', { beta2Power: NaN }],
      ['OPTIM_INVALID_STATE', { moments: [] }],
      ['OPTIM_INVALID_STATE', { moments: moments((m, i) => (i === 2 ? { second: m.second.map((x, j) => (j === 0 ? -1 : x)) } : {})) }],
      ['OPTIM_INVALID_STATE', { moments: moments((m, i) => (i === 4 ? { first: m.first.map(() => Infinity) } : {})) }],
      ['OPTIM_STATE_MISMATCH', { moments: good.moments.slice(1) }],
      ['OPTIM_STATE_MISMATCH', { moments: [...good.moments, good.moments[0]] }],
      ['OPTIM_STATE_MISMATCH', { moments: moments((m, i) => (i === 3 ? { shape: [2, 8] } : {})) }],
      ['OPTIM_STATE_MISMATCH', { moments: moments((m, i) => (i === 3 ? { name: 'blocks.0.attention.nope.weight' } : {})) }],
      ['OPTIM_INVALID_CONFIG', { config: { ...good.config, epsilon: -1 } }],
    ];
    for (const [expected, over] of cases) {
      const target = setup();
      const before = target.opt.first.slice();
      expect(code(() => target.opt.loadAdamWState(copy(over) as typeof good)), JSON.stringify(Object.keys(over))).toBe(expected);
      expect(bits(target.opt.first)).toEqual(bits(before));
      expect(target.opt.stepCount).toBe(0);
    }
    expect(code(() => AdamW.fromAdamWState(model, copy({ groups: { decay: ['token_embedding.weight'], noDecay: [] } }) as typeof good))).toBe('OPTIM_INVALID_GROUPS');
    const other = new AdamW(model, { config: CONFIG, groups: null });
    expect(code(() => other.loadAdamWState(good))).toBe('OPTIM_STATE_MISMATCH');
  });

  it('uses the fixture rule by default', () => {
    const { opt } = setup();
    expect(opt.groups?.noDecay).toEqual(setup().model.layout.entries.map((e) => e.name).filter(NO_DECAY_GAINS));
  });
});
