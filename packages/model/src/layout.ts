/**
 * The parameter layout: every tensor's name, shape and offset in the one flat
 * `Float64Array` that holds all parameters (../../../docs/spec/model.md §3; format SPEC §7).
 *
 * Model order is the canonical order of the optimizer loop, the gradient norm,
 * checkpoints and the golden vectors, so the flat array *is* that order.
 */
import { blockTensorIndex, expectedParameterShapes, type DecoderConfig } from '@llmcp/format';
import { validateDecoderConfig } from './config.ts';

/** What a parameter tensor is, for code that treats kinds differently (initialization, kernels). */
export type ParameterKind = 'embedding' | 'gain' | 'projection';

/** One tensor of the layout. */
export interface ParameterEntry {
  /** Canonical name, e.g. `blocks.0.attention.query.weight`. */
  readonly name: string;
  /** Row-major shape: `[V, D]`, `[D]` or `[in, out]`. */
  readonly shape: readonly number[];
  /** First element in the flat array. */
  readonly offset: number;
  /** Number of elements (product of the shape). */
  readonly length: number;
  /** Embedding table, RMSNorm gain or projection weight. */
  readonly kind: ParameterKind;
}

/** Offsets of one block's nine tensors. */
export interface BlockOffsets {
  readonly attentionNorm: number;
  readonly query: number;
  readonly key: number;
  readonly value: number;
  readonly output: number;
  readonly ffnNorm: number;
  readonly gate: number;
  readonly up: number;
  readonly down: number;
}

/** The complete layout of a decoder's parameters. */
export interface ParameterLayout {
  /** Tensors in model order; offsets are contiguous from 0. */
  readonly entries: readonly ParameterEntry[];
  /** Total number of scalars. */
  readonly size: number;
  /** Offset of `token_embedding.weight` (always 0). */
  readonly embedding: number;
  /** Per-layer offsets. */
  readonly blocks: readonly BlockOffsets[];
  /** Offset of `final_norm.gain`. */
  readonly finalNorm: number;
  /** Index of an entry by name. */
  readonly indexByName: ReadonlyMap<string, number>;
}

/**
 * The flat parameter layout of a decoder: offsets in model order. Names and
 * shapes come from `expectedParameterShapes` of `@llmcp/format` (SPEC §7), so
 * the model and the checkpoint format cannot disagree about them.
 *
 * @param config - a valid decoder configuration.
 * @returns the layout (entries, total size, per-block offsets, name index).
 * @throws ModelError `MODEL_INVALID_CONFIG` for an invalid configuration.
 * @example
 * ```ts
 * const layout = parameterLayout(FIXTURE_DECODER_CONFIG);
 * layout.size; // 144
 * ```
 */
export function parameterLayout(config: DecoderConfig): ParameterLayout {
  validateDecoderConfig(config);
  const entries: ParameterEntry[] = [];
  let offset = 0;
  for (const { name, shape } of expectedParameterShapes(config)) {
    const length = shape.reduce((a, b) => a * b, 1);
    const kind: ParameterKind = name === 'token_embedding.weight' ? 'embedding' : name.endsWith('.gain') ? 'gain' : 'projection';
    entries.push(Object.freeze({ name, shape: Object.freeze([...shape]), offset, length, kind }));
    offset += length;
  }
  const at = (i: number): number => (entries[i] as ParameterEntry).offset;
  const blocks: BlockOffsets[] = [];
  for (let l = 0; l < config.layers; l++) {
    const b = blockTensorIndex(l, 0);
    blocks.push(
      Object.freeze({
        attentionNorm: at(b),
        query: at(b + 1),
        key: at(b + 2),
        value: at(b + 3),
        output: at(b + 4),
        ffnNorm: at(b + 5),
        gate: at(b + 6),
        up: at(b + 7),
        down: at(b + 8),
      }),
    );
  }
  const indexByName = new Map<string, number>();
  entries.forEach((e, i) => indexByName.set(e.name, i));
  return Object.freeze({
    entries: Object.freeze(entries),
    size: offset,
    embedding: 0,
    blocks: Object.freeze(blocks),
    finalNorm: at(entries.length - 1),
    indexByName,
  });
}

/** Views of one block's nine tensors, at the {@link BlockOffsets} of one flat array. */
export type BlockViews = { readonly [K in keyof BlockOffsets]: Float64Array };

/** Views of every tensor of one flat array laid out like the parameters (parameters, gradients, moments, partials). */
export interface ModelViews {
  /** (V, D) `token_embedding.weight`. */
  readonly embedding: Float64Array;
  /** Per-layer views. */
  readonly blocks: readonly BlockViews[];
  /** (D) `final_norm.gain`. */
  readonly finalNorm: Float64Array;
}

/** A tensor of flat array `flat` as a live view with its name and shape (what the checkpoint format takes). */
export interface NamedView {
  /** Canonical name. */
  readonly name: string;
  /** Row-major shape (a fresh array). */
  readonly shape: number[];
  /** A `subarray` of the flat array. */
  readonly data: Float64Array;
}

/**
 * Live per-tensor views of a flat array with this layout (no copy): the
 * embedding, each block's nine tensors and the final gain.
 *
 * @param layout - the layout.
 * @param flat - an array laid out like the parameters, from `base`.
 * @param base - element offset of the layout's element 0 in `flat` (default 0).
 * @returns the views.
 */
export function modelViews(layout: ParameterLayout, flat: Float64Array, base = 0): ModelViews {
  const view = (e: ParameterEntry): Float64Array => flat.subarray(base + e.offset, base + e.offset + e.length);
  const entries = layout.entries;
  const blocks: BlockViews[] = layout.blocks.map((_, l) => {
    const at = (k: number): Float64Array => view(entries[blockTensorIndex(l, k)] as ParameterEntry);
    return Object.freeze({ attentionNorm: at(0), query: at(1), key: at(2), value: at(3), output: at(4), ffnNorm: at(5), gate: at(6), up: at(7), down: at(8) });
  });
  return Object.freeze({ embedding: view(entries[0] as ParameterEntry), blocks: Object.freeze(blocks), finalNorm: view(entries[entries.length - 1] as ParameterEntry) });
}

/**
 * Every tensor of a flat array with this layout as a named live view, in
 * model order (e.g. the parameters or the AdamW moments for a checkpoint).
 *
 * @param layout - the layout.
 * @param flat - an array of `layout.size` elements in model order.
 * @returns one view per entry.
 * @example
 * ```ts
 * encodeCheckpoint({ ...state, parameters: namedViews(model.layout, model.parameters) });
 * ```
 */
export function namedViews(layout: ParameterLayout, flat: Float64Array): NamedView[] {
  return layout.entries.map((e) => ({ name: e.name, shape: [...e.shape], data: flat.subarray(e.offset, e.offset + e.length) }));
}

/**
 * The tensor holding flat element `index` (offsets are contiguous from 0, so
 * this is the entry with `offset ≤ index < offset + length`).
 *
 * @param layout - the layout.
 * @param index - a flat element index.
 * @returns the entry, or undefined when `index` is outside [0, size).
 */
export function tensorAt(layout: ParameterLayout, index: number): ParameterEntry | undefined {
  if (!(index >= 0 && index < layout.size)) return undefined;
  const entries = layout.entries;
  let lo = 0;
  let hi = entries.length - 1;
  // The last entry with offset ≤ index (zero-length entries cannot occur: every dimension is ≥ 1).
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if ((entries[mid] as ParameterEntry).offset <= index) lo = mid;
    else hi = mid - 1;
  }
  return entries[lo] as ParameterEntry;
}
