/**
 * The three kernel sets, each with whether this machine can run it and why
 * not, for tests that run on every set (`describe.each(KERNEL_SETS)` with
 * `$name` and `$skipped` in the title, `it.skipIf(missing)`).
 */
import type { KernelSetName } from '../../src/kernels/kernel-set.ts';
import { loadNativeKernels } from '../../src/kernels/native.ts';
import { createWasmGemm } from '../../src/kernels/wasm-gemm.ts';

/** One kernel set of the tests. */
export interface KernelSetCase {
  readonly name: KernelSetName;
  /** Whether it cannot run here. */
  readonly missing: boolean;
  /** The reason, for the test's name (empty when it runs). */
  readonly skipped: string;
}

const load = loadNativeKernels();
const simd = createWasmGemm() !== null;

/** scalar, wasm and native. */
export const KERNEL_SETS: readonly KernelSetCase[] = [
  { name: 'scalar', missing: false, skipped: '' },
  { name: 'wasm', missing: !simd, skipped: simd ? '' : ' — skipped: this runtime has no WebAssembly SIMD' },
  { name: 'native', missing: load.addon === null, skipped: load.addon === null ? ` — skipped: ${load.error ?? 'the addon is not built'}` : '' },
];

/** The sets that run here. */
export const AVAILABLE_SETS: readonly KernelSetName[] = KERNEL_SETS.filter((k) => !k.missing).map((k) => k.name);
