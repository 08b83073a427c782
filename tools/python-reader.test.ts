/**
 * The Python package's reader (`python/llmcp`, `import llmcp`) agrees with
 * `@llmcp/format` on every file we can throw at it.
 *
 * This file builds the inputs — the conformance corpus, checkpoints of two
 * tiny `@llmcp/trainer` runs, random valid states and a few thousand hostile
 * mutations (checksums recomputed) — decodes each with `@llmcp/format`, then
 * runs the package's tests (`python/tests/run.py`, unittest, under `/usr/bin/python3` or
 * `$LLMCP_PYTHON`) on the same bytes and compares its structured JSON output:
 * the same accept/reject outcome, the same code, category, reason and error
 * context (offset, field, record, element, and the `expected` and `found`
 * texts: all of `formatErrorData` but the prose message), and byte-identical
 * re-encoding of every accepted file. Generated f64 bit patterns check the
 * number texts on their own: JavaScript's `String` and `f64Text` against the
 * package's. Skips, saying why, where the interpreter is absent.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadFixture, loadManifest, parseRawCheckpoint, serializeRawCheckpoint, type RawCheckpoint } from '@llmcp/conformance';
import { decodeCheckpoint, encodeCheckpoint, expectedParameterShapes, f64FromBits, f64Text, f64ToBits, fnv1a64, SplitMix64, type CheckpointState, type MomentState, type NamedTensor } from '@llmcp/format';
import { inspectCheckpoint } from '@llmcp/format/inspect';
import { checkpointsDir, parseConfig, RUN_FILES, trainRun } from '@llmcp/trainer';
import { PYTHON, pythonProblem, sameOutcome, tsOutcome, writeOracleJob, type OracleOutcome, type PythonOutcome } from './reliability/src/python-oracle.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SCRIPT = path.join(ROOT, 'python', 'tests', 'run.py');
const MUTATIONS = 3000;
/** f64 bit patterns whose text both sides write (JavaScript's `String` and `f64Text`, the texts of `found` and `expected`). */
const F64_TEXT_CASES = 20_000;

const SKIP = pythonProblem();

interface Entry {
  id: string;
  group: 'golden' | 'corpus' | 'trainer' | 'random' | 'mutation';
  bytes: Uint8Array;
  ts: OracleOutcome;
}
interface PyResult {
  python: string;
  numpy: string | null;
  torch: string | null;
  seconds: number;
  unittest: { testsRun: number; failures: [string, string][]; errors: [string, string][]; skipped: [string, string][]; successful: boolean };
  results: (PythonOutcome | { id: string; seconds?: number; worstRelative?: number; compared?: number; differ?: string[] })[];
}

/** Recomputes the checksum field in place (SPEC §3.1). */
function fixChecksum(bytes: Uint8Array): Uint8Array {
  if (bytes.length < 38) return bytes;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  view.setBigUint64(30, 0n, true);
  view.setBigUint64(30, fnv1a64(bytes), true);
  return bytes;
}

// ---------------------------------------------------------------------------
// Random valid states (SplitMix64-seeded, public API only)
// ---------------------------------------------------------------------------

const BITS = new DataView(new ArrayBuffer(8));

function randomFinite(rng: SplitMix64, nonNegative = false): number {
  const pick = rng.nextBelow(16);
  let v: number;
  if (pick === 0) v = -0;
  else if (pick === 1) v = 0;
  else if (pick === 2) v = 5e-324;
  else if (pick < 9) v = (rng.nextUnit() - 0.5) * 2;
  else {
    BITS.setBigUint64(0, rng.nextU64());
    if ((BITS.getUint16(0) & 0x7ff0) === 0x7ff0) BITS.setUint16(0, BITS.getUint16(0) & 0xbfff);
    v = BITS.getFloat64(0);
  }
  if (nonNegative && v < 0) v = -v;
  return v;
}

function tensor(rng: SplitMix64, shape: readonly number[], nonNegative = false): Float64Array {
  const out = new Float64Array(shape.reduce((a, b) => a * b, 1));
  for (let i = 0; i < out.length; i++) out[i] = randomFinite(rng, nonNegative);
  return out;
}

function randomState(rng: SplitMix64): CheckpointState {
  const heads = 1 + rng.nextBelow(2);
  const modelWidth = heads * 2 * (1 + rng.nextBelow(2));
  const bpe = rng.nextBelow(2) === 1;
  let tokenizer: CheckpointState['tokenizer'];
  let vocabularySize: number;
  if (bpe) {
    const pairs: [number, number][] = [];
    const seen = new Set<string>();
    const merges = rng.nextBelow(5);
    while (pairs.length < merges) {
      const pair: [number, number] = [rng.nextBelow(256 + pairs.length), rng.nextBelow(256 + pairs.length)];
      if (seen.has(pair.join())) continue;
      seen.add(pair.join());
      pairs.push(pair);
    }
    tokenizer = { kind: 'bpe', pairs };
    vocabularySize = 258 + merges;
  } else {
    const pieces: Uint8Array[] = [];
    const seen = new Set<string>();
    const count = 1 + rng.nextBelow(6);
    while (pieces.length < count) {
      const piece = Uint8Array.from({ length: 1 + rng.nextBelow(3) }, () => rng.nextBelow(256));
      if (seen.has(piece.join())) continue;
      seen.add(piece.join());
      pieces.push(piece);
    }
    tokenizer = { kind: 'literal', pieces };
    vocabularySize = count;
  }
  const decoder = {
    vocabularySize,
    modelWidth,
    heads,
    feedForwardWidth: 1 + rng.nextBelow(6),
    layers: rng.nextBelow(3),
    maxPositions: 1 + rng.nextBelow(16),
    ropeBase: rng.nextBelow(2) === 0 ? 10000 : 1 + rng.nextUnit() * 1e6,
    rmsEpsilon: [1e-6, 0, -0, 1e-5][rng.nextBelow(4)] as number,
  };
  const parameters: NamedTensor[] = expectedParameterShapes(decoder).map((p) => ({ name: p.name, shape: [...p.shape], data: tensor(rng, p.shape) }));
  const stepPick = rng.nextBelow(4);
  const step = stepPick === 0 ? 0n : stepPick === 1 ? (1n << 64n) - 1n : BigInt(1 + rng.nextBelow(1000));
  const names = parameters.map((p) => p.name);
  let groups: { decay: string[]; noDecay: string[] } | null = null;
  if (rng.nextBelow(2) === 1) {
    if (step === 0n) {
      const alphabet = ['a', 'z', '.', '_', '\uFFFD', '\u{1F600}', 'é', '0'];
      const some = (n: number): string[] => [...new Set(Array.from({ length: n }, () => Array.from({ length: 1 + rng.nextBelow(4) }, () => alphabet[rng.nextBelow(alphabet.length)]).join('')))];
      const decay = some(1 + rng.nextBelow(3));
      groups = { decay, noDecay: some(rng.nextBelow(3)).filter((n) => !decay.includes(n)) };
    } else {
      const noDecay = names.filter((n) => n.endsWith('.gain') !== (rng.nextBelow(5) === 0));
      groups = { decay: names.filter((n) => !noDecay.includes(n)), noDecay };
    }
  }
  const moments: MomentState[] =
    step === 0n ? [] : parameters.map((p) => ({ name: p.name, shape: p.shape, first: tensor(rng, p.shape), second: tensor(rng, p.shape, true) }));
  const learningRate = 1e-4 + rng.nextUnit() * 0.1;
  return {
    tokenizer,
    decoder,
    parameters,
    optimizer: {
      config: { learningRate, beta1: rng.nextUnit() * 0.99, beta2: rng.nextUnit() * 0.999, epsilon: 1e-8, weightDecay: rng.nextBelow(2) === 0 ? 0 : 0.1 },
      groups,
      step,
      beta1Power: step === 0n ? 1 : rng.nextBelow(8) === 0 ? -0 : rng.nextUnit(),
      beta2Power: step === 0n ? 1 : rng.nextUnit(),
      moments: moments.reverse(),
    },
    selectedStep: step,
    samplingRngState: rng.nextU64(),
  };
}

// ---------------------------------------------------------------------------
// f64 bit patterns for the number texts
// ---------------------------------------------------------------------------

const U64_MAX = (1n << 64n) - 1n;
const SIGN = 1n << 63n;

/** The bits of `v`, moved by a few units in the last place (staying in u64) and given either sign. */
const near = (v: number): fc.Arbitrary<bigint> =>
  fc.tuple(fc.integer({ min: -2, max: 2 }), fc.boolean()).map(([d, negative]) => {
    const bits = (f64ToBits(Math.abs(v)) + BigInt(d)) & U64_MAX & ~SIGN;
    return negative ? bits | SIGN : bits;
  });

/**
 * f64 bit patterns where number texts go wrong: signed zeros, subnormals, every power of two (and its
 * neighbours), integers between 2^52 and 2^64 (where JavaScript pads the shortest digits with zeros),
 * powers of ten around the exponent thresholds (an exponent below 1e-6 and from 1e21), NaN payloads,
 * infinities, and any pattern.
 */
const F64_BITS: fc.Arbitrary<bigint> = fc.oneof(
  fc.bigInt({ min: 0n, max: U64_MAX }),
  fc.integer({ min: -1074, max: 1023 }).chain((k) => near(2 ** k)),
  fc.bigInt({ min: 1n << 52n, max: 1n << 64n }).chain((n) => near(Number(n))),
  fc.integer({ min: -324, max: 308 }).chain((k) => near(Number(`1e${k}`))),
  fc.oneof(fc.constantFrom(0, 5e-324, 2.2250738585072014e-308, 2.225073858507201e-308, 1e-7, 1e-6, 1e21, 2 ** 53, 2 ** 63, 2 ** 64, Number.MAX_VALUE), fc.double({ noNaN: true })).chain(near),
  fc.bigInt({ min: 0x7ff0000000000000n, max: 0x7fffffffffffffffn }).chain((b) => fc.boolean().map((negative) => (negative ? b | SIGN : b))),
);

// ---------------------------------------------------------------------------
// Hostile mutations
// ---------------------------------------------------------------------------

interface Base {
  readonly name: string;
  readonly bytes: Uint8Array;
  readonly headerBytes: number;
  /** Header fields (offset, width) incl. string lengths and every descriptor field. */
  readonly fields: readonly { offset: number; width: number }[];
  /** f64 payload records (offset, element count). */
  readonly f64Records: readonly { offset: number; count: number }[];
  readonly raw: RawCheckpoint;
}

function describeBase(name: string, bytes: Uint8Array): Base {
  const report = inspectCheckpoint(bytes);
  const fields = [...report.fixedHeader, ...report.fields].filter((f) => f.type !== 'string').map((f) => ({ offset: f.offset, width: f.width }));
  for (const f of report.fields.filter((x) => x.type === 'string')) fields.push({ offset: f.offset, width: 4 });
  for (const d of report.descriptors) {
    const nameLength = d.entryLength - 26 - 8 * d.shape.length;
    const dtype = d.entryOffset + 5 + nameLength;
    fields.push({ offset: d.entryOffset, width: 1 }, { offset: d.entryOffset + 1, width: 4 }, { offset: dtype, width: 1 }, { offset: dtype + 1, width: 4 });
    d.shape.forEach((_, k) => fields.push({ offset: dtype + 5 + 8 * k, width: 8 }));
    fields.push({ offset: dtype + 5 + 8 * d.shape.length, width: 8 }, { offset: dtype + 13 + 8 * d.shape.length, width: 8 });
  }
  const decoded = decodeCheckpoint(bytes);
  const f64Records = decoded.layout.descriptors.filter((d) => d.dtype === 'f64' && d.byteLength > 0).map((d) => ({ offset: d.offset, count: d.byteLength / 8 }));
  return { name, bytes, headerBytes: decoded.layout.headerBytes, fields, f64Records, raw: parseRawCheckpoint(bytes) };
}

const INTERESTING_U64 = [0n, 1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n, 9n, 11n, 37n, 38n, 255n, 256n, 257n, 258n, 0xffffn, 0xffffffffn, 1n << 32n, (1n << 53n) + 1n, (1n << 64n) - 1n, 0x3ff0000000000000n, 0x7ff8000000000000n, 0x7ff0000000000000n, 0x8000000000000000n, 0xbff0000000000000n];
const INTERESTING_F64 = [Number.NaN, -0, 0, -1e-9, 1e-300, 5e-324, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1, -1, 0.5, 2, 1e308];

function pick<T>(rng: SplitMix64, list: readonly T[]): T {
  return list[rng.nextBelow(list.length)] as T;
}

function writeLe(bytes: Uint8Array, offset: number, width: number, value: bigint): void {
  let v = value;
  for (let i = 0; i < width && offset + i < bytes.length; i++) {
    bytes[offset + i] = Number(v & 0xffn);
    v >>= 8n;
  }
}

function structural(rng: SplitMix64, base: Base): Uint8Array {
  const raw: RawCheckpoint = { ...base.raw, decay: [...base.raw.decay], noDecay: [...base.raw.noDecay], records: base.raw.records.map((r) => ({ ...r, shape: [...r.shape] })) };
  const records = raw.records;
  const i = rng.nextBelow(records.length);
  const j = rng.nextBelow(records.length);
  const r = records[i] as RawCheckpoint['records'][number];
  const pairs = records.flatMap((x, k) => (x.roleTag === 4 && records[k + 1]?.roleTag === 5 ? [k] : []));
  const models = records.flatMap((x, k) => (x.roleTag === 3 ? [k] : []));
  switch (rng.nextBelow(17)) {
    case 0:
      [records[i], records[j]] = [records[j] as typeof r, r];
      break;
    case 1:
      records.splice(i, 1);
      if (rng.nextBelow(2) === 0) raw.modelParameterCount = Math.max(0, raw.modelParameterCount - 1);
      break;
    case 2:
      records.splice(i, 0, { ...r });
      break;
    case 3:
      if (r.shape.length > 0) r.shape[rng.nextBelow(r.shape.length)] = pick(rng, [0n, 1n, 2n, 3n, 4n, 5n, 6n, 8n, 16n, (1n << 61n), (1n << 64n) - 1n]);
      else r.shape.push(1n);
      break;
    case 4:
      r.shape = rng.nextBelow(2) === 0 ? [...r.shape].reverse() : [...r.shape, 1n];
      break;
    case 5:
      r.name = (records[j] as typeof r).name;
      break;
    case 6:
      r.name = new TextEncoder().encode(pick(rng, ['', 'x', 'Token_embedding.weight', 'blocks..gain', 'blocks.0.ffn.up.weight', 'final_norm.gain', '01', '5', 'training-pairs', '\u{1F600}']));
      break;
    case 7:
      r.roleTag = 1 + rng.nextBelow(5);
      break;
    case 8:
      r.dtypeTag = 1 + rng.nextBelow(3);
      break;
    case 9:
      raw.optimizerStateCount = rng.nextBelow(2) === 0 ? raw.optimizerStateCount - 1 : raw.optimizerStateCount + 1;
      raw.modelParameterCount += rng.nextBelow(3) - 1;
      break;
    case 10:
      if (raw.groupsFlag === 1) {
        const list = rng.nextBelow(2) === 0 ? raw.decay : raw.noDecay;
        if (list.length > 0 && rng.nextBelow(2) === 0) list.splice(rng.nextBelow(list.length), 1);
        else list.push(pick(rng, [...raw.decay, ...raw.noDecay, new TextEncoder().encode('unknown.weight')]));
      } else raw.groupsFlag = 1;
      break;
    case 11:
      r.bytes = r.bytes.subarray(0, Math.max(0, r.bytes.length - 8 * (1 + rng.nextBelow(2))));
      break;
    case 12: {
      // A literal piece spelled like another one, or a BPE pair rewritten.
      const tok = records.filter((x) => x.roleTag === 1 || x.roleTag === 2);
      const a = tok[rng.nextBelow(tok.length)];
      if (a?.roleTag === 1) {
        a.bytes = (tok[rng.nextBelow(tok.length)] as typeof r).bytes.slice();
        a.shape = [BigInt(a.bytes.length)];
      } else if (a !== undefined && a.bytes.length >= 8) {
        a.bytes = a.bytes.slice();
        new DataView(a.bytes.buffer).setUint32(4 * rng.nextBelow(a.bytes.length / 4), pick(rng, [0, 97, 255, 256, 257, 258, 300, 0xffffffff]), true);
      }
      break;
    }
    case 13: {
      // Both moments of a pair renamed (OptimizerNames / Layout / NonCanonical).
      const k = pairs[rng.nextBelow(Math.max(1, pairs.length))];
      if (k === undefined) break;
      const name = pick(rng, [...models.map((m) => (records[m] as typeof r).name), new TextEncoder().encode('blocks.0.ffn.up.weightx'), new TextEncoder().encode('zz.weight')]);
      (records[k] as typeof r).name = name;
      (records[k + 1] as typeof r).name = name;
      break;
    }
    case 14: {
      // Both moments of a pair reshaped with the same element count (OptimizerShape).
      const k = pairs[rng.nextBelow(Math.max(1, pairs.length))];
      if (k === undefined) break;
      const first = records[k] as typeof r;
      const shape = rng.nextBelow(2) === 0 ? [...first.shape].reverse() : [first.shape.reduce((x, y) => x * y, 1n)];
      first.shape = shape;
      (records[k + 1] as typeof r).shape = [...shape];
      break;
    }
    case 15: {
      // A model record whose strides overflow (Tensor) or that is empty.
      const m = records[models[rng.nextBelow(Math.max(1, models.length))] ?? 0] as typeof r;
      m.shape = rng.nextBelow(2) === 0 ? [0n, 1n << 40n, 1n << 40n] : [0n, 4n];
      m.bytes = new Uint8Array(0);
      break;
    }
    default:
      // Step, powers and vocabulary nudged together or apart.
      raw.selectedStep += BigInt(rng.nextBelow(3)) - 1n;
      if (rng.nextBelow(2) === 0) raw.tokenizerVocabulary += BigInt(rng.nextBelow(3)) - 1n;
      if (rng.nextBelow(2) === 0) raw.optimizerStep = raw.selectedStep;
      break;
  }
  return serializeRawCheckpoint(raw);
}

function mutate(rng: SplitMix64, bases: readonly Base[]): { id: string; bytes: Uint8Array } {
  const base = rng.nextBelow(10) < 7 ? (bases[0] as Base) : pick(rng, bases);
  const kinds = ['field', 'field', 'nudge', 'flip-header', 'flip', 'payload', 'structural', 'structural', 'structural', 'insert', 'multi'] as const;
  const kind = pick(rng, kinds);
  let out: Uint8Array = base.bytes.slice();
  const field = (b: Uint8Array): void => {
    const f = pick(rng, base.fields);
    const value = rng.nextBelow(3) === 0 ? rng.nextU64() : pick(rng, INTERESTING_U64);
    writeLe(b, f.offset, f.width, f.width === 8 || rng.nextBelow(2) === 0 ? value : value & ((1n << BigInt(8 * f.width)) - 1n));
  };
  switch (kind) {
    case 'field':
      field(out);
      break;
    case 'nudge': {
      const f = pick(rng, base.fields);
      let v = 0n;
      for (let k = f.width - 1; k >= 0; k--) v = (v << 8n) | BigInt(out[f.offset + k] as number);
      writeLe(out, f.offset, f.width, (v + BigInt(pick(rng, [-2, -1, 1, 2]))) & ((1n << BigInt(8 * f.width)) - 1n));
      break;
    }
    case 'multi':
      for (let k = 0; k < 2 + rng.nextBelow(3); k++) field(out);
      break;
    case 'flip-header': {
      const pos = 38 + rng.nextBelow(base.headerBytes - 38);
      out[pos] = (out[pos] as number) ^ (1 << rng.nextBelow(8));
      break;
    }
    case 'flip': {
      const pos = rng.nextBelow(out.length);
      out[pos] = (out[pos] as number) ^ (1 << rng.nextBelow(8));
      break;
    }
    case 'payload': {
      const rec = pick(rng, base.f64Records);
      new DataView(out.buffer).setFloat64(rec.offset + 8 * rng.nextBelow(rec.count), pick(rng, INTERESTING_F64), true);
      break;
    }
    case 'structural':
      out = structural(rng, base);
      break;
    case 'insert': {
      // Insert or delete bytes inside the header with header_bytes adjusted (offsets left as they were).
      const pos = 38 + rng.nextBelow(base.headerBytes - 38);
      const n = 1 + rng.nextBelow(8);
      const grown = rng.nextBelow(2) === 0;
      const next = grown ? new Uint8Array(out.length + n) : new Uint8Array(out.length - n);
      if (grown) {
        next.set(out.subarray(0, pos));
        for (let k = 0; k < n; k++) next[pos + k] = rng.nextBelow(256);
        next.set(out.subarray(pos), pos + n);
      } else {
        next.set(out.subarray(0, pos));
        next.set(out.subarray(pos + n), pos);
      }
      new DataView(next.buffer).setBigUint64(14, BigInt(base.headerBytes + (grown ? n : -n)), true);
      out = next;
      break;
    }
  }
  if (rng.nextBelow(20) !== 0) fixChecksum(out);
  return { id: `mutation-${kind}-${base.name}`, bytes: out };
}

// ---------------------------------------------------------------------------
// Trainer checkpoints
// ---------------------------------------------------------------------------

async function trainerCheckpoints(dir: string): Promise<{ id: string; bytes: Uint8Array }[]> {
  const text = 'the quick brown fox jumps over the lazy dog. ';
  const documents = [
    { id: 'a', partition: 'train', text: text.repeat(4) },
    { id: 'b', partition: 'train', text: 'pack my box with five dozen liquor jugs. '.repeat(3) },
    { id: 'v', partition: 'validation', text: 'the lazy fox. the quick dog.' },
  ];
  const common = {
    steps: 6,
    data: { source: { kind: 'inline', documents }, contextLength: 8, batchSize: 4, shuffle: { seed: 7 } },
    evaluation: { validateEvery: 3, batchSize: 8 },
    checkpoint: { every: 3, keepSteps: 3 },
    sampling: { seed: 3, prompt: 'the', count: 1, maxNewTokens: 2 },
    log: { timing: false },
    threads: 1,
  };
  const configs = {
    // Byte-level BPE, two layers, F ≠ D, gains without decay, warmup-cosine schedule.
    bpe: parseConfig({
      ...common,
      tokenizer: { kind: 'bpe', merges: 12 },
      model: { width: 8, heads: 2, feedForwardWidth: 12, layers: 2, initSeed: 5 },
      optimizer: { learningRate: 0.01, weightDecay: 0.1, groups: 'gain-no-decay' },
      schedule: { kind: 'warmup-cosine', warmupSteps: 2 },
    }),
    // Literal pieces, one layer, no parameter groups, constant rate.
    literal: parseConfig({
      ...common,
      tokenizer: { kind: 'literal', pieces: [...new Set([...documents.map((d) => d.text).join('')])] },
      model: { width: 4, heads: 1, feedForwardWidth: 6, layers: 1, initSeed: 9 },
      optimizer: { learningRate: 0.02, weightDecay: 0.01, groups: 'none' },
      schedule: { kind: 'constant' },
    }),
  };
  const out: { id: string; bytes: Uint8Array }[] = [];
  const seen = new Set<string>();
  for (const [name, config] of Object.entries(configs)) {
    const runDir = path.join(dir, `run-${name}`);
    await trainRun({ runDir, config, saveMode: 'inline' });
    for (const slot of readdirSync(checkpointsDir(runDir)).sort()) {
      const file = path.join(checkpointsDir(runDir), slot, RUN_FILES.state);
      if (!existsSync(file)) continue;
      const bytes = new Uint8Array(readFileSync(file));
      const key = fnv1a64(bytes).toString(16);
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ id: `trainer-${name}-${slot}`, bytes });
    }
  }
  return out;
}

// ---------------------------------------------------------------------------

describe.skipIf(SKIP !== null)(`the Python package llmcp agrees with @llmcp/format${SKIP === null ? '' : ` (skipped: ${SKIP})`}`, () => {
  let dir = '';
  const entries: Entry[] = [];
  let py: PyResult;
  const byId = new Map<string, PythonOutcome>();
  const f64Bits = fc.sample(F64_BITS, { seed: 0x29, numRuns: F64_TEXT_CASES });

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'llmcp-python-reader-'));
    const add = (id: string, group: Entry['group'], bytes: Uint8Array): void => {
      entries.push({ id: `${group}:${entries.length}:${id}`, group, bytes, ts: tsOutcome(bytes) });
    };
    const manifest = loadManifest();
    add('golden', 'golden', loadFixture(manifest.golden.file));
    for (const c of manifest.cases) add(c.id, 'corpus', loadFixture(c.file));
    const trained = await trainerCheckpoints(dir);
    for (const t of trained) add(t.id, 'trainer', t.bytes);
    const rng = new SplitMix64(0x5eed_10n);
    for (let k = 0; k < 40; k++) add(`state-${k}`, 'random', encodeCheckpoint(randomState(rng)));
    const bases = [
      describeBase('golden', loadFixture(manifest.golden.file)),
      describeBase('bpe-valid', loadFixture('malformed/bpe-valid.llmcp')),
      describeBase('step-zero', loadFixture('malformed/step-zero.llmcp')),
      describeBase('no-groups', loadFixture('malformed/no-groups-step-8.llmcp')),
      describeBase('layers-0', loadFixture('malformed/layers-0.llmcp')),
      describeBase('trainer', (trained[0] as { bytes: Uint8Array }).bytes),
    ];
    for (let k = 0; k < MUTATIONS; k++) {
      const m = mutate(rng, bases);
      add(m.id, 'mutation', m.bytes);
    }

    const job = writeOracleJob(dir, entries, { f64Bits: f64Bits.map((b) => b.toString(16).padStart(16, '0')) });
    const out = path.join(dir, 'result.json');
    // The install into a virtual environment runs in a test of its own (below); the torch engine's tests in tools/python-engine.test.ts.
    const run = spawnSync(PYTHON, [SCRIPT, '--skip', 'test_install', '--skip', 'test_engine', '--job', job, '--out', out], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
    });
    if (!existsSync(out)) throw new Error(`${PYTHON} ${SCRIPT} wrote no result (status ${run.status}):\n${run.stderr}`);
    py = JSON.parse(readFileSync(out, 'utf8')) as PyResult;
    for (const r of py.results) if ('ok' in r) byId.set(r.id, r);
  }, 120_000);

  afterAll(() => {
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  const compare = (group: Entry['group']): { total: number; accepted: number; mismatches: string[] } => {
    const mismatches: string[] = [];
    let accepted = 0;
    const list = entries.filter((e) => e.group === group);
    for (const e of list) {
      const p = byId.get(e.id);
      if (p === undefined) {
        mismatches.push(`${e.id}: no Python result`);
        continue;
      }
      if (e.ts.ok) accepted += 1;
      if (!sameOutcome(e.ts, p)) mismatches.push(`${e.id}: @llmcp/format ${JSON.stringify(e.ts)} / python ${JSON.stringify(p)}`);
    }
    return { total: list.length, accepted, mismatches };
  };

  it('runs the Python unittest suite without failures', async ({ annotate }) => {
    await annotate(`python ${py.python}, numpy ${py.numpy ?? 'absent'}, torch ${py.torch ?? 'absent'}; ${py.unittest.testsRun} unittest tests in ${py.seconds.toFixed(1)} s, skipped: ${py.unittest.skipped.map((s) => s[1]).join('; ') || 'none'}; torch AdamW step vs llmcp's rule: worst relative difference ${(py.results.find((r) => r.id === 'torch-adamw-continuation') as { worstRelative?: number } | undefined)?.worstRelative ?? 'n/a'}`);
    expect(py.unittest.failures).toEqual([]);
    expect(py.unittest.errors).toEqual([]);
    expect(py.unittest.successful).toBe(true);
    expect(py.unittest.skipped.map((s) => s[0]).filter((name) => name.includes('test_job_files'))).toEqual([]);
  });

  it('installs with pip install ./python: llmcp, llmcp_format and python -m llmcp from a virtual environment', async ({ annotate, skip }) => {
    const out = path.join(dir, 'install.json');
    const run = spawnSync(PYTHON, [SCRIPT, '--only', 'test_install', '--out', out], { cwd: ROOT, encoding: 'utf8', timeout: 120_000, env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
    if (!existsSync(out)) throw new Error(`${PYTHON} ${SCRIPT} --only test_install wrote no result (status ${run.status}):\n${run.stderr}`);
    const result = JSON.parse(readFileSync(out, 'utf8')) as PyResult;
    expect(result.unittest.failures).toEqual([]);
    expect(result.unittest.errors).toEqual([]);
    expect(result.unittest.testsRun).toBe(1);
    const skipped = result.unittest.skipped[0];
    if (skipped !== undefined) skip(skipped[1]);
    await annotate(`installed into a venv and imported from there in ${result.seconds.toFixed(1)} s`);
  }, 150_000);

  it('writes every generated f64 as JavaScript writes it: String and f64Text, the texts of found and expected', async ({ annotate }) => {
    const texts = (py.results.find((r) => r.id === 'f64-text') as { texts?: [string, string][] } | undefined)?.texts ?? [];
    expect(texts.length).toBe(F64_TEXT_CASES);
    const differ: string[] = [];
    let zeros = 0;
    let integers = 0;
    let exponents = 0;
    f64Bits.forEach((bits, i) => {
      const v = f64FromBits(bits);
      const want: [string, string] = [String(v), f64Text(v)];
      const got = texts[i] as [string, string];
      if (v === 0) zeros += 1;
      else if (Number.isInteger(v) && Math.abs(v) >= 2 ** 53 && Math.abs(v) < 1e21) integers += 1;
      if (want[0].includes('e')) exponents += 1;
      if (got[0] !== want[0] || got[1] !== want[1]) differ.push(`0x${bits.toString(16).padStart(16, '0')}: JavaScript ${JSON.stringify(want)}, Python ${JSON.stringify(got)}`);
    });
    await annotate(`${F64_TEXT_CASES} f64 bit patterns: ${F64_TEXT_CASES - differ.length} written alike (${zeros} zeros, ${integers} integers in [2^53, 1e21), ${exponents} with an exponent)`);
    expect(zeros).toBeGreaterThan(0);
    expect(integers).toBeGreaterThan(100);
    expect(differ.slice(0, 10)).toEqual([]);
  });

  it('decodes the golden file and re-encodes the identical 6330 bytes', () => {
    const golden = entries.find((e) => e.group === 'golden') as Entry;
    expect(golden.bytes.length).toBe(6330);
    expect(byId.get(golden.id)).toMatchObject({ ok: true, reencodeIdentical: true, checksum: 'fnv1a64:2b8b6097eaed6a91', step: '8' });
  });

  it('gives every malformed-corpus case the outcome, code, category and error context of @llmcp/format', async ({ annotate }) => {
    const { total, accepted, mismatches } = compare('corpus');
    await annotate(`corpus: ${total - mismatches.length}/${total} cases agree (${accepted} accepted, ${total - accepted} rejected)`);
    expect(total).toBe(loadManifest().cases.length);
    expect(mismatches).toEqual([]);
  });

  it('round-trips trainer checkpoints byte for byte', async ({ annotate }) => {
    const { total, accepted, mismatches } = compare('trainer');
    await annotate(`trainer: ${accepted}/${total} checkpoints decoded and re-encoded identically`);
    expect(total).toBeGreaterThanOrEqual(2);
    expect(accepted).toBe(total);
    expect(mismatches).toEqual([]);
  });

  it('decodes the same way without numpy (pure-Python path)', async ({ annotate }) => {
    const r = py.results.find((x) => x.id === 'no-numpy') as { compared: number; differ: string[] } | undefined;
    if (py.numpy === null) {
      await annotate('numpy absent: every result above came from the pure-Python path');
      return;
    }
    await annotate(`without numpy: ${r?.compared ?? 0} files decoded again, ${r?.differ.length ?? 'n/a'} differ`);
    expect(r?.differ).toEqual([]);
    expect(r?.compared).toBeGreaterThan(800);
  });

  it('round-trips random valid states byte for byte', async ({ annotate }) => {
    const { total, accepted, mismatches } = compare('random');
    await annotate(`random states: ${accepted}/${total} decoded and re-encoded identically`);
    expect(accepted).toBe(total);
    expect(mismatches).toEqual([]);
  });

  it('reports the same code and context as @llmcp/format for thousands of hostile mutations', async ({ annotate }) => {
    const { total, accepted, mismatches } = compare('mutation');
    const codes = new Map<string, number>();
    for (const e of entries.filter((x) => x.group === 'mutation')) {
      const key = e.ts.ok ? 'accepted' : e.ts.error.code;
      codes.set(key, (codes.get(key) ?? 0) + 1);
    }
    const seconds = py.results.find((r) => r.id === 'job-seconds') as { seconds: number };
    await annotate(
      `mutations: ${total - mismatches.length}/${total} agree (${accepted} accepted); Python job ${seconds.seconds.toFixed(1)} s; ` +
        [...codes.entries()].sort((a, b) => b[1] - a[1]).map(([c, n]) => `${c} ${n}`).join(', '),
    );
    expect(total).toBe(MUTATIONS);
    expect(codes.size).toBeGreaterThanOrEqual(20);
    expect(mismatches.slice(0, 10)).toEqual([]);
  });
});
