/**
 * `llmcp train --set/--size/--corpus` and `llmcp config`: one way to build a
 * config, validated by the trainer's schema, printed in full.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ch33Config, CONFIG_SCHEMA_REF, SIZE_PRESETS } from '@llmcp/trainer';
import { llmcp, tempDir } from './helpers.ts';

const tmp = tempDir('llmcp-config-');
afterAll(() => tmp.cleanup());
const text = path.join(tmp.dir, 'stories.txt');
// Varied text (a BPE of 254 merges would fold one repeated sentence into a few tokens): a fixed LCG picks the letters.
let lcg = 7;
const letters = (): string => Array.from({ length: 400 }, () => ((lcg = (lcg * 1103515245 + 12345) % 2 ** 31), 'abcdefghij klmnop'[lcg % 17])).join('');
writeFileSync(text, Array.from({ length: 12 }, letters).join('\n\n'));

async function configOf(args: readonly string[]): Promise<Record<string, unknown> & { $schema: string }> {
  const r = await llmcp(['config', ...args]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Record<string, unknown> & { $schema: string };
}

describe('llmcp config <preset|file|run>', () => {
  it('prints the full effective config of a preset, "$schema" first', async () => {
    const r = await llmcp(['config', 'ch33']);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(Object.keys(doc)[0]).toBe('$schema');
    expect(doc).toEqual({ $schema: CONFIG_SCHEMA_REF, ...ch33Config() });
  });

  it('applies --set overrides in order: JSON values when they parse, else text', async () => {
    const doc = await configOf(['ch33', '--set', 'steps=4', '--set', 'checkpoint.every=2', '--set', 'sampling.prompt=01', '--set', 'optimizer.clipNorm=null']);
    expect(doc).toMatchObject({ steps: 4, checkpoint: { every: 2 }, sampling: { prompt: '01' }, optimizer: { clipNorm: null } });
  });

  it('answers an unknown key with the nearest known one (exit 3)', async () => {
    const r = await llmcp(['config', 'ch33', '--set', 'optimizer.learning_rate=0.1']);
    expect(r.code).toBe(3);
    expect(r.stderr.split('\n')[0]).toBe(
      'llmcp config: error: preset ch33 with --set: TRAINER_CONFIG_INVALID: override optimizer.learning_rate: the config has no key optimizer.learning_rate; did you mean optimizer.learningRate?',
    );
  });

  it('validates the result with the config schema, and refuses an assignment without = (exit 3)', async () => {
    const bad = await llmcp(['config', 'ch33', '--set', 'steps=-1']);
    expect(bad.code).toBe(3);
    expect(bad.stderr.split('\n')[0]).toMatch(/^llmcp config: error: preset ch33 with --set: TRAINER_CONFIG_INVALID: invalid trainer config: config\.steps: /);
    const noValue = await llmcp(['config', 'ch33', '--set', 'steps']);
    expect(noValue.code).toBe(3);
    expect(noValue.stderr.split('\n')[0]).toBe('llmcp config: error: preset ch33 with --set: TRAINER_CONFIG_INVALID: override "steps": expected key.path=value, e.g. optimizer.learningRate=0.01');
  });

  it('a size preset on a corpus: the trainer\'s sizes (a text file, or the bundled bilingual corpus)', async () => {
    const tiny = await configOf(['tiny', '--corpus', text]);
    expect(tiny).toMatchObject({ steps: SIZE_PRESETS.tiny.steps, model: { width: 32, heads: 2, layers: 1 }, data: { contextLength: 32, source: { kind: 'text', path: text } } });
    const bilingual = await configOf(['small', '--corpus', 'bilingual']);
    expect((bilingual.data as { source: { kind: string } }).source.kind).toBe('corpus');
    const missing = await llmcp(['config', 'tiny']);
    expect(missing.code).toBe(2);
    expect(missing.stderr.split('\n')[0]).toBe('llmcp config: error: --size tiny needs --corpus <file|folder|bilingual>: the text to train on');
    const json = path.join(tmp.dir, 'corpus.json');
    writeFileSync(json, '{}');
    const noSplit = await llmcp(['config', 'tiny', '--corpus', json]);
    expect(noSplit.code).toBe(2);
    expect(noSplit.stderr.split('\n')[0]).toBe(`llmcp config: error: a JSON corpus needs its split manifest: --corpus ${json} --split <manifest.json>`);
  });

  it('a config file: "$schema" is accepted, relative paths resolve against its directory', async () => {
    const file = path.join(tmp.dir, 'train.json');
    writeFileSync(file, JSON.stringify({ $schema: CONFIG_SCHEMA_REF, steps: 200, data: { source: { kind: 'text', path: 'stories.txt' } } }));
    const doc = await configOf([file]);
    expect(doc).toMatchObject({ $schema: CONFIG_SCHEMA_REF, steps: 200, data: { source: { kind: 'text', path: text } } });
  });

  it('names what it accepts for anything else (exit 3)', async () => {
    const r = await llmcp(['config', path.join(tmp.dir, 'nothing')]);
    expect(r.code).toBe(3);
    expect(r.stderr.split('\n')[0]).toBe(`llmcp config: error: ${path.join(tmp.dir, 'nothing')} is not a run directory, a preset (ch33, ch34, ch39, tiny, small, medium) or a config file`);
  });
});

describe('llmcp train --set / --size / --corpus', () => {
  it('trains a preset with overrides; llmcp config of the run prints its recorded config, after a pivot too', async () => {
    const run = path.join(tmp.dir, 'short');
    const r = await llmcp(['train', run, '--preset', 'ch33', '--set', 'steps=4', '--set', 'checkpoint.every=2', '--plain']);
    expect(r.code, r.stderr).toBe(0);
    const recorded = await configOf([run]);
    expect(recorded).toMatchObject({ steps: 4, checkpoint: { every: 2 } });
    // Pivot to a new budget with a config printed by llmcp config itself.
    const next = path.join(tmp.dir, 'next.json');
    const printed = await llmcp(['config', run]);
    const edited = { ...(JSON.parse(printed.stdout) as Record<string, unknown>), steps: 6, schedule: { kind: 'constant', rate: 0.008 } };
    writeFileSync(next, JSON.stringify(edited));
    const pivot = await llmcp(['pivot', run, '--config', next, '--change', 'steps,schedule']);
    expect(pivot.code, pivot.stderr).toBe(0);
    expect(await configOf([run])).toMatchObject({ steps: 6, schedule: { kind: 'constant', rate: 0.008 } });
    // With --set: the run's config as 'llmcp pivot <run> --set …' would make it; --size and --corpus stay a preset's.
    expect(await configOf([run, '--set', 'steps=8'])).toMatchObject({ steps: 8, schedule: { kind: 'constant', rate: 0.008 } });
    const refused = await llmcp(['config', run, '--corpus', 'bilingual']);
    expect(refused.code).toBe(2);
  });

  it('trains a size preset on a text corpus', async () => {
    const run = path.join(tmp.dir, 'tiny');
    const r = await llmcp(['train', run, '--size', 'tiny', '--corpus', text, '--set', 'steps=2', '--set', 'data.contextLength=8', '--set', 'evaluation.stride=8', '--set', 'sampling.count=0', '--set', 'log.timing=false', '--plain']);
    expect(r.code, r.stderr).toBe(0);
    const job = JSON.parse(readFileSync(path.join(run, 'checkpoints', 'latest', 'job.json'), 'utf8')) as { config: { model: { width: number }; steps: number } };
    expect([job.config.model.width, job.config.steps]).toEqual([32, 2]);
  }, 120_000);

  it('refuses two config sources, --set without one, and an unknown size (exit 2)', async () => {
    const cases: [string[], string][] = [
      [['--preset', 'ch33', '--size', 'tiny'], 'llmcp train: error: give one of --config, --preset or --size/--corpus, not --preset and --size/--corpus'],
      [['--set', 'steps=4'], 'llmcp train: error: --set changes a config: give --config <file>, --preset <name> or --size/--corpus too'],
      [['--size', 'huge', '--corpus', text], 'llmcp train: error: --size must be one of tiny, small, medium, found "huge"'],
    ];
    for (const [args, message] of cases) {
      const r = await llmcp(['train', path.join(tmp.dir, 'never'), ...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.split('\n')[0]).toBe(message);
    }
  });

  it('documents the forms in --help', async () => {
    const help = (await llmcp(['train', '--help'])).stdout.replace(/\s+/g, ' ');
    for (const s of ['--set <key=value>', '--size <name>', '--corpus <file|folder|bilingual>', 'llmcp config prints the full effective config']) expect(help).toContain(s);
  });
});
