import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseConfig } from './config.ts';
import { CONFIG_SCHEMA_FILE, CONFIG_SCHEMA_REF, configKeyPaths, nearestConfigKey, trainerConfigJsonSchema } from './config-schema.ts';
import { CH33_CONFIG_INPUT } from './presets.ts';
import manifest from '../package.json' with { type: 'json' };

describe('trainerConfigJsonSchema', () => {
  it('equals the committed config.schema.json (regenerate with pnpm --filter @llmcp/trainer run schema)', () => {
    const committed = readFileSync(fileURLToPath(new URL(`../${CONFIG_SCHEMA_FILE}`, import.meta.url)), 'utf8');
    expect(committed).toBe(`${JSON.stringify(trainerConfigJsonSchema(), null, 2)}\n`);
  });

  it('is shipped: listed in files and exports of package.json', () => {
    expect(manifest.files).toContain(CONFIG_SCHEMA_FILE);
    expect((manifest.exports as Record<string, unknown>)[`./${CONFIG_SCHEMA_FILE}`]).toBe(`./${CONFIG_SCHEMA_FILE}`);
  });

  it('describes the keys of the zod schema, $schema included, and refuses unknown ones', () => {
    const schema = trainerConfigJsonSchema() as { properties: Record<string, unknown>; additionalProperties: unknown; required: string[] };
    expect(Object.keys(schema.properties)).toEqual(['$schema', 'steps', 'data', 'tokenizer', 'model', 'optimizer', 'schedule', 'evaluation', 'checkpoint', 'sampling', 'log', 'threads', 'engine']);
    expect(schema.additionalProperties).toBe(false);
    expect(schema.required).toEqual(['data']);
  });

  it('holds no value of this machine: threads (default: the cores) has no default in the schema', () => {
    const threads = (trainerConfigJsonSchema() as { properties: Record<string, Record<string, unknown>> }).properties.threads;
    expect(threads).not.toHaveProperty('default');
    expect(threads?.description).toMatch(/this machine's cores/);
  });
});

describe('parseConfig', () => {
  it('accepts a "$schema" key (the config files llmcp writes carry one)', () => {
    expect((parseConfig({ ...CH33_CONFIG_INPUT, $schema: CONFIG_SCHEMA_REF }) as { $schema?: string }).$schema).toBe(CONFIG_SCHEMA_REF);
  });
});

describe('configKeyPaths', () => {
  it('lists nested keys of every union alternative', () => {
    const keys = configKeyPaths();
    for (const k of ['steps', 'data.contextLength', 'data.source.path', 'data.source.corpus', 'tokenizer.merges', 'schedule.warmupSteps', 'sampling.topK']) expect(keys).toContain(k);
    expect(keys).not.toContain('$schema');
  });
});

describe('nearestConfigKey', () => {
  it('suggests the nearest key by the whole path or by its last segment', () => {
    expect(nearestConfigKey('optimizer.learning_rate')).toBe('optimizer.learningRate');
    expect(nearestConfigKey('data.contextLenght')).toBe('data.contextLength');
    expect(nearestConfigKey('contextLength')).toBe('data.contextLength');
    expect(nearestConfigKey('model.widht')).toBe('model.width');
  });

  it('suggests nothing for a key far from every key', () => {
    expect(nearestConfigKey('zzzzzzzzzz.qqqqqqqq')).toBeNull();
  });
});
