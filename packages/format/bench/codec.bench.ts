/**
 * LLMCP35 codec benchmark (`pnpm bench format`): encode, decode+validate
 * (copies, and zero-copy views of an aligned input), atomic save (hash on a
 * worker, in-thread, and in-thread with a SHA-256 of the file taken from the
 * written bytes as the trainer does), and streaming load+validate (alone and
 * with a SHA-256 over the bytes read) of synthetic checkpoints at three
 * sizes: ≈25 MB (V2048/D128/H4/F512/L3), ≈252 MB (V8192/D256/H8/F1024/L8,
 * ~10.5M parameters) and, with `--large` (`pnpm bench format -- --large`),
 * ≈2.6 GB (V8192/D768/H12/F3072/L11): byte-level BPE, step 1000 with full
 * AdamW moments and groups. Every size is printed with the serial FNV-1a
 * kernel's own speed measured in the same run (the ceiling of save and
 * load) and each phase's ratio to it.
 *
 * Next to wall time, each phase reports the CPU time of its busiest thread
 * (Linux schedstat) and that as a rate relative to the FNV kernel's own CPU
 * rate: the critical path on an idle machine, which other processes on a
 * shared machine barely change (1.00 = nothing but the serial hash is left on
 * the busiest thread).
 *
 * Each phase runs in its own child process so its peak memory is its own:
 * the peak is the kernel's resident-set high-water mark (VmHWM, reset through
 * /proc/self/clear_refs just before the measured call; getrusage maxRSS where
 * that is unavailable), reported as "added" = peak − RSS just before the call.
 *
 * Targets on the 2-core reference machine (252 MB and up): load+validate,
 * atomic save and decode ≥ 850 MB/s, load peak added ≤ 1.1 × file size, save peak added bounded
 * (independent of the file size).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeCheckpoint, encodeCheckpoint, expectedParameterShapes, fnv1a64, SplitMix64, type CheckpointState, type DecoderConfig } from '../src/index.ts';
import { loadCheckpoint, saveCheckpointAtomic } from '../src/node.ts';

const SIZES: Record<string, DecoderConfig> = {
  '25MB': { vocabularySize: 2048, modelWidth: 128, heads: 4, feedForwardWidth: 512, layers: 3, maxPositions: 512, ropeBase: 10000, rmsEpsilon: 1e-5 },
  '252MB': { vocabularySize: 8192, modelWidth: 256, heads: 8, feedForwardWidth: 1024, layers: 8, maxPositions: 512, ropeBase: 10000, rmsEpsilon: 1e-5 },
  '2.6GB': { vocabularySize: 8192, modelWidth: 768, heads: 12, feedForwardWidth: 3072, layers: 11, maxPositions: 512, ropeBase: 10000, rmsEpsilon: 1e-5 },
};
let CONFIG = SIZES['252MB'] as DecoderConfig;
const MB = 1e6;
let REPEATS = 3;

function syntheticState(): CheckpointState {
  const rng = new SplitMix64(0x5eedn);
  const fill = (n: number, nonNegative: boolean): Float64Array => {
    const out = new Float64Array(n);
    // A cheap xorshift stream seeded from SplitMix64; values need only be finite.
    let s = Number(rng.nextU64() & 0xffffffffn) | 1;
    for (let i = 0; i < n; i++) {
      s ^= s << 13;
      s ^= s >>> 17;
      s ^= s << 5;
      const v = (s >>> 0) / 4294967296 - 0.5;
      out[i] = nonNegative ? v * v : v;
    }
    return out;
  };
  const shapes = expectedParameterShapes(CONFIG);
  const parameters = shapes.map((s) => ({ name: s.name, shape: [...s.shape], data: fill(s.shape.reduce((a, b) => a * b, 1), false) }));
  const moments = parameters.map((p) => ({ name: p.name, shape: p.shape, first: fill(p.data.length, false), second: fill(p.data.length, true) }));
  const merges = CONFIG.vocabularySize - 258;
  const pairs: [number, number][] = Array.from({ length: merges }, (_, r) => [r % 256, r === 0 ? 0 : 255 + r]); // right = the previous merge: all distinct
  return {
    tokenizer: { kind: 'bpe', pairs },
    decoder: CONFIG,
    parameters,
    optimizer: {
      config: { learningRate: 3e-4, beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0.1 },
      groups: { decay: parameters.filter((p) => !p.name.endsWith('.gain')).map((p) => p.name), noDecay: parameters.filter((p) => p.name.endsWith('.gain')).map((p) => p.name) },
      step: 1000n,
      beta1Power: 0.9 ** 1000,
      beta2Power: 0.95 ** 1000,
      moments,
    },
    selectedStep: 1000n,
    samplingRngState: rng.nextU64(),
  };
}

interface PhaseResult {
  phase: string;
  /** CPU seconds of the busiest thread per run (Linux schedstat): the critical path on an idle machine, robust to a busy one. */
  busiest?: number[];
  /** CPU seconds of the whole process (all threads) per run: the work, less sensitive than wall time to a busy machine. */
  cpu?: number[];
  bytes: number;
  seconds: number[];
  addedPeakBytes: number;
  peakSource: string;
}

/** CPU milliseconds so far of each thread of this process (Linux; empty elsewhere). */
function threadCpu(): Map<string, number> {
  const out = new Map<string, number>();
  try {
    for (const t of readdirSync('/proc/self/task')) {
      try {
        out.set(t, Number(readFileSync(`/proc/self/task/${t}/schedstat`, 'utf8').split(' ')[0]) / 1e6);
      } catch {
        // the thread ended
      }
    }
  } catch {
    // no procfs
  }
  return out;
}

function residentBytes(): number {
  return process.memoryUsage().rss;
}

/** Resets the RSS high-water mark if the kernel allows it. @returns true when reset. */
function resetPeak(): boolean {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

function peakBytes(reset: boolean): number {
  if (reset) {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]) * 1024;
  }
  return process.resourceUsage().maxRSS * 1024;
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

async function measure(phase: string, bytes: number, run: () => unknown): Promise<PhaseResult> {
  const cpu: number[] = [];
  const busiest: number[] = [];
  const seconds: number[] = [];
  let addedPeakBytes = 0;
  let peakSource = 'getrusage maxRSS';
  if (bytes < 100 * MB) {
    const warm = run(); // small files: one untimed run first, so the figures are not the JIT's warm-up
    if (warm instanceof Promise) await warm;
  }
  for (let i = 0; i < REPEATS; i++) {
    gc();
    const before = residentBytes();
    const reset = resetPeak();
    peakSource = reset ? 'VmHWM' : 'getrusage maxRSS';
    const threads0 = threadCpu();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const out = run();
    if (out instanceof Promise) await out;
    seconds.push((performance.now() - t0) / 1000);
    const c = process.cpuUsage(c0);
    busiest.push(Math.max(0, ...[...threadCpu()].map(([t, ms]) => ms - (threads0.get(t) ?? 0))) / 1000);
    cpu.push((c.user + c.system) / 1e6);
    addedPeakBytes = Math.max(addedPeakBytes, peakBytes(reset) - before);
  }
  return { phase, bytes, seconds, cpu, busiest, addedPeakBytes, peakSource };
}

async function runPhase(phase: string, dir: string): Promise<PhaseResult> {
  const file = path.join(dir, 'bench.llmcp');
  if (phase === 'load') {
    const size = statSync(file).size;
    return measure('load+validate (loadCheckpoint)', size, () => loadCheckpoint(file));
  }
  if (phase === 'load-sha') {
    const size = statSync(file).size;
    return measure('load+validate + SHA-256 (trainer verify)', size, async () => {
      const sha = createHash('sha256');
      await loadCheckpoint(file, { onFileBytes: (c) => sha.update(c) });
      return sha.digest('hex');
    });
  }
  const state = syntheticState();
  if (phase === 'save') return measure('atomic save (saveCheckpointAtomic)', statSync(file).size, () => saveCheckpointAtomic(file, state));
  if (phase === 'save-in-thread') return measure('atomic save, hashInWorker: false', statSync(file).size, () => saveCheckpointAtomic(file, state, { hashInWorker: false }));
  if (phase === 'save-sha') {
    // The trainer's save: in-thread FNV-1a from the writer plus a SHA-256 of the file from the same bytes, no read-back.
    return measure('atomic save + SHA-256 (trainer: in-thread)', statSync(file).size, async () => {
      const sha = createHash('sha256');
      await saveCheckpointAtomic(file, state, { hashInWorker: false, onFileBytes: (c) => sha.update(c) });
      return sha.digest('hex');
    });
  }
  if (phase === 'save-reread') {
    // For comparison: the trainer's save before (in-thread save, then the file read back for its SHA-256).
    return measure('  (before: save, then read back for SHA-256)', statSync(file).size, async () => {
      await saveCheckpointAtomic(file, state, { hashInWorker: false });
      const sha = createHash('sha256');
      const handle = openSync(file, 'r');
      const buffer = new Uint8Array(8 << 20);
      for (let n; (n = readSync(handle, buffer, 0, buffer.length, null)) > 0; ) sha.update(buffer.subarray(0, n));
      closeSync(handle);
      return sha.digest('hex');
    });
  }
  if (phase === 'encode') {
    const size = encodeCheckpoint(state).length;
    return measure('encode (encodeCheckpoint)', size, () => encodeCheckpoint(state));
  }
  if (phase === 'decode') {
    const bytes = encodeCheckpoint(state);
    return measure('decode+validate (decodeCheckpoint, in memory)', bytes.length, () => decodeCheckpoint(bytes));
  }
  if (phase === 'decode-view') {
    // The same file placed so that its f64 records are 8-byte aligned: tensors are zero-copy views.
    const encoded = encodeCheckpoint(state);
    const shift = (8 - (Number(new DataView(encoded.buffer).getBigUint64(14, true)) % 8)) % 8;
    const bytes = new Uint8Array(encoded.length + shift).subarray(shift);
    bytes.set(encoded);
    return measure("decode+validate, tensors: 'view' (aligned input)", bytes.length, () => decodeCheckpoint(bytes, { tensors: 'view' }));
  }
  if (phase === 'reference') {
    // Machine reference for reading the numbers on a shared machine: the serial FNV-1a
    // ceiling and the raw write+fsync speed of the benchmark directory.
    const bytes = new Uint8Array(64 << 20).fill(7);
    fnv1a64(bytes); // warm-up (kernel compiled and tiered up)
    const hash = await measure('reference: FNV-1a kernel alone (64 MiB)', bytes.length, () => fnv1a64(bytes));
    const raw = path.join(dir, 'raw.bin');
    const size = statSync(file).size;
    const block = new Uint8Array(4 << 20).fill(1);
    const io = await measure('reference: raw write + fsync (node:fs)', size, () => {
      const fd = openSync(raw, 'w');
      for (let p = 0; p < size; p += block.length) writeSync(fd, block, 0, Math.min(block.length, size - p));
      fsyncSync(fd);
      closeSync(fd);
    });
    rmSync(raw, { force: true });
    return { ...hash, phase: `${hash.phase}|${io.phase}`, seconds: [...hash.seconds, ...io.seconds.map((x) => -x)], addedPeakBytes: io.bytes };
  }
  if (phase === 'prepare') {
    const result = await saveCheckpointAtomic(file, state);
    return { phase: 'prepare', bytes: result.byteLength, seconds: [], addedPeakBytes: 0, peakSource: '' };
  }
  throw new Error(`unknown phase ${phase}`);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

const self = fileURLToPath(import.meta.url);
const phaseArg = process.argv.find((a) => a.startsWith('--phase='));
const sizeArg = process.argv.find((a) => a.startsWith('--size='))?.slice(7);
if (sizeArg !== undefined) {
  CONFIG = SIZES[sizeArg] ?? CONFIG;
  if (sizeArg === '2.6GB') REPEATS = 1;
}
const PHASES = ['prepare', 'reference', 'encode', 'decode', 'decode-view', 'save', 'save-in-thread', 'save-sha', 'save-reread', 'load', 'load-sha'];

function runSize(size: string, dir: string): void {
  const config = SIZES[size] as DecoderConfig;
  const parameters = expectedParameterShapes(config).reduce((n, s) => n + s.shape.reduce((a, b) => a * b, 1), 0);
  console.log(`\n[${size}] V${config.vocabularySize}/D${config.modelWidth}/H${config.heads}/F${config.feedForwardWidth}/L${config.layers}, byte-BPE, step 1000, ${size === '2.6GB' ? 1 : 3} runs per phase, each phase in its own process`);
  const results: PhaseResult[] = [];
  let ceiling = 0;
  let ceilingCpu = 0;
  let reference = '';
  // The large size skips encode and the aligned-copy decode (each would hold two more copies of the file).
  for (const phase of size === '2.6GB' ? PHASES.filter((p) => p !== 'encode' && p !== 'decode-view') : PHASES) {
    const child = spawnSync(process.execPath, [...process.execArgv, '--expose-gc', self, `--phase=${phase}`, `--dir=${dir}`, `--size=${size}`], { encoding: 'utf8', maxBuffer: 1 << 20 });
    const line = child.stdout.split('\n').find((l) => l.startsWith('RESULT '));
    if (child.status !== 0 || line === undefined) {
      console.error(child.stdout, child.stderr);
      throw new Error(`phase ${phase} (${size}) failed with status ${child.status}`);
    }
    const r = JSON.parse(line.slice(7)) as PhaseResult;
    if (phase === 'prepare') {
      console.log(`file: ${(r.bytes / MB).toFixed(1)} MB (${r.bytes} bytes), parameters ${parameters}`);
      continue;
    }
    if (phase === 'reference') {
      const hash = r.seconds.filter((x) => x > 0);
      const io = r.seconds.filter((x) => x < 0).map((x) => -x);
      ceiling = r.bytes / MB / Math.min(...hash);
      ceilingCpu = r.bytes / MB / Math.min(...(r.busiest ?? []).filter((x) => x > 0));
      reference = `machine reference now: FNV-1a kernel ${ceiling.toFixed(0)} MB/s (the serial ceiling of save/load), raw write+fsync ${(r.addedPeakBytes / MB / Math.min(...io)).toFixed(0)} MB/s; load average ${loadavg().map((x) => x.toFixed(1)).join(' ')} on ${availableParallelism()} cores`;
      continue;
    }
    results.push(r);
  }
  console.log('phase                                              median s   best MB/s  median MB/s  / ceiling  cpu s  busiest thread s (FNV-equiv.)  peak added MB  (× file)');
  for (const r of results) {
    const best = Math.min(...r.seconds);
    const med = median(r.seconds);
    console.log(
      `${r.phase.padEnd(50)} ${med.toFixed(3).padStart(8)}  ${(r.bytes / MB / best).toFixed(0).padStart(10)}  ${(r.bytes / MB / med).toFixed(0).padStart(11)}  ${(r.bytes / MB / med / ceiling).toFixed(2).padStart(9)}  ${(r.cpu === undefined ? NaN : median(r.cpu)).toFixed(3).padStart(5)}  ${(r.busiest === undefined ? NaN : median(r.busiest)).toFixed(3).padStart(16)} (${(r.busiest === undefined ? NaN : r.bytes / MB / median(r.busiest) / ceilingCpu).toFixed(2)})          ${(r.addedPeakBytes / MB).toFixed(1).padStart(13)}  ${(r.addedPeakBytes / r.bytes).toFixed(2).padStart(8)}`,
    );
  }
  console.log(reference);
  console.log('busiest thread s: CPU time of the process\'s busiest thread (the critical path on an idle machine; insensitive to other load); (FNV-equiv.) = the FNV kernel\'s CPU time for the same bytes / it (1.00 = only the serial hash is left on that thread)');
  console.log(`peak = ${results[0]?.peakSource ?? '?'} high-water mark reset before each call`);
}

if (phaseArg !== undefined) {
  const dir = process.argv.find((a) => a.startsWith('--dir='))?.slice(6) ?? '.';
  const result = await runPhase(phaseArg.slice(8), dir);
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
} else {
  const sizes = ['25MB', '252MB', ...(process.argv.includes('--large') || process.env.LLMCP_BENCH_LARGE === '1' ? ['2.6GB'] : [])];
  const only = process.argv.find((a) => a.startsWith('--sizes='))?.slice(8).split(',');
  const dir = mkdtempSync(path.join(process.env.LLMCP_BENCH_DIR ?? tmpdir(), 'llmcp-format-bench-'));
  try {
    console.log(`format codec bench (sizes ${(only ?? sizes).join(', ')}; --large adds 2.6GB)`);
    for (const size of only ?? sizes) {
      runSize(size, dir);
      rmSync(path.join(dir, 'bench.llmcp'), { force: true });
    }
    console.log('targets (252MB and up, quiet 2-core reference machine): load+validate, atomic save, decode >= 850 MB/s (the FNV-1a ceiling is ~940); load peak <= 1.1 x file, save peak bounded');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
