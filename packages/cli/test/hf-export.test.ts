/**
 * `llmcp export --to hf`: a trained run becomes a Hugging Face Llama
 * directory, proven by other people's code — Hugging Face's own tokenizer
 * implementation (@huggingface/tokenizers) reproduces llmcp's ids on every
 * validation document, and a PyTorch Llama written from the standard
 * equations (test/python/hf_llama_check.py) reproduces llmcp's logits.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { decodeCheckpoint, type DecodedCheckpoint } from '@llmcp/format';
import { readGgufHeader, readSafetensorsHeader } from '@llmcp/format/foreign';
import { Decoder } from '@llmcp/model';
import { BpeTokenizer, trainBpe, type AnyTokenizer, tokenizerFromState } from '@llmcp/tokenizer';
import { parseCorpus, parseSplitManifest, partitionCorpus, type CorpusPartitions } from '@llmcp/data';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeGguf } from '../src/gguf.ts';
import { hfExportFiles, hfTensors, hfTokenizerJson, hfTokenizerConfig } from '../src/hf-export.ts';
import { encodeSafetensors, encodeSafetensorsTensors } from '../src/safetensors.ts';
import { GOLDEN, llmcp, PACKAGE_DIR, REPO_ROOT, tempDir } from './helpers.ts';

const tmp = tempDir('llmcp-hf-');
afterAll(() => tmp.cleanup());

const STORIES = path.join(REPO_ROOT, 'apps/trainer/corpus/stories.json');
const STORIES_SPLIT = path.join(REPO_ROOT, 'apps/trainer/corpus/stories-split.json');
const BILINGUAL = path.join(REPO_ROOT, 'packages/data/corpora/tiny-bilingual/tiny-bilingual-corpus.json');
const BILINGUAL_SPLIT = path.join(REPO_ROOT, 'packages/data/corpora/tiny-bilingual/splits.json');

function partitions(corpus: string, split: string): CorpusPartitions {
  return partitionCorpus(parseCorpus(new Uint8Array(readFileSync(corpus))), parseSplitManifest(new Uint8Array(readFileSync(split))));
}

/** A 2-layer, 2-head model (head width 8, feed-forward 24 ≠ width, so a wrong orientation cannot pass) trained for 12 steps on the story corpus. */
const CONFIG = {
  steps: 12,
  data: { source: { kind: 'corpus', corpus: STORIES, split: STORIES_SPLIT }, contextLength: 16, stride: 8, batchSize: 8, shuffle: { seed: 7, epochs: 'reshuffle' } },
  tokenizer: { kind: 'bpe', merges: 160 },
  model: { width: 16, heads: 2, feedForwardWidth: 24, layers: 2, initSeed: 3 },
  optimizer: { learningRate: 0.01 },
  schedule: { kind: 'constant', rate: 0.01 },
  evaluation: { validateEvery: 4, batchSize: 8, maxBatches: 4 },
  checkpoint: { every: 4, keepSteps: 2 },
  sampling: { seed: 5, prompt: 'The', count: 1, maxNewTokens: 6, temperature: 0.7, topK: 20 },
  log: { timing: false },
};

const run = path.join(tmp.dir, 'run');
const out = path.join(tmp.dir, 'hf');
let best: DecodedCheckpoint;
/** Scalars of every parameter tensor of the best checkpoint. */
let total = 0;

beforeAll(async () => {
  const config = path.join(tmp.dir, 'config.json');
  writeFileSync(config, JSON.stringify(CONFIG));
  const r = await llmcp(['train', run, '--config', config, '--plain']);
  expect(r.code, r.stderr).toBe(0);
  best = decodeCheckpoint(new Uint8Array(readFileSync(path.join(run, 'checkpoints/best/state.llmcp'))));
  total = best.parameters.reduce((n, p) => n + p.data.length, 0);
}, 120_000);

const json = (file: string): Record<string, unknown> => JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;

describe('llmcp export --to hf', () => {
  it('writes config, weights, tokenizer, generation config and model card from a run (its best slot)', async () => {
    const r = await llmcp(['export', '--to', 'hf', run, out, '--dtype', 'f64']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe(`wrote ${out}: Hugging Face LlamaForCausalLM from ${run}:best (step 12), ${total} parameters (F64)`);
    expect(readdirSync(out).sort()).toEqual(['README.md', 'config.json', 'generation_config.json', 'model.safetensors', 'model.sig', 'tokenizer.json', 'tokenizer_config.json']);
    const d = best.decoder;
    expect(json(path.join(out, 'config.json'))).toMatchObject({
      architectures: ['LlamaForCausalLM'],
      model_type: 'llama',
      vocab_size: d.vocabularySize,
      hidden_size: d.modelWidth,
      intermediate_size: d.feedForwardWidth,
      num_hidden_layers: d.layers,
      num_attention_heads: d.heads,
      num_key_value_heads: d.heads,
      max_position_embeddings: d.maxPositions,
      rms_norm_eps: d.rmsEpsilon,
      rope_theta: d.ropeBase,
      tie_word_embeddings: true,
      bos_token_id: 0,
      eos_token_id: 1,
      torch_dtype: 'float64',
    });
    expect(json(path.join(out, 'generation_config.json'))).toEqual({ bos_token_id: 0, eos_token_id: 1, do_sample: true, temperature: 0.7, top_k: 20, top_p: 1, max_new_tokens: 6 });
    const job = JSON.parse(readFileSync(path.join(run, 'checkpoints/best/job.json'), 'utf8')) as { best: { validationLoss: number } };
    const card = readFileSync(path.join(out, 'README.md'), 'utf8');
    expect(card).toContain(`| parameters | ${total} |`);
    expect(card).toContain('| training steps | 12 of 12 |');
    expect(card).toContain(`| best validation loss | ${job.best.validationLoss.toFixed(6)} (step 12) |`);
    expect(card).toContain(`| source checksum | ${best.layout.checksumLabel} |`);
    expect(card).toContain('AutoModelForCausalLM.from_pretrained');
  });

  it('writes HF tensor names, [out, in] shapes and total_parameters, readable by the foreign-file reader', () => {
    const bytes = new Uint8Array(readFileSync(path.join(out, 'model.safetensors')));
    const h = readSafetensorsHeader(bytes);
    expect(h.metadata).toMatchObject({ format: 'pt', total_parameters: String(total), source_checksum: best.layout.checksumLabel });
    expect(h.totalElements).toBe(total);
    const shapes = Object.fromEntries(h.tensors.map((t) => [t.name, t.shape]));
    expect(shapes['model.embed_tokens.weight']).toEqual([best.decoder.vocabularySize, 16]);
    expect(shapes['model.layers.1.self_attn.q_proj.weight']).toEqual([16, 16]);
    expect(shapes['model.layers.1.mlp.gate_proj.weight']).toEqual([24, 16]);
    expect(shapes['model.layers.1.mlp.down_proj.weight']).toEqual([16, 24]);
    expect(shapes['model.norm.weight']).toEqual([16]);
    expect(h.tensors).toHaveLength(2 + 9 * 2);
    expect(shapes['lm_head.weight']).toBeUndefined();
  });

  it('refuses a non-empty directory without --force, and replaces the export files with it', async () => {
    const refused = await llmcp(['export', '--to', 'hf', run, out]);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain(`output directory ${out} is not empty`);
    const forced = await llmcp(['export', '--to', 'hf', `${run}:step_000008`, out, '--dtype', 'f64', '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stdout).toContain(`from ${run}:step_000008 (step 8)`);
    expect(readFileSync(path.join(out, 'README.md'), 'utf8')).toContain('| training steps | 8 of 12 |');
    const back = await llmcp(['export', '--to', 'hf', run, out, '--dtype', 'f64', '--force']);
    expect(back.code).toBe(0);
  });

  it('explains a bad slot, a missing directory argument and options that do not apply', async () => {
    const bad = await llmcp(['export', '--to', 'hf', `${run}:../../etc`, path.join(tmp.dir, 'x')]);
    expect(bad.code).toBe(3);
    expect(bad.stderr.split('\n')[0]).toBe(`llmcp export: error: slot "../../etc" is not a slot name (latest, latest.backup, best, best.backup or step_NNNNNN); ${run} has: best, best.backup, latest, latest.backup, step_000008, step_000012`);
    const missing = await llmcp(['export', '--to', 'hf', `${run}:step_000004`, path.join(tmp.dir, 'x')]);
    expect(missing.code).toBe(3);
    expect(missing.stderr.split('\n')[0]).toBe(`llmcp export: error: slot step_000004: ${run} has no such slot; it has: best, best.backup, latest, latest.backup, step_000008, step_000012`);
    // Without a directory: one named after the run and slot, in the working directory.
    const named = await llmcp(['export', '--to', 'hf', run], { cwd: tmp.dir });
    expect(named.code, named.stderr).toBe(0);
    expect(named.stdout.split('\n')[0]).toMatch(new RegExp(`^wrote ${path.basename(run)}-best-hf: Hugging Face LlamaForCausalLM from `));
    expect(existsSync(path.join(tmp.dir, `${path.basename(run)}-best-hf`, 'config.json'))).toBe(true);
    expect((await llmcp(['export', '--to', 'hf', run, path.join(tmp.dir, 'x'), '--moments'])).code).toBe(2);
  });

  it('exports a bare checkpoint with llmcp sample defaults, and a literal-tokenizer model without tokenizer files', async () => {
    const bare = path.join(tmp.dir, 'bare');
    mkdirSync(bare);
    const copy = path.join(bare, 'state.llmcp');
    writeFileSync(copy, readFileSync(path.join(run, 'checkpoints/best/state.llmcp')));
    const r = await llmcp(['export', '--to', 'hf', copy, path.join(tmp.dir, 'hf-bare')]);
    expect(r.code, r.stderr).toBe(0);
    expect(json(path.join(tmp.dir, 'hf-bare/generation_config.json'))).toEqual({ bos_token_id: 0, eos_token_id: 1, do_sample: true, temperature: 1, top_k: best.decoder.vocabularySize, top_p: 1, max_new_tokens: 32 });
    expect(readFileSync(path.join(tmp.dir, 'hf-bare/README.md'), 'utf8')).toContain('| best validation loss | not recorded |');
    const g = await llmcp(['export', '--to', 'hf', GOLDEN, path.join(tmp.dir, 'hf-golden')]);
    expect(g.code, g.stderr).toBe(0);
    expect(g.stderr).toContain('no tokenizer.json was written');
    expect(existsSync(path.join(tmp.dir, 'hf-golden/tokenizer.json'))).toBe(false);
    expect(json(path.join(tmp.dir, 'hf-golden/config.json'))).toMatchObject({ bos_token_id: null, eos_token_id: null, vocab_size: 5 });
  });
});

/** Loads an exported tokenizer with Hugging Face's tokenizers.js. */
function hfTokenizer(state: Pick<DecodedCheckpoint, 'tokenizer' | 'decoder'>): Tokenizer {
  return new Tokenizer(JSON.parse(JSON.stringify(hfTokenizerJson(state))) as object, hfTokenizerConfig(state.decoder));
}

/** Encodes every document with both tokenizers; returns the counts that agree. */
function agreement(tok: AnyTokenizer, hf: Tokenizer, texts: readonly string[]): { documents: number; equalIds: number; roundTrips: number; ids: number; firstDifference: string | null } {
  let equalIds = 0;
  let roundTrips = 0;
  let ids = 0;
  let firstDifference: string | null = null;
  for (const text of texts) {
    const want = Array.from(tok.encode(text));
    const got = hf.encode(text).ids;
    ids += want.length;
    if (want.length === got.length && want.every((id, i) => id === got[i])) equalIds++;
    else firstDifference ??= `${JSON.stringify(text.slice(0, 40))}: llmcp [${want.slice(0, 12).join(',')}] hf [${got.slice(0, 12).join(',')}]`;
    // tokenizers.js refuses to decode an empty id list (the empty text encodes to one).
    if ((got.length === 0 ? '' : hf.decode(got)) === text) roundTrips++;
  }
  return { documents: texts.length, equalIds, roundTrips, ids, firstDifference };
}

describe('tokenizer.json under @huggingface/tokenizers', () => {
  it("encodes every validation document of the run's corpus to llmcp's ids and decodes it back", () => {
    const tok = tokenizerFromState(best.tokenizer);
    const parts = partitions(STORIES, STORIES_SPLIT);
    const texts = parts.validation.map((d) => new TextDecoder().decode(d.bytes));
    const a = agreement(tok, hfTokenizer(best), texts);
    expect(a.firstDifference).toBeNull();
    expect(a).toMatchObject({ documents: 24, equalIds: 24, roundTrips: 24 });
    // Every other document of the corpus too.
    const all = [...parts.train, ...parts.test].map((d) => new TextDecoder().decode(d.bytes));
    const b = agreement(tok, hfTokenizer(best), all);
    expect(b.equalIds).toBe(all.length);
    expect(b.roundTrips).toBe(all.length);
    console.log(`tokenizer agreement (run, 160 merges): validation ${a.equalIds}/${a.documents} documents (${a.ids} ids), all ${b.equalIds + a.equalIds}/${b.documents + a.documents}`);
  });

  it('agrees on a bilingual tokenizer with many merges, on bytes that are not letters, and on the special tokens', () => {
    const parts = partitions(BILINGUAL, BILINGUAL_SPLIT);
    const bpe = trainBpe(parts.train.map((d) => d.bytes), 600).tokenizer;
    const state = { tokenizer: bpe.toState(), decoder: { ...best.decoder, vocabularySize: bpe.vocabularySize } };
    const hf = hfTokenizer(state);
    const texts = [
      ...[...parts.validation, ...parts.train, ...parts.test].map((d) => new TextDecoder().decode(d.bytes)),
      '',
      ' ',
      '\u0000\u0001\t\n\r\u007f',
      'Ünïcödé — “quotes” ☃ 🦀 𝔘',
      "  leading and trailing spaces, 'contractions' don't split  ",
      '<|begin|> <|endoftext without its bar',
    ];
    const a = agreement(bpe, hf, texts);
    expect(a.firstDifference).toBeNull();
    expect(a.equalIds).toBe(texts.length);
    expect(a.roundTrips).toBe(texts.length);
    const doc = parts.validation[0] as { bytes: Uint8Array };
    const text = new TextDecoder().decode(doc.bytes);
    expect(hf.encode(`<|begin_of_text|>${text}<|endoftext|>`).ids).toEqual(Array.from(bpe.encodeDocument(text)));
    expect(hf.decode(Array.from(bpe.encodeDocument(text)), { skip_special_tokens: true })).toBe(text);
    console.log(`tokenizer agreement (bilingual, ${bpe.mergeCount} merges): ${a.equalIds}/${a.documents} texts (${a.ids} ids)`);
  });

  it('refuses a tokenizer in which two ids spell the same bytes', () => {
    // rank 0: a+b, rank 1: ab+c = "abc", rank 2: b+c, rank 3: a+bc = "abc" again.
    const bpe = BpeTokenizer.fromPairs([[97, 98], [256, 99], [98, 99], [97, 258]]);
    expect(() => hfTokenizerJson({ tokenizer: bpe.toState() })).toThrow(expect.objectContaining({ code: 'CLI_INVALID_INPUT', message: expect.stringContaining('token ids 259 and 261 spell the same bytes') }));
  });
});

describe('safetensors exports', () => {
  it('carry total_parameters in __metadata__ (a decimal string)', () => {
    const golden = decodeCheckpoint(new Uint8Array(readFileSync(GOLDEN)));
    expect(readSafetensorsHeader(encodeSafetensors(golden, { moments: true })).metadata?.total_parameters).toBe('144');
  });
});

describe('the foreign-file reader on the GGUF export', () => {
  it('reads the header and tensor table that the GGUF writer produced', async () => {
    const h = readGgufHeader(encodeGguf(best));
    expect(h.metadata.find((m) => m.key === 'general.architecture')?.value).toBe('llama');
    expect(h.tensors.map((t) => t.name)).toContain('token_embd.weight');
    expect(h.tensors).toHaveLength(2 + 9 * 2);
    expect(h.totalElements).toBe(total);
    const file = path.join(tmp.dir, 'm.gguf');
    writeFileSync(file, encodeGguf(best));
    const r = await llmcp(['inspect', file]);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[0]).toContain(`GGUF v3 (architecture llama), 20 tensors, ${total} elements — not an LLMCP35 checkpoint`);
  });
});

const python = process.env.LLMCP_PYTHON ?? '/usr/bin/python3';
const probe = spawnSync(python, ['-c', 'import torch'], { encoding: 'utf8' });
const torchMissing = probe.error !== undefined || probe.status !== 0 ? `${python} with torch is not available (install Debian's python3-torch to run this check)` : null;

interface Check {
  readonly sequences: number;
  readonly positions: number;
  readonly max_abs_error: number;
  readonly max_relative_error: number;
}

/** Runs the PyTorch Llama on `dir` and compares with llmcp's logits of `sequences`. */
function pytorchCheck(dir: string, checkpoint: DecodedCheckpoint, sequences: readonly (readonly number[])[], label: string): Check {
  const model = Decoder.fromCheckpoint(checkpoint);
  const V = checkpoint.decoder.vocabularySize;
  const expected = {
    sequences: sequences.map((ids) => {
      const logits = model.logits(ids);
      return { ids, logits: Array.from({ length: ids.length }, (_, t) => Array.from(logits.subarray(t * V, (t + 1) * V))) };
    }),
  };
  const file = path.join(tmp.dir, `expected-${label}.json`);
  writeFileSync(file, JSON.stringify(expected));
  const r = spawnSync(python, [path.join(PACKAGE_DIR, 'test/python/hf_llama_check.py'), dir, file], { encoding: 'utf8' });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout) as Check;
}

describe('model.safetensors under a PyTorch Llama (standard equations, rotate-half RoPE, f64)', () => {
  it("matches llmcp's logits on every validation document to 1e-12 relative", (ctx) => {
    if (torchMissing !== null) {
      ctx.skip(torchMissing);
      return;
    }
    const tok = tokenizerFromState(best.tokenizer);
    const P = best.decoder.maxPositions;
    const docs = partitions(STORIES, STORIES_SPLIT).validation.map((d) => Array.from(tok.encodeDocument(d.bytes)));
    // Every validation document as windows of the context length (all of it, as in evaluation), plus a one-token sequence.
    const sequences: number[][] = [[0]];
    for (const ids of docs) for (let s = 0; s < ids.length; s += P) sequences.push(ids.slice(s, s + P));
    const check = pytorchCheck(out, best, sequences, 'run');
    expect(check.sequences).toBe(sequences.length);
    expect(check.max_relative_error).toBeLessThanOrEqual(1e-12);
    console.log(`PyTorch Llama vs llmcp: ${check.sequences} sequences, ${check.positions} positions, max |Δ| ${check.max_abs_error}, max relative ${check.max_relative_error}`);
  });

  it('matches on the golden ch33 model too (literal tokenizer, 2 heads of width 2)', async (ctx) => {
    if (torchMissing !== null) {
      ctx.skip(torchMissing);
      return;
    }
    const golden = decodeCheckpoint(new Uint8Array(readFileSync(GOLDEN)));
    const check = pytorchCheck(path.join(tmp.dir, 'hf-golden'), golden, [[0, 1], [4, 3], [2], [1, 1]], 'golden');
    expect(check.max_relative_error).toBeLessThanOrEqual(1e-12);
  });

  it('is not vacuous: without the rotate-half permutation of q/k the logits differ', (ctx) => {
    if (torchMissing !== null) {
      ctx.skip(torchMissing);
      return;
    }
    const dir = path.join(tmp.dir, 'hf-unpermuted');
    mkdirSync(dir);
    for (const f of hfExportFiles({ checkpoint: best, job: null, description: 'test' })) writeFileSync(path.join(dir, f.name), f.bytes);
    // q/k transposed only (adjacent-pair order kept): what an exporter that forgot the permutation would write.
    const D = best.decoder.modelWidth;
    const tensors = hfTensors(best).map((t) => {
      const m = /^model\.layers\.(\d+)\.self_attn\.([qk])_proj\.weight$/.exec(t.name);
      if (m === null) return t;
      const w = best.parameters[1 + 9 * Number(m[1]) + (m[2] === 'q' ? 1 : 2)]?.data as Float64Array;
      const data = new Float64Array(D * D);
      for (let o = 0; o < D; o++) for (let i = 0; i < D; i++) data[o * D + i] = w[i * D + o] as number;
      return { ...t, data };
    });
    const meta = readSafetensorsHeader(new Uint8Array(readFileSync(path.join(out, 'model.safetensors')))).metadata ?? {};
    writeFileSync(path.join(dir, 'model.safetensors'), encodeSafetensorsTensors(tensors, meta, 'F64'));
    const tok = tokenizerFromState(best.tokenizer);
    const ids = Array.from(tok.encode('Once upon a time there was a small river')).slice(0, best.decoder.maxPositions);
    expect(pytorchCheck(dir, best, [ids], 'unpermuted').max_relative_error).toBeGreaterThan(1e-6);
  });
});
