import { describe, expect, it } from 'vitest';
import { parseConfig } from './config.ts';
import { applyConfigOverrides, parseConfigAssignment } from './config-overrides.ts';
import { isTrainerError } from './errors.ts';
import { CH33_CONFIG_INPUT } from './presets.ts';

function failure(f: () => unknown): { code: string; message: string; fields: readonly string[] | undefined } {
  try {
    f();
  } catch (e) {
    if (isTrainerError(e)) return { code: e.code, message: e.message, fields: e.fields };
    throw e;
  }
  throw new Error('expected a TrainerError');
}

describe('parseConfigAssignment', () => {
  it('parses the value as JSON when it parses, else keeps the text', () => {
    expect(parseConfigAssignment('steps=4')).toEqual({ key: 'steps', value: 4 });
    expect(parseConfigAssignment('optimizer.clipNorm=null')).toEqual({ key: 'optimizer.clipNorm', value: null });
    expect(parseConfigAssignment('log.timing=false')).toEqual({ key: 'log.timing', value: false });
    expect(parseConfigAssignment('schedule={"kind":"constant"}')).toEqual({ key: 'schedule', value: { kind: 'constant' } });
    expect(parseConfigAssignment('sampling.prompt=Once upon a=b')).toEqual({ key: 'sampling.prompt', value: 'Once upon a=b' });
    expect(parseConfigAssignment('sampling.prompt="42"')).toEqual({ key: 'sampling.prompt', value: '42' });
    expect(parseConfigAssignment('sampling.prompt=')).toEqual({ key: 'sampling.prompt', value: '' });
  });

  it('refuses text without = or with a key that is not dotted names', () => {
    expect(failure(() => parseConfigAssignment('steps'))).toMatchObject({ code: 'TRAINER_CONFIG_INVALID', message: 'override "steps": expected key.path=value, e.g. optimizer.learningRate=0.01' });
    expect(failure(() => parseConfigAssignment('a..b=1')).code).toBe('TRAINER_CONFIG_INVALID');
  });
});

describe('applyConfigOverrides', () => {
  it('replaces dotted keys of a copy, in order; parseConfig validates the result', () => {
    const input = JSON.parse(JSON.stringify(CH33_CONFIG_INPUT)) as unknown;
    const changed = applyConfigOverrides(input, ['steps=6', 'checkpoint.every=2', 'checkpoint.every=6', 'sampling.prompt=01']);
    const config = parseConfig(changed);
    expect(config.steps).toBe(6);
    expect(config.checkpoint.every).toBe(6);
    expect(config.sampling.prompt).toBe('01');
    expect(input).toEqual(CH33_CONFIG_INPUT);
  });

  it('creates the objects on the way to a key', () => {
    expect(applyConfigOverrides({}, ['model.width=8'])).toEqual({ model: { width: 8 } });
  });

  it('refuses an unknown key, naming the nearest known one', () => {
    expect(failure(() => applyConfigOverrides(CH33_CONFIG_INPUT, ['optimizer.learning_rate=0.1']))).toEqual({
      code: 'TRAINER_CONFIG_INVALID',
      message: 'override optimizer.learning_rate: the config has no key optimizer.learning_rate; did you mean optimizer.learningRate?',
      fields: ['optimizer.learning_rate'],
    });
    expect(failure(() => applyConfigOverrides(CH33_CONFIG_INPUT, ['qqqqqqqqqq=1'])).message).toBe('override qqqqqqqqqq: the config has no key qqqqqqqqqq');
  });

  it('leaves a bad value to the schema: parseConfig names the key', () => {
    expect(failure(() => parseConfig(applyConfigOverrides(CH33_CONFIG_INPUT, ['steps=-1']))).message).toMatch(/^invalid trainer config: config\.steps: /);
  });
});
