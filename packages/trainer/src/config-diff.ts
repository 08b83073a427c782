/**
 * What differs between two configs, and which differences a run may take:
 * the policy fields a pivot or fork may change, and the step budget a resume
 * may change on its own (as a recorded pivot; see step-budget.ts for the
 * sentence describing it). One home for these rules.
 */
import type { TrainerConfig } from './config.ts';

/** Config paths that name file locations; their *contents* are compared through input identities instead. */
export const LOCATION_FIELDS: readonly string[] = ['data.source.corpus', 'data.source.split', 'data.source.path', 'tokenizer.path'];

/** Config paths a pivot or fork may change (policy, not model, data or tokenizer). Prefix match on dotted keys. */
export const POLICY_FIELDS: readonly string[] = [
  'steps',
  'schedule',
  'optimizer.learningRate',
  'optimizer.weightDecay',
  'optimizer.clipNorm',
  'evaluation',
  'checkpoint',
  'sampling.prompt',
  'sampling.count',
  'sampling.maxNewTokens',
  'sampling.temperature',
  'sampling.topK',
  'log',
  'threads',
  // The engine, its world size, device, precision and threads per rank: the summation order changes with them.
  'engine',
];

function flatten(value: unknown, prefix: string, out: Map<string, string>): void {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) flatten(record[key], prefix === '' ? key : `${prefix}.${key}`, out);
    return;
  }
  out.set(prefix, JSON.stringify(value));
}

/**
 * The dotted keys whose values differ between two configs (arrays compare as
 * a whole), excluding file locations and `threads` (which never changes bits).
 *
 * @param before - the recorded config.
 * @param after - the requested config.
 * @returns sorted dotted keys, empty when the configs are equivalent.
 */
export function diffConfig(before: TrainerConfig, after: TrainerConfig): string[] {
  const a = new Map<string, string>();
  const b = new Map<string, string>();
  flatten(before, '', a);
  flatten(after, '', b);
  const keys = new Set([...a.keys(), ...b.keys()]);
  const changed: string[] = [];
  for (const key of keys) {
    if (LOCATION_FIELDS.includes(key) || key === 'threads' || key === '$schema') continue;
    if (a.get(key) !== b.get(key)) changed.push(key);
  }
  return changed.sort();
}

/**
 * Whether a dotted config key may change in a pivot or fork.
 *
 * @param key - a dotted key from {@link diffConfig}.
 * @returns true for policy fields.
 */
export function isPolicyField(key: string): boolean {
  return POLICY_FIELDS.some((p) => key === p || key.startsWith(`${p}.`));
}


/**
 * Whether a declared change key names policy: a policy field, or a prefix of
 * one (`sampling` covers `sampling.prompt`).
 *
 * @param key - a dotted key as declared in a pivot's or fork's `changes`.
 * @returns true when it names policy only.
 */
export function isPolicyDeclaration(key: string): boolean {
  return isPolicyField(key) || POLICY_FIELDS.some((p) => p.startsWith(`${key}.`));
}

/** The config keys a resume may change on its own (as a recorded pivot). */
export const RESUME_CHANGEABLE_FIELDS: readonly string[] = ['steps'];

/**
 * Whether a config difference is a step-budget change a resume applies itself.
 *
 * @param changed - the keys of `diffConfig(recorded, requested)`.
 * @returns true when the budget is the only difference.
 */
export function isStepBudgetChange(changed: readonly string[]): boolean {
  return changed.length > 0 && changed.every((k) => RESUME_CHANGEABLE_FIELDS.includes(k));
}
