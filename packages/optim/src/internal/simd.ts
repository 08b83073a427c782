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
 * The kernel's memory holds the step's constants, one input block (gradients,
 * parameters and moments copied in, {@link BLOCK} elements at a time) and the
 * 3n new values; they are copied out only when every one is finite.
 */

import { Code, I32, V128, importedMemoryModuleBytes, type WasmApi, type WasmFunctionSpec } from '@llmcp/model/wasm-assembler';

/** Emits `block loop (exit when k >= end) body; k += step; br loop end end`. */
function pairLoop(e: Code, k: number, end: number, step: number, body: () => void): void {
  e.block().loop();
  e.get(k).get(end).geS().brIf(1);
  body();
  e.get(k).i32(step).add().set(k);
  e.br(0).end().end();
}

// ── Memory layout ───────────────────────────────────────────────────────────

/** Elements per block copied through the kernels' input area. */
export const BLOCK = 1024;
/** f64 slot of the AdamW constants (12 of them, see {@link AdamWKernel.constants}). */
const CONST_OFF = 0;
/** f64 slot of the input block: gradients and parameters, each BLOCK + 2 long. */
const IN_OFF = 16;
const IN_STRIDE = BLOCK + 2;
/**
 * f64 slot of the resident arrays, each n + 2 long (the pad takes the odd
 * lane of a tensor's last pair): two pairs of first and second moments and
 * the new parameters. One pair holds the current moments (the optimizer's
 * `first`/`second`), the other receives the new ones; a step whose values
 * are all finite makes the new pair current (nothing is copied), a refused
 * one leaves the current pair as it was.
 */
const STATE_OFF: number = IN_OFF + 2 * IN_STRIDE;
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
const C_LRWD = 8;
const C_MUL = 9;
const C_DIV = 10;
const C_FAC = 11;

/**
 * The update of one block, specialised to one gradient transform: params
 * (end in bytes; byte addresses of the block's first and second moments, and
 * of its new parameters, first and second moments; gradients and parameters
 * are in the input block) → 1 when some new value or direction is not finite.
 * Per element exactly {@link scalarUpdate}'s sequence, two elements per
 * iteration (an odd count computes one more lane, whose results land on the
 * next element, rewritten later, or on the pad).
 */
function adamwFunction(mode: TransformMode): WasmFunctionSpec {
  // params: 0 end, 1 m, 2 v (in), 3 w2, 4 m2, 5 v2 (out); locals: 6 k (i32); v128 from 7.
  const [END, PMI, PVI, PW, PM, PV, K] = [0, 1, 2, 3, 4, 5, 6];
  const [B1, OMB1, B2, OMB2, C1, C2, EPS, LR, LRWD, MUL, DIV, FAC] = [7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18];
  const [G, M2, V2, DIR, W, W2, ACC] = [19, 20, 21, 22, 23, 24, 25];
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
  constant(C_LRWD, LRWD);
  constant(C_MUL, MUL);
  constant(C_DIV, DIV);
  constant(C_FAC, FAC);
  const inG = IN_OFF * 8;
  const inW = (IN_OFF + IN_STRIDE) * 8;
  e.i32(0).set(K);
  pairLoop(e, K, END, 16, () => {
    // g = raw | raw * mul | (raw / div) * fac
    e.get(K).v128Load(inG);
    if (mode === 1) e.get(MUL).vMul();
    if (mode === 2) e.get(DIV).vDiv().get(FAC).vMul();
    e.set(G);
    // m2 = beta1 * m + omb1 * g
    e.get(B1).get(PMI).get(K).op(0x6a).v128Load(0).vMul().get(OMB1).get(G).vMul().vAdd().set(M2);
    // v2 = beta2 * v + omb2 * (g * g)
    e.get(B2).get(PVI).get(K).op(0x6a).v128Load(0).vMul().get(OMB2).get(G).get(G).vMul().vMul().vAdd().set(V2);
    // direction = (m2 / c1) / (sqrt(v2 / c2) + eps)
    e.get(M2).get(C1).vDiv().get(V2).get(C2).vDiv().vSqrt().get(EPS).vAdd().vDiv().set(DIR);
    // w2 = (w - lr * direction) - lrwd * w
    e.get(K).v128Load(inW).set(W);
    e.get(W).get(LR).get(DIR).vMul().vSub().get(LRWD).get(W).vMul().vSub().set(W2);
    // acc += (w2 - w2) + (m2 - m2) + (v2 - v2) + (dir - dir): stays +0 while all are finite, NaN after.
    e.get(ACC).get(W2).get(W2).vSub().vAdd().get(M2).get(M2).vSub().vAdd();
    e.get(V2).get(V2).vSub().vAdd().get(DIR).get(DIR).vSub().vAdd().set(ACC);
    e.get(PW).get(K).op(0x6a).get(W2).v128Store();
    e.get(PM).get(K).op(0x6a).get(M2).v128Store();
    e.get(PV).get(K).op(0x6a).get(V2).v128Store();
  });
  // result: any lane of acc is NaN (acc != acc)
  e.get(ACC).get(ACC).simd(0x48).simd(0x53);
  return { name: `adamw${mode}`, params: [I32, I32, I32, I32, I32, I32], results: [I32], locals: [[1, I32], [19, V128]], body: [...e.bytes, 0x0b] };
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

let compiled: object | null | undefined;
let enabled = true;

/**
 * Compiles a kernel module synchronously.
 * @param bytes - makes the module bytes.
 * @returns the module, or null without WebAssembly (SIMD).
 */
export function compileKernel(bytes: () => Uint8Array): object | null {
  try {
    const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
    const b = bytes();
    return api !== undefined && api.validate(b) ? new api.Module(b) : null;
  } catch {
    return null;
  }
}

function compiledModule(): object | null {
  if (compiled === undefined) compiled = compileKernel(() => importedMemoryModuleBytes([adamwFunction(0), adamwFunction(1), adamwFunction(2)]));
  return compiled;
}

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
  return enabled && compiledModule() !== null;
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
    const memory = new api.Memory({ initial: pages, maximum: pages });
    const instance = new api.Instance(module, { env: { memory } });
    return { f64: new Float64Array(memory.buffer), exports: instance.exports };
  } catch {
    return null;
  }
}

function instantiate(stateF64: number): KernelInstance | null {
  const mod = compiledModule();
  const bytes = (STATE_OFF + stateF64) * 8;
  return mod === null || bytes > MAX_BYTES ? null : instantiateFixed(mod, Math.ceil(bytes / PAGE));
}

type UpdateFunction = (end: number, m: number, v: number, w2: number, m2: number, v2: number) => number;

/** The arrays of one optimizer's kernel: the model's gradients and parameters, and its tensors' extents. */
export interface KernelArrays {
  readonly G: Float64Array;
  readonly W: Float64Array;
  readonly tensors: readonly { readonly offset: number; readonly length: number }[];
}

/**
 * One optimizer's AdamW kernel. Its memory (fixed size, never grown) holds
 * the constants, one input block, the moments (exposed as {@link first} and
 * {@link second}) and the 3n new values. The blocks (at most {@link BLOCK}
 * elements, never across tensors) and their views of the model's arrays are
 * made once.
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
  readonly #fns: readonly UpdateFunction[];
  /** Per block: its first element, tensor index, and views of its gradients and parameters. */
  readonly #start: Int32Array;
  readonly #tensor: Int32Array;
  readonly #g: readonly Float64Array[];
  readonly #w: readonly Float64Array[];
  readonly #W: Float64Array;
  readonly #newW: Float64Array;

  private constructor(inst: KernelInstance, arrays: KernelArrays) {
    const { G, W, tensors } = arrays;
    const n = W.length;
    const f = inst.f64;
    this.#f64 = f;
    this.#fns = [0, 1, 2].map((m) => inst.exports[`adamw${m}`] as UpdateFunction);
    const seg = n + 2;
    const at = (k: number): Float64Array => f.subarray(STATE_OFF + k * seg, STATE_OFF + k * seg + n);
    this.#first = at(0);
    this.#second = at(1);
    this.#nextFirst = at(3);
    this.#nextSecond = at(4);
    this.#newW = at(2);
    // the pads (the odd lane of the last pair): a finite update whatever the constants
    f[STATE_OFF + seg + n] = 1;
    f[STATE_OFF + 4 * seg + n] = 1;
    const start: number[] = [];
    const tensor: number[] = [];
    tensors.forEach((t, i) => {
      for (let b = t.offset; b < t.offset + t.length; b += BLOCK) {
        start.push(b);
        tensor.push(i);
      }
    });
    start.push(n);
    this.blocks = tensor.length;
    this.#start = Int32Array.from(start);
    this.#tensor = Int32Array.from(tensor);
    const end = (k: number): number => Math.min(start[k]! + BLOCK, tensors[tensor[k]!]!.offset + tensors[tensor[k]!]!.length);
    this.#g = tensor.map((_, k) => G.subarray(start[k], end(k)));
    this.#w = tensor.map((_, k) => W.subarray(start[k], end(k)));
    this.#W = W;
  }

  /**
   * A kernel for the model's arrays, or null (no WebAssembly SIMD, turned
   * off, too large, or tensors that do not tile the arrays in order).
   * @param arrays - gradients, parameters and tensor extents.
   * @returns the kernel or null.
   */
  static create(arrays: KernelArrays): AdamWKernel | null {
    if (!enabled) return null;
    const n = arrays.W.length;
    let next = 0;
    for (const t of arrays.tensors) {
      if (t.offset !== next || !(t.length > 0)) return null;
      next += t.length;
    }
    if (next !== n || arrays.G.length !== n) return null;
    const inst = instantiate(5 * (n + 2));
    return inst === null ? null : new AdamWKernel(inst, arrays);
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
    return { start: this.#start[k] as number, end: (this.#start[k] as number) + (this.#g[k] as Float64Array).length, tensor: this.#tensor[k] as number };
  }

  /**
   * Computes the new values of blocks `from`… into the kernel's result arrays.
   * @param mode - the gradient transform.
   * @param lrwd - per tensor, the decay product lr × wd.
   * @param from - the first block.
   * @returns the first block with a value that is not finite (the caller checks it element by element), or -1.
   */
  run(mode: TransformMode, lrwd: Float64Array, from: number): number {
    const f = this.#f64;
    const fn = this.#fns[mode] as UpdateFunction;
    const w2 = this.#newW.byteOffset;
    const [m, v, m2, v2] = [this.#first.byteOffset, this.#second.byteOffset, this.#nextFirst.byteOffset, this.#nextSecond.byteOffset];
    const ig = IN_OFF;
    const iw = ig + IN_STRIDE;
    const gs = this.#g;
    const ws = this.#w;
    const starts = this.#start;
    const tensors = this.#tensor;
    for (let k = from; k < this.blocks; k++) {
      const g = gs[k] as Float64Array;
      const len = g.length;
      f.set(g, ig);
      f.set(ws[k] as Float64Array, iw);
      if ((len & 1) !== 0) {
        // the odd lane: a zero gradient and parameter (its moments are the next element's or the pad's)
        f[ig + len] = 0;
        f[iw + len] = 0;
      }
      f[CONST_OFF + C_LRWD] = lrwd[tensors[k] as number] as number;
      const at = (starts[k] as number) * 8;
      if (fn(((len + 1) >> 1) << 4, m + at, v + at, w2 + at, m2 + at, v2 + at) !== 0) return k;
    }
    return -1;
  }

  /** The current first moments, resident in the kernel's memory (the array changes with every committed step). */
  get first(): Float64Array {
    return this.#first;
  }

  /** The current second moments, like {@link first}. */
  get second(): Float64Array {
    return this.#second;
  }

  /** Copies the new parameters into the model's and makes the new moments current. */
  commit(): void {
    this.#W.set(this.#newW);
    [this.#first, this.#nextFirst] = [this.#nextFirst, this.#first];
    [this.#second, this.#nextSecond] = [this.#nextSecond, this.#second];
  }
}
