/**
 * Decoder configuration and model-shape rules (../SPEC.md §6.1, §9.5 steps 3–6).
 * Values are raw `bigint`s from the header: hostile files carry any u64.
 */
import { FormatError } from './errors.ts';
import type { RawDecoderConfig } from './header.ts';
import { blockTensorIndex } from './parameter-layout.ts';

function modelError(reason: string, message: string, extra: { recordName?: string; recordIndex?: number; expected?: string; found?: string; field?: string } = {}): FormatError {
  return new FormatError('FORMAT_MODEL', message, { reason, ...extra });
}

/** The size fields of a decoder configuration. */
type SizeField = 'vocabularySize' | 'modelWidth' | 'heads' | 'feedForwardWidth' | 'layers' | 'maxPositions';

/**
 * A decoder configuration as any layer holds it: sizes as the header's raw
 * `bigint`s (any u64) or as numbers (a model's or a config file's), the two
 * reals as numbers.
 */
export type DecoderConfigValues = { readonly [K in SizeField]: bigint | number } & { readonly ropeBase: number; readonly rmsEpsilon: number };

/** What is wrong with a decoder configuration (../SPEC.md §6.1): the first broken rule. */
export interface DecoderConfigProblem {
  /** The offending field. */
  readonly field: SizeField | 'ropeBase' | 'rmsEpsilon';
  /** Stable reason, e.g. `odd-head-width` (the `reason` of a `FORMAT_MODEL` error). */
  readonly reason: string;
  /** One sentence saying what is wrong. */
  readonly message: string;
  readonly expected: string;
  readonly found: string;
}

/** A size rule: the field, its minimum, the reason when broken, the field's name in messages. */
type SizeRule = readonly [SizeField, bigint, string, string];

/** The sizes ../SPEC.md §6.1 lists before the head-width rules. */
const LEADING_SIZE_RULES: readonly SizeRule[] = [
  ['vocabularySize', 1n, 'invalid-vocabulary-size', 'vocabulary_size'],
  ['modelWidth', 1n, 'invalid-model-width', 'model_width'],
  ['heads', 1n, 'invalid-heads', 'heads'],
];

/** The sizes ../SPEC.md §6.1 lists after them (layers may be 0; a number must still be a whole one). */
const TRAILING_SIZE_RULES: readonly SizeRule[] = [
  ['feedForwardWidth', 1n, 'invalid-feed-forward-width', 'feed_forward_width'],
  ['layers', 0n, 'invalid-layers', 'layers'],
  ['maxPositions', 1n, 'invalid-max-positions', 'max_positions'],
];

/** The first broken size rule of `rules`, in order, or null; each size that holds is stored in `sizes`. */
function sizeProblem(c: DecoderConfigValues, rules: readonly SizeRule[], sizes: Record<SizeField, bigint>): DecoderConfigProblem | null {
  for (const [field, minimum, reason, label] of rules) {
    const v = c[field];
    if (typeof v !== 'bigint' && !(typeof v === 'number' && Number.isInteger(v))) {
      return { field, reason, message: `decoder ${label} is ${String(v)}: expected an integer >= ${minimum}`, expected: `integer >= ${minimum}`, found: String(v) };
    }
    const b = BigInt(v);
    if (b < minimum) return { field, reason, message: `decoder ${label} is ${b}: expected >= ${minimum}`, expected: `>= ${minimum}`, found: String(b) };
    sizes[field] = b;
  }
  return null;
}

/**
 * The decoder-configuration rules of ../SPEC.md §6.1 — the one home of these
 * rules: the format's validation, `@llmcp/model` and the trainer's config
 * schema all call this and wrap the problem in their own error class.
 * In the order listed there (the first broken one is reported, ../SPEC.md §9.5
 * step 3): vocabulary size, model width and heads integers ≥ 1; model width
 * divisible by heads with an even head width (RoPE rotates pairs);
 * feed-forward width ≥ 1; layers ≥ 0; max positions ≥ 1; rope base finite
 * and > 0; RMS epsilon finite and ≥ 0.
 *
 * @param c - the configuration (bigint or number sizes).
 * @returns the first problem, or null when the configuration is valid.
 * @example
 * ```ts
 * decoderConfigProblem({ vocabularySize: 5, modelWidth: 4, heads: 2, feedForwardWidth: 4, layers: 1, maxPositions: 2, ropeBase: 1e4, rmsEpsilon: 1e-6 }); // null
 * ```
 */
export function decoderConfigProblem(c: DecoderConfigValues): DecoderConfigProblem | null {
  const sizes = {} as Record<SizeField, bigint>;
  const leading = sizeProblem(c, LEADING_SIZE_RULES, sizes);
  if (leading !== null) return leading;
  const { modelWidth: D, heads: H } = sizes;
  if (D % H !== 0n) {
    return { field: 'heads', reason: 'width-not-divisible-by-heads', message: `decoder model_width ${D} is not divisible by heads ${H}`, expected: `a divisor of ${D}`, found: String(H) };
  }
  if ((D / H) % 2n !== 0n) {
    return { field: 'heads', reason: 'odd-head-width', message: `head width ${D / H} (model_width ${D} / heads ${H}) is odd: expected an even head width for RoPE`, expected: 'even head width', found: String(D / H) };
  }
  const trailing = sizeProblem(c, TRAILING_SIZE_RULES, sizes);
  if (trailing !== null) return trailing;
  if (!(typeof c.ropeBase === 'number' && Number.isFinite(c.ropeBase) && c.ropeBase > 0)) {
    return { field: 'ropeBase', reason: 'invalid-rope-base', message: `decoder rope_base is ${String(c.ropeBase)}: expected a finite value > 0`, expected: 'finite > 0', found: String(c.ropeBase) };
  }
  if (!(typeof c.rmsEpsilon === 'number' && Number.isFinite(c.rmsEpsilon) && c.rmsEpsilon >= 0)) {
    return { field: 'rmsEpsilon', reason: 'invalid-rms-epsilon', message: `decoder rms_epsilon is ${String(c.rmsEpsilon)}: expected a finite value >= 0`, expected: 'finite >= 0', found: String(c.rmsEpsilon) };
  }
  return null;
}

/**
 * ../SPEC.md §6.1, first bullet, on the stored configuration.
 * @param c - the stored decoder configuration.
 * @throws FormatError FORMAT_MODEL.
 */
export function validateDecoderConfig(c: RawDecoderConfig): void {
  const p = decoderConfigProblem(c);
  if (p !== null) throw modelError(p.reason, p.message, { field: p.field, expected: p.expected, found: p.found });
}

const ROTARY_ENTRY_LIMIT = ((1n << 63n) - 1n) / 8n;

/**
 * Whether a layer's rotary table is realisable (../SPEC.md §6.1): the entry count
 * fits, every inverse frequency `pow(base, (-2i)/d)` is finite, and every
 * angle `p · inv_freq` (p < max_positions) is finite. Since `p · f` is
 * monotone in p for f ≥ 0, only the largest position needs checking.
 *
 * @param headWidth - d (even, ≥ 2; bounded by the file size).
 * @param maxPositions - configured positions.
 * @param ropeBase - configured base (finite, > 0).
 * @returns a problem description, or `undefined` when realisable.
 */
function rotaryProblem(headWidth: number, maxPositions: bigint, ropeBase: number): string | undefined {
  const pairs = BigInt(headWidth / 2);
  const entries = maxPositions * pairs;
  if (entries > ROTARY_ENTRY_LIMIT) return `rotary table of ${maxPositions} × ${pairs} entries is too large`;
  const lastPosition = Number(maxPositions - 1n);
  for (let i = 0; i < headWidth / 2; i++) {
    const inverse = Math.pow(ropeBase, (-2 * i) / headWidth);
    if (!Number.isFinite(inverse)) return `inverse frequency ${i} (${ropeBase}^(${-2 * i}/${headWidth})) is not finite`;
    if (!Number.isFinite(lastPosition * inverse)) return `rotary angle at position ${lastPosition}, pair ${i} is not finite`;
  }
  return undefined;
}

/** A model record's name and raw shape, with its descriptor index. */
export interface ModelRecordShape {
  readonly index: number;
  readonly name: string;
  readonly shape: readonly bigint[];
}

/**
 * The shape checks of ../SPEC.md §9.5 step 6: structural problems immediately,
 * plain dimension mismatches with the configuration only after every
 * structural check passed (the first one remembered).
 *
 * @param c - decoder configuration (already validated by {@link validateDecoderConfig}).
 * @param records - the 2 + 9L model records in model order (names already checked).
 * @throws FormatError FORMAT_MODEL.
 */
export function validateModelShapes(c: RawDecoderConfig, records: readonly ModelRecordShape[]): void {
  const layers = (records.length - 2) / 9;
  let remembered: FormatError | undefined;
  const remember = (e: FormatError): void => {
    remembered ??= e;
  };
  const rec = (i: number): ModelRecordShape => records[i] as ModelRecordShape;
  const dim = (r: ModelRecordShape, k: number): bigint => r.shape[k] as bigint;
  const structural = (r: ModelRecordShape, reason: string, what: string): FormatError =>
    modelError(reason, `parameter "${r.name}" (descriptor[${r.index}]) shape [${r.shape.join(', ')}]: ${what}`, { recordName: r.name, recordIndex: r.index, found: `[${r.shape.join(', ')}]` });
  const isMatrix = (r: ModelRecordShape): boolean => r.shape.length === 2 && dim(r, 0) !== 0n && dim(r, 1) !== 0n;
  const isVector = (r: ModelRecordShape): boolean => r.shape.length === 1 && dim(r, 0) !== 0n;

  const emb = rec(0);
  if (!isMatrix(emb)) throw structural(emb, 'invalid-embedding-shape', 'expected rank 2 with non-zero dimensions');
  if (dim(emb, 0) !== c.vocabularySize) {
    remember(
      modelError('embedding-vocabulary-mismatch', `token_embedding.weight has ${dim(emb, 0)} rows: expected decoder vocabulary_size ${c.vocabularySize}`, {
        recordName: emb.name,
        recordIndex: emb.index,
        expected: String(c.vocabularySize),
        found: String(dim(emb, 0)),
      }),
    );
  } else if (dim(emb, 1) !== c.modelWidth) {
    remember(
      modelError('embedding-width-mismatch', `token_embedding.weight has ${dim(emb, 1)} columns: expected decoder model_width ${c.modelWidth}`, {
        recordName: emb.name,
        recordIndex: emb.index,
        expected: String(c.modelWidth),
        found: String(dim(emb, 1)),
      }),
    );
  }
  const rotaryCache = new Map<number, string | undefined>();
  for (let l = 0; l < layers; l++) {
    const base = blockTensorIndex(l, 0);
    const [an, q, k, v, o, fn, gate, up, down] = [0, 1, 2, 3, 4, 5, 6, 7, 8].map((j) => rec(base + j)) as [
      ModelRecordShape, ModelRecordShape, ModelRecordShape, ModelRecordShape, ModelRecordShape, ModelRecordShape, ModelRecordShape, ModelRecordShape, ModelRecordShape,
    ];
    const mismatch = (r: ModelRecordShape, what: string): FormatError => structural(r, 'layer-shape', `${what} (layer ${l})`);
    if (!isVector(an)) throw structural(an, 'invalid-norm-shape', `expected rank 1 with a non-zero width (layer ${l})`);
    for (const r of [q, k, v]) if (!isMatrix(r)) throw structural(r, 'invalid-weight-shape', `expected rank 2 with non-zero dimensions (layer ${l})`);
    if (dim(k, 0) !== dim(q, 0) || dim(v, 0) !== dim(q, 0)) throw mismatch(dim(k, 0) !== dim(q, 0) ? k : v, `query/key/value input widths differ (${dim(q, 0)}, ${dim(k, 0)}, ${dim(v, 0)})`);
    if (dim(k, 1) !== dim(q, 1) || dim(v, 1) !== dim(q, 1)) throw mismatch(dim(k, 1) !== dim(q, 1) ? k : v, `query/key/value output widths differ (${dim(q, 1)}, ${dim(k, 1)}, ${dim(v, 1)})`);
    if (!isMatrix(o)) throw structural(o, 'invalid-weight-shape', `expected rank 2 with non-zero dimensions (layer ${l})`);
    const width = dim(q, 0);
    if (width % c.heads !== 0n) throw mismatch(q, `query input width ${width} is not divisible by heads ${c.heads}`);
    const headWidth = width / c.heads;
    if (headWidth % 2n !== 0n) throw mismatch(q, `head width ${headWidth} is odd`);
    if (dim(q, 1) !== width) throw mismatch(q, `query output width ${dim(q, 1)} differs from its input width ${width}`);
    if (dim(o, 0) !== width || dim(o, 1) !== width) throw mismatch(o, `output projection must be [${width}, ${width}]`);
    const hw = Number(headWidth);
    if (!rotaryCache.has(hw)) rotaryCache.set(hw, rotaryProblem(hw, c.maxPositions, c.ropeBase));
    const rotary = rotaryCache.get(hw);
    if (rotary !== undefined) throw modelError('rotary-table', `layer ${l}: ${rotary}`, { recordName: q.name, recordIndex: q.index });
    if (!isVector(fn)) throw structural(fn, 'invalid-norm-shape', `expected rank 1 with a non-zero width (layer ${l})`);
    for (const r of [gate, up, down]) if (!isMatrix(r)) throw structural(r, 'invalid-weight-shape', `expected rank 2 with non-zero dimensions (layer ${l})`);
    if (dim(up, 0) !== dim(gate, 0)) throw mismatch(up, `gate and up input widths differ (${dim(gate, 0)}, ${dim(up, 0)})`);
    if (dim(up, 1) !== dim(gate, 1)) throw mismatch(up, `gate and up output widths differ (${dim(gate, 1)}, ${dim(up, 1)})`);
    if (dim(down, 0) !== dim(gate, 1)) throw mismatch(down, `down input width ${dim(down, 0)} differs from the hidden width ${dim(gate, 1)}`);
    if (dim(an, 0) !== width) throw mismatch(an, `attention norm width ${dim(an, 0)} differs from the layer width ${width}`);
    if (dim(fn, 0) !== width) throw mismatch(fn, `feed-forward norm width ${dim(fn, 0)} differs from the layer width ${width}`);
    if (dim(gate, 0) !== width) throw mismatch(gate, `gate input width ${dim(gate, 0)} differs from the layer width ${width}`);
    if (dim(down, 1) !== width) throw mismatch(down, `down output width ${dim(down, 1)} differs from the layer width ${width}`);
    if (width !== c.modelWidth) {
      remember(
        modelError('layer-width-mismatch', `layer ${l} width ${width}: expected decoder model_width ${c.modelWidth}`, {
          recordName: q.name,
          recordIndex: q.index,
          expected: String(c.modelWidth),
          found: String(width),
        }),
      );
    } else if (dim(gate, 1) !== c.feedForwardWidth) {
      remember(
        modelError('hidden-width-mismatch', `layer ${l} hidden width ${dim(gate, 1)}: expected decoder feed_forward_width ${c.feedForwardWidth}`, {
          recordName: gate.name,
          recordIndex: gate.index,
          expected: String(c.feedForwardWidth),
          found: String(dim(gate, 1)),
        }),
      );
    }
  }
  const fin = rec(records.length - 1);
  if (!isVector(fin)) throw structural(fin, 'invalid-norm-shape', 'expected rank 1 with a non-zero width');
  if (dim(fin, 0) !== c.modelWidth) {
    remember(
      modelError('final-norm-width-mismatch', `final_norm.gain width ${dim(fin, 0)}: expected decoder model_width ${c.modelWidth}`, {
        recordName: fin.name,
        recordIndex: fin.index,
        expected: String(c.modelWidth),
        found: String(dim(fin, 0)),
      }),
    );
  }
  if (remembered !== undefined) throw remembered;
}
