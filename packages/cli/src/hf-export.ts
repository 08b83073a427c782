/**
 * The Hugging Face directory export (`llmcp export --to hf`): an llmcp
 * decoder is a Llama in all but name (RMSNorm, rotary embeddings, SwiGLU, no
 * biases, tied embedding/output, one final norm), so a checkpoint becomes a
 * `LlamaForCausalLM` directory that `transformers` loads as it is:
 *
 * - `config.json`: the Llama hyper-parameters of the decoder;
 * - `model.safetensors`: every tensor under its Hugging Face name, written by
 *   the CLI's one safetensors writer ({@link encodeSafetensorsTensors});
 * - `tokenizer.json`, `tokenizer_config.json` (byte-level BPE only): a `BPE`
 *   model over the GPT-2 byte alphabet with BOS/EOS as special tokens and no
 *   regex pre-tokenization, so it gives llmcp's ids exactly;
 * - `generation_config.json`: the run's sampling settings (or llmcp's
 *   `sample` defaults for a bare checkpoint);
 * - `../README.md`: a model card.
 *
 * Two conventions differ and are converted:
 *
 * - orientation: llmcp stores a projection as `[in, out]` (`y = x·W`), a
 *   `torch.nn.Linear` weight is `[out, in]` (`y = x·Wᵀ`), so every
 *   projection is transposed; the embedding `[V, D]` is the same in both;
 * - rotary pairs: llmcp rotates adjacent features (2i, 2i+1) of each head
 *   (the original Llama/GPT-J "interleaved" form), Hugging Face's Llama
 *   rotates features (i, i + d/2) ("rotate half"). The query and key
 *   projections' output features are permuted per head so that HF's feature
 *   c·d/2 + i is llmcp's feature 2i + c — the permutation of
 *   `convert_llama_weights_to_hf.py`. Attention scores are dot products over
 *   a head's features, so permuting query and key alike leaves them, and the
 *   logits, unchanged.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { checksumLabel, type DecodedCheckpoint, type DecoderConfig } from '@llmcp/format';
import { BOS_ID, BYTE_TOKEN_OFFSET, EOS_ID, FIRST_MERGE_TOKEN_ID, tokenizerFromState } from '@llmcp/tokenizer';
import type { Job, SigningKey } from '@llmcp/trainer';
import type { CliContext } from './context.ts';
import { CliError } from './errors.ts';
import { assertVocabularySpellable, GGUF_BOS_TEXT, GGUF_EOS_TEXT, gpt2ByteCharacters } from './gguf.ts';
import { resolveCheckpoint } from './internal/checkpoint-address.ts';
import { exactDecoderSizes, exactSizeText, stringifyExact } from './internal/exact-json.ts';
import { requireOutputDirectory, writeOutputDirectory } from './internal/files.ts';
import { exportManifestFile, manifestLine } from './internal/export-manifest.ts';
import { encodeSafetensorsTensors, totalParameters, type SafetensorsDType, type SafetensorsTensor } from './safetensors.ts';

/** Text of the begin-of-document token (id 0) in `tokenizer.json` (the same as in a GGUF export). */
export const HF_BOS_TOKEN: string = GGUF_BOS_TEXT;
/** Text of the end-of-document token (id 1) in `tokenizer.json` (the same as in a GGUF export). */
export const HF_EOS_TOKEN: string = GGUF_EOS_TEXT;
/** `__metadata__.llmcp_export` of `model.safetensors` in an HF export. */
export const HF_EXPORT_FORMAT = 'llmcp-hf/1';

/** The files of an HF export, in the order they are written. */
export const HF_FILES = ['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'README.md'] as const;

/** What an export is made from: a checkpoint and, when it comes from a run, the paired job. */
export interface HfExportSource {
  readonly checkpoint: DecodedCheckpoint;
  /** The slot's `job.json` (training steps, validation losses, sampling settings), or null for a bare checkpoint. */
  readonly job: Job | null;
  /** How the source was named, for the model card (e.g. `runs/a:best`). */
  readonly description: string;
}

/** Options of {@link hfExportFiles}. */
export interface HfExportOptions {
  /** `F64` (default, exact) or `F32` (rounded to nearest). */
  readonly dtype?: SafetensorsDType;
  /** Model name for the model card (default `llmcp-model`). */
  readonly name?: string;
}

/** One file of the export. */
export interface HfExportFile {
  readonly name: (typeof HF_FILES)[number];
  readonly bytes: Uint8Array;
}

/**
 * Hugging Face tensor names and values: per head, HF's output feature
 * c·d/2 + i of the query and key projections is llmcp's feature 2i + c.
 *
 * @param checkpoint - a decoded checkpoint (parameters in model order).
 * @returns the tensors in HF order (embedding, layers, final norm); projections `[out, in]`.
 */
export function hfTensors(checkpoint: Pick<DecodedCheckpoint, 'decoder' | 'parameters'>): SafetensorsTensor[] {
  const { modelWidth: D, heads: H, layers: L } = checkpoint.decoder;
  const d = D / H;
  const half = d / 2;
  const p = (i: number): { data: Float64Array; shape: readonly number[] } => {
    const { data, shape } = checkpoint.parameters[i] as { data: Float64Array; shape: readonly number[] };
    return { data, shape };
  };
  /** W [in, out] → Wᵀ [out, in], output rows taken in `rowOf` order. */
  const transposed = (w: { data: Float64Array; shape: readonly number[] }, rowOf: (row: number) => number): { shape: number[]; data: Float64Array } => {
    const [inW, outW] = w.shape as [number, number];
    const out = new Float64Array(inW * outW);
    for (let r = 0; r < outW; r++) {
      const o = rowOf(r);
      for (let i = 0; i < inW; i++) out[r * inW + i] = w.data[i * outW + o] as number;
    }
    return { shape: [outW, inW], data: out };
  };
  const identity = (r: number): number => r;
  // HF feature r of head h = c·half + i ← llmcp feature 2i + c of the same head.
  const rotary = (r: number): number => {
    const h = Math.floor(r / d);
    const j = r - h * d;
    const c = j < half ? 0 : 1;
    const i = j - c * half;
    return h * d + 2 * i + c;
  };
  const out: SafetensorsTensor[] = [{ name: 'model.embed_tokens.weight', ...p(0) }];
  for (let l = 0; l < L; l++) {
    const b = 1 + 9 * l;
    const prefix = `model.layers.${l}`;
    out.push({ name: `${prefix}.input_layernorm.weight`, ...p(b) });
    out.push({ name: `${prefix}.self_attn.q_proj.weight`, ...transposed(p(b + 1), rotary) });
    out.push({ name: `${prefix}.self_attn.k_proj.weight`, ...transposed(p(b + 2), rotary) });
    out.push({ name: `${prefix}.self_attn.v_proj.weight`, ...transposed(p(b + 3), identity) });
    out.push({ name: `${prefix}.self_attn.o_proj.weight`, ...transposed(p(b + 4), identity) });
    out.push({ name: `${prefix}.post_attention_layernorm.weight`, ...p(b + 5) });
    out.push({ name: `${prefix}.mlp.gate_proj.weight`, ...transposed(p(b + 6), identity) });
    out.push({ name: `${prefix}.mlp.up_proj.weight`, ...transposed(p(b + 7), identity) });
    out.push({ name: `${prefix}.mlp.down_proj.weight`, ...transposed(p(b + 8), identity) });
  }
  out.push({ name: 'model.norm.weight', ...p(1 + 9 * L) });
  return out;
}

/**
 * `config.json` of a `LlamaForCausalLM`.
 *
 * @param decoder - the decoder configuration.
 * @param dtype - the tensors' element type.
 * @param bpe - whether the tokenizer has BOS/EOS (byte-level BPE).
 * @returns the JSON object.
 */
export function hfConfig(decoder: DecoderConfig, dtype: SafetensorsDType, bpe: boolean): Record<string, unknown> {
  // The sizes a 0-layer model may hold above 2^53 − 1 are written exactly (bigint digits in config.json).
  const exact = exactDecoderSizes(decoder);
  return {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    vocab_size: decoder.vocabularySize,
    hidden_size: decoder.modelWidth,
    intermediate_size: exact.feedForwardWidth,
    num_hidden_layers: decoder.layers,
    num_attention_heads: decoder.heads,
    num_key_value_heads: decoder.heads,
    head_dim: decoder.modelWidth / decoder.heads,
    hidden_act: 'silu',
    max_position_embeddings: exact.maxPositions,
    rms_norm_eps: decoder.rmsEpsilon,
    rope_theta: decoder.ropeBase,
    rope_scaling: null,
    attention_bias: false,
    attention_dropout: 0.0,
    mlp_bias: false,
    tie_word_embeddings: true,
    bos_token_id: bpe ? BOS_ID : null,
    eos_token_id: bpe ? EOS_ID : null,
    pad_token_id: null,
    initializer_range: 0.02,
    pretraining_tp: 1,
    use_cache: true,
    torch_dtype: dtype === 'F64' ? 'float64' : 'float32',
  };
}

function specialToken(id: number, content: string): Record<string, unknown> {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true };
}

/**
 * `tokenizer.json` of a byte-level BPE tokenizer: a `BPE` model whose
 * alphabet is the 256 bytes (spelled with the GPT-2 byte alphabet, ids
 * 2–257), one vocabulary entry and one merge per llmcp merge rank (ids 258…,
 * merges in rank order), BOS (0) and EOS (1) as special added tokens; a
 * `ByteLevel` pre-tokenizer with `use_regex: false` (the whole text is one
 * word, as in llmcp, which never splits text before merging) and a
 * `ByteLevel` decoder; no normalizer, no post-processor (encoding adds no
 * BOS: the ids are llmcp's `encode`, which `llmcp sample` feeds the model).
 *
 * @param checkpoint - a checkpoint with a byte-level BPE tokenizer.
 * @returns the JSON object.
 * @throws CliError `CLI_INVALID_INPUT` when two token ids spell the same bytes (a BPE vocabulary maps each string to one id), or the tokens spell more than `MAX_VOCABULARY_TEXT_BYTES`.
 */
export function hfTokenizerJson(checkpoint: Pick<DecodedCheckpoint, 'tokenizer'>): Record<string, unknown> {
  const tokenizer = tokenizerFromState(checkpoint.tokenizer);
  if (tokenizer.kind !== 'bpe') throw new TypeError('hfTokenizerJson needs a byte-level BPE tokenizer');
  // Bounded before any token is spelled (a valid table can spell exponentially long tokens).
  assertVocabularySpellable(tokenizer, 'tokenizer.json');
  // The ByteLevel pre-tokenizer and decoder spell byte b as GPT-2's bytes_to_unicode character.
  const alphabet = gpt2ByteCharacters();
  const spelling: string[] = alphabet.slice();
  const vocab: Record<string, number> = {};
  const idOf = new Map<string, number>();
  const add = (text: string, id: number): void => {
    const earlier = idOf.get(text);
    if (earlier !== undefined) {
      throw new CliError(
        'CLI_INVALID_INPUT',
        `token ids ${earlier} and ${id} spell the same bytes; a Hugging Face BPE vocabulary maps each byte string to one id, so this tokenizer cannot be written as tokenizer.json`,
        { hint: 'two merge orders built the same bytes; retrain the tokenizer (other merges), or use --to safetensors, which keeps the llmcp tokenizer' },
      );
    }
    idOf.set(text, id);
    vocab[text] = id;
  };
  for (let b = 0; b < 256; b++) add(alphabet[b] as string, b + BYTE_TOKEN_OFFSET);
  const merges: string[] = [];
  tokenizer.pairs().forEach(([left, right], r) => {
    const text = (spelling[left] as string) + (spelling[right] as string);
    spelling.push(text);
    add(text, FIRST_MERGE_TOKEN_ID + r);
    merges.push(`${spelling[left] as string} ${spelling[right] as string}`);
  });
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [specialToken(BOS_ID, HF_BOS_TOKEN), specialToken(EOS_ID, HF_EOS_TOKEN)],
    normalizer: null,
    pre_tokenizer: byteLevel,
    post_processor: null,
    decoder: byteLevel,
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges,
    },
  };
}

/**
 * `tokenizer_config.json` for `AutoTokenizer`: the fast tokenizer of
 * `tokenizer.json` as it is, BOS/EOS named, no BOS/EOS added, no clean-up of
 * spaces on decoding (so decoding gives the exact text).
 *
 * @param decoder - the decoder configuration (context length).
 * @returns the JSON object.
 */
export function hfTokenizerConfig(decoder: DecoderConfig): Record<string, unknown> {
  const entry = (content: string): Record<string, unknown> => ({ content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  return {
    tokenizer_class: 'PreTrainedTokenizerFast',
    bos_token: HF_BOS_TOKEN,
    eos_token: HF_EOS_TOKEN,
    add_bos_token: false,
    add_eos_token: false,
    clean_up_tokenization_spaces: false,
    model_max_length: decoder.maxPositions,
    added_tokens_decoder: { [String(BOS_ID)]: entry(HF_BOS_TOKEN), [String(EOS_ID)]: entry(HF_EOS_TOKEN) },
  };
}

/**
 * `generation_config.json`: the run's sampling settings (temperature, top-k,
 * new tokens), or `llmcp sample`'s defaults (temperature 1, the whole
 * vocabulary, 32 new tokens) for a bare checkpoint. Temperature 0 is greedy
 * (`do_sample: false`).
 *
 * @param decoder - the decoder configuration.
 * @param job - the run's job, or null.
 * @param bpe - whether the tokenizer has BOS/EOS.
 * @returns the JSON object.
 */
export function hfGenerationConfig(decoder: DecoderConfig, job: Job | null, bpe: boolean): Record<string, unknown> {
  const sampling = job?.config.sampling;
  const temperature = sampling?.temperature ?? 1;
  const topK = sampling?.topK ?? decoder.vocabularySize;
  const ids = bpe ? { bos_token_id: BOS_ID, eos_token_id: EOS_ID } : {};
  const maxNewTokens = sampling?.maxNewTokens ?? 32;
  if (temperature === 0) return { ...ids, do_sample: false, max_new_tokens: maxNewTokens };
  return { ...ids, do_sample: true, temperature, top_k: topK, top_p: 1.0, max_new_tokens: maxNewTokens };
}

function formatLoss(x: number | null | undefined): string {
  return x === null || x === undefined ? 'not recorded' : x.toFixed(6);
}

/**
 * The model card (`../README.md`): what the model is, its size, how far it was
 * trained, its validation loss and where it came from, and how to load it.
 *
 * @param source - checkpoint, job and description.
 * @param options - dtype and name.
 * @returns Markdown text.
 */
export function hfModelCard(source: HfExportSource, options: HfExportOptions = {}): string {
  const c = source.checkpoint;
  const dec = c.decoder;
  const job = source.job;
  const name = options.name ?? 'llmcp-model';
  const bpe = c.tokenizer.kind === 'bpe';
  const lastEvaluation = job?.evaluations.at(-1);
  const dtype = (options.dtype ?? 'F64') === 'F64' ? 'float64' : 'float32';
  const rows: [string, string][] = [
    ['architecture', 'LlamaForCausalLM (decoder-only: RMSNorm, rotary position embeddings, SwiGLU, no biases, tied embedding/output)'],
    ['parameters', `${totalParameters(c)}`],
    ['vocabulary', `${dec.vocabularySize} (${bpe ? `byte-level BPE, ${c.tokenizer.kind === 'bpe' ? c.tokenizer.pairs.length : 0} merges; BOS 0, EOS 1` : 'literal tokenizer (no tokenizer.json)'})`],
    ['width / heads / feed-forward / layers', `${dec.modelWidth} / ${dec.heads} / ${exactSizeText(dec, 'feedForwardWidth')} / ${dec.layers}`],
    ['context length', exactSizeText(dec, 'maxPositions')],
    ['RoPE base / RMSNorm epsilon', `${dec.ropeBase} / ${dec.rmsEpsilon}`],
    ['weights', dtype],
    ['training steps', `${job?.step ?? c.selectedStep}${job === null ? '' : ` of ${job.config.steps}`}`],
    ['best validation loss', job?.best === null || job?.best === undefined ? 'not recorded' : `${formatLoss(job.best.validationLoss)} (step ${job.best.step})`],
    ['last validation loss', lastEvaluation === undefined ? 'not recorded' : `${formatLoss(lastEvaluation.validationLoss)} (step ${lastEvaluation.step})`],
    ['source', source.description],
    ['source checksum', checksumLabel(c.layout.checksum)],
  ];
  const table = ['| | |', '|---|---|', ...rows.map(([k, v]) => `| ${k} | ${v.replace(/\|/g, '\\|')} |`)].join('\n');
  const usage = bpe
    ? [
        '```python',
        'from transformers import AutoModelForCausalLM, AutoTokenizer',
        '',
        `model = AutoModelForCausalLM.from_pretrained("path/to/${name}", torch_dtype="auto")`,
        `tokenizer = AutoTokenizer.from_pretrained("path/to/${name}")`,
        'inputs = tokenizer("One morning", return_tensors="pt")',
        'out = model.generate(**inputs)  # settings from generation_config.json',
        'print(tokenizer.decode(out[0]))',
        '```',
      ].join('\n')
    : ['```python', 'from transformers import AutoModelForCausalLM', '', `model = AutoModelForCausalLM.from_pretrained("path/to/${name}", torch_dtype="auto")`, '```'].join('\n');
  return `---
library_name: transformers
pipeline_tag: text-generation
tags:
  - llmcp
  - llama
---

# ${name}

A small decoder-only language model trained with [llmcp](https://github.com/llmcp/llmcp) and exported by
\`llmcp export --to hf\` from an LLMCP35 v1 checkpoint.

${table}

## Use

${usage}

${
  bpe
    ? `The tokenizer encodes text exactly as llmcp does (byte-level BPE over the whole text, no regex pre-tokenization)
and adds no BOS/EOS; a training document is \`<|begin_of_text|>\` + text + \`<|endoftext|>\` (ids 0 and 1).`
    : 'The checkpoint has a literal tokenizer, which has no Hugging Face equivalent: give token ids directly.'
}
Sampling with \`generate\` draws from PyTorch's generator, not llmcp's SplitMix64 stream, so samples differ from
\`llmcp sample\`; greedy decoding (\`do_sample=False\`) follows the same logits.

## Conversion

llmcp stores projections as \`[in, out]\`; here they are \`[out, in]\` (\`torch.nn.Linear\`). llmcp rotates adjacent
feature pairs (2i, 2i+1) of each head; the query and key projections are permuted per head to the rotate-half
convention of \`LlamaForCausalLM\`, which leaves the logits unchanged.
`;
}

function jsonBytes(value: unknown): Uint8Array {
  return new TextEncoder().encode(`${stringifyExact(value, 2)}\n`);
}

/**
 * `tokenizer.json` text with the vocabulary in id order (a JavaScript object
 * lists integer-like keys such as "0" first; the ids are what a reader scans).
 */
function tokenizerJsonBytes(value: Record<string, unknown>): Uint8Array {
  const model = value.model as { vocab: Record<string, number> };
  const marker = '\u0000vocab\u0000';
  const text = JSON.stringify({ ...value, model: { ...model, vocab: marker } }, null, 2);
  const entries = Object.entries(model.vocab).sort((a, b) => a[1] - b[1]);
  const vocab = `{\n${entries.map(([k, id]) => `      ${JSON.stringify(k)}: ${id}`).join(',\n')}\n    }`;
  return new TextEncoder().encode(`${text.replace(JSON.stringify(marker), () => vocab)}\n`);
}

/**
 * Every file of the export, in memory.
 *
 * @param source - checkpoint, job and description.
 * @param options - dtype and model name.
 * @returns the files (no tokenizer files for a literal tokenizer).
 * @throws CliError `CLI_INVALID_INPUT` for a value that does not fit f32, or a BPE vocabulary with two ids of the same bytes.
 * @example
 * ```ts
 * const files = hfExportFiles({ checkpoint: decodeCheckpoint(bytes), job: null, description: 'state.llmcp' }, { dtype: 'F32' });
 * ```
 */
export function hfExportFiles(source: HfExportSource, options: HfExportOptions = {}): HfExportFile[] {
  const c = source.checkpoint;
  const dtype = options.dtype ?? 'F64';
  const bpe = c.tokenizer.kind === 'bpe';
  const metadata: Record<string, string> = {
    format: 'pt',
    llmcp_export: HF_EXPORT_FORMAT,
    total_parameters: totalParameters(c).toString(),
    source_checksum: checksumLabel(c.layout.checksum),
    selected_step: c.selectedStep.toString(),
  };
  const files: HfExportFile[] = [
    { name: 'config.json', bytes: jsonBytes(hfConfig(c.decoder, dtype, bpe)) },
    { name: 'generation_config.json', bytes: jsonBytes(hfGenerationConfig(c.decoder, source.job, bpe)) },
    { name: 'model.safetensors', bytes: encodeSafetensorsTensors(hfTensors(c), metadata, dtype) },
  ];
  if (bpe) {
    files.push({ name: 'tokenizer.json', bytes: tokenizerJsonBytes(hfTokenizerJson(c)) });
    files.push({ name: 'tokenizer_config.json', bytes: jsonBytes(hfTokenizerConfig(c.decoder)) });
  }
  files.push({ name: 'README.md', bytes: new TextEncoder().encode(hfModelCard(source, options)) });
  return files;
}

/**
 * Resolves `<checkpoint|run[:slot]|slot-dir>` for an export: the shared
 * checkpoint address of every command (`resolveCheckpoint`: a checkpoint
 * file with the `job.json` beside it when that job pairs with it, a run's
 * `best` slot — or the slot a resume would use when it has no best, and
 * with `latest` — a slot directory, or `run:slot`). Run slots are verified
 * in full (job digest, state, pairing).
 *
 * @param ctx - the command context.
 * @param spec - the argument as typed.
 * @param options - `latest`: a run's newest verified checkpoint instead of its best.
 * @returns checkpoint, job and description.
 * @throws CliError `CLI_FILE_NOT_FOUND`, `CLI_WRONG_FILE_KIND`, `CLI_UNKNOWN_SLOT` (a slot that is not a slot name or not the run's), `CLI_INVALID_CHECKPOINT`.
 */
export async function resolveExportSource(ctx: CliContext, spec: string, options: { readonly latest?: boolean } = {}): Promise<HfExportSource & { readonly outputStem: string; readonly manifest: string | null }> {
  const r = await resolveCheckpoint(ctx, spec, options.latest === true ? { latest: true } : {});
  return { checkpoint: r.checkpoint, job: r.job, description: r.description, outputStem: r.outputStem, manifest: r.manifest };
}

/** Options of {@link runHfExport}. */
export interface RunHfExportOptions {
  /** The output directory; default `<run>-<slot>-hf` (e.g. `default-best-hf`), or `<file>-hf`. */
  readonly dir?: string;
  readonly dtype?: 'f64' | 'f32';
  readonly force?: boolean;
  /** A run's newest verified checkpoint instead of its best. */
  readonly latest?: boolean;
  /** Signs the directory's provenance manifest (`model.sig`); null or absent: unsigned. */
  readonly signingKey?: SigningKey | null;
}

/**
 * Runs `llmcp export --to hf <source> <dir>`: resolves the source, checks
 * the directory (a non-empty one is replaced only with `--force`; files of
 * the export are replaced, others are left), writes every file atomically
 * with the directory's provenance manifest (`model.sig`, listing every file).
 *
 * @param ctx - the command context.
 * @param spec - `<checkpoint|run[:slot]|slot-dir>`.
 * @param options - the output directory (default `<run>-<slot>-hf`, e.g. `default-best-hf`, or `<file>-hf`), dtype, force, latest.
 * @returns 0.
 * @throws CliError for a bad source, an occupied directory without `--force`, or a failed write.
 */
export async function runHfExport(ctx: CliContext, spec: string, options: RunHfExportOptions = {}): Promise<number> {
  const source = await resolveExportSource(ctx, spec, options.latest === true ? { latest: true } : {});
  const dir = options.dir ?? `${source.outputStem}-hf`;
  const absolute = await requireOutputDirectory(ctx, dir);
  if (existsSync(absolute) && readdirSync(absolute).length > 0 && options.force !== true) {
    throw new CliError('CLI_WRITE_FAILED', `output directory ${dir} is not empty`, { path: absolute, hint: 'pass --force to replace the export files in it, or choose an empty or new directory' });
  }
  const dtype: SafetensorsDType = options.dtype === 'f32' ? 'F32' : 'F64';
  // Every file encoded before anything is written; then the output rule for each (only regular files replaced).
  const files = hfExportFiles(source, { dtype, name: path.basename(absolute) });
  const key = options.signingKey ?? null;
  // The directory's provenance manifest (model.sig, listing every file) is one more file of the directory, written with them.
  const manifest = await exportManifestFile(ctx, { dir }, files.map((f) => ({ path: f.name, bytes: f.bytes })), { source, format: 'hf', dtype, key });
  await writeOutputDirectory(ctx, dir, [...files, { name: path.basename(manifest.file), bytes: manifest.bytes }], options.force === true);
  const c = source.checkpoint;
  ctx.stdout.write(`wrote ${dir}: Hugging Face LlamaForCausalLM from ${source.description} (step ${source.job?.step ?? c.selectedStep}), ${totalParameters(c)} parameters (${dtype})\n`);
  for (const f of files) ctx.stdout.write(`  ${f.name}  ${f.bytes.length} bytes\n`);
  ctx.stdout.write(`  ${manifestLine(path.basename(manifest.file), key).replace(/^wrote /, '')}\n`);
  if (c.tokenizer.kind !== 'bpe') ctx.stderr.write('note: a literal tokenizer has no Hugging Face equivalent; no tokenizer.json was written (give token ids directly)\n');
  if (dtype === 'F32') ctx.stderr.write('note: --dtype f32 rounds every f64 value to the nearest f32 (lossy)\n');
  return 0;
}
