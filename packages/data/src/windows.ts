/**
 * Causal windows over encoded documents (../../../docs/spec/training.md §2,
 * ../../../docs/spec/tokenizer-and-data.md §4).
 */
import { DATA_ERROR_CODES, DataError } from './errors.ts';

/** One window: `contextLength` inputs from `start`, targets from `start + 1`, inside one document. */
export interface WindowRef {
  /** Index of the document in the list given to {@link causalWindows}. */
  readonly documentIndex: number;
  /** First input position. */
  readonly start: number;
}

/**
 * Checks that a window/batch parameter is a positive integer.
 * @param value - the value.
 * @param field - its name for the error.
 * @throws DataError `DATA_INVALID_PARAMETER`.
 */
export function requirePositiveInteger(value: number, field: string): void {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new DataError(DATA_ERROR_CODES.DATA_INVALID_PARAMETER, `${field} must be positive (a positive integer), found ${value}`, { field });
  }
}

/**
 * How many windows a document of `length` tokens gives: `(L − (C + 1)) div S + 1`,
 * or 0 when `L < C + 1`.
 *
 * @param length - tokens in the document (BOS/EOS included).
 * @param contextLength - C, positive.
 * @param stride - S, positive (default 1).
 * @returns the window count.
 * @throws DataError `DATA_INVALID_PARAMETER` for a non-positive C or S.
 */
export function windowCount(length: number, contextLength: number, stride = 1): number {
  requirePositiveInteger(contextLength, 'contextLength');
  requirePositiveInteger(stride, 'stride');
  if (length < contextLength + 1) return 0;
  return Math.floor((length - contextLength - 1) / stride) + 1;
}

/**
 * All causal windows: document 0's windows by increasing start, then document
 * 1's, …. Starts are 0, S, 2S, … while `start + C + 1 ≤ length`; an
 * incomplete tail is dropped, and no window crosses a document boundary.
 *
 * @param documents - encoded documents (each its own token list).
 * @param contextLength - C, positive.
 * @param stride - S, positive (default 1).
 * @returns the window list.
 * @throws DataError `DATA_INVALID_PARAMETER` for a non-positive C or S.
 * @example
 * ```ts
 * causalWindows([[0, 41, 42, 43, 44, 1]], 3); // starts 0, 1, 2 of document 0
 * ```
 */
export function causalWindows(documents: readonly ArrayLike<number>[], contextLength: number, stride = 1): WindowRef[] {
  requirePositiveInteger(contextLength, 'contextLength');
  requirePositiveInteger(stride, 'stride');
  const windows: WindowRef[] = [];
  for (let d = 0; d < documents.length; d++) {
    const length = (documents[d] as ArrayLike<number>).length;
    for (let start = 0; start + contextLength + 1 <= length; start += stride) windows.push({ documentIndex: d, start });
  }
  return windows;
}
