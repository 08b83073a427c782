/**
 * AdamW exactly as the reference computes it (../../../docs/spec/training.md §6), over the
 * model's flat parameter array: one loop in model order.
 */
import { adamwConfigProblem, decayProductProblem, f64ToBits, groupsProblem, type AdamWConfig, type AdamWState, type LocatedName, type MomentState, type ParameterGroups } from '@llmcp/format';
import { namedViews, tensorAt, type CallSetSpec, type ParameterEntry, type ParameterLayout, type SharedCalls } from '@llmcp/model';
import type { ClipResult, GradientTransform } from './clip.ts';
import { OptimError } from './errors.ts';
import { AdamWKernel, BLOCK, scalarUpdate, type CallSharing, type TransformMode, type UpdateConstants } from './internal/simd.ts';

/** What AdamW needs from a model: its layout and flat parameter/gradient arrays (a `Decoder` fits). */
export interface OptimizableModel {
  readonly layout: ParameterLayout;
  readonly parameters: Float64Array;
  readonly gradients: Float64Array;
  /** Threads the model computes with (a `Decoder`'s; absent: one). */
  readonly threads?: number;
  /** Shares WebAssembly calls with the model's threads (`Decoder.shareCalls`): the update then runs on all of them. */
  shareCalls?(spec: CallSetSpec): SharedCalls;
}

/** @returns the model, when it has several threads to share the update with. */
function callSharing(model: OptimizableModel): CallSharing | null {
  return (model.threads ?? 1) > 1 && typeof model.shareCalls === 'function' ? (model as CallSharing) : null;
}

/** A rule choosing the parameters without weight decay. */
export type NoDecayRule = (name: string) => boolean;

/**
 * The fixture's rule: RMSNorm gains (names ending in `.gain`) get no weight decay.
 * @param name - a parameter name.
 * @returns whether it is in the no-decay group.
 */
export const NO_DECAY_GAINS: NoDecayRule = (name) => name.endsWith('.gain');

/** Options of {@link AdamW}. */
export interface AdamWOptions {
  /** Hyper-parameters; `learningRate` is the base rate, used when a step gives none. */
  readonly config: AdamWConfig;
  /**
   * Decay groups: a rule naming the no-decay parameters, explicit lists that
   * must partition the model's parameters, or null for "every parameter
   * decays, no groups stored". Default {@link NO_DECAY_GAINS}.
   */
  readonly groups?: NoDecayRule | ParameterGroups | null;
}

/** Options of {@link AdamW.step}. */
export interface AdamWStepOptions {
  /** This step's learning rate (default: the configured base rate). */
  readonly learningRate?: number;
  /** A clip decision from `clipByGlobalNorm` (its transform is applied to each gradient element). */
  readonly clip?: ClipResult;
  /** Shorthand for a uniform clip: each gradient element is multiplied by this (finite, > 0). */
  readonly clipMultiplier?: number;
}

const ONE_BITS = 0x3ff0000000000000n;

/** Moment states of every parameter: live views of the two flat moment arrays, model order. */
function momentViews(layout: ParameterLayout, first: Float64Array, second: Float64Array): MomentState[] {
  const seconds = namedViews(layout, second);
  return namedViews(layout, first).map((f, i) => ({ name: f.name, shape: f.shape, first: f.data, second: seconds[i]!.data }));
}

function checkConfig(config: AdamWConfig): AdamWConfig {
  if (typeof config !== 'object' || config === null) throw new TypeError('AdamW config must be an object');
  const p = adamwConfigProblem(config);
  if (p !== null) throw new OptimError('OPTIM_INVALID_CONFIG', `AdamW ${p.field}: expected ${p.expected}, found ${String(p.found)}`, { field: p.field });
  const { learningRate, beta1, beta2, epsilon, weightDecay } = config;
  return Object.freeze({ learningRate, beta1, beta2, epsilon, weightDecay });
}

function resolveGroups(groups: NoDecayRule | ParameterGroups | null, layout: ParameterLayout): { stored: ParameterGroups | null; noDecay: Set<string> } {
  const names = layout.entries.map((e) => e.name);
  if (groups === null) return { stored: null, noDecay: new Set() };
  if (typeof groups === 'function') {
    const noDecay = names.filter((n) => groups(n));
    const decay = names.filter((n) => !groups(n));
    if (decay.length === 0 && noDecay.length === 0) throw new OptimError('OPTIM_INVALID_GROUPS', 'parameter groups: both lists are empty', { field: 'groups' });
    return { stored: Object.freeze({ decay: Object.freeze(decay), noDecay: Object.freeze(noDecay) }), noDecay: new Set(noDecay) };
  }
  const fail = (message: string): never => {
    throw new OptimError('OPTIM_INVALID_GROUPS', `parameter groups: ${message}`, { field: 'groups' });
  };
  if (!Array.isArray(groups.decay) || !Array.isArray(groups.noDecay)) fail('expected { decay: string[], noDecay: string[] }');
  for (const [label, list] of [['decay', groups.decay], ['noDecay', groups.noDecay]] as const) {
    if (list.some((n) => typeof n !== 'string')) fail(`${label} list: a name is not a string`);
  }
  const located = (list: readonly string[]): LocatedName[] => list.map((name) => ({ name, offset: 0 }));
  const problem = groupsProblem(located(groups.decay), located(groups.noDecay));
  if (problem !== null) fail(problem.message);
  const decay = new Set(groups.decay);
  const known = new Set(names);
  for (const n of [...groups.decay, ...groups.noDecay]) if (!known.has(n)) fail(`${JSON.stringify(n)} is not a parameter of the model`);
  for (const n of names) if (!decay.has(n) && !groups.noDecay.includes(n)) fail(`parameter ${JSON.stringify(n)} is in neither list`);
  return {
    stored: Object.freeze({ decay: Object.freeze([...groups.decay]), noDecay: Object.freeze([...groups.noDecay]) }),
    noDecay: new Set(groups.noDecay),
  };
}

/**
 * AdamW with decoupled weight decay, decay/no-decay groups, beta powers kept
 * by repeated multiplication and epsilon added outside the square root
 * (../../../docs/spec/training.md §6.3). Moments live in two flat arrays in model order.
 *
 * @example
 * ```ts
 * const opt = new AdamW(model, { config: { learningRate: 0.04, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01 } });
 * model.trainStep(batch);
 * opt.step({ learningRate: 0.04, clip: clipByGlobalNorm(model.gradients, 0.35) });
 * ```
 */
export class AdamW {
  /** Hyper-parameters (base learning rate included). */
  readonly config: AdamWConfig;
  /** The stored groups (null: every parameter decays). */
  readonly groups: ParameterGroups | null;
  /** Layout of the model's parameters. */
  readonly layout: ParameterLayout;
  readonly #parameters: Float64Array;
  readonly #gradients: Float64Array;
  /** Per-entry weight decay (0 for the no-decay group). */
  readonly #decay: Float64Array;
  readonly #noDecay: ReadonlySet<string>;
  /** The WebAssembly SIMD update (its memory holds the moments and the new values), or null. */
  readonly #kernel: AdamWKernel | null;
  /** Without the kernel: the moments. */
  readonly #first: Float64Array | null;
  readonly #second: Float64Array | null;
  /**
   * Without the kernel: the new parameters, first and second moments (3n),
   * committed together; with it, 3 × BLOCK for checking a block element by element.
   */
  #scratch: Float64Array | null;
  /** Per entry, this step's lr × wd (kernel path). */
  readonly #lrwd: Float64Array;
  #step = 0;
  #beta1Power = 1.0;
  #beta2Power = 1.0;

  /**
   * @param model - the model whose parameters and gradients it updates.
   * @param options - hyper-parameters and groups.
   * @throws OptimError `OPTIM_INVALID_CONFIG` or `OPTIM_INVALID_GROUPS`.
   */
  constructor(model: OptimizableModel, options: AdamWOptions) {
    this.config = checkConfig(options.config);
    this.layout = model.layout;
    const n = model.layout.size;
    if (model.parameters.length !== n || model.gradients.length !== n) {
      throw new OptimError('OPTIM_STATE_MISMATCH', `model arrays: expected ${n} parameters and gradients, found ${model.parameters.length} and ${model.gradients.length}`);
    }
    const { stored, noDecay } = resolveGroups(options.groups === undefined ? NO_DECAY_GAINS : options.groups, model.layout);
    this.groups = stored;
    this.#noDecay = noDecay;
    this.#decay = Float64Array.from(model.layout.entries, (e) => (noDecay.has(e.name) ? 0.0 : this.config.weightDecay));
    this.#parameters = model.parameters;
    this.#gradients = model.gradients;
    const kernel = AdamWKernel.create({ G: model.gradients, W: model.parameters, tensors: model.layout.entries }, callSharing(model));
    this.#kernel = kernel;
    this.#first = kernel === null ? new Float64Array(n) : null;
    this.#second = kernel === null ? new Float64Array(n) : null;
    this.#scratch = kernel === null ? new Float64Array(3 * n) : null;
    this.#lrwd = new Float64Array(model.layout.entries.length);
  }

  /**
   * An optimizer restored from checkpoint state (validated like the format
   * does, plus the fit to this model).
   * @param model - the model.
   * @param state - e.g. `decodeCheckpoint(bytes).optimizer`.
   * @returns the optimizer.
   * @throws OptimError `OPTIM_INVALID_CONFIG`, `OPTIM_INVALID_GROUPS`, `OPTIM_INVALID_STATE` or `OPTIM_STATE_MISMATCH`.
   */
  static fromAdamWState(model: OptimizableModel, state: AdamWState): AdamW {
    const opt = new AdamW(model, { config: state.config, groups: state.groups });
    opt.#load(state);
    return opt;
  }

  /**
   * First moments, model order: with WebAssembly SIMD a view of the update
   * kernel's fixed memory, which alternates between two arrays (every step
   * writes the new moments beside the current ones and then switches to
   * them), so read it afresh after a step rather than keeping the array.
   * @returns the current first moments.
   */
  get first(): Float64Array {
    return this.#kernel?.first ?? (this.#first as Float64Array);
  }

  /**
   * Second moments, model order (like {@link first}).
   * @returns the current second moments.
   */
  get second(): Float64Array {
    return this.#kernel?.second ?? (this.#second as Float64Array);
  }

  /**
   * Completed updates.
   * @returns the step count.
   */
  get stepCount(): number {
    return this.#step;
  }

  /**
   * beta1 raised to the step count by repeated multiplication (1.0 at step 0).
   * @returns the power.
   */
  get beta1Power(): number {
    return this.#beta1Power;
  }

  /**
   * beta2 raised to the step count by repeated multiplication.
   * @returns the power.
   */
  get beta2Power(): number {
    return this.#beta2Power;
  }

  /**
   * Whether the named parameter is weight-decayed.
   * @param name - parameter name.
   * @returns true when decayed.
   */
  decays(name: string): boolean {
    const i = this.layout.indexByName.get(name);
    return i !== undefined && (this.#decay[i] as number) !== 0;
  }

  /**
   * One AdamW update from the model's current gradients (../../../docs/spec/training.md §6.3),
   * optionally clipped. All new values are computed first and committed
   * together; if any is not finite, nothing changes.
   *
   * @param options - learning rate and clip.
   * @throws OptimError `OPTIM_INVALID_LEARNING_RATE`, `OPTIM_INVALID_CLIP` or `OPTIM_NON_FINITE_UPDATE`.
   */
  step(options: AdamWStepOptions = {}): void {
    const lr = options.learningRate ?? this.config.learningRate;
    if (typeof lr !== 'number' || !Number.isFinite(lr) || !(lr > 0)) {
      throw new OptimError('OPTIM_INVALID_LEARNING_RATE', `learning rate: expected a finite number > 0, found ${String(lr)}`, { field: 'learningRate', step: this.#step + 1 });
    }
    const decay = decayProductProblem(lr, this.config.weightDecay);
    if (decay !== null) {
      throw new OptimError('OPTIM_INVALID_LEARNING_RATE', `learning rate × weight decay: expected a value in (0, 1), found ${decay.found}`, { field: 'learningRate', step: this.#step + 1 });
    }
    let transform: GradientTransform = options.clip?.transform ?? { kind: 'none' };
    if (options.clipMultiplier !== undefined) {
      const c = options.clipMultiplier;
      if (options.clip !== undefined) throw new OptimError('OPTIM_INVALID_CLIP', 'give either clip or clipMultiplier, not both', { field: 'clipMultiplier' });
      if (typeof c !== 'number' || !Number.isFinite(c) || !(c > 0)) {
        throw new OptimError('OPTIM_INVALID_CLIP', `clipMultiplier: expected a finite number > 0, found ${String(c)}`, { field: 'clipMultiplier' });
      }
      transform = { kind: 'uniform', multiplier: c };
    }
    const { beta1, beta2, epsilon } = this.config;
    const b1pow = this.#beta1Power * beta1;
    const b2pow = this.#beta2Power * beta2;
    const c1 = 1.0 - b1pow;
    const c2 = 1.0 - b2pow;
    const omb1 = 1.0 - beta1;
    const omb2 = 1.0 - beta2;
    const W = this.#parameters;
    const G = this.#gradients;
    const M = this.first;
    const Vm = this.second;
    const mode: TransformMode = transform.kind === 'uniform' ? 1 : transform.kind === 'scaled' ? 2 : 0;
    const mul = transform.kind === 'uniform' ? transform.multiplier : 1;
    const div = transform.kind === 'scaled' ? transform.divisor : 1;
    const fac = transform.kind === 'scaled' ? transform.factor : 1;
    const c: UpdateConstants = { mode, beta1, omb1, beta2, omb2, c1, c2, epsilon, lr, mul, div, fac };
    const entries = this.layout.entries;
    const kernel = this.#kernel;
    let bad = -1;
    if (kernel !== null) {
      kernel.constants([beta1, omb1, beta2, omb2, c1, c2, epsilon, lr, mul, div, fac]);
      const lrwd = this.#lrwd;
      for (let t = 0; t < entries.length; t++) lrwd[t] = lr * (this.#decay[t] as number);
      // A block with a value that is not finite: the scalar loop names the first such element, from that block on.
      for (let k = kernel.run(mode, lrwd); k >= 0 && k < kernel.blocks && bad < 0; k++) {
        const b = kernel.block(k);
        bad = scalarUpdate(c, lrwd[b.tensor] as number, { G, W, M, V: Vm }, b, { S: this.#blockScratch(), base: b.start, stride: BLOCK });
      }
    } else {
      const out = { S: this.#scratch as Float64Array, base: 0, stride: W.length };
      for (let t = 0; t < entries.length && bad < 0; t++) {
        const e = entries[t] as ParameterEntry;
        bad = scalarUpdate(c, lr * (this.#decay[t] as number), { G, W, M, V: Vm }, { start: e.offset, end: e.offset + e.length }, out);
      }
    }
    if (bad >= 0) {
      const e = tensorAt(this.layout, bad) ?? entries[0]!;
      throw new OptimError('OPTIM_NON_FINITE_UPDATE', `AdamW step ${this.#step + 1}: update of ${e.name}[${bad - e.offset}] is not finite (gradient ${G[bad]}); nothing changed`, {
        tensorName: e.name,
        index: bad - e.offset,
        step: this.#step + 1,
      });
    }
    if (kernel !== null) {
      kernel.commit();
    } else {
      const S = this.#scratch as Float64Array;
      const n = W.length;
      W.set(S.subarray(0, n));
      M.set(S.subarray(n, 2 * n));
      Vm.set(S.subarray(2 * n, 3 * n));
    }
    this.#beta1Power = b1pow;
    this.#beta2Power = b2pow;
    this.#step += 1;
  }

  #blockScratch(): Float64Array {
    this.#scratch ??= new Float64Array(3 * BLOCK);
    return this.#scratch;
  }

  /**
   * The state as the checkpoint format stores it. Moments are live views of
   * {@link first}/{@link second} per parameter (model order; the encoder sorts
   * them); at step 0 there are none.
   * @returns the AdamW state.
   */
  toAdamWState(): AdamWState {
    const moments: MomentState[] = this.#step === 0 ? [] : momentViews(this.layout, this.first, this.second);
    return { config: this.config, groups: this.groups, step: BigInt(this.#step), beta1Power: this.#beta1Power, beta2Power: this.#beta2Power, moments };
  }

  /**
   * Replaces step, powers and moments with checkpoint state (config and groups
   * must equal this optimizer's). Validated first; nothing changes on error.
   * @param state - the AdamW state.
   * @throws OptimError `OPTIM_INVALID_STATE`, `OPTIM_STATE_MISMATCH` or `OPTIM_INVALID_CONFIG`.
   */
  loadAdamWState(state: AdamWState): void {
    const c = checkConfig(state.config);
    const k = this.config;
    if (c.learningRate !== k.learningRate || c.beta1 !== k.beta1 || c.beta2 !== k.beta2 || c.epsilon !== k.epsilon || c.weightDecay !== k.weightDecay) {
      throw new OptimError('OPTIM_STATE_MISMATCH', 'AdamW state: its hyper-parameters differ from this optimizer\'s; use AdamW.fromAdamWState', { field: 'config' });
    }
    const { noDecay } = resolveGroups(state.groups, this.layout);
    const same = (state.groups === null) === (this.groups === null) && noDecay.size === this.#noDecay.size && [...noDecay].every((n) => this.#noDecay.has(n));
    if (!same) throw new OptimError('OPTIM_STATE_MISMATCH', 'AdamW state: its parameter groups differ from this optimizer\'s; use AdamW.fromAdamWState', { field: 'groups' });
    this.#load(state);
  }

  #load(state: AdamWState): void {
    const fail = (code: 'OPTIM_INVALID_STATE' | 'OPTIM_STATE_MISMATCH', message: string, at: { tensorName?: string; index?: number } = {}): never => {
      const { tensorName, index } = at;
      throw new OptimError(code, `AdamW state: ${message}`, {
        ...(tensorName === undefined ? {} : { tensorName }),
        ...(index === undefined ? {} : { index }),
      });
    };
    const step = state.step;
    if (typeof step !== 'bigint' || step < 0n || step > BigInt(Number.MAX_SAFE_INTEGER)) fail('OPTIM_INVALID_STATE', `step: expected an integer in [0, 2^53), found ${String(step)}`);
    const b1 = state.beta1Power;
    const b2 = state.beta2Power;
    const moments = state.moments;
    if (step === 0n) {
      if (f64ToBits(b1) !== ONE_BITS || f64ToBits(b2) !== ONE_BITS) fail('OPTIM_INVALID_STATE', `beta powers at step 0 must be exactly 1.0, found ${b1} and ${b2}`);
      if (moments.length !== 0) fail('OPTIM_INVALID_STATE', `step 0 must have no moments, found ${moments.length}`);
    } else {
      for (const [label, p] of [['beta1Power', b1], ['beta2Power', b2]] as const) {
        if (typeof p !== 'number' || !Number.isFinite(p) || !(p >= 0 && p < 1)) fail('OPTIM_INVALID_STATE', `${label}: expected a finite number in [0, 1), found ${String(p)}`);
      }
      if (moments.length === 0) fail('OPTIM_INVALID_STATE', `step ${step} must have moments`);
    }
    const byName = new Map<string, MomentState>();
    for (const m of moments) {
      if (byName.has(m.name)) fail('OPTIM_STATE_MISMATCH', `duplicate moments for ${JSON.stringify(m.name)}`, { tensorName: m.name });
      if (!this.layout.indexByName.has(m.name)) fail('OPTIM_STATE_MISMATCH', `moments for ${JSON.stringify(m.name)}, which is not a parameter of the model`, { tensorName: m.name });
      byName.set(m.name, m);
    }
    if (step > 0n) {
      for (const e of this.layout.entries) {
        const m = byName.get(e.name);
        if (m === undefined) fail('OPTIM_STATE_MISMATCH', `no moments for parameter ${e.name}`, { tensorName: e.name });
        const mm = m as MomentState;
        if (mm.shape.length !== e.shape.length || mm.shape.some((s, i) => s !== e.shape[i]) || mm.first.length !== e.length || mm.second.length !== e.length) {
          fail('OPTIM_STATE_MISMATCH', `moments of ${e.name}: expected shape [${e.shape.join(', ')}], found [${mm.shape.join(', ')}]`, { tensorName: e.name });
        }
        for (let i = 0; i < e.length; i++) {
          const f = mm.first[i] as number;
          if (!Number.isFinite(f)) fail('OPTIM_INVALID_STATE', `first moment ${e.name}[${i}] is not finite: ${f}`, { tensorName: e.name, index: i });
        }
        for (let i = 0; i < e.length; i++) {
          const s = mm.second[i] as number;
          if (!Number.isFinite(s)) fail('OPTIM_INVALID_STATE', `second moment ${e.name}[${i}] is not finite: ${s}`, { tensorName: e.name, index: i });
          if (s < 0) fail('OPTIM_INVALID_STATE', `second moment ${e.name}[${i}] is negative: ${s}`, { tensorName: e.name, index: i });
        }
      }
    }
    if (step === 0n) {
      this.first.fill(0);
      this.second.fill(0);
    } else {
      for (const e of this.layout.entries) {
        const m = byName.get(e.name) as MomentState;
        this.first.set(m.first, e.offset);
        this.second.set(m.second, e.offset);
      }
    }
    this.#step = Number(step);
    this.#beta1Power = b1;
    this.#beta2Power = b2;
  }
}
