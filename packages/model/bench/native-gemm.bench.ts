/**
 * Matrix-product speed, native kernels against WebAssembly (GMAC/s, best of
 * several rounds), for every product shape of the small, medium and large
 * configurations, and the ceiling of each path: independent multiply-then-add
 * chains (no loads) on the native AVX-512/AVX2/scalar paths and in a
 * WebAssembly f64x2 loop, plus the WebAssembly kernel alone on hot scratch
 * memory (no copies). All paths give identical bits (tested); this only
 * measures. Run: `pnpm bench native-gemm` (or with tsx directly); the native
 * columns need the addon (`node packages/model/native/build.mjs`).
 *
 * Per update the model runs, per layer and sequence: the projection and
 * feed-forward products (forward, input gradient, weight gradient) and per
 * head the causal score and value products; the head (logits) products once.
 */
import { loadavg } from 'node:os';
import { GEMM_LOWER_K, GEMM_LOWER_OUT, gemm, setGemmBackend } from '../src/kernels/gemm.ts';
import { loadNativeKernels, setKernels, type NativePath } from '../src/kernels/native.ts';
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
  { name: 'small  V256/D32/H2/F128 T32', V: 256, D: 32, H: 2, F: 128, T: 32 },
  { name: 'medium V512/D64/H4/F256 T64', V: 512, D: 64, H: 4, F: 256, T: 64 },
  { name: 'large  V2048/D128/H4/F512 T128', V: 2048, D: 128, H: 4, F: 512, T: 128 },
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
    ['weight grad D×T·T×D', D, D, T, 0],
    ['weight grad D×T·T×F', D, F, T, 0],
    ['weight grad F×T·T×D', F, D, T, 0],
    ['weight grad D×T·T×V', D, V, T, 0],
    ['scores*     T×d·d×T', T, T, d, GEMM_LOWER_OUT],
    ['value mix*  T×T·T×d', T, d, T, GEMM_LOWER_K],
  ];
}

// Many short windows, best of them: on a busy machine (report the load average) a long window is almost always preempted.
const ROUNDS = 25;
const WORK_PER_ROUND = 3e6;

function rate(run: () => void, macs: number): number {
  const reps = Math.max(1, Math.floor(WORK_PER_ROUND / macs));
  for (let r = 0; r < reps; r++) run();
  let best = 0;
  for (let round = 0; round < ROUNDS; round++) {
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

/** gemm() under one kernel choice (dispatch and, for WebAssembly, the copies included). */
function measureGemm(kind: 'native' | 'wasm', M: number, N: number, K: number, flags: number): number {
  const { A, B, C } = operands(M, N, K);
  if (kind === 'native') setKernels('native');
  else setGemmBackend('simd');
  try {
    return rate(() => gemm(C, 0, N, A, 0, K, B, 0, N, M, N, K, flags), M * N * K);
  } finally {
    setKernels('auto');
    setGemmBackend('auto');
  }
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
  return rate(() => w.run(c, N, 0, K, M * K, N, M, N, K, flags), M * N * K);
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

// Short windows, best of many: on a busy machine a long window is almost always preempted.
const PEAK_ROUNDS = 40;

function nativePeak(path: NativePath): number {
  const addon = loadNativeKernels().addon!;
  const n = path === 'scalar' ? 1e6 : 1e5;
  addon.peak(path, n * 10);
  let best = 0;
  for (let r = 0; r < PEAK_ROUNDS; r++) {
    const { macs, seconds } = addon.peak(path, n);
    best = Math.max(best, macs / seconds / 1e9);
  }
  return best;
}

const out = (s: string): void => void process.stdout.write(`${s}\n`);
const f = (x: number): string => (Number.isNaN(x) ? '     —' : x.toFixed(2).padStart(6));
const load = loadNativeKernels();
const native = load.addon;
out(`load average at start: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
out(`native kernels: ${native === null ? `not available (${load.error ?? ''})` : `${native.bestPath()} (${load.file ?? ''})`}`);

out(`\nceilings, GMAC/s (independent multiply-then-add chains, best of ${PEAK_ROUNDS} short windows)`);
if (native !== null) {
  const paths: NativePath[] = native.bestPath() === 'avx512' ? ['avx512', 'avx2', 'scalar'] : native.bestPath() === 'avx2' ? ['avx2', 'scalar'] : ['scalar'];
  for (const p of paths) out(`  native ${p.padEnd(8)} ${f(nativePeak(p))}`);
}
out(`  wasm f64x2      ${f(wasmPeak())}`);
out(`  wasm kernel, hot scratch, 64×64×256 (no copies): ${f(measureWasmKernel(64, 64, 256, 0))}`);

for (const config of CONFIGS) {
  out(`\n${config.name}: GMAC/s (best of ${ROUNDS})  native = gemm() on the arrays in place; wasm = gemm() with copies; kernel = WebAssembly kernel alone`);
  for (const [label, M, N, K, flags] of shapes(config)) {
    const n = native === null ? NaN : measureGemm('native', M, N, K, flags);
    const w = measureGemm('wasm', M, N, K, flags);
    const kernel = measureWasmKernel(M, N, K, flags);
    const ratio = Number.isNaN(n) ? '' : `  native/wasm ×${(n / w).toFixed(1)}`;
    out(`  ${label} ${`${M}×${N}×${K}`.padEnd(13)} native ${f(n)}   wasm ${f(w)}   kernel ${f(kernel)}${ratio}`);
  }
}
out('\n* causal products compute about half of the nominal M·N·K; the rate shown is nominal.');
out(`load average at end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
