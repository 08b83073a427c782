import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { decodeCheckpoint, type DecodedCheckpoint } from '@llmcp/format';
import { tokenizerFromJSON } from '@llmcp/tokenizer';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeSafetensors } from '../src/safetensors.ts';
import { FIXTURES, GOLDEN, llmcp, PACKAGE_DIR, tempDir } from './helpers.ts';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
const golden = decodeCheckpoint(new Uint8Array(readFileSync(GOLDEN)));

interface ReadTensor {
  readonly dtype: string;
  readonly shape: number[];
  readonly values: number[];
  readonly bits: string[];
}

/**
 * An independent safetensors reader written from the format description
 * (huggingface/safetensors README "Format"), sharing no code with the writer:
 * u64 LE header size N; N bytes of JSON starting with '{'; `__metadata__` of
 * string values; tensors with dtype, shape and data_offsets relative to the
 * byte buffer, which they must cover entirely with no holes or overlaps.
 */
function readSafetensors(bytes: Uint8Array): { metadata: Record<string, string>; tensors: Map<string, ReadTensor>; order: string[] } {
  if (bytes.length < 8) throw new Error('shorter than the 8-byte header size');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = Number(view.getBigUint64(0, true));
  if (8 + n > bytes.length) throw new Error('header runs past the end');
  const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + n));
  if (!text.startsWith('{')) throw new Error('header does not start with {');
  const header = JSON.parse(text) as Record<string, unknown>;
  const metadata = (header.__metadata__ ?? {}) as Record<string, string>;
  for (const [k, v] of Object.entries(metadata)) if (typeof v !== 'string') throw new Error(`metadata ${k} is not a string`);
  const bufferStart = 8 + n;
  const bufferLength = bytes.length - bufferStart;
  const spans: [number, number, string][] = [];
  const tensors = new Map<string, ReadTensor>();
  for (const [name, raw] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const info = raw as { dtype: string; shape: number[]; data_offsets: [number, number] };
    const width = { F64: 8, F32: 4 }[info.dtype];
    if (width === undefined) throw new Error(`${name}: unexpected dtype ${info.dtype}`);
    const [start, end] = info.data_offsets;
    const count = info.shape.reduce((a, b) => a * b, 1);
    if (end - start !== count * width) throw new Error(`${name}: data_offsets span ${end - start} bytes, shape needs ${count * width}`);
    spans.push([start, end, name]);
    const values: number[] = [];
    const bits: string[] = [];
    for (let i = 0; i < count; i++) {
      const at = bufferStart + start + i * width;
      if (width === 8) {
        values.push(view.getFloat64(at, true));
        bits.push(`0x${view.getBigUint64(at, true).toString(16).padStart(16, '0')}`);
      } else {
        values.push(view.getFloat32(at, true));
        bits.push(`0x${view.getUint32(at, true).toString(16).padStart(8, '0')}`);
      }
    }
    tensors.set(name, { dtype: info.dtype, shape: info.shape, values, bits });
  }
  spans.sort((a, b) => a[0] - b[0]);
  let position = 0;
  for (const [start, end, name] of spans) {
    if (start !== position) throw new Error(`${name}: starts at ${start}, expected ${position} (hole or overlap)`);
    position = end;
  }
  if (position !== bufferLength) throw new Error(`tensors cover ${position} bytes of a ${bufferLength}-byte buffer`);
  return { metadata, tensors, order: spans.map((s) => s[2]) };
}

function f64Bits(x: number): string {
  const v = new DataView(new ArrayBuffer(8));
  v.setFloat64(0, x, true);
  return `0x${v.getBigUint64(0, true).toString(16).padStart(16, '0')}`;
}

function f32Bits(x: number): string {
  const v = new DataView(new ArrayBuffer(4));
  v.setFloat32(0, x, true);
  return `0x${v.getUint32(0, true).toString(16).padStart(8, '0')}`;
}

function expectedTensors(c: DecodedCheckpoint, moments: boolean): Map<string, { shape: readonly number[]; data: Float64Array }> {
  const out = new Map<string, { shape: readonly number[]; data: Float64Array }>();
  for (const p of c.parameters) out.set(p.name, p);
  if (moments) {
    for (const m of c.optimizer.moments) {
      out.set(`adamw.m.${m.name}`, { shape: m.shape, data: m.first });
      out.set(`adamw.v.${m.name}`, { shape: m.shape, data: m.second });
    }
  }
  return out;
}

describe('llmcp export --to safetensors', () => {
  const plain = path.join(tmp.dir, 'golden.safetensors');
  const withMoments = path.join(tmp.dir, 'golden-moments.safetensors');

  it('writes the model weights as F64, bit for bit, readable by an independent reader', async () => {
    const r = await llmcp(['export', '--to', 'safetensors', GOLDEN, '-o', plain]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`wrote ${plain}: safetensors, 11 tensors (F64), ${readFileSync(plain).length} bytes\nwrote ${plain}.sig: provenance manifest, unsigned (sign with --sign-key)\n`);
    const file = readSafetensors(new Uint8Array(readFileSync(plain)));
    expect(file.order).toEqual(golden.parameters.map((p) => p.name));
    for (const [name, want] of expectedTensors(golden, false)) {
      const got = file.tensors.get(name);
      expect(got?.dtype).toBe('F64');
      expect(got?.shape).toEqual(want.shape);
      expect(got?.bits).toEqual(Array.from(want.data, f64Bits));
    }
    // The header is padded to a multiple of 8 so the data starts aligned.
    expect(Number(new DataView(readFileSync(plain).buffer).getBigUint64(0, true)) % 8).toBe(0);
  });

  it('carries tokenizer, configuration, step, powers and RNG state in __metadata__', () => {
    const { metadata } = readSafetensors(new Uint8Array(readFileSync(plain)));
    expect(metadata.format).toBe('llmcp-safetensors/1');
    expect(tokenizerFromJSON(metadata.tokenizer ?? '').toState()).toEqual(golden.tokenizer);
    expect(JSON.parse(metadata.decoder_config ?? '')).toEqual(golden.decoder);
    expect(JSON.parse(metadata.adamw_groups ?? '')).toEqual(golden.optimizer.groups);
    expect(metadata.adamw_step).toBe('8');
    expect(metadata.selected_step).toBe('8');
    expect(metadata.adamw_beta1_power).toBe('0x3fdb8cc6573cd2c7');
    expect(metadata.sampling_rng_state).toBe('0x9e3779b97f4a7c38');
    expect(metadata.source_checksum).toBe('fnv1a64:2b8b6097eaed6a91');
    expect(JSON.parse(metadata.adamw_config ?? '').bits.learningRate).toBe('0x3fa47ae147ae147b');
  });

  it('--moments adds adamw.m.<name> and adamw.v.<name> for every parameter', async () => {
    const r = await llmcp(['export', '--to', 'safetensors', GOLDEN, '--moments', '-o', withMoments]);
    expect(r.code).toBe(0);
    const file = readSafetensors(new Uint8Array(readFileSync(withMoments)));
    expect(file.tensors.size).toBe(33);
    for (const [name, want] of expectedTensors(golden, true)) expect(file.tensors.get(name)?.bits, name).toEqual(Array.from(want.data, f64Bits));
    expect(file.order.slice(11, 13)).toEqual(['adamw.m.token_embedding.weight', 'adamw.m.blocks.0.attention_norm.gain']);
  });

  it('--dtype f32 rounds to the nearest f32', async () => {
    const out = path.join(tmp.dir, 'golden-f32.safetensors');
    const r = await llmcp(['export', '--to', 'safetensors', GOLDEN, '--dtype', 'f32', '-o', out]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('lossy');
    const file = readSafetensors(new Uint8Array(readFileSync(out)));
    for (const p of golden.parameters) expect(file.tensors.get(p.name)?.values).toEqual(Array.from(p.data, Math.fround));
  });

  it('exports a step-0 BPE checkpoint (no moments) as well', () => {
    const bpe = decodeCheckpoint(new Uint8Array(readFileSync(path.join(FIXTURES, 'malformed/bpe-valid.llmcp'))));
    const file = readSafetensors(encodeSafetensors(bpe, { moments: true }));
    expect(file.tensors.size).toBe(bpe.parameters.length);
    expect(file.metadata.moments).toBe('none at step 0');
    expect(tokenizerFromJSON(file.metadata.tokenizer ?? '').toState()).toEqual(bpe.tokenizer);
  });

  it('the independent reader refuses a file with a hole (it is not vacuous)', () => {
    const bytes = new Uint8Array(readFileSync(plain));
    const bigger = new Uint8Array(bytes.length + 8);
    bigger.set(bytes);
    expect(() => readSafetensors(bigger)).toThrow(/cover/);
  });

  const python = process.env.LLMCP_PYTHON ?? '/usr/bin/python3';
  const torch = spawnSync(python, ['-c', 'import torch'], { encoding: 'utf8' });
  const torchMissing = torch.error !== undefined || torch.status !== 0 ? `${python} with torch is not available (install Debian's python3-torch to run this check)` : null;

  it.for([
    ['F64 with moments', () => withMoments, true, 'F64'],
    ['F32', () => path.join(tmp.dir, 'golden-f32.safetensors'), false, 'F32'],
  ] as const)('PyTorch loads the %s export into tensors with the expected values', ([_label, file, moments, dtype], ctx) => {
    if (torchMissing !== null) {
      ctx.skip(torchMissing);
      return;
    }
    const tensors: Record<string, { dtype: string; shape: readonly number[]; bits: string[] }> = {};
    for (const [name, want] of expectedTensors(golden, moments)) {
      tensors[name] = { dtype, shape: want.shape, bits: Array.from(want.data, (x) => (dtype === 'F64' ? f64Bits(x) : f32Bits(Math.fround(x)))) };
    }
    const expectedPath = path.join(tmp.dir, `expected-${dtype}.json`);
    writeFileSync(expectedPath, JSON.stringify({ tensors, metadata: { format: 'llmcp-safetensors/1', adamw_step: '8' } }));
    const run = spawnSync(python, [path.join(PACKAGE_DIR, 'test/python/check_safetensors.py'), file(), expectedPath], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.stdout.trim()).toBe(`ok ${Object.keys(tensors).length} tensors ${moments ? 432 : 144} elements`);
    expect(run.status).toBe(0);
  });
});
