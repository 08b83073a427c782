import { describe, expect, it } from 'vitest';
import { TrainerError, toTrainerError } from './errors.ts';

describe('toTrainerError', () => {
  it('rethrows programming errors as they are instead of calling them I/O', () => {
    for (const bug of [new TypeError('x is not a function'), new RangeError('bad length'), new ReferenceError('y'), new SyntaxError('z')]) {
      expect(() => toTrainerError(bug)).toThrow(bug);
    }
  });

  it('maps file-system, other packages\' I/O, non-finite and input errors to their codes, keeping the cause', () => {
    const enoent = Object.assign(new Error("ENOENT: no such file, open 'x'"), { code: 'ENOENT', path: 'x' });
    expect(toTrainerError(enoent)).toMatchObject({ code: 'TRAINER_IO', path: 'x', cause: enoent });
    expect(toTrainerError(Object.assign(new Error('disk full'), { code: 'FORMAT_IO' })).code).toBe('TRAINER_IO');
    expect(toTrainerError(Object.assign(new Error('loss NaN'), { code: 'MODEL_NON_FINITE' })).code).toBe('TRAINER_NON_FINITE');
    const input = Object.assign(new Error('bad corpus'), { name: 'DataError', code: 'DATA_CORPUS_INVALID' });
    expect(toTrainerError(input)).toMatchObject({ code: 'TRAINER_INPUT_INVALID', message: 'DataError DATA_CORPUS_INVALID: bad corpus' });
    const own = new TrainerError('TRAINER_RUN_LOCKED', 'locked');
    expect(toTrainerError(own)).toBe(own);
  });
});
