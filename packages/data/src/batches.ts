/**
 * Batches of windows (../../../docs/spec/training.md §3, ../../../docs/spec/tokenizer-and-data.md §4).
 */
import { DATA_ERROR_CODES, DataError } from './errors.ts';
import { requirePositiveInteger, type WindowRef } from './windows.ts';

/** A batch of w windows: inputs and targets of shape [w, T], row-major, row i = the i-th window. */
export interface Batch {
  /** Input ids, `rows × columns`. */
  readonly inputs: Uint32Array;
  /** Target ids (inputs shifted by one), `rows × columns`. */
  readonly targets: Uint32Array;
  /** Number of windows w. */
  readonly rows: number;
  /** Context length T. */
  readonly columns: number;
}

/**
 * Copies the windows' tokens into one batch, in the given (batch) order.
 *
 * @param documents - the encoded documents the windows index.
 * @param windows - the windows of this batch, in order.
 * @param contextLength - T.
 * @returns inputs and targets, row-major.
 * @throws DataError `DATA_INVALID_PARAMETER` for a non-positive T; `DATA_WINDOW_OUT_OF_RANGE` when
 *   a window does not fit its document or a token is not a u32 integer.
 * @example
 * ```ts
 * const docs = [[0, 41, 42, 43, 44, 1]];
 * gatherBatch(docs, causalWindows(docs, 3), 3).targets; // [41,42,43, 42,43,44, 43,44,1]
 * ```
 */
export function gatherBatch(documents: readonly ArrayLike<number>[], windows: readonly WindowRef[], contextLength: number): Batch {
  requirePositiveInteger(contextLength, 'contextLength');
  const rows = windows.length;
  const inputs = new Uint32Array(rows * contextLength);
  const targets = new Uint32Array(rows * contextLength);
  for (let r = 0; r < rows; r++) {
    const { documentIndex, start } = windows[r] as WindowRef;
    const doc = Number.isInteger(documentIndex) ? documents[documentIndex] : undefined;
    if (doc === undefined) {
      throw new DataError(DATA_ERROR_CODES.DATA_WINDOW_OUT_OF_RANGE, `window ${r} names document ${documentIndex}, but there are ${documents.length} documents`, { documentIndex });
    }
    if (!Number.isSafeInteger(start) || start < 0 || start + contextLength + 1 > doc.length) {
      throw new DataError(
        DATA_ERROR_CODES.DATA_WINDOW_OUT_OF_RANGE,
        `window ${r} (document ${documentIndex}, start ${start}) needs ${contextLength + 1} tokens from its start, but the document has ${doc.length}`,
        { documentIndex, position: start },
      );
    }
    const row = r * contextLength;
    for (let j = 0; j <= contextLength; j++) {
      const token = doc[start + j] as number;
      if (token >>> 0 !== token) {
        throw new DataError(DATA_ERROR_CODES.DATA_WINDOW_OUT_OF_RANGE, `token ${token} at position ${start + j} of document ${documentIndex} is not a u32 integer`, {
          documentIndex,
          position: start + j,
        });
      }
      if (j < contextLength) inputs[row + j] = token;
      if (j > 0) targets[row + j - 1] = token;
    }
  }
  return { inputs, targets, rows, columns: contextLength };
}

/**
 * Number of batches of `batchSize` over `count` items (the last may be smaller).
 * @param count - number of windows.
 * @param batchSize - positive.
 * @returns `ceil(count / batchSize)`.
 * @throws DataError `DATA_INVALID_PARAMETER` for a non-positive batch size.
 */
export function batchCount(count: number, batchSize: number): number {
  requirePositiveInteger(batchSize, 'batchSize');
  return Math.ceil(count / batchSize);
}

/**
 * Consecutive runs of `batchSize` windows, in order; the last run may be
 * smaller; nothing is dropped or padded. Evaluation passes go through all of
 * them in order.
 *
 * @param windows - the (sequential) window list.
 * @param batchSize - positive.
 * @returns the batches.
 * @throws DataError `DATA_INVALID_PARAMETER` for a non-positive batch size.
 * @example
 * ```ts
 * evaluationBatches([w0, w1, w2, w3, w4], 2); // [[w0, w1], [w2, w3], [w4]]
 * ```
 */
export function evaluationBatches<T>(windows: readonly T[], batchSize: number): T[][] {
  requirePositiveInteger(batchSize, 'batchSize');
  const out: T[][] = [];
  for (let i = 0; i < windows.length; i += batchSize) out.push(windows.slice(i, i + batchSize));
  return out;
}
