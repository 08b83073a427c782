/**
 * `llmcp inspect` / `verify` given a safetensors or GGUF file: they say what
 * it is and show its tensor table, instead of reporting a bad LLMCP35 magic.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { decodeCheckpoint } from '@llmcp/format';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeSafetensors } from '../src/safetensors.ts';
import { GOLDEN, llmcp, tempDir } from './helpers.ts';

const tmp = tempDir('llmcp-foreign-');
afterAll(() => tmp.cleanup());
const golden = decodeCheckpoint(new Uint8Array(readFileSync(GOLDEN)));
const good = path.join(tmp.dir, 'golden.safetensors');
const bytes = encodeSafetensors(golden);
writeFileSync(good, bytes);
const cut = path.join(tmp.dir, 'cut.safetensors');
writeFileSync(cut, bytes.subarray(0, bytes.length - 8));
const gguf = path.join(tmp.dir, 'empty.gguf');
// A GGUF v3 header with no tensors and no metadata (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md).
writeFileSync(gguf, Uint8Array.of(0x47, 0x47, 0x55, 0x46, 3, 0, 0, 0, ...new Array<number>(16).fill(0)));

describe('llmcp inspect on foreign files', () => {
  it('shows a safetensors file as what it is, with its metadata and tensor table', async () => {
    const r = await llmcp(['inspect', good]);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe(`${good}: ${bytes.length} bytes, safetensors, 11 tensors, 144 elements — not an LLMCP35 checkpoint`);
    expect(r.stdout).toContain('total_parameters');
    expect(r.stdout).toContain('token_embedding.weight');
    expect(r.stdout).not.toContain('FORMAT_BAD_MAGIC');
  });

  it('--json gives the llmcp-inspect-foreign/1 document', async () => {
    const r = await llmcp(['inspect', good, '--json']);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { schema: string; kind: string; ok: boolean; file: { tensors: { name: string; type: string; shape: number[] }[] } };
    expect(doc).toMatchObject({ schema: 'llmcp-inspect-foreign/1', kind: 'safetensors', ok: true });
    expect(doc.file.tensors.map((t) => t.name)).toEqual(golden.parameters.map((p) => p.name));
    expect(doc.file.tensors[0]).toMatchObject({ type: 'F64', shape: [5, 4] });
  });

  it('reports a damaged header with its code (exit 1)', async () => {
    const r = await llmcp(['inspect', cut]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('a safetensors file — not an LLMCP35 checkpoint');
    expect(r.stdout).toContain('header does not parse: FOREIGN_BAD_HEADER');
  });

  it('shows a GGUF file', async () => {
    const r = await llmcp(['inspect', gguf]);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe(`${gguf}: 24 bytes, GGUF v3, 0 tensors, 0 elements — not an LLMCP35 checkpoint`);
  });
});

describe('llmcp verify on foreign files', () => {
  it('checks the header and tensor table and says what the file is', async () => {
    const r = await llmcp(['verify', good]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`ok  ${good}  safetensors, 11 tensors, 144 elements: header and tensor table verify (not an LLMCP35 checkpoint)\n`);
    const j = JSON.parse((await llmcp(['verify', cut, '--json'])).stdout) as { kind: string; ok: boolean; error: { code: string } };
    expect(j).toMatchObject({ kind: 'safetensors', ok: false, error: { code: 'FOREIGN_BAD_HEADER' } });
  });

  it('commands that need a checkpoint name the foreign kind', async () => {
    const r = await llmcp(['sample', good]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`${good} is a safetensors file, not an LLMCP35 v1 checkpoint`);
  });
});
