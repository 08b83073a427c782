/**
 * The literal tokenizer: an ordered list of non-empty, pairwise distinct byte
 * strings (../../format/SPEC.md §5.1, tag 1). Token id i spells piece i. It has no
 * control tokens.
 *
 * Encoding rule (llmcp's; the reference fixtures only store and decode
 * literal tokenizers): greedy leftmost-longest match. At each byte offset
 * the longest piece that matches there is emitted and the scan continues
 * after it; if no piece matches, encoding fails at that offset. There is no
 * backtracking, so with pieces like `ab`, `abc`, `cd` the input `abcd` fails
 * at offset 3 although `ab` + `cd` would spell it.
 */
import type { LiteralTokenizerState } from '@llmcp/format';
import { TOKENIZER_ERROR_CODES, TokenizerError } from './errors.ts';
import { identityOf } from './internal/identity.ts';
import { toHex } from './sha256.ts';
import { MAX_DECODED_BYTES, type LiteralTokenizerJSON, type Tokenizer } from './tokenizer.ts';
import { decodeUtf8Strict, toUtf8Bytes } from './utf8.ts';

/**
 * A literal tokenizer.
 *
 * @example
 * ```ts
 * const tok = LiteralTokenizer.fromPieces(['0', '1', '2', '3', '4']);
 * tok.encode('0123'); // Uint32Array [0, 1, 2, 3]
 * tok.decodeText([4, 0]); // '40'
 * ```
 */
export class LiteralTokenizer implements Tokenizer {
  /** Always `'literal'`. */
  readonly kind = 'literal' as const;
  /** Always `null`: literal tokenizers have no control tokens. */
  readonly bosId: null = null;
  /** Always `null`: literal tokenizers have no control tokens. */
  readonly eosId: null = null;
  /** Number of pieces. */
  readonly vocabularySize: number;

  readonly #pieces: readonly Uint8Array[];
  /** Trie edges: key node·256 + byte → child node. Node 0 is the root. */
  readonly #edges = new Map<number, number>();
  /** Token id ending at each trie node, −1 when none. */
  readonly #terminal: number[] = [-1];
  #identity: string | undefined;

  private constructor(pieces: readonly Uint8Array[]) {
    this.#pieces = pieces;
    this.vocabularySize = pieces.length;
    for (let id = 0; id < pieces.length; id++) {
      const piece = pieces[id] as Uint8Array;
      let node = 0;
      for (let k = 0; k < piece.length; k++) {
        const key = node * 256 + (piece[k] as number);
        let child = this.#edges.get(key);
        if (child === undefined) {
          child = this.#terminal.length;
          this.#terminal.push(-1);
          this.#edges.set(key, child);
        }
        node = child;
      }
      this.#terminal[node] = id;
    }
  }

  /**
   * Builds a literal tokenizer. Strings are taken as their UTF-8 bytes.
   *
   * @param pieces - token id i spells `pieces[i]`.
   * @returns the tokenizer.
   * @throws TokenizerError `TOKENIZER_EMPTY_VOCABULARY`, `TOKENIZER_EMPTY_PIECE`,
   *   `TOKENIZER_DUPLICATE_PIECE` (`tokenId` is the later id).
   * @example
   * ```ts
   * LiteralTokenizer.fromPieces([new Uint8Array([0xff]), new Uint8Array([0x00])]).vocabularySize; // 2
   * ```
   */
  static fromPieces(pieces: readonly (Uint8Array | string)[]): LiteralTokenizer {
    if (pieces.length === 0) {
      throw new TokenizerError(TOKENIZER_ERROR_CODES.TOKENIZER_EMPTY_VOCABULARY, 'a literal tokenizer needs at least one piece, found none', { length: 0 });
    }
    const copies: Uint8Array[] = [];
    const seen = new Map<string, number>();
    for (let id = 0; id < pieces.length; id++) {
      const piece = toUtf8Bytes(pieces[id] as Uint8Array | string);
      if (piece.length === 0) {
        throw new TokenizerError(TOKENIZER_ERROR_CODES.TOKENIZER_EMPTY_PIECE, `literal piece ${id} is empty; every piece needs at least one byte`, { tokenId: id });
      }
      const hex = toHex(piece);
      const earlier = seen.get(hex);
      if (earlier !== undefined) {
        throw new TokenizerError(TOKENIZER_ERROR_CODES.TOKENIZER_DUPLICATE_PIECE, `literal piece ${id} repeats the spelling of piece ${earlier} (bytes ${hex})`, { tokenId: id });
      }
      seen.set(hex, id);
      copies.push(piece.slice());
    }
    return new LiteralTokenizer(copies);
  }

  /**
   * The pieces in id order.
   * @returns fresh copies.
   */
  pieces(): Uint8Array[] {
    return this.#pieces.map((p) => p.slice());
  }

  /**
   * Greedy leftmost-longest encoding (see the module comment).
   * @param input - text (UTF-8) or bytes.
   * @returns token ids.
   * @throws TokenizerError `TOKENIZER_UNENCODABLE` with the byte `offset` where no piece matches.
   * @throws TypeError for text with an unpaired surrogate.
   */
  encode(input: Uint8Array | string): Uint32Array {
    const bytes = toUtf8Bytes(input);
    const out: number[] = [];
    const edges = this.#edges;
    const terminal = this.#terminal;
    let i = 0;
    while (i < bytes.length) {
      let node = 0;
      let bestId = -1;
      let bestEnd = i;
      for (let k = i; k < bytes.length; k++) {
        const child = edges.get(node * 256 + (bytes[k] as number));
        if (child === undefined) break;
        node = child;
        const id = terminal[node] as number;
        if (id >= 0) {
          bestId = id;
          bestEnd = k + 1;
        }
      }
      if (bestId < 0) {
        throw new TokenizerError(
          TOKENIZER_ERROR_CODES.TOKENIZER_UNENCODABLE,
          `no literal piece matches at byte offset ${i} (byte 0x${(bytes[i] as number).toString(16).padStart(2, '0')})`,
          { offset: i },
        );
      }
      out.push(bestId);
      i = bestEnd;
    }
    return Uint32Array.from(out);
  }

  /**
   * Same as {@link LiteralTokenizer.encode}: literal tokenizers have no BOS/EOS.
   * @param input - text or bytes.
   * @returns token ids.
   * @throws TokenizerError `TOKENIZER_UNENCODABLE`.
   */
  encodeDocument(input: Uint8Array | string): Uint32Array {
    return this.encode(input);
  }

  /**
   * Concatenated bytes of the pieces.
   * @param ids - token ids.
   * @returns the bytes.
   * @throws TokenizerError `TOKENIZER_UNKNOWN_TOKEN` with `position`.
   */
  decode(ids: ArrayLike<number>): Uint8Array {
    let total = 0;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i] as number;
      if (!Number.isInteger(id) || id < 0 || id >= this.vocabularySize) {
        throw new TokenizerError(TOKENIZER_ERROR_CODES.TOKENIZER_UNKNOWN_TOKEN, `token ${id} at position ${i} is outside the vocabulary (expected an integer in 0…${this.vocabularySize - 1})`, {
          position: i,
          tokenId: id,
        });
      }
      total += (this.#pieces[id] as Uint8Array).length;
    }
    if (total > MAX_DECODED_BYTES) {
      throw new TokenizerError(TOKENIZER_ERROR_CODES.TOKENIZER_LIMIT_EXCEEDED, `decoding would produce ${total} bytes, above the limit of ${MAX_DECODED_BYTES}`, { length: ids.length });
    }
    const out = new Uint8Array(total);
    let o = 0;
    for (let i = 0; i < ids.length; i++) {
      const piece = this.#pieces[ids[i] as number] as Uint8Array;
      out.set(piece, o);
      o += piece.length;
    }
    return out;
  }

  /**
   * Same as {@link LiteralTokenizer.decode}: there are no control tokens to check.
   * @param ids - token ids.
   * @returns the bytes.
   * @throws TokenizerError `TOKENIZER_UNKNOWN_TOKEN`.
   */
  decodeDocument(ids: ArrayLike<number>): Uint8Array {
    return this.decode(ids);
  }

  /**
   * Decoding followed by strict UTF-8.
   * @param ids - token ids.
   * @returns the text.
   * @throws TokenizerError `TOKENIZER_UNKNOWN_TOKEN`, `TOKENIZER_INVALID_UTF8` (`offset` = valid prefix length).
   */
  decodeText(ids: ArrayLike<number>): string {
    return decodeUtf8Strict(this.decode(ids));
  }

  /**
   * The piece of one id.
   * @param id - a token id.
   * @returns a fresh copy of its bytes.
   * @throws TokenizerError `TOKENIZER_UNKNOWN_TOKEN`.
   */
  tokenBytes(id: number): Uint8Array {
    return this.decode([id]);
  }

  /**
   * The byte length of one id's piece, without copying it.
   * @param id - a token id.
   * @returns its piece's length in bytes.
   * @throws TokenizerError `TOKENIZER_UNKNOWN_TOKEN`.
   */
  tokenLength(id: number): number {
    const piece = Number.isInteger(id) ? this.#pieces[id] : undefined;
    if (piece === undefined) {
      throw new TokenizerError(TOKENIZER_ERROR_CODES.TOKENIZER_UNKNOWN_TOKEN, `token ${id} is outside the vocabulary (expected an integer in 0…${this.vocabularySize - 1})`, { position: 0, tokenId: id });
    }
    return piece.length;
  }

  /**
   * The checkpoint form (../../format/SPEC.md §5.1, tag 1).
   * @returns a fresh `LiteralTokenizerState`.
   */
  toState(): LiteralTokenizerState {
    return { kind: 'literal', pieces: this.pieces() };
  }

  /**
   * The stable JSON form; pieces are lowercase hex (they are arbitrary bytes).
   * @returns `{ format, version, kind: 'literal', pieces }`.
   */
  toJSON(): LiteralTokenizerJSON {
    return { format: 'llmcp-tokenizer', version: 1, kind: 'literal', pieces: this.#pieces.map(toHex) };
  }

  /**
   * SHA-256 of the canonical serialization.
   * @returns `sha256:<64 hex digits>`.
   */
  identity(): string {
    this.#identity ??= identityOf(this.toJSON());
    return this.#identity;
  }
}
