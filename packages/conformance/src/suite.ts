/**
 * The conformance suite: the golden fixture (decoded summary, byte-identical
 * re-encoding, encoder canonicalisation) and every malformed-corpus case of
 * the manifest (accept/reject and category), run against any
 * {@link ConformanceAdapter}. Test-runner agnostic: it returns results; this
 * repository's tests turn each into a vitest case.
 */
import type { CheckpointState, MomentState } from '@llmcp/format';
import { sha256Hex } from '@llmcp/tokenizer';
import type { ConformanceAdapter, DecodeOutcome } from './adapter.ts';
import { fixturesDirectory, loadFixture, loadManifest, type ConformanceManifest, type ManifestCase } from './manifest.ts';
import { summarizeCheckpoint } from './summary.ts';

/** Outcome of one case. */
export interface CaseResult {
  readonly id: string;
  readonly group: 'golden' | 'encoder' | 'corpus';
  readonly title: string;
  readonly passed: boolean;
  /** What conformance requires, in words. */
  readonly expected: string;
  /** What the implementation did. */
  readonly actual: string;
}

/** A runnable case. */
export interface ConformanceCase {
  readonly id: string;
  readonly group: CaseResult['group'];
  readonly title: string;
  run(adapter: ConformanceAdapter): Promise<CaseResult>;
}

/** Suite totals and every result. */
export interface ConformanceReport {
  readonly adapter: string;
  readonly passed: number;
  readonly failed: number;
  readonly results: readonly CaseResult[];
}

/** Options of {@link listConformanceCases} / {@link runConformanceSuite}. */
export interface SuiteOptions {
  /** Fixtures directory holding manifest.json (default: this package's `fixtures/`). */
  readonly fixturesDirectory?: string;
}

function firstByteDifference(a: Uint8Array, b: Uint8Array): string | undefined {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i] !== b[i]) return `first difference at offset ${i}: expected 0x${(b[i] as number).toString(16).padStart(2, '0')}, got 0x${(a[i] as number).toString(16).padStart(2, '0')}`;
  }
  return a.length === b.length ? undefined : `length ${a.length}, expected ${b.length}`;
}

/**
 * First differing path between two JSON-able values.
 *
 * @param actual - the value found.
 * @param expected - the value wanted.
 * @param at - the path of these values inside the documents compared (`$` at the top).
 * @returns `<path>: expected <json>, got <json>` for the first difference (keys in order), or undefined when they are equal.
 */
export function firstJsonDifference(actual: unknown, expected: unknown, at = '$'): string | undefined {
  if (Object.is(actual, expected)) return undefined;
  if (typeof actual !== 'object' || typeof expected !== 'object' || actual === null || expected === null || Array.isArray(actual) !== Array.isArray(expected)) {
    return `${at}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`;
  }
  const keys = new Set([...Object.keys(actual), ...Object.keys(expected)]);
  for (const key of keys) {
    const d = firstJsonDifference((actual as Record<string, unknown>)[key], (expected as Record<string, unknown>)[key], Array.isArray(expected) ? `${at}[${key}]` : `${at}.${key}`);
    if (d !== undefined) return d;
  }
  return undefined;
}

async function safeDecode(adapter: ConformanceAdapter, bytes: Uint8Array): Promise<DecodeOutcome | { readonly ok: 'threw'; readonly error: string }> {
  try {
    return await adapter.decode(bytes);
  } catch (e) {
    return { ok: 'threw', error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
}

async function safeEncode(adapter: ConformanceAdapter, state: CheckpointState): Promise<Uint8Array | string> {
  try {
    return await adapter.encode(state);
  } catch (e) {
    return e instanceof Error ? `encode threw ${e.name}: ${e.message}` : `encode threw ${String(e)}`;
  }
}

function describeOutcome(o: DecodeOutcome | { readonly ok: 'threw'; readonly error: string }): string {
  if (o.ok === 'threw') return `threw ${o.error}`;
  return o.ok ? 'accepted' : `rejected as ${o.category}${o.code === undefined ? '' : ` (${o.code})`}${o.message === undefined ? '' : `: ${o.message}`}`;
}

function result(c: Pick<ConformanceCase, 'id' | 'group' | 'title'>, verdict: Pick<CaseResult, 'expected' | 'actual' | 'passed'>): CaseResult {
  return { id: c.id, group: c.group, title: c.title, ...verdict };
}

/** Golden state with moments and group lists handed to the encoder in a non-canonical order. */
function scrambled(state: CheckpointState): CheckpointState {
  const moments: MomentState[] = [...state.optimizer.moments].reverse();
  const groups = state.optimizer.groups === null ? null : { decay: [...state.optimizer.groups.decay].reverse(), noDecay: [...state.optimizer.groups.noDecay].reverse() };
  return { ...state, optimizer: { ...state.optimizer, moments, groups } };
}

function withNegativeZero(state: CheckpointState): CheckpointState {
  const parameters = state.parameters.map((p, i) => {
    if (i !== 1) return p;
    const data = p.data.slice();
    data[0] = -0;
    return { ...p, data };
  });
  return { ...state, parameters };
}

function goldenCases(manifest: ConformanceManifest, golden: Uint8Array): ConformanceCase[] {
  const decodeGolden = async (adapter: ConformanceAdapter): Promise<CheckpointState | string> => {
    const o = await safeDecode(adapter, golden);
    return o.ok === true ? o.state : describeOutcome(o);
  };
  const encodeCheck = (id: string, title: string, prepare: (s: CheckpointState) => CheckpointState): ConformanceCase => {
    const c = { id, group: 'encoder' as const, title };
    return {
      ...c,
      async run(adapter) {
        const state = await decodeGolden(adapter);
        if (typeof state === 'string') return result(c, { expected: 'golden decodes', actual: state, passed: false });
        const bytes = await safeEncode(adapter, prepare(state));
        if (typeof bytes === 'string') return result(c, { expected: `the ${golden.length} golden bytes`, actual: bytes, passed: false });
        const diff = firstByteDifference(bytes, golden);
        return result(c, { expected: `the ${golden.length} golden bytes`, actual: diff ?? 'identical bytes', passed: diff === undefined });
      },
    };
  };
  return [
    {
      id: 'golden-integrity',
      group: 'golden',
      title: `${manifest.golden.file} matches its manifest entry (size, SHA-256)`,
      async run() {
        const actual = `${golden.length} bytes, sha256 ${sha256Hex(golden)}`;
        const expected = `${manifest.golden.size} bytes, sha256 ${manifest.golden.sha256}`;
        return result(this, { expected, actual, passed: actual === expected });
      },
    },
    {
      id: 'golden-decode',
      group: 'golden',
      title: 'golden file decodes to the expected state (every value, bit pattern and tensor hash)',
      async run(adapter) {
        const state = await decodeGolden(adapter);
        if (typeof state === 'string') return result(this, { expected: 'accepted', actual: state, passed: false });
        const diff = firstJsonDifference(summarizeCheckpoint(state), manifest.golden.expected);
        return result(this, { expected: 'summary equal to manifest golden.expected', actual: diff ?? 'equal', passed: diff === undefined });
      },
    },
    encodeCheck('golden-reencode', 'decode → encode reproduces the golden bytes', (s) => s),
    encodeCheck('encoder-sorts', 'encoder sorts optimizer records and group lists itself (given reversed)', scrambled),
    {
      id: 'encoder-deterministic',
      group: 'encoder',
      title: 'encoding the same state twice gives identical bytes',
      async run(adapter) {
        const state = await decodeGolden(adapter);
        if (typeof state === 'string') return result(this, { expected: 'golden decodes', actual: state, passed: false });
        const a = await safeEncode(adapter, state);
        const b = await safeEncode(adapter, state);
        if (typeof a === 'string' || typeof b === 'string') return result(this, { expected: 'two encodings', actual: typeof a === 'string' ? a : String(b), passed: false });
        const diff = firstByteDifference(a, b);
        return result(this, { expected: 'identical', actual: diff ?? 'identical', passed: diff === undefined });
      },
    },
    {
      id: 'encoder-negative-zero',
      group: 'encoder',
      title: 'negative zero survives encode → decode (bit pattern 0x8000000000000000)',
      async run(adapter) {
        const state = await decodeGolden(adapter);
        if (typeof state === 'string') return result(this, { expected: 'golden decodes', actual: state, passed: false });
        const bytes = await safeEncode(adapter, withNegativeZero(state));
        if (typeof bytes === 'string') return result(this, { expected: 'encodes', actual: bytes, passed: false });
        const back = await safeDecode(adapter, bytes);
        if (back.ok !== true) return result(this, { expected: 'accepted', actual: describeOutcome(back), passed: false });
        const value = back.state.parameters[1]?.data[0];
        return result(this, { expected: '-0', actual: Object.is(value, -0) ? '-0' : String(value), passed: Object.is(value, -0) });
      },
    },
  ];
}

function corpusCase(entry: ManifestCase, directory: string): ConformanceCase {
  const c = { id: entry.id, group: 'corpus' as const, title: `${entry.change} [${entry.spec}]` };
  return {
    ...c,
    async run(adapter) {
      const bytes = loadFixture(entry.file, directory);
      if (sha256Hex(bytes) !== entry.sha256) return result(c, { expected: `fixture sha256 ${entry.sha256}`, actual: `fixture sha256 ${sha256Hex(bytes)} (corrupted fixture)`, passed: false });
      const outcome = await safeDecode(adapter, bytes);
      const e = entry.expect;
      if (e.outcome === 'accept') {
        if (outcome.ok !== true) return result(c, { expected: 'accepted and re-encoded identically', actual: describeOutcome(outcome), passed: false });
        const again = await safeEncode(adapter, outcome.state);
        if (typeof again === 'string') return result(c, { expected: 'accepted and re-encoded identically', actual: again, passed: false });
        const diff = firstByteDifference(again, bytes);
        return result(c, { expected: 'accepted and re-encoded identically', actual: diff === undefined ? 'accepted, identical re-encoding' : `accepted, re-encoding differs: ${diff}`, passed: diff === undefined });
      }
      const allowed = [e.category, ...(e.alsoAccepted ?? [])];
      const expected = `rejected as ${allowed.join(' or ')}`;
      const passed = outcome.ok === false && allowed.includes(outcome.category);
      return result(c, { expected, actual: describeOutcome(outcome), passed });
    },
  };
}

/**
 * Every case of the suite, in order: golden, encoder, then the corpus.
 * @param options - fixtures location.
 * @returns the cases.
 */
export function listConformanceCases(options: SuiteOptions = {}): ConformanceCase[] {
  const directory = options.fixturesDirectory ?? fixturesDirectory();
  const manifest = loadManifest(directory);
  const golden = loadFixture(manifest.golden.file, directory);
  return [...goldenCases(manifest, golden), ...manifest.cases.map((entry) => corpusCase(entry, directory))];
}

/**
 * Runs the whole suite against an implementation.
 * @param adapter - the implementation under test.
 * @param options - fixtures location.
 * @returns totals and one result per case.
 * @example
 * ```ts
 * const report = await runConformanceSuite(createFormatAdapter());
 * console.log(`${report.passed} passed, ${report.failed} failed`);
 * ```
 */
export async function runConformanceSuite(adapter: ConformanceAdapter, options: SuiteOptions = {}): Promise<ConformanceReport> {
  const results: CaseResult[] = [];
  for (const c of listConformanceCases(options)) results.push(await c.run(adapter));
  const passed = results.filter((r) => r.passed).length;
  return { adapter: adapter.name, passed, failed: results.length - passed, results };
}
