/**
 * Global-norm gradient clipping in the reference's scaled form (../../../docs/spec/training.md §5).
 */
import { tensorAt, type ParameterLayout } from '@llmcp/model';
import { OptimError } from './errors.ts';
import { scaledSumWasm } from './internal/scaled-sum.ts';
import { optimSimdActive } from './internal/simd.ts';

/**
 * How the optimizer reads each gradient element: unchanged, times one
 * multiplier, or — only when the multiplier underflows to zero — as
 * `(g / divisor) · factor`.
 */
export type GradientTransform =
  | { readonly kind: 'none' }
  | { readonly kind: 'uniform'; readonly multiplier: number }
  | { readonly kind: 'scaled'; readonly divisor: number; readonly factor: number };

/** The outcome of {@link clipByGlobalNorm}. */
export interface ClipResult {
  /** The global L2 norm of the raw gradients (`scale · root`; the largest finite f64 if that overflows). */
  readonly normBefore: number;
  /** The norm the optimizer sees: exactly `maxNorm` when clipped, else `normBefore`. */
  readonly normAfter: number;
  /** Whether the gradients are scaled down. */
  readonly clipped: boolean;
  /** The multiplier `(maxNorm / scale) / root` when clipped, else 1. */
  readonly multiplier: number;
  /** The largest |g| (the running `scale` of the scaled sum). */
  readonly largestAbs: number;
  /** The scaled sum of squares `ssq` (Σ (g/scale)²). */
  readonly scaledSumOfSquares: number;
  /** `sqrt(ssq)`. */
  readonly root: number;
  /** What the optimizer applies to each element. */
  readonly transform: GradientTransform;
}

function locate(layout: ParameterLayout | undefined, index: number): { tensorName?: string; index: number; where: string } {
  const e = layout === undefined ? undefined : tensorAt(layout, index);
  if (e !== undefined) return { tensorName: e.name, index: index - e.offset, where: `${e.name}[${index - e.offset}]` };
  return { index, where: `element ${index}` };
}

/**
 * The scaled sum of squares of BLAS `nrm2` over all elements in order, into
 * `acc` = [scale, ssq] (a loop of its own: V8 optimises it better than one
 * holding the error path).
 * @returns the index of the first non-finite element (acc then holds the state before it), or -1.
 */
function scaledSum(gradients: Float64Array, acc: Float64Array): number {
  let scale = acc[0] as number;
  let ssq = acc[1] as number;
  let bad = -1;
  for (let i = 0; i < gradients.length; i++) {
    const a = Math.abs(gradients[i] as number);
    if (!(a < Infinity)) {
      bad = i;
      break;
    }
    if (a === 0) continue;
    if (scale < a) {
      const ratio = scale / a;
      ssq = 1.0 + ssq * ratio * ratio;
      scale = a;
    } else {
      const ratio = a / scale;
      ssq = ssq + ratio * ratio;
    }
  }
  acc[0] = scale;
  acc[1] = ssq;
  return bad;
}

/**
 * Computes the global gradient norm with the overflow-safe scaled sum of
 * squares of BLAS `nrm2` over all elements in order, checks every element is
 * finite, and decides the clip (../../../docs/spec/training.md §5): no clipping when
 * `scale ≤ maxNorm / root`, otherwise the multiplier
 * `(maxNorm / scale) / root`. The gradients themselves are not modified; pass
 * the result to `AdamW.step({ clip })`.
 *
 * @param gradients - flat gradients in canonical parameter order.
 * @param maxNorm - the threshold (finite, > 0), 0.35 in the fixture.
 * @param layout - optional, to name the tensor of a non-finite element.
 * @returns the norm and the clip decision.
 * @throws OptimError `OPTIM_NON_FINITE_GRADIENT` (with tensor and index) or `OPTIM_INVALID_CLIP`.
 * @example
 * ```ts
 * const clip = clipByGlobalNorm(model.gradients, 0.35, model.layout);
 * optimizer.step({ learningRate: 0.04, clip });
 * ```
 */
export function clipByGlobalNorm(gradients: Float64Array, maxNorm: number, layout?: ParameterLayout): ClipResult {
  if (typeof maxNorm !== 'number' || !Number.isFinite(maxNorm) || !(maxNorm > 0)) {
    throw new OptimError('OPTIM_INVALID_CLIP', `maxNorm: expected a finite number > 0, found ${String(maxNorm)}`, { field: 'maxNorm' });
  }
  // acc = [scale, ssq]: the running state of the scaled sum
  const acc = Float64Array.of(0.0, 1.0);
  const bad = (optimSimdActive() ? scaledSumWasm(gradients, acc) : null) ?? scaledSum(gradients, acc);
  if (bad >= 0) {
    const g = gradients[bad] as number;
    const at = locate(layout, bad);
    throw new OptimError('OPTIM_NON_FINITE_GRADIENT', `gradient ${at.where} is not finite: ${g}`, at.tensorName === undefined ? { index: at.index } : { tensorName: at.tensorName, index: at.index });
  }
  const scale = acc[0] as number;
  const ssq = acc[1] as number;
  if (scale === 0) {
    return { normBefore: 0, normAfter: 0, clipped: false, multiplier: 1, largestAbs: 0, scaledSumOfSquares: ssq, root: 1, transform: { kind: 'none' } };
  }
  const root = Math.sqrt(ssq);
  let normBefore = scale * root;
  if (normBefore === Infinity) normBefore = Number.MAX_VALUE;
  const base = { normBefore, largestAbs: scale, scaledSumOfSquares: ssq, root };
  if (scale <= maxNorm / root) {
    return { ...base, normAfter: normBefore, clipped: false, multiplier: 1, transform: { kind: 'none' } };
  }
  const multiplier = maxNorm / scale / root;
  if (multiplier === 0) {
    return { ...base, normAfter: maxNorm, clipped: true, multiplier, transform: { kind: 'scaled', divisor: scale, factor: maxNorm / root } };
  }
  return { ...base, normAfter: maxNorm, clipped: true, multiplier, transform: { kind: 'uniform', multiplier } };
}
