/**
 * The clip's scaled sum of squares (BLAS `nrm2`, ../../../../docs/spec/training.md §5) in
 * WebAssembly (package-internal), the same chain as clip.ts's JavaScript loop:
 *
 * ```text
 * for each element g, in order:
 *   a = |g|;  stop at the first a that is not < ∞ (NaN, ±∞)
 *   a == 0:        skip
 *   scale < a:     ratio = scale / a;  ssq = 1 + (ssq · ratio) · ratio;  scale = a
 *   otherwise:     ratio = a / scale;  ssq = ssq + ratio · ratio
 * ```
 *
 * Only `ssq` is a serial chain; the divisions depend on `scale`, which
 * changes rarely. So elements go in pairs: when both are at most `scale`
 * (> 0), one `f64x2.div` and one `f64x2.mul` give both squares and the chain
 * takes its two additions in order (a zero's square is +0, and `ssq + 0` is
 * `ssq`, exactly what skipping it gives); any other pair — a new largest
 * value, a NaN or an infinity, `scale` still 0 — runs element by element as
 * above. Every operation is the correctly rounded IEEE one, so the bits are
 * the JavaScript loop's. In V8 that loop runs at 2–6 ns an element depending
 * on how it was optimised; this one at about 1.
 *
 * Memory (fixed, two pages): `scale` at byte 0, `ssq` at 8, then a chunk of
 * {@link SUM_CHUNK} gradient values copied in by the caller.
 */
import { Code, F64, I32, V128, compileModule, importedMemoryModuleBytes, type WasmFunctionSpec } from '@llmcp/model/wasm-assembler';
import { instantiateFixed } from './simd.ts';

/** Values summed per call (copied into the kernel's memory first). */
const SUM_CHUNK = 8192;
const DATA = 16;
const PAGES = 2; // 16 + 8 · 8192 bytes ≤ 2 · 64 KiB

/** `scaledsum(end) → index`: the chain over the values at DATA … end (bytes); −1, or the chunk index of the first non-finite value (state as before it). */
function scaledSumFunction(): WasmFunctionSpec {
  // params: 0 end; locals: 1 k (i32), 2 scale, 3 ssq, 4 a, 5 ratio (f64), 6 pair, 7 sq (v128)
  const [END, K, SCALE, SSQ, A, RATIO, PAIR, SQ] = [0, 1, 2, 3, 4, 5, 6, 7];
  const e = new Code();
  const save = (): void => {
    e.i32(0).get(SCALE).f64Store(0);
    e.i32(0).get(SSQ).f64Store(8);
  };
  /** One element at byte address k + offset, as clip.ts: returns its index when it is not finite. */
  const one = (offset: number): void => {
    e.get(K).f64Load(offset).f64Abs().set(A);
    // !(a < ∞): store the state and return (k + offset − DATA) / 8
    e.get(A).f64Const(Infinity).f64Lt().eqz().if();
    save();
    e.get(K).i32(offset - DATA).add().i32(3).shrS().ret();
    e.end();
    e.get(A).f64Zero().f64Eq().eqz().if();
    e.get(SCALE).get(A).f64Lt().if();
    // ratio = scale / a; ssq = 1 + (ssq · ratio) · ratio; scale = a
    e.get(SCALE).get(A).f64Div().set(RATIO);
    e.f64Const(1).get(SSQ).get(RATIO).f64Mul().get(RATIO).f64Mul().f64Add().set(SSQ);
    e.get(A).set(SCALE);
    e.else();
    // ratio = a / scale; ssq = ssq + ratio · ratio
    e.get(A).get(SCALE).f64Div().set(RATIO);
    e.get(SSQ).get(RATIO).get(RATIO).f64Mul().f64Add().set(SSQ);
    e.end();
    e.end();
  };
  e.i32(0).f64Load(0).set(SCALE);
  e.i32(0).f64Load(8).set(SSQ);
  e.i32(DATA).set(K);
  // pairs: k + 16 ≤ end
  e.block().loop();
  e.get(K).i32(16).add().get(END).gtU().brIf(1); // k + 16 > end: done
  e.get(K).v128Load(0).vAbs().set(PAIR);
  // both ≤ scale (false for NaN, for ∞ and for a new largest value) and scale > 0
  e.get(PAIR).get(SCALE).splat().vLe().i64x2AllTrue().get(SCALE).f64Zero().f64Gt().and().if();
  e.get(PAIR).get(SCALE).splat().vDiv().tee(SQ).get(SQ).vMul().set(SQ);
  e.get(SSQ).get(SQ).f64x2ExtractLane(0).f64Add().get(SQ).f64x2ExtractLane(1).f64Add().set(SSQ);
  e.else();
  one(0);
  one(8);
  e.end();
  e.get(K).i32(16).add().set(K);
  e.br(0).end().end();
  // an odd last value
  e.get(K).get(END).geU().eqz().if();
  one(0);
  e.end();
  save();
  e.i32(-1);
  return { name: 'scaledsum', params: [I32], results: [I32], locals: [[1, I32], [4, F64], [2, V128]], body: [...e.bytes, 0x0b] };
}

interface SumKernel {
  readonly f64: Float64Array;
  readonly run: (end: number) => number;
}

let kernel: SumKernel | null | undefined;

function sumKernel(): SumKernel | null {
  if (kernel === undefined) {
    const module = compileModule(importedMemoryModuleBytes([scaledSumFunction()]));
    const instance = module === null ? null : instantiateFixed(module, PAGES);
    kernel = instance === null ? null : { f64: instance.f64, run: instance.exports['scaledsum'] as SumKernel['run'] };
  }
  return kernel;
}

/**
 * Runs the scaled sum over all of `values` from the state `acc` = [scale,
 * ssq], in WebAssembly, or returns null when the kernel is unavailable (the
 * caller then runs its JavaScript loop).
 * @param values - the gradients, in order.
 * @param acc - [scale, ssq]: the state to start from; on return the state after the last element (or before the first non-finite one).
 * @returns the index of the first non-finite element, −1 when there is none, or null without the kernel.
 */
export function scaledSumWasm(values: Float64Array, acc: Float64Array): number | null {
  const k = sumKernel();
  if (k === null) return null;
  const f = k.f64;
  f[0] = acc[0] as number;
  f[1] = acc[1] as number;
  let bad = -1;
  for (let from = 0; from < values.length; from += SUM_CHUNK) {
    const n = Math.min(SUM_CHUNK, values.length - from);
    f.set(values.subarray(from, from + n), DATA / 8);
    const at = k.run(DATA + 8 * n);
    if (at >= 0) {
      bad = from + at;
      break;
    }
  }
  acc[0] = f[0] as number;
  acc[1] = f[1] as number;
  return bad;
}
