/**
 * Xavier-uniform initialization from one SplitMix64 stream (../../../docs/spec/model.md §4).
 */
import { SplitMix64 } from '@llmcp/format';
import type { ParameterLayout } from './layout.ts';

/**
 * Fills `parameters` in model order: RMSNorm gains with 1.0 (no draws); every
 * matrix [a, b] (the embedding [V, D] and each projection [in, out]) with
 * `limit · (2.0·u − 1.0)`, `limit = sqrt(6.0 / (a + b))`, one unit draw per
 * element in row-major order, all tensors drawing consecutively from the same
 * generator (../../../docs/spec/model.md §4.2–4.3).
 *
 * @param parameters - the flat parameter array (`layout.size` elements).
 * @param layout - the parameter layout.
 * @param seed - a seed (used directly as the SplitMix64 state) or a generator to draw from (advanced).
 * @throws RangeError when `parameters` is shorter than the layout.
 * @example
 * ```ts
 * const layout = parameterLayout(FIXTURE_DECODER_CONFIG);
 * const params = new Float64Array(layout.size);
 * initializeParameters(params, layout, 33n);
 * params[0]; // -0.5354754858570419
 * ```
 */
export function initializeParameters(parameters: Float64Array, layout: ParameterLayout, seed: bigint | SplitMix64): void {
  if (parameters.length < layout.size) throw new RangeError(`parameters: expected ${layout.size} elements, found ${parameters.length}`);
  const rng = typeof seed === 'bigint' ? new SplitMix64(seed) : seed;
  for (const e of layout.entries) {
    if (e.kind === 'gain') {
      parameters.fill(1.0, e.offset, e.offset + e.length);
      continue;
    }
    const a = e.shape[0] as number;
    const b = e.shape[1] as number;
    const limit = Math.sqrt(6.0 / (a + b));
    for (let i = 0; i < e.length; i++) {
      const u = rng.nextUnit();
      const centered = 2.0 * u - 1.0;
      parameters[e.offset + i] = limit * centered;
    }
  }
}
