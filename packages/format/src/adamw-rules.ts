/**
 * AdamW configuration, parameter-group and step-state rules (../SPEC.md §6.2–§6.4,
 * §9.2 step 6–7, §9.6 steps 2–4). Shared by the decoder and the encoder so
 * both report the same code for the same violation.
 */
import { f64Text } from './bits.ts';
import { FormatError } from './errors.ts';
import type { AdamWConfig } from './types.ts';
import { compareByteWise } from './utf8.ts';

/** Absolute offsets of the five AdamW fields (../SPEC.md §4). */
const ADAMW_FIELD_OFFSETS = { learningRate: 131, beta1: 139, beta2: 147, epsilon: 155, weightDecay: 163 } as const;

/** The five AdamW hyper-parameters' names. */
export type AdamWField = keyof typeof ADAMW_FIELD_OFFSETS;

/** What is wrong with an AdamW configuration (../SPEC.md §6.2): the first broken rule. */
export interface AdamWConfigProblem {
  readonly field: AdamWField;
  /** Stable reason, e.g. `invalid-beta1` (the `reason` of a `FORMAT_ADAMW_CONFIG` error). */
  readonly reason: string;
  /** The rule, e.g. `a finite value in [0, 1)`. */
  readonly expected: string;
  /** The offending value (for the decay product: the product). */
  readonly found: number;
}

function adamwError(p: AdamWConfigProblem): FormatError {
  const { reason, field, expected, found } = p;
  return new FormatError('FORMAT_ADAMW_CONFIG', `invalid AdamW ${field} at offset ${ADAMW_FIELD_OFFSETS[field]}: expected ${expected}, found ${found}`, {
    reason,
    offset: ADAMW_FIELD_OFFSETS[field],
    field,
    expected,
    found: String(found),
  });
}

const isFinite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/**
 * The decay-product rule of ../SPEC.md §6.2: with weight decay on, the factor
 * `1 − learning_rate × weight_decay` must stay in (0, 1). The optimizer
 * checks it again for every scheduled learning rate.
 *
 * @param learningRate - the learning rate in use.
 * @param weightDecay - the weight decay (0 disables the rule).
 * @returns the problem, or null.
 */
export function decayProductProblem(learningRate: number, weightDecay: number): AdamWConfigProblem | null {
  if (weightDecay === 0) return null;
  const product = learningRate * weightDecay;
  return Number.isFinite(product) && product > 0 && product < 1
    ? null
    : { field: 'weightDecay', reason: 'invalid-decay-product', expected: 'learning_rate × weight_decay in (0, 1)', found: product };
}

/**
 * The AdamW configuration rules of ../SPEC.md §6.2, in its order — the one home
 * of these rules: the format's validation, `@llmcp/optim` and the trainer's
 * config schema call this and wrap the problem in their own error class.
 *
 * @param config - the five hyper-parameters (any values).
 * @returns the first problem, or null when the configuration is valid.
 * @example
 * ```ts
 * adamwConfigProblem({ learningRate: 0.01, beta1: 0.9, beta2: 1, epsilon: 1e-8, weightDecay: 0 })?.reason; // 'invalid-beta2'
 * ```
 */
export function adamwConfigProblem(config: AdamWConfig): AdamWConfigProblem | null {
  const { learningRate: lr, beta1, beta2, epsilon, weightDecay: wd } = config;
  if (!(isFinite(lr) && lr > 0)) return { field: 'learningRate', reason: 'invalid-learning-rate', expected: 'a finite value > 0', found: lr };
  if (!(isFinite(beta1) && beta1 >= 0 && beta1 < 1)) return { field: 'beta1', reason: 'invalid-beta1', expected: 'a finite value in [0, 1)', found: beta1 };
  if (!(isFinite(beta2) && beta2 >= 0 && beta2 < 1)) return { field: 'beta2', reason: 'invalid-beta2', expected: 'a finite value in [0, 1)', found: beta2 };
  if (!(isFinite(epsilon) && epsilon > 0)) return { field: 'epsilon', reason: 'invalid-epsilon', expected: 'a finite value > 0', found: epsilon };
  if (!(isFinite(wd) && wd >= 0)) return { field: 'weightDecay', reason: 'invalid-weight-decay', expected: 'a finite value >= 0', found: wd };
  return decayProductProblem(lr, wd);
}

/**
 * Validates the AdamW configuration in the order of ../SPEC.md §6.2.
 * @param config - the five hyper-parameters.
 * @throws FormatError FORMAT_ADAMW_CONFIG on the first violated rule.
 */
export function validateAdamWConfig(config: AdamWConfig): void {
  const p = adamwConfigProblem(config);
  if (p === null) return;
  if (p.reason === 'invalid-decay-product') {
    throw new FormatError('FORMAT_ADAMW_CONFIG', `invalid AdamW decay product learning_rate × weight_decay = ${p.found}: expected a finite value in (0, 1)`, {
      reason: p.reason,
      offset: ADAMW_FIELD_OFFSETS.weightDecay,
      field: 'weightDecay',
      expected: p.expected,
      found: String(p.found),
    });
  }
  throw adamwError(p);
}

/** A group name with the offset of its `string` field (0 when not from a file). */
export interface LocatedName {
  readonly name: string;
  readonly offset: number;
}

/** What is wrong with a pair of parameter-group lists (../SPEC.md §6.3). */
export interface GroupsProblem {
  /** Stable reason: `empty-group-name`, `duplicate-group-name`, `empty-groups` or `name-in-both-groups`. */
  readonly reason: string;
  /** One sentence saying what is wrong (with file offsets when the names carry them). */
  readonly message: string;
  /** Which list entry, e.g. `decay group[2]`, or `parameter groups`. */
  readonly field: string;
  readonly offset?: number;
  readonly name?: string;
  readonly index?: number;
}

/**
 * The parameter-group rules of ../SPEC.md §6.3 (file order; decay list first):
 * non-empty names, no duplicate within a list, not both lists empty, no name
 * in both — the one home of these rules (the format's validation and
 * `@llmcp/optim` call it).
 *
 * @param decay - decay names in order (`offset` 0 when not from a file).
 * @param noDecay - no-decay names in order.
 * @returns the first problem, or null.
 */
export function groupsProblem(decay: readonly LocatedName[], noDecay: readonly LocatedName[]): GroupsProblem | null {
  const at = (offset: number): string => (offset > 0 ? ` (offset ${offset})` : '');
  const lists: [string, readonly LocatedName[]][] = [
    ['decay', decay],
    ['no-decay', noDecay],
  ];
  for (const [label, list] of lists) {
    const seen = new Set<string>();
    for (let i = 0; i < list.length; i++) {
      const { name, offset } = list[i] as LocatedName;
      const field = `${label} group[${i}]`;
      if (name.length === 0) return { reason: 'empty-group-name', message: `empty name at index ${i} of the ${label} group${at(offset)}: expected a non-empty parameter name`, field, offset, index: i };
      if (seen.has(name)) return { reason: 'duplicate-group-name', message: `duplicate name "${name}" at index ${i} of the ${label} group${at(offset)}: expected each name once`, field, offset, name, index: i };
      seen.add(name);
    }
  }
  if (decay.length === 0 && noDecay.length === 0) return { reason: 'empty-groups', message: 'parameter groups present but both lists are empty: expected at least one name', field: 'parameter groups' };
  const noDecaySet = new Set(noDecay.map((n) => n.name));
  for (let i = 0; i < decay.length; i++) {
    const { name, offset } = decay[i] as LocatedName;
    if (noDecaySet.has(name)) return { reason: 'name-in-both-groups', message: `name "${name}" is in both the decay and the no-decay group${offset > 0 ? ` (decay entry at offset ${offset})` : ''}`, field: `decay group[${i}]`, offset, name };
  }
  return null;
}

/**
 * Validates parameter-group lists per ../SPEC.md §6.3.
 * @param decay - decay names in file order.
 * @param noDecay - no-decay names in file order.
 * @throws FormatError FORMAT_ADAMW_CONFIG on the first violation.
 */
export function validateGroups(decay: readonly LocatedName[], noDecay: readonly LocatedName[]): void {
  const p = groupsProblem(decay, noDecay);
  if (p === null) return;
  throw new FormatError('FORMAT_ADAMW_CONFIG', p.message, {
    reason: p.reason,
    field: p.field,
    ...(p.offset !== undefined ? { offset: p.offset } : {}),
    ...(p.name !== undefined ? { recordName: p.name } : {}),
    ...(p.index !== undefined ? { elementIndex: p.index } : {}),
    ...(p.reason === 'empty-group-name' ? { expected: 'non-empty name', found: '""' } : {}),
  });
}

const ONE_BITS_CHECK = 1;

/**
 * Validates the beta powers for the optimizer step (../SPEC.md §6.4, §9.6 step 2):
 * exactly 1.0 at step 0, finite in [0, 1) after.
 * @param step - optimizer step.
 * @param powers - the running beta1 and beta2 products, `[beta1Power, beta2Power]`.
 * @param offsets - absolute offsets of the two fields, for errors.
 * @throws FormatError FORMAT_ADAMW_STATE (`invalid-beta-power`).
 */
export function validateBetaPowers(step: bigint, powers: readonly [beta1Power: number, beta2Power: number], offsets: readonly [number, number] = [0, 0]): void {
  const [beta1Power, beta2Power] = powers;
  const entries: [string, number, number][] = [
    ['beta1Power', beta1Power, offsets[0]],
    ['beta2Power', beta2Power, offsets[1]],
  ];
  for (const [field, value, offset] of entries) {
    // 1.0 has exactly one bit pattern (0x3ff0000000000000), so `===` is a bit comparison here.
    const ok = step === 0n ? value === ONE_BITS_CHECK : Number.isFinite(value) && value >= 0 && value < 1;
    if (!ok) {
      const expected = step === 0n ? 'exactly 1.0 at step 0' : `a finite value in [0, 1) at step ${step}`;
      throw new FormatError('FORMAT_ADAMW_STATE', `invalid ${field} at offset ${offset}: expected ${expected}, found ${f64Text(value)}`, {
        reason: 'invalid-beta-power',
        offset,
        field,
        expected,
        found: f64Text(value),
      });
    }
  }
}

/**
 * Step-0 / step>0 state presence (../SPEC.md §9.6 step 3).
 * @param step - optimizer step.
 * @param momentCount - number of parameters with moment state.
 * @throws FormatError FORMAT_ADAMW_STATE (`state-presence`).
 */
export function validateStatePresence(step: bigint, momentCount: number): void {
  if (step === 0n && momentCount > 0) {
    throw new FormatError('FORMAT_ADAMW_STATE', `optimizer step 0 with ${momentCount} moment entries: expected no moment state at step 0`, {
      reason: 'state-presence',
      field: 'optimizer state count',
      expected: '0',
      found: String(momentCount),
    });
  }
  if (step > 0n && momentCount === 0) {
    throw new FormatError('FORMAT_ADAMW_STATE', `optimizer step ${step} without moment state: expected moments for every parameter`, {
      reason: 'state-presence',
      field: 'optimizer state count',
      expected: '> 0',
      found: '0',
    });
  }
}

/**
 * Groups must cover exactly the names with moment state when step > 0
 * (../SPEC.md §6.3, §9.6 step 4).
 * @param decay - decay names.
 * @param noDecay - no-decay names.
 * @param momentNames - names with moment state.
 * @throws FormatError FORMAT_ADAMW_STATE (`groups-mismatch`).
 */
export function validateGroupCoverage(decay: readonly string[], noDecay: readonly string[], momentNames: readonly string[]): void {
  const union = [...decay, ...noDecay].sort(compareByteWise);
  const moments = [...momentNames].sort(compareByteWise);
  const n = Math.max(union.length, moments.length);
  for (let i = 0; i < n; i++) {
    if (union[i] !== moments[i]) {
      throw new FormatError(
        'FORMAT_ADAMW_STATE',
        `parameter groups do not match the moment state: at sorted position ${i} expected ${moments[i] === undefined ? 'no further name' : `"${moments[i]}"`} (from moments), found ${union[i] === undefined ? 'no further name' : `"${union[i]}"`} (from groups)`,
        { reason: 'groups-mismatch', field: 'parameter groups', elementIndex: i, expected: moments[i] ?? '(none)', found: union[i] ?? '(none)' },
      );
    }
  }
}
