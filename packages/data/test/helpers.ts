import { expect } from 'vitest';
import { isDataError, type DataError } from '../src/errors.ts';

/** Runs `fn`, expects it to throw a DataError, and returns it. */
export function dataErrorOf(fn: () => unknown): DataError {
  try {
    fn();
  } catch (e) {
    expect(isDataError(e), `expected a DataError, got ${String(e)}`).toBe(true);
    return e as DataError;
  }
  throw new Error('expected a DataError, but nothing was thrown');
}

/** Async variant of {@link dataErrorOf}. */
export async function dataErrorOfAsync(fn: () => Promise<unknown>): Promise<DataError> {
  try {
    await fn();
  } catch (e) {
    expect(isDataError(e), `expected a DataError, got ${String(e)}`).toBe(true);
    return e as DataError;
  }
  throw new Error('expected a DataError, but nothing was thrown');
}
