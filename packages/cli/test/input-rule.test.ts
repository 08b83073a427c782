/**
 * The input rule, whichever route names the file: a corpus, split, tokenizer
 * file or config is read only as a regular file of bounded size (a FIFO, a
 * socket or a device node — `/dev/zero`'s numbers, made in a scratch folder —
 * is refused at once, exit 3, naming the path and its kind; it used to block
 * `train` for ever when the path came from a config file or `--set`), and a
 * config nests no deeper than the JSON limit (exit 3, not a stack overflow).
 * A run's own files in the place of a FIFO or device give a typed refusal too.
 */
import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ch33Config } from '@llmcp/trainer';
import { canMakeDeviceNodes, makeSpecialFile, type SpecialFileKind } from '../../../tools/fixtures.ts';
import { llmcp, tempDir } from './helpers.ts';

const tmp = tempDir('llmcp-input-rule-');
const devices = canMakeDeviceNodes(tmp.dir);
const text = path.join(tmp.dir, 'stories.txt');
writeFileSync(text, 'one story\n\nanother story\n\na third one\n');
let run = '';
let n = 0;

beforeAll(async () => {
  run = path.join(tmp.dir, 'run');
  expect((await llmcp(['train', run, '--preset', 'ch33', '--plain'])).code).toBe(0);
});
afterAll(() => tmp.cleanup());

const KINDS: readonly SpecialFileKind[] = ['fifo', 'socket', 'symlink-to-fifo', ...(devices ? (['character-device', 'symlink-to-character-device'] as const) : [])];
const KIND_WORDS = /a FIFO \(named pipe\)|a socket|a character device/;

/** Each route by which a data file reaches `train`, given the hostile path. */
const ROUTES: Readonly<Record<string, (hostile: string) => string[]>> = {
  'text corpus in a config file': (hostile) => ['--config', configWith({ data: { ...ch33Config().data, source: { kind: 'text', path: hostile } } })],
  'corpus path with --set': (hostile) => ['--size', 'tiny', '--corpus', text, '--set', `data.source.path=${hostile}`],
  'JSON corpus with --set': (hostile) => ['--size', 'tiny', '--corpus', text, '--set', `data.source=${JSON.stringify({ kind: 'corpus', corpus: hostile, split: text })}`],
  'split manifest with --set': (hostile) => ['--size', 'tiny', '--corpus', text, '--set', `data.source=${JSON.stringify({ kind: 'corpus', corpus: text, split: hostile })}`],
  'tokenizer file in a config file': (hostile) => ['--config', configWith({ tokenizer: { kind: 'file', path: hostile } })],
};

function configWith(patch: Record<string, unknown>): string {
  const file = path.join(tmp.dir, `config-${n++}.json`);
  writeFileSync(file, JSON.stringify({ ...ch33Config(), ...patch }));
  return file;
}

describe('the input rule: a data file is read only as a regular file, whatever route names it', () => {
  const cases = Object.keys(ROUTES).flatMap((route) => KINDS.map((kind) => [route, kind] as const));
  it.each(cases)('%s that is %s: train refuses at once (exit 3), naming the path and its kind, and creates nothing', async (route, kind) => {
    const hostile = makeSpecialFile(path.join(tmp.dir, `in-${n++}`), kind);
    const target = path.join(tmp.dir, `never-${n++}`);
    const r = await llmcp(['train', target, ...(ROUTES[route] as (h: string) => string[])(hostile), '--plain']);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain(hostile);
    expect(r.stderr).toMatch(KIND_WORDS);
    expect(existsSync(target)).toBe(false);
  });

  it.each(KINDS)('a config that is %s is refused (exit 3) by train and config', async (kind) => {
    const hostile = makeSpecialFile(path.join(tmp.dir, `cfg-${n++}`), kind);
    for (const args of [['train', path.join(tmp.dir, `never-${n++}`), '--config', hostile], ['config', hostile]]) {
      const r = await llmcp(args);
      expect([r.code, KIND_WORDS.test(r.stderr)], r.stderr).toEqual([3, true]);
    }
  });
});

describe('the input rule: a config nests no deeper than the JSON limit', () => {
  it('a config file or a --set value nested beyond 128 levels (up to 100,000) is refused with exit 3, never a stack overflow', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 129, max: 100_000 }), fc.boolean(), fc.constantFrom('extra', 'steps', 'data'), async (depth, arrays, key) => {
        const open = arrays ? '[' : '{"a":';
        const close = arrays ? ']' : '}';
        const deep = `${open.repeat(depth)}1${close.repeat(depth)}`;
        const file = path.join(tmp.dir, `deep-${n++}.json`);
        writeFileSync(file, `{"steps": 8, "${key}": ${deep}}`);
        const viaFile = await llmcp(['train', path.join(tmp.dir, `never-${n++}`), '--config', file]);
        expect([viaFile.code, viaFile.stderr.split('\n')[0]]).toEqual([3, expect.stringMatching(/TRAINER_CONFIG_UNREADABLE: config file .* nests deeper than 128 levels/) as unknown]);
        // The command line holds at most 128 KiB per argument: a --set value is at most that deep.
        if (depth * (open.length + close.length) < 120_000) {
          const viaSet = await llmcp(['config', 'ch33', '--set', `steps=${deep}`]);
          expect([viaSet.code, viaSet.stderr.split('\n')[0]]).toEqual([3, expect.stringMatching(/TRAINER_CONFIG_INVALID: override steps nests deeper than 128 levels/) as unknown]);
        }
      }),
      // The reported case first: 100,000 levels of arrays ended in a stack overflow (exit 4).
      { numRuns: 8, examples: [[100_000, true, 'extra']] },
    );
  });
});

describe("the input rule: a run's own files", () => {
  const FILES = ['run.json', 'loss.jsonl', 'samples.json', 'checkpoints/latest/job.json', 'checkpoints/latest/state.llmcp'];
  it.each(FILES.flatMap((file) => KINDS.filter((k) => !k.startsWith('symlink')).map((kind) => [file, kind] as const)))(
    '%s replaced by %s: verify, status, inspect and export refuse typed, at once',
    async (file, kind) => {
      const copy = path.join(tmp.dir, `copy-${n++}`);
      cpSync(run, copy, { recursive: true });
      rmSync(path.join(copy, file));
      makeSpecialFile(path.join(copy, file), kind);
      const out = path.join(tmp.dir, `out-${n++}`);
      mkdirSync(out);
      for (const args of [['verify', copy], ['status', copy], ['export', '--to', 'safetensors', `${copy}:latest`, '-o', path.join(out, 'x.safetensors')], ['inspect', `${copy}:latest`]]) {
        const r = await llmcp(args);
        // 0 where the command does not need that file (status reads no state; export reads no run.json), else a typed refusal.
        expect([0, 1, 3], `${args.join(' ')}: ${r.stderr}`).toContain(r.code);
        expect(r.stderr).not.toMatch(/internal error/);
      }
    },
  );
});
