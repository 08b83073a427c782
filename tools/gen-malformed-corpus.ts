/**
 * Generates the LLMCP35 v1 malformed corpus of @llmcp/conformance from the
 * golden file: every case of ../packages/format/SPEC.md §13 (plus a few more from §9), each a
 * file in packages/conformance/fixtures/malformed/ with its expected outcome
 * in packages/conformance/fixtures/manifest.json. The only writer of those
 * files; `tools/gen-malformed-corpus.test.ts` checks the committed corpus is
 * what this script produces.
 *
 * Files are built with @llmcp/conformance's raw editor (independent of the
 * @llmcp/format decoder under test): offsets, lengths and the checksum are
 * recomputed unless a case breaks them on purpose.
 *
 * Run: `pnpm exec tsx tools/gen-malformed-corpus.ts`
 */
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  f64Bytes,
  parseRawCheckpoint,
  serializeRawCheckpoint,
  sha256Hex,
  utf8,
  withF64,
  withRawChecksum,
  type CheckpointSummary,
  type ConformanceManifest,
  type ExpectedOutcome,
  type ManifestCase,
  type RawCheckpoint,
  type RawRecord,
} from '@llmcp/conformance';
import { FORMAT_ERROR_CATEGORIES } from '@llmcp/format';

/** The parts of vectors/golden-6330.json this generator reads. */
export interface GoldenJson {
  size: number;
  sha256: string;
  checksum: string;
  header_bytes: number;
  payload_bytes: number;
  first_16_bytes_hex: string;
  selected_step: number;
  tokenizer: { kind: string; pieces_hex: string[] };
  sampling_rng: { state: string };
  decoder: Record<'vocabulary_size' | 'model_width' | 'heads' | 'feed_forward_width' | 'layers' | 'max_positions', number> & Record<'rope_base' | 'rms_epsilon', { bits: string }>;
  optimizer: Record<'learning_rate' | 'beta1' | 'beta2' | 'epsilon' | 'weight_decay' | 'beta1_power' | 'beta2_power', { bits: string }> & {
    step: number;
    parameter_groups: { decay: string[]; no_decay: string[] };
  };
  descriptors: { index: number; role_tag: number; name: string; shape: number[]; payload_fnv1a64: string }[];
}

/** Reference category name (../packages/format/SPEC.md §9.9) → the matching `@llmcp/format` code (the inverse of FORMAT_ERROR_CATEGORIES). */
const CATEGORY_CODES: ReadonlyMap<string, string> = new Map(Object.entries(FORMAT_ERROR_CATEGORIES).map(([code, category]) => [category, code]));

interface CaseDef {
  id: string;
  spec: string;
  change: string;
  bytes: Uint8Array;
  expect: ExpectedOutcome;
}

const accept: ExpectedOutcome = { outcome: 'accept' };
function reject(category: string, reason?: string, alsoAccepted?: string[]): ExpectedOutcome {
  const code = CATEGORY_CODES.get(category);
  if (code === undefined) throw new Error(`unknown category ${category}`);
  return { outcome: 'reject', category, code, ...(reason === undefined ? {} : { reason }), ...(alsoAccepted === undefined ? {} : { alsoAccepted }) };
}

const text = new TextDecoder();
const nameOf = (r: RawRecord): string => text.decode(r.name);

/** Deep copy of a raw checkpoint (records and byte arrays copied). */
function clone(raw: RawCheckpoint): RawCheckpoint {
  return {
    ...raw,
    magic: raw.magic.slice(),
    decay: raw.decay.map((n) => n.slice()),
    noDecay: raw.noDecay.map((n) => n.slice()),
    records: raw.records.map((r) => ({ ...r, name: r.name.slice(), shape: [...r.shape], bytes: r.bytes.slice() })),
  };
}

function edit(base: RawCheckpoint, fn: (raw: RawCheckpoint) => void): RawCheckpoint {
  const raw = clone(base);
  fn(raw);
  return raw;
}

/** Index of the record with this role and name. */
function find(raw: RawCheckpoint, roleTag: number, name: string): number {
  const i = raw.records.findIndex((r) => r.roleTag === roleTag && nameOf(r) === name);
  if (i < 0) throw new Error(`no record ${roleTag}/${name}`);
  return i;
}

/** Drops all optimizer records and sets step 0 with powers exactly 1.0. */
function toStepZero(raw: RawCheckpoint): void {
  raw.records = raw.records.filter((r) => r.roleTag !== 4 && r.roleTag !== 5);
  raw.optimizerStateCount = 0;
  raw.optimizerStep = 0n;
  raw.selectedStep = 0n;
  raw.beta1Power = 1;
  raw.beta2Power = 1;
}

/** Deterministic, distinct, finite parameter values. */
function values(count: number, seed: number): Float64Array {
  const out = new Float64Array(count);
  for (let i = 0; i < count; i++) out[i] = Math.sin(seed * 7919 + i * 104729) * 0.5;
  return out;
}

function f64Record(roleTag: number, name: string, shape: number[], data: Float64Array): RawRecord {
  return { roleTag, name: utf8(name), dtypeTag: 3, shape: shape.map(BigInt), bytes: f64Bytes(data) };
}

const BLOCK = ['attention_norm.gain', 'attention.query.weight', 'attention.key.weight', 'attention.value.weight', 'attention.output.weight', 'ffn_norm.gain', 'ffn.gate.weight', 'ffn.up.weight', 'ffn.down.weight'];

/** Model records for V, D, F, L in model order (../packages/format/SPEC.md §7). */
function modelRecords(v: number, d: number, f: number, layers: number): RawRecord[] {
  const list: [string, number[]][] = [['token_embedding.weight', [v, d]]];
  for (let l = 0; l < layers; l++) {
    const shapes = [[d], [d, d], [d, d], [d, d], [d, d], [d], [d, f], [d, f], [f, d]];
    BLOCK.forEach((suffix, k) => list.push([`blocks.${l}.${suffix}`, shapes[k] as number[]]));
  }
  list.push(['final_norm.gain', [d]]);
  return list.map(([name, shape], i) => f64Record(3, name, shape, values(shape.reduce((a, b) => a * b, 1), i + 1)));
}

/** Sorted by UTF-8 bytes (= code point order). */
function byteWise(a: string, b: string): number {
  const x = utf8(a);
  const y = utf8(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return (x[i] as number) - (y[i] as number);
  return x.length - y.length;
}

/** Replaces the literal tokenizer with a BPE record (step 0, matching embedding). */
function bpeCheckpoint(golden: RawCheckpoint, pairs: [number, number][], declaredVocabulary?: number): RawCheckpoint {
  return edit(golden, (raw) => {
    toStepZero(raw);
    const vocabulary = 258 + pairs.length;
    const pairBytes = new Uint8Array(8 * pairs.length);
    const view = new DataView(pairBytes.buffer);
    pairs.forEach(([l, r], i) => {
      view.setUint32(8 * i, l, true);
      view.setUint32(8 * i + 4, r, true);
    });
    raw.tokenizerKind = 2;
    raw.tokenizerVocabulary = BigInt(declaredVocabulary ?? vocabulary);
    raw.vocabularySize = BigInt(vocabulary);
    const model = raw.records.filter((r) => r.roleTag === 3);
    const embedding = model[0] as RawRecord;
    embedding.shape = [BigInt(vocabulary), 4n];
    embedding.bytes = f64Bytes(values(vocabulary * 4, 99));
    raw.records = [{ roleTag: 2, name: utf8('training-pairs'), dtypeTag: 2, shape: [BigInt(pairs.length), 2n], bytes: pairBytes }, ...model];
  });
}

/** Builds every case. */
export function buildCases(goldenBytes: Uint8Array): CaseDef[] {
  const g = parseRawCheckpoint(goldenBytes);
  const cases: CaseDef[] = [];
  const add = (id: string, spec: string, change: string, bytes: Uint8Array, expect: ExpectedOutcome): void => {
    cases.push({ id, spec, change, bytes, expect });
  };
  const fromRaw = (raw: RawCheckpoint, options?: Parameters<typeof serializeRawCheckpoint>[1]): Uint8Array => serializeRawCheckpoint(raw, options);
  const patched = (fn: (b: Uint8Array, v: DataView) => void, fixChecksum = true): Uint8Array => {
    const b = goldenBytes.slice();
    fn(b, new DataView(b.buffer));
    return fixChecksum ? withRawChecksum(b) : b;
  };
  const S13 = 'SPEC §13';

  // --- accepted / canonical ordering -----------------------------------------------------------
  add('none', S13, 'none (the golden file re-serialized by the raw writer)', fromRaw(g), accept);
  add('swap-decay-names', S13, 'swap two decay-group names', fromRaw(edit(g, (r) => ([r.decay[0], r.decay[1]] = [r.decay[1] as Uint8Array, r.decay[0] as Uint8Array]))), reject('NonCanonical', 're-encoding-differs'));
  add(
    'swap-optimizer-pairs',
    S13,
    'swap two optimizer record pairs (order no longer sorted)',
    fromRaw(
      edit(g, (r) => {
        const i = find(r, 4, 'blocks.0.attention.key.weight');
        const j = find(r, 4, 'blocks.0.attention.output.weight');
        const a = r.records.slice(i, i + 2);
        const b = r.records.slice(j, j + 2);
        r.records.splice(i, 2, ...b);
        r.records.splice(j, 2, ...a);
      }),
    ),
    reject('NonCanonical', 're-encoding-differs'),
  );
  add(
    'swap-model-records',
    S13,
    'swap two model records (query and key of layer 0: name mismatch at model index 2)',
    fromRaw(
      edit(g, (r) => {
        const i = find(r, 3, 'blocks.0.attention.query.weight');
        const j = find(r, 3, 'blocks.0.attention.key.weight');
        [r.records[i], r.records[j]] = [r.records[j] as RawRecord, r.records[i] as RawRecord];
      }),
    ),
    reject('Model', 'name-mismatch'),
  );
  add('step-zero', S13, 'remove all optimizer records, step 0, powers exactly 1.0, state count 0', fromRaw(edit(g, toStepZero)), accept);
  add(
    'step-zero-with-moments',
    S13,
    'as step-zero but keep the 11 moment pairs (state count 11)',
    fromRaw(
      edit(g, (r) => {
        r.optimizerStep = 0n;
        r.selectedStep = 0n;
        r.beta1Power = 1;
        r.beta2Power = 1;
      }),
    ),
    reject('AdamWState', 'state-presence'),
  );
  add('beta1-power-one', S13, 'step 8 with beta1 power = 1.0', fromRaw(edit(g, (r) => (r.beta1Power = 1))), reject('AdamWState', 'invalid-beta-power'));
  add('beta1-power-negative-zero', S13, 'step 8 with beta1 power = -0.0', fromRaw(edit(g, (r) => (r.beta1Power = -0))), accept);
  add('beta2-power-negative', S13, 'step 8 with beta2 power = -0.5', fromRaw(edit(g, (r) => (r.beta2Power = -0.5))), reject('AdamWState', 'invalid-beta-power'));
  const second = (value: number): RawCheckpoint =>
    edit(g, (r) => {
      const i = find(r, 5, 'final_norm.gain');
      const rec = r.records[i] as RawRecord;
      rec.bytes = withF64(rec.bytes, 1, value);
    });
  add('second-moment-negative-zero', S13, 'one second-moment value = -0.0', fromRaw(second(-0)), accept);
  add('second-moment-negative', S13, 'one second-moment value = -1e-9', fromRaw(second(-1e-9)), reject('AdamWState', 'negative-second-moment'));
  add(
    'first-moment-nan',
    S13,
    'NaN in a first moment',
    fromRaw(
      edit(g, (r) => {
        const rec = r.records[find(r, 4, 'blocks.0.ffn.up.weight')] as RawRecord;
        rec.bytes = withF64(rec.bytes, 3, Number.NaN);
      }),
    ),
    reject('AdamWState', 'non-finite-moment'),
  );
  add(
    'parameter-nan',
    S13,
    'NaN in a model parameter',
    fromRaw(
      edit(g, (r) => {
        const rec = r.records[find(r, 3, 'blocks.0.ffn.down.weight')] as RawRecord;
        rec.bytes = withF64(rec.bytes, 5, Number.NaN);
      }),
    ),
    reject('Initialization', 'non-finite-parameter'),
  );
  add('literal-repeated-piece', S13, 'literal piece 1 equal to piece 0', fromRaw(edit(g, (r) => ((r.records[1] as RawRecord).bytes = utf8('0')))), reject('Tokenizer', 'repeated-spelling'));
  add('literal-name-01', S13, 'literal record 1 named "01"', fromRaw(edit(g, (r) => ((r.records[1] as RawRecord).name = utf8('01')))), reject('Layout', 'literal-record'));
  add('literal-shape-1x1', S13, 'literal record shape [1, 1]', fromRaw(edit(g, (r) => ((r.records[1] as RawRecord).shape = [1n, 1n]))), reject('Layout', 'literal-record-shape'));
  add(
    'sixth-literal-token',
    S13,
    'sixth literal token, tokenizer vocabulary 6, decoder vocabulary 5',
    fromRaw(
      edit(g, (r) => {
        r.records.splice(5, 0, { roleTag: 1, name: utf8('5'), dtypeTag: 1, shape: [1n], bytes: utf8('5') });
        r.tokenizerVocabulary = 6n;
      }),
    ),
    reject('VocabularyMismatch', 'decoder-vocabulary'),
  );
  add('decoder-vocabulary-6', S13, 'decoder vocabulary 6, embedding still [5, 4]', fromRaw(edit(g, (r) => (r.vocabularySize = 6n))), reject('Model', 'embedding-vocabulary-mismatch'));
  add('embedding-shape-4x5', S13, 'embedding shape [4, 5]', fromRaw(edit(g, (r) => ((r.records[5] as RawRecord).shape = [4n, 5n]))), reject('Model', 'embedding-vocabulary-mismatch'));
  add('heads-3', S13, 'decoder heads 3', fromRaw(edit(g, (r) => (r.heads = 3n))), reject('Model', 'width-not-divisible-by-heads'));
  add('learning-rate-0', S13, 'learning rate 0', fromRaw(edit(g, (r) => (r.learningRate = 0))), reject('AdamW', 'invalid-learning-rate'));
  add('groups-flag-2', S13, 'groups flag 2 (byte 171, checksum recomputed)', patched((b) => (b[171] = 2)), reject('NonCanonical', 'groups-flag'));
  add(
    'groups-both-empty',
    S13,
    'decay and no-decay both empty',
    fromRaw(
      edit(g, (r) => {
        r.decay = [];
        r.noDecay = [];
      }),
    ),
    reject('AdamW', 'empty-groups'),
  );
  add('name-in-both-groups', S13, 'a name in both groups', fromRaw(edit(g, (r) => r.noDecay.unshift(utf8('blocks.0.attention.key.weight')))), reject('AdamW', 'name-in-both-groups'));
  const dropLastPair = (r: RawCheckpoint): void => {
    r.records.splice(r.records.length - 2, 2);
    r.optimizerStateCount = 10;
  };
  add('missing-moment-pair-groups', S13, 'step 8, last moment pair removed, groups present', fromRaw(edit(g, dropLastPair)), reject('AdamWState', 'groups-mismatch'));
  const noGroups = (r: RawCheckpoint): void => {
    r.groupsFlag = 0;
    r.decay = [];
    r.noDecay = [];
  };
  add(
    'missing-moment-pair-no-groups',
    S13,
    'step 8, last moment pair removed, groups absent',
    fromRaw(
      edit(g, (r) => {
        dropLastPair(r);
        noGroups(r);
      }),
    ),
    reject('OptimizerNames', 'optimizer-names'),
  );
  add('no-groups-step-8', S13, 'groups absent, step 8', fromRaw(edit(g, noGroups)), accept);
  add(
    'step-zero-unknown-group-name',
    S13,
    'step 0 with a decay group naming an unknown parameter',
    fromRaw(
      edit(g, (r) => {
        toStepZero(r);
        r.decay.push(utf8('unknown.parameter'));
        r.decay.sort((a, b) => byteWise(text.decode(a), text.decode(b)));
      }),
    ),
    accept,
  );
  add(
    'step-zero-groups-utf8-order',
    S13,
    'step 0, decay group ["\\uFFFD", "\\u{1F600}"] (UTF-8 order)',
    fromRaw(
      edit(g, (r) => {
        toStepZero(r);
        r.decay = [utf8('\uFFFD'), utf8('\u{1F600}')];
      }),
    ),
    accept,
  );
  add(
    'step-zero-groups-utf16-order',
    S13,
    'step 0, decay group in UTF-16 order ["\\u{1F600}", "\\uFFFD"]',
    fromRaw(
      edit(g, (r) => {
        toStepZero(r);
        r.decay = [utf8('\u{1F600}'), utf8('\uFFFD')];
      }),
    ),
    reject('NonCanonical', 're-encoding-differs'),
  );
  add('selected-step-9', S13, 'selected step 9, optimizer step 8', fromRaw(edit(g, (r) => (r.selectedStep = 9n))), reject('StepMismatch', 'step-mismatch'));
  add('extra-header-byte', S13, 'one extra zero byte at the end of the header (lengths and offsets adjusted)', fromRaw(g, { extraHeaderBytes: 1 }), reject('NonCanonical', 'unparsed-header-bytes'));
  add('role-tag-6', S13, 'role tag 6 (descriptor 5)', fromRaw(edit(g, (r) => ((r.records[5] as RawRecord).roleTag = 6))), reject('UnknownTensorRole', 'role-tag'));
  add('dtype-tag-4', S13, 'dtype tag 4 (descriptor 5)', fromRaw(edit(g, (r) => ((r.records[5] as RawRecord).dtypeTag = 4))), reject('UnknownDType', 'dtype-tag'));
  add('tokenizer-kind-3', S13, 'tokenizer kind 3', fromRaw(edit(g, (r) => (r.tokenizerKind = 3))), reject('UnknownTokenizerKind', 'tokenizer-kind'));
  add('tokenizer-layout-2', S13, 'tokenizer layout version 2', fromRaw(edit(g, (r) => (r.tokenizerLayoutVersion = 2))), reject('UnsupportedTokenizerLayout', 'tokenizer-layout-version'));
  add('rng-algorithm-2', S13, 'RNG algorithm version 2', fromRaw(edit(g, (r) => (r.rngAlgorithmVersion = 2))), reject('UnsupportedRngAlgorithm', 'rng-algorithm-version'));
  add('invalid-utf8-name', S13, 'invalid UTF-8 byte (0xff) in a descriptor name', fromRaw(edit(g, (r) => ((r.records[5] as RawRecord).name = Uint8Array.of(0x74, 0xff, 0x6b)))), reject('InvalidUtf8', 'invalid-utf8'));
  add('offset-plus-one', S13, "second record's offset moved by +1", fromRaw(edit(g, (r) => ((r.records[1] as RawRecord).offset = 2871n))), reject('Layout', 'not-contiguous'));
  add('descriptor-count-39', S13, 'descriptor count 39', fromRaw(g, { descriptorCount: 39 }), reject('Truncated', 'header-read'));
  add('descriptor-count-max', S13, 'descriptor count 0xFFFFFFFF (resource-dependent, SPEC §9.10)', fromRaw(g, { descriptorCount: 0xffffffff }), reject('Truncated', 'header-read', ['Allocation']));
  add(
    'partition-12-10',
    S13,
    'model count 12, optimizer count 10',
    fromRaw(
      edit(g, (r) => {
        r.modelParameterCount = 12;
        r.optimizerStateCount = 10;
      }),
    ),
    reject('Layout', 'record-partition'),
  );
  add(
    'moment-pair-swapped',
    S13,
    'first moment and second moment of a pair swapped',
    fromRaw(
      edit(g, (r) => {
        const i = find(r, 4, 'final_norm.gain');
        [r.records[i], r.records[i + 1]] = [r.records[i + 1] as RawRecord, r.records[i] as RawRecord];
      }),
    ),
    reject('Layout', 'first-moment-record'),
  );
  add('header-bytes-37', S13, 'header_bytes 37', patched((_b, v) => v.setBigUint64(14, 37n, true)), reject('FileExtent', 'file-extent'));
  add('truncated-one-byte', S13, 'file truncated by one byte', goldenBytes.slice(0, goldenBytes.length - 1), reject('FileExtent', 'file-extent'));
  add('appended-one-byte', S13, 'one byte appended', Uint8Array.from([...goldenBytes, 0]), reject('FileExtent', 'file-extent'));
  add('last-byte-flipped', S13, 'last byte flipped', patched((b) => (b[b.length - 1] = (b[b.length - 1] as number) ^ 0xff), false), reject('ChecksumMismatch', 'checksum'));
  add('checksum-altered', S13, 'checksum field altered', patched((b) => (b[30] = (b[30] as number) ^ 1), false), reject('ChecksumMismatch', 'checksum'));
  add('first-byte-changed', S13, 'first byte changed', patched((b) => (b[0] = 0x4d)), reject('InvalidMagic', 'magic'));
  add('endian-big', S13, 'endian bytes written as 01 02 03 04', patched((b) => b.set([1, 2, 3, 4], 10)), reject('UnsupportedEndianness', 'endian-marker'));
  add('file-37-bytes', S13, '37-byte file (the golden prefix)', goldenBytes.slice(0, 37), reject('Truncated', 'fixed-header'));
  add(
    'header-cut-60',
    S13,
    'header cut to 60 bytes with matching lengths and checksum',
    (() => {
      const b = goldenBytes.slice(0, 60);
      const v = new DataView(b.buffer);
      v.setBigUint64(14, 60n, true);
      v.setBigUint64(22, 0n, true);
      return withRawChecksum(b);
    })(),
    reject('Truncated', 'header-read'),
  );
  add('bpe-valid', S13, 'BPE tokenizer, pairs (97,98),(256,99), vocabulary 260, matching embedding, step 0', fromRaw(bpeCheckpoint(g, [[97, 98], [256, 99]])), accept);
  add('bpe-unknown-operand', S13, 'BPE first pair (256, 97)', fromRaw(bpeCheckpoint(g, [[256, 97]])), reject('Bpe', 'unknown-operand'));
  add('bpe-duplicate-pair', S13, 'BPE pairs (97,98),(97,98)', fromRaw(bpeCheckpoint(g, [[97, 98], [97, 98]])), reject('Bpe', 'duplicate-pair'));
  add('bpe-vocabulary-261', S13, 'BPE valid but declared tokenizer vocabulary 261', fromRaw(bpeCheckpoint(g, [[97, 98], [256, 99]], 261)), reject('VocabularyMismatch', 'bpe-vocabulary'));
  add('bpe-zero-merges', S13, 'BPE with zero merges (record shape [0, 2], 0 bytes), vocabulary 258, step 0', fromRaw(bpeCheckpoint(g, [])), accept);
  add(
    'literal-non-utf8-pieces',
    S13,
    'literal pieces ff and 00 (not UTF-8)',
    fromRaw(
      edit(g, (r) => {
        (r.records[0] as RawRecord).bytes = Uint8Array.of(0xff);
        (r.records[1] as RawRecord).bytes = Uint8Array.of(0x00);
      }),
    ),
    accept,
  );
  add('empty-descriptor-name', S13, 'a descriptor with an empty name (descriptor 0)', fromRaw(edit(g, (r) => ((r.records[0] as RawRecord).name = new Uint8Array(0)))), reject('Layout', 'empty-record-name'));
  add(
    'layers-0',
    S13,
    'layers 0 (embedding + final norm only), step 0',
    fromRaw(
      edit(g, (r) => {
        toStepZero(r);
        r.layers = 0n;
        r.records = [...r.records.filter((x) => x.roleTag === 1), ...modelRecords(5, 4, 4, 0)];
        r.modelParameterCount = 2;
      }),
    ),
    accept,
  );
  // SPEC §15.2: feed_forward_width (0 layers) and max_positions may be any u64, as in the reference; with
  // layers, max_positions is bounded only by the rotary table (§6.1: head width 2 here, so one pair per position).
  const layersZero = (fields: Partial<Pick<RawCheckpoint, 'feedForwardWidth' | 'maxPositions'>>): RawCheckpoint =>
    edit(g, (r) => {
      toStepZero(r);
      r.layers = 0n;
      r.records = [...r.records.filter((x) => x.roleTag === 1), ...modelRecords(5, 4, 4, 0)];
      r.modelParameterCount = 2;
      Object.assign(r, fields);
    });
  const U64_MAX = (1n << 64n) - 1n;
  const ROTARY_MAX = ((1n << 63n) - 1n) / 8n;
  add('u64-max-positions-layers-0', 'SPEC §15.2', 'layers 0 with max_positions 2^64 - 1', fromRaw(layersZero({ maxPositions: U64_MAX })), accept);
  add('u64-ffn-layers-0', 'SPEC §15.2', 'layers 0 with feed_forward_width 2^64 - 1 and max_positions 2^53', fromRaw(layersZero({ feedForwardWidth: U64_MAX, maxPositions: 1n << 53n })), accept);
  add('u64-max-positions-2p53-plus-1', 'SPEC §15.2', 'max_positions 2^53 + 1 (one layer)', fromRaw(edit(g, (r) => (r.maxPositions = (1n << 53n) + 1n))), accept);
  add('max-positions-rotary-limit', 'SPEC §6.1', 'max_positions (2^63 - 1) / 8 (one layer, one rotary pair: the largest table)', fromRaw(edit(g, (r) => (r.maxPositions = ROTARY_MAX))), accept);
  add('max-positions-rotary-limit-plus-1', 'SPEC §6.1', 'max_positions (2^63 - 1) / 8 + 1 (one layer, one rotary pair)', fromRaw(edit(g, (r) => (r.maxPositions = ROTARY_MAX + 1n))), reject('Model', 'rotary-table'));
  const ffn6 = (downShape: number[]): RawCheckpoint =>
    edit(g, (r) => {
      toStepZero(r);
      r.feedForwardWidth = 6n;
      const model = modelRecords(5, 4, 6, 1);
      const down = model[9] as RawRecord;
      down.shape = downShape.map(BigInt);
      r.records = [...r.records.filter((x) => x.roleTag === 1), ...model];
    });
  add('ffn-6', S13, 'F = 6 with gate/up [4, 6] and down [6, 4], step 0', fromRaw(ffn6([6, 4])), accept);
  add('ffn-6-down-4x6', S13, 'F = 6 but down [4, 6]', fromRaw(ffn6([4, 6])), reject('Model', 'layer-shape'));
  const elevenLayers = (sorted: boolean): RawCheckpoint =>
    edit(g, (r) => {
      const model = modelRecords(5, 4, 4, 11);
      const names = model.map(nameOf);
      const order = sorted ? [...names].sort(byteWise) : names;
      const moments = order.flatMap((name, k) => {
        const shape = (model.find((m) => nameOf(m) === name) as RawRecord).shape.map(Number);
        const n = shape.reduce((a, b) => a * b, 1);
        return [f64Record(4, name, shape, values(n, 1000 + k)), f64Record(5, name, shape, values(n, 2000 + k).map(Math.abs))];
      });
      r.layers = 11n;
      r.optimizerStep = 1n;
      r.selectedStep = 1n;
      r.beta1Power = 0.9;
      r.beta2Power = 0.999;
      r.decay = names.filter((n) => !n.endsWith('.gain')).sort(byteWise).map(utf8);
      r.noDecay = names.filter((n) => n.endsWith('.gain')).sort(byteWise).map(utf8);
      r.records = [...r.records.filter((x) => x.roleTag === 1), ...model, ...moments];
      r.modelParameterCount = model.length;
      r.optimizerStateCount = model.length;
    });
  add('eleven-layers-sorted', S13, '11 layers, step 1, optimizer pairs sorted byte-wise (blocks.10.* before blocks.2.*)', fromRaw(elevenLayers(true)), accept);
  add('eleven-layers-model-order', S13, '11 layers, step 1, optimizer pairs in model order', fromRaw(elevenLayers(false)), reject('NonCanonical', 're-encoding-differs'));

  // --- further rules of SPEC §9 -------------------------------------------------------------------
  add('format-version-2', 'SPEC §9.1', 'format version 2', patched((_b, v) => v.setUint16(8, 2, true)), reject('UnsupportedVersion', 'format-version'));
  add('extent-overflow', 'SPEC §9.1', 'header_bytes + payload_bytes overflows u64', patched((_b, v) => v.setBigUint64(22, (1n << 64n) - 1n, true)), reject('FileExtent', 'file-extent'));
  add('empty-file', 'SPEC §9.1', 'empty file', new Uint8Array(0), reject('Truncated', 'fixed-header'));
  add('beta1-one', 'SPEC §6.2', 'AdamW beta1 = 1.0', fromRaw(edit(g, (r) => (r.beta1 = 1))), reject('AdamW', 'invalid-beta1'));
  add('decay-product-too-large', 'SPEC §6.2', 'learning_rate 200, weight_decay 0.01 (product 2 >= 1)', fromRaw(edit(g, (r) => (r.learningRate = 200))), reject('AdamW', 'invalid-decay-product'));
  add('empty-group-name', 'SPEC §6.3', 'an empty name in the decay group', fromRaw(edit(g, (r) => r.decay.unshift(new Uint8Array(0)))), reject('AdamW', 'empty-group-name'));
  add('duplicate-group-name', 'SPEC §6.3', 'a repeated name in the no-decay group', fromRaw(edit(g, (r) => r.noDecay.splice(1, 0, r.noDecay[0] as Uint8Array))), reject('AdamW', 'duplicate-group-name'));
  add('size-overflow', 'SPEC §9.3', 'a record shape [2^32, 2^32] (size overflows u64)', fromRaw(edit(g, (r) => ((r.records[5] as RawRecord).shape = [1n << 32n, 1n << 32n]))), reject('SizeOverflow', 'record-size'));
  add('byte-length-mismatch', 'SPEC §9.3', 'byte_len 161 for a [5, 4] f64 record', fromRaw(edit(g, (r) => ((r.records[5] as RawRecord).byteLength = 161n))), reject('Layout', 'byte-length-mismatch'));
  add('duplicate-record', 'SPEC §9.3', 'two literal records named "0"', fromRaw(edit(g, (r) => ((r.records[1] as RawRecord).name = utf8('0')))), reject('Layout', 'duplicate-record'));
  add(
    'stride-overflow',
    'SPEC §9.5',
    'final_norm.gain shape [0, 2^40, 2^40] (0 bytes; strides overflow)',
    fromRaw(
      edit(g, (r) => {
        const rec = r.records[find(r, 3, 'final_norm.gain')] as RawRecord;
        rec.shape = [0n, 1n << 40n, 1n << 40n];
        rec.bytes = new Uint8Array(0);
      }),
    ),
    reject('Tensor', 'stride-overflow'),
  );
  add('parameter-name-syntax', 'SPEC §6.5', 'model record named "Final_norm.gain"', fromRaw(edit(g, (r) => ((r.records[find(r, 3, 'final_norm.gain')] as RawRecord).name = utf8('Final_norm.gain')))), reject('Initialization', 'invalid-character'));
  add('rope-base-infinite', 'SPEC §6.1', 'decoder rope_base +Infinity', fromRaw(edit(g, (r) => (r.ropeBase = Number.POSITIVE_INFINITY))), reject('Model', 'invalid-rope-base'));
  add('rank-max', 'SPEC §9.10', 'descriptor 5 rank field 0xFFFFFFFF (hostile count)', (() => {
    const b = fromRaw(g);
    // descriptor 5 entry starts at 715: role(1) + name length(4) + name(22) + dtype(1) = rank at 743
    new DataView(b.buffer).setUint32(743, 0xffffffff, true);
    return withRawChecksum(b);
  })(), reject('Truncated', 'header-read', ['Allocation']));
  add(
    'optimizer-shape',
    'SPEC §9.7',
    'moment pair of blocks.0.attention.key.weight with shape [16] (parameter is [4, 4])',
    fromRaw(
      edit(g, (r) => {
        const i = find(r, 4, 'blocks.0.attention.key.weight');
        (r.records[i] as RawRecord).shape = [16n];
        (r.records[i + 1] as RawRecord).shape = [16n];
      }),
    ),
    reject('OptimizerShape', 'optimizer-shape'),
  );
  return cases;
}

/** The expected summary of the golden file, taken from golden-6330.json (not from a decoder). */
export function goldenSummary(json: GoldenJson): CheckpointSummary {
  const d = json.decoder;
  const o = json.optimizer;
  const records = json.descriptors;
  return {
    tokenizer: { kind: 'literal', piecesHex: json.tokenizer.pieces_hex },
    decoder: {
      vocabularySize: d.vocabulary_size,
      modelWidth: d.model_width,
      heads: d.heads,
      feedForwardWidth: d.feed_forward_width,
      layers: d.layers,
      maxPositions: d.max_positions,
      ropeBaseBits: d.rope_base.bits,
      rmsEpsilonBits: d.rms_epsilon.bits,
    },
    optimizer: {
      learningRateBits: o.learning_rate.bits,
      beta1Bits: o.beta1.bits,
      beta2Bits: o.beta2.bits,
      epsilonBits: o.epsilon.bits,
      weightDecayBits: o.weight_decay.bits,
      groups: { decay: o.parameter_groups.decay, noDecay: o.parameter_groups.no_decay },
      step: String(o.step),
      beta1PowerBits: o.beta1_power.bits,
      beta2PowerBits: o.beta2_power.bits,
      moments: records
        .filter((r) => r.role_tag === 4)
        .map((r) => ({ name: r.name, shape: r.shape, first: r.payload_fnv1a64, second: (records[r.index + 1] as { payload_fnv1a64: string }).payload_fnv1a64 })),
    },
    selectedStep: String(json.selected_step),
    samplingRngState: json.sampling_rng.state,
    parameters: records.filter((r) => r.role_tag === 3).map((r) => ({ name: r.name, shape: r.shape, fnv1a64: r.payload_fnv1a64 })),
  };
}

/** The whole corpus: manifest plus file contents by relative path. */
export function buildCorpus(goldenBytes: Uint8Array, json: GoldenJson): { manifest: ConformanceManifest; files: Map<string, Uint8Array> } {
  const files = new Map<string, Uint8Array>();
  const cases: ManifestCase[] = buildCases(goldenBytes).map((c) => {
    const file = `malformed/${c.id}.llmcp`;
    files.set(file, c.bytes);
    return { id: c.id, file, spec: c.spec, change: c.change, size: c.bytes.length, sha256: sha256Hex(c.bytes), expect: c.expect };
  });
  const manifest: ConformanceManifest = {
    specVersion: 'LLMCP35 v1',
    generator: 'tools/gen-malformed-corpus.ts',
    license: 'MIT (the learn_llm course); see LICENSE-NOTE.md',
    golden: {
      file: 'golden-6330.llmcp',
      size: goldenBytes.length,
      sha256: sha256Hex(goldenBytes),
      checksum: json.checksum,
      headerBytes: json.header_bytes,
      payloadBytes: json.payload_bytes,
      first16Hex: json.first_16_bytes_hex,
      expected: goldenSummary(json),
    },
    cases,
  };
  if (manifest.golden.sha256 !== json.sha256) throw new Error(`golden file SHA-256 ${manifest.golden.sha256} differs from golden-6330.json (${json.sha256})`);
  return { manifest, files };
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The conformance fixtures directory. */
export const FIXTURES: string = path.join(root, 'packages', 'conformance', 'fixtures');

/** Reads the golden inputs from the fixtures directory. */
export function readGoldenInputs(directory: string = FIXTURES): { bytes: Uint8Array; json: GoldenJson } {
  const buffer = readFileSync(path.join(directory, 'golden-6330.llmcp'));
  return { bytes: new Uint8Array(buffer), json: JSON.parse(readFileSync(path.join(directory, 'golden-6330.json'), 'utf8')) as GoldenJson };
}

const isMain = process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const { bytes, json } = readGoldenInputs();
  const { manifest, files } = buildCorpus(bytes, json);
  const malformed = path.join(FIXTURES, 'malformed');
  rmSync(malformed, { recursive: true, force: true });
  mkdirSync(malformed, { recursive: true });
  for (const [file, content] of files) writeFileSync(path.join(FIXTURES, file), content);
  writeFileSync(path.join(FIXTURES, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  console.log(`gen-malformed-corpus: ${files.size} cases written to ${path.relative(root, malformed)} (${readdirSync(malformed).length} files) and manifest.json`);
}
