import { u64Hex } from '@llmcp/format';
import { describe, expect, it } from 'vitest';
import { canonicalDigest } from './internal/canonical-json.ts';
import { isTrainerError } from './errors.ts';
import { decodeJob, encodeJob, JOB_FORMAT, JOB_FORMAT_V2, JOB_FORMAT_V3, sealJob, type JobBody } from './job.ts';
import { parseConfig, type TrainerConfig } from './config.ts';
import { ch33Config } from './presets.ts';

const sha = (c: string): string => `sha256:${c.repeat(64)}`;

function sampleJobBody(): JobBody {
  const config = ch33Config();
  return {
    format: 'llmcp-job/1',
    step: 3,
    phase: { validated: true, audited: true },
    config,
    configDigest: canonicalDigest(config),
    inputs: {
      corpus: { sha256: sha('a'), documents: 4 },
      split: { sha256: sha('b'), train: 2, validation: 2, test: 0 },
      tokenizer: { identity: sha('c'), vocabularySize: 5 },
      implementation: { id: 'trainer/1+math/1+LLMCP35/1', math: 'math/1', format: 'LLMCP35/1', trainer: 'trainer/1' },
    },
    data: { version: 1, order: [3, 1, 2, 0], cursor: 3, rngState: '0x0000000000000021' },
    schedule: { step: 3, nextLearningRate: 0.025 },
    evaluations: [{ step: 2, validationLoss: 1.6963097905270819, trainingLoss: 1.5620261708206766 }],
    best: { step: 2, validationLoss: 1.6963097905270819 },
    sampling: { checkpointState: u64Hex(0x9e3779b97f4a7c38n), nextState: u64Hex(0x9e3779b97f4a7c38n), lastAuditStep: null },
    lossLog: { records: 3, bytes: 300, sha256: sha('d') },
    state: { bytes: 6330, sha256: sha('e'), checksum: 'fnv1a64:2b8b6097eaed6a91' },
    nextBatch: 'fnv1a64:0123456789abcdef',
    run: { id: 'run-1', pivots: 0 },
  };
}

function refusal(bytes: Uint8Array): string {
  try {
    decodeJob(bytes);
  } catch (e) {
    if (isTrainerError(e) && e.code === 'TRAINER_JOB_INVALID') return e.message;
    throw e;
  }
  throw new Error('expected a refusal');
}

describe('encodeJob / decodeJob', () => {
  it('round-trips a sealed job exactly, with canonical bytes', () => {
    const job = sealJob(sampleJobBody());
    const bytes = encodeJob(job);
    const back = decodeJob(bytes);
    expect(back).toEqual(job);
    expect(encodeJob(back)).toEqual(bytes);
    expect(new TextDecoder().decode(bytes).endsWith('}\n')).toBe(true);
  });

  it('refuses any changed value by its SHA-256 digest', () => {
    const text = new TextDecoder().decode(encodeJob(sealJob(sampleJobBody())));
    const tampered = text.replace('"cursor": 3', '"cursor": 2');
    expect(tampered).not.toBe(text);
    expect(refusal(new TextEncoder().encode(tampered))).toMatch(/failed its SHA-256 digest check: stored sha256:[0-9a-f]{64}, computed sha256:[0-9a-f]{64}/);
  });

  it('refuses truncated bytes, non-objects and schema violations naming the field', () => {
    const bytes = encodeJob(sealJob(sampleJobBody()));
    expect(refusal(bytes.subarray(0, bytes.length / 2))).toMatch(/not valid UTF-8 JSON/);
    expect(refusal(new TextEncoder().encode('null'))).toMatch(/job schema/);
    const body = { ...sampleJobBody(), step: -1 };
    expect(refusal(encodeJob(sealJob(body as JobBody)))).toMatch(/at step/);
    const extra = { ...sampleJobBody(), surprise: 1 };
    expect(refusal(encodeJob(sealJob(extra as JobBody)))).toMatch(/job schema/);
  });

  it('reads llmcp-job/4 and /3 without a state SHA-256 and the older formats only with one', () => {
    const { sha256: _dropped, ...pairing } = sampleJobBody().state;
    for (const format of [JOB_FORMAT, JOB_FORMAT_V3] as const) {
      const job = sealJob({ ...sampleJobBody(), format, state: pairing });
      expect(decodeJob(encodeJob(job))).toEqual(job);
      expect(Object.keys(decodeJob(encodeJob(job)).state).sort()).toEqual(['bytes', 'checksum']);
      expect(refusal(encodeJob(sealJob({ ...sampleJobBody(), format })))).toMatch(new RegExp(`at state\\.sha256: ${format} records no state\\.sha256`));
    }
    for (const format of [JOB_FORMAT_V2, 'llmcp-job/1'] as const) {
      const old = sealJob({ ...sampleJobBody(), format });
      expect(decodeJob(encodeJob(old)).state.sha256).toBe(sha('e'));
      expect(refusal(encodeJob(sealJob({ ...sampleJobBody(), format, state: pairing })))).toMatch(/at state\.sha256: llmcp-job\/[12] requires state\.sha256/);
    }
    expect(refusal(encodeJob(sealJob({ ...sampleJobBody(), format: 'llmcp-job/5' } as unknown as JobBody)))).toMatch(/at format/);
  });

  it('reads a config recorded before data.windows existed as windows inside documents, its digest over the config as recorded', () => {
    const { sha256: _dropped, ...pairing } = sampleJobBody().state;
    const text = parseConfig({ data: { source: { kind: 'text', path: '/c.txt' } } });
    expect(text.data.windows).toBe('packed');
    const { windows: _windows, ...olderData } = text.data;
    const recorded = { ...text, data: olderData };
    const job = sealJob({ ...sampleJobBody(), format: JOB_FORMAT_V3, state: pairing, config: recorded as unknown as TrainerConfig, configDigest: canonicalDigest(recorded) });
    const read = decodeJob(encodeJob(job));
    expect(read.config.data.windows).toBe('documents');
    expect(read.config.data.stride).toBe(text.data.stride);
    expect(read.configDigest).toBe(canonicalDigest(recorded));
  });

  it('refuses a config whose digest does not match', () => {
    const body = { ...sampleJobBody(), configDigest: sha('f') };
    expect(refusal(encodeJob(sealJob(body)))).toMatch(/configDigest does not match/);
  });
});
