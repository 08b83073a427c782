/**
 * A shared Float64Array that clears fast. V8 fills a typed array on a
 * SharedArrayBuffer element by element with relaxed atomic stores (about
 * 0.06 ms for 1.3 MB on the development VM, against 0.013 on an ArrayBuffer),
 * while a WebAssembly `memory.fill` on a shared WebAssembly memory runs at
 * memset speed (about 0.017 ms). A threaded decoder's gradients, cleared at
 * every step (zero-grad), therefore live at the start of a shared
 * WebAssembly memory of their own (decoder.ts).
 */
import { Code, I32, compileModule, fixedMemory, importedMemoryModuleBytes, perMemoryKind, type WasmApi } from './wasm-assembler.ts';

/** Bytes of a WebAssembly page. */
const PAGE = 65536;

/**
 * Above this many bytes `fill` clears instead: there a memset streams past
 * the caches and was the slower of the two (2 threads, after an AdamW step:
 * 10.5 MB, 0.55 against 0.43–0.46 ms; 1.3 MB, 0.039 against 0.115 ms).
 */
const FILL_MAX_BYTES = 4 << 20;

/** `clear(bytes)`: `memory.fill(0, 0, bytes)` on the imported shared memory (compiled once per thread). */
const clearModule = perMemoryKind((shared) => {
  const e = new Code();
  e.i32(0).i32(0).get(0).op(0xfc, 0x0b, 0x00).end();
  return compileModule(importedMemoryModuleBytes([{ name: 'clear', params: [I32], results: [], locals: [], body: e.bytes }], shared));
});

/** An array and the function that sets every element of it to +0.0. */
export interface ClearableArray {
  readonly array: Float64Array;
  readonly clear: () => void;
}

/**
 * @param n - elements (≥ 1).
 * @returns `n` elements at the start of a shared WebAssembly memory of their own (on a SharedArrayBuffer, so worker threads can read and write them) and their clear (`memory.fill`, up to {@link FILL_MAX_BYTES}), or null without WebAssembly or when the memory cannot be had.
 */
export function clearableSharedF64(n: number): ClearableArray | null {
  const module = clearModule(true);
  const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
  if (module === null || api === undefined) return null;
  try {
    const memory = fixedMemory(Math.max(1, Math.ceil((n * 8) / PAGE)), true);
    const run = new api.Instance(module, { env: { memory } }).exports['clear'] as (bytes: number) => void;
    const bytes = n * 8;
    const array = new Float64Array(memory.buffer, 0, n);
    return { array, clear: bytes <= FILL_MAX_BYTES ? () => run(bytes) : () => array.fill(0) };
  } catch {
    return null;
  }
}
