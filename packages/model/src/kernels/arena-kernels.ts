/**
 * The one home of the element-wise kernels that run in place on kernel arenas' views (wasm-swiglu.ts,
 * wasm-cross-entropy.ts): the layout of the data every arena reserves at its start
 * ({@link KERNEL_ARENA_DATA_BYTES}, kernel-arena.ts), the module shape (functions taking byte pointers, on an
 * imported memory), and the binding of a family of such kernels to memories:
 * - compiled once per thread;
 * - instantiated on a private memory of the family (the copy path: its copy regions after the reserved data);
 * - instantiated lazily, once per kernel arena, on the arena's memory (by its buffer), whose reserved data
 *   (exp's table and constants, 1.0) is written once per memory, whichever family binds it first.
 *
 * Reserved data, bytes: exp's table (16-byte aligned) at {@link ARENA_EXP_TABLE}, its constants at
 * {@link ARENA_EXP_CONST}, 1.0 at {@link ARENA_ONE}, then from {@link ARENA_SCRATCH} a per-call output region
 * ({@link ARENA_SCRATCH_BYTES}) that any kernel may use for what it returns (undecided indices, row statistics):
 * kernels of one thread never run at the same time, and the caller reads it before the next call.
 */
import { KERNEL_ARENA_DATA_BYTES, residentKernel } from './kernel-arena.ts';
import { compileModule, I32, importedMemoryModuleBytes, perMemoryKind, type Code, type WasmApi, type WasmMemory } from './wasm-assembler.ts';
import { EXP_CONSTANT_BYTES, EXP_TABLE_BYTES, initExpData } from './wasm-exp.ts';

/** Byte address of exp's table in the reserved data (wasm-exp.ts `initExpData`). */
export const ARENA_EXP_TABLE = 0;
/** Byte address of exp's constants. */
export const ARENA_EXP_CONST: number = ARENA_EXP_TABLE + EXP_TABLE_BYTES;
/** Byte address of the f64 1.0. */
export const ARENA_ONE: number = ARENA_EXP_CONST + EXP_CONSTANT_BYTES;
/** Byte address of the per-call output region (16-byte aligned). */
export const ARENA_SCRATCH: number = (ARENA_ONE + 8 + 15) & ~15;
/** Bytes of the per-call output region, up to the end of the reserved data. */
export const ARENA_SCRATCH_BYTES: number = KERNEL_ARENA_DATA_BYTES - ARENA_SCRATCH;

/**
 * A module of one exported function `fn` (`params` i32 → i32) on an imported memory (wasm-assembler.ts
 * {@link importedMemoryModuleBytes}: a private memory or any kernel arena's).
 *
 * @param fn - export name.
 * @param params - number of i32 parameters.
 * @param locals - the local declarations, as (count, value type) pairs.
 * @param code - the function body's instructions (ending with `end`).
 * @param shared - on a shared memory (a worker's arena).
 * @returns the module bytes.
 */
export function pointerModuleBytes(fn: string, params: number, locals: readonly (readonly [number, number])[], code: readonly number[], shared: boolean): Uint8Array {
  return importedMemoryModuleBytes([{ name: fn, params: new Array<number>(params).fill(I32), results: [I32], locals, body: code }], shared);
}

/** A family's functions instantiated on one memory, with views of that memory. */
export interface ArenaBinding<E> {
  readonly exports: E;
  readonly f64: Float64Array;
  readonly i32: Int32Array;
}


/** A family's modules compiled for one kind of memory. */
interface Compiled<E> {
  readonly api: WasmApi;
  readonly modules: Record<keyof E, object>;
}

/** Whether `buffer` is a SharedArrayBuffer (a shared memory's), where the runtime has them. */
function isShared(buffer: ArrayBufferLike): boolean {
  return typeof SharedArrayBuffer !== 'undefined' && buffer instanceof SharedArrayBuffer;
}

/** Memories whose reserved data is written (by any family). */
const initialised = new WeakSet<ArrayBufferLike>();

/** Kernel families: their private and per-arena bindings. */
export class ArenaKernels<E> {
  readonly #modules: (shared: boolean) => Record<keyof E, Uint8Array>;
  readonly #pages: number;
  /** The modules for an unshared or a shared memory, compiled on first use (null when unavailable). */
  readonly #compile = perMemoryKind((shared): Compiled<E> | null => {
    const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
    if (api === undefined) return null;
    const bytes = this.#modules(shared);
    const modules = {} as Record<keyof E, object>;
    for (const key of Object.keys(bytes) as (keyof E)[]) {
      const module = compileModule(bytes[key]);
      if (module === null) return null;
      modules[key] = module;
    }
    return { api, modules };
  });
  /** The private binding: undefined before the first use, null when unavailable. */
  #own: ArenaBinding<E> | null | undefined;
  readonly #arenas = new WeakMap<ArrayBufferLike, ArenaBinding<E> | null>();

  /**
   * @param modules - the module bytes by export (each exports one function of that name, see {@link pointerModuleBytes}), importing a shared memory or not.
   * @param pages - 64 KiB pages of the private memory (the reserved data and the family's copy regions).
   */
  constructor(modules: (shared: boolean) => Record<keyof E, Uint8Array>, pages: number) {
    this.#modules = modules;
    this.#pages = pages;
  }

  /** The functions on this family's private memory (the copy path), or null without WebAssembly SIMD. */
  own(): ArenaBinding<E> | null {
    if (this.#own === undefined) this.#own = this.#bind(null);
    return this.#own;
  }

  /** The functions on the kernel arena whose memory `a` is a view of, or null (not an arena view, or unavailable). */
  arena(a: Float64Array): ArenaBinding<E> | null {
    const buffer = a.buffer;
    let b = this.#arenas.get(buffer);
    if (b === undefined) {
      const kernel = residentKernel(a);
      b = kernel === undefined ? null : this.#bind(kernel.memory);
      this.#arenas.set(buffer, b);
    }
    return b;
  }

  /** The arena binding when every array is a view of one kernel arena, else null. */
  arenaOf(arrays: readonly Float64Array[]): ArenaBinding<E> | null {
    const first = arrays[0] as Float64Array;
    for (const a of arrays) if (a.buffer !== first.buffer) return null;
    return this.arena(first);
  }

  #bind(memory: WasmMemory | null): ArenaBinding<E> | null {
    try {
      const compiled = this.#compile(memory !== null && isShared(memory.buffer));
      if (compiled === null) return null;
      const { api, modules } = compiled;
      const mem = memory ?? new api.Memory({ initial: this.#pages });
      const imports = { env: { memory: mem } };
      const exports = {} as Record<keyof E, unknown>;
      for (const key of Object.keys(modules) as (keyof E)[]) exports[key] = new api.Instance(modules[key], imports).exports[key as string];
      const f64 = new Float64Array(mem.buffer);
      if (!initialised.has(mem.buffer)) {
        initExpData(f64, ARENA_EXP_TABLE, ARENA_EXP_CONST);
        f64[ARENA_ONE / 8] = 1.0;
        initialised.add(mem.buffer);
      }
      return { exports: exports as E, f64, i32: new Int32Array(mem.buffer) };
    } catch {
      return null;
    }
  }
}

/** Locals of {@link emitSkipTail}: i32 `j`, `n`, `skipped`, the row pointers `z`, `p`; f64 `m`, `tail`. */
export interface SkipTailLocals {
  readonly j: number;
  readonly n: number;
  readonly skipped: number;
  readonly z: number;
  readonly p: number;
  readonly m: number;
  readonly tail: number;
}

/**
 * The softmax tail of one row (cross-entropy and attention): `tail = Σ p[j]` over j = 0 … n−1 in order, a scalar
 * chain from +0, skipping the first j whose shift `z[j] − m` is exactly 0 (the shift is tested, not its exp).
 */
export function emitSkipTail(e: Code, L: SkipTailLocals): void {
  e.f64Zero().set(L.tail);
  e.i32(0).set(L.skipped);
  e.i32(0).set(L.j);
  e.whileLess(L.j, L.n, () => {
    e.get(L.skipped).i32(0).eq();
    e.get(L.z).get(L.j).shl3().add().f64Load().get(L.m).f64Sub().f64Zero().f64Eq().and().if();
    e.i32(1).set(L.skipped);
    e.else();
    e.get(L.tail).get(L.p).get(L.j).shl3().add().f64Load().f64Add().set(L.tail);
    e.end();
    e.get(L.j).i32(1).add().set(L.j);
  });
}
