/**
 * Exports and imports of hostile-but-valid checkpoints: every file here
 * passes every LLMCP35 rule, and each pushes a foreign format to its edge —
 * a BPE merge chain whose last token spells up to 2^64 bytes, merge tables
 * in which two ids spell the same bytes, literal pieces that are not UTF-8,
 * a 0-layer model's feed-forward width and any model's context length at any
 * u64 (2^53, 2^60, 2^64 − 1), RoPE bases and epsilons beyond f32, weights
 * beyond f16 and f32 (subnormals, −0, 1e300), steps beyond the i32 of an
 * ANDREA .bin. Each case runs every export (safetensors f64, f32 and with
 * moments; andrea-bin with its config, imported back; gguf f32 and f16;
 * hf f64 and f32) through the real CLI in one process, and each must
 * either write an output that verifies in its own format — with every
 * u64 written exactly — or refuse with a typed error (exit 3), leaving no
 * file and no temporary behind.
 *
 * The generator is a fast-check arbitrary: the CI slice draws from it with
 * `fc.assert`, the soak with `fc.sample` under a campaign seed, in worker
 * processes whose time and memory the campaign bounds.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { decodeCheckpoint, encodeCheckpoint, expectedParameterShapes, type CheckpointState, type DecoderConfig, type NamedTensor, type TokenizerState } from '@llmcp/format';
import { runCli } from '@llmcp/cli';

/** A case: a valid checkpoint and what makes it hostile. */
export interface ExportCase {
  readonly state: CheckpointState;
  readonly traits: readonly string[];
}

const U64_MAX = (1n << 64n) - 1n;
const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** A size that may be any u64: small, or one of the edges above 2^53 − 1. */
const u64Size = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 12 }).map((n) => ({ value: BigInt(n), trait: null as string | null })) },
  { weight: 2, arbitrary: fc.oneof(fc.constantFrom(SAFE + 1n, 1n << 60n, U64_MAX), fc.bigInt({ min: SAFE + 1n, max: U64_MAX })).map((value) => ({ value, trait: 'u64-size' as string | null })) },
);

/** A BPE table: random valid merges, or a chain joining a token with itself (or a neighbour) `depth` times. */
const bpeTable = fc.oneof(
  fc.array(fc.tuple(fc.nat(), fc.nat()), { minLength: 1, maxLength: 24 }).map((picks) => {
    const pairs: [number, number][] = [];
    const seen = new Set<number>();
    for (const [x, y] of picks) {
      // A small alphabet (a, b, c) and the merges so far: repeats of the same bytes by two ids are common.
      const available = 3 + pairs.length;
      const id = (v: number): number => (v % available < 3 ? 97 + (v % available) : 256 + (v % available) - 3);
      const pair: [number, number] = [id(x), id(y)];
      if (seen.has(pair[0] * 65536 + pair[1])) continue;
      seen.add(pair[0] * 65536 + pair[1]);
      pairs.push(pair);
    }
    return { pairs, trait: 'bpe' };
  }),
  fc.tuple(fc.integer({ min: 1, max: 64 }), fc.boolean()).map(([depth, withNeighbour]) => {
    const pairs: [number, number][] = [[97, 97]];
    for (let r = 1; r < depth; r++) pairs.push([255 + r, withNeighbour && r % 3 === 0 ? 97 : 255 + r]);
    // 2^depth bytes for the last token: within the exports' limit up to about 24, far beyond it from 30.
    return { pairs, trait: depth <= 12 ? 'bpe-chain-short' : depth <= 24 ? 'bpe-chain-long' : 'bpe-chain-exponential' };
  }),
);

/** A literal vocabulary: distinct non-empty pieces of any bytes (quotes, backslashes, control bytes, invalid UTF-8, BOS-like text). */
const literalTable = fc
  .uniqueArray(
    fc.oneof(
      fc.uint8Array({ minLength: 1, maxLength: 6 }),
      fc.constantFrom('<|begin_of_text|>', '"', '\\', '\u0000', '\uFFFD', ' ').map((t) => new TextEncoder().encode(t)),
    ),
    { minLength: 2, maxLength: 12, selector: (b) => Array.from(b).join(',') },
  )
  .map((pieces) => ({ pieces, trait: 'literal' }));

/** Parameter values: what f16 and f32 cannot hold, and the bit patterns an exporter must keep. */
const valueKind = fc.constantFrom('ordinary', 'huge', 'tiny', 'negative-zero', 'beyond-f16');

function fill(kind: string, n: number, salt: number): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const base = Math.sin(i * 12.9898 + salt) * 0.5;
    out[i] = kind === 'huge' ? base * 1e300 : kind === 'tiny' ? base * 1e-310 : kind === 'negative-zero' ? (i % 2 === 0 ? -0 : base) : kind === 'beyond-f16' ? base * 1e6 : base;
  }
  return out;
}

/**
 * Hostile-but-valid checkpoints (see the module comment).
 *
 * @returns the arbitrary; every value passes `encodeCheckpoint`.
 */
export function hostileCheckpoint(): fc.Arbitrary<ExportCase> {
  return fc
    .record({
      tokenizer: fc.oneof(bpeTable, literalTable),
      layers: fc.constantFrom(0, 0, 1),
      heads: fc.integer({ min: 1, max: 2 }),
      headPairs: fc.integer({ min: 1, max: 2 }),
      feedForward: u64Size,
      maxPositions: u64Size,
      ropeBase: fc.constantFrom(10000, 5e-324, 1e308, 3.5e38, 1.5),
      rmsEpsilon: fc.constantFrom(1e-6, 0, 5e-324, 1e300),
      values: valueKind,
      step: fc.oneof(fc.constant(0n), fc.bigInt({ min: 1n, max: 100n }), fc.constantFrom(2n ** 31n - 1n, 2n ** 31n, U64_MAX >> 1n)),
      rng: fc.bigInt({ min: 0n, max: U64_MAX }),
    })
    .map((r) => {
      const traits: string[] = [r.tokenizer.trait, r.values];
      const tokenizer: TokenizerState = 'pairs' in r.tokenizer ? { kind: 'bpe', pairs: r.tokenizer.pairs } : { kind: 'literal', pieces: r.tokenizer.pieces };
      const vocabularySize = tokenizer.kind === 'bpe' ? 258 + tokenizer.pairs.length : tokenizer.pieces.length;
      const modelWidth = r.heads * 2 * r.headPairs;
      // F beyond a few units only for a 0-layer model (it sizes no tensor then); the context length is free.
      const ff = r.layers === 0 ? r.feedForward : { value: BigInt(Math.min(Number(r.feedForward.value), 6)), trait: null };
      const mp = r.layers === 0 ? r.maxPositions : { value: BigInt(Math.min(Number(r.maxPositions.value), 8)), trait: null };
      for (const t of [ff.trait, mp.trait]) if (t !== null) traits.push(t);
      const exact = {
        ...(ff.value > SAFE ? { feedForwardWidth: ff.value } : {}),
        ...(mp.value > SAFE ? { maxPositions: mp.value } : {}),
      };
      const decoder: DecoderConfig = {
        vocabularySize,
        modelWidth,
        heads: r.heads,
        feedForwardWidth: Number(ff.value),
        layers: r.layers,
        maxPositions: Number(mp.value),
        ropeBase: r.ropeBase,
        rmsEpsilon: r.rmsEpsilon,
        ...(Object.keys(exact).length === 0 ? {} : { exact }),
      };
      if (r.ropeBase > 3.4e38 || r.rmsEpsilon > 3.4e38) traits.push('beyond-f32-hyperparameter');
      const parameters: NamedTensor[] = expectedParameterShapes(decoder).map((s, k) => ({ name: s.name, shape: [...s.shape], data: fill(r.values, s.shape.reduce((a, b) => a * b, 1), k) }));
      const step = r.step;
      if (step > 2n ** 31n - 1n) traits.push('step-beyond-i32');
      const moments = step === 0n ? [] : parameters.map((p) => ({ name: p.name, shape: p.shape, first: p.data.map((x) => x / 3), second: p.data.map((x) => x * x) }));
      const state: CheckpointState = {
        tokenizer,
        decoder,
        parameters,
        optimizer: {
          config: { learningRate: 0.04, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01 },
          groups: null,
          step,
          beta1Power: step === 0n ? 1 : 0.5,
          beta2Power: step === 0n ? 1 : 0.25,
          moments,
        },
        selectedStep: step,
        samplingRngState: r.rng,
      };
      return { state, traits };
    })
    .filter((c) => {
      try {
        encodeCheckpoint(c.state);
        return true;
      } catch {
        return false;
      }
    });
}

/** One export of a case, and how to check what it wrote. */
interface Target {
  readonly name: string;
  /** The command line, given the checkpoint file and the output path. */
  readonly args: (input: string, out: string) => string[];
  /** Outputs the command writes under `out` (files, or one directory). */
  readonly directory: boolean;
}

const TARGETS: readonly Target[] = [
  { name: 'safetensors', args: (i, o) => ['export', '--to', 'safetensors', i, '-o', o], directory: false },
  { name: 'safetensors-f32-moments', args: (i, o) => ['export', '--to', 'safetensors', i, '-o', o, '--dtype', 'f32', '--moments'], directory: false },
  { name: 'andrea-bin', args: (i, o) => ['export', '--to', 'andrea-bin', i, '-o', `${o}.bin`, '--config-out', `${o}.json`], directory: false },
  { name: 'gguf-f32', args: (i, o) => ['export', '--to', 'gguf', i, '-o', o], directory: false },
  { name: 'gguf-f16', args: (i, o) => ['export', '--to', 'gguf', i, '-o', o, '--dtype', 'f16'], directory: false },
  { name: 'hf-f64', args: (i, o) => ['export', '--to', 'hf', i, o], directory: true },
  { name: 'hf-f32', args: (i, o) => ['export', '--to', 'hf', i, o, '--dtype', 'f32'], directory: true },
];

/** The export targets' names. */
export const EXPORT_TARGETS: readonly string[] = TARGETS.map((t) => t.name);

interface Captured {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

async function cli(argv: readonly string[], cwd: string): Promise<Captured> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    stdout: { write: (s: string) => ((stdout += s), true) },
    stderr: { write: (s: string) => ((stderr += s), true) },
    env: { NO_COLOR: '1' },
    cwd,
  });
  return { code, stdout, stderr };
}

/** How one export of one case ended: `ok` (written and verified) or the refusal's first line; `problem` when an invariant broke. */
export interface TargetOutcome {
  readonly target: string;
  readonly outcome: string;
  readonly problem: string | null;
  readonly ms: number;
}

const sizeDigits = (d: DecoderConfig, field: 'feedForwardWidth' | 'maxPositions'): string => String(d.exact?.[field] ?? d[field]);

/** What must hold of a written output (null when it does), checked in its own format. */
async function checkOutput(target: Target, out: string, c: ExportCase, dir: string): Promise<string | null> {
  const d = c.state.decoder;
  const verify = async (file: string): Promise<string | null> => {
    const v = await cli(['verify', file], dir);
    return v.code === 0 ? null : `llmcp verify ${path.basename(file)}: exit ${v.code}: ${v.stdout}${v.stderr}`.slice(0, 400);
  };
  if (target.name.startsWith('safetensors') || target.name.startsWith('gguf')) {
    const problem = await verify(out);
    if (problem !== null) return problem;
    if (target.name.startsWith('safetensors')) {
      const header = readFileSync(out).subarray(8, 8 + Number(readFileSync(out).readBigUInt64LE(0))).toString('utf8');
      const config = (JSON.parse(header) as { __metadata__: { decoder_config: string } }).__metadata__.decoder_config;
      for (const f of ['feedForwardWidth', 'maxPositions'] as const) if (!config.includes(`"${f}":${sizeDigits(d, f)}`)) return `decoder_config does not hold ${f} ${sizeDigits(d, f)} exactly: ${config}`;
    }
    return null;
  }
  if (target.name === 'andrea-bin') {
    const back = `${out}.back.llmcp`;
    const r = await cli(['import', '--from', 'andrea-bin', `${out}.bin`, '--config', `${out}.json`, '-o', back], dir);
    if (r.code !== 0) return `import of the export refused: ${r.stderr.split('\n')[0] ?? ''}`;
    const problem = await verify(back);
    if (problem !== null) return problem;
    const again = decodeCheckpoint(new Uint8Array(readFileSync(back)));
    for (const f of ['feedForwardWidth', 'maxPositions'] as const) if (sizeDigits(again.decoder, f) !== sizeDigits(d, f)) return `imported ${f} ${sizeDigits(again.decoder, f)}, the source has ${sizeDigits(d, f)}`;
    if (JSON.stringify(again.tokenizer, (_k, v: unknown) => (v instanceof Uint8Array ? Array.from(v) : v)) !== JSON.stringify(c.state.tokenizer, (_k, v: unknown) => (v instanceof Uint8Array ? Array.from(v) : v))) {
      return 'the imported tokenizer differs from the source';
    }
    return null;
  }
  // hf: a directory of JSON files and a safetensors file.
  const problem = await verify(path.join(out, 'model.safetensors'));
  if (problem !== null) return problem;
  const config = readFileSync(path.join(out, 'config.json'), 'utf8');
  JSON.parse(config);
  if (!config.includes(`"intermediate_size": ${sizeDigits(d, 'feedForwardWidth')},`)) return `config.json does not hold intermediate_size ${sizeDigits(d, 'feedForwardWidth')} exactly`;
  if (!config.includes(`"max_position_embeddings": ${sizeDigits(d, 'maxPositions')},`)) return `config.json does not hold max_position_embeddings ${sizeDigits(d, 'maxPositions')} exactly`;
  if (existsSync(path.join(out, 'tokenizer.json'))) JSON.parse(readFileSync(path.join(out, 'tokenizer.json'), 'utf8'));
  return null;
}

/**
 * Runs every export of one case in `dir` (made empty first) and checks each outcome.
 *
 * @param c - the case.
 * @param dir - a scratch folder of its own.
 * @returns one outcome per target.
 */
export async function runExportCase(c: ExportCase, dir: string): Promise<TargetOutcome[]> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const input = path.join(dir, 'case.llmcp');
  writeFileSync(input, encodeCheckpoint(c.state));
  const outcomes: TargetOutcome[] = [];
  for (const target of TARGETS) {
    const out = path.join(dir, `out-${target.name}`);
    const before = new Set(readdirSync(dir));
    const started = performance.now();
    let r: Captured;
    try {
      r = await cli(target.args(input, out), dir);
    } catch (e) {
      outcomes.push({ target: target.name, outcome: 'UNTYPED', problem: `runCli threw: ${String(e)}`, ms: performance.now() - started });
      continue;
    }
    const ms = performance.now() - started;
    const added = readdirSync(dir).filter((n) => !before.has(n));
    let problem: string | null = null;
    let outcome: string;
    if (r.code === 0) {
      outcome = 'ok';
      try {
        problem = await checkOutput(target, out, c, dir);
      } catch (e) {
        problem = `the output does not parse: ${String(e)}`;
      }
    } else {
      const line = r.stderr.split('\n')[0] ?? '';
      outcome = `exit ${r.code}`;
      if (r.code !== 3 || !/^llmcp export: error: /.test(line)) problem = `not a typed refusal (exit 3): ${r.stderr.slice(0, 400)}`;
      else if (/internal error/.test(r.stderr)) problem = `internal error: ${line}`;
      else if (added.length > 0) problem = `a refused export left ${added.join(', ')}`;
    }
    if (problem === null && added.some((n) => n.includes('.tmp-'))) problem = `a temporary file was left: ${added.join(', ')}`;
    outcomes.push({ target: target.name, outcome, problem, ms });
  }
  return outcomes;
}

/**
 * Case `index` of a campaign: one draw of {@link hostileCheckpoint} with a
 * seed of its own, so any case can be rebuilt from its number alone.
 *
 * @param seed - the campaign seed.
 * @param index - the case number.
 * @returns the case.
 */
export function caseAt(seed: number, index: number): ExportCase {
  return fc.sample(hostileCheckpoint(), { seed: (seed * 1_000_003 + index) | 0, numRuns: 1 })[0] as ExportCase;
}

/** Options of {@link runExportFuzzCampaign}. */
export interface ExportFuzzOptions {
  readonly cases: number;
  readonly seed: number;
  readonly jobs: number;
  /** A case that prints nothing for this long is a hang: its worker is killed and restarted after it (default 60 s). */
  readonly caseDeadlineMs?: number;
  /** The V8 heap of a worker (MiB): a case that needs more crashes its worker and is a failure (default 1536). */
  readonly heapMb?: number;
  readonly workDir: string;
  readonly onProgress?: (done: number, total: number) => void;
}

/** What a campaign found. */
export interface ExportFuzzReport {
  readonly cases: number;
  /** Outcomes per target: `ok` or the refusal's exit, counted. */
  readonly outcomes: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** Cases per trait. */
  readonly traits: Readonly<Record<string, number>>;
  /** The slowest command per target (ms). */
  readonly slowestMs: Readonly<Record<string, number>>;
  /** The highest peak resident memory of a worker (KiB). */
  readonly maxRssKb: number;
  readonly failures: readonly { readonly index: number; readonly kind: 'problem' | 'hang' | 'crash'; readonly detail: string }[];
}

/**
 * Runs a campaign in `jobs` worker processes, each watched: a case silent
 * past its deadline is a hang, a worker that dies (a heap beyond its limit,
 * a native abort) a crash; both are failures, and the worker restarts after
 * that case.
 *
 * @param options - size, seed, parallelism, bounds.
 * @returns the report.
 */
export async function runExportFuzzCampaign(options: ExportFuzzOptions): Promise<ExportFuzzReport> {
  const { SOURCE_NODE_ARGS, startChild } = await import('./proc.ts');
  const child = path.join(path.dirname(new URL(import.meta.url).pathname), 'export-fuzz-child.ts');
  const deadline = options.caseDeadlineMs ?? 60_000;
  const outcomes: Record<string, Record<string, number>> = {};
  const traits: Record<string, number> = {};
  const slowestMs: Record<string, number> = {};
  const failures: { index: number; kind: 'problem' | 'hang' | 'crash'; detail: string }[] = [];
  let maxRssKb = 0;
  let done = 0;
  const record = (line: string): number | null => {
    const doc = JSON.parse(line) as { index?: number; traits?: string[]; outcomes?: TargetOutcome[]; done?: boolean; maxRssKb?: number };
    if (doc.done === true) {
      maxRssKb = Math.max(maxRssKb, doc.maxRssKb ?? 0);
      return null;
    }
    for (const t of doc.traits ?? []) traits[t] = (traits[t] ?? 0) + 1;
    for (const o of doc.outcomes ?? []) {
      const row = (outcomes[o.target] ??= {});
      row[o.outcome] = (row[o.outcome] ?? 0) + 1;
      slowestMs[o.target] = Math.max(slowestMs[o.target] ?? 0, o.ms);
      if (o.problem !== null) failures.push({ index: doc.index ?? -1, kind: 'problem', detail: `${o.target}: ${o.problem}` });
    }
    done += 1;
    options.onProgress?.(done, options.cases);
    return doc.index ?? null;
  };
  const runRange = async (from: number, to: number): Promise<void> => {
    let next = from;
    while (next < to) {
      const worker = startChild(process.execPath, [...SOURCE_NODE_ARGS, `--max-old-space-size=${options.heapMb ?? 1536}`, child, JSON.stringify({ seed: options.seed, from: next, to, workDir: options.workDir })], {
        timeoutMs: (to - next) * deadline + 60_000,
      });
      let consumed = 0;
      let lastLife = performance.now();
      for (;;) {
        const lines = worker.stdout().split('\n');
        for (; consumed < lines.length - 1; consumed++) {
          const index = record(lines[consumed] as string);
          if (index !== null) next = index + 1;
          lastLife = performance.now();
        }
        if (!worker.alive()) break;
        if (performance.now() - lastLife > deadline) {
          worker.kill('SIGKILL');
          failures.push({ index: next, kind: 'hang', detail: `case ${next} printed nothing for ${deadline} ms` });
          next += 1;
          done += 1;
          break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      const exit = await worker.exited;
      const lines = exit.stdout.split('\n');
      for (; consumed < lines.length - 1; consumed++) {
        const index = record(lines[consumed] as string);
        if (index !== null) next = index + 1;
      }
      if (exit.code !== 0 && exit.signal !== 'SIGKILL' && next < to) {
        failures.push({ index: next, kind: 'crash', detail: `the worker died at case ${next}: exit ${exit.code}, signal ${exit.signal}: ${exit.stderr.slice(-400)}` });
        next += 1;
        done += 1;
      }
    }
  };
  const per = Math.ceil(options.cases / options.jobs);
  await Promise.all(Array.from({ length: options.jobs }, (_, j) => runRange(j * per, Math.min(options.cases, (j + 1) * per))).filter((_, j) => j * per < options.cases));
  return { cases: options.cases, outcomes, traits, slowestMs, maxRssKb, failures };
}

/**
 * The report as text (for `pnpm soak`).
 *
 * @param r - the report.
 * @returns lines.
 */
export function formatExportFuzzReport(r: ExportFuzzReport): string {
  const lines = [`exports and imports of hostile-but-valid checkpoints: ${r.cases} cases × ${EXPORT_TARGETS.length} exports (andrea-bin imported back)`];
  for (const target of EXPORT_TARGETS) {
    const row = r.outcomes[target] ?? {};
    lines.push(`  ${target.padEnd(24)} ${Object.entries(row).map(([k, n]) => `${k === 'ok' ? 'verified' : `refused (${k})`} ${n}`).join(', ')}; slowest ${((r.slowestMs[target] ?? 0) / 1000).toFixed(2)} s`);
  }
  lines.push(`  traits: ${Object.entries(r.traits).sort((a, b) => b[1] - a[1]).map(([t, n]) => `${t} ${n}`).join(', ')}`);
  lines.push(`  peak memory of a worker: ${(r.maxRssKb / 1024).toFixed(0)} MiB`);
  lines.push(`  failures: ${r.failures.length}`);
  for (const f of r.failures.slice(0, 8)) lines.push(`    case ${f.index} (${f.kind}): ${f.detail.split('\n')[0]}`);
  return lines.join('\n');
}
