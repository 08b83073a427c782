/**
 * Matrix-product kernel speed (GMAC/s, best of several rounds) for the shapes
 * of the medium configuration (V512/D64/H4/F256, T = 64): the WebAssembly SIMD
 * kernel (copies included) against the scalar JavaScript loop. Both give
 * identical bits (tested); this only measures. Run: `pnpm bench gemm`.
 */
import { matrix, type Matrix } from '../src/reference/matrix.ts';
import { GEMM_LOWER_K, GEMM_LOWER_OUT } from '../src/kernels/gemm-flags.ts';
import { gemmJs } from '../src/kernels/gemm.ts';
import { createWasmGemm } from '../src/kernels/wasm-gemm.ts';
import { wasmProduct } from '../src/kernels/wasm-set.ts';

const SHAPES: [string, number, number, number, number][] = [
  ['projection  T×D·D×D', 64, 64, 64, 0],
  ['ffn up      T×D·D×F', 64, 256, 64, 0],
  ['ffn down    T×F·F×D', 64, 64, 256, 0],
  ['weight grad F×T·T×D', 256, 64, 64, 0],
  ['logits      T×D·D×V', 64, 512, 64, 0],
  ['head grad   T×V·V×D', 64, 64, 512, 0],
  ['scores (causal)*    ', 64, 64, 16, GEMM_LOWER_OUT],
  ['value mix (causal)* ', 64, 16, 64, GEMM_LOWER_K],
];

type Product = (c: Matrix, a: Matrix, b: Matrix, flags: number) => void;

function measure(fn: Product, M: number, N: number, K: number, flags: number): number {
  const A = matrix(Float64Array.from({ length: M * K }, (_, i) => Math.sin(i)), M, K);
  const B = matrix(Float64Array.from({ length: K * N }, (_, i) => Math.cos(i)), K, N);
  const C = matrix(new Float64Array(M * N), M, N);
  const reps = Math.max(20, Math.floor(3e7 / (M * N * K)));
  for (let w = 0; w < reps; w++) fn(C, A, B, flags);
  let best = 0;
  for (let round = 0; round < 7; round++) {
    const t0 = performance.now();
    for (let r = 0; r < reps; r++) fn(C, A, B, flags);
    best = Math.max(best, (M * N * K * reps) / (performance.now() - t0) / 1e6);
  }
  return best;
}

const w = createWasmGemm();
process.stdout.write(`matrix products, GMAC/s (best of 7; SIMD available: ${w !== null})\n`);
for (const [label, M, N, K, flags] of SHAPES) {
  const simd = w === null ? NaN : measure((c, a, b, f) => wasmProduct(w, c, a, b, f), M, N, K, flags);
  const scalar = measure(gemmJs, M, N, K, flags);
  process.stdout.write(`  ${label} ${`${M}×${N}×${K}`.padEnd(12)} SIMD ${simd.toFixed(2).padStart(6)}   scalar ${scalar.toFixed(2).padStart(6)}   ×${(simd / scalar).toFixed(1)}\n`);
}
process.stdout.write('  * causal products compute about half of the nominal M·N·K; the rate shown is nominal.\n');
