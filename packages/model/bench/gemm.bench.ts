/**
 * Matrix-product kernel speed (GMAC/s, best of several rounds) for the shapes
 * of the medium configuration (V512/D64/H4/F256, T = 64): the WebAssembly SIMD
 * kernel (copies included) against the scalar JavaScript loop. Both give
 * identical bits (tested); this only measures. Run: `pnpm bench gemm`.
 */
import { GEMM_LOWER_K, GEMM_LOWER_OUT } from '../src/kernels/gemm-flags.ts';
import { gemm, gemmScalar, setGemmBackend, usesSimdGemm } from '../src/kernels/gemm.ts';

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

function measure(fn: typeof gemm, M: number, N: number, K: number, flags: number): number {
  const A = Float64Array.from({ length: M * K }, (_, i) => Math.sin(i));
  const B = Float64Array.from({ length: K * N }, (_, i) => Math.cos(i));
  const C = new Float64Array(M * N);
  const reps = Math.max(20, Math.floor(3e7 / (M * N * K)));
  for (let w = 0; w < reps; w++) fn(C, 0, N, A, 0, K, B, 0, N, M, N, K, flags);
  let best = 0;
  for (let round = 0; round < 7; round++) {
    const t0 = performance.now();
    for (let r = 0; r < reps; r++) fn(C, 0, N, A, 0, K, B, 0, N, M, N, K, flags);
    best = Math.max(best, (M * N * K * reps) / (performance.now() - t0) / 1e6);
  }
  return best;
}

setGemmBackend('simd');
process.stdout.write(`matrix products, GMAC/s (best of 7; SIMD available: ${usesSimdGemm()})\n`);
for (const [label, M, N, K, flags] of SHAPES) {
  const simd = measure(gemm, M, N, K, flags);
  const scalar = measure(gemmScalar, M, N, K, flags);
  process.stdout.write(`  ${label} ${`${M}×${N}×${K}`.padEnd(12)} SIMD ${simd.toFixed(2).padStart(6)}   scalar ${scalar.toFixed(2).padStart(6)}   ×${(simd / scalar).toFixed(1)}\n`);
}
setGemmBackend('auto');
process.stdout.write('  * causal products compute about half of the nominal M·N·K; the rate shown is nominal.\n');
