/**
 * `@llmcp/cli`: the `llmcp` command line (inspect, verify, diff, sample,
 * export/import, train/resume/pivot/fork/status, eval/report) and the building blocks it
 * is made of, usable as a library.
 */
export { runCli, createProgram, CLI_VERSION } from './cli.ts';
export { colorEnabled, colorsFor } from './context.ts';
export type { CliContext, CliStream, Colors } from './context.ts';
export { CliError, isCliError, CLI_ERROR_CODES } from './errors.ts';
export type { CliErrorCode, CliErrorContext } from './errors.ts';
export { EXIT_CODES, EXIT_CODE_MEANINGS, exitCodesHelp } from './exit-codes.ts';
export type { ExitCode, ExitCodeName, SetExit } from './exit-codes.ts';
export { ERROR_SCHEMA_ID, errorJson } from './error-report.ts';
export type { ErrorJson } from './error-report.ts';
export { guardOutput, processOutput } from './process-output.ts';
export type { GuardedStream, OutputStream } from './process-output.ts';
export { INSPECT_SCHEMA_ID, inspectReportJson } from './inspect-report.ts';
export type { DescriptorJson, F64Json, FieldJson, InspectReportJson, PrefixSpanJson } from './inspect-report.ts';
export { diffCheckpoints } from './checkpoint-diff.ts';
export type { CheckpointDiff, FieldDifference, TensorDifference, TensorKind } from './checkpoint-diff.ts';
export {
  encodeSafetensors,
  encodeSafetensorsTensors,
  safetensorsMetadata,
  totalParameters,
  SAFETENSORS_FIRST_MOMENT_PREFIX,
  SAFETENSORS_SECOND_MOMENT_PREFIX,
  SAFETENSORS_METADATA_FORMAT,
} from './safetensors.ts';
export type { SafetensorsDType, SafetensorsOptions, SafetensorsTensor } from './safetensors.ts';
export {
  encodeGguf,
  f64ToF16Bits,
  ggufMetadata,
  ggufTensorInfos,
  ggufVocabulary,
  gpt2ByteCharacters,
  GGML_TYPE,
  GGUF_ALIGNMENT,
  GGUF_BOS_TEXT,
  GGUF_EOS_TEXT,
  GGUF_FILE_TYPE,
  GGUF_MAGIC,
  GGUF_TOKEN_TYPE,
  GGUF_VERSION,
} from './gguf.ts';
export type { GgufDType, GgufMetadataEntry, GgufOptions, GgufTensorInfo, GgufValue, GgufVocabulary } from './gguf.ts';
export { runGgufExport } from './commands/export-gguf.ts';
export type { GgufExportOptions } from './commands/export-gguf.ts';
export { encodeAndreaBin, decodeAndreaBin, checkpointFromAndreaBin, parameterCount, ANDREA_HEADER_BYTES, ANDREA_MAX_I32 } from './andrea-bin.ts';
export type { AndreaBin, AndreaExportReport, AndreaImportConfig } from './andrea-bin.ts';
export { parseAndreaImportConfig, andreaImportConfigJson, ANDREA_IMPORT_FORMAT } from './import-config.ts';
export { VERIFY_SCHEMA_ID } from './commands/verify.ts';
export type { VerifyFileJson, VerifyForeignJson, VerifyRunJson, VerifySlotJson } from './commands/verify.ts';
export { INSPECT_FOREIGN_SCHEMA_ID } from './commands/inspect.ts';
export type { InspectForeignJson } from './commands/inspect.ts';
export { DIFF_SCHEMA_ID } from './commands/diff.ts';
export { SAMPLE_SCHEMA_ID } from './commands/sample.ts';
export { EVAL_SCHEMA_ID, REPORT_SCHEMA_ID } from './commands/eval.ts';
export { evaluationLines, runReportLines, slotMetricLine, debugQuote } from './evaluation-report.ts';
export { resumeReportLines } from './resume-report.ts';
export type { EvaluationProvenance } from './evaluation-report.ts';
export { STATUS_SCHEMA_ID } from './commands/run.ts';
export { trainerExitCode } from './trainer.ts';
export type { StatusJson } from './commands/run.ts';
export type { SampleJson } from './commands/sample.ts';
export {
  hfConfig,
  hfExportFiles,
  hfGenerationConfig,
  hfModelCard,
  hfTensors,
  hfTokenizerConfig,
  hfTokenizerJson,
  resolveExportSource,
  runHfExport,
  HF_BOS_TOKEN,
  HF_EOS_TOKEN,
  HF_EXPORT_FORMAT,
  HF_FILES,
} from './hf-export.ts';
export type { HfExportFile, HfExportOptions, HfExportSource, RunHfExportOptions } from './hf-export.ts';
