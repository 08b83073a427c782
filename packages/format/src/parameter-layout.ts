/**
 * The model parameter layout a decoder configuration implies (../SPEC.md §7):
 * 2 + 9L tensors in a fixed order, and the parameter-name syntax (§6.5).
 */
import type { DecoderConfig } from './types.ts';

/** One entry of the model parameter layout. */
export interface ParameterShape {
  /** Parameter name, e.g. `blocks.0.attention.query.weight`. */
  readonly name: string;
  /** Row-major shape; linear weights are [input, output]. */
  readonly shape: readonly number[];
}

const BLOCK_SUFFIXES = [
  'attention_norm.gain',
  'attention.query.weight',
  'attention.key.weight',
  'attention.value.weight',
  'attention.output.weight',
  'ffn_norm.gain',
  'ffn.gate.weight',
  'ffn.up.weight',
  'ffn.down.weight',
] as const;

/** Number of tensors per decoder block. */
const TENSORS_PER_LAYER = 9;

/**
 * Index in model order of tensor `tensor` of block `layer` (../SPEC.md §7): `1 + 9·layer + tensor`, where
 * tensor 0 … 8 is the attention norm, query, key, value, output, the feed-forward norm, gate, up and down.
 * The one home of that arithmetic for every package that walks the layout.
 * @param layer - block index.
 * @param tensor - the tensor within the block, 0 … 8.
 * @returns the index.
 * @example
 * ```ts
 * blockTensorIndex(1, 2); // 12: blocks.1.attention.key.weight
 * ```
 */
export function blockTensorIndex(layer: number, tensor: number): number {
  return 1 + TENSORS_PER_LAYER * layer + tensor;
}

/**
 * Number of model parameter tensors for `layers` blocks: 2 + 9L.
 * @param layers - decoder block count.
 * @returns the tensor count.
 */
export function parameterTensorCount(layers: number): number {
  return 2 + TENSORS_PER_LAYER * layers;
}

/**
 * Name of the parameter at `index` in model order (../SPEC.md §7).
 * @param index - position in model order, in [0, 2 + 9L).
 * @param layers - decoder block count L.
 * @returns the name.
 * @throws RangeError when `index` is outside the layout.
 */
export function modelParameterName(index: number, layers: number): string {
  if (index === 0) return 'token_embedding.weight';
  if (index === blockTensorIndex(layers, 0)) return 'final_norm.gain';
  const inner = index - 1;
  if (!Number.isInteger(index) || inner < 0 || inner >= TENSORS_PER_LAYER * layers) {
    throw new RangeError(`parameter index ${index} outside a ${layers}-layer layout of ${parameterTensorCount(layers)} tensors`);
  }
  const layer = Math.floor(inner / TENSORS_PER_LAYER);
  return `blocks.${layer}.${BLOCK_SUFFIXES[inner % TENSORS_PER_LAYER] as string}`;
}

/**
 * Names and shapes of every model parameter, in model order (../SPEC.md §7):
 * `token_embedding.weight` [V, D], per layer the attention norm [D], query,
 * key, value, output [D, D], the feed-forward norm [D], gate and up [D, F],
 * down [F, D], then `final_norm.gain` [D].
 *
 * @param config - the decoder configuration (only V, D, F and L are used).
 * @returns 2 + 9L entries.
 * @example
 * ```ts
 * expectedParameterShapes({ vocabularySize: 5, modelWidth: 4, heads: 2, feedForwardWidth: 4, layers: 1, maxPositions: 2, ropeBase: 1e4, rmsEpsilon: 1e-6 })[1];
 * // { name: 'blocks.0.attention_norm.gain', shape: [4] }
 * ```
 */
export function expectedParameterShapes(config: DecoderConfig): ParameterShape[] {
  const { vocabularySize: v, modelWidth: d, feedForwardWidth: f, layers } = config;
  const out: ParameterShape[] = [{ name: 'token_embedding.weight', shape: [v, d] }];
  for (let l = 0; l < layers; l++) {
    const shapes: readonly (readonly number[])[] = [[d], [d, d], [d, d], [d, d], [d, d], [d], [d, f], [d, f], [f, d]];
    for (let k = 0; k < TENSORS_PER_LAYER; k++) {
      out.push({ name: `blocks.${l}.${BLOCK_SUFFIXES[k] as string}`, shape: shapes[k] as readonly number[] });
    }
  }
  out.push({ name: 'final_norm.gain', shape: [d] });
  return out;
}

/**
 * Why a parameter name breaks the syntax of ../SPEC.md §6.5 (lowercase ASCII
 * letters, digits, `_` and `.`; non-empty; no empty dot-separated segment).
 * @param name - a parameter name.
 * @returns `'empty-name'`, `'invalid-character'`, `'empty-segment'`, or `undefined` when valid.
 */
export function parameterNameProblem(name: string): 'empty-name' | 'invalid-character' | 'empty-segment' | undefined {
  if (name.length === 0) return 'empty-name';
  if (!/^[a-z0-9_.]+$/.test(name)) return 'invalid-character';
  if (name.startsWith('.') || name.endsWith('.') || name.includes('..')) return 'empty-segment';
  return undefined;
}
