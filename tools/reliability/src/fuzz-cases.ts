/**
 * Hostile LLMCP35 files, generated (never hand-picked): structure-aware
 * mutations of valid checkpoints, deterministic in (campaign seed, case
 * index) so any case can be rebuilt from its number.
 *
 * Seeds: the golden fixture and every accepted case of the conformance
 * corpus (literal and BPE tokenizers, step 0, no groups, 0 and 11 layers,
 * non-UTF-8 pieces…), plus random valid variants of each — payload values
 * replaced by random finite bit patterns (−0, subnormals, huge), a random
 * sampling state — re-encoded by `encodeCheckpoint`.
 *
 * The layout of every seed comes from `inspectCheckpoint` (field offsets and
 * widths, descriptor entries); mutations rewrite fields with boundary values
 * (0, 1, 2^31, 2^32−1, 2^53, 2^64−1, …), f64 fields and payload elements with
 * NaN/±Inf/−0/subnormal patterns, counts and shapes that imply huge
 * allocations, and then recompute the checksum (most of the time) so the
 * deeper rules are reached.
 */
import { loadFixture, loadManifest } from '@llmcp/conformance';
import { decodeCheckpoint, encodeCheckpoint, fnv1a64, SplitMix64, type CheckpointState } from '@llmcp/format';
import { inspectCheckpoint, type CheckpointInspection } from '@llmcp/format/inspect';

/** Mutation classes (the figures are kept per class). */
export const MUTATION_CLASSES = [
  'fixed-header',
  'header-u64',
  'header-small-int',
  'header-f64',
  'string-length',
  'descriptor-tag',
  'descriptor-name-length',
  'descriptor-rank',
  'descriptor-shape',
  'descriptor-offset-length',
  'payload-f64',
  'bpe-pairs',
  'huge-allocation',
  'extent',
  'bytes',
  'stacked',
  'sparse-file',
] as const;

/** One mutation class. */
export type MutationClass = (typeof MUTATION_CLASSES)[number];

/** A generated hostile file. */
export interface FuzzCase {
  readonly index: number;
  readonly cls: MutationClass;
  /** What was changed, in words (seed, field, value). */
  readonly detail: string;
  /** The file bytes (for `sparse-file`: the bytes at the start of the file). */
  readonly bytes: Uint8Array;
  /** For `sparse-file`: the file is `bytes` then zeros (a hole) up to this size. */
  readonly sparseSize?: number;
}

interface Field {
  readonly name: string;
  readonly offset: number;
  readonly width: 1 | 2 | 4 | 8;
  readonly f64: boolean;
}

interface Descriptor {
  readonly index: number;
  readonly entryOffset: number;
  readonly roleTag: number;
  readonly nameLengthOffset: number;
  readonly dtypeOffset: number;
  readonly rankOffset: number;
  readonly shapeOffsets: readonly number[];
  readonly offsetOffset: number;
  readonly byteLengthOffset: number;
  readonly dataOffset: number;
  readonly byteLength: number;
  readonly dtypeTag: number;
}

/** A valid file with its parsed layout. */
interface Seed {
  readonly name: string;
  readonly bytes: Uint8Array;
  readonly fields: readonly Field[];
  readonly strings: readonly { readonly name: string; readonly offset: number }[];
  readonly descriptors: readonly Descriptor[];
}

const U64_MAX = (1n << 64n) - 1n;

/** Boundary values for integers of each width (the originals ±1 are added per case). */
const BOUNDS: Readonly<Record<1 | 2 | 4 | 8, readonly bigint[]>> = {
  1: [0n, 1n, 2n, 3n, 4n, 5n, 6n, 7n, 127n, 128n, 255n],
  2: [0n, 1n, 2n, 255n, 256n, 0x7fffn, 0x8000n, 0xffffn],
  4: [0n, 1n, 2n, 3n, 0x7fffffffn, 0x80000000n, 0xfffffffen, 0xffffffffn, 0x10000n],
  8: [
    0n,
    1n,
    2n,
    3n,
    0x7fffffffn,
    0x80000000n,
    0xffffffffn,
    0x100000000n,
    (1n << 53n) - 1n,
    1n << 53n,
    (1n << 53n) + 1n,
    1n << 62n,
    1n << 63n,
    U64_MAX - 1n,
    U64_MAX,
  ],
};

/** f64 bit patterns: NaNs (quiet, signalling, negative), ±Inf, ±0, subnormals, extremes, values next to 0 and 1. */
export const F64_PATTERNS: readonly bigint[] = [
  0x7ff8000000000000n,
  0x7ff0000000000001n,
  0xfff8000000000000n,
  0x7fffffffffffffffn,
  0x7ff0000000000000n,
  0xfff0000000000000n,
  0x0000000000000000n,
  0x8000000000000000n,
  0x0000000000000001n,
  0x8000000000000001n,
  0x000fffffffffffffn,
  0x0010000000000000n,
  0x7fefffffffffffffn,
  0xffefffffffffffffn,
  0x3ff0000000000000n,
  0xbff0000000000000n,
  0x3fefffffffffffffn,
  0x3ff0000000000001n,
  0x3fe0000000000000n,
  0x4000000000000000n,
];

function buildSeed(name: string, bytes: Uint8Array): Seed {
  const report: CheckpointInspection = inspectCheckpoint(bytes);
  if (!report.verdict.valid) throw new Error(`seed ${name} is not valid: ${report.verdict.error.code}`);
  const fields: Field[] = [];
  const strings: { name: string; offset: number }[] = [];
  for (const f of [...report.fixedHeader, ...report.fields]) {
    if (f.type === 'bytes') continue;
    if (f.type === 'string') {
      strings.push({ name: f.field, offset: f.offset });
      continue;
    }
    const width = f.width as 1 | 2 | 4 | 8;
    fields.push({ name: f.field, offset: f.offset, width, f64: f.type === 'f64' });
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const descriptors = report.descriptors.map((d): Descriptor => {
    // ../../../packages/format/SPEC.md §4.1 descriptor entry: role u8, name (u32 length + bytes), dtype u8, rank u32, shape u64×rank, offset u64, byte_len u64.
    const nameLength = view.getUint32(d.entryOffset + 1, true);
    const dtypeOffset = d.entryOffset + 5 + nameLength;
    const rankOffset = dtypeOffset + 1;
    const shapeOffsets = d.shape.map((_, k) => rankOffset + 4 + 8 * k);
    const offsetOffset = rankOffset + 4 + 8 * d.shape.length;
    return {
      index: d.index,
      entryOffset: d.entryOffset,
      roleTag: d.roleTag,
      nameLengthOffset: d.entryOffset + 1,
      dtypeOffset,
      rankOffset,
      shapeOffsets,
      offsetOffset,
      byteLengthOffset: offsetOffset + 8,
      dataOffset: Number(d.offset),
      byteLength: Number(d.byteLength),
      dtypeTag: d.dtypeTag,
    };
  });
  return { name, bytes, fields, strings, descriptors };
}

function randomFinite(rng: SplitMix64, nonNegative: boolean): number {
  const view = new DataView(new ArrayBuffer(8));
  const pick = rng.nextBelow(8);
  let v: number;
  if (pick === 0) v = -0;
  else if (pick === 1) v = 5e-324;
  else if (pick < 5) v = (rng.nextUnit() - 0.5) * 4;
  else {
    view.setBigUint64(0, rng.nextU64());
    if ((view.getUint16(0) & 0x7ff0) === 0x7ff0) view.setUint16(0, view.getUint16(0) & 0xbfff);
    v = view.getFloat64(0);
  }
  if (nonNegative && (v < 0 || Object.is(v, -0))) v = rng.nextBelow(4) === 0 ? 0 : Math.abs(v);
  return v;
}

/** A random valid variant of a decoded seed: new payload values and sampling state, same structure. */
function variant(state: CheckpointState, rng: SplitMix64): CheckpointState {
  const fill = (data: Float64Array, nonNegative: boolean): Float64Array => data.map(() => randomFinite(rng, nonNegative));
  return {
    ...state,
    parameters: state.parameters.map((p) => ({ ...p, data: fill(p.data, false) })),
    optimizer: {
      ...state.optimizer,
      moments: state.optimizer.moments.map((m) => ({ ...m, first: fill(m.first, false), second: fill(m.second, true) })),
    },
    samplingRngState: rng.nextU64(),
  };
}

/**
 * The seed set: golden file, accepted corpus cases, and `variantsPerSeed` random valid variants of each.
 *
 * @param campaignSeed - seed of the variants.
 * @param variantsPerSeed - variants per corpus file.
 * @returns the seeds.
 */
function loadSeeds(campaignSeed: bigint, variantsPerSeed: number): Seed[] {
  const manifest = loadManifest();
  const files: { name: string; bytes: Uint8Array }[] = [{ name: 'golden', bytes: loadFixture(manifest.golden.file) }];
  for (const c of manifest.cases) if (c.expect.outcome === 'accept') files.push({ name: c.id, bytes: loadFixture(c.file) });
  const rng = new SplitMix64(campaignSeed ^ 0x5eedn);
  const seeds: Seed[] = [];
  for (const f of files) {
    seeds.push(buildSeed(f.name, f.bytes));
    const state = decodeCheckpoint(f.bytes);
    for (let v = 0; v < variantsPerSeed; v += 1) seeds.push(buildSeed(`${f.name}~${v}`, encodeCheckpoint(variant(state, rng))));
  }
  return seeds;
}

function setUint(bytes: Uint8Array, offset: number, width: 1 | 2 | 4 | 8, value: bigint): void {
  if (offset < 0 || offset + width > bytes.length) return;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const v = value & ((1n << BigInt(8 * width)) - 1n);
  if (width === 1) view.setUint8(offset, Number(v));
  else if (width === 2) view.setUint16(offset, Number(v), true);
  else if (width === 4) view.setUint32(offset, Number(v), true);
  else view.setBigUint64(offset, v, true);
}

function getUint(bytes: Uint8Array, offset: number, width: 1 | 2 | 4 | 8): bigint {
  if (offset < 0 || offset + width > bytes.length) return 0n;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (width === 1) return BigInt(view.getUint8(offset));
  if (width === 2) return BigInt(view.getUint16(offset, true));
  if (width === 4) return BigInt(view.getUint32(offset, true));
  return view.getBigUint64(offset, true);
}

/** Recomputes the stored checksum (../../../packages/format/SPEC.md §3.1: FNV-1a 64 with bytes 30..37 as zero). */
export function fixChecksum(bytes: Uint8Array): Uint8Array {
  if (bytes.length < 38) return bytes;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  view.setBigUint64(30, 0n, true);
  view.setBigUint64(30, fnv1a64(bytes), true);
  return bytes;
}

/** Makes payload_bytes = length − header_bytes again (when header_bytes fits), so a mutation gets past the extent rule. */
function fixExtent(bytes: Uint8Array): void {
  if (bytes.length < 38) return;
  const header = getUint(bytes, 14, 8);
  if (header <= BigInt(bytes.length)) setUint(bytes, 22, 8, BigInt(bytes.length) - header);
}

const pick = <T>(rng: SplitMix64, list: readonly T[]): T => list[rng.nextBelow(list.length)] as T;

/** A boundary value for a field of `width` bytes currently holding `current` in a file of `length` bytes. */
function boundary(rng: SplitMix64, width: 1 | 2 | 4 | 8, current: bigint, length: number): bigint {
  const r = rng.nextBelow(10);
  if (r === 0) return current + 1n;
  if (r === 1) return current - 1n;
  if (r === 2 && width >= 4) return BigInt(length) + BigInt(rng.nextBelow(3)) - 1n;
  if (r === 3) return rng.nextU64();
  return pick(rng, BOUNDS[width]);
}

const hex = (v: bigint): string => `0x${(v & U64_MAX).toString(16)}`;

type Mutator = (rng: SplitMix64, seed: Seed, bytes: Uint8Array) => { bytes: Uint8Array; detail: string };

const MUTATORS: Readonly<Record<Exclude<MutationClass, 'stacked' | 'sparse-file'>, Mutator>> = {
  'fixed-header': (rng, seed, bytes) => {
    const f = pick(rng, seed.fields.filter((x) => x.offset < 38 && x.offset !== 30));
    const v = boundary(rng, f.width, getUint(bytes, f.offset, f.width), bytes.length);
    setUint(bytes, f.offset, f.width, v);
    return { bytes, detail: `${f.name} = ${hex(v)}` };
  },
  'header-u64': (rng, seed, bytes) => {
    const f = pick(rng, seed.fields.filter((x) => x.offset >= 38 && x.width === 8 && !x.f64));
    const v = boundary(rng, 8, getUint(bytes, f.offset, 8), bytes.length);
    setUint(bytes, f.offset, 8, v);
    return { bytes, detail: `${f.name} = ${hex(v)}` };
  },
  'header-small-int': (rng, seed, bytes) => {
    const f = pick(rng, seed.fields.filter((x) => x.offset >= 38 && x.width < 8));
    const v = boundary(rng, f.width, getUint(bytes, f.offset, f.width), bytes.length);
    setUint(bytes, f.offset, f.width, v);
    return { bytes, detail: `${f.name} = ${hex(v)}` };
  },
  'header-f64': (rng, seed, bytes) => {
    const f = pick(rng, seed.fields.filter((x) => x.f64));
    const v = pick(rng, F64_PATTERNS);
    setUint(bytes, f.offset, 8, v);
    return { bytes, detail: `${f.name} = f64 bits ${hex(v)}` };
  },
  'string-length': (rng, seed, bytes) => {
    if (seed.strings.length === 0) return MUTATORS['descriptor-name-length'](rng, seed, bytes);
    const s = pick(rng, seed.strings);
    const v = boundary(rng, 4, getUint(bytes, s.offset, 4), bytes.length);
    setUint(bytes, s.offset, 4, v);
    return { bytes, detail: `${s.name} length = ${hex(v)}` };
  },
  'descriptor-tag': (rng, seed, bytes) => {
    const d = pick(rng, seed.descriptors);
    const role = rng.nextBelow(2) === 0;
    const v = pick(rng, BOUNDS[1]);
    setUint(bytes, role ? d.entryOffset : d.dtypeOffset, 1, v);
    return { bytes, detail: `descriptor[${d.index}].${role ? 'role' : 'dtype'} = ${v}` };
  },
  'descriptor-name-length': (rng, seed, bytes) => {
    const d = pick(rng, seed.descriptors);
    const v = boundary(rng, 4, getUint(bytes, d.nameLengthOffset, 4), bytes.length);
    setUint(bytes, d.nameLengthOffset, 4, v);
    return { bytes, detail: `descriptor[${d.index}].name length = ${hex(v)}` };
  },
  'descriptor-rank': (rng, seed, bytes) => {
    const d = pick(rng, seed.descriptors);
    const v = boundary(rng, 4, getUint(bytes, d.rankOffset, 4), bytes.length);
    setUint(bytes, d.rankOffset, 4, v);
    return { bytes, detail: `descriptor[${d.index}].rank = ${hex(v)}` };
  },
  'descriptor-shape': (rng, seed, bytes) => {
    const d = pick(rng, seed.descriptors.filter((x) => x.shapeOffsets.length > 0));
    const k = rng.nextBelow(d.shapeOffsets.length);
    const at = d.shapeOffsets[k] as number;
    const v = boundary(rng, 8, getUint(bytes, at, 8), bytes.length);
    setUint(bytes, at, 8, v);
    return { bytes, detail: `descriptor[${d.index}].shape[${k}] = ${hex(v)}` };
  },
  'descriptor-offset-length': (rng, seed, bytes) => {
    const d = pick(rng, seed.descriptors);
    const which = rng.nextBelow(2) === 0 ? 'offset' : 'byte_len';
    const at = which === 'offset' ? d.offsetOffset : d.byteLengthOffset;
    const v = boundary(rng, 8, getUint(bytes, at, 8), bytes.length);
    setUint(bytes, at, 8, v);
    return { bytes, detail: `descriptor[${d.index}].${which} = ${hex(v)}` };
  },
  'payload-f64': (rng, seed, bytes) => {
    const f64s = seed.descriptors.filter((x) => x.dtypeTag === 3 && x.byteLength >= 8);
    const d = pick(rng, f64s);
    const element = rng.nextBelow(d.byteLength / 8);
    const v = pick(rng, F64_PATTERNS);
    setUint(bytes, d.dataOffset + 8 * element, 8, v);
    return { bytes, detail: `descriptor[${d.index}] (role ${d.roleTag}) element ${element} = f64 bits ${hex(v)}` };
  },
  'bpe-pairs': (rng, seed, bytes) => {
    const bpe = seed.descriptors.find((x) => x.roleTag === 2);
    if (bpe === undefined) return MUTATORS['descriptor-shape'](rng, seed, bytes);
    if (bpe.byteLength >= 4 && rng.nextBelow(3) > 0) {
      const element = rng.nextBelow(bpe.byteLength / 4);
      const v = boundary(rng, 4, getUint(bytes, bpe.dataOffset + 4 * element, 4), bytes.length);
      setUint(bytes, bpe.dataOffset + 4 * element, 4, v);
      return { bytes, detail: `BPE pair value ${element} = ${hex(v)}` };
    }
    const k = rng.nextBelow(bpe.shapeOffsets.length);
    const v = boundary(rng, 8, getUint(bytes, bpe.shapeOffsets[k] as number, 8), bytes.length);
    setUint(bytes, bpe.shapeOffsets[k] as number, 8, v);
    return { bytes, detail: `BPE pair count shape[${k}] = ${hex(v)}` };
  },
  'huge-allocation': (rng, seed, bytes) => {
    // Counts and shapes whose product is huge, with the byte length made to agree when the product fits u64.
    const d = pick(rng, seed.descriptors.filter((x) => x.shapeOffsets.length > 0));
    const big = pick(rng, [1n << 28n, 1n << 31n, 0xffffffffn, 1n << 32n, 1n << 40n, 1n << 53n, 1n << 61n]);
    for (const at of d.shapeOffsets) setUint(bytes, at, 8, 1n);
    setUint(bytes, d.shapeOffsets[0] as number, 8, big);
    const width = d.dtypeTag === 1 ? 1n : d.dtypeTag === 2 ? 4n : 8n;
    if (big * width <= U64_MAX && rng.nextBelow(2) === 0) setUint(bytes, d.byteLengthOffset, 8, big * width);
    const counts = seed.fields.filter((x) => /count/.test(x.name) && !x.f64);
    if (counts.length > 0 && rng.nextBelow(3) === 0) {
      const f = pick(rng, counts);
      setUint(bytes, f.offset, f.width, pick(rng, BOUNDS[f.width].slice(-4)));
    }
    return { bytes, detail: `descriptor[${d.index}].shape = [${big}, 1…]` };
  },
  extent: (rng, _seed, bytes) => {
    const header = rng.nextBelow(2) === 0;
    const v = boundary(rng, 8, getUint(bytes, header ? 14 : 22, 8), bytes.length);
    setUint(bytes, header ? 14 : 22, 8, v);
    if (header && rng.nextBelow(2) === 0) fixExtent(bytes);
    return { bytes, detail: `${header ? 'header_bytes' : 'payload_bytes'} = ${hex(v)}` };
  },
  bytes: (rng, _seed, bytes) => {
    const r = rng.nextBelow(4);
    if (r === 0) {
      const length = rng.nextBelow(bytes.length);
      const out = bytes.slice(0, length);
      if (rng.nextBelow(2) === 0) fixExtent(out);
      return { bytes: out, detail: `truncated to ${length}` };
    }
    if (r === 1) {
      const pos = rng.nextBelow(bytes.length + 1);
      const extra = Uint8Array.from({ length: 1 + rng.nextBelow(16) }, () => rng.nextBelow(256));
      const out = new Uint8Array(bytes.length + extra.length);
      out.set(bytes.subarray(0, pos), 0);
      out.set(extra, pos);
      out.set(bytes.subarray(pos), pos + extra.length);
      if (rng.nextBelow(2) === 0) fixExtent(out);
      return { bytes: out, detail: `inserted ${extra.length} bytes at ${pos}` };
    }
    const flips = 1 + rng.nextBelow(4);
    const at: number[] = [];
    for (let i = 0; i < flips; i += 1) {
      const pos = rng.nextBelow(bytes.length);
      bytes[pos] = (bytes[pos] as number) ^ (1 << rng.nextBelow(8));
      at.push(pos);
    }
    return { bytes, detail: `bit flips at ${at.join(',')}` };
  },
};

const SINGLE: readonly Exclude<MutationClass, 'stacked' | 'sparse-file'>[] = Object.keys(MUTATORS) as Exclude<MutationClass, 'stacked' | 'sparse-file'>[];

/** Sizes and header_bytes of the sparse-file cases (files of 2–4 GiB that are mostly a hole). */
export const SPARSE_CASES: readonly { readonly headerBytes: bigint; readonly size: number }[] = [
  { headerBytes: 1n << 31n, size: 2 ** 31 + 4096 },
  { headerBytes: (1n << 31n) - 1n, size: 2 ** 31 + 4096 },
  { headerBytes: (1n << 31n) + 8n, size: 2 ** 31 + 4096 },
  { headerBytes: 2n ** 31n + 4096n, size: 2 ** 31 + 4096 },
  { headerBytes: 4096n, size: 2 ** 31 + 4096 },
  { headerBytes: 0xffffffffn, size: 2 ** 32 + 4096 },
  { headerBytes: 1n << 32n, size: 2 ** 32 + 4096 },
  { headerBytes: 6330n, size: 2 ** 32 + 6330 },
];

/** Options of {@link createCaseGenerator}. */
export interface GeneratorOptions {
  /** Campaign seed. */
  readonly seed: bigint;
  /** Random valid variants per corpus seed (default 4). */
  readonly variantsPerSeed?: number;
}

/** Builds cases by index. */
export interface CaseGenerator {
  readonly seedCount: number;
  /** The in-memory case `index` (never `sparse-file`). */
  generate(index: number): FuzzCase;
  /** Sparse-file case `k` of {@link SPARSE_CASES}. */
  sparse(k: number): FuzzCase;
}

/**
 * The case generator of one campaign.
 *
 * @param options - campaign seed and seed-set size.
 * @returns the generator.
 */
export function createCaseGenerator(options: GeneratorOptions): CaseGenerator {
  const seeds = loadSeeds(options.seed, options.variantsPerSeed ?? 4);
  const golden = seeds[0] as Seed;
  return {
    seedCount: seeds.length,
    generate(index) {
      const rng = new SplitMix64((options.seed * 0x9e3779b97f4a7c15n + BigInt(index)) & U64_MAX);
      const seed = pick(rng, seeds);
      const stacked = rng.nextBelow(8) === 0;
      let bytes: Uint8Array = seed.bytes.slice();
      const details: string[] = [];
      let cls: MutationClass = 'stacked';
      const rounds = stacked ? 2 + rng.nextBelow(3) : 1;
      for (let i = 0; i < rounds; i += 1) {
        const c = pick(rng, SINGLE);
        if (!stacked) cls = c;
        const r = MUTATORS[c](rng, seed, bytes);
        bytes = r.bytes;
        details.push(`${c}: ${r.detail}`);
      }
      const keepChecksum = rng.nextBelow(10) === 0;
      if (!keepChecksum) fixChecksum(bytes);
      return { index, cls, detail: `${seed.name}; ${details.join('; ')}${keepChecksum ? '; stale checksum' : ''}`, bytes };
    },
    sparse(k) {
      const spec = SPARSE_CASES[k % SPARSE_CASES.length] as (typeof SPARSE_CASES)[number];
      // The golden header, then header_bytes / payload_bytes claiming a file of `size` bytes; the rest is a hole.
      const bytes = golden.bytes.slice();
      setUint(bytes, 14, 8, spec.headerBytes);
      setUint(bytes, 22, 8, BigInt(spec.size) - spec.headerBytes);
      return { index: k, cls: 'sparse-file', detail: `golden prefix, header_bytes = ${spec.headerBytes}, sparse file of ${spec.size} bytes`, bytes, sparseSize: spec.size };
    },
  };
}
