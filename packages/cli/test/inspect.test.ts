import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { FIXTURES, GOLDEN, llmcp, PACKAGE_DIR, type ManifestCase } from './helpers.ts';

const manifest = JSON.parse(readFileSync(path.join(FIXTURES, 'manifest.json'), 'utf8')) as { cases: ManifestCase[] };
const schema = JSON.parse(readFileSync(path.join(PACKAGE_DIR, 'schema/inspect.schema.json'), 'utf8')) as object;
const ajv = new Ajv2020({ allErrors: true, strict: true });
const validate = ajv.compile(schema);

function schemaErrors(doc: unknown): string {
  return validate(doc) ? '' : ajv.errorsText(validate.errors, { separator: '\n' });
}

/** The descriptor table rows of the text report: lines that start with an index and carry a half-open range. */
function tableRows(text: string): string[] {
  return text.split('\n').filter((l) => /^\s+\d+\s{2}\S.*\[\d+,\d+\)/.test(l));
}

describe('llmcp inspect', () => {
  it('prints the full 38-row descriptor table of the golden file, from [2869,2870) to 6330', async () => {
    const r = await llmcp(['inspect', GOLDEN]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const rows = tableRows(r.stdout);
    expect(rows).toHaveLength(38);
    expect(rows[0]).toMatch(/^\s+0\s+literal-token\s+0\s+u8\s+\[1\]\s+\[2869,2870\)\s+1\s+ok$/);
    expect(rows[5]).toMatch(/model-parameter\s+token_embedding\.weight\s+f64\s+\[5, 4\]\s+\[2874,3034\)\s+160\s+ok$/);
    expect(rows[37]).toMatch(/^\s+37\s+second-moment\s+token_embedding\.weight\s+f64\s+\[5, 4\]\s+\[6170,6330\)\s+160\s+ok$/);
    // Every row starts where the previous one ended.
    let end = 2869;
    for (const row of rows) {
      const m = /\[(\d+),(\d+)\)/.exec(row);
      expect(Number(m?.[1])).toBe(end);
      end = Number(m?.[2]);
    }
    expect(end).toBe(6330);
    expect(r.stdout).toContain('records end at 6330; file length 6330 — ok');
  });

  it('prints the 16-byte prefix with field annotations, the checksum and the verdict', async () => {
    const { stdout } = await llmcp(['inspect', GOLDEN]);
    expect(stdout).toContain('\n  4c 4c 4d 43 50 33 35 00 01 00 04 03 02 01 35 0b\n');
    expect(stdout).toMatch(/\[0,8\)\s+4c 4c 4d 43 50 33 35 00\s+magic/);
    expect(stdout).toMatch(/\[8,10\)\s+01 00\s+format version: u16 LE = 1/);
    expect(stdout).toMatch(/\[10,14\)\s+04 03 02 01\s+endian marker: u32 LE = 0x01020304/);
    expect(stdout).toMatch(/\[14,16\)\s+35 0b\s+header_bytes: u64 LE, bytes 1–2 of 8 \(header_bytes = 2869\)/);
    expect(stdout).toContain('checksum: stored fnv1a64:2b8b6097eaed6a91, computed fnv1a64:2b8b6097eaed6a91 — match');
    expect(stdout.split('\n')[1]).toBe('verdict: VALID (fnv1a64:2b8b6097eaed6a91)');
    // Configuration, step and RNG state as in ../../format/SPEC.md §12.1.
    expect(stdout).toMatch(/115\s+8\s+decoder rope_base\s+10000 \(bits 0x40c3880000000000\)/);
    expect(stdout).toMatch(/512\s+8\s+beta1 power\s+0\.43046721000000016 \(bits 0x3fdb8cc6573cd2c7\)/);
    expect(stdout).toContain('pieces: 0="0"  1="1"  2="2"  3="3"  4="4"');
    expect(stdout).toContain('step: selected 8, optimizer 8');
    expect(stdout).toContain('sampling RNG: SplitMix64 state 0x9e3779b97f4a7c38');
  });

  it('uses no colour without a TTY, colour on a TTY, and none with NO_COLOR', async () => {
    const plain = await llmcp(['inspect', GOLDEN]);
    expect(plain.stdout).not.toContain('\u001b[');
    const tty = await llmcp(['inspect', GOLDEN], { tty: true });
    expect(tty.stdout).toContain('\u001b[32m');
    const noColor = await llmcp(['inspect', GOLDEN], { tty: true, env: { NO_COLOR: '1' } });
    expect(noColor.stdout).toBe(plain.stdout);
    const forced = await llmcp(['inspect', GOLDEN], { env: { FORCE_COLOR: '1' } });
    expect(forced.stdout).toContain('\u001b[1m');
  });

  const rejected = manifest.cases.filter((c) => c.expect.outcome === 'reject');
  const accepted = manifest.cases.filter((c) => c.expect.outcome === 'accept');

  it('covers the whole malformed corpus', () => {
    expect(rejected.length).toBeGreaterThan(40);
    expect(accepted.length).toBeGreaterThan(5);
  });

  it.each(rejected.map((c) => [c.id, c] as const))('%s: shows the parsed part and the failing rule', async (_id, c) => {
    const r = await llmcp(['inspect', path.join(FIXTURES, c.file)]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('');
    const expected = c.expect.outcome === 'reject' ? [c.expect.code, ...(c.expect.alsoAccepted ?? []).map((a) => (a === 'Allocation' ? 'FORMAT_LIMIT_EXCEEDED' : a))] : [];
    const verdict = r.stdout.split('\n')[1] ?? '';
    expect(verdict.startsWith('verdict: INVALID FORMAT_')).toBe(true);
    expect(expected.some((code) => verdict.includes(`INVALID ${code} `))).toBe(true);
    // The report ends with the same verdict, after everything that parsed.
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe(verdict);
    if (readFileSync(path.join(FIXTURES, c.file)).length >= 38) expect(r.stdout).toContain('fixed header (38 bytes)');
  });

  it.each(accepted.map((c) => [c.id, c] as const))('%s: valid', async (_id, c) => {
    const r = await llmcp(['inspect', path.join(FIXTURES, c.file)]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^verdict: VALID \(fnv1a64:[0-9a-f]{16}\)$/m);
  });

  it('marks the descriptor row where a damaged file breaks', async () => {
    const r = await llmcp(['inspect', path.join(FIXTURES, 'malformed/offset-plus-one.llmcp')]);
    const rows = tableRows(r.stdout);
    expect(rows[1]).toMatch(/\[2871,2872\)\s+1\s+starts at 2871, previous ended at 2870 ◀ FORMAT_LAYOUT$/);
    expect(rows[0]).toMatch(/ok$/);
  });

  it('stops at the truncated header field and still shows what parsed', async () => {
    const r = await llmcp(['inspect', path.join(FIXTURES, 'malformed/header-cut-60.llmcp')]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/58\s+1\s+tokenizer kind\s+1/);
    expect(r.stdout).toContain('parsing stopped: FORMAT_TRUNCATED (Truncated/header-read) at offset 59, tokenizer vocabulary');
  });
});

describe('llmcp inspect --json', () => {
  it('matches the shipped JSON Schema for the golden file', async () => {
    const r = await llmcp(['inspect', GOLDEN, '--json']);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as Record<string, unknown> & { descriptors: { range: string }[]; prefix: { hex: string }; checksum: { stored: string } };
    expect(schemaErrors(doc)).toBe('');
    expect(doc.schema).toBe('llmcp-inspect/1');
    expect(doc.verdict).toEqual({ valid: true, checksum: 'fnv1a64:2b8b6097eaed6a91' });
    expect(doc.descriptors).toHaveLength(38);
    expect(doc.descriptors[0]?.range).toBe('[2869,2870)');
    expect(doc.descriptors[37]?.range).toBe('[6170,6330)');
    expect(doc.prefix.hex).toBe('4c 4c 4d 43 50 33 35 00 01 00 04 03 02 01 35 0b');
    expect(doc.checksum.stored).toBe('fnv1a64:2b8b6097eaed6a91');
    expect(doc.samplingRngState).toBe('0x9e3779b97f4a7c38');
    expect(doc.beta1Power).toEqual({ value: 0.43046721000000016, bits: '0x3fdb8cc6573cd2c7' });
  });

  it('matches the schema for every malformed case and names the failing code', async () => {
    for (const c of manifest.cases) {
      const r = await llmcp(['inspect', path.join(FIXTURES, c.file), '--json']);
      const doc = JSON.parse(r.stdout) as { verdict: { valid: boolean; error?: { code: string } } };
      expect(schemaErrors(doc), c.id).toBe('');
      expect(doc.verdict.valid, c.id).toBe(c.expect.outcome === 'accept');
      if (c.expect.outcome === 'reject') expect([c.expect.code, 'FORMAT_LIMIT_EXCEEDED']).toContain(doc.verdict.error?.code);
    }
  });

  it('rejects a document that breaks the schema (the validator is not vacuous)', async () => {
    const r = await llmcp(['inspect', GOLDEN, '--json']);
    const doc = JSON.parse(r.stdout) as { descriptors: { offset: unknown }[] };
    (doc.descriptors[0] as { offset: unknown }).offset = 2869;
    expect(schemaErrors(doc)).toContain('/descriptors/0/offset');
  });
});
