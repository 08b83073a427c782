/**
 * Export of a checkpoint as a GGUF v3 file for llama.cpp (and the tools built
 * on it: ollama, LM Studio, node-llama-cpp), following ggml's GGUF
 * specification (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md) and llama.cpp's `llama` architecture.
 *
 * File layout (all little-endian): magic `GGUF`, u32 version 3, u64 tensor
 * count, u64 metadata count; the metadata key/value pairs; the tensor infos
 * (name, u32 n_dims, u64 ne[n_dims] innermost first, u32 ggml type, u64 offset
 * into the data section); zero padding to `general.alignment` (32); the tensor
 * data, each tensor starting at a multiple of the alignment (zero padding).
 *
 * llmcp's decoder is llama.cpp's `llama` graph exactly: RMSNorm, rotary
 * embeddings on adjacent pairs (2i, 2i+1) — llama.cpp's default `NORM` rope,
 * so q/k are written without the row permutation a Hugging Face export needs —
 * SwiGLU, no biases, one final norm, and the output head tied to the token
 * embedding (no `output.weight`: llama.cpp then uses `token_embd`).
 *
 * Orientation: llmcp stores a projection `[in, out]` row-major; ggml's
 * `mul_mat` wants each output's row of `in` weights contiguous, i.e. `ne =
 * [in, out]` with the data transposed. The embedding `[V, D]` is already one
 * contiguous row per token: written as stored, `ne = [D, V]`.
 *
 * Tokenizers:
 * - byte-level BPE → `tokenizer.ggml.model = gpt2`: id 0 `<|begin_of_text|>`,
 *   id 1 `<|endoftext|>` (control), ids 2–257 the GPT-2 byte-to-unicode
 *   character of byte id − 2, then each merge's concatenation; the merges
 *   `"<left> <right>"` in rank order; BOS 0, EOS 1, `add_bos_token` and
 *   `add_eos_token` false (callers pass exactly the ids they mean).
 * - literal → also `gpt2`: the pieces (byte-to-unicode spelled), an empty
 *   merge list (llama.cpp requires the key), no BOS/EOS keys. llama.cpp's text
 *   tokenizer then emits one-byte pieces only (a multi-byte piece is reached
 *   by passing its id), and a vocabulary of more than 11 pieces gets llama.cpp's
 *   gpt2 default BOS/EOS id 11, which its generators treat as end of
 *   generation (no key turns that default off; an out-of-range id keeps it).
 *   Other vocabulary types are worse: `none` aborts on first use in
 *   node-llama-cpp, and `rwkv` (a greedy longest match like llmcp's literal
 *   rule) emits id −1 for an uncovered byte, on which node-llama-cpp's load-time
 *   tokenizer probe aborts the process.
 */
import { checksumLabel, type CheckpointState } from '@llmcp/format';
import { BOS_ID, BYTE_TOKEN_OFFSET, EOS_ID, tokenizerFromState, type AnyTokenizer } from '@llmcp/tokenizer';
import { CliError } from './errors.ts';
import { exactSizeText } from './internal/exact-json.ts';

/** `GGUF` as the first four bytes. */
export const GGUF_MAGIC: Uint8Array = new Uint8Array([0x47, 0x47, 0x55, 0x46]);
/** The GGUF version written. */
export const GGUF_VERSION = 3;
/** `general.alignment`: every tensor's data starts at a multiple of this many bytes. */
export const GGUF_ALIGNMENT = 32;
/** Text of token id 0 (BOS) of an exported byte-level BPE vocabulary. */
export const GGUF_BOS_TEXT = '<|begin_of_text|>';
/** Text of token id 1 (EOS) of an exported byte-level BPE vocabulary; llama.cpp treats it as end of generation. */
export const GGUF_EOS_TEXT = '<|endoftext|>';

/** Element type of the matrices (`F32`: exact f64 → f32 rounding; `F16`: half precision, lossy). Norm gains are always F32. */
export type GgufDType = 'F32' | 'F16';

/** ggml tensor types written. */
export const GGML_TYPE = { F32: 0, F16: 1 } as const;
/** `general.file_type` values (llama.cpp `llama_ftype`). */
export const GGUF_FILE_TYPE = { ALL_F32: 0, MOSTLY_F16: 1 } as const;
/** llama.cpp token types (`tokenizer.ggml.token_type`). */
export const GGUF_TOKEN_TYPE = { NORMAL: 1, CONTROL: 3 } as const;

/** A typed metadata value (GGUF value types UINT32, UINT64, FLOAT32, BOOL, STRING and arrays of STRING / INT32). */
export type GgufValue =
  | { readonly type: 'u32'; readonly value: number }
  | { readonly type: 'u64'; readonly value: bigint }
  | { readonly type: 'f32'; readonly value: number }
  | { readonly type: 'bool'; readonly value: boolean }
  | { readonly type: 'string'; readonly value: string }
  | { readonly type: 'string[]'; readonly value: readonly string[] }
  | { readonly type: 'i32[]'; readonly value: readonly number[] };

/** One metadata key/value pair, in file order. */
export interface GgufMetadataEntry {
  readonly key: string;
  readonly value: GgufValue;
}

/** One tensor as written: llama.cpp name, ggml `ne` (innermost first) and type. */
export interface GgufTensorInfo {
  /** llama.cpp name, e.g. `blk.0.attn_q.weight`. */
  readonly name: string;
  /** The llmcp parameter it comes from, e.g. `blocks.0.attention.query.weight`. */
  readonly source: string;
  /** ggml `ne`, innermost (contiguous) dimension first. */
  readonly ne: readonly number[];
  /** Element type. */
  readonly dtype: GgufDType;
  /** The llmcp tensor is `[in, out]` and is written transposed. */
  readonly transposed: boolean;
}

/** The tokenizer as llama.cpp's `tokenizer.ggml.*` keys hold it. */
export interface GgufVocabulary {
  /** `tokenizer.ggml.model`. */
  readonly model: 'gpt2';
  /** `tokenizer.ggml.pre`. */
  readonly pre: string;
  /** Token texts in id order. */
  readonly tokens: readonly string[];
  /** Token types in id order ({@link GGUF_TOKEN_TYPE}). */
  readonly types: readonly number[];
  /** Merges `"<left> <right>"` in rank order (none for a literal tokenizer). */
  readonly merges: readonly string[];
  readonly bosId: number | null;
  readonly eosId: number | null;
}

/** Options of {@link encodeGguf}. */
export interface GgufOptions {
  /** Matrix element type: `F32` (default) or `F16`. */
  readonly dtype?: GgufDType;
  /** `general.name` (default `llmcp model`). */
  readonly name?: string;
  /** FNV-1a label of the source file (`general.source.checksum`). */
  readonly sourceChecksum?: bigint;
}

const LLAMA_BLOCK_TENSORS: readonly (readonly [llmcp: string, gguf: string])[] = [
  ['attention_norm.gain', 'attn_norm'],
  ['attention.query.weight', 'attn_q'],
  ['attention.key.weight', 'attn_k'],
  ['attention.value.weight', 'attn_v'],
  ['attention.output.weight', 'attn_output'],
  ['ffn_norm.gain', 'ffn_norm'],
  ['ffn.gate.weight', 'ffn_gate'],
  ['ffn.up.weight', 'ffn_up'],
  ['ffn.down.weight', 'ffn_down'],
];

const U32_MAX = 0xffffffff;

/**
 * GPT-2's reversible byte-to-unicode table (openai/gpt-2 `encoder.py`
 * `bytes_to_unicode`, also llama.cpp's `unicode_byte_to_utf8`): printable
 * Latin-1 bytes stand for themselves, the other 68 become U+0100 onwards.
 *
 * @returns the character of each byte 0–255.
 */
export function gpt2ByteCharacters(): string[] {
  const printable = (b: number): boolean => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const out: string[] = [];
  let next = 256;
  for (let b = 0; b < 256; b++) out.push(String.fromCodePoint(printable(b) ? b : next++));
  return out;
}

/**
 * The most bytes of token text an export that spells every token (a GGUF
 * vocabulary, a Hugging Face `tokenizer.json`) writes: 32 MiB, hundreds of
 * times a real vocabulary's (a 100,000-token BPE spells under 1 MB).
 */
export const MAX_VOCABULARY_TEXT_BYTES: number = 32 * 1024 * 1024;

/**
 * Refuses, before spelling any token, a tokenizer whose tokens spell more
 * than {@link MAX_VOCABULARY_TEXT_BYTES} in all: a valid BPE table of a few
 * KiB can join a token with itself again and again (64 merges spell 2^64
 * bytes), and spelling it would run for ever and exhaust memory. The lengths
 * come from the tokenizer's own bookkeeping (`tokenLength`), one pass over
 * the vocabulary: an export's cost stays linear in the checkpoint.
 *
 * @param tokenizer - the tokenizer.
 * @param what - the vocabulary being written, for the message (`a GGUF vocabulary`).
 * @throws CliError `CLI_INVALID_INPUT` naming the total and the longest token.
 */
export function assertVocabularySpellable(tokenizer: AnyTokenizer, what: string): void {
  let total = 0;
  let longest = { id: 0, bytes: 0 };
  for (let id = 0; id < tokenizer.vocabularySize; id++) {
    const bytes = tokenizer.tokenLength(id);
    total += bytes;
    if (bytes > longest.bytes) longest = { id, bytes };
  }
  if (total <= MAX_VOCABULARY_TEXT_BYTES) return;
  const size = (n: number): string => (n > Number.MAX_SAFE_INTEGER ? `about 2^${Math.round(Math.log2(n))}` : String(n));
  throw new CliError(
    'CLI_INVALID_INPUT',
    `the tokenizer's ${tokenizer.vocabularySize} tokens spell ${size(total)} bytes (token ${longest.id} alone ${size(longest.bytes)}); ${what} holds every token's text, and an export writes at most ${MAX_VOCABULARY_TEXT_BYTES} bytes of it`,
    { hint: 'merges that join long tokens again and again spell exponentially long tokens; --to safetensors keeps the merge table instead of the texts' },
  );
}

/** Two token ids, `ids` = [earlier, later], spell the same `text` in a vocabulary of the given `kind`. */
function duplicateTokenError(kind: string, text: string, ids: readonly [first: number, second: number]): CliError {
  const [first, second] = ids;
  return new CliError(
    'CLI_INVALID_INPUT',
    `token ids ${first} and ${second} both spell ${JSON.stringify(text)}; llama.cpp requires distinct token texts (it aborts loading a ${kind} vocabulary with two equal tokens)`,
    { hint: 'this tokenizer cannot be exported to GGUF; llmcp itself and the safetensors export are unaffected' },
  );
}

/**
 * The tokenizer as llama.cpp's vocabulary (see the module comment).
 *
 * @param tokenizer - an llmcp tokenizer.
 * @returns tokens, types, merges and BOS/EOS ids.
 * @throws CliError `CLI_INVALID_INPUT` when two ids spell the same text (llama.cpp refuses such a vocabulary), or the tokens spell more than {@link MAX_VOCABULARY_TEXT_BYTES}.
 * @example
 * ```ts
 * ggufVocabulary(BpeTokenizer.fromPairs([[97, 98]])).merges; // ['a b']
 * ```
 */
export function ggufVocabulary(tokenizer: AnyTokenizer): GgufVocabulary {
  assertVocabularySpellable(tokenizer, 'a GGUF vocabulary');
  const tokens: string[] = [];
  const seen = new Map<string, number>();
  const add = (text: string, kind: string): void => {
    const earlier = seen.get(text);
    if (earlier !== undefined) throw duplicateTokenError(kind, text, [earlier, tokens.length]);
    seen.set(text, tokens.length);
    tokens.push(text);
  };
  const chars = gpt2ByteCharacters();
  const spell = (bytes: Uint8Array): string => Array.from(bytes, (b) => chars[b] as string).join('');
  if (tokenizer.kind === 'bpe') {
    add(GGUF_BOS_TEXT, 'gpt2');
    add(GGUF_EOS_TEXT, 'gpt2');
    for (let id = BYTE_TOKEN_OFFSET; id < tokenizer.vocabularySize; id++) add(spell(tokenizer.tokenBytes(id)), 'gpt2');
    const merges = tokenizer.pairs().map(([l, r]) => `${tokens[l + BYTE_TOKEN_OFFSET] as string} ${tokens[r + BYTE_TOKEN_OFFSET] as string}`);
    const types = tokens.map((_, id) => (id < BYTE_TOKEN_OFFSET ? GGUF_TOKEN_TYPE.CONTROL : GGUF_TOKEN_TYPE.NORMAL));
    return { model: 'gpt2', pre: 'default', tokens, types, merges, bosId: BOS_ID, eosId: EOS_ID };
  }
  // Literal: the pieces, no merges, no control tokens.
  for (let id = 0; id < tokenizer.vocabularySize; id++) add(spell(tokenizer.tokenBytes(id)), 'gpt2');
  return { model: 'gpt2', pre: 'default', tokens, types: tokens.map(() => GGUF_TOKEN_TYPE.NORMAL), merges: [], bosId: null, eosId: null };
}

function u32Field(key: string, value: number, exact: string = String(value)): GgufMetadataEntry {
  if (!Number.isSafeInteger(value) || value < 0 || value > U32_MAX) {
    throw new CliError('CLI_INVALID_INPUT', `${key} = ${exact} does not fit the u32 llama.cpp reads`, { hint: 'GGUF export needs sizes below 2^32' });
  }
  return { key, value: { type: 'u32', value } };
}

function f32Field(key: string, value: number): GgufMetadataEntry {
  const r = Math.fround(value);
  if (!Number.isFinite(r) || (r === 0 && value !== 0)) {
    throw new CliError('CLI_INVALID_INPUT', `${key} = ${value} does not fit the f32 llama.cpp reads`);
  }
  return { key, value: { type: 'f32', value } };
}

/**
 * The metadata an export carries, in file order: `general.*` (architecture,
 * name, description, file type, alignment, provenance), the `llama.*`
 * hyper-parameters and the `tokenizer.ggml.*` vocabulary.
 *
 * @param state - the checkpoint.
 * @param options - dtype, name, source checksum.
 * @returns the entries.
 * @throws CliError `CLI_INVALID_INPUT` for a size llama.cpp cannot read or a vocabulary it refuses.
 */
export function ggufMetadata(state: CheckpointState, options: GgufOptions = {}): GgufMetadataEntry[] {
  const d = state.decoder;
  const dtype = options.dtype ?? 'F32';
  const tokenizer = tokenizerFromState(state.tokenizer);
  const checksum = options.sourceChecksum === undefined ? null : checksumLabel(options.sourceChecksum);
  const str = (key: string, value: string): GgufMetadataEntry => ({ key, value: { type: 'string', value } });
  const entries: GgufMetadataEntry[] = [
    str('general.architecture', 'llama'),
    str('general.type', 'model'),
    str('general.name', options.name ?? 'llmcp model'),
    str(
      'general.description',
      `A decoder-only language model trained with llmcp, exported from an LLMCP35 v1 checkpoint${checksum === null ? '' : ` (${checksum})`} at step ${state.selectedStep}.`,
    ),
    u32Field('general.file_type', dtype === 'F32' ? GGUF_FILE_TYPE.ALL_F32 : GGUF_FILE_TYPE.MOSTLY_F16),
    u32Field('general.alignment', GGUF_ALIGNMENT),
    str('general.source.format', 'LLMCP35 v1'),
  ];
  if (checksum !== null) entries.push(str('general.source.checksum', checksum));
  entries.push(
    { key: 'general.source.step', value: { type: 'u64', value: state.selectedStep } },
    str('general.source.tokenizer_identity', tokenizer.identity()),
    u32Field('llama.vocab_size', d.vocabularySize),
    u32Field('llama.context_length', d.maxPositions, exactSizeText(d, 'maxPositions')),
    u32Field('llama.embedding_length', d.modelWidth),
    u32Field('llama.block_count', d.layers),
    u32Field('llama.feed_forward_length', d.feedForwardWidth, exactSizeText(d, 'feedForwardWidth')),
    u32Field('llama.attention.head_count', d.heads),
    u32Field('llama.attention.head_count_kv', d.heads),
    f32Field('llama.attention.layer_norm_rms_epsilon', d.rmsEpsilon),
    f32Field('llama.rope.freq_base', d.ropeBase),
    u32Field('llama.rope.dimension_count', d.modelWidth / d.heads),
  );
  // The vocabulary last: the sizes above are refused first, and its text is bounded before any of it is spelled.
  const vocab = ggufVocabulary(tokenizer);
  entries.push(str('tokenizer.ggml.model', vocab.model));
  entries.push(
    str('tokenizer.ggml.pre', vocab.pre),
    { key: 'tokenizer.ggml.tokens', value: { type: 'string[]', value: vocab.tokens } },
    { key: 'tokenizer.ggml.token_type', value: { type: 'i32[]', value: vocab.types } },
    // Required by llama.cpp for a gpt2 vocabulary even when empty.
    { key: 'tokenizer.ggml.merges', value: { type: 'string[]', value: vocab.merges } },
  );
  if (vocab.bosId !== null) entries.push(u32Field('tokenizer.ggml.bos_token_id', vocab.bosId));
  if (vocab.eosId !== null) entries.push(u32Field('tokenizer.ggml.eos_token_id', vocab.eosId));
  entries.push({ key: 'tokenizer.ggml.add_bos_token', value: { type: 'bool', value: false } }, { key: 'tokenizer.ggml.add_eos_token', value: { type: 'bool', value: false } });
  return entries;
}

/**
 * The tensor table of an export: llama.cpp names in file order (`token_embd`,
 * per block `attn_norm attn_q attn_k attn_v attn_output ffn_norm ffn_gate
 * ffn_up ffn_down`, `output_norm`), ggml `ne` and element type.
 *
 * @param state - the checkpoint (its decoder configuration).
 * @param dtype - matrix element type (gains are F32).
 * @returns the tensors.
 */
export function ggufTensorInfos(state: Pick<CheckpointState, 'decoder'>, dtype: GgufDType = 'F32'): GgufTensorInfo[] {
  const { vocabularySize: V, modelWidth: D, feedForwardWidth: F, layers } = state.decoder;
  const out: GgufTensorInfo[] = [{ name: 'token_embd.weight', source: 'token_embedding.weight', ne: [D, V], dtype, transposed: false }];
  for (let l = 0; l < layers; l++) {
    for (const [suffix, name] of LLAMA_BLOCK_TENSORS) {
      const gain = suffix.endsWith('.gain');
      const ne = gain ? [D] : name === 'ffn_gate' || name === 'ffn_up' ? [D, F] : name === 'ffn_down' ? [F, D] : [D, D];
      out.push({ name: `blk.${l}.${name}.weight`, source: `blocks.${l}.${suffix}`, ne, dtype: gain ? 'F32' : dtype, transposed: !gain });
    }
  }
  out.push({ name: 'output_norm.weight', source: 'final_norm.gain', ne: [D], dtype: 'F32', transposed: false });
  return out;
}

/**
 * IEEE 754 binary16 bits of the nearest half-precision value (round to nearest,
 * ties to even), computed from the f64 directly (no double rounding through f32).
 *
 * @param x - a finite number.
 * @returns the 16-bit pattern, or `null` when `|x|` rounds beyond 65504 (the largest finite half).
 */
export function f64ToF16Bits(x: number): number | null {
  if (Number.isNaN(x)) return 0x7e00;
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a === Infinity) return null;
  const roundEven = (m: number): number => {
    const f = Math.floor(m);
    const d = m - f; // exact: m < 2^11 here
    return d > 0.5 || (d === 0.5 && f % 2 === 1) ? f + 1 : f;
  };
  if (a < 2 ** -14) return sign | roundEven(a * 2 ** 24); // subnormal (1024 becomes the smallest normal, 0x0400)
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e -= 1; // guard Math.log2 rounding near powers of two
  else if (2 ** (e + 1) <= a) e += 1;
  let m = roundEven(a / 2 ** (e - 10)); // in [1024, 2048]
  if (m === 2048) {
    m = 1024;
    e += 1;
  }
  if (e > 15) return null;
  return sign | ((e + 15) << 10) | (m - 1024);
}

interface Layout {
  readonly headerBytes: number;
  readonly dataStart: number;
  readonly offsets: readonly number[];
  readonly total: number;
}

const align = (n: number): number => Math.ceil(n / GGUF_ALIGNMENT) * GGUF_ALIGNMENT;

function valueBytes(v: GgufValue, utf8: (s: string) => number): number {
  switch (v.type) {
    case 'u32':
    case 'f32':
      return 4;
    case 'u64':
      return 8;
    case 'bool':
      return 1;
    case 'string':
      return 8 + utf8(v.value);
    case 'string[]':
      return 12 + v.value.reduce((n, s) => n + 8 + utf8(s), 0);
    case 'i32[]':
      return 12 + 4 * v.value.length;
  }
}

/**
 * Encodes a checkpoint's model as a GGUF v3 file for llama.cpp.
 *
 * @param state - a (validated) checkpoint.
 * @param options - dtype, name, source checksum.
 * @returns the file's bytes.
 * @throws CliError `CLI_INVALID_INPUT` when a value does not fit the chosen dtype, a size does not fit llama.cpp's u32, or the vocabulary has two equal tokens.
 * @example
 * ```ts
 * const bytes = encodeGguf(decodeCheckpoint(file), { name: 'stories', sourceChecksum: decoded.layout.checksum });
 * ```
 */
export function encodeGguf(state: CheckpointState, options: GgufOptions = {}): Uint8Array {
  const dtype = options.dtype ?? 'F32';
  const metadata = ggufMetadata(state, options);
  const infos = ggufTensorInfos(state, dtype);
  const byName = new Map(state.parameters.map((p) => [p.name, p]));
  const encoder = new TextEncoder();
  const encoded = new Map<string, Uint8Array>();
  const bytesOf = (s: string): Uint8Array => {
    let b = encoded.get(s);
    if (b === undefined) {
      b = encoder.encode(s);
      encoded.set(s, b);
    }
    return b;
  };
  const utf8 = (s: string): number => bytesOf(s).length;

  let header = 4 + 4 + 8 + 8;
  for (const { key, value } of metadata) header += 8 + utf8(key) + 4 + valueBytes(value, utf8);
  for (const t of infos) header += 8 + utf8(t.name) + 4 + 8 * t.ne.length + 4 + 8;
  const dataStart = align(header);
  const offsets: number[] = [];
  let at = 0;
  for (const t of infos) {
    offsets.push(at);
    at = align(at + t.ne.reduce((a, b) => a * b, 1) * (t.dtype === 'F32' ? 4 : 2));
  }
  const layout: Layout = { headerBytes: header, dataStart, offsets, total: dataStart + at };

  const out = new Uint8Array(layout.total); // zero-filled: every padding byte is 0
  const view = new DataView(out.buffer);
  let p = 0;
  const u32 = (v: number): void => {
    view.setUint32(p, v, true);
    p += 4;
  };
  const u64 = (v: bigint | number): void => {
    view.setBigUint64(p, BigInt(v), true);
    p += 8;
  };
  const string = (s: string): void => {
    const b = bytesOf(s);
    u64(b.length);
    out.set(b, p);
    p += b.length;
  };
  out.set(GGUF_MAGIC, 0);
  p = 4;
  u32(GGUF_VERSION);
  u64(infos.length);
  u64(metadata.length);
  // GGUF value types (ggml gguf.h): UINT32 4, INT32 5, FLOAT32 6, BOOL 7, STRING 8, ARRAY 9, UINT64 10.
  for (const { key, value } of metadata) {
    string(key);
    switch (value.type) {
      case 'u32':
        u32(4);
        u32(value.value);
        break;
      case 'u64':
        u32(10);
        u64(value.value);
        break;
      case 'f32':
        u32(6);
        view.setFloat32(p, value.value, true);
        p += 4;
        break;
      case 'bool':
        u32(7);
        out[p++] = value.value ? 1 : 0;
        break;
      case 'string':
        u32(8);
        string(value.value);
        break;
      case 'string[]':
        u32(9);
        u32(8);
        u64(value.value.length);
        for (const s of value.value) string(s);
        break;
      case 'i32[]':
        u32(9);
        u32(5);
        u64(value.value.length);
        for (const v of value.value) {
          view.setInt32(p, v, true);
          p += 4;
        }
        break;
    }
  }
  infos.forEach((t, i) => {
    string(t.name);
    u32(t.ne.length);
    for (const n of t.ne) u64(n);
    u32(GGML_TYPE[t.dtype]);
    u64(layout.offsets[i] as number);
  });
  if (p !== layout.headerBytes) throw new Error(`gguf: header size ${p}, planned ${layout.headerBytes}`); // a bug, never input

  infos.forEach((t, i) => {
    const tensor = byName.get(t.source);
    if (tensor === undefined) throw new CliError('CLI_INVALID_INPUT', `the checkpoint has no parameter ${t.source}`);
    const data = tensor.data;
    let q = layout.dataStart + (layout.offsets[i] as number);
    const put = (v: number, index: number): void => {
      if (t.dtype === 'F32') {
        const r = Math.fround(v);
        if (!Number.isFinite(r) && Number.isFinite(v)) {
          throw new CliError('CLI_INVALID_INPUT', `${t.source}[${index}] = ${v} does not fit in f32`, { hint: 'this checkpoint cannot be exported to GGUF' });
        }
        view.setFloat32(q, r, true);
        q += 4;
      } else {
        const h = f64ToF16Bits(v);
        if (h === null) throw new CliError('CLI_INVALID_INPUT', `${t.source}[${index}] = ${v} does not fit in f16 (largest 65504)`, { hint: 'export with --dtype f32' });
        view.setUint16(q, h, true);
        q += 2;
      }
    };
    if (!t.transposed) {
      for (let k = 0; k < data.length; k++) put(data[k] as number, k);
    } else {
      // llmcp [in, out] row-major → ggml rows of `in` (ne = [in, out]).
      const inW = t.ne[0] as number;
      const outW = t.ne[1] as number;
      for (let o = 0; o < outW; o++) for (let k = 0; k < inW; k++) put(data[k * outW + o] as number, k * outW + o);
    }
  });
  return out;
}
