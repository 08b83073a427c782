import { describe, expect, it } from 'vitest';
import { cos } from '@llmcp/model';
import { code } from '../test/helpers/errors.ts';
import { constantSchedule, createSchedule, listSchedule, warmupCosineSchedule } from './schedule.ts';

describe('listSchedule', () => {
  it('gives step k the (k−1)-th rate of the fixture list and refuses steps past it', () => {
    const s = listSchedule([0.04, 0.04, 0.025, 0.025, 0.015, 0.015, 0.008, 0.008]);
    expect([1, 2, 3, 4, 5, 6, 7, 8].map(s)).toEqual([0.04, 0.04, 0.025, 0.025, 0.015, 0.015, 0.008, 0.008]);
    expect(code(() => s(9))).toBe('OPTIM_SCHEDULE_STEP');
    expect(code(() => s(0))).toBe('OPTIM_SCHEDULE_STEP');
    expect(code(() => s(1.5))).toBe('OPTIM_SCHEDULE_STEP');
    expect(code(() => listSchedule([]))).toBe('OPTIM_INVALID_SCHEDULE');
    expect(code(() => listSchedule([0.1, -1]))).toBe('OPTIM_INVALID_SCHEDULE');
  });
});

describe('constantSchedule', () => {
  it('returns the rate at every step', () => {
    expect([1, 10, 1e9].map(constantSchedule(0.003))).toEqual([0.003, 0.003, 0.003]);
    expect(code(() => constantSchedule(0))).toBe('OPTIM_INVALID_SCHEDULE');
  });
});

describe('warmupCosineSchedule', () => {
  const s = warmupCosineSchedule({ peak: 0.01, warmupSteps: 4, totalSteps: 12, floor: 0.001 });

  it('warms up linearly, decays along a cosine, then stays at the floor', () => {
    expect(s(1)).toBe((0.01 * 1) / 4);
    expect(s(4)).toBe(0.01);
    expect(s(8)).toBe(0.001 + (0.01 - 0.001) * (0.5 * (1 + cos(Math.PI * 0.5))));
    expect(s(12)).toBe(0.001);
    expect(s(1000)).toBe(0.001);
    for (let k = 5; k < 12; k++) expect(s(k + 1)).toBeLessThan(s(k));
  });

  it('is a pure function of the step (a resumed run needs only the step)', () => {
    const again = warmupCosineSchedule({ peak: 0.01, warmupSteps: 4, totalSteps: 12, floor: 0.001 });
    for (const k of [7, 3, 11, 7]) expect(again(k)).toBe(s(k));
  });

  it('validates its definition', () => {
    expect(code(() => warmupCosineSchedule({ peak: 0.01, warmupSteps: 5, totalSteps: 5 }))).toBe('OPTIM_INVALID_SCHEDULE');
    expect(code(() => warmupCosineSchedule({ peak: 0.01, warmupSteps: -1, totalSteps: 5 }))).toBe('OPTIM_INVALID_SCHEDULE');
    expect(code(() => warmupCosineSchedule({ peak: 0.01, warmupSteps: 0, totalSteps: 5, floor: 0 }))).toBe('OPTIM_INVALID_SCHEDULE');
    expect(code(() => warmupCosineSchedule({ peak: 0.01, warmupSteps: 0, totalSteps: 5, floor: 0.02 }))).toBe('OPTIM_INVALID_SCHEDULE');
    expect(warmupCosineSchedule({ peak: 0.01, warmupSteps: 0, totalSteps: 5 })(100)).toBe(0.001);
  });
});

describe('createSchedule', () => {
  it('builds each kind from its JSON definition', () => {
    expect(createSchedule({ kind: 'list', rates: [0.5] })(1)).toBe(0.5);
    expect(createSchedule({ kind: 'constant', rate: 0.25 })(3)).toBe(0.25);
    expect(createSchedule({ kind: 'warmup-cosine', peak: 1, warmupSteps: 2, totalSteps: 4, floor: 0.5 })(1)).toBe(0.5);
    expect(code(() => createSchedule({ kind: 'step' } as never))).toBe('OPTIM_INVALID_SCHEDULE');
  });
});
