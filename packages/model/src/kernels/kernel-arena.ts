/**
 * Kernel arenas: a fixed-size WebAssembly memory of its own kernel instance
 * (wasm-gemm.ts), from which a caller (one decoder pass) takes all its
 * matrix operands as Float64Array views. The matrix product (gemm.ts)
 * recognises such resident operands by their buffer and reads and writes them
 * where they are, so products on them copy nothing.
 *
 * Growing a non-shared WebAssembly memory detaches its old buffer, which
 * would silently empty every view taken from it. An arena's memory is
 * therefore sized once, when it is opened, and never grows: taking more than
 * it holds throws, and a product that would need scratch beyond it runs on the
 * scalar kernel (same bits; counted in internal/gemm-counters.ts).
 *
 * The first {@link KERNEL_ARENA_DATA_BYTES} bytes of every arena's memory
 * belong to the element-wise kernels that run on its views in place
 * (arena-kernels.ts lays them out: exp's table and constants, 1.0, a per-call
 * output region for undecided indices and row statistics); the views start
 * after them, the copy scratch after the views.
 *
 * Row strides: the kernel's register tile walks its B rows (and, for a
 * weight gradient, its stored-transposed A rows) one stride apart along k.
 * Rows 4 KiB apart (a multiple of 512 values) fall into one L1 cache set and
 * evict each other; a matrix an arena owns outright (the decoder pass's
 * weight snapshot and transposed weights) is therefore laid out with the
 * row stride {@link residentStride}, which moves values but changes no sum.
 */
import { gemmCounters } from '../internal/gemm-counters.ts';
import type { WasmMemory } from './wasm-assembler.ts';
import { createWasmGemm, type WasmGemm } from './wasm-gemm.ts';

/** Row strides that are a multiple of this many f64 values (4 KiB, the L1 set period) alias in the cache. */
const ALIAS_PERIOD = 512;
/** What {@link residentStride} adds to such a stride: one 64-byte line. */
const ALIAS_PAD = 8;

/**
 * The row stride of a matrix with rows of `width` values laid out in a kernel
 * arena: `width`, or `width + 8` when `width` is a multiple of 512 (rows 4 KiB
 * apart share an L1 set; one cache line more spreads them over all sets).
 *
 * @param width - values per row.
 * @returns the row stride (≥ width).
 */
export function residentStride(width: number): number {
  return width % ALIAS_PERIOD === 0 ? width + ALIAS_PAD : width;
}

/**
 * Bytes at the start of an arena's memory reserved for the element-wise
 * kernels' data (laid out by arena-kernels.ts); a multiple of 4 KiB, so the
 * views keep the page alignment they would have from byte 0.
 */
export const KERNEL_ARENA_DATA_BYTES = 12288;
const DATA_ELEMENTS = KERNEL_ARENA_DATA_BYTES / 8;

/** The kernel instance owning each arena's memory, by the memory's buffer (stable: the memory never grows). */
const owners = new WeakMap<ArrayBufferLike, WasmGemm>();

/** @returns the kernel whose memory holds `X` (an arena view), or undefined for any other array. */
export function residentKernel(X: Float64Array): WasmGemm | undefined {
  return owners.get(X.buffer);
}

/** A fixed-size kernel memory handing out zeroed views, front to back. */
export class KernelArena {
  /** The kernel instance reading this arena's views in place. */
  readonly kernel: WasmGemm;
  /** Elements that {@link take} can hand out. */
  readonly capacity: number;
  #used = 0;

  /**
   * @param kernel - a fixed instance whose memory holds at least {@link KERNEL_ARENA_DATA_BYTES} and `capacity` elements.
   * @param capacity - elements for views (after the reserved data); the rest of the memory is the kernel's copy scratch.
   */
  constructor(kernel: WasmGemm, capacity: number) {
    this.kernel = kernel;
    this.capacity = capacity;
  }

  /** Elements handed out so far. */
  get used(): number {
    return this.#used;
  }

  /** Bytes of the arena's memory (reserved data, views and scratch). */
  get bytes(): number {
    return this.kernel.memory.buffer.byteLength;
  }

  /**
   * A new zeroed view of `n` elements.
   * @param n - elements.
   * @returns the view.
   * @throws RangeError when the arena is exhausted (it never grows).
   */
  take(n: number): Float64Array {
    if (this.#used + n > this.capacity) throw new RangeError(`kernel arena of ${this.capacity} elements exhausted (${this.#used} used, ${n} more asked)`);
    const view = new Float64Array(this.kernel.memory.buffer, KERNEL_ARENA_DATA_BYTES + this.#used * 8, n);
    this.#used += n;
    return view;
  }
}

/**
 * A shared memory for an arena opened by another thread ({@link openKernelArena}):
 * the memory, and the `front` elements after the reserved data that the
 * arena leaves to whoever made it (a worker's partial slots: decoder.ts).
 */
export interface SharedArenaMemory {
  readonly memory: WasmMemory;
  readonly front: number;
}

/**
 * The pages of a shared memory that can hold `front` elements and then an
 * arena of `elements` ({@link openKernelArena} on it).
 *
 * @param front - the elements in front of the arena.
 * @param elements - the arena's views' total size.
 * @returns 64 KiB pages.
 */
export function kernelArenaPages(front: number, elements: number): number {
  return Math.ceil((KERNEL_ARENA_DATA_BYTES + (front + elements) * 8) / 65536);
}

/**
 * @param shared - a shared arena memory.
 * @returns the view of its front (what an arena opened on it leaves alone).
 */
export function arenaFront(shared: SharedArenaMemory): Float64Array {
  return new Float64Array(shared.memory.buffer, KERNEL_ARENA_DATA_BYTES, shared.front);
}

/**
 * Opens an arena of `elements` f64 values in a new kernel instance: on a new
 * memory of its own, or after the front of `shared`, a shared memory of at
 * least {@link kernelArenaPages} pages made by another thread (a worker's
 * arena, whose front other threads read). A memory holds one arena.
 *
 * @param elements - the views' total size (the memory also holds the reserved data before them).
 * @param shared - the shared memory to open it on.
 * @returns the arena, or null without WebAssembly SIMD, when the memory cannot be allocated, or when `shared` is too small.
 */
export function openKernelArena(elements: number, shared?: SharedArenaMemory): KernelArena | null {
  const front = shared?.front ?? 0;
  const kernel = createWasmGemm(DATA_ELEMENTS + front + elements, shared?.memory);
  if (kernel === null) return null;
  kernel.scratchBase = DATA_ELEMENTS + front + elements;
  owners.set(kernel.memory.buffer, kernel);
  gemmCounters.arenaBytes += kernel.memory.buffer.byteLength;
  const arena = new KernelArena(kernel, front + elements);
  if (front > 0) arena.take(front);
  return arena;
}
