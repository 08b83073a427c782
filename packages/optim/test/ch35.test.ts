import { checksumLabel, decodeCheckpoint, SplitMix64, type CheckpointState } from '@llmcp/format';
import { Decoder, logitsFingerprint } from '@llmcp/model';
import { describe, expect, it } from 'vitest';
import { AdamW } from '../src/index.ts';
import { goldenCheckpoint } from '../../../tools/fixtures.ts';
import { firstMismatch, fixture } from './helpers/bits.ts';

interface NamedBits {
  name: string;
  bits: string[];
}
interface Replay {
  inputs: number[];
  targets: number[];
  learning_rate: { bits: string };
  logits_before: { bits: string[] };
  logits_before_fingerprint: string;
  loss: { bits: string };
  gradients: NamedBits[];
  parameters_after: NamedBits[];
  optimizer_after: {
    step_count: number;
    beta1_power: { bits: string };
    beta2_power: { bits: string };
    moments: { name: string; first_moment_bits: string[]; second_moment_bits: string[] }[];
  };
  logits_after: { bits: string[] };
  logits_after_fingerprint: string;
}

const replay = fixture<{ ch35_component_replay: Replay }>('ch33-trace.json').ch35_component_replay;
const golden = (): CheckpointState => decodeCheckpoint(goldenCheckpoint());

function tensors(label: string, flat: Float64Array, expected: NamedBits[]): string | null {
  let off = 0;
  for (const t of expected) {
    const m = firstMismatch(`${label} ${t.name}`, flat.subarray(off, off + t.bits.length), t.bits);
    if (m !== null) return m;
    off += t.bits.length;
  }
  return null;
}

/** Loads the golden file, applies one unclipped update, returns the logits fingerprints and the objects. */
function replayUpdate(inputs: number[], targets: number[], learningRate: number) {
  const state = golden();
  const model = Decoder.fromCheckpoint(state);
  const optimizer = AdamW.fromAdamWState(model, state.optimizer);
  const before = model.logits([0, 1]);
  const loss = model.trainStep({ inputs, targets, rows: 1, columns: inputs.length });
  const gradients = model.gradients.slice();
  optimizer.step({ learningRate });
  model.zeroGradients();
  const after = model.logits([0, 1]);
  return { state, model, optimizer, before, after, loss, gradients };
}

describe('ch35 single-update replay from the golden checkpoint (training.md §8)', () => {
  const r = replayUpdate([0, 1], [1, 2], 0.006);

  it('fingerprints the logits before the update as fnv1a64:6029064fe7cd162d', () => {
    expect(checksumLabel(logitsFingerprint(r.before))).toBe('fnv1a64:6029064fe7cd162d');
    expect(replay.logits_before_fingerprint).toBe('fnv1a64:6029064fe7cd162d');
    expect(firstMismatch('logits before', r.before, replay.logits_before.bits)).toBeNull();
  });

  it('reproduces the replay loss, gradients, parameters and AdamW state (step 9) bit for bit', () => {
    expect(firstMismatch('loss', [r.loss], [replay.loss.bits])).toBeNull();
    expect(tensors('gradient', r.gradients, replay.gradients)).toBeNull();
    expect(tensors('parameter', r.model.parameters, replay.parameters_after)).toBeNull();
    const o = replay.optimizer_after;
    expect(r.optimizer.stepCount).toBe(o.step_count);
    expect(firstMismatch('beta powers', [r.optimizer.beta1Power, r.optimizer.beta2Power], [o.beta1_power.bits, o.beta2_power.bits])).toBeNull();
    let off = 0;
    for (const m of o.moments) {
      const n = m.first_moment_bits.length;
      expect(firstMismatch(`first ${m.name}`, r.optimizer.first.subarray(off, off + n), m.first_moment_bits)).toBeNull();
      expect(firstMismatch(`second ${m.name}`, r.optimizer.second.subarray(off, off + n), m.second_moment_bits)).toBeNull();
      off += n;
    }
    expect(r.model.gradients.every((g) => Object.is(g, 0))).toBe(true);
  });

  it('fingerprints the logits after the update as fnv1a64:0b875a0c9f380d8f', () => {
    expect(checksumLabel(logitsFingerprint(r.after))).toBe('fnv1a64:0b875a0c9f380d8f');
    expect(firstMismatch('logits after', r.after, replay.logits_after.bits)).toBeNull();
  });

  it.each([
    ['another target batch', [0, 1], [1, 3], 0.006],
    ['another input batch', [1, 0], [1, 2], 0.006],
    ['another learning rate', [0, 1], [1, 2], 0.0061],
  ] as const)('diverges with %s', (_label, inputs, targets, lr) => {
    const other = replayUpdate([...inputs], [...targets], lr);
    expect(checksumLabel(logitsFingerprint(other.before))).toBe('fnv1a64:6029064fe7cd162d');
    expect(checksumLabel(logitsFingerprint(other.after))).not.toBe('fnv1a64:0b875a0c9f380d8f');
  });

  it('continues the stored sampling stream with the draw 0x9a8c505971939232', () => {
    const rng = new SplitMix64(r.state.samplingRngState);
    expect(r.state.samplingRngState).toBe(0x9e3779b97f4a7c38n);
    expect(rng.nextU64()).toBe(0x9a8c505971939232n);
  });
});
