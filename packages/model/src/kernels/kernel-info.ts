/**
 * Which matrix-product kernels the calling thread runs, for logs and run
 * records (every kind gives identical bits).
 */
import { gemmBackend, usesSimdGemm } from './gemm.ts';
import { activeNativeKernels, kernelChoice, nativeLoadSoFar, type KernelChoice } from './native.ts';

/** The kernels that run: the native addon's path, the WebAssembly SIMD kernel, or the JavaScript loop. */
export type KernelKind = 'native-avx512' | 'native-avx2' | 'native-scalar' | 'wasm-simd' | 'js-scalar';

/** What {@link kernelInfo} reports. */
export interface KernelInfo {
  /** The kernels matrix products of this thread run on. */
  readonly kind: KernelKind;
  /** What was asked for: `LLMCP_KERNELS` or `setKernels` ('auto' when neither). */
  readonly requested: KernelChoice;
  /** Whether the native addon loaded on this thread (false under 'wasm', which never loads it). */
  readonly nativeAvailable: boolean;
  /** The addon file, when it loaded. */
  readonly nativeFile: string | undefined;
  /** Why the addon did not load, when it did not. */
  readonly nativeError: string | undefined;
}

/**
 * Reports the matrix-product kernels of the calling thread.
 * @returns the kind that runs and why.
 * @throws ModelError `MODEL_KERNELS_UNAVAILABLE` when `LLMCP_KERNELS=native` but the addon is missing.
 * @example
 * ```ts
 * console.log(kernelInfo().kind); // 'native-avx512' after a build with a C compiler, else 'wasm-simd'
 * ```
 */
export function kernelInfo(): KernelInfo {
  const native = activeNativeKernels();
  // Under 'wasm' the addon is never loaded, not even to report on it.
  const load = nativeLoadSoFar();
  const backend = gemmBackend();
  let kind: KernelKind;
  if (backend === 'auto' && native !== null) kind = `native-${native.path()}`;
  else kind = usesSimdGemm() ? 'wasm-simd' : 'js-scalar';
  return {
    kind,
    requested: kernelChoice(),
    nativeAvailable: load !== undefined && load.addon !== null,
    nativeFile: load?.file,
    nativeError: load === undefined ? "not loaded (kernels 'wasm')" : load.error,
  };
}
