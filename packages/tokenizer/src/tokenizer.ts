/**
 * The interface both tokenizers implement, the token-id layout constants of
 * layout version 1 (../../../docs/spec/tokenizer-and-data.md §3.1) and the stable JSON form.
 */
import { MAX_BPE_MERGES, type TokenizerState } from '@llmcp/format';

/** Token id of BOS (begin of document) in a byte-level BPE tokenizer. */
export const BOS_ID = 0;
/** Token id of EOS (end of document) in a byte-level BPE tokenizer. */
export const EOS_ID = 1;
/** Byte b has token id `b + BYTE_TOKEN_OFFSET`; training id t has token id `t + 2`. */
export const BYTE_TOKEN_OFFSET = 2;
/** Token id of merge rank 0 (merge r is `FIRST_MERGE_TOKEN_ID + r`). */
export const FIRST_MERGE_TOKEN_ID = 258;
/** Training id of merge rank 0 (bytes are training ids 0–255). */
export const FIRST_MERGE_TRAINING_ID = 256;
/** The BPE token-id layout version implemented here. */
export const TOKENIZER_LAYOUT_VERSION = 1;
/** Largest accepted BPE training request: 2^32 − 1 − 255 (../../../docs/spec/tokenizer-and-data.md §2.3). */
export const MAX_REQUESTED_MERGES = 4294967040;
/** Most merge ranks layout version 1 can number: 258 + M − 1 must fit in u32 (4,294,967,038; `MAX_BPE_MERGES` of `@llmcp/format`, the rule's one home). */
export const MAX_LAYOUT_MERGES: number = MAX_BPE_MERGES;
/** Largest byte string a single decode call produces (1 GiB); longer requests are refused. */
export const MAX_DECODED_BYTES: number = 1 << 30;

/** The stable JSON form of a literal tokenizer: pieces as lowercase hex, in id order. */
export interface LiteralTokenizerJSON {
  readonly format: 'llmcp-tokenizer';
  readonly version: 1;
  readonly kind: 'literal';
  readonly pieces: readonly string[];
}

/** The stable JSON form of a byte-level BPE tokenizer: merge pairs in the training id space, in rank order. */
export interface BpeTokenizerJSON {
  readonly format: 'llmcp-tokenizer';
  readonly version: 1;
  readonly kind: 'bpe';
  readonly layout: 1;
  readonly pairs: readonly (readonly [number, number])[];
}

/** The stable JSON form of any tokenizer. */
export type TokenizerJSON = LiteralTokenizerJSON | BpeTokenizerJSON;

/**
 * What every llmcp tokenizer offers. Ids are plain numbers; id lists are
 * returned as `Uint32Array`.
 */
export interface Tokenizer {
  /** `'literal'` or `'bpe'`. */
  readonly kind: 'literal' | 'bpe';
  /** Number of token ids (ids are `0 … vocabularySize − 1`). */
  readonly vocabularySize: number;
  /** BOS id, or `null` when the tokenizer has no control tokens (literal). */
  readonly bosId: number | null;
  /** EOS id, or `null` when the tokenizer has no control tokens (literal). */
  readonly eosId: number | null;
  /** Content ids of text (its UTF-8 bytes) or of raw bytes. No control tokens. */
  encode(input: Uint8Array | string): Uint32Array;
  /** Document ids: `[BOS] + content + [EOS]` for BPE; the content for literal tokenizers. */
  encodeDocument(input: Uint8Array | string): Uint32Array;
  /** Bytes of a content id list (control ids are an error). */
  decode(ids: ArrayLike<number>): Uint8Array;
  /** Bytes of a document id list (checks BOS/EOS placement for BPE). */
  decodeDocument(ids: ArrayLike<number>): Uint8Array;
  /** Strict UTF-8 text of a content id list (never substitutes U+FFFD). */
  decodeText(ids: ArrayLike<number>): string;
  /** The bytes one token id stands for (empty for BOS/EOS). */
  tokenBytes(id: number): Uint8Array;
  /** The `@llmcp/format` checkpoint form. */
  toState(): TokenizerState;
  /** The stable JSON form. */
  toJSON(): TokenizerJSON;
  /** `sha256:<hex>` over the canonical serialization (the UTF-8 of `JSON.stringify(toJSON())`). */
  identity(): string;
}
