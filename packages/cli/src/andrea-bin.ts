/**
 * The raw ANDREA `step_NNNNNN.bin` checkpoint of the course's run notes
 * (seed document 001): five back-to-back regions, little-endian,
 *
 * ```
 * [i32 step] [i32 n_params] [f32 weights × n] [f32 m × n] [f32 v × n]     total 8 + 12·n bytes
 * ```
 *
 * with parameters flattened in model order (../../format/SPEC.md §7) and the AdamW
 * moments m, v in the same order. Export rounds every f64 to the nearest f32
 * (lossy); import restores the AdamW step from the header and recomputes the
 * beta powers the way the optimizer does (repeated multiplication from 1.0),
 * taking everything the `.bin` lacks (tokenizer, decoder and AdamW
 * configuration, groups, sampling RNG state) from a config.
 */
import {
  decodeCheckpoint,
  encodeCheckpoint,
  expectedParameterShapes,
  isFormatError,
  type AdamWConfig,
  type CheckpointState,
  type DecoderConfig,
  type MomentState,
  type NamedTensor,
  type ParameterGroups,
  type TokenizerState,
} from '@llmcp/format';
import { CliError } from './errors.ts';

/** Bytes before the weights: `i32 step`, `i32 n_params`. */
export const ANDREA_HEADER_BYTES = 8;
/** Largest value of an i32 field. */
export const ANDREA_MAX_I32: number = 2 ** 31 - 1;

/** The decoded regions of a `.bin` file. */
export interface AndreaBin {
  readonly step: number;
  readonly weights: Float32Array;
  readonly m: Float32Array;
  readonly v: Float32Array;
}

/** What an export lost by rounding f64 to f32. */
export interface AndreaExportReport {
  readonly parameterCount: number;
  /** Values (weights, m, v) whose f32 differs from the f64. */
  readonly roundedValues: number;
  /** Largest |f64 − f32| over all values. */
  readonly maxAbsoluteError: number;
}

/** Everything a `.bin` lacks, needed to rebuild an LLMCP35 checkpoint. */
export interface AndreaImportConfig {
  readonly tokenizer: TokenizerState;
  readonly decoder: DecoderConfig;
  readonly adamw: AdamWConfig;
  readonly groups: ParameterGroups | null;
  readonly samplingRngState: bigint;
}

function invalid(message: string, offset?: number, hint?: string): CliError {
  return new CliError('CLI_ANDREA_BIN_INVALID', message, { ...(offset === undefined ? {} : { offset }), ...(hint === undefined ? {} : { hint }) });
}

/**
 * Total scalar count of a decoder configuration, without allocating
 * (V·D + L·(2D + 4D² + 3DF) + D), or null when it is not a safe integer.
 *
 * @param c - decoder configuration.
 * @returns the parameter count, or null on overflow.
 */
export function parameterCount(c: DecoderConfig): number | null {
  const v = BigInt(c.vocabularySize);
  const d = BigInt(c.modelWidth);
  const f = BigInt(c.feedForwardWidth);
  const l = BigInt(c.layers);
  const total = v * d + l * (2n * d + 4n * d * d + 3n * d * f) + d;
  return total > BigInt(Number.MAX_SAFE_INTEGER) ? null : Number(total);
}

/**
 * Writes a checkpoint as an ANDREA `.bin` (lossy: f64 → nearest f32). At step
 * 0 (no moment state) m and v are written as zeros.
 *
 * @param state - a (validated) checkpoint.
 * @returns the bytes and what rounding changed.
 * @throws CliError `CLI_ANDREA_BIN_INVALID` when the step or parameter count does not fit an i32, or a value overflows f32.
 * @example
 * ```ts
 * const { bytes, report } = encodeAndreaBin(decodeCheckpoint(file));
 * bytes.length === 8 + 12 * report.parameterCount; // true
 * ```
 */
export function encodeAndreaBin(state: CheckpointState): { bytes: Uint8Array; report: AndreaExportReport } {
  if (state.selectedStep > BigInt(ANDREA_MAX_I32)) throw invalid(`step ${state.selectedStep} does not fit the .bin's i32 step field (max ${ANDREA_MAX_I32})`);
  const n = state.parameters.reduce((sum, p) => sum + p.data.length, 0);
  if (n > ANDREA_MAX_I32) throw invalid(`${n} parameters do not fit the .bin's i32 n_params field (max ${ANDREA_MAX_I32})`);
  const bytes = new Uint8Array(ANDREA_HEADER_BYTES + 12 * n);
  const view = new DataView(bytes.buffer);
  view.setInt32(0, Number(state.selectedStep), true);
  view.setInt32(4, n, true);
  const moments = new Map(state.optimizer.moments.map((m) => [m.name, m]));
  let rounded = 0;
  let maxError = 0;
  // `start` is the current parameter's first index within each region.
  let start = 0;
  const put = (region: number, data: Float64Array | null, label: string): void => {
    for (let i = 0; i < (data?.length ?? 0); i++) {
      const x = (data as Float64Array)[i] as number;
      const r = Math.fround(x);
      if (!Number.isFinite(r)) throw invalid(`${label}[${i}] = ${x} overflows f32`);
      if (!Object.is(r, x)) {
        rounded += 1;
        maxError = Math.max(maxError, Math.abs(r - x));
      }
      view.setFloat32(ANDREA_HEADER_BYTES + 4 * (region * n + start + i), r, true);
    }
  };
  for (const p of state.parameters) {
    const m = moments.get(p.name);
    put(0, p.data, p.name);
    put(1, m?.first ?? null, `m ${p.name}`);
    put(2, m?.second ?? null, `v ${p.name}`);
    start += p.data.length;
  }
  return { bytes, report: { parameterCount: n, roundedValues: rounded, maxAbsoluteError: maxError } };
}

/**
 * Reads a `.bin`, checking every size: the 8-byte header, a step and count
 * that are not negative, and a length of exactly 8 + 12·n bytes.
 *
 * @param bytes - the file.
 * @returns step, weights, m and v.
 * @throws CliError `CLI_ANDREA_BIN_INVALID` naming what is wrong and where.
 */
export function decodeAndreaBin(bytes: Uint8Array): AndreaBin {
  if (bytes.length < ANDREA_HEADER_BYTES) {
    throw invalid(`file is ${bytes.length} bytes, shorter than the 8-byte header [i32 step][i32 n_params]`, bytes.length);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const step = view.getInt32(0, true);
  const n = view.getInt32(4, true);
  if (step < 0) throw invalid(`step at offset 0 is ${step}; expected a step ≥ 0`, 0);
  if (n <= 0) throw invalid(`n_params at offset 4 is ${n}; expected a count ≥ 1`, 4);
  const expected = ANDREA_HEADER_BYTES + 12 * n;
  if (bytes.length < expected) {
    throw invalid(`file is ${bytes.length} bytes; n_params = ${n} needs 8 + 12·${n} = ${expected} bytes (truncated by ${expected - bytes.length})`, bytes.length);
  }
  if (bytes.length > expected) {
    throw invalid(`file is ${bytes.length} bytes; n_params = ${n} needs 8 + 12·${n} = ${expected} bytes (${bytes.length - expected} trailing bytes)`, expected);
  }
  const region = (k: number): Float32Array => {
    const out = new Float32Array(n);
    const base = ANDREA_HEADER_BYTES + 4 * k * n;
    for (let i = 0; i < n; i++) out[i] = view.getFloat32(base + 4 * i, true);
    return out;
  };
  return { step, weights: region(0), m: region(1), v: region(2) };
}

function powersAt(step: number, beta1: number, beta2: number): [number, number] {
  // The optimizer multiplies the running powers once per step, starting at 1.0. Once a multiplication changes
  // neither power — both reached 0, or a subnormal that β rounds back to itself (5e-324 × 0.999 is 5e-324) —
  // every later step gives the same bits, so the loop stops there: a step of 2^31 − 1 used to run 2^31 times.
  let p1 = 1.0;
  let p2 = 1.0;
  for (let t = 0; t < step; t++) {
    const n1 = p1 * beta1;
    const n2 = p2 * beta2;
    if (n1 === p1 && n2 === p2) break;
    p1 = n1;
    p2 = n2;
  }
  return [p1, p2];
}

/**
 * Rebuilds an LLMCP35 checkpoint from a `.bin` and a config: parameters in
 * model order from the weights, moments (step > 0) from m and v, the AdamW
 * step from the header with beta powers recomputed, and the result validated
 * by the full decoder.
 *
 * @param bin - from {@link decodeAndreaBin}.
 * @param config - tokenizer, decoder and AdamW configuration, groups, RNG state.
 * @returns the checkpoint state (already validated).
 * @throws CliError `CLI_ANDREA_BIN_INVALID` when the count disagrees with the config, step 0 carries moments, or the result breaks a format rule.
 */
export function checkpointFromAndreaBin(bin: AndreaBin, config: AndreaImportConfig): CheckpointState {
  const n = bin.weights.length;
  const expected = parameterCount(config.decoder);
  if (expected !== n) {
    throw invalid(`n_params is ${n}, but the config's decoder has ${expected ?? 'too many'} parameters`, 4, 'check that --config describes the model this .bin was saved from');
  }
  const shapes = expectedParameterShapes(config.decoder);
  if (bin.step === 0) {
    for (let i = 0; i < n; i++) {
      if (bin.m[i] !== 0 || bin.v[i] !== 0) {
        throw invalid(`step is 0 but moment value ${i} is non-zero (m ${bin.m[i]}, v ${bin.v[i]}); a step-0 checkpoint has no AdamW state`, ANDREA_HEADER_BYTES + 4 * (n + i));
      }
    }
  }
  const parameters: NamedTensor[] = [];
  const moments: MomentState[] = [];
  let start = 0;
  for (const { name, shape } of shapes) {
    const size = shape.reduce((a, b) => a * b, 1);
    parameters.push({ name, shape, data: Float64Array.from(bin.weights.subarray(start, start + size)) });
    if (bin.step > 0) {
      moments.push({ name, shape, first: Float64Array.from(bin.m.subarray(start, start + size)), second: Float64Array.from(bin.v.subarray(start, start + size)) });
    }
    start += size;
  }
  const [beta1Power, beta2Power] = powersAt(bin.step, config.adamw.beta1, config.adamw.beta2);
  const state: CheckpointState = {
    tokenizer: config.tokenizer,
    decoder: config.decoder,
    parameters,
    optimizer: { config: config.adamw, groups: config.groups, step: BigInt(bin.step), beta1Power, beta2Power, moments },
    selectedStep: BigInt(bin.step),
    samplingRngState: config.samplingRngState,
  };
  try {
    // Encoding then decoding applies every LLMCP35 rule (../../format/SPEC.md §6, §9).
    return decodeCheckpoint(encodeCheckpoint(state));
  } catch (e) {
    if (!isFormatError(e)) throw e;
    throw new CliError('CLI_ANDREA_BIN_INVALID', `the imported state breaks an LLMCP35 rule: ${e.code}: ${e.message}`, { causeCode: e.code, cause: e });
  }
}
