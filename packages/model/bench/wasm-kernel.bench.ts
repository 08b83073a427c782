/**
 * The WebAssembly matrix-product kernel alone (operands already in its
 * memory, no copies), GMAC/s for the product shapes of a training step of the
 * medium (T64/D64/F256/V512) and large (T128/D128/F512/V2048) configurations,
 * plain and with A stored transposed (the weight gradients), against two
 * ceilings measured in the same process:
 *  - chains: 8 independent f64x2 multiply-then-add chains on registers (no
 *    loads), 4 rounds per loop iteration — what V8's code for `f64x2.mul` +
 *    `f64x2.add` reaches at best;
 *  - tile: the kernel's own 4 × 4 register tile step (2 loads of B, 4 splat
 *    loads of A, 8 multiplies, 8 adds), 4 steps per iteration, always on the
 *    same hot addresses (no pointer arithmetic) — the best a tile loop does.
 * Rates are the median over rounds of CPU time (one thread). This only
 * measures; the bits are tested (gemm.test.ts). Run: `pnpm bench wasm-kernel`.
 */
import { loadavg } from 'node:os';
import { Code, I32, V128, name, section, uleb, type WasmApi } from '../src/kernels/wasm-assembler.ts';
import { GEMM_ADD as ADD, GEMM_TRANS_A as TRANS_A } from '../src/kernels/gemm-flags.ts';
import { createWasmGemm, ensureWasmCapacity } from '../src/kernels/wasm-gemm.ts';

const ROUNDS = 9;
const WORK_PER_ROUND = 4e7;
const WARM_MS = 400;

type Shape = [label: string, M: number, N: number, K: number, flags: number];

/** Per configuration: forward (x·W), input gradient (dy·Wᵀ) and weight gradient (xᵀ·dy, A stored transposed, accumulated). */
function shapes(T: number, D: number, F: number, V: number): Shape[] {
  return [
    [`projection  ${T}×${D}·${D}×${D}`, T, D, D, 0],
    [`ffn up      ${T}×${D}·${D}×${F}`, T, F, D, 0],
    [`ffn down    ${T}×${F}·${F}×${D}`, T, D, F, 0],
    [`logits      ${T}×${D}·${D}×${V}`, T, V, D, 0],
    [`head dx     ${T}×${V}·${V}×${D}`, T, D, V, 0],
    [`dW proj     ᵀ${D}×${T}·${T}×${D} +`, D, D, T, TRANS_A | ADD],
    [`dW up       ᵀ${D}×${T}·${T}×${F} +`, D, F, T, TRANS_A | ADD],
    [`dW down     ᵀ${F}×${T}·${T}×${D} +`, F, D, T, TRANS_A | ADD],
    [`dW head     ᵀ${D}×${T}·${T}×${V}`, D, V, T, TRANS_A],
  ];
}

function cpuSeconds(run: () => void): number {
  const t0 = process.cpuUsage();
  run();
  const t = process.cpuUsage(t0);
  return (t.user + t.system) * 1e-6;
}

function median(x: number[]): number {
  const s = [...x].sort((p, q) => p - q);
  return s[s.length >> 1]!;
}

/** GMAC/s: median over rounds of `macs · reps / CPU seconds`. */
function rate(run: () => void, macs: number): number {
  const reps = Math.max(1, Math.floor(WORK_PER_ROUND / macs));
  const many = (): void => {
    for (let r = 0; r < reps; r++) run();
  };
  // V8 runs new WebAssembly code in its baseline tier first and swaps in the optimised code on a later call: warm up for a while.
  const t0 = performance.now();
  while (performance.now() - t0 < WARM_MS) many();
  const rates: number[] = [];
  for (let round = 0; round < ROUNDS; round++) rates.push((macs * reps) / cpuSeconds(many) / 1e9);
  return median(rates);
}

function kernelRate(M: number, N: number, K: number, flags: number): number {
  const w = createWasmGemm();
  if (w === null) return NaN;
  const b = M * K, c = b + K * N;
  ensureWasmCapacity(w, c + M * N);
  for (let q = 0; q < c + M * N; q++) w.view[q] = Math.sin(q * 0.7);
  const lda = (flags & TRANS_A) !== 0 ? M : K;
  return rate(() => w.run(c, N, 0, lda, b, N, M, N, K, flags), M * N * K);
}

// ── ceilings ──

/** A module exporting `probe(n)`: `loop` emits the loop over local 0 (n) with 8 v128 accumulators in locals 1–8. */
function probeModule(loop: (e: Code, acc: number[]) => void, v128Locals: number): Uint8Array {
  const e = new Code();
  const acc = Array.from({ length: 8 }, (_, q) => 1 + q);
  loop(e, acc);
  // keep the accumulators live: store their sum
  e.i32(0).get(acc[0]!);
  for (let q = 1; q < 8; q++) e.get(acc[q]!).vAdd();
  e.v128Store(64);
  e.end();
  const locals = [...uleb(1), ...uleb(v128Locals), V128];
  const code = [...locals, ...e.bytes];
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
    ...section(1, [1, 0x60, 1, I32, 0]),
    ...section(3, [1, 0]),
    ...section(5, [1, 0x00, 1]),
    ...section(7, [1, ...name('probe'), 0x00, 0]),
    ...section(10, [1, ...uleb(code.length), ...code]),
  ]);
}

/** 8 register chains acc += x·y (x, y loop-invariant registers), 4 rounds per iteration; n iterations. */
function chainsModule(): Uint8Array {
  const x = 9, y = 10;
  return probeModule((e, acc) => {
    e.block().loop();
    e.get(0).i32(0).eq().brIf(1);
    for (let u = 0; u < 4; u++) for (let q = 0; q < 8; q++) e.get(acc[q]!).get(x).get(y).vMul().vAdd().set(acc[q]!);
    e.get(0).i32(1).sub().set(0).br(0);
    e.end().end();
  }, 10);
}

/**
 * The kernel's 4 × 4 tile step on fixed hot addresses, 4 steps per iteration
 * with the kernel's exit test after each step (a count of steps left); n
 * iterations.
 */
function tileModule(): Uint8Array {
  const b0 = 9, b1 = 10, xr = 11;
  return probeModule((e, acc) => {
    e.get(0).i32(2).shl().set(0); // steps
    e.block().loop();
    for (let u = 0; u < 4; u++) {
      e.i32(0).v128Load(128 + 32 * u).set(b0);
      e.i32(0).v128Load(144 + 32 * u).set(b1);
      for (let r = 0; r < 4; r++) {
        e.i32(0).v128Load64Splat(256 + 8 * (4 * u + r)).set(xr);
        e.get(acc[2 * r]!).get(xr).get(b0).vMul().vAdd().set(acc[2 * r]!);
        e.get(acc[2 * r + 1]!).get(xr).get(b1).vMul().vAdd().set(acc[2 * r + 1]!);
      }
      if (u < 3) e.get(0).i32(1).sub().tee(0).i32(0).eq().brIf(1);
    }
    e.get(0).i32(1).sub().tee(0).i32(0).ne().brIf(0);
    e.end().end();
  }, 11);
}

/** GMAC/s of a probe module: 64 lane multiply-adds per iteration. */
function probeRate(bytes: Uint8Array): number {
  const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
  if (api === undefined) return NaN;
  const probe = new api.Instance(new api.Module(bytes), {}).exports.probe as (n: number) => void;
  const n = 2e5;
  return rate(() => probe(n), n * 64);
}

const out = (s: string): void => void process.stdout.write(`${s}\n`);
const f = (x: number): string => (Number.isNaN(x) ? '     —' : x.toFixed(2).padStart(6));
out(`load average at start: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
const chains = probeRate(chainsModule());
const tile = probeRate(tileModule());
out(`ceilings, GMAC/s (median of ${ROUNDS} rounds, CPU time): chains ${f(chains)}   tile ${f(tile)}`);
for (const [config, T, D, F, V] of [['medium', 64, 64, 256, 512], ['large', 128, 128, 512, 2048]] as const) {
  out(`\n${config}: kernel GMAC/s (no copies), and as a share of the tile ceiling`);
  for (const [label, M, N, K, flags] of shapes(T, D, F, V)) {
    const r = kernelRate(M, N, K, flags);
    out(`  ${label.padEnd(30)} ${f(r)}   ${((100 * r) / tile).toFixed(0).padStart(3)}%`);
  }
}
out(`\nload average at end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
