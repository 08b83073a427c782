/**
 * The sample audit written with each cadence checkpoint (`samples.json`): a few
 * generations from the checkpoint's own model and its own stored sampling RNG
 * state (../../../docs/spec/training.md §9, uncached generation), so anyone can regenerate them
 * from `state.llmcp` alone. The stream then continues from the state after the
 * audit.
 */
import { SplitMix64, u64Hex, type CheckpointState } from '@llmcp/format';
import { Decoder, generate, type SamplingMode } from '@llmcp/model';
import { tokenizerFromState } from '@llmcp/tokenizer';
import { TrainerError } from './errors.ts';
import type { TrainerConfig } from './config.ts';

/** What an audit generates. */
export interface SampleAuditSettings {
  /** Prompt text, encoded as content only (no BOS); empty = start from BOS. */
  readonly prompt: string;
  readonly count: number;
  readonly maxNewTokens: number;
  /** 0 = greedy (consumes no draws). */
  readonly temperature: number;
  /** `null` = the whole vocabulary. */
  readonly topK: number | null;
}

/** One generated sample. */
export interface AuditSample {
  readonly promptTokens: readonly number[];
  readonly tokens: readonly number[];
  /** Text of the new tokens (a final EOS dropped), or null when they are not valid UTF-8 on their own. */
  readonly text: string | null;
  readonly stopReason: string;
}

/** The content of `samples.json`. */
export interface SampleAudit {
  readonly format: 'llmcp-samples/1';
  readonly step: number;
  /** Sampling RNG state stored in the checkpoint (the audit's first draw comes from it). */
  readonly rngState: string;
  /** State after the audit: where the run's sampling stream continues. */
  readonly rngStateAfter: string;
  readonly settings: SampleAuditSettings;
  readonly samples: readonly AuditSample[];
}

/**
 * Runs a sample audit on a checkpoint state (its tokenizer, model and sampling RNG state).
 *
 * @param state - the checkpoint state.
 * @param settings - prompt, count, limits, mode.
 * @param step - the checkpoint's step (recorded).
 * @returns the audit.
 * @throws TrainerError `TRAINER_CONFIG_INVALID` when the prompt cannot be encoded or is empty for a tokenizer without BOS.
 */
export function runSampleAudit(state: CheckpointState, settings: SampleAuditSettings, step: number): SampleAudit {
  return sampleAuditOn(Decoder.fromCheckpoint(state), { state, settings, step });
}

/**
 * {@link runSampleAudit} on a model already built from the state (the report reuses its own).
 *
 * @param model - a decoder holding the state's parameters.
 * @param audit - the state, the settings and the step.
 * @returns the audit.
 * @throws TrainerError as {@link runSampleAudit}.
 */
export function sampleAuditOn(model: Decoder, audit: { readonly state: CheckpointState; readonly settings: SampleAuditSettings; readonly step: number }): SampleAudit {
  const { state, settings, step } = audit;
  const tokenizer = tokenizerFromState(state.tokenizer);
  const P = state.decoder.maxPositions;
  let prompt: number[];
  try {
    prompt = Array.from(tokenizer.encode(settings.prompt));
  } catch (cause) {
    throw new TrainerError('TRAINER_CONFIG_INVALID', `sampling.prompt cannot be encoded by the run's tokenizer: ${(cause as Error).message}`, {
      fields: ['sampling.prompt'],
      cause,
    });
  }
  if (prompt.length === 0) {
    if (tokenizer.bosId === null) {
      throw new TrainerError('TRAINER_CONFIG_INVALID', 'sampling.prompt is empty and the tokenizer has no BOS token to start from', { fields: ['sampling.prompt'] });
    }
    prompt = [tokenizer.bosId];
  }
  if (prompt.length > P) prompt = prompt.slice(prompt.length - P);
  const V = state.decoder.vocabularySize;
  const mode: SamplingMode =
    settings.temperature === 0 ? { kind: 'greedy' } : { kind: 'temperature', temperature: settings.temperature, topK: Math.min(settings.topK ?? V, V) };
  const rng = new SplitMix64(state.samplingRngState);
  const eos = tokenizer.eosId;
  const samples: AuditSample[] = [];
  for (let i = 0; i < settings.count; i += 1) {
    const out = generate(model, { prompt, mode, rng, maxNewTokens: settings.maxNewTokens, ...(eos === null ? {} : { endOfSequence: eos }) });
    const content = out.stopReason === 'end-of-sequence' ? out.tokens.slice(0, -1) : out.tokens;
    let text: string | null;
    try {
      text = content.includes(tokenizer.bosId ?? -1) ? null : tokenizer.decodeText(content);
    } catch {
      text = null;
    }
    samples.push({ promptTokens: prompt, tokens: out.tokens, text, stopReason: out.stopReason });
  }
  return {
    format: 'llmcp-samples/1',
    step,
    rngState: u64Hex(state.samplingRngState),
    rngStateAfter: u64Hex(rng.state),
    settings,
    samples,
  };
}

/**
 * The sample-audit settings of a config (its `sampling` block), or null when
 * it draws no samples (`sampling.count` 0).
 *
 * @param config - the run config.
 * @returns the settings, or null.
 */
export function auditSettingsOf(config: TrainerConfig): SampleAuditSettings | null {
  const s = config.sampling;
  if (s.count === 0) return null;
  return { prompt: s.prompt, count: s.count, maxNewTokens: s.maxNewTokens, temperature: s.temperature, topK: s.topK };
}
