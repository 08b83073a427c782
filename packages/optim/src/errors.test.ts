import { describe, expect, it } from 'vitest';
import { isOptimError, OPTIM_ERROR_CODES, OptimError } from './errors.ts';

describe('isOptimError', () => {
  it('recognizes optim errors by name and code, also across package copies', () => {
    const e = new OptimError('OPTIM_NON_FINITE_GRADIENT', 'x', { tensorName: 'final_norm.gain', index: 1, step: 3 });
    expect(isOptimError(e)).toBe(true);
    expect([e.tensorName, e.index, e.step]).toEqual(['final_norm.gain', 1, 3]);
    expect(isOptimError({ name: 'OptimError', code: 'OPTIM_INVALID_STATE' })).toBe(true);
    expect(isOptimError({ name: 'OptimError', code: 'MODEL_CLOSED' })).toBe(false);
    expect(isOptimError(undefined)).toBe(false);
  });

  it('has package-prefixed codes equal to their keys', () => {
    for (const [k, v] of Object.entries(OPTIM_ERROR_CODES)) {
      expect(v).toBe(k);
      expect(k.startsWith('OPTIM_')).toBe(true);
    }
  });
});
