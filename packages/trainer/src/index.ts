/**
 * `@llmcp/trainer`: whole-job resumable training runs — run directory, job
 * state with digest and input identities, atomic directory publication with
 * fallback loading, cadence, signals, loss-log discipline, pivot, fork,
 * background persistence and a progress display.
 */
export { trainRun, resumeRun, planResume, initialSamplingState } from './run.ts';
export type { TrainingOptions, TrainRunOptions, ResumeRunOptions, ResumeFaults, RunResult, ResumePlan } from './run.ts';
export { pivotRun, forkRun } from './pivot.ts';
export type { PivotOptions, PivotResult, ForkOptions, ForkResult } from './pivot.ts';
export { runStatus, verifyRun, loadRunCheckpoint } from './status.ts';
export type { RunStatus, RunVerification, SlotVerification, LoadedRunCheckpoint } from './status.ts';
export {
  trainerConfigSchema,
  parseConfig,
  loadConfig,
  readConfigFile,
  resolveConfigPaths,
  diffConfig,
  isPolicyField,
  POLICY_FIELDS,
  LOCATION_FIELDS,
  checkpointEvery,
  isValidationStep,
  isCheckpointStep,
  learningRateAt,
  scheduleOf,
  defaultThreads,
  MAX_THREADS,
} from './config.ts';
export { describeStepBudgetChange, isStepBudgetChange, RESUME_CHANGEABLE_FIELDS } from './step-budget.ts';
export type { StepBudgetChange } from './step-budget.ts';
export type { TrainerConfig, DataSourceConfig, TokenizerConfig, ScheduleConfig } from './config.ts';
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
} from './presets.ts';
export type { SizePresetName, SizePresetOptions, DataSourceConfigInput } from './presets.ts';
export { evaluateFinal, FINAL_EVALUATION_VERSION } from './final-evaluation.ts';
export type { FinalEvaluation, FinalEvaluationOptions, EvaluationDocument, SlotScore } from './final-evaluation.ts';
export { evaluateRun, evaluateCheckpointFile, loadSelectedSlot, recordedInputs } from './run-evaluation.ts';
export type { RunEvaluation, CheckpointEvaluationOptions } from './run-evaluation.ts';
export { reportRun } from './run-report.ts';
export type { RunReport, RunReportOptions } from './run-report.ts';
export { JOB_FORMAT, LEGACY_JOB_FORMAT, sealJob, encodeJob, decodeJob } from './job.ts';
export type { Job, JobBody, InputIdentity, EvaluationRecord } from './job.ts';
export {
  RUN_FILES,
  NAMED_SLOTS,
  isSlotName,
  stepSlotName,
  stepOfSlot,
  checkpointsDir,
  verifySlot,
  verifyPairing,
  chooseCheckpoint,
  resumeCandidates,
  applyRetention,
  loadBestCheckpoint,
  bestCheckpointSlot,
  newestCandidateJob,
} from './run-directory.ts';
export type { SlotName, VerifiedSlot, SlotReport, CheckpointChoice, RetentionResult } from './run-directory.ts';
export { LossLog, formatLossRecord, parseLossLog, planLossLogResume, scanLossLog } from './loss-log.ts';
export type { LossRecord, LossTiming, LossLogPosition, ParsedLossLog, LossLogResumePlan, LossLogScan } from './loss-log.ts';
export { formatEvaluationRecord, parseLossLine } from './loss-records.ts';
export type { EvaluationLogRecord, LossLogLine } from './loss-records.ts';
export { RUN_MANIFEST_FORMAT, readRunManifest } from './run-manifest.ts';
export type { RunManifest, RunEvent } from './run-manifest.ts';
export { RunControl } from './signals.ts';
export type { StopReason } from './signals.ts';
export { createProgressRenderer, formatClock, formatDuration, layoutStatusLine } from './progress.ts';
export type { ProgressRenderer, ProgressOptions, ProgressStream, StatusFields, StatusLayoutOptions, StatusRole } from './progress.ts';
export { colorEnabled, liveRedrawEnabled } from './terminal.ts';
export type { TerminalStream, TerminalEnv } from './terminal.ts';
export type { TrainerEvent, TrainerEventListener, CheckpointReason } from './events.ts';
export { runSampleAudit } from './sample-audit.ts';
export type { SampleAudit, SampleAuditSettings, AuditSample } from './sample-audit.ts';
export { prepareInputs, diffInputs, implementationIdentity, TRAINER_NUMERICS_VERSION, CHECKPOINT_FORMAT_VERSION } from './inputs.ts';
export type { PreparedInputs, EncodedPartitions } from './inputs.ts';
export { createEngine, adamWConfigOf, decoderConfigOf } from './llmcp-engine.ts';
export type { EngineFaults } from './llmcp-engine.ts';
export type { TrainingEngine, EngineUpdate, EvaluationList } from './engine.ts';
export { CheckpointSaver } from './background-saver.ts';
export type { SaveMode } from './background-saver.ts';
export type { SaveRequest, SaveResult } from './save.ts';
export { TrainerError, isTrainerError, TRAINER_ERROR_CODES } from './errors.ts';
export type { TrainerErrorCode, TrainerErrorContext } from './errors.ts';
