/**
 * Error helper for the unit tests: which `OPTIM_*` code a call throws.
 */
import { isOptimError } from '../../src/errors.ts';

/**
 * Runs `fn` and reports how it failed.
 * @returns the OptimError code, a `not an OptimError: …` text for any other throw, or undefined when it did not throw.
 */
export function code(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return isOptimError(e) ? e.code : `not an OptimError: ${String(e)}`;
  }
  return undefined;
}
