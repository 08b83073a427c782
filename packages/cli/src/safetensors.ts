/**
 * Export of a checkpoint as a standard safetensors file
 * (https://github.com/huggingface/safetensors, "Format"): an 8-byte
 * little-endian header length N, N bytes of UTF-8 JSON (padded with spaces to
 * a multiple of 8), then the tensor data, contiguous, without holes.
 *
 * Tensor names: model parameters under their llmcp names
 * (`token_embedding.weight`, `blocks.0.attention.query.weight`, …) in model
 * order; with `moments`, the AdamW first and second moments follow as
 * `adamw.m.<parameter>` and `adamw.v.<parameter>` (model order). Everything
 * else the checkpoint holds is in `__metadata__` (string values, JSON text
 * where structured): tokenizer, decoder and AdamW configuration, groups, step,
 * beta powers, sampling RNG state, the source checksum and `total_parameters`
 * (the model's scalar count as a decimal string, which Hugging Face's
 * metadata parsers read as the parameter total).
 */
import { checksumLabel, f64BitsHex, u64Hex, type CheckpointState } from '@llmcp/format';
import { tokenizerFromState } from '@llmcp/tokenizer';
import { CliError } from './errors.ts';
import { exactDecoderSizes, stringifyExact } from './internal/exact-json.ts';

/** Element type written to the file. */
export type SafetensorsDType = 'F64' | 'F32';

/** Options of {@link encodeSafetensors}. */
export interface SafetensorsOptions {
  /** Include AdamW moments as `adamw.m.<name>` / `adamw.v.<name>` (default false). */
  readonly moments?: boolean;
  /** `F64` (default, exact) or `F32` (rounded to nearest; lossy). */
  readonly dtype?: SafetensorsDType;
  /** FNV-1a label of the source file, recorded in the metadata. */
  readonly sourceChecksum?: bigint;
}

/** Name prefix of exported first moments. */
export const SAFETENSORS_FIRST_MOMENT_PREFIX = 'adamw.m.';
/** Name prefix of exported second moments. */
export const SAFETENSORS_SECOND_MOMENT_PREFIX = 'adamw.v.';
/** `__metadata__.format` value of an llmcp export. */
export const SAFETENSORS_METADATA_FORMAT = 'llmcp-safetensors/1';

/**
 * The metadata an export carries (all values strings, as the format requires).
 *
 * @param state - the checkpoint.
 * @param options - export options.
 * @returns `__metadata__`.
 * @throws TokenizerError when the checkpoint's tokenizer is invalid (never for a decoded checkpoint).
 */
export function safetensorsMetadata(state: CheckpointState, options: SafetensorsOptions = {}): Record<string, string> {
  const o = state.optimizer;
  // The stable JSON form of @llmcp/tokenizer (`tokenizerFromJSON` reads it back).
  const tokenizer = tokenizerFromState(state.tokenizer);
  const meta: Record<string, string> = {
    format: SAFETENSORS_METADATA_FORMAT,
    source_format: 'LLMCP35 v1',
    dtype_note: (options.dtype ?? 'F64') === 'F64' ? 'f64 values exactly as stored' : 'f64 values rounded to the nearest f32 (lossy)',
    tokenizer: JSON.stringify(tokenizer.toJSON()),
    tokenizer_identity: tokenizer.identity(),
    // Exact: a u64 size above 2^53 − 1 (a 0-layer model's F, maxPositions) as its digits, not a rounded double.
    decoder_config: stringifyExact(exactDecoderSizes(state.decoder)),
    adamw_config: JSON.stringify({ ...o.config, bits: Object.fromEntries(Object.entries(o.config).map(([k, v]) => [k, f64BitsHex(v)])) }),
    adamw_groups: JSON.stringify(o.groups),
    adamw_step: o.step.toString(),
    adamw_beta1_power: f64BitsHex(o.beta1Power),
    adamw_beta2_power: f64BitsHex(o.beta2Power),
    selected_step: state.selectedStep.toString(),
    sampling_rng_state: u64Hex(state.samplingRngState),
    parameter_order: JSON.stringify(state.parameters.map((p) => p.name)),
    moments: options.moments === true ? (o.moments.length === 0 ? 'none at step 0' : `${SAFETENSORS_FIRST_MOMENT_PREFIX}<name>, ${SAFETENSORS_SECOND_MOMENT_PREFIX}<name>`) : 'not exported',
    total_parameters: totalParameters(state).toString(),
  };
  if (options.sourceChecksum !== undefined) meta.source_checksum = checksumLabel(options.sourceChecksum);
  return meta;
}

/**
 * The number of model parameters (scalars of every parameter tensor; AdamW
 * moments are not parameters), as `__metadata__.total_parameters` records it.
 *
 * @param state - the checkpoint.
 * @returns the count.
 */
export function totalParameters(state: Pick<CheckpointState, 'parameters'>): number {
  return state.parameters.reduce((n, p) => n + p.data.length, 0);
}

/** One tensor to write: its name, row-major shape and f64 values. */
export interface SafetensorsTensor {
  readonly name: string;
  readonly shape: readonly number[];
  readonly data: Float64Array;
}

/**
 * Encodes a checkpoint's tensors as a safetensors file.
 *
 * @param state - a (validated) checkpoint.
 * @param options - moments, dtype, source checksum.
 * @returns the file's bytes.
 * @throws CliError `CLI_INVALID_INPUT` when a value does not fit the chosen dtype (F32 overflow).
 * @example
 * ```ts
 * const bytes = encodeSafetensors(decodeCheckpoint(file), { moments: true });
 * ```
 */
export function encodeSafetensors(state: CheckpointState, options: SafetensorsOptions = {}): Uint8Array {
  const dtype = options.dtype ?? 'F64';
  const entries: SafetensorsTensor[] = state.parameters.map((p) => ({ name: p.name, shape: p.shape, data: p.data }));
  if (options.moments === true && state.optimizer.moments.length > 0) {
    const byName = new Map(state.optimizer.moments.map((m) => [m.name, m]));
    for (const p of state.parameters) {
      const m = byName.get(p.name);
      if (m !== undefined) entries.push({ name: SAFETENSORS_FIRST_MOMENT_PREFIX + p.name, shape: m.shape, data: m.first });
    }
    for (const p of state.parameters) {
      const m = byName.get(p.name);
      if (m !== undefined) entries.push({ name: SAFETENSORS_SECOND_MOMENT_PREFIX + p.name, shape: m.shape, data: m.second });
    }
  }
  return encodeSafetensorsTensors(entries, safetensorsMetadata(state, options), dtype);
}

/**
 * Writes tensors as a safetensors file: the one safetensors writer of the CLI
 * (the llmcp export and the Hugging Face directory export both use it). The
 * header lists the tensors in the given order with contiguous
 * `data_offsets`, is padded with spaces to a multiple of 8, and the data
 * follows without holes.
 *
 * @param entries - tensors in file order (names unique, not `__metadata__`).
 * @param metadata - `__metadata__` (string values).
 * @param dtype - `F64` (exact) or `F32` (rounded to nearest).
 * @returns the file's bytes.
 * @throws CliError `CLI_INVALID_INPUT` when a value does not fit the chosen dtype (F32 overflow).
 * @example
 * ```ts
 * const bytes = encodeSafetensorsTensors([{ name: 'w', shape: [2], data: new Float64Array([1, 2]) }], { format: 'pt' }, 'F32');
 * ```
 */
export function encodeSafetensorsTensors(entries: readonly SafetensorsTensor[], metadata: Readonly<Record<string, string>>, dtype: SafetensorsDType): Uint8Array {
  const width = dtype === 'F64' ? 8 : 4;
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  for (const e of entries) {
    const end = offset + e.data.length * width;
    header[e.name] = { dtype, shape: e.shape, data_offsets: [offset, end] };
    offset = end;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.length / 8) * 8;
  const out = new Uint8Array(8 + padded + offset);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(padded), true);
  out.set(json, 8);
  out.fill(0x20, 8 + json.length, 8 + padded);
  let at = 8 + padded;
  for (const e of entries) {
    for (let i = 0; i < e.data.length; i++) {
      const v = e.data[i] as number;
      if (dtype === 'F64') view.setFloat64(at, v, true);
      else {
        const r = Math.fround(v);
        if (!Number.isFinite(r) && Number.isFinite(v)) {
          throw new CliError('CLI_INVALID_INPUT', `${e.name}[${i}] = ${v} does not fit in f32`, { hint: 'export with --dtype f64' });
        }
        view.setFloat32(at, r, true);
      }
      at += width;
    }
  }
  return out;
}
