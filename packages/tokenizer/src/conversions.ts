/**
 * Conversions between tokenizers, `@llmcp/format`'s `TokenizerState`, and the
 * stable JSON form.
 */
import type { TokenizerState } from '@llmcp/format';
import { BpeTokenizer } from './bpe-tokenizer.ts';
import { TOKENIZER_ERROR_CODES, TokenizerError } from './errors.ts';
import { LiteralTokenizer } from './literal-tokenizer.ts';

/** A tokenizer of either kind. */
export type AnyTokenizer = LiteralTokenizer | BpeTokenizer;

/**
 * Builds the tokenizer a checkpoint describes, validating it (literal: non-empty
 * distinct pieces; BPE: ../../../docs/spec/tokenizer-and-data.md §3.2).
 *
 * @param state - `checkpoint.tokenizer` from `@llmcp/format`.
 * @returns a `LiteralTokenizer` or a `BpeTokenizer`.
 * @throws TokenizerError for an invalid piece list or merge table.
 * @example
 * ```ts
 * const tok = tokenizerFromState({ kind: 'bpe', pairs: [[32, 208]] });
 * tok.vocabularySize; // 259
 * ```
 */
export function tokenizerFromState(state: TokenizerState): AnyTokenizer {
  if (state.kind === 'literal') return LiteralTokenizer.fromPieces(state.pieces);
  if (state.kind === 'bpe') return BpeTokenizer.fromPairs(state.pairs);
  throw new TypeError(`unknown tokenizer kind ${JSON.stringify((state as { kind?: unknown }).kind)}`);
}

function invalid(field: string, expected: string, found: unknown): TokenizerError {
  let shown: string;
  try {
    shown = JSON.stringify(found) ?? String(found);
  } catch {
    shown = String(found);
  }
  if (shown.length > 60) shown = `${shown.slice(0, 57)}...`;
  return new TokenizerError(TOKENIZER_ERROR_CODES.TOKENIZER_INVALID_JSON, `invalid tokenizer JSON at ${field}: expected ${expected}, found ${shown}`, { field });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkMembers(value: Record<string, unknown>, allowed: readonly string[]): void {
  for (const key of allowed) if (!Object.hasOwn(value, key)) throw invalid(key, 'this member to be present', undefined);
  for (const key of Object.keys(value)) if (!allowed.includes(key)) throw invalid(key, `no member other than ${allowed.join(', ')}`, key);
}

const HEX_PIECE = /^(?:[0-9a-f]{2})+$/;

function hexToBytes(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/**
 * Reads the stable JSON form (as produced by `toJSON()`), strictly: exact
 * members, `format: 'llmcp-tokenizer'`, `version: 1`, BPE `layout: 1` and
 * u32 integer pairs, literal pieces as non-empty lowercase hex.
 *
 * @param input - the JSON text, or an already parsed value.
 * @returns the tokenizer (validated like {@link tokenizerFromState}).
 * @throws TokenizerError `TOKENIZER_INVALID_JSON` (with `field`), or a validation error of the tokenizer.
 * @example
 * ```ts
 * const tok = tokenizerFromJSON(JSON.stringify(BpeTokenizer.fromPairs([[97, 98]])));
 * tok.kind; // 'bpe'
 * ```
 */
export function tokenizerFromJSON(input: string | unknown): AnyTokenizer {
  let value: unknown = input;
  if (typeof input === 'string') {
    try {
      value = JSON.parse(input);
    } catch (cause) {
      throw new TokenizerError(TOKENIZER_ERROR_CODES.TOKENIZER_INVALID_JSON, `invalid tokenizer JSON: ${(cause as Error).message}`, { field: '', cause });
    }
  }
  if (!isPlainObject(value)) throw invalid('(root)', 'an object', value);
  if (value.format !== 'llmcp-tokenizer') throw invalid('format', '"llmcp-tokenizer"', value.format);
  if (value.version !== 1) throw invalid('version', '1', value.version);
  if (value.kind === 'bpe') {
    checkMembers(value, ['format', 'version', 'kind', 'layout', 'pairs']);
    if (value.layout !== 1) throw invalid('layout', '1', value.layout);
    const pairs = value.pairs;
    if (!Array.isArray(pairs)) throw invalid('pairs', 'an array', pairs);
    const flat = new Uint32Array(pairs.length * 2);
    for (let r = 0; r < pairs.length; r++) {
      const pair: unknown = pairs[r];
      if (!Array.isArray(pair) || pair.length !== 2) throw invalid(`pairs[${r}]`, 'a [left, right] pair', pair);
      for (let k = 0; k < 2; k++) {
        const id: unknown = pair[k];
        if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > 0xffffffff) throw invalid(`pairs[${r}][${k}]`, 'a u32 integer', id);
        flat[2 * r + k] = id;
      }
    }
    return BpeTokenizer.fromPairs(flat);
  }
  if (value.kind === 'literal') {
    checkMembers(value, ['format', 'version', 'kind', 'pieces']);
    const pieces = value.pieces;
    if (!Array.isArray(pieces)) throw invalid('pieces', 'an array', pieces);
    const bytes: Uint8Array[] = [];
    for (let i = 0; i < pieces.length; i++) {
      const piece: unknown = pieces[i];
      if (typeof piece !== 'string' || !HEX_PIECE.test(piece)) throw invalid(`pieces[${i}]`, 'non-empty lowercase hex with an even number of digits', piece);
      bytes.push(hexToBytes(piece));
    }
    return LiteralTokenizer.fromPieces(bytes);
  }
  throw invalid('kind', '"bpe" or "literal"', value.kind);
}
