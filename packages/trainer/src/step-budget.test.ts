import { describe, expect, it } from 'vitest';
import { parseConfig } from './config.ts';
import { isStepBudgetChange } from './config-diff.ts';
import { describeStepBudgetChange } from './step-budget.ts';

const base = { data: { source: { kind: 'text', path: 'stories.txt' } }, optimizer: { learningRate: 0.01 }, threads: 1 };
const config = (patch: Record<string, unknown>) => parseConfig({ ...base, ...patch });

describe('isStepBudgetChange', () => {
  it('is true only when the budget is the sole difference', () => {
    expect(isStepBudgetChange(['steps'])).toBe(true);
    expect(isStepBudgetChange([])).toBe(false);
    expect(isStepBudgetChange(['optimizer.clipNorm', 'steps'])).toBe(false);
  });
});

describe('describeStepBudgetChange', () => {
  it('says how a warmup-cosine schedule over the budget continues, with the rates of the next and the last update', () => {
    const before = config({ steps: 60, schedule: { kind: 'warmup-cosine', warmupSteps: 6, floor: 0.001 } });
    const after = config({ steps: 90, schedule: { kind: 'warmup-cosine', warmupSteps: 6, floor: 0.001 } });
    expect(describeStepBudgetChange(before, after, 60)).toBe(
      'extending from 60 to 90 steps; the warmup-cosine schedule now spans 90 steps instead of 60: it decays by cosine from the new position, so update 61 uses learning rate 0.00339729 (update 60 used 0.001), reaching the floor 0.001 at step 90',
    );
    expect(describeStepBudgetChange(before, after, 3)).toMatch(/warm-up continues to step 6, then it decays/);
  });

  it('says when the schedule does not depend on the budget', () => {
    const fixed = { kind: 'warmup-cosine', warmupSteps: 6, floor: 0.001, totalSteps: 60 };
    expect(describeStepBudgetChange(config({ steps: 60, schedule: fixed }), config({ steps: 90, schedule: fixed }), 60)).toBe(
      'extending from 60 to 90 steps; the warmup-cosine schedule is unchanged (it spans totalSteps 60): update 61 uses learning rate 0.001 (update 60 used 0.001), the floor 0.001 from step 60 on',
    );
    expect(describeStepBudgetChange(config({ steps: 60, schedule: { kind: 'constant' } }), config({ steps: 40, schedule: { kind: 'constant' } }), 30)).toBe(
      'shortening from 60 to 40 steps; the schedule is constant: updates 31 to 40 use learning rate 0.01',
    );
  });
});
