/**
 * `pnpm bench:peers [--quick] [--rounds N] [--configs small,medium,large]`:
 * training throughput (f64 tokens/s of full training steps — forward,
 * backward, clip, AdamW — on the same batch) of llmcp against a PyTorch f64
 * implementation of the same decoder (torch_peer.py), for the small, medium
 * and large configurations, and xl on request (`--configs small,medium,large,xl`).
 *
 * Variants: llmcp with native kernels and with WebAssembly kernels
 * (`LLMCP_KERNELS=native|wasm`; native is skipped with a note when the
 * package reports it unavailable), 1 and 2 threads; PyTorch with OpenBLAS
 * (Debian's `libopenblas0-pthread`, selected for the PyTorch processes only
 * through `LD_LIBRARY_PATH`; the library actually mapped is reported), 1 and
 * 2 threads (`torch.set_num_threads`, `OPENBLAS_NUM_THREADS`). Every
 * measurement is its own process; rounds interleave the variants (rotating
 * their order), each process trains untimed first (2 s; large and xl 6 s:
 * `budgetFor`), and the table quotes the median of the rounds. Both implementations start from the same initial
 * weights and batch (written by llmcp), and PyTorch's step-1 loss is compared
 * with llmcp's.
 *
 * Beside them, llmcp's own torch engine (../../docs/engine-protocol.md), driven
 * through its protocol by torch_engine_peer.py: 1 and 2 ranks of one thread
 * on the CPU, and one rank on CUDA where PyTorch sees a GPU (skipped with a
 * note otherwise).
 *
 * A benchmark, not a test: nothing here asserts speed.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DecoderConfig } from '@llmcp/format';
import { formatConfigTable, formatKernelPaths, formatMachine, variantLabel, type Variant, type VariantOutcome } from './report.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const PEER_STEP = path.join(root, 'packages', 'optim', 'bench', 'peer-step.ts');
const TORCH_PEER = path.join(here, 'torch_peer.py');
const TORCH_ENGINE_PEER = path.join(here, 'torch_engine_peer.py');
const PYTHON = '/usr/bin/python3';
const OPENBLAS_DIR = '/usr/lib/x86_64-linux-gnu/openblas-pthread';

/** One benchmark configuration. */
export interface PeerConfig {
  readonly name: string;
  readonly config: DecoderConfig;
  readonly context: number;
  readonly batch: number;
}

const shape = (V: number, D: number, H: number, F: number, L: number, P: number): DecoderConfig => ({
  vocabularySize: V,
  modelWidth: D,
  heads: H,
  feedForwardWidth: F,
  layers: L,
  maxPositions: P,
  ropeBase: 10000,
  rmsEpsilon: 1e-6,
});

/**
 * small V256/D32/H2/F128/L2 ctx32 b8; medium V512/D64/H4/F256/L2 ctx64 b8; large V2048/D128/H4/F512/L4 ctx128 b8;
 * xl V4096/D256/H8/F1024/L4 ctx256 b8 (5.2M parameters, seconds a step: run on request).
 */
export const PEER_CONFIGS: readonly PeerConfig[] = [
  { name: 'small', config: shape(256, 32, 2, 128, 2, 32), context: 32, batch: 8 },
  { name: 'medium', config: shape(512, 64, 4, 256, 2, 64), context: 64, batch: 8 },
  { name: 'large', config: shape(2048, 128, 4, 512, 4, 128), context: 128, batch: 8 },
  { name: 'xl', config: shape(4096, 256, 8, 1024, 4, 256), context: 256, batch: 8 },
];

/** The configurations run without --configs. */
export const DEFAULT_CONFIGS: readonly string[] = ['small', 'medium', 'large'];

/** Options of one run. */
export interface PeerOptions {
  readonly quick: boolean;
  readonly rounds: number;
  readonly configs: readonly string[];
  /** Variants to run (default: all six). */
  readonly variants?: readonly Variant[];
}

/**
 * Reads the command line.
 * @param argv - arguments after the script.
 * @returns the options.
 * @throws RangeError on an unknown argument or configuration.
 */
export function parsePeerArgs(argv: readonly string[]): PeerOptions {
  let quick = false;
  let rounds: number | null = null;
  let configs = [...DEFAULT_CONFIGS];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') continue;
    if (a === '--quick') quick = true;
    else if (a === '--rounds') rounds = Number(argv[++i]);
    else if (a === '--configs') configs = String(argv[++i]).split(',');
    else throw new RangeError(`bench:peers: unknown argument ${String(a)} (expected --quick, --rounds N, --configs ${PEER_CONFIGS.map((c) => c.name).join(',')})`);
  }
  for (const c of configs) if (!PEER_CONFIGS.some((p) => p.name === c)) throw new RangeError(`bench:peers: unknown configuration ${c}`);
  if (rounds !== null && !(Number.isInteger(rounds) && rounds >= 1)) throw new RangeError('bench:peers: --rounds needs an integer ≥ 1');
  return { quick, rounds: rounds ?? (quick ? 1 : 5), configs };
}

interface ChildResult {
  readonly tokensPerSecond: number;
  readonly msPerStep: number;
  readonly cpuMsPerStep?: number;
  readonly parameters: number;
  readonly firstLoss: number;
  readonly firstLossRelDiff?: number | null;
  readonly kernels?: unknown;
  readonly blasLibraries?: readonly string[];
  readonly blasInfo?: readonly string[];
  readonly threads: number;
}

function runChild(command: string, args: readonly string[], env: NodeJS.ProcessEnv): ChildResult | string {
  const r = spawnSync(command, args, { cwd: root, env, encoding: 'utf8', maxBuffer: 16 << 20 });
  const line = (r.stdout ?? '').split('\n').find((l) => l.startsWith('RESULT '));
  if (r.status !== 0 || line === undefined) {
    const why = (r.stderr ?? '').trim().split('\n').slice(-3).join(' | ') || `exit ${String(r.status ?? r.signal)}`;
    return why.slice(0, 300);
  }
  return JSON.parse(line.slice('RESULT '.length)) as ChildResult;
}

interface Budget {
  /** Untimed steps at least… */
  readonly warmup: number;
  /** …and untimed milliseconds at least. */
  readonly warmupMs: number;
  readonly minSteps: number;
  readonly budgetMs: number;
}

/**
 * What each process runs untimed, then timed. The warm-up is 2 s (large and
 * xl: 6 s) of training, so that the table gives the steady state of a long
 * run (thread-scaling.bench.ts warms up for the same reason): llmcp's worker threads each compile
 * their own code, and V8 keeps optimising the hot JavaScript over the first
 * hundred-odd steps (medium, 2 threads: the reference's block functions are
 * optimised some 75–275 steps in, each compile taking CPU from the two
 * training threads). `--quick` keeps a token warm-up: a smoke run, not a
 * measurement.
 */
function budgetFor(c: PeerConfig, quick: boolean): Budget {
  const large = c.name === 'large' || c.name === 'xl';
  if (quick) return { warmup: 1, warmupMs: 0, minSteps: large ? 1 : 3, budgetMs: large ? 0 : 300 };
  return { warmup: large ? 1 : 2, warmupMs: large ? 6000 : 2000, minSteps: large ? 3 : 5, budgetMs: 2500 };
}

function llmcpEnv(kernels: 'native' | 'wasm'): NodeJS.ProcessEnv {
  return { ...process.env, LLMCP_KERNELS: kernels };
}

function torchEnv(threads: number): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LD_LIBRARY_PATH: OPENBLAS_DIR, OPENBLAS_NUM_THREADS: String(threads), OMP_NUM_THREADS: String(threads) };
  // A core type or L2 size forced for another purpose would distort OpenBLAS: drop both together.
  if (env.OPENBLAS_CORETYPE !== undefined || env.OPENBLAS_L2_SIZE !== undefined) {
    delete env.OPENBLAS_CORETYPE;
    delete env.OPENBLAS_L2_SIZE;
  }
  return env;
}

function runVariant(v: Variant, c: PeerConfig, b: Budget, dump: string, firstLoss: number): ChildResult | string {
  const spec = { config: c.config, context: c.context, batch: c.batch, threads: v.threads, ...b, dump, llmcpFirstLoss: firstLoss };
  if (v.implementation === 'pytorch') return runChild(PYTHON, [TORCH_PEER, JSON.stringify(spec)], torchEnv(v.threads));
  if (v.implementation === 'torch-engine' || v.implementation === 'torch-engine-cuda') {
    const cuda = v.implementation === 'torch-engine-cuda';
    return runChild(PYTHON, [TORCH_ENGINE_PEER, JSON.stringify({ ...spec, device: cuda ? 'cuda' : 'cpu', dtype: cuda ? 'f32' : 'f64' })], torchEnv(1));
  }
  const llmcpSpec = { ...spec, dump: null };
  return runChild(process.execPath, ['--conditions=@llmcp/source', '--import', 'tsx', PEER_STEP, JSON.stringify(llmcpSpec)], llmcpEnv(v.implementation === 'llmcp-native' ? 'native' : 'wasm'));
}

/** The vector features of this CPU that decide llmcp's native path and OpenBLAS's kernels (Linux: /proc/cpuinfo; elsewhere none known). */
function cpuFlags(): string[] {
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8').split('\n').find((l) => l.startsWith('flags'));
    const flags = new Set((line ?? '').split(':')[1]?.trim().split(/\s+/) ?? []);
    return ['avx512f', 'avx2', 'fma'].filter((f) => flags.has(f));
  } catch {
    return [];
  }
}

/** The kernel kind a child's `kernelInfo()` reported ('native-avx2', 'wasm-simd', …), or what it said otherwise. */
function kernelKind(kernels: unknown): string {
  const kind = (kernels as { kind?: unknown } | null | undefined)?.kind;
  return typeof kind === 'string' ? kind : JSON.stringify(kernels ?? null);
}

/** Whether a `kernelInfo()` report says native kernels are the ones running. */
export function nativeActive(kernels: unknown): boolean {
  if (kernels === null || kernels === undefined) return false;
  // @llmcp/model's KernelInfo: `kind` is what runs ('native-avx512', 'native-avx2', 'native-scalar', 'wasm-simd', 'js-scalar').
  const kind = (kernels as { kind?: unknown }).kind;
  if (typeof kind === 'string') return kind.startsWith('native');
  const text = JSON.stringify(kernels).toLowerCase();
  return text.includes('native') && !/"available"\s*:\s*false|unavailable|not available|"active"\s*:\s*"wasm"|"backend"\s*:\s*"wasm"/.test(text);
}

const ALL_VARIANTS: readonly Variant[] = [
  { implementation: 'llmcp-native', threads: 1 },
  { implementation: 'llmcp-native', threads: 2 },
  { implementation: 'llmcp-wasm', threads: 1 },
  { implementation: 'llmcp-wasm', threads: 2 },
  { implementation: 'pytorch', threads: 1 },
  { implementation: 'pytorch', threads: 2 },
  { implementation: 'torch-engine', threads: 1 },
  { implementation: 'torch-engine', threads: 2 },
  { implementation: 'torch-engine-cuda', threads: 1 },
];

/**
 * Runs the benchmark and returns the printed lines.
 * @param options - what to run.
 * @param log - receives each line as it is printed.
 * @returns every line.
 */
export function runPeers(options: PeerOptions, log: (line: string) => void = (l) => console.log(l)): string[] {
  const lines: string[] = [];
  const say = (l: string): void => {
    lines.push(l);
    log(l);
  };
  const la = (): string => loadavg().map((x) => x.toFixed(2)).join(' ');
  const configs = PEER_CONFIGS.filter((c) => options.configs.includes(c.name));
  const variants = [...(options.variants ?? ALL_VARIANTS)];
  say(`bench:peers — f64 training throughput (forward + backward + clip + AdamW, same batch every step)${options.quick ? ', quick mode' : ''}; ${options.rounds} round(s), each measurement its own process, median of rounds`);
  say(`load average before: ${la()}`);
  const machine = formatMachine(cpus()[0]?.model ?? 'unknown', cpus().length, cpuFlags());
  say(machine);
  const skipped = new Map<string, string>();
  const scratch = mkdtempSync(path.join(tmpdir(), 'llmcp-bench-peers-'));
  try {
    // Probe: are native kernels there, and is torch?
    if (variants.some((v) => v.implementation === 'llmcp-native')) {
      const probe = runChild(process.execPath, ['--conditions=@llmcp/source', '--import', 'tsx', PEER_STEP, JSON.stringify({ config: shape(5, 4, 2, 4, 1, 2), context: 2, batch: 1, threads: 1, warmup: 0, minSteps: 1, budgetMs: 0, dump: null })], llmcpEnv('native'));
      if (typeof probe === 'string') skipped.set('llmcp-native', `skipped: LLMCP_KERNELS=native failed (${probe})`);
      else if (probe.kernels === null || probe.kernels === undefined) skipped.set('llmcp-native', 'skipped: @llmcp/model has no kernelInfo() (no native kernels yet)');
      else if (!nativeActive(probe.kernels)) skipped.set('llmcp-native', `skipped: native kernels unavailable (kernelInfo ${JSON.stringify(probe.kernels)})`);
      else say(`native kernels: ${JSON.stringify(probe.kernels)}`);
    }
    if (variants.some((v) => v.implementation === 'pytorch' || v.implementation.startsWith('torch-engine'))) {
      const t = spawnSync(PYTHON, ['-c', 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)'], { encoding: 'utf8' });
      if (!existsSync(PYTHON) || (t.status !== 0 && t.status !== 3)) {
        for (const which of ['pytorch', 'torch-engine', 'torch-engine-cuda']) skipped.set(which, `skipped: ${PYTHON} has no torch (apt-get install python3-torch)`);
      } else {
        if (t.status === 3) skipped.set('torch-engine-cuda', 'skipped: PyTorch sees no CUDA GPU on this machine');
        if (!existsSync(path.join(OPENBLAS_DIR, 'libblas.so.3'))) say(`note: ${OPENBLAS_DIR} missing (apt-get install libopenblas0-pthread); PyTorch runs with the system BLAS`);
      }
    }
    const outcomes = new Map<string, { rounds: number[]; cpuRounds: number[]; failed: string | null }>();
    const key = (c: PeerConfig, v: Variant): string => `${c.name}/${v.implementation}/${v.threads}`;
    const meta = new Map<string, string[]>();
    const kinds = new Map<string, string>();
    const firstLoss = new Map<string, { loss: number; parameters: number; dump: string }>();
    for (const c of configs) {
      const dump = path.join(scratch, c.name);
      const r = runChild(process.execPath, ['--conditions=@llmcp/source', '--import', 'tsx', PEER_STEP, JSON.stringify({ config: c.config, context: c.context, batch: c.batch, threads: 1, warmup: 0, minSteps: 1, budgetMs: 0, dump })], llmcpEnv('wasm'));
      if (typeof r === 'string') throw new Error(`bench:peers: llmcp failed on ${c.name}: ${r}`);
      firstLoss.set(c.name, { loss: r.firstLoss, parameters: r.parameters, dump });
    }
    for (let round = 0; round < options.rounds; round++) {
      for (const c of configs) {
        const b = budgetFor(c, options.quick);
        const f = firstLoss.get(c.name)!;
        // Rotate the order each round so no variant always runs first (or right after another).
        const order = variants.map((_, i) => variants[(i + round) % variants.length]!);
        for (const v of order) {
          if (skipped.has(v.implementation)) continue;
          const k = key(c, v);
          const o = outcomes.get(k) ?? { rounds: [], cpuRounds: [], failed: null };
          outcomes.set(k, o);
          if (o.failed !== null) continue;
          const r = runVariant(v, c, b, f.dump, f.loss);
          if (typeof r === 'string') {
            o.failed = `failed: ${r}`;
            continue;
          }
          o.rounds.push(r.tokensPerSecond);
          if (r.cpuMsPerStep !== undefined && r.cpuMsPerStep > 0) o.cpuRounds.push((r.tokensPerSecond * r.msPerStep) / r.cpuMsPerStep);
          if (v.implementation !== 'pytorch' && !kinds.has(k)) kinds.set(k, kernelKind(r.kernels));
          if (round === 0) {
            const m: string[] = [];
            if (r.parameters !== f.parameters) m.push(`PARAMETER COUNT DIFFERS: ${r.parameters} vs llmcp ${f.parameters}`);
            if (v.implementation !== 'llmcp-native' && v.implementation !== 'llmcp-wasm') {
              m.push(`parameters ${r.parameters} (llmcp ${f.parameters}); step-1 loss ${r.firstLoss} vs llmcp ${f.loss}: relative difference ${r.firstLossRelDiff?.toExponential(2) ?? '?'}`);
              const how = v.implementation === 'pytorch' ? `torch ${(r.blasInfo ?? []).join(' ')}; torch threads ${r.threads}` : `${r.threads} rank${r.threads === 1 ? '' : 's'} of one thread`;
              m.push(`BLAS mapped: ${(r.blasLibraries ?? []).join(', ') || 'none found in /proc/self/maps'}; ${how}`);
            } else if (r.kernels !== null && r.kernels !== undefined) m.push(`kernels: ${JSON.stringify(r.kernels)}`);
            if (m.length > 0) meta.set(k, m);
          }
        }
      }
    }
    for (const c of configs) {
      const list: VariantOutcome[] = variants.map((v) => {
        const o = outcomes.get(key(c, v));
        return { variant: v, rounds: o?.rounds ?? [], cpuRounds: o?.cpuRounds ?? [], skipped: skipped.get(v.implementation) ?? o?.failed ?? null };
      });
      const { vocabularySize: V, modelWidth: D, heads: H, feedForwardWidth: F, layers: L } = c.config;
      say('');
      for (const l of formatConfigTable(`${c.name}: V${V} D${D} H${H} F${F} L${L} ctx${c.context} b${c.batch} (${c.batch * c.context} tokens/step, ${firstLoss.get(c.name)!.parameters} parameters)`, list)) say(l);
      say(`  ${formatKernelPaths(variants.map((v) => ({ variant: v, kind: kinds.get(key(c, v)) ?? null })))}`);
      say(`  ${machine}`);
      for (const v of variants) for (const m of meta.get(key(c, v)) ?? []) say(`  ${variantLabel(v)}: ${m}`);
    }
    say('');
    say('llmcp-wasm = WebAssembly SIMD matrix kernel (LLMCP_KERNELS=wasm); PyTorch f64 with the BLAS named above.');
    say("torch-engine ×N = llmcp's torch engine (python -m llmcp.engine) through its protocol: N ranks of one thread each (gloo), f64; torch-engine-cuda: one rank on a GPU, f32. The best-against-best ratio compares the llmcp engine's kernels with PyTorch.");
    say('tokens/s is wall time (median step of each process, median of rounds); tok/CPU-s divides by the process CPU time of a step (all threads), which a busy machine distorts less.');
    const warmups = configs.map((c) => `${c.name} ${budgetFor(c, options.quick).warmupMs / 1000} s`).join(', ');
    say(options.quick ? 'quick: one untimed step per process, then a short window (a smoke run, not a measurement).' : `each process trains untimed before it times anything (${warmups}): the steady state of a long run.`);
    say(`load average after: ${la()}`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return lines;
}

const isMain = process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  try {
    runPeers(parsePeerArgs(process.argv.slice(2)));
  } catch (e) {
    console.error(e instanceof Error ? e.message : String(e));
    process.exit(1);
  }
}
