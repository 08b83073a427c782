/**
 * The config of `llmcp import --from andrea-bin`: what a raw `.bin` lacks to
 * become an LLMCP35 checkpoint. Either an LLMCP35 checkpoint used as a
 * template (its tokenizer, decoder and AdamW configuration, groups and
 * sampling RNG state are taken; its tensors ignored), or a JSON document:
 *
 * ```json
 * {
 *   "format": "llmcp-andrea-import/1",
 *   "tokenizer": { "format": "llmcp-tokenizer", "version": 1, "kind": "literal", "pieces": ["30", "31"] },
 *   "decoder": { "vocabularySize": 2, "modelWidth": 4, "heads": 2, "feedForwardWidth": 4, "layers": 1,
 *                "maxPositions": 2, "ropeBase": 10000, "rmsEpsilon": 1e-6 },
 *                (feedForwardWidth and maxPositions above 2^53 - 1: their exact digits as a string)
 *   "adamw": { "learningRate": 0.04, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "weightDecay": 0.01 },
 *   "groups": { "decay": ["…"], "noDecay": ["…"] },
 *   "samplingRngState": "0x9e3779b97f4a7c38"
 * }
 * ```
 *
 * `groups` may be null (decay applies to every parameter). `llmcp export --to
 * andrea-bin --config-out <file>` writes this document for a checkpoint.
 */
import { decodeCheckpoint, f64BitsHex, f64FromBits, isFormatError, type CheckpointState } from '@llmcp/format';
import { tokenizerFromJSON, tokenizerFromState } from '@llmcp/tokenizer';
import { z } from 'zod';
import type { AndreaImportConfig } from './andrea-bin.ts';
import { CliError } from './errors.ts';
import { exactDecoderSizes } from './internal/exact-json.ts';

/** `format` member of an import config document. */
export const ANDREA_IMPORT_FORMAT = 'llmcp-andrea-import/1';

const size = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
const U64_MAX = (1n << 64n) - 1n;
/**
 * A size a 0-layer model may hold at any u64 (F, maxPositions): a safe integer, or, above 2^53 − 1, its exact
 * decimal digits as a string (a JSON number that large is read as the nearest double).
 */
const u64Size = z.union([
  size,
  z
    .string()
    .regex(/^[1-9][0-9]{0,19}$/, 'expected a positive integer, or its decimal digits as a string above 2^53 - 1')
    .transform((v) => BigInt(v))
    .refine((v) => v > BigInt(Number.MAX_SAFE_INTEGER) && v <= U64_MAX, 'expected decimal digits of a u64 above 2^53 - 1 (smaller sizes are JSON numbers)'),
]);
const BITS = /^0x[0-9a-f]{16}$/;

/** An f64 as a JSON number, or as its exact bit pattern `0x` + 16 hex digits (needed for −0). */
const finite = z
  .union([z.number(), z.string().regex(BITS, 'expected a number or 0x followed by 16 lowercase hex digits')])
  .transform((v) => (typeof v === 'string' ? f64FromBits(BigInt(v)) : v))
  .refine(Number.isFinite, 'expected a finite number');

function f64Json(value: number): number | string {
  // JSON numbers keep every finite f64 exactly except the sign of −0.
  return Object.is(value, -0) ? f64BitsHex(value) : value;
}

const schema = z.strictObject({
  format: z.literal(ANDREA_IMPORT_FORMAT),
  tokenizer: z.unknown(),
  decoder: z.strictObject({
    vocabularySize: size,
    modelWidth: size,
    heads: size,
    feedForwardWidth: u64Size,
    layers: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    maxPositions: u64Size,
    ropeBase: finite,
    rmsEpsilon: finite,
  }),
  adamw: z.strictObject({ learningRate: finite, beta1: finite, beta2: finite, epsilon: finite, weightDecay: finite }),
  groups: z.strictObject({ decay: z.array(z.string()), noDecay: z.array(z.string()) }).nullable(),
  samplingRngState: z.string().regex(/^0x[0-9a-f]{1,16}$/, 'expected 0x followed by 1–16 lowercase hex digits'),
});

function bad(message: string, path: string): CliError {
  return new CliError('CLI_INVALID_INPUT', message, { path, hint: `see 'llmcp import --help' for the config format` });
}

/**
 * Reads an import config: an LLMCP35 file (template) or the JSON document.
 *
 * @param bytes - the config file's bytes.
 * @param path - its path (for messages).
 * @returns the config.
 * @throws CliError `CLI_INVALID_INPUT` naming the first problem.
 */
export function parseAndreaImportConfig(bytes: Uint8Array, path: string): AndreaImportConfig {
  if (bytes.length >= 8 && String.fromCharCode(...bytes.subarray(0, 7)) === 'LLMCP35') {
    let state: CheckpointState;
    try {
      state = decodeCheckpoint(bytes);
    } catch (e) {
      if (!isFormatError(e)) throw e;
      throw bad(`config ${path} is an LLMCP35 file that does not decode: ${e.code}: ${e.message}`, path);
    }
    return { tokenizer: state.tokenizer, decoder: state.decoder, adamw: state.optimizer.config, groups: state.optimizer.groups, samplingRngState: state.samplingRngState };
  }
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (e) {
    throw bad(`config ${path} is neither an LLMCP35 checkpoint nor valid JSON: ${(e as Error).message}`, path);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const at = issue === undefined || issue.path.length === 0 ? '(root)' : issue.path.join('.');
    throw bad(`config ${path}: ${at}: ${issue?.message ?? 'invalid'}`, path);
  }
  const c = parsed.data;
  let tokenizer: AndreaImportConfig['tokenizer'];
  try {
    tokenizer = tokenizerFromJSON(c.tokenizer).toState();
  } catch (e) {
    throw bad(`config ${path}: tokenizer: ${(e as Error).message}`, path);
  }
  const { feedForwardWidth, maxPositions } = c.decoder;
  // A size above 2^53 − 1 is the nearest double with its exact value beside it (@llmcp/format's DecoderConfig.exact).
  const exact = {
    ...(typeof feedForwardWidth === 'bigint' ? { feedForwardWidth } : {}),
    ...(typeof maxPositions === 'bigint' ? { maxPositions } : {}),
  };
  const decoder = { ...c.decoder, feedForwardWidth: Number(feedForwardWidth), maxPositions: Number(maxPositions), ...(Object.keys(exact).length === 0 ? {} : { exact }) };
  return { tokenizer, decoder, adamw: c.adamw, groups: c.groups, samplingRngState: BigInt(c.samplingRngState) };
}

/**
 * The import config document describing a checkpoint (what `export --to
 * andrea-bin --config-out` writes).
 *
 * @param state - the checkpoint.
 * @returns the JSON text (ends with a newline).
 * @throws TokenizerError when the checkpoint's tokenizer is invalid (never for a decoded checkpoint).
 */
export function andreaImportConfigJson(state: CheckpointState): string {
  const d = state.decoder;
  const a = state.optimizer.config;
  const doc = {
    format: ANDREA_IMPORT_FORMAT,
    tokenizer: tokenizerFromState(state.tokenizer).toJSON(),
    // A u64 size above 2^53 − 1 as its exact digits in a string (read back exactly by parseAndreaImportConfig).
    decoder: { ...exactDecoderSizes(d, (v) => v.toString()), ropeBase: f64Json(d.ropeBase), rmsEpsilon: f64Json(d.rmsEpsilon) },
    adamw: { learningRate: f64Json(a.learningRate), beta1: f64Json(a.beta1), beta2: f64Json(a.beta2), epsilon: f64Json(a.epsilon), weightDecay: f64Json(a.weightDecay) },
    groups: state.optimizer.groups,
    samplingRngState: `0x${state.samplingRngState.toString(16)}`,
  };
  return `${JSON.stringify(doc, null, 2)}\n`;
}
