/**
 * Valid checkpoints and sealed jobs without a model: for testing the run
 * directory (publication, fallback, retention) in isolation.
 */
import { decodeCheckpoint, encodeCheckpoint, expectedParameterShapes, u64Hex, type CheckpointState, type DecoderConfig } from '@llmcp/format';
import { LiteralTokenizer } from '@llmcp/tokenizer';
import { canonicalDigest, sha256Hex } from '../../src/internal/canonical-json.ts';
import { encodeJob, JOB_FORMAT, JOB_FORMAT_V2, sealJob, type Job, type JobStateRecord } from '../../src/job.ts';
import { ch33Config } from '../../src/presets.ts';

const DECODER: DecoderConfig = { vocabularySize: 5, modelWidth: 4, heads: 2, feedForwardWidth: 4, layers: 1, maxPositions: 2, ropeBase: 10000, rmsEpsilon: 1e-6 };
const TOKENIZER = LiteralTokenizer.fromPieces(['0', '1', '2', '3', '4']);

/**
 * A valid step-`step` checkpoint whose values depend on `step`.
 *
 * @param step - the step.
 * @param decoder - sizes (default: a 5-token toy; the vocabulary must stay 5, the literal tokenizer's).
 */
export function fakeState(step: number, decoder: DecoderConfig = DECODER): CheckpointState {
  const parameters = expectedParameterShapes(decoder).map(({ name, shape }) => {
    const n = shape.reduce((a, b) => a * b, 1);
    const data = new Float64Array(n);
    for (let i = 0; i < n; i += 1) data[i] = (i % 1000) * 0.01 + step;
    return { name, shape, data };
  });
  const moments =
    step === 0
      ? []
      : parameters.map((p) => ({ name: p.name, shape: p.shape, first: p.data.map((x) => x / 10), second: p.data.map((x) => x * x) }));
  return {
    tokenizer: TOKENIZER.toState(),
    decoder,
    parameters,
    optimizer: {
      config: { learningRate: 0.04, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01 },
      groups: null,
      step: BigInt(step),
      beta1Power: step === 0 ? 1 : 0.9 ** step,
      beta2Power: step === 0 ? 1 : 0.999 ** step,
      moments,
    },
    selectedStep: BigInt(step),
    samplingRngState: 0x9e3779b97f4a7c38n,
  };
}

/** Encoded state and sealed job bytes for step `step` (job format `llmcp-job/3`: size and LLMCP35 checksum). */
export function fakeCheckpoint(step: number): { stateBytes: Uint8Array; jobBytes: Uint8Array; job: Job } {
  const stateBytes = encodeCheckpoint(fakeState(step));
  const job = fakeJob(step, { bytes: stateBytes.length, checksum: decodeCheckpoint(stateBytes).layout.checksumLabel });
  return { stateBytes, jobBytes: encodeJob(job), job };
}

/**
 * As {@link fakeCheckpoint}, with the job in the shape the previous trainer
 * wrote (`llmcp-job/2`: `state` also records the SHA-256 of the state file).
 */
export function fakeCheckpointV2(step: number): { stateBytes: Uint8Array; jobBytes: Uint8Array; job: Job } {
  const stateBytes = encodeCheckpoint(fakeState(step));
  const job = fakeJob(step, { bytes: stateBytes.length, sha256: `sha256:${sha256Hex(stateBytes)}`, checksum: decodeCheckpoint(stateBytes).layout.checksumLabel });
  return { stateBytes, jobBytes: encodeJob(job), job };
}

/**
 * The sealed job that pairs with {@link fakeState}'s state of `step`, given the state file's facts.
 *
 * @param step - the step.
 * @param state - size and LLMCP35 checksum label of the state file; with `sha256`, the job is of format `llmcp-job/2`, else `llmcp-job/3`.
 * @returns the job.
 */
export function fakeJob(step: number, state: JobStateRecord): Job {
  const config = ch33Config();
  return sealJob({
    format: state.sha256 === undefined ? JOB_FORMAT : JOB_FORMAT_V2,
    step,
    phase: { validated: true, audited: true },
    config,
    configDigest: canonicalDigest(config),
    inputs: {
      corpus: { sha256: `sha256:${'a'.repeat(64)}`, documents: 4 },
      split: { sha256: `sha256:${'b'.repeat(64)}`, train: 2, validation: 2, test: 0 },
      tokenizer: { identity: TOKENIZER.identity(), vocabularySize: 5 },
      implementation: { id: 'test', math: 'test', format: 'LLMCP35/1', trainer: 'test' },
    },
    data: null,
    schedule: { step, nextLearningRate: null },
    evaluations: [],
    best: null,
    sampling: { checkpointState: u64Hex(0x9e3779b97f4a7c38n), nextState: u64Hex(0x9e3779b97f4a7c38n), lastAuditStep: null },
    lossLog: { records: step, bytes: 0, sha256: `sha256:${sha256Hex(new Uint8Array(0))}` },
    state,
    nextBatch: null,
    run: { id: 'test-run', pivots: 0 },
  });
}

