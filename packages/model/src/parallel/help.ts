/**
 * Help at the end of a wave: a thread with no sequence left to claim computes
 * part of the matrix products of the sequences other threads are still
 * running, so the last sequence of a wave ends sooner. (Sequences are claimed
 * whole, so without help one thread waits for most of the other's last one:
 * on two cores of unequal speed, 1–2 ms of a 20 ms medium step.)
 *
 * While a thread runs sequences its products may be split (gemm.ts
 * `setProductOffer`): when some thread serves, a product whose three operands
 * are all views of the running thread's kernel-arena memory — a shared
 * WebAssembly.Memory — offers its lower rows ({@link HelpDesk.offer}),
 * computes its upper rows, and then settles: the lower rows were computed by
 * a helper, or they are taken back unclaimed and computed here. A layer's
 * weight gradient is offered whole instead, while the thread computes the
 * layer's input adjoint, an independent product of the same size
 * (kernels/linear.ts, gemm.ts `gemmTransABeside`); a thread has one offer out at a
 * time, so the products it computes meanwhile are not split. The helper
 * runs its own kernels on that memory — an instance of the same WebAssembly
 * kernel, or the native kernels when they are active (kernels/native.ts; the
 * threaded decoder's passes then open their arenas on the shared memories
 * too: gemm.ts `gemmArena`) — reading and writing the operands in place. Each
 * output element is still one whole dot product, and every kernel gives the
 * same bits, so which thread computed which rows changes no bit. Masked
 * products (an output row's terms depend on its index) are not split; nor are
 * products of fewer than {@link MIN_WORK} multiply-adds, nor any product with
 * the scalar kernels (their operands are ordinary arrays).
 *
 * The help block, a shared Int32Array the calling thread makes with the
 * threads' memories (decoder.ts), holds a few counters and one offer slot per
 * thread (its owner writes it, any helper claims it by compare-and-exchange).
 */
import type { ProductOffer } from '../kernels/gemm.ts';
import { activeNativeKernels, type NativeAddon } from '../kernels/native.ts';
import { createWasmGemm } from '../kernels/wasm-gemm.ts';
import type { WasmMemory } from '../kernels/wasm-assembler.ts';

/** Indices of the help block's counters. */
export const HELP = {
  /** Threads still running sequences of the current TRAIN phase (set to the thread count when it starts). */
  RUNNING: 0,
  /** Threads serving offers. */
  SERVING: 1,
  /** Products computed by a thread other than the one that offered them, so far (a diagnostic). */
  HELPED: 2,
  /** 1 = threads offer their products (from {@link helpTuning}, stored when a phase starts). */
  ENABLED: 3,
  /**
   * 1 = every product is offered, whether or not a thread serves yet, and left
   * to a helper: the offering thread waits until one claims it (tests, with a
   * claim plan that leaves some thread no sequence, so that one serves).
   */
  FORCE: 4,
} as const;

/**
 * Whether threads offer their products (benchmarks turn it off to compare),
 * and whether an offered product is always left to a helper (tests: then
 * every product of a thread's sequences is computed by another thread while
 * one serves). Read by the calling thread when a TRAIN phase starts; the bits
 * are the same either way.
 */
export const helpTuning: { enabled: boolean; force: boolean } = { enabled: true, force: false };

/** Products of fewer multiply-adds than this (about two microseconds) are not offered unless forced: handing them over would cost more than it saves. */
export const MIN_WORK = 16384;

/**
 * With the native kernels, fewer rows than this are not offered either
 * (unless forced). The native kernel packs panels of B once
 * per call for up to 128 rows and runs products of 32 rows or fewer
 * unpacked (native/kernels.c), and the helper reads B from the other core's
 * cache: two halves of a 64-row product cost more than the whole. Measured on
 * medium (T = 64), 2 threads, in one process: every product offered 0.2–1.8 %
 * slower a step than no help; from 128 rows (64 lower ones) no slower; large
 * (T = 128) about 3 % faster either way.
 */
export const NATIVE_MIN_ROWS = 64;

/**
 * @param M - rows offered (the lower part of a product, or a whole one).
 * @param N - columns.
 * @param K - contracted length.
 * @returns whether handing these rows to another thread pays, for the kernels active on this (the offering) thread.
 */
function worthOffering(M: number, N: number, K: number): boolean {
  return M * N * K >= MIN_WORK && (M >= NATIVE_MIN_ROWS || activeNativeKernels() === null);
}

/** The first offer slot, and the Int32 elements of each. */
const SLOTS = 8;
const SLOT = 12;
/** Fields of an offer slot. */
const STATE = 0;
const ARGS = 1;
/** Offer states. */
const EMPTY = 0;
const OFFERED = 1;
const CLAIMED = 2;
const DONE = 3;

/**
 * @param threads - threads taking part.
 * @returns a new help block for them (shared).
 */
export function helpBlock(threads: number): Int32Array {
  return new Int32Array(new SharedArrayBuffer((SLOTS + SLOT * threads) * 4));
}

/**
 * Readies a help block for a phase: every thread running, no offer pending
 * (an offer left by a thread that failed in the last phase is dropped).
 * @param help - the help block.
 * @param threads - threads taking part.
 */
export function resetHelp(help: Int32Array, threads: number): void {
  for (let i = SLOTS; i < help.length; i++) Atomics.store(help, i, EMPTY);
  Atomics.store(help, HELP.SERVING, 0);
  Atomics.store(help, HELP.ENABLED, helpTuning.enabled ? 1 : 0);
  Atomics.store(help, HELP.FORCE, helpTuning.force ? 1 : 0);
  Atomics.store(help, HELP.RUNNING, threads);
}

/** One thread's side of the help block: the offers of its products, while it runs sequences (gemm.ts `setProductOffer`). */
export class HelpDesk implements ProductOffer {
  readonly buffer: unknown;
  readonly #help: Int32Array;
  readonly #slot: number;

  /**
   * @param help - the help block.
   * @param threadIndex - this thread's index.
   * @param memory - the memory this thread's kernel arena is open on (its pass's buffers are views of it).
   */
  constructor(help: Int32Array, threadIndex: number, memory: WasmMemory) {
    this.#help = help;
    this.#slot = SLOTS + SLOT * threadIndex;
    this.buffer = memory.buffer;
  }

  offer(c: number, ldc: number, a: number, lda: number, b: number, ldb: number, M: number, N: number, K: number, flags: number): boolean {
    const h = this.#help;
    // One offer at a time: while a product handed over whole is out (gemm.ts gemmTransABeside), the products computed meanwhile are not split.
    if (Atomics.load(h, this.#slot + STATE) !== EMPTY) return false;
    if (Atomics.load(h, HELP.FORCE) === 0 && (Atomics.load(h, HELP.SERVING) === 0 || Atomics.load(h, HELP.ENABLED) === 0 || !worthOffering(M, N, K))) return false;
    const s = this.#slot + ARGS;
    h[s] = c;
    h[s + 1] = ldc;
    h[s + 2] = a;
    h[s + 3] = lda;
    h[s + 4] = b;
    h[s + 5] = ldb;
    h[s + 6] = M;
    h[s + 7] = N;
    h[s + 8] = K;
    h[s + 9] = flags;
    Atomics.store(h, this.#slot + STATE, OFFERED);
    return true;
  }

  settle(): boolean {
    const h = this.#help;
    const state = this.#slot + STATE;
    if (Atomics.load(h, HELP.FORCE) === 0 && Atomics.compareExchange(h, state, OFFERED, EMPTY) === OFFERED) return false;
    // Claimed (or, forced, about to be): the helper's writes are visible once it stores DONE.
    while (Atomics.load(h, state) !== DONE);
    Atomics.store(h, state, EMPTY);
    return true;
  }
}

/** A product kernel on one thread's memory: `gemm(c, ldc, a, lda, b, ldb, M, N, K, flags)` with element offsets into it. */
export interface HelperKernel {
  run(c: number, ldc: number, a: number, lda: number, b: number, ldb: number, M: number, N: number, K: number, flags: number): void;
}

/** A helper's kernels on the other threads' memories, per thread index (null for itself), made once per set of memories. */
export type HelperKernels = readonly (HelperKernel | null)[];

/**
 * The native kernels on a whole memory (its three operands are views of it).
 * @param native - this thread's native kernels.
 * @param memory - another thread's arena memory.
 * @returns the kernel.
 */
function nativeOn(native: NativeAddon, memory: WasmMemory): HelperKernel {
  const view = new Float64Array(memory.buffer);
  return { run: (c, ldc, a, lda, b, ldb, M, N, K, flags) => native.gemm(view, c, ldc, view, a, lda, view, b, ldb, M, N, K, flags) };
}

/**
 * @param memories - per thread index, its arena memory.
 * @param self - this thread's index (no kernel for it).
 * @returns kernels of this thread's own on the others' memories: the native kernels while they are active on this thread, else WebAssembly (the same bits).
 */
export function helperKernels(memories: readonly WasmMemory[], self: number): HelperKernels {
  const native = activeNativeKernels();
  return memories.map((m, t) => (t === self ? null : native !== null ? nativeOn(native, m) : createWasmGemm(m.buffer.byteLength / 8, m)));
}

/**
 * Serves the other threads' offers until no thread runs sequences any more
 * (spinning: the thread has nothing else to do until the phase ends).
 * @param help - the help block.
 * @param kernels - this thread's kernels on the others' memories (none on its own: its slot is skipped).
 * @returns the milliseconds it spent without a product to compute (waiting for the others, in effect).
 */
export function serveProducts(help: Int32Array, kernels: HelperKernels): number {
  const threads = kernels.length;
  const start = performance.now();
  let working = 0;
  Atomics.add(help, HELP.SERVING, 1);
  try {
    while (Atomics.load(help, HELP.RUNNING) > 0) {
      for (let t = 0; t < threads; t++) {
        const k = kernels[t];
        if (k === null || k === undefined) continue;
        const slot = SLOTS + SLOT * t;
        if (Atomics.load(help, slot + STATE) !== OFFERED || Atomics.compareExchange(help, slot + STATE, OFFERED, CLAIMED) !== OFFERED) continue;
        const a = slot + ARGS;
        const t0 = performance.now();
        try {
          k.run(help[a] as number, help[a + 1] as number, help[a + 2] as number, help[a + 3] as number, help[a + 4] as number, help[a + 5] as number, help[a + 6] as number, help[a + 7] as number, help[a + 8] as number, help[a + 9] as number);
        } finally {
          Atomics.add(help, HELP.HELPED, 1);
          Atomics.store(help, slot + STATE, DONE);
          working += performance.now() - t0;
        }
      }
    }
  } finally {
    Atomics.sub(help, HELP.SERVING, 1);
  }
  return performance.now() - start - working;
}
