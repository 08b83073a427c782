import { describe, expect, it } from 'vitest';
import { isModelError, MODEL_ERROR_CODES, ModelError } from './errors.ts';

describe('isModelError', () => {
  it('recognizes model errors by name and code, also across package copies', () => {
    const e = new ModelError('MODEL_NON_FINITE', 'x', { tensorName: 'final_norm.gain', index: 2 });
    expect(isModelError(e)).toBe(true);
    expect(e.tensorName).toBe('final_norm.gain');
    expect(isModelError({ name: 'ModelError', code: 'MODEL_NON_FINITE' })).toBe(true);
    expect(isModelError({ name: 'ModelError', code: 'FORMAT_TRUNCATED' })).toBe(false);
    expect(isModelError(new Error('x'))).toBe(false);
    expect(isModelError(null)).toBe(false);
  });

  it('has package-prefixed codes equal to their keys', () => {
    for (const [k, v] of Object.entries(MODEL_ERROR_CODES)) {
      expect(v).toBe(k);
      expect(k.startsWith('MODEL_')).toBe(true);
    }
  });
});
