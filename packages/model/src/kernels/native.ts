/**
 * The optional native kernels: a Node-API addon (`native/kernels.c`, built at
 * install into `native/build/llmcp_kernels.node` when a C compiler exists)
 * whose matrix products give the same bits as the WebAssembly and JavaScript
 * kernels — each vector lane one output, separate IEEE multiply and add in
 * increasing k, no fused multiply-add (compiled with -ffp-contract=off). This
 * file loads it and checks it whole; native-set.ts runs the layers on it.
 * Outside Node.js (a browser) nothing is ever loaded: the module reaches Node
 * only through `globalThis.process.getBuiltinModule`.
 */
import type * as NodeFs from 'node:fs';
import type * as NodeModule from 'node:module';
import type * as NodeUrl from 'node:url';
import { GEMM_FLAGS } from './gemm-flags.ts';

/** A vector path of the addon: chosen per thread from the CPU's features. */
export type NativePath = 'avx512' | 'avx2' | 'scalar';

/** The addon's surface (see native/kernels.c). */
export interface NativeAddon {
  /** `gemm` of gemm.ts on the arrays in place (same parameters, same bits); throws RangeError for out-of-bounds views. */
  gemm(C: Float64Array, cOff: number, ldc: number, A: Float64Array, aOff: number, lda: number, B: Float64Array, bOff: number, ldb: number, M: number, N: number, K: number, flags: number): void;
  /**
   * exp.ts's fast path on `n` elements (native/exp.c): writes `out[outOff + i] = exp(x[xOff + i])` for the
   * lanes it decides and the indices i of the others, ascending, to `undecided` (their `out` elements keep
   * `x[xOff + i]`); returns their count. `out` and `x` may be the same elements; `constants` is exp-batch.ts's
   * `expConstants()`. Throws RangeError for out-of-bounds or partially overlapping views, TypeError for wrong array types.
   */
  exp(out: Float64Array, outOff: number, x: Float64Array, xOff: number, n: number, undecided: Int32Array, constants: Float64Array): number;
  /**
   * swiglu.ts's forward on elements 0 … n−1 (native/elementwise.c), except the indices it writes ascending to
   * `undecided` (their exp was undecided: the caller computes those elements); returns their count, or −1 without
   * writing when two arrays overlap.
   */
  swigluForward(prod: Float64Array, silu: Float64Array, sigma: Float64Array, gate: Float64Array, up: Float64Array, n: number, undecided: Int32Array, constants: Float64Array): number;
  /** swiglu.ts's backward on elements 0 … n−1; returns 0, or −1 without writing when two arrays overlap. */
  swigluBackward(
    dgate: Float64Array,
    dup: Float64Array,
    dsilu: Float64Array,
    dprod: Float64Array,
    gate: Float64Array,
    sigma: Float64Array,
    silu: Float64Array,
    up: Float64Array,
    n: number,
  ): number;
  /**
   * cross-entropy.ts's forward up to the exp: `stats[2r] = m`, prob = exp(z − m); the element indices whose exp
   * was undecided are written ascending to `undecided` (room for rows·V; their prob holds the shift: the caller
   * finishes them with exp()). Returns their count, or −1 without writing when arrays overlap.
   */
  crossEntropyShifts(prob: Float64Array, logits: Float64Array, stats: Float64Array, rows: number, V: number, undecided: Int32Array, constants: Float64Array): number;
  /** The rest of cross-entropy.ts's forward after {@link crossEntropyShifts}: `stats[2r+1] = tail`, prob scaled; returns 0, or −1 without writing when arrays overlap. */
  crossEntropyRows(prob: Float64Array, logits: Float64Array, stats: Float64Array, rows: number, V: number): number;
  /** rmsnorm.ts's first forward loop (`ms`, `st` per row); returns 0, or −1 without writing when two arrays overlap. */
  rmsNormSums(ms: Float64Array, st: Float64Array, x: Float64Array, rows: number, D: number, eps: number): number;
  /** rmsnorm.ts's last forward loop (`normalized`, `out`); returns 0, or −1 without writing when two arrays overlap. */
  rmsNormScale(out: Float64Array, normalized: Float64Array, x: Float64Array, gain: Float64Array, inv: Float64Array, rows: number, D: number): number;
  /** rmsnorm.ts's backward; returns 0, or −1 without writing when two arrays overlap. */
  rmsNormBackward(
    dx: Float64Array,
    gainTerms: Float64Array,
    normalized: Float64Array,
    inv: Float64Array,
    st: Float64Array,
    dnormalized: Float64Array,
    rowAdjoints: Float64Array,
    u: Float64Array,
    x: Float64Array,
    gain: Float64Array,
    rows: number,
    D: number,
  ): number;
  /** cross-entropy.ts's backward (targets at `tOff + r`); returns 0, or −1 without writing when arrays overlap or a target is outside [0, V). */
  crossEntropyBackward(dlogits: Float64Array, prob: Float64Array, targets: Int32Array, tOff: number, rows: number, V: number, k: number): number;
  /**
   * attention.ts's forward softmax of one head up to the exp: S (T, T) scaled in place on and below the
   * diagonal, `rowMax[i]` its maximum, `prob[pOff + i·T + j] = exp(s − m)` (+0 beyond the diagonal); the indices
   * i·T + j whose exp was undecided are written ascending to `undecided` (room for T·T; their prob holds the
   * shift: the caller finishes them with exp()). Returns their count, or −1 without writing when arrays overlap.
   *
   */
  attentionSoftmax(prob: Float64Array, pOff: number, S: Float64Array, T: number, scale: number, rowMax: Float64Array, undecided: Int32Array, constants: Float64Array): number;
  /** The rest of the forward softmax after {@link attentionSoftmax} (tails, weights); returns 0, or −1 without writing when arrays overlap. */
  attentionSoftmaxRows(prob: Float64Array, pOff: number, S: Float64Array, T: number, rowMax: Float64Array): number;
  /** attention.ts's softmax rule and scale of one head (draw from dp and the weights at pOff); returns 0, or −1 without writing when arrays overlap. */
  attentionSoftmaxBackward(draw: Float64Array, dp: Float64Array, prob: Float64Array, pOff: number, T: number, scale: number): number;
  /** rope.ts's ropeForward (back 0) or ropeBackward (back 1) on rows 0 … T−1; returns 0, or −1 without writing when arrays overlap. */
  rope(dst: Float64Array, src: Float64Array, cosines: Float64Array, sines: Float64Array, T: number, D: number, headWidth: number, back: number): number;
  /** `dst (S × R, rows ldd apart) = src (R × S, rows lds apart)ᵀ` (values moved: the same bits on every path); returns 0, or −1 without writing when the two overlap. */
  transpose(dst: Float64Array, dOff: number, ldd: number, src: Float64Array, sOff: number, lds: number, R: number, S: number): number;
  /** The calling thread's path. */
  path(): NativePath;
  /** The best path this CPU runs. */
  bestPath(): NativePath;
  /** Forces the calling thread's path ('best' restores the default); returns the previous one. */
  setPath(path: NativePath | 'best'): NativePath;
  /**
   * Sets the calling thread's limits of the packed AVX2 product, in doubles (tests: several column blocks, and A packed
   * again at each, at affordable sizes): the partial tiles of a row chunk and the packed A kept for later column
   * blocks; 0 restores a default. The bits never depend on them.
   */
  setBlocking(partialTile: number, keptA: number): void;
  /** Independent multiply-then-add chains on a path: the ceiling of that path. */
  peak(path: NativePath, iterations: number): { macs: number; seconds: number };
  /** The values of the product flags the C code was compiled with (its `F_*`): they must be gemm-flags.ts's. */
  readonly gemmFlags: Readonly<Record<keyof typeof GEMM_FLAGS, number>>;
  readonly abiVersion: number;
}

/** Every function of {@link NativeAddon}: an addon lacking one is refused whole. */
const NATIVE_FUNCTIONS: readonly (keyof NativeAddon)[] = [
  'gemm',
  'exp',
  'swigluForward',
  'swigluBackward',
  'crossEntropyShifts',
  'crossEntropyRows',
  'rmsNormSums',
  'rmsNormScale',
  'rmsNormBackward',
  'crossEntropyBackward',
  'attentionSoftmax',
  'attentionSoftmaxRows',
  'attentionSoftmaxBackward',
  'rope',
  'transpose',
  'path',
  'bestPath',
  'setPath',
  'setBlocking',
  'peak',
];

/**
 * Why a loaded addon cannot be used, or undefined: another ABI version, a
 * function missing, or product flags whose values differ from gemm-flags.ts.
 * The addon is used as a whole or not at all, so no kernel checks for a member.
 *
 * @param addon - what the file exported.
 * @param file - the file, for the message.
 * @returns the reason, or undefined.
 */
export function nativeAddonProblem(addon: Partial<NativeAddon>, file: string): string | undefined {
  const rebuild = '(rebuild: node native/build.mjs)';
  if (addon.abiVersion !== ABI_VERSION) return `${file} has ABI version ${String(addon.abiVersion)}, expected ${ABI_VERSION} ${rebuild}`;
  const missing = NATIVE_FUNCTIONS.filter((f) => typeof addon[f] !== 'function');
  if (missing.length > 0) return `${file} lacks ${missing.join(', ')} ${rebuild}`;
  const flags = addon.gemmFlags as Partial<Record<string, number>> | undefined;
  const wrong = Object.entries(GEMM_FLAGS).filter(([name, value]) => flags?.[name] !== value);
  if (wrong.length > 0) return `${file} has product flags ${wrong.map(([name, value]) => `${name} = ${String(flags?.[name])} (expected ${value})`).join(', ')} ${rebuild}`;
  return undefined;
}

/** The addon file, relative to the package root. */
export const NATIVE_ADDON_FILE = 'native/build/llmcp_kernels.node';
/** Bumped whenever the addon's surface changes: an addon built for another version is refused whole. */
const ABI_VERSION = 4;

interface NodeProcess {
  readonly versions?: { readonly node?: string };
  readonly env?: Record<string, string | undefined>;
  getBuiltinModule?(id: string): unknown;
}

/** The outcome of trying to load the addon (once per thread). */
export interface NativeLoad {
  readonly addon: NativeAddon | null;
  /** The file that was loaded, when one was. */
  readonly file: string | undefined;
  /** Why nothing was loaded, when nothing was. */
  readonly error: string | undefined;
}

let load: NativeLoad | undefined;

function nodeProcess(): NodeProcess | undefined {
  const p = (globalThis as { process?: NodeProcess }).process;
  return p !== undefined && typeof p.versions?.node === 'string' ? p : undefined;
}

function tryLoad(): NativeLoad {
  const proc = nodeProcess();
  if (proc === undefined || typeof proc.getBuiltinModule !== 'function') return { addon: null, file: undefined, error: 'not running on Node.js (≥ 20.16)' };
  try {
    const { createRequire } = proc.getBuiltinModule('node:module') as typeof NodeModule;
    const { existsSync } = proc.getBuiltinModule('node:fs') as typeof NodeFs;
    const { fileURLToPath } = proc.getBuiltinModule('node:url') as typeof NodeUrl;
    // dist/*.js sits one level below the package root, src/kernels/*.ts two.
    for (const up of ['../', '../../']) {
      const file = fileURLToPath(new URL(up + NATIVE_ADDON_FILE, import.meta.url));
      if (!existsSync(file)) continue;
      const addon = createRequire(import.meta.url)(file) as Partial<NativeAddon>;
      const problem = nativeAddonProblem(addon, file);
      if (problem !== undefined) return { addon: null, file, error: problem };
      return { addon: addon as NativeAddon, file, error: undefined };
    }
    return { addon: null, file: undefined, error: `${NATIVE_ADDON_FILE} was not built (no C compiler at install, or LLMCP_NATIVE_BUILD=0)` };
  } catch (e) {
    return { addon: null, file: undefined, error: e instanceof Error ? e.message : String(e) };
  }
}

/** @returns the load outcome so far, without loading (undefined when no load was tried on this thread). */
export function nativeLoadSoFar(): NativeLoad | undefined {
  return load;
}

/** @returns the load outcome (the addon is loaded at most once per thread). */
export function loadNativeKernels(): NativeLoad {
  if (load === undefined) load = tryLoad();
  return load;
}
