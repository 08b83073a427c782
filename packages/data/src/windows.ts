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

/**
 * Packing: the documents joined into one token stream, in order. Each keeps
 * its own tokens — a document encoded by a BPE tokenizer (`encodeDocument`)
 * keeps its BOS … EOS — so an end-of-document token stands between
 * neighbours, and {@link causalWindows} over `[stream]` cuts windows across
 * document boundaries: documents shorter than a window are trained on with
 * their neighbours (as nanoGPT, llm.c and Hugging Face's `group_texts` do)
 * instead of giving no window at all. A mode of its own, never the
 * reference's rule (../../../docs/spec/training.md §2 keeps windows inside
 * documents).
 *
 * @param documents - encoded documents, in order.
 * @returns their tokens, concatenated.
 * @throws DataError `DATA_WINDOW_OUT_OF_RANGE` when a token is not a u32 integer.
 * @example
 * ```ts
 * packDocuments([[0, 40, 1], [0, 41, 42, 1]]); // Uint32Array [0, 40, 1, 0, 41, 42, 1]
 * ```
 */
export function packDocuments(documents: readonly ArrayLike<number>[]): Uint32Array {
  let length = 0;
  for (const d of documents) length += d.length;
  const stream = new Uint32Array(length);
  let at = 0;
  documents.forEach((d, documentIndex) => {
    for (let i = 0; i < d.length; i++) {
      const token = d[i] as number;
      if (token >>> 0 !== token) {
        throw new DataError(DATA_ERROR_CODES.DATA_WINDOW_OUT_OF_RANGE, `token ${token} at position ${i} of document ${documentIndex} is not a u32 integer`, { documentIndex, position: i });
      }
      stream[at++] = token;
    }
  });
  return stream;
}

/** How much of a token list a window list reaches (see {@link windowCoverage}). */
export interface WindowCoverage {
  /** Tokens in all documents. */
  readonly tokens: number;
  /** Tokens inside at least one window (as an input or a target). */
  readonly coveredTokens: number;
  /** Windows. */
  readonly windows: number;
  /** Documents. */
  readonly documents: number;
  /** Documents that give no window (shorter than C + 1 tokens). */
  readonly documentsWithoutWindow: number;
  /** Tokens of the documents that give no window. */
  readonly tokensWithoutWindow: number;
}

/**
 * What the windows of {@link causalWindows} reach, counted without building
 * them: per document of L ≥ C + 1 tokens, w = (L − (C + 1)) div S + 1
 * windows covering ((w − 1)·S + C + 1) tokens when S ≤ C + 1 (no gaps), else
 * w·(C + 1); a shorter document gives none. `coveredTokens / tokens` is the
 * share of the text a run trains on.
 *
 * @param documents - encoded documents (or their lengths).
 * @param contextLength - C, positive.
 * @param stride - S, positive (default 1).
 * @returns the counts.
 * @throws DataError `DATA_INVALID_PARAMETER` for a non-positive C or S.
 * @example
 * ```ts
 * windowCoverage([[0, 41, 42, 1], [0, 1]], 2, 2); // tokens 6, coveredTokens 3, windows 1, documentsWithoutWindow 1
 * ```
 */
export function windowCoverage(documents: readonly (ArrayLike<number> | number)[], contextLength: number, stride = 1): WindowCoverage {
  requirePositiveInteger(contextLength, 'contextLength');
  requirePositiveInteger(stride, 'stride');
  let tokens = 0;
  let coveredTokens = 0;
  let windows = 0;
  let documentsWithoutWindow = 0;
  let tokensWithoutWindow = 0;
  for (const d of documents) {
    const length = typeof d === 'number' ? d : d.length;
    tokens += length;
    const w = windowCount(length, contextLength, stride);
    windows += w;
    if (w === 0) {
      documentsWithoutWindow += 1;
      tokensWithoutWindow += length;
    } else coveredTokens += stride <= contextLength + 1 ? (w - 1) * stride + contextLength + 1 : w * (contextLength + 1);
  }
  return { tokens, coveredTokens, windows, documents: documents.length, documentsWithoutWindow, tokensWithoutWindow };
}
