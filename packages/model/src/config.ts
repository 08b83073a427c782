/**
 * Decoder configuration checks (../../../docs/spec/model.md §2). The shape rules are the
 * format's (`decoderConfigProblem`, format SPEC §6.1); a model adds its own
 * limits: sizes a `number` can index, and one `Float64Array` of parameters.
 */
import { decoderConfigProblem, type DecoderConfig } from '@llmcp/format';
import { ModelError } from './errors.ts';

/** The largest parameter count a decoder accepts (one `Float64Array`; 2^31 − 1 elements = 16 GiB). */
export const MAX_PARAMETER_COUNT: number = 2 ** 31 - 1;

/** The ch33 fixture configuration (../../../docs/spec/model.md §2): V5, D4, H2, F4, L1, P2, base 10000, eps 1e-6. */
export const FIXTURE_DECODER_CONFIG: DecoderConfig = Object.freeze({
  vocabularySize: 5,
  modelWidth: 4,
  heads: 2,
  feedForwardWidth: 4,
  layers: 1,
  maxPositions: 2,
  ropeBase: 10000,
  rmsEpsilon: 1e-6,
});

const SIZE_FIELDS = ['vocabularySize', 'modelWidth', 'heads', 'feedForwardWidth', 'layers', 'maxPositions'] as const;

/** A size a checkpoint may hold (any u64, format SPEC §15.2) but a model cannot index or allocate. */
function unrepresentable(config: DecoderConfig): ModelError | null {
  for (const field of SIZE_FIELDS) {
    const v = config[field];
    if (typeof v !== 'number') return new ModelError('MODEL_INVALID_CONFIG', `decoder config ${field}: expected an integer, found ${typeof v} ${String(v)}`, { field });
    const exact = field === 'feedForwardWidth' || field === 'maxPositions' ? config.exact?.[field] : undefined;
    if (exact !== undefined || (typeof v === 'number' && Number.isInteger(v) && v > Number.MAX_SAFE_INTEGER)) {
      return new ModelError(
        'MODEL_INVALID_CONFIG',
        `decoder config ${field}: ${exact ?? String(v)} exceeds 2^53 − 1 = ${Number.MAX_SAFE_INTEGER}, the largest size a model can represent (the checkpoint is valid; building a model from it is not possible)`,
        { field },
      );
    }
  }
  return null;
}

/**
 * Checks a decoder configuration and returns its head width.
 *
 * Rules: vocabularySize, modelWidth, heads, feedForwardWidth, maxPositions
 * integers ≥ 1, layers an integer ≥ 0, modelWidth divisible by heads with an
 * even head width (RoPE rotates pairs), ropeBase finite and > 0, rmsEpsilon
 * finite and ≥ 0, and a total parameter count of at most
 * {@link MAX_PARAMETER_COUNT}. Sizes must be safe integers: a decoded
 * checkpoint whose `maxPositions` or `feedForwardWidth` exceeds 2^53 − 1
 * (`config.exact` set; format SPEC §15.2) is valid, but is refused here.
 *
 * @param config - the configuration.
 * @returns the head width `modelWidth / heads`.
 * @throws ModelError `MODEL_INVALID_CONFIG` naming the offending field (also for a size above 2^53 − 1).
 * @example
 * ```ts
 * validateDecoderConfig(FIXTURE_DECODER_CONFIG); // 2
 * ```
 */
export function validateDecoderConfig(config: DecoderConfig): number {
  if (typeof config !== 'object' || config === null) throw new TypeError('decoder config must be an object');
  const tooLarge = unrepresentable(config);
  if (tooLarge !== null) throw tooLarge;
  const problem = decoderConfigProblem(config);
  if (problem !== null) throw new ModelError('MODEL_INVALID_CONFIG', `decoder config ${problem.field}: ${problem.message}`, { field: problem.field });
  const { vocabularySize: V, modelWidth: D, heads: H, feedForwardWidth: F, layers: L } = config;
  const d = D / H;
  const count = V * D + L * (2 * D + 4 * D * D + 3 * D * F) + D;
  if (!(count <= MAX_PARAMETER_COUNT)) {
    throw new ModelError('MODEL_INVALID_CONFIG', `decoder config: ${count} parameters exceed the limit of ${MAX_PARAMETER_COUNT}`, { field: 'layers' });
  }
  return d;
}
