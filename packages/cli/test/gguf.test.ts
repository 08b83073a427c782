import { readFileSync } from 'node:fs';
import path from 'node:path';
import { decodeCheckpoint, type CheckpointState, type DecoderConfig } from '@llmcp/format';
import { Decoder } from '@llmcp/model';
import { BpeTokenizer, LiteralTokenizer } from '@llmcp/tokenizer';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeGguf, f64ToF16Bits, ggufVocabulary, gpt2ByteCharacters } from '../src/gguf.ts';
import { isCliError } from '../src/errors.ts';
import { GOLDEN, llmcp, tempDir } from './helpers.ts';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
const golden = decodeCheckpoint(new Uint8Array(readFileSync(GOLDEN)));

interface ReadTensor {
  readonly name: string;
  readonly ne: number[];
  readonly type: number;
  readonly offset: number;
}

/**
 * An independent GGUF v3 reader written from ggml's GGUF specification (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md), sharing no
 * code with the writer: magic, version, counts, typed key/values (every value
 * type), tensor infos, alignment padding, and the data section.
 */
function readGguf(bytes: Uint8Array): { version: number; kv: Map<string, unknown>; tensors: ReadTensor[]; dataStart: number; view: DataView } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let p = 0;
  const u32 = (): number => {
    const v = view.getUint32(p, true);
    p += 4;
    return v;
  };
  const u64 = (): number => {
    const v = view.getBigUint64(p, true);
    p += 8;
    return Number(v);
  };
  const str = (): string => {
    const n = u64();
    const s = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(p, p + n));
    p += n;
    return s;
  };
  const value = (type: number): unknown => {
    switch (type) {
      case 0:
        return view.getUint8(p++);
      case 1:
        return view.getInt8(p++);
      case 2:
        p += 2;
        return view.getUint16(p - 2, true);
      case 3:
        p += 2;
        return view.getInt16(p - 2, true);
      case 4:
        return u32();
      case 5:
        p += 4;
        return view.getInt32(p - 4, true);
      case 6:
        p += 4;
        return view.getFloat32(p - 4, true);
      case 7: {
        const b = view.getUint8(p++);
        if (b > 1) throw new Error(`bool byte ${b}`);
        return b === 1;
      }
      case 8:
        return str();
      case 9: {
        const t = u32();
        const n = u64();
        return Array.from({ length: n }, () => value(t));
      }
      case 10:
        p += 8;
        return view.getBigUint64(p - 8, true);
      case 11:
        p += 8;
        return view.getBigInt64(p - 8, true);
      case 12:
        p += 8;
        return view.getFloat64(p - 8, true);
      default:
        throw new Error(`unknown value type ${type} at ${p - 4}`);
    }
  };
  if (new TextDecoder().decode(bytes.subarray(0, 4)) !== 'GGUF') throw new Error('bad magic');
  p = 4;
  const version = u32();
  const nTensors = u64();
  const nKv = u64();
  const kv = new Map<string, unknown>();
  for (let i = 0; i < nKv; i++) {
    const key = str();
    if (kv.has(key)) throw new Error(`duplicate key ${key}`);
    kv.set(key, value(u32()));
  }
  const tensors: ReadTensor[] = [];
  for (let i = 0; i < nTensors; i++) {
    const name = str();
    const dims = u32();
    const ne = Array.from({ length: dims }, () => u64());
    tensors.push({ name, ne, type: u32(), offset: u64() });
  }
  const alignment = (kv.get('general.alignment') as number | undefined) ?? 32;
  const dataStart = Math.ceil(p / alignment) * alignment;
  for (let k = p; k < dataStart; k++) if (bytes[k] !== 0) throw new Error(`padding byte ${k} is not 0`);
  return { version, kv, tensors, dataStart, view };
}

/** Element (row r, column c) of a 2-D ggml tensor: ne[0] is the contiguous dimension. */
function element(g: ReturnType<typeof readGguf>, name: string, r: number, c: number): number {
  const t = g.tensors.find((x) => x.name === name);
  if (t === undefined) throw new Error(`no tensor ${name}`);
  const at = g.dataStart + t.offset + (r * (t.ne[0] as number) + c) * (t.type === 0 ? 4 : 2);
  return t.type === 0 ? g.view.getFloat32(at, true) : f16Value(g.view.getUint16(at, true));
}

function f16Value(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m === 0 ? s * Infinity : NaN;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** A small checkpoint with rectangular matrices (D ≠ F, V ≠ D) and a BPE tokenizer, from a seeded initialization. */
function rectangular(): CheckpointState {
  const tokenizer = BpeTokenizer.fromPairs([
    [97, 98],
    [256, 99],
    [32, 256],
  ]);
  const decoder: DecoderConfig = { vocabularySize: tokenizer.vocabularySize, modelWidth: 8, heads: 2, feedForwardWidth: 12, layers: 2, maxPositions: 7, ropeBase: 10000, rmsEpsilon: 1e-6 };
  const model = new Decoder(decoder);
  model.initialize(5n);
  return {
    ...golden,
    tokenizer: tokenizer.toState(),
    decoder,
    parameters: model.toCheckpointParameters().map((p) => ({ ...p, data: p.data.slice() })),
    optimizer: { ...golden.optimizer, groups: { decay: [], noDecay: model.layout.entries.map((e) => e.name) }, moments: [], step: 0n, beta1Power: 1, beta2Power: 1 },
    selectedStep: 0n,
  };
}

describe('encodeGguf', () => {
  it('writes GGUF v3 with the llama architecture, llmcp hyper-parameters and provenance', () => {
    const g = readGguf(encodeGguf(golden, { name: 'ch33', sourceChecksum: golden.layout.checksum }));
    expect(g.version).toBe(3);
    const kv = g.kv;
    expect(kv.get('general.architecture')).toBe('llama');
    expect(kv.get('general.name')).toBe('ch33');
    expect(kv.get('general.file_type')).toBe(0);
    expect(kv.get('general.alignment')).toBe(32);
    expect(kv.get('general.source.checksum')).toBe('fnv1a64:2b8b6097eaed6a91');
    expect(kv.get('general.source.step')).toBe(8n);
    const d = golden.decoder;
    expect([kv.get('llama.vocab_size'), kv.get('llama.context_length'), kv.get('llama.embedding_length'), kv.get('llama.block_count')]).toEqual([d.vocabularySize, d.maxPositions, d.modelWidth, d.layers]);
    expect([kv.get('llama.feed_forward_length'), kv.get('llama.attention.head_count'), kv.get('llama.attention.head_count_kv'), kv.get('llama.rope.dimension_count')]).toEqual([
      d.feedForwardWidth,
      d.heads,
      d.heads,
      d.modelWidth / d.heads,
    ]);
    expect(kv.get('llama.rope.freq_base')).toBe(Math.fround(d.ropeBase));
    expect(kv.get('llama.attention.layer_norm_rms_epsilon')).toBe(Math.fround(d.rmsEpsilon));
  });

  it('names every tensor as llama.cpp does, with ggml ne [in, out] and no output.weight (tied head)', () => {
    const state = rectangular();
    const g = readGguf(encodeGguf(state));
    const { modelWidth: D, feedForwardWidth: F, vocabularySize: V } = state.decoder;
    const blocks = [0, 1].flatMap((l) => [
      [`blk.${l}.attn_norm.weight`, [D]],
      [`blk.${l}.attn_q.weight`, [D, D]],
      [`blk.${l}.attn_k.weight`, [D, D]],
      [`blk.${l}.attn_v.weight`, [D, D]],
      [`blk.${l}.attn_output.weight`, [D, D]],
      [`blk.${l}.ffn_norm.weight`, [D]],
      [`blk.${l}.ffn_gate.weight`, [D, F]],
      [`blk.${l}.ffn_up.weight`, [D, F]],
      [`blk.${l}.ffn_down.weight`, [F, D]],
    ]);
    expect(g.tensors.map((t) => [t.name, t.ne])).toEqual([['token_embd.weight', [D, V]], ...blocks, ['output_norm.weight', [D]]]);
    for (const t of g.tensors) expect(t.offset % 32).toBe(0);
  });

  it.each([
    ['rectangular', 'blocks.1.ffn.down.weight', 'blk.1.ffn_down.weight'],
    ['rectangular', 'blocks.0.ffn.gate.weight', 'blk.0.ffn_gate.weight'],
    ['square', 'blocks.1.attention.query.weight', 'blk.1.attn_q.weight'],
    ['square', 'blocks.0.attention.output.weight', 'blk.0.attn_output.weight'],
  ])('writes a %s llmcp projection [in, out] transposed: ggml row o holds W[·, o] (%s)', (_kind, source, name) => {
    const state = rectangular();
    const g = readGguf(encodeGguf(state));
    const p = state.parameters.find((x) => x.name === source);
    if (p === undefined) throw new Error(source);
    const [inW, outW] = p.shape as [number, number];
    for (let i = 0; i < inW; i++) for (let o = 0; o < outW; o++) expect(element(g, name, o, i)).toBe(Math.fround(p.data[i * outW + o] as number));
    // A square matrix is not symmetric: the untransposed reading differs (what a wrong orientation would load silently).
    if (inW === outW) expect(element(g, name, 0, 1)).not.toBe(Math.fround(p.data[1] as number));
  });

  it('writes the embedding [V, D] as stored (ggml row v is token v) and the gains as f32', () => {
    const state = rectangular();
    const g = readGguf(encodeGguf(state));
    const e = state.parameters[0]!;
    const D = state.decoder.modelWidth;
    for (let v = 0; v < state.decoder.vocabularySize; v++) for (let c = 0; c < D; c++) expect(element(g, 'token_embd.weight', v, c)).toBe(Math.fround(e.data[v * D + c] as number));
    expect(g.tensors.filter((t) => t.ne.length === 1).every((t) => t.type === 0)).toBe(true);
  });

  it('with dtype F16 stores the matrices as IEEE half (file type 1) and keeps the norms f32', () => {
    const state = rectangular();
    const g = readGguf(encodeGguf(state, { dtype: 'F16' }));
    expect(g.kv.get('general.file_type')).toBe(1);
    expect(g.tensors.map((t) => t.type)).toEqual(g.tensors.map((t) => (t.ne.length === 2 ? 1 : 0)));
    const p = state.parameters.find((x) => x.name === 'blocks.0.ffn.up.weight')!;
    const h = f64ToF16Bits(p.data[3 * 12 + 7] as number);
    expect(element(g, 'blk.0.ffn_up.weight', 7, 3)).toBe(f16Value(h as number));
  });

  it('refuses a value that does not fit f16, naming the tensor', () => {
    const state = rectangular();
    let error: unknown;
    try {
      encodeGguf({ ...state, parameters: state.parameters.map((p, i) => (i === 0 ? { ...p, data: Float64Array.from(p.data, (x, k) => (k === 2 ? 1e5 : x)) } : p)) }, { dtype: 'F16' });
    } catch (e) {
      error = e;
    }
    expect(isCliError(error) && error.code === 'CLI_INVALID_INPUT' && error.message.includes('token_embedding.weight[2]')).toBe(true);
  });

  it('is deterministic: the same checkpoint gives the same bytes', () => {
    expect(encodeGguf(golden, { sourceChecksum: golden.layout.checksum })).toEqual(encodeGguf(golden, { sourceChecksum: golden.layout.checksum }));
  });
});

describe('ggufVocabulary', () => {
  it('spells a byte-level BPE as a gpt2 vocabulary: BOS 0, EOS 1 (control), byte characters, merges by rank', () => {
    const tok = BpeTokenizer.fromPairs([
      [97, 98],
      [256, 32],
      [0xc3, 0xa9],
    ]);
    const v = ggufVocabulary(tok);
    expect(v.model).toBe('gpt2');
    expect(v.tokens.slice(0, 2)).toEqual(['<|begin_of_text|>', '<|endoftext|>']);
    expect(v.types.slice(0, 3)).toEqual([3, 3, 1]);
    expect(v.tokens[2 + 97]).toBe('a');
    expect(v.tokens[2 + 32]).toBe('Ġ'); // GPT-2's character for the space byte
    expect(v.tokens.slice(258)).toEqual(['ab', 'abĠ', 'Ã©']);
    expect(v.merges).toEqual(['a b', 'ab Ġ', 'Ã ©']);
    expect([v.bosId, v.eosId]).toEqual([0, 1]);
  });

  it('spells a literal tokenizer as its pieces with no merges and no control tokens', () => {
    const v = ggufVocabulary(LiteralTokenizer.fromPieces(['0', 'ab', ' ', new Uint8Array([0xff])]));
    expect(v).toMatchObject({ model: 'gpt2', tokens: ['0', 'ab', 'Ġ', 'ÿ'], types: [1, 1, 1, 1], merges: [], bosId: null, eosId: null });
  });

  it('refuses a vocabulary with two equal token texts (llama.cpp aborts on one)', () => {
    // rank 2 spells "abc" like rank 1: (a, bc) vs (ab, c)
    const tok = BpeTokenizer.fromPairs([
      [97, 98],
      [256, 99],
      [98, 99],
      [97, 258],
    ]);
    expect(() => ggufVocabulary(tok)).toThrow(/token ids 259 and 261 both spell "abc"/);
  });
});

describe('gpt2ByteCharacters', () => {
  it('is a bijection of the 256 bytes onto 256 characters, printable ASCII unchanged', () => {
    const chars = gpt2ByteCharacters();
    expect(new Set(chars).size).toBe(256);
    expect(chars[0x41]).toBe('A');
    expect(chars[0]).toBe('Ā');
    expect(chars[0x7f]).toBe('ġ');
  });
});

describe('f64ToF16Bits', () => {
  it('rounds to the nearest half, ties to even, including subnormals and the overflow edge', () => {
    expect(f64ToF16Bits(1)).toBe(0x3c00);
    expect(f64ToF16Bits(-2)).toBe(0xc000);
    expect(f64ToF16Bits(65504)).toBe(0x7bff);
    expect(f64ToF16Bits(65519.99)).toBe(0x7bff);
    expect(f64ToF16Bits(65520)).toBeNull();
    expect(f64ToF16Bits(2 ** -24)).toBe(0x0001);
    expect(f64ToF16Bits(2 ** -25)).toBe(0x0000); // tie to even (0)
    expect(f64ToF16Bits(3 * 2 ** -25)).toBe(0x0002); // tie to even (2)
    expect(f64ToF16Bits(1 + 2 ** -11)).toBe(0x3c00); // tie to even
    expect(f64ToF16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02);
    expect(f64ToF16Bits(-0)).toBe(0x8000);
  });

  it('gives the nearest representable half for many values (checked against both neighbours)', () => {
    let x = 0.000123;
    for (let k = 0; k < 2000; k++) {
      x = (x * 1.37 + 0.011) % 60000;
      const v = k % 2 === 0 ? x : -x / 97;
      const h = f64ToF16Bits(v) as number;
      const here = f16Value(h);
      const up = f16Value(h + 1);
      const down = (h & 0x7fff) === 0 ? here : f16Value(h - 1);
      expect(Math.abs(here - v)).toBeLessThanOrEqual(Math.abs(up - v));
      expect(Math.abs(here - v)).toBeLessThanOrEqual(Math.abs(down - v));
    }
  });
});

describe('llmcp export --to gguf', () => {
  it('writes the GGUF of a checkpoint file and reports it', async () => {
    const out = path.join(tmp.dir, 'golden.gguf');
    const r = await llmcp(['export', '--to', 'gguf', GOLDEN, '-o', out]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^wrote .*golden\.gguf: GGUF v3, llama architecture, .*step 8, fnv1a64:2b8b6097eaed6a91/);
    const g = readGguf(new Uint8Array(readFileSync(out)));
    expect(g.kv.get('general.name')).toBe('golden');
    expect(g.kv.get('tokenizer.ggml.tokens')).toEqual(['0', '1', '2', '3', '4']);
  });

  it('writes <name>.gguf by default, and f16 with --dtype f16', async () => {
    const r = await llmcp(['export', '--to', 'gguf', GOLDEN, '--dtype', 'f16'], { cwd: tmp.dir });
    expect(r.code).toBe(0);
    const g = readGguf(new Uint8Array(readFileSync(path.join(tmp.dir, 'golden-6330.gguf'))));
    expect(g.kv.get('general.file_type')).toBe(1);
  });

  it.each([
    [['--dtype', 'f64'], /--dtype f64 does not apply to --to gguf/],
    [['--moments'], /--moments does not apply to --to gguf/],
    [['--config-out', 'x.json'], /--config-out does not apply to --to gguf/],
  ])('refuses %j with a usage error', async (extra, message) => {
    const r = await llmcp(['export', '--to', 'gguf', GOLDEN, '-o', path.join(tmp.dir, 'never.gguf'), ...extra]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });

  it('refuses --dtype f16 for other formats', async () => {
    const r = await llmcp(['export', '--to', 'safetensors', GOLDEN, '--dtype', 'f16', '-o', path.join(tmp.dir, 'never.safetensors')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--dtype f16 applies to --to gguf only/);
  });

  it('exports a run directory (its best slot, <run>-best.gguf), run:slot and a slot directory (<run>-<slot>.gguf), never overwriting', async () => {
    const run = path.join(tmp.dir, 'ch33');
    expect((await llmcp(['train', run, '--preset', 'ch33', '--plain'])).code).toBe(0);
    const best = await llmcp(['export', '--to', 'gguf', run], { cwd: tmp.dir });
    expect(best.code).toBe(0);
    expect(best.stdout).toMatch(/^wrote ch33-best\.gguf: .*from .*ch33:best \(step 8, fnv1a64:2b8b6097eaed6a91\)/);
    const latest = await llmcp(['export', '--to', 'gguf', `${run}:latest`], { cwd: tmp.dir });
    expect(latest.code).toBe(0);
    const slotDir = await llmcp(['export', '--to', 'gguf', path.join(run, 'checkpoints', 'step_000008')], { cwd: tmp.dir });
    expect(slotDir.stdout).toMatch(/^wrote ch33-step_000008\.gguf: /);
    const again = await llmcp(['export', '--to', 'gguf', run], { cwd: tmp.dir });
    expect(again.code).toBe(4);
    expect(again.stderr).toBe('llmcp export: error: output ch33-best.gguf already exists\nhint: pass --force to replace it, or choose another --out\n');
    expect((await llmcp(['export', '--to', 'gguf', run, '--force'], { cwd: tmp.dir })).code).toBe(0);
    for (const file of ['ch33-best.gguf', 'ch33-latest.gguf', 'ch33-step_000008.gguf']) {
      const g = readGguf(new Uint8Array(readFileSync(path.join(tmp.dir, file))));
      expect(g.kv.get('general.source.checksum')).toBe('fnv1a64:2b8b6097eaed6a91'); // the ch33 run reproduces the golden file
    }
    const missing = await llmcp(['export', '--to', 'gguf', `${run}:step_000999`, '-o', path.join(tmp.dir, 'never.gguf')]);
    expect(missing.code).toBe(3);
  });

  it('documents the GGUF export in --help', async () => {
    const r = await llmcp(['export', '--help']);
    expect(r.stdout).toMatch(/--to gguf <checkpoint\|run\[:slot\]>/);
    expect(r.stdout).toMatch(/llmcp export --to gguf runs\/a/);
  });
});
