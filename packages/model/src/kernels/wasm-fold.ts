/**
 * The in-order sum of a batch's weight partials (internal/batch-reduce.ts
 * `reducePartials`) in WebAssembly SIMD, where the accumulator and the
 * partials are views of one memory — a worker's shared arena memory, whose
 * front holds its partial slots and, for the first worker, the pass adjoint
 * (decoder.ts): `dst[i] = (…((dst[i] + s1[i]) + s2[i]) + …) + sk[i]` for one,
 * two or four partials, two elements per `f64x2.add` and the last element of
 * an odd count alone. Each lane adds its element's terms in the same order with
 * the same correctly rounded additions, so the bits are the JavaScript loop's;
 * in V8 that loop takes about 2.7 ns an element for four partials, this one 0.5.
 */
import { Code, I32, compileModule, importedMemoryModuleBytes, perMemoryKind, type WasmApi, type WasmFunctionSpec, type WasmMemory } from './wasm-assembler.ts';

/** Partials one call adds (an export per count). */
const COUNTS = [1, 2, 4] as const;

/** `add<k>(dst, s1 … sk, n)`: byte addresses, n elements. */
function addFunction(k: number): WasmFunctionSpec {
  // params: 0 dst, 1 … k the partials, k + 1 n; locals: k + 2 offset, k + 3 end of the pairs
  const N = k + 1;
  const OFF = k + 2;
  const PAIRS = k + 3;
  const e = new Code();
  const terms = (load: (c: Code) => void, add: (c: Code) => void): void => {
    e.get(0).get(OFF).add();
    load(e.get(0).get(OFF).add());
    for (let s = 1; s <= k; s++) {
      load(e.get(s).get(OFF).add());
      add(e);
    }
  };
  e.get(N).i32(-2).and().i32(3).shl().set(PAIRS);
  e.block().loop();
  e.get(OFF).get(PAIRS).geU().brIf(1);
  terms(
    (c) => c.v128Load(0),
    (c) => c.vAdd(),
  );
  e.v128Store(0);
  e.get(OFF).i32(16).add().set(OFF);
  e.br(0).end().end();
  // An odd count: its last element alone.
  e.get(N).i32(1).and().if();
  terms(
    (c) => c.f64Load(0),
    (c) => c.f64Add(),
  );
  e.f64Store(0);
  e.end();
  e.end();
  return { name: `add${k}`, params: Array<number>(k + 2).fill(I32), results: [], locals: [[2, I32]], body: e.bytes };
}

const foldModule = perMemoryKind((shared) => compileModule(importedMemoryModuleBytes(COUNTS.map(addFunction), shared)));

/** Adds partials into an accumulator, all views of one memory. */
export interface WasmFold {
  /** The memory's buffer: every array given to {@link WasmFold.add} must be a view of it. */
  readonly buffer: ArrayBufferLike;
  /**
   * `dst[i] = (…(dst[i] + slots[0][i]) + …) + slots[k−1][i]` for i in [from, to).
   * @param dst - the accumulator.
   * @param slots - one, two or four partials, in order.
   * @param from - first element.
   * @param to - end element (exclusive).
   */
  add(dst: Float64Array, slots: readonly Float64Array[], from: number, to: number): void;
}

/**
 * @param memory - the memory (shared or not) the accumulator and partials are views of.
 * @returns a fold kernel on it, or null without WebAssembly SIMD.
 */
export function createWasmFold(memory: WasmMemory): WasmFold | null {
  try {
    const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
    if (api === undefined) return null;
    const module = foldModule(typeof SharedArrayBuffer !== 'undefined' && memory.buffer instanceof SharedArrayBuffer);
    if (module === null) return null;
    const exports = new api.Instance(module, { env: { memory } }).exports as Record<string, (...args: number[]) => void>;
    const [add1, add2, add4] = [exports['add1'], exports['add2'], exports['add4']] as [(...args: number[]) => void, (...args: number[]) => void, (...args: number[]) => void];
    const at = (a: Float64Array, i: number): number => a.byteOffset + i * 8;
    return {
      buffer: memory.buffer,
      add(dst, slots, from, to) {
        const n = to - from;
        if (n <= 0) return;
        const d = at(dst, from);
        if (slots.length === 4) add4(d, at(slots[0] as Float64Array, from), at(slots[1] as Float64Array, from), at(slots[2] as Float64Array, from), at(slots[3] as Float64Array, from), n);
        else if (slots.length === 2) add2(d, at(slots[0] as Float64Array, from), at(slots[1] as Float64Array, from), n);
        else if (slots.length === 1) add1(d, at(slots[0] as Float64Array, from), n);
        else throw new RangeError(`a fold adds 1, 2 or 4 partials, not ${slots.length}`);
      },
    };
  } catch {
    return null;
  }
}
