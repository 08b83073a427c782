/**
 * AdamW configuration, parameter-group and step-state rules (SPEC.md §6.2–§6.4,
 * §9.2 step 6–7, §9.6 steps 2–4). Shared by the decoder and the encoder so
 * both report the same code for the same violation.
 */
import { f64Text } from './bits.ts';
import { FormatError } from './errors.ts';
import type { AdamWConfig } from './types.ts';
import { compareByteWise } from './utf8.ts';

/** Absolute offsets of the five AdamW fields (SPEC.md §4). */
const ADAMW_FIELD_OFFSETS = { learningRate: 131, beta1: 139, beta2: 147, epsilon: 155, weightDecay: 163 } as const;

function adamwError(reason: string, field: keyof typeof ADAMW_FIELD_OFFSETS, rule: string, value: number): FormatError {
  return new FormatError('FORMAT_ADAMW_CONFIG', `invalid AdamW ${field} at offset ${ADAMW_FIELD_OFFSETS[field]}: expected ${rule}, found ${value}`, {
    reason,
    offset: ADAMW_FIELD_OFFSETS[field],
    field,
    expected: rule,
    found: String(value),
  });
}

/**
 * Validates the AdamW configuration in the order of SPEC.md §6.2.
 * @param config - the five hyper-parameters.
 * @throws FormatError FORMAT_ADAMW_CONFIG on the first violated rule.
 */
export function validateAdamWConfig(config: AdamWConfig): void {
  const { learningRate: lr, beta1, beta2, epsilon, weightDecay: wd } = config;
  if (!(Number.isFinite(lr) && lr > 0)) throw adamwError('invalid-learning-rate', 'learningRate', 'a finite value > 0', lr);
  if (!(Number.isFinite(beta1) && beta1 >= 0 && beta1 < 1)) throw adamwError('invalid-beta1', 'beta1', 'a finite value in [0, 1)', beta1);
  if (!(Number.isFinite(beta2) && beta2 >= 0 && beta2 < 1)) throw adamwError('invalid-beta2', 'beta2', 'a finite value in [0, 1)', beta2);
  if (!(Number.isFinite(epsilon) && epsilon > 0)) throw adamwError('invalid-epsilon', 'epsilon', 'a finite value > 0', epsilon);
  if (!(Number.isFinite(wd) && wd >= 0)) throw adamwError('invalid-weight-decay', 'weightDecay', 'a finite value >= 0', wd);
  if (wd !== 0) {
    const product = lr * wd;
    if (!(Number.isFinite(product) && product > 0 && product < 1)) {
      throw new FormatError(
        'FORMAT_ADAMW_CONFIG',
        `invalid AdamW decay product learning_rate × weight_decay = ${product}: expected a finite value in (0, 1)`,
        { reason: 'invalid-decay-product', offset: ADAMW_FIELD_OFFSETS.weightDecay, field: 'weightDecay', expected: 'learning_rate × weight_decay in (0, 1)', found: String(product) },
      );
    }
  }
}

/** A group name with the offset of its `string` field (0 when not from a file). */
export interface LocatedName {
  readonly name: string;
  readonly offset: number;
}

/**
 * Validates parameter-group lists per SPEC.md §6.3 (file order; decay list
 * first): non-empty names, no duplicate within a list, not both empty, no
 * name in both.
 * @param decay - decay names in file order.
 * @param noDecay - no-decay names in file order.
 * @throws FormatError FORMAT_ADAMW_CONFIG on the first violation.
 */
export function validateGroups(decay: readonly LocatedName[], noDecay: readonly LocatedName[]): void {
  const lists: [string, readonly LocatedName[]][] = [
    ['decay', decay],
    ['no-decay', noDecay],
  ];
  for (const [label, list] of lists) {
    const seen = new Set<string>();
    for (let i = 0; i < list.length; i++) {
      const { name, offset } = list[i] as LocatedName;
      if (name.length === 0) {
        throw new FormatError('FORMAT_ADAMW_CONFIG', `empty name at index ${i} of the ${label} group (offset ${offset}): expected a non-empty parameter name`, {
          reason: 'empty-group-name',
          offset,
          field: `${label} group[${i}]`,
          elementIndex: i,
          expected: 'non-empty name',
          found: '""',
        });
      }
      if (seen.has(name)) {
        throw new FormatError('FORMAT_ADAMW_CONFIG', `duplicate name "${name}" at index ${i} of the ${label} group (offset ${offset}): expected each name once`, {
          reason: 'duplicate-group-name',
          offset,
          field: `${label} group[${i}]`,
          recordName: name,
          elementIndex: i,
        });
      }
      seen.add(name);
    }
  }
  if (decay.length === 0 && noDecay.length === 0) {
    throw new FormatError('FORMAT_ADAMW_CONFIG', 'parameter groups present but both lists are empty: expected at least one name', {
      reason: 'empty-groups',
      field: 'parameter groups',
    });
  }
  const noDecaySet = new Set(noDecay.map((n) => n.name));
  for (let i = 0; i < decay.length; i++) {
    const { name, offset } = decay[i] as LocatedName;
    if (noDecaySet.has(name)) {
      throw new FormatError('FORMAT_ADAMW_CONFIG', `name "${name}" is in both the decay and the no-decay group (decay entry at offset ${offset})`, {
        reason: 'name-in-both-groups',
        offset,
        field: `decay group[${i}]`,
        recordName: name,
      });
    }
  }
}

const ONE_BITS_CHECK = 1;

/**
 * Validates the beta powers for the optimizer step (SPEC.md §6.4, §9.6 step 2):
 * exactly 1.0 at step 0, finite in [0, 1) after.
 * @param step - optimizer step.
 * @param beta1Power - running beta1 product.
 * @param beta2Power - running beta2 product.
 * @param offsets - absolute offsets of the two fields, for errors.
 * @throws FormatError FORMAT_ADAMW_STATE (`invalid-beta-power`).
 */
export function validateBetaPowers(step: bigint, beta1Power: number, beta2Power: number, offsets: readonly [number, number] = [0, 0]): void {
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
 * Step-0 / step>0 state presence (SPEC.md §9.6 step 3).
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
 * (SPEC.md §6.3, §9.6 step 4).
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
