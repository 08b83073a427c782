/**
 * Help at the end of a wave: a thread with no sequence left to claim computes
 * part of the matrix products of the sequences other threads are still
 * running, so the last sequence of a wave ends sooner. (Sequences are claimed
 * whole, so without help one thread waits for most of the other's last one:
 * on two cores of unequal speed, 1–2 ms of a 20 ms medium step.)
 *
 * While a thread runs sequences its pass runs on {@link HelpingKernels}, its
 * own kernel set whose linear layers offer work: when some thread serves, a
 * product whose three operands are all views of the running thread's
 * workspace memory — a shared WebAssembly.Memory — offers its lower rows
 * ({@link HelpDesk.offer}), computes its upper rows, and then settles: the
 * lower rows were computed by a helper, or they are taken back unclaimed and
 * computed here. A layer's weight gradient is offered whole instead, while
 * the thread computes the layer's input adjoint, an independent product of
 * the same size; a thread has one offer out at a time, so the products it
 * computes meanwhile are not split. The helper runs its own kernel set's
 * product on that memory (`Kernels.productOn`: an instance of the WebAssembly
 * kernel, or the native kernels), reading and writing the operands in place.
 * Each output element is still one whole dot product, and every kernel gives
 * the same bits, so which thread computed which rows changes no bit. Masked
 * products (an output row's terms depend on its index: attention's) are not
 * split; nor are products of fewer than {@link MIN_WORK} multiply-adds, nor
 * any product with the scalar kernels (their operands are ordinary arrays).
 *
 * The help block, a shared Int32Array the calling thread makes with the
 * threads' memories, holds a few counters and one offer slot per thread (its
 * owner writes it, any helper claims it by compare-and-exchange).
 */
import { gemmCounters } from '../internal/gemm-counters.ts';
import { GEMM_ADD, GEMM_LOWER_K, GEMM_LOWER_OUT, GEMM_TRANS_A, GEMM_UPPER_K } from '../kernels/gemm-flags.ts';
import type { Kernels, KernelSetName, MemoryProduct } from '../kernels/kernel-set.ts';
import type { WasmMemory } from '../kernels/wasm-assembler.ts';
import type { Workspace } from '../kernels/workspace.ts';
import { ADD_DINP, ADD_DWEIGHT, DWEIGHT_TRANSPOSED, type AttentionActivations, type AttentionAdjoints, type LinearWeight, type NormActivations, type RopeTables, type SwigluActivations, type SwigluAdjoints } from '../reference/layers.ts';
import { columnsOf, rowsOf, type Matrix } from '../reference/matrix.ts';

/** Indices of the help block's counters. */
export const HELP = {
  /** Threads still running sequences of the current TRAIN phase (set to the thread count when it starts). */
  RUNNING: 0,
  /** Threads serving offers. */
  SERVING: 1,
  /** Products computed by a thread other than the one that offered them, so far (a diagnostic). */
  HELPED: 2,
  /** 1 = threads offer their products (the decoder's tuning, `helpEnabled`, stored when a phase starts). */
  ENABLED: 3,
  /**
   * 1 = every product is offered, whether or not a thread serves yet, and left
   * to a helper: the offering thread waits until one claims it (tests, with a
   * claim plan that leaves some thread no sequence, so that one serves).
   */
  FORCE: 4,
} as const;

/** Products of fewer multiply-adds than this (about two microseconds) are not offered unless forced: handing them over would cost more than it saves. */
export const MIN_WORK = 16384;

/**
 * @param M - rows offered (the lower part of a product, or a whole one).
 * @param N - columns.
 * @param K - contracted length.
 * @param minRows - the offering thread's kernels' {@link Kernels.helpMinRows}.
 * @returns whether handing these rows to another thread pays.
 */
function worthOffering(M: number, N: number, K: number, minRows: number): boolean {
  return M * N * K >= MIN_WORK && M >= minRows;
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
 * @param enabled - whether threads offer their products (../parallel/tuning.ts `helpEnabled`).
 * @param force - whether every offered product is left to a helper (`helpForce`).
 */
export function resetHelp(help: Int32Array, threads: number, enabled = true, force = false): void {
  for (let i = SLOTS; i < help.length; i++) Atomics.store(help, i, EMPTY);
  Atomics.store(help, HELP.SERVING, 0);
  Atomics.store(help, HELP.ENABLED, enabled ? 1 : 0);
  Atomics.store(help, HELP.FORCE, force ? 1 : 0);
  Atomics.store(help, HELP.RUNNING, threads);
}

/** Where a thread offers its products (a {@link HelpDesk}; tests give their own). */
export interface Offers {
  /** The buffer of the memory an offered product's operands must all be in. */
  readonly buffer: unknown;
  /**
   * Offers the product `c (=|+=) op(a)·b` (element offsets into the memory) to a thread with no sequence left; one offer at a time.
   * @returns true when it is offered: then {@link settle} must be called before its operands change.
   */
  offer(c: number, ldc: number, a: number, lda: number, b: number, ldb: number, M: number, N: number, K: number, flags: number): boolean;
  /** @returns true when another thread computed the offered product, false when it was taken back (the caller computes it). */
  settle(): boolean;
}

/** One thread's side of the help block: the offers of its products, while it runs sequences. */
export class HelpDesk implements Offers {
  /** The buffer of the memory an offered product's operands must all be in. */
  readonly buffer: unknown;
  readonly #help: Int32Array;
  readonly #slot: number;
  readonly #minRows: number;

  /**
   * @param help - the help block.
   * @param threadIndex - this thread's index.
   * @param memory - the memory this thread's workspace is open on (its pass's buffers are views of it).
   * @param minRows - fewer rows than this are not offered unless forced (the thread's kernels' {@link Kernels.helpMinRows}).
   */
  constructor(help: Int32Array, threadIndex: number, memory: WasmMemory, minRows: number) {
    this.#help = help;
    this.#slot = SLOTS + SLOT * threadIndex;
    this.buffer = memory.buffer;
    this.#minRows = minRows;
  }

  /**
   * Offers the product `c (=|+=) op(a)·b` (element offsets into the memory) to a thread with no sequence left.
   * @returns true when it is offered: then {@link settle} must be called before its operands change.
   */
  offer(c: number, ldc: number, a: number, lda: number, b: number, ldb: number, M: number, N: number, K: number, flags: number): boolean {
    const h = this.#help;
    // One offer at a time: while a product handed over whole is out, the products computed meanwhile are not split.
    if (Atomics.load(h, this.#slot + STATE) !== EMPTY) return false;
    if (Atomics.load(h, HELP.FORCE) === 0 && (Atomics.load(h, HELP.SERVING) === 0 || Atomics.load(h, HELP.ENABLED) === 0 || !worthOffering(M, N, K, this.#minRows))) return false;
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

  /** @returns true when another thread computed the offered product, false when it was taken back (the caller computes it). */
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

/** The part of a product's left operand that gives output rows `first … first + count − 1`: its rows, or its columns when read transposed. */
function outputRowsOf(a: Matrix, first: number, count: number, flags: number): Matrix {
  return (flags & GEMM_TRANS_A) !== 0 ? columnsOf(a, first, count) : rowsOf(a, first, count);
}

/** @returns the element offset of `m`'s element (0, 0) in its memory. */
function elementOf(m: Matrix): number {
  return m.data.byteOffset / 8 + m.offset;
}

/** Flags under which an output row depends on its index (masked products): such products are not split. */
const ROW_DEPENDENT = GEMM_LOWER_OUT | GEMM_LOWER_K | GEMM_UPPER_K;

/**
 * A thread's kernels while it runs the sequences of a training phase: its
 * own set, whose linear layers offer rows of their products to a thread
 * with no sequence left (see the file's comment). Everything else is the
 * set's.
 */
export class HelpingKernels implements Kernels {
  readonly name: KernelSetName;
  readonly kind: Kernels['kind'];
  readonly helpMinRows: number;
  readonly #k: Kernels;
  readonly #desk: Offers;

  /**
   * @param kernels - the thread's kernel set.
   * @param desk - its side of the help block.
   */
  constructor(kernels: Kernels, desk: Offers) {
    this.#k = kernels;
    this.#desk = desk;
    this.name = kernels.name;
    this.kind = kernels.kind;
    this.helpMinRows = kernels.helpMinRows;
  }

  get workspace(): Workspace {
    return this.#k.workspace;
  }

  /** The set's product, its lower rows (from about half, a multiple of four) offered; any split gives the same bits. */
  product(c: Matrix, a: Matrix, b: Matrix, flags: number): void {
    const M = c.rows;
    const h = ((M >> 1) + 3) & ~3;
    if (h === 0 || h >= M || !this.#offer(c, a, b, flags, h)) {
      this.#k.product(c, a, b, flags);
      return;
    }
    gemmCounters.offeredProducts++;
    this.#k.product(rowsOf(c, 0, h), outputRowsOf(a, 0, h, flags), b, flags);
    if (!this.#desk.settle()) this.#k.product(rowsOf(c, h, M - h), outputRowsOf(a, h, M - h, flags), b, flags);
  }

  productOn(memory: WasmMemory): MemoryProduct | null {
    return this.#k.productOn(memory);
  }

  linearForward(out: Matrix, inp: Matrix, weight: LinearWeight): void {
    this.product(out, inp, weight.w, 0);
  }

  /**
   * The input adjoint and the weight gradient are independent products: the
   * weight gradient is offered whole while this thread computes the input
   * adjoint, and settled after it; else each is computed here, its lower
   * rows offered.
   */
  linearBackward(dinp: Matrix, dweight: Matrix, inp: Matrix, dout: Matrix, weight: LinearWeight, flags: number): void {
    const add = (flags & ADD_DWEIGHT) !== 0 ? GEMM_ADD : 0;
    const [a, b] = (flags & DWEIGHT_TRANSPOSED) !== 0 ? [dout, inp] : [inp, dout];
    const handed = this.#offer(dweight, a, b, GEMM_TRANS_A | add, 0);
    if (handed) gemmCounters.offeredProducts++;
    this.product(dinp, dout, weight.t as Matrix, (flags & ADD_DINP) !== 0 ? GEMM_ADD : 0);
    if (!handed || !this.#desk.settle()) this.product(dweight, a, b, GEMM_TRANS_A | add);
  }

  /**
   * Offers output rows `first …` of a product whose three operands are all in the desk's memory (the rows'
   * offsets computed here: no views are made for a product that is not offered, the common case); false when they
   * are not in it, or it is not taken.
   */
  #offer(c: Matrix, a: Matrix, b: Matrix, flags: number, first: number): boolean {
    const buffer = this.#desk.buffer;
    if ((flags & ROW_DEPENDENT) !== 0 || c.data.buffer !== buffer || a.data.buffer !== buffer || b.data.buffer !== buffer) return false;
    const transA = (flags & GEMM_TRANS_A) !== 0;
    const K = transA ? a.rows : a.columns;
    const aFirst = elementOf(a) + (transA ? first : first * a.stride); // outputRowsOf(a, first, …)
    return this.#desk.offer(elementOf(c) + first * c.stride, c.stride, aFirst, a.stride, elementOf(b), b.stride, c.rows - first, c.columns, K, flags);
  }

  rmsNormForward(n: NormActivations, x: Matrix, gain: Float64Array, eps: number): void {
    this.#k.rmsNormForward(n, x, gain, eps);
  }

  rmsNormBackward(dx: Matrix, gainTerms: Matrix, n: NormActivations, u: Matrix, x: Matrix, gain: Float64Array): void {
    this.#k.rmsNormBackward(dx, gainTerms, n, u, x, gain);
  }

  ropeForward(out: Matrix, inp: Matrix, rope: RopeTables, first: number): void {
    this.#k.ropeForward(out, inp, rope, first);
  }

  ropeBackward(dinp: Matrix, dout: Matrix, rope: RopeTables, first: number): void {
    this.#k.ropeBackward(dinp, dout, rope, first);
  }

  attentionForward(out: Matrix, att: AttentionActivations, heads: number, scale: number): void {
    this.#k.attentionForward(out, att, heads, scale);
  }

  attentionBackward(g: AttentionAdjoints, dout: Matrix, att: AttentionActivations, heads: number, scale: number): void {
    this.#k.attentionBackward(g, dout, att, heads, scale);
  }

  swigluForward(a: SwigluActivations): void {
    this.#k.swigluForward(a);
  }

  swigluBackward(g: SwigluAdjoints, a: SwigluActivations): void {
    this.#k.swigluBackward(g, a);
  }

  crossEntropyForward(rowLoss: Float64Array, prob: Matrix, logits: Matrix, targets: Int32Array): void {
    this.#k.crossEntropyForward(rowLoss, prob, logits, targets);
  }

  crossEntropyBackward(dlogits: Matrix, prob: Matrix, targets: Int32Array, k: number): void {
    this.#k.crossEntropyBackward(dlogits, prob, targets, k);
  }
}

/**
 * A thread's kernels offering its products at `desk` (tests give their own desk).
 * @param kernels - the thread's kernel set.
 * @param desk - where it offers.
 * @returns the kernels.
 */
export function helpingKernelsOn(kernels: Kernels, desk: Offers): HelpingKernels {
  return new HelpingKernels(kernels, desk);
}

/** A helper's kernels on the other threads' memories, per thread index (null for itself), made once per set of memories. */
export type HelperKernels = readonly (MemoryProduct | null)[];

/**
 * @param kernels - this thread's kernel set.
 * @param memories - per thread index, its arena memory.
 * @param self - this thread's index (no kernel for it).
 * @returns this thread's products on the others' memories (the same bits as theirs).
 */
export function helperKernels(kernels: Kernels, memories: readonly WasmMemory[], self: number): HelperKernels {
  return memories.map((m, t) => (t === self ? null : kernels.productOn(m)));
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
          k(help[a] as number, help[a + 1] as number, help[a + 2] as number, help[a + 3] as number, help[a + 4] as number, help[a + 5] as number, help[a + 6] as number, help[a + 7] as number, help[a + 8] as number, help[a + 9] as number);
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
