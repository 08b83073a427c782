/**
 * Matrix-product speed of every kernel path (GMAC/s, best of several rounds), each as a fraction of that path's
 * ceiling on this machine, for the products of the small, medium, large and xl configurations.
 *
 * The ceiling of a path is the measured throughput of independent multiply-then-add chains with no loads (the
 * addon's `peak`: 12 chains of `vmulpd` + `vaddpd` on AVX-512 and AVX2, 8 scalar chains in plain C; a WebAssembly
 * `f64x2` loop for the WebAssembly kernel): the physical limit of a bit-exact product, whose every term is a
 * separate IEEE multiply and add. Native paths: every one this CPU runs (AVX-512, AVX2, scalar), `gemm` of the
 * addon on the arrays in place; WebAssembly: the kernel on copied operands (wasmProduct), and the WebAssembly kernel alone on hot
 * scratch memory. All paths give identical bits (tested); this only measures.
 *
 * Run: `pnpm bench native-gemm` (the native columns need the addon: `node packages/model/native/build.mjs`).
 * Options (after `--`): `--configs small,medium,large,xl` (default all); `--paths avx2,scalar,wasm` (default every
 * path); `--vs FILE`: a second addon (e.g. built from another commit) run alternately with this one on the best
 * native path, round by round in this process, printing the median of the per-round ratios this ÷ other.
 *
 * Per update the model runs, per layer and sequence: the projection and feed-forward products (forward, input
 * adjoint, weight gradient with A transposed) and per head the causal score and value products; the head (logits)
 * products once.
 */
import { createRequire } from 'node:module';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { GEMM_LOWER_K, GEMM_LOWER_OUT, GEMM_TRANS_A as TRANS_A } from '../src/kernels/gemm-flags.ts';
import { matrix } from '../src/reference/matrix.ts';
import { wasmProduct } from '../src/kernels/wasm-set.ts';
import { loadNativeKernels, type NativeAddon, type NativePath } from '../src/kernels/native.ts';
import { createWasmGemm, ensureWasmCapacity } from '../src/kernels/wasm-gemm.ts';

interface Config {
  readonly name: string;
  readonly V: number;
  readonly D: number;
  readonly H: number;
  readonly F: number;
  readonly T: number;
}
const CONFIGS: Config[] = [
  { name: 'small', V: 256, D: 32, H: 2, F: 128, T: 32 },
  { name: 'medium', V: 512, D: 64, H: 4, F: 256, T: 64 },
  { name: 'large', V: 2048, D: 128, H: 4, F: 512, T: 128 },
  { name: 'xl', V: 4096, D: 256, H: 8, F: 1024, T: 256 },
];

type Shape = [label: string, M: number, N: number, K: number, flags: number];
function shapes({ V, D, H, F, T }: Config): Shape[] {
  const d = D / H;
  return [
    ['projection  T×D·D×D', T, D, D, 0],
    ['ffn up      T×D·D×F', T, F, D, 0],
    ['ffn down    T×F·F×D', T, D, F, 0],
    ['logits      T×D·D×V', T, V, D, 0],
    ['head dx     T×V·V×D', T, D, V, 0],
    ['weight grad Dᵀ·T×D ', D, D, T, TRANS_A],
    ['weight grad Dᵀ·T×F ', D, F, T, TRANS_A],
    ['weight grad Fᵀ·T×D ', F, D, T, TRANS_A],
    ['weight grad Dᵀ·T×V ', D, V, T, TRANS_A],
    ['scores*     T×d·d×T', T, T, d, GEMM_LOWER_OUT],
    ['value mix*  T×T·T×d', T, d, T, GEMM_LOWER_K],
  ];
}

function option(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

// Short windows, best of many: on a busy machine (report the load average) a long window is almost always preempted.
const WORK_PER_ROUND = 3e6;
const rounds = (macs: number): number => (macs > 5e7 ? 9 : 25);

function rate(run: () => void, macs: number): number {
  const reps = Math.max(1, Math.floor(WORK_PER_ROUND / macs));
  for (let r = 0; r < reps; r++) run();
  let best = 0;
  for (let round = 0; round < rounds(macs); round++) {
    const t0 = performance.now();
    for (let r = 0; r < reps; r++) run();
    best = Math.max(best, (macs * reps) / (performance.now() - t0) / 1e6);
  }
  return best;
}

function operands(M: number, N: number, K: number): { A: Float64Array; B: Float64Array; C: Float64Array } {
  return {
    A: Float64Array.from({ length: M * K }, (_, i) => Math.sin(i)),
    B: Float64Array.from({ length: K * N }, (_, i) => Math.cos(i)),
    C: new Float64Array(M * N),
  };
}

/** A native product: A is [M, K], or [K, M] under TRANS_A. */
function nativeRun(addon: NativeAddon, M: number, N: number, K: number, flags: number): () => void {
  const { A, B, C } = operands(M, N, K);
  const lda = (flags & TRANS_A) !== 0 ? M : K;
  return () => addon.gemm(C, 0, N, A, 0, lda, B, 0, N, M, N, K, flags);
}

/** The WebAssembly kernel on operands copied into its memory (A as stored [M, K]). */
function measureWasm(M: number, N: number, K: number, flags: number): number {
  const { A, B, C } = operands(M, N, K);
  const w = createWasmGemm();
  if (w === null) return NaN;
  return rate(() => wasmProduct(w, matrix(C, M, N), matrix(A, M, K), matrix(B, K, N), flags & ~TRANS_A), M * N * K);
}

/** The WebAssembly kernel alone, operands already in its memory. */
function measureWasmKernel(M: number, N: number, K: number, flags: number): number {
  const w = createWasmGemm();
  if (w === null) return NaN;
  ensureWasmCapacity(w, M * K + K * N + M * N);
  const { A, B } = operands(M, N, K);
  w.view.set(A, 0);
  w.view.set(B, M * K);
  const c = M * K + K * N;
  return rate(() => w.run(c, N, 0, K, M * K, N, M, N, K, flags & ~TRANS_A), M * N * K);
}

// ── WebAssembly ceiling: 8 independent f64x2 chains acc += x·y (x advanced once per iteration so the products stay in the loop)

function wasmPeakModule(): Uint8Array {
  const CH = 8;
  const x = 1 + CH, y = 2 + CH, dx = 3 + CH; // locals: 0 = iterations, 1..CH accumulators
  const SIMD = (op: number): number[] => (op < 0x80 ? [0xfd, op] : [0xfd, (op & 0x7f) | 0x80, op >> 7]);
  const f64const = (v: number): number[] => [0x44, ...new Uint8Array(Float64Array.of(v).buffer)];
  const body: number[] = [1, CH + 3, 0x7b]; // CH + 3 v128 locals
  body.push(...f64const(1.0000001), ...SIMD(0x14), 0x21, x);
  body.push(...f64const(1e-9), ...SIMD(0x14), 0x21, y);
  body.push(...f64const(1e-17), ...SIMD(0x14), 0x21, dx);
  body.push(0x02, 0x40, 0x03, 0x40, 0x20, 0, 0x45, 0x0d, 1);
  for (let c = 1; c <= CH; c++) body.push(0x20, c, 0x20, x, 0x20, y, ...SIMD(0xf2), ...SIMD(0xf0), 0x21, c);
  body.push(0x20, x, 0x20, dx, ...SIMD(0xf0), 0x21, x);
  body.push(0x20, 0, 0x41, 1, 0x6b, 0x21, 0, 0x0c, 0, 0x0b, 0x0b);
  body.push(0x20, 1, ...SIMD(0x21), 0);
  for (let c = 2; c <= CH; c++) body.push(0x20, c, ...SIMD(0x21), 0, 0xa0);
  body.push(0x0b);
  const uleb = (n: number): number[] => (n < 0x80 ? [n] : [(n & 0x7f) | 0x80, ...uleb(n >> 7)]);
  const code = [1, ...uleb(body.length), ...body];
  const sec = (id: number, b: number[]): number[] => [id, ...uleb(b.length), ...b];
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
    ...sec(1, [1, 0x60, 1, 0x7f, 1, 0x7c]),
    ...sec(3, [1, 0]),
    ...sec(7, [1, 4, 0x70, 0x65, 0x61, 0x6b, 0x00, 0]),
    ...sec(10, code),
  ]);
}

// Short windows, best of many: on a busy machine a long window is almost always preempted.
const PEAK_ROUNDS = 40;

function wasmPeak(): number {
  const wa = (globalThis as unknown as { WebAssembly: { Module: new (b: Uint8Array) => object; Instance: new (m: object, i: object) => { exports: { peak: (n: number) => number } } } }).WebAssembly;
  const peak = new wa.Instance(new wa.Module(wasmPeakModule()), {}).exports.peak;
  const n = 2e5;
  peak(n * 10);
  let best = 0;
  for (let r = 0; r < PEAK_ROUNDS; r++) {
    const t0 = performance.now();
    peak(n);
    best = Math.max(best, (n * 8 * 2) / (performance.now() - t0) / 1e6);
  }
  return best;
}

function nativePeak(addon: NativeAddon, p: NativePath): number {
  const n = p === 'scalar' ? 1e6 : 1e5;
  addon.peak(p, n * 10);
  let best = 0;
  for (let r = 0; r < PEAK_ROUNDS; r++) {
    const { macs, seconds } = addon.peak(p, n);
    best = Math.max(best, macs / seconds / 1e9);
  }
  return best;
}

/** This addon ÷ the other on one path, alternating round by round: the median of the per-round ratios and both bests. */
function versus(mine: NativeAddon, other: NativeAddon, p: NativePath, M: number, N: number, K: number, flags: number): { ratio: number; mine: number; other: number } {
  mine.setPath(p);
  other.setPath(p);
  const a = nativeRun(mine, M, N, K, flags), b = nativeRun(other, M, N, K, flags);
  const macs = M * N * K;
  const reps = Math.max(1, Math.floor(WORK_PER_ROUND / macs));
  const once = (run: () => void): number => {
    const t0 = performance.now();
    for (let r = 0; r < reps; r++) run();
    return (macs * reps) / (performance.now() - t0) / 1e6;
  };
  once(a);
  once(b);
  const ratios: number[] = [];
  let bestA = 0, bestB = 0;
  for (let round = 0; round < 2 * rounds(macs); round++) {
    // Each round runs both, the first of the pair alternating.
    const rb0 = round % 2 === 1 ? once(b) : 0;
    const ra = once(a);
    const rb = round % 2 === 0 ? once(b) : rb0;
    ratios.push(ra / rb);
    bestA = Math.max(bestA, ra);
    bestB = Math.max(bestB, rb);
  }
  ratios.sort((x, y) => x - y);
  return { ratio: ratios[ratios.length >> 1]!, mine: bestA, other: bestB };
}

const out = (s: string): void => void process.stdout.write(`${s}\n`);
const f = (x: number): string => (Number.isNaN(x) ? '     —' : x.toFixed(2).padStart(6));
const pct = (x: number, ceiling: number): string => (Number.isNaN(x) || !(ceiling > 0) ? '     ' : `${((100 * x) / ceiling).toFixed(0).padStart(3)}%`);
const la = (): string => loadavg().map((l) => l.toFixed(2)).join(' ');

const load = loadNativeKernels();
const native = load.addon;
const wanted = option('--configs')?.split(',') ?? CONFIGS.map((c) => c.name);
for (const w of wanted) if (!CONFIGS.some((c) => c.name === w)) throw new RangeError(`native-gemm: unknown configuration ${w} (expected ${CONFIGS.map((c) => c.name).join(', ')})`);
const nativePaths: NativePath[] = native === null ? [] : native.bestPath() === 'avx512' ? ['avx512', 'avx2', 'scalar'] : native.bestPath() === 'avx2' ? ['avx2', 'scalar'] : ['scalar'];
const pathFilter = option('--paths')?.split(',');
const paths = pathFilter === undefined ? nativePaths : nativePaths.filter((p) => pathFilter.includes(p));
const withWasm = pathFilter === undefined || pathFilter.includes('wasm');
const vsFile = option('--vs');
const other = vsFile === undefined ? null : (createRequire(import.meta.url)(path.resolve(vsFile)) as NativeAddon);

out(`load average at start: ${la()}`);
out(`CPU: ${cpus()[0]?.model ?? 'unknown'} (${cpus().length} logical cores)`);
out(`native kernels: ${native === null ? `not available (${load.error ?? ''})` : `best path ${native.bestPath()} (${load.file ?? ''})`}`);

out(`\nceilings, GMAC/s per core (independent multiply-then-add chains, no loads; best of ${PEAK_ROUNDS} short windows)`);
const ceiling = new Map<string, number>();
if (native !== null) for (const p of nativePaths) ceiling.set(p, nativePeak(native, p));
ceiling.set('wasm', wasmPeak());
for (const [p, g] of ceiling) out(`  ${(p === 'wasm' ? 'wasm f64x2' : `native ${p}`).padEnd(14)} ${f(g)}`);
if (withWasm) out(`  wasm kernel, hot scratch, 64×64×256 (no copies): ${f(measureWasmKernel(64, 64, 256, 0))} ${pct(measureWasmKernel(64, 64, 256, 0), ceiling.get('wasm')!)}`);

for (const config of CONFIGS.filter((c) => wanted.includes(c.name))) {
  const { V, D, H, F, T } = config;
  out(`\n${config.name} V${V}/D${D}/H${H}/F${F} T${T}: GMAC/s (best of the rounds) and % of the path's ceiling`);
  const header = [...paths.map((p) => `native ${p}`.padEnd(15)), ...(withWasm ? ['wasm copied'.padEnd(15), 'wasm kernel'.padEnd(15)] : []), ...(other !== null ? [`÷ --vs (${native!.bestPath()})`] : [])];
  out(`  ${'product'.padEnd(20)} ${'M×N×K'.padEnd(15)} ${header.join(' ')}`);
  for (const [label, M, N, K, flags] of shapes(config)) {
    const cells: string[] = [];
    for (const p of paths) {
      native!.setPath(p);
      const g = rate(nativeRun(native!, M, N, K, flags), M * N * K);
      cells.push(`${f(g)} ${pct(g, ceiling.get(p)!)}`.padEnd(15));
    }
    native?.setPath('best');
    if (withWasm) {
      const w = measureWasm(M, N, K, flags), k = measureWasmKernel(M, N, K, flags);
      cells.push(`${f(w)} ${pct(w, ceiling.get('wasm')!)}`.padEnd(15), `${f(k)} ${pct(k, ceiling.get('wasm')!)}`.padEnd(15));
    }
    if (other !== null && native !== null) {
      const v = versus(native, other, native.bestPath(), M, N, K, flags);
      cells.push(`×${v.ratio.toFixed(3)} (${f(v.mine)} vs ${f(v.other)})`);
      native.setPath('best');
      other.setPath('best');
    }
    out(`  ${label.padEnd(20)} ${`${M}×${N}×${K}`.padEnd(15)} ${cells.join(' ')}`);
  }
}
out('\n* causal products compute about half of the nominal M·N·K; the rate shown is nominal (so it can exceed the ceiling).');
out(`load average at end: ${la()}`);
