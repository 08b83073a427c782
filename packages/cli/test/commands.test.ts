import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FIXTURES, GOLDEN, llmcp, tempDir } from './helpers.ts';
import { CLI_VERSION, versionText } from '../src/cli.ts';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
const notCheckpoint = path.join(tmp.dir, 'notes.txt');
writeFileSync(notCheckpoint, 'hello, this is not a checkpoint\n');
const aDirectory = path.join(tmp.dir, 'a-directory');
mkdirSync(aDirectory);
const missing = path.join(tmp.dir, 'missing.llmcp');
const damaged = path.join(FIXTURES, 'malformed/checksum-altered.llmcp');

/** The first stderr line and the hint line. */
function errorLines(stderr: string): [string, string] {
  const lines = stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(2);
  return [lines[0] as string, lines[1] as string];
}

describe('llmcp (global)', () => {
  it('prints help with the exit codes and exits 0 for --help', async () => {
    const r = await llmcp(['--help']);
    expect(r.code).toBe(0);
    for (const cmd of ['inspect', 'verify', 'diff', 'sample', 'export', 'import', 'train', 'resume', 'pivot', 'fork', 'status', 'config', 'eval', 'report']) expect(r.stdout).toMatch(new RegExp(`^  ${cmd}\\b`, 'm'));
    expect(r.stdout).toContain('2    usage error');
    expect(r.stdout).toContain('NO_COLOR');
  });

  it('prints the version', async () => {
    const r = await llmcp(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    // The workspace's unversioned 0.0.0 says what it is instead of looking like a broken install.
    expect(r.stdout.trim()).toBe(versionText(CLI_VERSION));
    expect(versionText('0.0.0')).toBe('0.0.0 (unreleased: built from the llmcp workspace, before its first versioned release)');
    expect(versionText('0.3.1')).toBe('0.3.1');
  });

  it('shows the help on stderr and exits 2 without a command', async () => {
    const r = await llmcp([]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('Usage: llmcp [options] [command]');
  });

  it('rejects an unknown command with a suggestion (exit 2)', async () => {
    const r = await llmcp(['inspekt', GOLDEN]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe("llmcp: error: unknown command 'inspekt'\n(Did you mean inspect?)\nhint: run 'llmcp --help' for usage and examples\n");
  });

  it.each(['inspect', 'verify', 'diff', 'sample', 'export', 'import', 'train', 'resume', 'pivot', 'fork', 'status', 'config', 'eval', 'report'])('%s --help shows examples and exits 0', async (cmd) => {
    const r = await llmcp([cmd, '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Usage: llmcp ${cmd}`);
    expect(r.stdout).toContain('Examples:');
    expect(r.stdout).toContain(`$ llmcp ${cmd}`);
  });
});

describe.each([
  ['inspect', (f: string) => ['inspect', f]],
  ['verify', (f: string) => ['verify', f]],
  ['diff (first)', (f: string) => ['diff', f, GOLDEN]],
  ['diff (second)', (f: string) => ['diff', GOLDEN, f]],
  ['sample', (f: string) => ['sample', f, '--prompt', '0']],
  ['export', (f: string) => ['export', '--to', 'safetensors', f, '-o', path.join(tmp.dir, 'never.safetensors')]],
])('llmcp %s: bad inputs', (_name, argv) => {
  it('missing file: exit 3, one line plus a hint', async () => {
    const r = await llmcp(argv(missing));
    expect(r.code).toBe(3);
    expect(r.stdout).toBe('');
    const [line, hint] = errorLines(r.stderr);
    const what = argv(missing)[0] === 'verify' ? 'checkpoint or run directory' : 'checkpoint';
    expect(line).toBe(`llmcp ${argv(missing)[0]}: error: ${what} not found: ${missing}`);
    expect(hint).toBe('hint: check the path (relative paths start from the current directory)');
  });

  it('directory instead of a file: exit 3', async () => {
    const r = await llmcp(argv(aDirectory));
    expect(r.code).toBe(3);
    const [line, hint] = errorLines(r.stderr);
    if (argv(aDirectory)[0] === 'verify') {
      expect(line).toBe(`llmcp verify: error: ${aDirectory} is a directory but not a run directory (no run.json, run.lock or checkpoints/)`);
      expect(hint).toBe('hint: give a checkpoint file or a run directory');
    } else {
      // Never a suggestion of a file that is not there: what the argument can be instead.
      expect(line).toMatch(/^llmcp \w+: error: .*a-directory is a directory but not a run directory \(no run\.json, run\.lock or checkpoints\/\) or a slot directory of one$/);
      expect(hint).toBe('hint: give a checkpoint file (.llmcp), a run directory, a slot directory or run:slot');
    }
  });
});

describe('wrong-format inputs', () => {
  it('inspect: a text file is reported as invalid with the failing rule (exit 1)', async () => {
    const r = await llmcp(['inspect', notCheckpoint]);
    expect(r.code).toBe(1);
    expect(r.stdout.split('\n')[1]).toBe('verdict: INVALID FORMAT_TRUNCATED (Truncated/fixed-header) at offset 0, fixed header: file of 32 bytes is shorter than the 38-byte fixed header');
  });

  it('verify: a damaged file fails with its code (exit 1)', async () => {
    const r = await llmcp(['verify', damaged]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^FAILED {2}.*checksum-altered\.llmcp {2}FORMAT_CHECKSUM_MISMATCH at offset 30: /);
    expect(r.stdout).toContain(`hint: run 'llmcp inspect ${damaged}' to see how far it parses`);
  });

  it.each([
    ['diff', ['diff', GOLDEN, damaged]],
    ['sample', ['sample', damaged, '--prompt', '0']],
    ['export', ['export', '--to', 'andrea-bin', damaged, '-o', path.join(tmp.dir, 'never.bin')]],
  ])('%s: a damaged checkpoint is an input error (exit 3) naming the format code', async (_name, argv) => {
    const r = await llmcp(argv);
    expect(r.code).toBe(3);
    const [line, hint] = errorLines(r.stderr);
    expect(line).toContain(`${damaged} is not a valid LLMCP35 v1 checkpoint: FORMAT_CHECKSUM_MISMATCH at offset 30: `);
    expect(hint).toBe(`hint: run 'llmcp inspect ${damaged}' to see how far it parses`);
  });

  it('import: a checkpoint given as the .bin is refused by size (exit 3)', async () => {
    const r = await llmcp(['import', '--from', 'andrea-bin', GOLDEN, '--config', GOLDEN, '-o', path.join(tmp.dir, 'never.llmcp')]);
    expect(r.code).toBe(3);
    expect(r.stderr.split('\n')[0]).toMatch(/^llmcp import: error: .*golden-6330\.llmcp: file is 6330 bytes; n_params = 3486544 needs 8 \+ 12·3486544 = 41838536 bytes \(truncated by 41832206\)$/);
  });

  it('import: a config that is neither a checkpoint nor JSON (exit 3)', async () => {
    const bin = path.join(tmp.dir, 'for-config.bin');
    const e = await llmcp(['export', '--to', 'andrea-bin', GOLDEN, '-o', bin]);
    expect(e.code).toBe(0);
    const r = await llmcp(['import', '--from', 'andrea-bin', bin, '--config', notCheckpoint, '-o', path.join(tmp.dir, 'never.llmcp')]);
    expect(r.code).toBe(3);
    expect(r.stderr.split('\n')[0]).toMatch(/^llmcp import: error: config .*notes\.txt is neither an LLMCP35 checkpoint nor valid JSON: /);
  });
});

describe('usage errors (exit 2)', () => {
  it.each([
    [['inspect', GOLDEN, '--jsn'], "llmcp inspect: error: unknown option '--jsn'"],
    [['inspect'], "llmcp inspect: error: missing required argument 'checkpoint'"],
    [['inspect', GOLDEN, GOLDEN], 'llmcp inspect: error: too many arguments for \'inspect\'. Expected 1 argument but got 2.'],
    [['inspect', GOLDEN, '--tokens', '0'], "llmcp inspect: error: option '--tokens <n>' argument '0' is invalid. expected an integer ≥ 1, found '0'."],
    [['diff', GOLDEN], "llmcp diff: error: missing required argument 'b'"],
    [['sample', GOLDEN, '--temperature', 'hot'], "llmcp sample: error: option '--temperature <t>' argument 'hot' is invalid. expected a finite number ≥ 0, found 'hot'."],
    [['sample', GOLDEN, '--temperature', '-1'], "llmcp sample: error: option '--temperature <t>' argument '-1' is invalid. expected a finite number ≥ 0, found '-1'."],
    [['sample', GOLDEN, '--temperature', 'Infinity'], "llmcp sample: error: option '--temperature <t>' argument 'Infinity' is invalid. expected a finite number ≥ 0, found 'Infinity'."],
    [['sample', GOLDEN, '--top-k', '2.5'], "llmcp sample: error: option '--top-k <k>' argument '2.5' is invalid. expected an integer ≥ 1, found '2.5'."],
    [['sample', GOLDEN, '--max-tokens', '0'], "llmcp sample: error: option '--max-tokens <n>' argument '0' is invalid. expected an integer ≥ 1, found '0'."],
    [['sample', GOLDEN, '--seed', '18446744073709551616'], "llmcp sample: error: option '--seed <u64>' argument '18446744073709551616' is invalid. expected a value ≤ 2^64 − 1, found '18446744073709551616'."],
    [['sample', GOLDEN, '--seed', '-3'], "llmcp sample: error: option '--seed <u64>' argument '-3' is invalid. expected an unsigned 64-bit integer (decimal or 0x hex), found '-3'."],
    [['sample', GOLDEN, '--prompt-ids', '0,x'], "llmcp sample: error: option '--prompt-ids <ids>' argument '0,x' is invalid. expected comma-separated token ids like 0,4,2, found '0,x'."],
    [['export', GOLDEN], "llmcp export: error: required option '--to <format>' not specified"],
    [['export', '--to', 'onnx', GOLDEN], "llmcp export: error: option '--to <format>' argument 'onnx' is invalid. Allowed choices are safetensors, andrea-bin, hf, gguf."],
    [['import', '--from', 'andrea-bin', 'x.bin'], "llmcp import: error: required option '--config <file>' not specified"],
  ])('%j', async (argv, message) => {
    const r = await llmcp(argv);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines[0]).toBe(message);
    expect(lines.at(-1)).toBe(`hint: run '${message.split(':')[0]} --help' for usage and examples`);
  });

  it('sample: --top-k above the vocabulary is a usage error naming the size', async () => {
    const r = await llmcp(['sample', GOLDEN, '--prompt', '0', '--top-k', '6']);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toBe('llmcp sample: error: --top-k 6 exceeds the vocabulary size 5');
  });

  it('export: options of the other format', async () => {
    const moments = await llmcp(['export', '--to', 'andrea-bin', GOLDEN, '--moments']);
    expect(moments.code).toBe(2);
    expect(moments.stderr.split('\n')[0]).toBe('llmcp export: error: --moments applies to --to safetensors only (an ANDREA .bin always holds f32 weights, m and v)');
    const config = await llmcp(['export', '--to', 'safetensors', GOLDEN, '--config-out', 'x.json']);
    expect(config.code).toBe(2);
    expect(config.stderr.split('\n')[0]).toBe('llmcp export: error: --config-out applies to --to andrea-bin only (safetensors keeps the configuration in __metadata__)');
  });

  it('sample: --prompt and --prompt-ids together', async () => {
    const r = await llmcp(['sample', GOLDEN, '--prompt', '0', '--prompt-ids', '0']);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toBe('llmcp sample: error: give either --prompt or --prompt-ids, not both');
  });

  it('sample: a token id outside the vocabulary', async () => {
    const r = await llmcp(['sample', GOLDEN, '--prompt-ids', '0,5']);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toBe('llmcp sample: error: --prompt-ids: token id 5 is outside the vocabulary [0, 5)');
  });
});

describe('llmcp verify <file>', () => {
  it('passes the golden file (exit 0) and describes it', async () => {
    const r = await llmcp(['verify', GOLDEN]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`ok  ${GOLDEN}  fnv1a64:2b8b6097eaed6a91  step 8, 11 parameter tensors (144 values), literal tokenizer (5 pieces), 11 moment pairs\n`);
  });

  it('--json for machines', async () => {
    const ok = JSON.parse((await llmcp(['verify', GOLDEN, '--json'])).stdout) as unknown;
    expect(ok).toEqual({ schema: 'llmcp-verify/1', kind: 'checkpoint', path: GOLDEN, ok: true, checksum: 'fnv1a64:2b8b6097eaed6a91', step: '8', error: null });
    const r = await llmcp(['verify', damaged, '--json']);
    expect(r.code).toBe(1);
    const bad = JSON.parse(r.stdout) as { ok: boolean; error: { code: string; offset: number } };
    expect(bad.ok).toBe(false);
    expect(bad.error.code).toBe('FORMAT_CHECKSUM_MISMATCH');
    expect(bad.error.offset).toBe(30);
  });
});

describe('llmcp diff', () => {
  it('reports bit-identical files (exit 0)', async () => {
    const r = await llmcp(['diff', GOLDEN, path.join(FIXTURES, 'malformed/none.llmcp')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('bit-identical: yes');
    expect(r.stdout).toContain('header fields: all equal');
    expect(r.stdout).toContain('tensors: 0 of 33 tensors differ');
  });

  it('names differing fields and tensors with counts, max |Δ| and the first differing bits (exit 1)', async () => {
    // beta1-power-negative-zero: same tensors, beta1 power −0 instead of 0.43….
    const other = path.join(FIXTURES, 'malformed/beta1-power-negative-zero.llmcp');
    const r = await llmcp(['diff', GOLDEN, other]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('bit-identical: no');
    expect(r.stdout).toMatch(/adamw\.beta1Power\s+0\.43046721000000016 \(0x3fdb8cc6573cd2c7\)\s+-0 \(0x8000000000000000\)/);
    expect(r.stdout).toContain('tensors: 0 of 33 tensors differ');
    const json = JSON.parse((await llmcp(['diff', GOLDEN, other, '--json'])).stdout) as { bitIdentical: boolean; fields: { field: string }[] };
    expect(json.bitIdentical).toBe(false);
    expect(json.fields.map((f) => f.field)).toEqual(['checksum', 'adamw.beta1Power']);
  });

  it('counts differing elements per tensor', async () => {
    // second-moment-negative-zero: one second-moment value is −0.
    const other = path.join(FIXTURES, 'malformed/second-moment-negative-zero.llmcp');
    const json = JSON.parse((await llmcp(['diff', GOLDEN, other, '--json'])).stdout) as {
      tensors: { kind: string; name: string; differing: number; elements: number; maxAbsDelta: number; first: { index: number; a: string; b: string } }[];
    };
    expect(json.tensors).toHaveLength(1);
    const t = json.tensors[0];
    expect(t?.kind).toBe('second-moment');
    expect(t?.differing).toBe(1);
    expect(t?.first.b).toBe('0x8000000000000000');
  });
});

describe('llmcp sample', () => {
  it('reproduces ch36: prompt [0], τ = 1, k = 3, 4 new tokens from the stored state gives [4, 4] (context limit)', async () => {
    const r = await llmcp(['sample', GOLDEN, '--prompt-ids', '0', '--temperature', '1', '--top-k', '3', '--max-tokens', '4', '--no-slide', '--json']);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { rngState: string; samples: { tokens: number[]; stopReason: string; text: string }[] };
    expect(doc.rngState).toBe('0x9e3779b97f4a7c38');
    expect(doc.samples).toEqual([{ promptTokens: [0], tokens: [4, 4], text: '44', bytesHex: '3434', stopReason: 'context-limit' }]);
  });

  it('prints plain text on stdout (the prompt and its continuation), what it did on stderr', async () => {
    const r = await llmcp(['sample', GOLDEN, '--prompt', '0', '--top-k', '3', '--max-tokens', '4', '--no-slide']);
    expect(r.stdout).toBe('044\n');
    expect(r.stderr).toMatch(
      new RegExp(`^${GOLDEN.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: temperature 1, top-k 3; key/value cache; stops at the 2-token context; stopped: context-limit; sampling RNG 0x9e3779b97f4a7c38 \\(from the checkpoint\\) → 0x[0-9a-f]{16}\n$`),
    );
  });

  it('--ids prints the new token ids, one sample a line', async () => {
    const r = await llmcp(['sample', GOLDEN, '--prompt-ids', '0', '--top-k', '3', '--max-tokens', '4', '--no-slide', '--seed', '36', '--count', '2', '--ids']);
    expect(r.code).toBe(0);
    const doc = JSON.parse((await llmcp(['sample', GOLDEN, '--prompt-ids', '0', '--top-k', '3', '--max-tokens', '4', '--no-slide', '--seed', '36', '--count', '2', '--json'])).stdout) as { samples: { tokens: number[] }[] };
    expect(r.stdout).toBe(doc.samples.map((s) => `${s.tokens.join(',')}\n`).join(''));
  });

  it('slides past the context window by default: the first tokens are the ch36 ones, then it goes on (cached = uncached)', async () => {
    const args = ['sample', GOLDEN, '--prompt-ids', '0', '--temperature', '1', '--top-k', '3', '--max-tokens', '9', '--json'];
    const cached = JSON.parse((await llmcp(args)).stdout) as { contextOverflow: string; rngStateAfter: string; samples: { tokens: number[]; stopReason: string }[] };
    const plain = JSON.parse((await llmcp([...args, '--no-cache'])).stdout) as typeof cached;
    expect(cached.contextOverflow).toBe('slide');
    expect(cached.samples[0]?.tokens).toHaveLength(9);
    expect(cached.samples[0]?.tokens.slice(0, 2)).toEqual([4, 4]);
    expect(cached.samples[0]?.stopReason).toBe('max-new-tokens');
    expect(plain.samples).toEqual(cached.samples);
    expect(plain.rngStateAfter).toBe(cached.rngStateAfter);
    const help = (await llmcp(['sample', '--help'])).stdout.replace(/\s+/g, ' ');
    expect(help).toContain('Generation goes past the context window (maxPositions) by sliding it');
    expect(help).toContain('--no-slide');
  });

  it('sample --no-cache gives the cached tokens, text and RNG state', async () => {
    const args = ['sample', GOLDEN, '--prompt-ids', '0', '--top-k', '3', '--max-tokens', '4', '--seed', '36', '--count', '3', '--json'];
    const cached = JSON.parse((await llmcp(args)).stdout) as { cached: boolean; rngStateAfter: string; samples: unknown[] };
    const plain = JSON.parse((await llmcp([...args, '--no-cache'])).stdout) as { cached: boolean; rngStateAfter: string; samples: unknown[] };
    expect([cached.cached, plain.cached]).toEqual([true, false]);
    expect(plain.samples).toEqual(cached.samples);
    expect(plain.rngStateAfter).toBe(cached.rngStateAfter);
    const help = await llmcp(['sample', '--help']);
    expect(help.stdout).toContain('--no-cache');
    expect(help.stdout.replace(/\s+/g, ' ')).toContain('Generation uses a key/value cache');
  });

  it('--seed replaces the stored state; greedy consumes no draw', async () => {
    const seeded = JSON.parse((await llmcp(['sample', GOLDEN, '--prompt', '0', '--seed', '36', '--json'])).stdout) as { rngState: string; seeded: boolean };
    expect(seeded.rngState).toBe('0x0000000000000024');
    expect(seeded.seeded).toBe(true);
    const greedy = JSON.parse((await llmcp(['sample', GOLDEN, '--prompt', '0', '--temperature', '0', '--json'])).stdout) as { rngState: string; rngStateAfter: string };
    expect(greedy.rngStateAfter).toBe(greedy.rngState);
  });

  it('refuses a prompt the literal tokenizer cannot encode (exit 3)', async () => {
    const r = await llmcp(['sample', GOLDEN, '--prompt', 'x']);
    expect(r.code).toBe(3);
    expect(r.stderr.split('\n')[0]).toMatch(/^llmcp sample: error: --prompt cannot be encoded by the checkpoint's literal tokenizer: /);
    expect(r.stderr.split('\n')[1]).toBe('hint: use --prompt-ids to give token ids directly');
  });

  it('refuses an empty prompt without a BOS token (exit 3)', async () => {
    const r = await llmcp(['sample', GOLDEN]);
    expect(r.code).toBe(3);
    expect(r.stderr.split('\n')[0]).toBe('llmcp sample: error: the prompt is empty and this literal tokenizer has no begin-of-document token to start from');
  });
});

describe('output files', () => {
  it('refuses to replace an existing output without --force (exit 4) and replaces it with --force', async () => {
    const out = path.join(tmp.dir, 'exists.safetensors');
    writeFileSync(out, 'keep me');
    const r = await llmcp(['export', '--to', 'safetensors', GOLDEN, '-o', out]);
    expect(r.code).toBe(4);
    expect(r.stderr).toBe(`llmcp export: error: output ${out} already exists\nhint: pass --force to replace it, or choose another --out\n`);
    expect(readFileSync(out, 'utf8')).toBe('keep me');
    const f = await llmcp(['export', '--to', 'safetensors', GOLDEN, '-o', out, '--force']);
    expect(f.code).toBe(0);
    expect(readFileSync(out).length).toBeGreaterThan(1152);
  });

  it('refuses an output in a missing directory (exit 4)', async () => {
    const out = path.join(tmp.dir, 'no/such/dir/x.bin');
    const r = await llmcp(['export', '--to', 'andrea-bin', GOLDEN, '-o', out]);
    expect(r.code).toBe(4);
    expect(r.stderr.split('\n')[0]).toBe(`llmcp export: error: cannot write ${out}: directory ${path.dirname(out)} does not exist`);
  });

  it('writes default names relative to the working directory', async () => {
    const r = await llmcp(['export', '--to', 'andrea-bin', GOLDEN], { cwd: tmp.dir });
    expect(r.code).toBe(0);
    expect(readFileSync(path.join(tmp.dir, 'step_000008.bin')).length).toBe(8 + 12 * 144);
  });
});
