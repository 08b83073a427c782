/**
 * Which kernel set runs, and opening it: `LLMCP_KERNELS` (`auto` — native
 * when the addon loads, else WebAssembly, else scalar; `native` — native or
 * a typed error; `wasm` — WebAssembly, or scalar without WebAssembly SIMD;
 * `scalar`), or {@link setKernels} on the calling thread, or a decoder's
 * `kernels` option. The interface the sets implement is kernel-set.ts.
 */
import type { DecoderConfig } from '@llmcp/format';
import { ModelError } from '../errors.ts';
import type { KernelChoice, KernelKind, Kernels, KernelSetName } from './kernel-set.ts';
import { loadNativeKernels, nativeLoadSoFar, type NativeAddon } from './native.ts';
import { NativeKernels } from './native-set.ts';
import { scalarKernels } from './scalar-set.ts';
import { createWasmGemm } from './wasm-gemm.ts';
import { WasmKernels } from './wasm-set.ts';

/** Options of {@link openKernels}. */
export interface KernelOptions {
  /** Keep full-grid attention traces and per-block adjoints (the forward-trace test). */
  readonly trace?: boolean;
}

let choice: KernelChoice | undefined;

interface NodeEnv {
  readonly process?: { readonly versions?: { readonly node?: string }; readonly env?: Record<string, string | undefined> };
}

function parseChoice(value: string | undefined): KernelChoice {
  if (value === undefined || value === '' || value === 'auto') return 'auto';
  if (value === 'native' || value === 'wasm' || value === 'scalar') return value;
  throw new ModelError('MODEL_INVALID_CONFIG', `LLMCP_KERNELS must be 'auto', 'scalar', 'wasm' or 'native', found '${value}'`, { field: 'LLMCP_KERNELS' });
}

/**
 * @returns the calling thread's choice: the last {@link setKernels}, else `LLMCP_KERNELS`.
 * @throws ModelError `MODEL_INVALID_CONFIG` for another value of `LLMCP_KERNELS`.
 */
export function kernelChoice(): KernelChoice {
  const p = (globalThis as NodeEnv).process;
  choice ??= parseChoice(typeof p?.versions?.node === 'string' ? p.env?.['LLMCP_KERNELS'] : undefined);
  return choice;
}

/**
 * Resolves a choice to the set that runs.
 * @param c - the choice (default: the calling thread's).
 * @returns the set.
 * @throws ModelError `MODEL_KERNELS_UNAVAILABLE` for 'native' without a usable addon.
 */
export function resolveKernels(c: KernelChoice = kernelChoice()): KernelSetName {
  if (c === 'scalar') return 'scalar';
  const simd = createWasmGemm() !== null;
  if (c === 'wasm') return simd ? 'wasm' : 'scalar';
  const load = loadNativeKernels();
  if (load.addon !== null) return 'native';
  if (c === 'native') throw new ModelError('MODEL_KERNELS_UNAVAILABLE', `native kernels required but not available: ${load.error ?? 'unknown reason'}`, { field: 'LLMCP_KERNELS' });
  return simd ? 'wasm' : 'scalar';
}

/**
 * Chooses the kernels of the calling thread: the decoders it creates
 * afterwards, and their worker threads, run that set. All give identical
 * bits; this overrides `LLMCP_KERNELS` for tests and benchmarks.
 * @param c - 'auto', 'scalar', 'wasm' or 'native'.
 * @throws ModelError `MODEL_KERNELS_UNAVAILABLE` for 'native' when the addon is not available (the choice is then unchanged).
 * @throws RangeError for another value.
 */
export function setKernels(c: KernelChoice): void {
  if (c !== 'auto' && c !== 'scalar' && c !== 'native' && c !== 'wasm') throw new RangeError(`kernels must be 'auto', 'scalar', 'wasm' or 'native', found ${String(c)}`);
  resolveKernels(c);
  choice = c;
}

/**
 * Opens a kernel set for one decoder configuration on the calling thread, with its workspace.
 * @param config - a valid configuration.
 * @param set - the set (resolved: {@link resolveKernels}).
 * @param options - traces.
 * @returns the kernels.
 */
export function openKernels(config: DecoderConfig, set: KernelSetName, options: KernelOptions = {}): Kernels {
  const trace = options.trace ?? false;
  if (set === 'native') return new NativeKernels(loadNativeKernels().addon as NativeAddon, config, trace);
  if (set === 'wasm') return new WasmKernels(config, trace);
  return scalarKernels(config, trace);
}

/** What {@link kernelInfo} reports. */
export interface KernelInfo {
  /** The kernels a decoder created now on this thread runs. */
  readonly kind: KernelKind;
  /** What was asked for: `LLMCP_KERNELS` or {@link setKernels} ('auto' when neither). */
  readonly requested: KernelChoice;
  /** Whether the native addon loaded on this thread (false under 'wasm' and 'scalar', which never load it). */
  readonly nativeAvailable: boolean;
  /** The addon file, when it loaded. */
  readonly nativeFile: string | undefined;
  /** Why the addon did not load, when it did not. */
  readonly nativeError: string | undefined;
}

/**
 * Reports the kernels of the calling thread.
 * @returns the kind that runs and why.
 * @throws ModelError `MODEL_KERNELS_UNAVAILABLE` when `LLMCP_KERNELS=native` but the addon is missing.
 * @example
 * ```ts
 * console.log(kernelInfo().kind); // 'native-avx512' after a build with a C compiler, else 'wasm-simd'
 * ```
 */
export function kernelInfo(): KernelInfo {
  const requested = kernelChoice();
  const set = resolveKernels(requested);
  const load = nativeLoadSoFar();
  const kind: KernelKind = set === 'native' ? `native-${(load?.addon as NativeAddon).path()}` : set === 'wasm' ? 'wasm-simd' : 'js-scalar';
  return {
    kind,
    requested,
    nativeAvailable: load !== undefined && load.addon !== null,
    nativeFile: load?.file,
    nativeError: load === undefined ? `not loaded (kernels '${requested}')` : load.error,
  };
}
