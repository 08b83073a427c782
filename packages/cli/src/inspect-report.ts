/**
 * The `llmcp inspect --json` report: the layout audit a reader needs before
 * trusting a payload (../../format/SPEC.md §3, §4, §12) as JSON following
 * `schema/inspect.schema.json`. Built from `@llmcp/format`'s
 * `inspectCheckpoint`, so it covers damaged files as far as they parse; the
 * text form of the same audit is `renderInspection` of `@llmcp/format`.
 */
import { f64BitsHex, hexBytes, u64Hex } from '@llmcp/format';
import { prefixSpans, type CheckpointInspection, type InspectedDescriptor, type InspectedField, type InspectionError, type PrefixSpan } from '@llmcp/format/inspect';

/** Identifier of the JSON report layout (`schema` member). */
export const INSPECT_SCHEMA_ID = 'llmcp-inspect/1';

/** An f64 in JSON: the value (non-finite values as text) and its exact bit pattern. */
export interface F64Json {
  readonly value: number | 'NaN' | 'Infinity' | '-Infinity';
  readonly bits: string;
}

/** A header field in JSON. */
export interface FieldJson {
  readonly field: string;
  readonly offset: number;
  readonly width: number;
  readonly type: string;
  readonly hex: string;
  /** u8/u16/u32 as integers, u64 as decimal strings, f64 as {@link F64Json}, strings as text. */
  readonly value: number | string | F64Json;
}

/** One annotated span of the first 16 bytes (`prefixSpans` of `@llmcp/format`). */
export type PrefixSpanJson = PrefixSpan;

/** A descriptor row in JSON (u64 values as decimal strings). */
export interface DescriptorJson {
  readonly index: number;
  readonly entryOffset: number;
  readonly entryLength: number;
  readonly roleTag: number;
  readonly role: string | null;
  readonly name: string;
  readonly dtypeTag: number;
  readonly dtype: string | null;
  readonly shape: readonly string[];
  readonly offset: string;
  readonly byteLength: string;
  readonly end: string | null;
  /** Half-open byte range `[offset,end)`, or null when the end overflows. */
  readonly range: string | null;
  readonly expectedByteLength: string | null;
  readonly slice: string;
  readonly checks: { readonly byteLengthMatchesShape: boolean; readonly contiguous: boolean; readonly withinFile: boolean };
  readonly payloadChecksum: string | null;
}

/** The `llmcp inspect --json` document (see `schema/inspect.schema.json`). */
export interface InspectReportJson {
  readonly schema: typeof INSPECT_SCHEMA_ID;
  readonly file: string;
  readonly fileLength: number;
  readonly verdict: { readonly valid: true; readonly checksum: string } | { readonly valid: false; readonly error: InspectionError };
  readonly prefix: { readonly hex: string; readonly spans: readonly PrefixSpanJson[] };
  readonly fixedHeader: readonly FieldJson[];
  readonly checksum: { readonly stored: string; readonly computed: string; readonly matches: boolean } | null;
  readonly headerBytes: string | null;
  readonly payloadBytes: string | null;
  readonly variableHeader: readonly FieldJson[];
  readonly tokenizer: {
    readonly kindTag: number;
    readonly kind: 'literal' | 'bpe' | null;
    readonly kindName: string | null;
    readonly declaredVocabulary: string | null;
    readonly records: number | null;
    readonly merges: string | null;
    readonly preview: readonly string[];
  } | null;
  readonly decoder: {
    readonly vocabularySize: string;
    readonly modelWidth: string;
    readonly heads: string;
    readonly feedForwardWidth: string;
    readonly layers: string;
    readonly maxPositions: string;
    readonly ropeBase: F64Json;
    readonly rmsEpsilon: F64Json;
  } | null;
  readonly adamw: { readonly learningRate: F64Json; readonly beta1: F64Json; readonly beta2: F64Json; readonly epsilon: F64Json; readonly weightDecay: F64Json } | null;
  readonly groupsFlag: number | null;
  readonly groups: { readonly decay: readonly string[]; readonly noDecay: readonly string[] } | null;
  readonly selectedStep: string | null;
  readonly optimizerStep: string | null;
  readonly samplingRngState: string | null;
  readonly beta1Power: F64Json | null;
  readonly beta2Power: F64Json | null;
  readonly modelParameterCount: number | null;
  readonly optimizerStateCount: number | null;
  readonly descriptorCount: number | null;
  readonly descriptors: readonly DescriptorJson[];
  readonly recordsEnd: string | null;
  readonly parseStoppedAt: InspectionError | null;
  readonly headerIssues: readonly InspectionError[];
}

function f64Json(value: number): F64Json {
  const bits = f64BitsHex(value);
  if (Number.isNaN(value)) return { value: 'NaN', bits };
  if (value === Infinity) return { value: 'Infinity', bits };
  if (value === -Infinity) return { value: '-Infinity', bits };
  return { value, bits };
}

function fieldJson(f: InspectedField): FieldJson {
  const value = typeof f.value === 'bigint' ? f.value.toString() : f.type === 'f64' && typeof f.value === 'number' ? f64Json(f.value) : f.value;
  return { field: f.field, offset: f.offset, width: f.width, type: f.type, hex: f.hex, value };
}

function range(d: InspectedDescriptor): string | null {
  return d.end === null ? null : `[${d.offset},${d.end})`;
}

/**
 * The JSON report of one file.
 *
 * @param bytes - the file's bytes.
 * @param inspection - `inspectCheckpoint(bytes)`.
 * @param file - the path as given on the command line.
 * @returns the document described by `schema/inspect.schema.json`.
 */
export function inspectReportJson(bytes: Uint8Array, inspection: CheckpointInspection, file: string): InspectReportJson {
  const i = inspection;
  const s = (v: bigint | null): string | null => (v === null ? null : v.toString());
  const f = (v: number | null): F64Json | null => (v === null ? null : f64Json(v));
  return {
    schema: INSPECT_SCHEMA_ID,
    file,
    fileLength: i.fileLength,
    verdict: i.verdict.valid ? { valid: true, checksum: i.verdict.checkpoint.layout.checksumLabel } : { valid: false, error: i.verdict.error },
    prefix: { hex: hexBytes(bytes.subarray(0, 16)), spans: prefixSpans(bytes, i) },
    fixedHeader: i.fixedHeader.map(fieldJson),
    checksum: i.checksum === null ? null : { stored: i.checksum.storedLabel, computed: i.checksum.computedLabel, matches: i.checksum.matches },
    headerBytes: s(i.headerBytes),
    payloadBytes: s(i.payloadBytes),
    variableHeader: i.fields.map(fieldJson),
    tokenizer:
      i.tokenizer === null
        ? null
        : {
            kindTag: i.tokenizer.kindTag,
            kind: i.tokenizer.kind,
            kindName: i.tokenizer.kindName,
            declaredVocabulary: s(i.tokenizer.declaredVocabulary),
            records: i.tokenizer.records,
            merges: s(i.tokenizer.merges),
            preview: i.tokenizer.preview,
          },
    decoder:
      i.decoder === null
        ? null
        : {
            vocabularySize: i.decoder.vocabularySize.toString(),
            modelWidth: i.decoder.modelWidth.toString(),
            heads: i.decoder.heads.toString(),
            feedForwardWidth: i.decoder.feedForwardWidth.toString(),
            layers: i.decoder.layers.toString(),
            maxPositions: i.decoder.maxPositions.toString(),
            ropeBase: f64Json(i.decoder.ropeBase),
            rmsEpsilon: f64Json(i.decoder.rmsEpsilon),
          },
    adamw:
      i.adamw === null
        ? null
        : {
            learningRate: f64Json(i.adamw.learningRate),
            beta1: f64Json(i.adamw.beta1),
            beta2: f64Json(i.adamw.beta2),
            epsilon: f64Json(i.adamw.epsilon),
            weightDecay: f64Json(i.adamw.weightDecay),
          },
    groupsFlag: i.groupsFlag,
    groups: i.groups,
    selectedStep: s(i.selectedStep),
    optimizerStep: s(i.optimizerStep),
    samplingRngState: i.samplingRngState === null ? null : u64Hex(i.samplingRngState),
    beta1Power: f(i.beta1Power),
    beta2Power: f(i.beta2Power),
    modelParameterCount: i.modelParameterCount,
    optimizerStateCount: i.optimizerStateCount,
    descriptorCount: i.descriptorCount,
    descriptors: i.descriptors.map(
      (d): DescriptorJson => ({
        index: d.index,
        entryOffset: d.entryOffset,
        entryLength: d.entryLength,
        roleTag: d.roleTag,
        role: d.role,
        name: d.name,
        dtypeTag: d.dtypeTag,
        dtype: d.dtype,
        shape: d.shape.map(String),
        offset: d.offset.toString(),
        byteLength: d.byteLength.toString(),
        end: s(d.end),
        range: range(d),
        expectedByteLength: s(d.expectedByteLength),
        slice: d.slice,
        checks: d.checks,
        payloadChecksum: d.payloadChecksum,
      }),
    ),
    recordsEnd: s(i.recordsEnd),
    parseStoppedAt: i.parseStoppedAt,
    headerIssues: i.headerIssues,
  };
}
