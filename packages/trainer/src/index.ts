/**
 * `@llmcp/trainer`: whole-job resumable training runs — run directory, job
 * state with digest and input identities, atomic directory publication with
 * fallback loading, cadence, signals, loss-log discipline, pivot, fork,
 * background persistence and a progress display.
 *
 * This entry holds what applications build on (the README's API table; the
 * trainer and inspector apps, `@llmcp/cli`, the reliability harness). The
 * loss-log records are also `@llmcp/trainer/loss-records` (browser-safe), the
 * provenance manifests' reader and lineage chain `@llmcp/trainer/provenance`
 * (browser-safe), the
 * terminal policy `@llmcp/trainer/terminal`, and the fault switches of the
 * negative-control tests `@llmcp/trainer/testing`.
 */
export { trainRun, resumeRun, planResume } from './run.ts';
export type { TrainingOptions, TrainRunOptions, ResumeRunOptions, PlanResumeOptions, RunResult, ResumePlan } from './run.ts';
export { pivotRun, forkRun } from './pivot.ts';
export type { PivotOptions, PivotResult, ForkOptions, ForkResult } from './pivot.ts';
export { runStatus, verifyRun, loadRunCheckpoint } from './status.ts';
export type { RunStatus, RunVerification, SlotVerification, LoadedRunCheckpoint, VerifyRunOptions } from './status.ts';
export { trainerConfigSchema, parseConfig, loadConfig, readConfigFile, readRecordedConfig, resolveConfigPaths, defaultThreads, defaultEvaluationBatches, VALIDATION_WINDOW_SHARE } from './config.ts';
export { loadSigningKey, loadTrustedKey, signingKeyFromPem, generateSigningKeyPair } from './signing-key.ts';
export type { SigningKey, GeneratedKeyPair } from './signing-key.ts';
export { encodeExportManifest, exportLineage, verifyManifestFile } from './export-manifest.ts';
export type { ExportManifestParts, ExportSource, ManifestFileVerification } from './export-manifest.ts';
export type { ProvenanceReport, ProvenanceProblem, ManifestVerdict } from './run-provenance.ts';
export { LINEAGE_DIR } from './lineage-store.ts';
export {
  MANIFEST_FILE,
  MANIFEST_SUFFIX,
  SHARD_SIZE,
  importTrustedKey,
  parseManifest,
  verifyManifestSignature,
} from './provenance.ts';
export type { Lineage, LineageParent, LineageVia, ParsedManifest, SignatureStatus, TrustedKey, KeyAlgorithm } from './provenance.ts';
export type { ChainLink, LinkStatus } from './lineage-chain.ts';
export type { TrainerConfig, DataSourceConfig, TokenizerConfig, ScheduleConfig, EngineConfig } from './config.ts';
export { diffConfig, isPolicyField } from './config-diff.ts';
export { describeStepBudgetChange } from './step-budget.ts';
export type { StepBudgetChange } from './step-budget.ts';
export { CONFIG_SCHEMA_FILE, CONFIG_SCHEMA_REF, trainerConfigJsonSchema, configKeyPaths, nearestConfigKey } from './config-schema.ts';
export { applyConfigOverrides, parseConfigAssignment } from './config-overrides.ts';
export type { ConfigAssignment } from './config-overrides.ts';
export {
  CH33_CONFIG_INPUT,
  ch33Config,
  CH34_TEST_DOCUMENTS,
  ch34Config,
  CH39_CONFIG_INPUT,
  ch39Config,
  SIZE_PRESETS,
  isSizePresetName,
  sizePresetConfigInput,
  SIZE_TEST_FRACTION,
} from './presets.ts';
export type { SizePresetName, SizePresetOptions, DataSourceConfigInput } from './presets.ts';
export { describeRunPlan } from './run-plan.ts';
export type { RunPlan } from './run-plan.ts';
export { planRun } from './dry-run.ts';
export type { DryRunPlan, PlanRunOptions } from './dry-run.ts';
export { evaluateFinal } from './final-evaluation.ts';
export type { FinalEvaluation, FinalEvaluationOptions, EvaluationDocument, SlotScore } from './final-evaluation.ts';
export { evaluateRun, evaluateCheckpointFile } from './run-evaluation.ts';
export type { RunEvaluation, CheckpointEvaluationOptions } from './run-evaluation.ts';
export { reportRun } from './run-report.ts';
export type { RunReport, RunReportOptions } from './run-report.ts';
export { sealJob, encodeJob, decodeJob } from './job.ts';
export type { Job, JobBody, JobFormat, JobStateRecord, InputIdentity, EvaluationRecord } from './job.ts';
export {
  RUN_FILES,
  NAMED_SLOTS,
  isSlotName,
  stepSlotName,
  stepOfSlot,
  checkpointsDir,
  verifySlot,
  chooseCheckpoint,
  applyRetention,
  loadBestCheckpoint,
  bestCheckpointSlot,
  newestCandidateJob,
} from './run-directory.ts';
export type { SlotName, VerifiedSlot, SlotManifest, SlotReport, CheckpointChoice, RetentionResult } from './run-directory.ts';
export { enclosingRunDirectory, isRunDirectory, RUN_DIRECTORY_MARKERS } from './run-layout.ts';
export { LossLog, parseLossLog, scanLossLog } from './loss-log.ts';
export type { LossLogPosition, ParsedLossLog, LossLogResumePlan, LossLogScan } from './loss-log.ts';
export { formatEvaluationRecord, parseLossLine } from './loss-records.ts';
export type { LossRecord, LossTiming, EvaluationLogRecord, LossLogLine } from './loss-records.ts';
export { readRunManifest } from './run-manifest.ts';
export type { RunManifest, RunEvent, ForkedState, EngineRecord } from './run-manifest.ts';
export { createProgressRenderer, formatClock, formatDuration, layoutStatusLine } from './progress.ts';
export type { ProgressRenderer, ProgressOptions, ProgressStream, StatusFields, StatusLayoutOptions, StatusRole } from './progress.ts';
export { colorEnabled, liveRedrawEnabled } from './terminal.ts';
export type { TerminalStream, TerminalEnv } from './terminal.ts';
export type { TrainerEvent, TrainerEventListener, CheckpointReason } from './events.ts';
export { runSampleAudit } from './sample-audit.ts';
export type { SampleAudit, SampleAuditSettings, AuditSample } from './sample-audit.ts';
export { prepareInputs, implementationIdentity } from './inputs.ts';
export type { PreparedInputs, EncodedPartitions } from './inputs.ts';
export { createEngine } from './llmcp-engine.ts';
export type { EngineStart } from './llmcp-engine.ts';
export type { TrainingEngine, EngineUpdate, EvaluationList, EngineCompute, EngineDescription } from './engine.ts';
export { ENGINE_PROTOCOL } from './torch-engine.ts';
export type { TorchEngineOptions, TorchEngineConfig } from './torch-engine.ts';
export { engineSettings, withEngine } from './engine-settings.ts';
export type { EngineFlags, EngineOverrides } from './engine-settings.ts';
export type { SaveMode, SaveThread } from './background-saver.ts';
export type { SavePriority } from './save-priority.ts';
export type { SaveResult } from './save.ts';
export { TrainerError, isTrainerError, TRAINER_ERROR_CODES } from './errors.ts';
export type { TrainerErrorCode, TrainerErrorContext } from './errors.ts';
