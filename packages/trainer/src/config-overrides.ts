/**
 * Command-line overrides of a trainer config (`llmcp train --set
 * key.path=value`): each assignment replaces one dotted key of the config
 * input before it is validated by the same zod schema as a config file.
 * Values are JSON when they parse as JSON (`0.01`, `true`, `null`,
 * `{"kind":"constant"}`), else the text itself (`prompt=Once upon`). A key
 * the config does not have is refused with the nearest key it does have.
 */
import { TrainerError } from './errors.ts';
import { assertConfigJsonDepth } from './config.ts';
import { configKeyPaths, nearestConfigKey } from './config-schema.ts';

/** One parsed `key.path=value` assignment. */
export interface ConfigAssignment {
  /** The dotted key, e.g. `optimizer.learningRate`. */
  readonly key: string;
  /** The value: parsed JSON, or the text when it is not JSON. */
  readonly value: unknown;
}

const KEY = /^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$/;

/**
 * Parses one `key.path=value` assignment (split at the first `=`).
 *
 * @param text - e.g. `optimizer.learningRate=0.01`.
 * @returns the key and value.
 * @throws TrainerError `TRAINER_CONFIG_INVALID` without `=` or with a key that is not dotted identifiers.
 * @example
 * ```ts
 * parseConfigAssignment('sampling.prompt=Once'); // { key: 'sampling.prompt', value: 'Once' }
 * ```
 */
export function parseConfigAssignment(text: string): ConfigAssignment {
  const eq = text.indexOf('=');
  const key = eq === -1 ? text : text.slice(0, eq).trim();
  if (eq === -1 || !KEY.test(key)) {
    throw new TrainerError('TRAINER_CONFIG_INVALID', `override ${JSON.stringify(text)}: expected key.path=value, e.g. optimizer.learningRate=0.01`, { fields: [key] });
  }
  const raw = text.slice(eq + 1);
  // JSON when it parses (and nests no deeper than a config may), else the text itself.
  let value: unknown = raw;
  try {
    value = JSON.parse(raw);
  } catch {
    return { key, value: raw };
  }
  // JSON, then no deeper than a config may nest (the schema and the copy of the config walk it recursively).
  assertConfigJsonDepth(raw, `override ${key}`, { code: 'TRAINER_CONFIG_INVALID', fields: [key] });
  return { key, value };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Applies `key.path=value` assignments, in order, to a config input (a copy;
 * the input is not changed). Intermediate objects are created as needed. The
 * result still has to pass `parseConfig`.
 *
 * @param input - a config input (parsed JSON of a file, or a preset's input).
 * @param assignments - `key.path=value` texts.
 * @returns the changed copy.
 * @throws TrainerError `TRAINER_CONFIG_INVALID` for a malformed assignment, or a key the config does not have (with the nearest known key).
 * @example
 * ```ts
 * const config = parseConfig(applyConfigOverrides(ch33Config(), ['steps=4', 'checkpoint.every=2']));
 * ```
 */
export function applyConfigOverrides(input: unknown, assignments: readonly string[]): Record<string, unknown> {
  const root: Record<string, unknown> = isPlainObject(input) ? (JSON.parse(JSON.stringify(input)) as Record<string, unknown>) : {};
  const known = configKeyPaths();
  for (const text of assignments) {
    const { key, value } = parseConfigAssignment(text);
    if (!known.includes(key)) {
      const near = nearestConfigKey(key);
      throw new TrainerError('TRAINER_CONFIG_INVALID', `override ${key}: the config has no key ${key}${near === null ? '' : `; did you mean ${near}?`}`, { fields: [key] });
    }
    const parts = key.split('.');
    let node = root;
    for (const part of parts.slice(0, -1)) {
      const next = node[part];
      if (!isPlainObject(next)) node[part] = {};
      node = node[part] as Record<string, unknown>;
    }
    node[parts[parts.length - 1] as string] = value;
  }
  return root;
}
