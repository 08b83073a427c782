/**
 * The AdamW element update (package-internal): a WebAssembly SIMD kernel
 * assembled at load time with @llmcp/model's assembler (no toolchain, no
 * binary blob) and the same update in JavaScript, for runtimes without
 * WebAssembly SIMD and to name the element whose update is not finite.
 *
 * Bit-exactness: every f64x2 `add`, `sub`, `mul`, `div` and `sqrt` is the
 * correctly rounded IEEE operation in each lane, so a lane computes exactly
 * what the scalar JavaScript computes for that element: the operation
 * sequence per element is the same (no fused multiply-add, no reassociation).
 *
 * The kernel's memory holds the step's constants, copies of the gradients and
 * parameters, the moments and the 3n new values, and a table of blocks (at
 * most {@link BLOCK} elements of one tensor each); the new values are copied
 * out only when every one is finite. Each block is one call of the update
 * function, and the calls are shared out among the decoder's threads when the
 * model offers them (`Decoder.shareCalls` of @llmcp/model): every element is
 * computed by exactly one call, so the split changes no bit.
 */

import { callsOnThisThread, type CallSetSpec, type SharedCalls } from '@llmcp/model';
import { Code, I32, V128, compileModule, fixedMemory, importedMemoryModuleBytes, perMemoryKind, type WasmApi, type WasmFunctionSpec, type WasmMemory } from '@llmcp/model/wasm-assembler';

// ── Memory layout ───────────────────────────────────────────────────────────

/** Elements per block: the unit of work shared out among threads, and of the element-by-element check of a block that is not finite. */
export const BLOCK = 1024;
/** f64 slot of the AdamW constants (12 of them, see {@link AdamWKernel.constants}). */
const CONST_OFF = 0;
/**
 * f64 slot of the resident arrays, each n + 2 long (the pad takes the odd
 * lane of a tensor's last pair): the gradients and parameters copied in, then
 * two pairs of first and second moments and the new parameters. One pair
 * holds the current moments (the optimizer's `first`/`second`), the other
 * receives the new ones; a step whose values are all finite makes the new
 * pair current (nothing is copied), a refused one leaves the current pair as
 * it was. After them, per block, its tensor's decay product lr × wd.
 */
const ARRAYS_OFF = 16;
const PAGE = 65536;
/** Above this many bytes of kernel memory the JavaScript loops are used instead. */
const MAX_BYTES = 1 << 30;

// ── The AdamW update ────────────────────────────────────────────────────────

/** How each raw gradient element is turned into the one AdamW sees (clip.ts `GradientTransform`). */
export type TransformMode = 0 | 1 | 2;

const C_BETA1 = 0;
const C_OMB1 = 1;
const C_BETA2 = 2;
const C_OMB2 = 3;
const C_C1 = 4;
const C_C2 = 5;
const C_EPS = 6;
const C_LR = 7;
const C_MUL = 9;
const C_DIV = 10;
const C_FAC = 11;

/** Arguments of one call of the update (byte addresses), as stored in the block table: see {@link adamwFunction}. */
const ARITY = 9;

/**
 * The update of one block, specialised to one gradient transform: params
 * (end in bytes; byte addresses of the block's gradients, parameters, first
 * and second moments, its new parameters, first and second moments, and of
 * its decay product) → 1 when some new value or direction is not finite.
 * Per element exactly {@link scalarUpdate}'s sequence, two elements per
 * iteration; an odd last element is computed in a pair whose second lane
 * (the next element's inputs) is not stored, so a call writes only its own
 * block (calls run on any thread, in any order).
 */
function adamwFunction(mode: TransformMode): WasmFunctionSpec {
  // params: 0 end, 1 g, 2 w, 3 m, 4 v (in), 5 w2, 6 m2, 7 v2 (out), 8 lrwd; locals: 9 k (i32); v128 from 10.
  const [END, PG, PW, PMI, PVI, PW2, PM2, PV2, PLRWD, K] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
  const [B1, OMB1, B2, OMB2, C1, C2, EPS, LR, LRWD, MUL, DIV, FAC] = [10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21];
  const [G, M2, V2, DIR, W, W2, ACC] = [22, 23, 24, 25, 26, 27, 28];
  const e = new Code();
  const constant = (slot: number, local: number): void => {
    e.i32(0).v128Load64Splat((CONST_OFF + slot) * 8).set(local);
  };
  constant(C_BETA1, B1);
  constant(C_OMB1, OMB1);
  constant(C_BETA2, B2);
  constant(C_OMB2, OMB2);
  constant(C_C1, C1);
  constant(C_C2, C2);
  constant(C_EPS, EPS);
  constant(C_LR, LR);
  e.get(PLRWD).v128Load64Splat(0).set(LRWD);
  constant(C_MUL, MUL);
  constant(C_DIV, DIV);
  constant(C_FAC, FAC);
  const at = (base: number): void => {
    e.get(base).get(K).op(0x6a);
  };
  /** The new values of the pair at k into W2, M2, V2 and DIR, and their finiteness into ACC. */
  const pair = (): void => {
    // g = raw | raw * mul | (raw / div) * fac
    at(PG);
    e.v128Load(0);
    if (mode === 1) e.get(MUL).vMul();
    if (mode === 2) e.get(DIV).vDiv().get(FAC).vMul();
    e.set(G);
    // m2 = beta1 * m + omb1 * g
    e.get(B1);
    at(PMI);
    e.v128Load(0).vMul().get(OMB1).get(G).vMul().vAdd().set(M2);
    // v2 = beta2 * v + omb2 * (g * g)
    e.get(B2);
    at(PVI);
    e.v128Load(0).vMul().get(OMB2).get(G).get(G).vMul().vMul().vAdd().set(V2);
    // direction = (m2 / c1) / (sqrt(v2 / c2) + eps)
    e.get(M2).get(C1).vDiv().get(V2).get(C2).vDiv().vSqrt().get(EPS).vAdd().vDiv().set(DIR);
    // w2 = (w - lr * direction) - lrwd * w
    at(PW);
    e.v128Load(0).set(W);
    e.get(W).get(LR).get(DIR).vMul().vSub().get(LRWD).get(W).vMul().vSub().set(W2);
    // acc += (w2 - w2) + (m2 - m2) + (v2 - v2) + (dir - dir): stays +0 while all are finite, NaN after.
    e.get(ACC).get(W2).get(W2).vSub().vAdd().get(M2).get(M2).vSub().vAdd();
    e.get(V2).get(V2).vSub().vAdd().get(DIR).get(DIR).vSub().vAdd().set(ACC);
  };
  e.i32(0).set(K);
  // pairs while two elements remain
  e.block().loop();
  e.get(K).i32(8).add().get(END).geS().brIf(1);
  pair();
  for (const [out, value] of [[PW2, W2], [PM2, M2], [PV2, V2]] as const) {
    at(out);
    e.get(value).v128Store();
  }
  e.get(K).i32(16).add().set(K);
  e.br(0).end().end();
  // an odd last element: its lane only (the other lane's inputs are the next element's, or the pad's: finite)
  e.get(K).get(END).ltS().if();
  pair();
  for (const [out, value] of [[PW2, W2], [PM2, M2], [PV2, V2]] as const) {
    at(out);
    e.get(value).f64x2ExtractLane(0).f64Store();
  }
  e.end();
  // result: any lane of acc is NaN (acc != acc)
  e.get(ACC).get(ACC).simd(0x48).simd(0x53);
  return { name: `adamw${mode}`, params: Array<number>(ARITY).fill(I32), results: [I32], locals: [[1, I32], [19, V128]], body: [...e.bytes, 0x0b] };
}

// ── The same update in JavaScript (no WebAssembly SIMD, and naming the element that is not finite) ──

/** One step's constants (../../../../docs/spec/training.md §6.3) and gradient transform. */
export interface UpdateConstants {
  readonly mode: TransformMode;
  readonly beta1: number;
  readonly omb1: number;
  readonly beta2: number;
  readonly omb2: number;
  readonly c1: number;
  readonly c2: number;
  readonly epsilon: number;
  readonly lr: number;
  readonly mul: number;
  readonly div: number;
  readonly fac: number;
}

/**
 * The update of elements [start, end) in JavaScript, operation by operation
 * (the SIMD kernel computes the same sequence per lane): the new parameter,
 * first and second moment of element i to `S[i - base]`, `S[stride + i - base]`
 * and `S[2 * stride + i - base]`, stopping at the first element whose new
 * value or direction is not finite.
 * @returns that element's index, or -1.
 */
export function scalarUpdate(
  k: UpdateConstants,
  lrwd: number,
  arrays: { readonly G: Float64Array; readonly W: Float64Array; readonly M: Float64Array; readonly V: Float64Array },
  range: { readonly start: number; readonly end: number },
  out: { readonly S: Float64Array; readonly base: number; readonly stride: number },
): number {
  const { mode, beta1, omb1, beta2, omb2, c1, c2, epsilon, lr, mul, div, fac } = k;
  const { G, W, M, V } = arrays;
  const { start, end } = range;
  const { S, base, stride } = out;
  for (let i = start; i < end; i++) {
    const raw = G[i] as number;
    const g = mode === 0 ? raw : mode === 1 ? raw * mul : (raw / div) * fac;
    const m2 = beta1 * (M[i] as number) + omb1 * g;
    const gg = g * g;
    const v2 = beta2 * (V[i] as number) + omb2 * gg;
    const mHat = m2 / c1;
    const vHat = v2 / c2;
    const direction = mHat / (Math.sqrt(vHat) + epsilon);
    const adaptive = lr * direction;
    const w = W[i] as number;
    const decay = lrwd * w;
    const w2 = w - adaptive - decay;
    if (w2 - w2 !== 0 || m2 - m2 !== 0 || v2 - v2 !== 0 || direction - direction !== 0) return i;
    const o = i - base;
    S[o] = w2;
    S[stride + o] = m2;
    S[2 * stride + o] = v2;
  }
  return -1;
}

// ── Instantiation ───────────────────────────────────────────────────────────

/** The update module: on its own memory, and on an imported shared one. */
const compiledModule = perMemoryKind((shared) => compileModule(importedMemoryModuleBytes([adamwFunction(0), adamwFunction(1), adamwFunction(2)], shared)));
let enabled = true;

/**
 * Turns the SIMD kernels on or off for optimizers and clips created or run
 * afterwards (tests compare both paths; off behaves like a runtime without
 * WebAssembly SIMD).
 * @param on - whether to use them.
 * @returns whether they were on.
 */
export function setOptimSimd(on: boolean): boolean {
  const was = enabled;
  enabled = on;
  return was;
}

/**
 * Whether the SIMD kernels are available and on.
 * @returns true when the WebAssembly paths run.
 */
export function optimSimdActive(): boolean {
  return enabled && compiledModule(false) !== null;
}

/** An instance of a kernel module and a view of its memory. */
export interface KernelInstance {
  readonly f64: Float64Array;
  readonly exports: Record<string, unknown>;
}

/**
 * Instantiates a kernel module (importing "env" "memory") on a new memory that never grows.
 * @param module - the compiled module.
 * @param pages - 64 KiB pages of the memory.
 * @returns the instance, or null when the memory cannot be had.
 */
export function instantiateFixed(module: object, pages: number): KernelInstance | null {
  try {
    const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly as WasmApi;
    const memory = fixedMemory(pages);
    const instance = new api.Instance(module, { env: { memory } });
    return { f64: new Float64Array(memory.buffer), exports: instance.exports };
  } catch {
    return null;
  }
}

/**
 * A model whose threads can share out the update's calls (`Decoder.shareCalls`
 * of @llmcp/model, a decoder with worker threads).
 */
export interface CallSharing {
  readonly threads: number;
  shareCalls(spec: CallSetSpec): SharedCalls;
}

/** The arrays of one optimizer's kernel: the model's gradients and parameters, and its tensors' extents. */
export interface KernelArrays {
  readonly G: Float64Array;
  readonly W: Float64Array;
  readonly tensors: readonly { readonly offset: number; readonly length: number }[];
}

/** Releases the shared calls of optimizers that are gone (their kernel memories go with them). */
const releaser: { register(target: object, held: SharedCalls): void } | null =
  typeof FinalizationRegistry === 'function' ? new FinalizationRegistry<SharedCalls>((calls) => calls.release()) : null;

/**
 * One optimizer's AdamW kernel. Its memory (fixed size, never grown) holds
 * the constants, copies of the gradients and parameters, the moments (exposed
 * as {@link first} and {@link second}), the 3n new values and the blocks'
 * decay products; the blocks (at most {@link BLOCK} elements, never across
 * tensors) and their calls are made once.
 */
export class AdamWKernel {
  /** The current first and second moments, resident in the kernel's memory (the optimizer's `first`/`second`). */
  #first: Float64Array;
  #second: Float64Array;
  /** The other pair, which a step writes and {@link commit} makes current. */
  #nextFirst: Float64Array;
  #nextSecond: Float64Array;
  /** Number of blocks. */
  readonly blocks: number;
  readonly #f64: Float64Array;
  /** Per block: its first element and tensor index (and a last entry: the end). */
  readonly #start: Int32Array;
  readonly #tensor: Int32Array;
  /** Per block, ARITY arguments of its call (byte addresses). */
  readonly #calls: Int32Array;
  readonly #shared: SharedCalls;
  readonly #G: Float64Array;
  readonly #W: Float64Array;
  /** The copies of the gradients and parameters in the memory, the new parameters, and the blocks' decay products. */
  readonly #gIn: Float64Array;
  readonly #wIn: Float64Array;
  readonly #newW: Float64Array;
  readonly #lrwd: Float64Array;
  /** Whether {@link run} copies the gradients and parameters in (else each thread copies what its calls read). */
  readonly #copyIn: boolean;
  /** Whether {@link commit} copies the new parameters out (else each thread copied its blocks' when every update was finite). */
  readonly #copyOut: boolean;
  /** Whether the last {@link run} left new parameters to copy out (its threads did not, or one of its blocks failed). */
  #pending = false;

  private constructor(memory: WasmMemory, module: object, arrays: KernelArrays, sharing: CallSharing | null) {
    const { G, W, tensors } = arrays;
    const n = W.length;
    const f = new Float64Array(memory.buffer);
    this.#f64 = f;
    const seg = n + 2;
    const at = (k: number): Float64Array => f.subarray(ARRAYS_OFF + k * seg, ARRAYS_OFF + k * seg + n);
    this.#gIn = at(0);
    this.#wIn = at(1);
    this.#first = at(2);
    this.#second = at(3);
    this.#newW = at(4);
    this.#nextFirst = at(5);
    this.#nextSecond = at(6);
    // the pads (the odd lane of the last pair): a finite update whatever the constants
    f[ARRAYS_OFF + 3 * seg + n] = 1;
    f[ARRAYS_OFF + 6 * seg + n] = 1;
    const start: number[] = [];
    const tensor: number[] = [];
    tensors.forEach((t, i) => {
      for (let b = t.offset; b < t.offset + t.length; b += BLOCK) {
        start.push(b);
        tensor.push(i);
      }
    });
    const blocks = tensor.length;
    this.blocks = blocks;
    const lrwdOff = ARRAYS_OFF + 7 * seg;
    this.#lrwd = f.subarray(lrwdOff, lrwdOff + blocks);
    const table = (length: number): Int32Array => new Int32Array(sharing === null ? new ArrayBuffer(length * 4) : new SharedArrayBuffer(length * 4));
    const calls = table(blocks * ARITY);
    const spans = table(2 * blocks);
    for (let k = 0; k < blocks; k++) {
      const t = tensors[tensor[k] as number] as { offset: number; length: number };
      const b = start[k] as number;
      const o = k * ARITY;
      const end = Math.min(b + BLOCK, t.offset + t.length);
      spans[2 * k] = b;
      spans[2 * k + 1] = end;
      calls[o] = (end - b) * 8;
      calls[o + 1] = this.#gIn.byteOffset + b * 8;
      calls[o + 2] = this.#wIn.byteOffset + b * 8;
      calls[o + 5] = this.#newW.byteOffset + b * 8;
      calls[o + 8] = this.#lrwd.byteOffset + k * 8;
    }
    this.#calls = calls;
    this.#pointMoments();
    start.push(n);
    this.#start = Int32Array.from(start);
    this.#tensor = Int32Array.from(tensor);
    this.#G = G;
    this.#W = W;
    const entries = ['adamw0', 'adamw1', 'adamw2'];
    // Each thread copies in the gradients and parameters its blocks read; where other threads cannot read them, run() copies them all first.
    const readable = sharing === null || (G.buffer instanceof SharedArrayBuffer && W.buffer instanceof SharedArrayBuffer);
    this.#copyIn = !readable;
    const inputs = readable ? { sources: [G, W], at: [this.#gIn.byteOffset / 8, this.#wIn.byteOffset / 8], spans } : null;
    // Likewise each thread copies out the new parameters of its blocks (once every block's update is finite), where it can write them; else commit() copies them all.
    const writable = sharing === null || W.buffer instanceof SharedArrayBuffer;
    this.#copyOut = !writable;
    const outputs = writable ? { targets: [W], at: [this.#newW.byteOffset / 8], spans } : null;
    const spec = { module, memory, entries, calls, arity: ARITY, inputs, outputs };
    this.#shared = sharing === null ? callsOnThisThread(spec) : sharing.shareCalls(spec);
    releaser?.register(this, this.#shared);
  }

  /** Points every block's call at the current and the next moments. */
  #pointMoments(): void {
    const calls = this.#calls;
    const [m, v, m2, v2] = [this.#first.byteOffset, this.#second.byteOffset, this.#nextFirst.byteOffset, this.#nextSecond.byteOffset];
    const g = this.#gIn.byteOffset;
    for (let o = 0; o < calls.length; o += ARITY) {
      const at = (calls[o + 1] as number) - g;
      calls[o + 3] = m + at;
      calls[o + 4] = v + at;
      calls[o + 6] = m2 + at;
      calls[o + 7] = v2 + at;
    }
  }

  /**
   * A kernel for the model's arrays, or null (no WebAssembly SIMD, turned
   * off, too large, or tensors that do not tile the arrays in order).
   * @param arrays - gradients, parameters and tensor extents.
   * @param sharing - the model's threads to share the calls with (null or absent: this thread makes them all).
   * @returns the kernel or null.
   */
  static create(arrays: KernelArrays, sharing: CallSharing | null = null): AdamWKernel | null {
    if (!enabled) return null;
    const n = arrays.W.length;
    let next = 0;
    let blocks = 0;
    for (const t of arrays.tensors) {
      if (t.offset !== next || !(t.length > 0)) return null;
      next += t.length;
      blocks += Math.ceil(t.length / BLOCK);
    }
    if (next !== n || arrays.G.length !== n) return null;
    const bytes = (ARRAYS_OFF + 7 * (n + 2) + blocks) * 8;
    if (bytes > MAX_BYTES) return null;
    // On a shared memory when the model's threads take part; where one cannot be had, on a memory of its own.
    for (const shared of sharing !== null && sharing.threads > 1 ? [true, false] : [false]) {
      const module = compiledModule(shared);
      if (module === null) continue;
      try {
        return new AdamWKernel(fixedMemory(Math.ceil(bytes / PAGE), shared), module, arrays, shared ? sharing : null);
      } catch {
        // next
      }
    }
    return null;
  }

  /**
   * Sets the step's constants.
   * @param c - beta1, 1 - beta1, beta2, 1 - beta2, c1, c2, epsilon, lr, then the transform's multiplier, divisor, factor.
   */
  constants(c: readonly number[]): void {
    const f = this.#f64;
    for (let i = 0; i < 8; i++) f[CONST_OFF + i] = c[i] as number;
    f[CONST_OFF + C_MUL] = c[8] as number;
    f[CONST_OFF + C_DIV] = c[9] as number;
    f[CONST_OFF + C_FAC] = c[10] as number;
  }

  /**
   * The extent of a block.
   * @param k - block index.
   * @returns its first element, end and tensor index.
   */
  block(k: number): { start: number; end: number; tensor: number } {
    return { start: this.#start[k] as number, end: (this.#start[k] as number) + ((this.#calls[k * ARITY] as number) >> 3), tensor: this.#tensor[k] as number };
  }

  /**
   * Computes the new values of every block into the kernel's result arrays
   * (the gradients and parameters copied in first, by the thread that
   * computes them where it can read them), the blocks' calls shared out among
   * the model's threads when it has several. When every block's update is
   * finite, the threads then copy their blocks' new parameters into the
   * model's where they can write them (the moments become current at
   * {@link commit}); when one is not, the model's parameters are untouched.
   * @param mode - the gradient transform.
   * @param lrwd - per tensor, the decay product lr × wd.
   * @returns the first block with a value that is not finite (the caller checks it, and those after it, element by element), or -1.
   */
  run(mode: TransformMode, lrwd: Float64Array): number {
    if (this.#copyIn) {
      this.#gIn.set(this.#G);
      this.#wIn.set(this.#W);
    }
    const table = this.#lrwd;
    const tensors = this.#tensor;
    for (let k = 0; k < this.blocks; k++) table[k] = lrwd[tensors[k] as number] as number;
    const failed = this.#shared.run(mode);
    this.#pending = this.#copyOut || failed >= 0;
    return failed;
  }

  /** The current first moments, resident in the kernel's memory (the array changes with every committed step). */
  get first(): Float64Array {
    return this.#first;
  }

  /** The current second moments, like {@link first}. */
  get second(): Float64Array {
    return this.#second;
  }

  /** Copies the new parameters into the model's (unless the threads did) and makes the new moments current. */
  commit(): void {
    if (this.#pending) this.#W.set(this.#newW);
    [this.#first, this.#nextFirst] = [this.#nextFirst, this.#first];
    [this.#second, this.#nextSecond] = [this.#nextSecond, this.#second];
    this.#pointMoments();
  }
}
