/**
 * Kernel sets: the layers of ../reference/layers.ts implemented three ways
 * with the same bits — `scalar` (the reference itself: scalar-set.ts),
 * `wasm` (WebAssembly SIMD kernels on a kernel arena: wasm-set.ts) and
 * `native` (the C addon: native-set.ts). A set is chosen once per decoder
 * (and per worker thread) and passed to every pass; no layer asks which set
 * it runs on. Each set owns its workspace (workspace.ts): where its operands
 * live is its own business.
 *
 * This file is the interface; kernel-choice.ts chooses and opens a set.
 */
import type { KernelSet } from '../reference/layers.ts';
import type { Matrix } from '../reference/matrix.ts';
import type { WasmMemory } from './wasm-assembler.ts';
import type { Workspace } from './workspace.ts';

/** What is asked for: `LLMCP_KERNELS`, `setKernels` (kernel-choice.ts) or a decoder's option. */
export type KernelChoice = 'auto' | 'scalar' | 'wasm' | 'native';

/** A set that runs: what a choice resolves to. */
export type KernelSetName = 'scalar' | 'wasm' | 'native';

/** The kernels that run, for logs and run records: the native addon's path, WebAssembly SIMD, or the JavaScript reference. */
export type KernelKind = 'native-avx512' | 'native-avx2' | 'native-scalar' | 'wasm-simd' | 'js-scalar';

/** A product on one memory, in element offsets into it: `C (=|+=) op(A)·B` (another thread's arena, for the help at the end of a wave). */
export type MemoryProduct = (c: number, ldc: number, a: number, lda: number, b: number, ldb: number, M: number, N: number, K: number, flags: number) => void;

/** One thread's kernel set: the layers, the product they are built on, and the workspace holding their operands. */
export interface Kernels extends KernelSet {
  readonly name: KernelSetName;
  readonly kind: KernelKind;
  readonly workspace: Workspace;
  /** `c (=|+=) op(a)·b` with the flags of gemm-flags.ts (the same bits in every set). */
  product(c: Matrix, a: Matrix, b: Matrix, flags: number): void;
  /** This set's product on another thread's arena memory, or null where the set opens no arenas (help at the end of a wave). */
  productOn(memory: WasmMemory): MemoryProduct | null;
  /** Rows below which handing rows of a product to another thread does not pay with this set. */
  readonly helpMinRows: number;
}
