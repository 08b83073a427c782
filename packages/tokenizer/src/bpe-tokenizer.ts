/**
 * The byte-level BPE tokenizer, layout version 1 (../../../docs/spec/tokenizer-and-data.md §3).
 *
 * Internally everything runs in the training id space (bytes 0–255, merge r =
 * 256 + r); token ids are training ids + 2, with 0 = BOS and 1 = EOS.
 */
import { bpeMergeCountProblem, bpeMergeTableProblem, type BpeMergeTableProblem, type BpeTokenizerState } from '@llmcp/format';
import { TOKENIZER_ERROR_CODES, TokenizerError } from './errors.ts';
import { identityOf } from './internal/identity.ts';
import { PairTable } from './internal/pair-table.ts';
import { BacktrackingEncoder, SEARCH_TUNING } from './internal/bpe-backtrack.ts';
import { BpeEncoder } from './internal/bpe-encoder.ts';
import {
  BOS_ID,
  BYTE_TOKEN_OFFSET,
  EOS_ID,
  FIRST_MERGE_TRAINING_ID,
  MAX_DECODED_BYTES,
  type BpeTokenizerJSON,
  type Tokenizer,
} from './tokenizer.ts';
import { decodeUtf8Strict, toUtf8Bytes } from './utf8.ts';

/**
 * Largest id-space size (256 + merges) for which the pair index's numeric key
 * `left × size + right` stays exact in a double (size² ≤ 2^53).
 */
export const MAX_PAIR_INDEX_SIZE = 94906265;

/** One rank that changed a sequence during {@link BpeTokenizer.traceEncode}. */
export interface BpeEncodeApplication {
  /** The merge rank. */
  readonly rank: number;
  /** How many non-overlapping occurrences were replaced. */
  readonly replacements: number;
  /** Content token ids after this rank's pass. */
  readonly after: Uint32Array;
}

/** The step-by-step encoding of one input (the reference's rank-order passes). */
export interface BpeEncodeTrace {
  /** Content ids before any merge (byte + 2). */
  readonly initial: Uint32Array;
  /** Every rank that changed the sequence, in rank order. */
  readonly applications: readonly BpeEncodeApplication[];
  /** The final content ids (equal to {@link BpeTokenizer.encode}). */
  readonly content: Uint32Array;
}

/** A pair list as accepted by {@link BpeTokenizer.fromPairs}. */
export type BpePairList = readonly (readonly [number, number])[];

// A module-local copy: read in the encoder's loop.
const TOKEN_OFFSET = BYTE_TOKEN_OFFSET;

function isU32(value: number): boolean {
  return Number.isInteger(value) && value >= 0 && value <= 0xffffffff;
}

/**
 * The tokenizer's error for a broken merge-table rule (the rules and their
 * order are `bpeMergeTableProblem` of `@llmcp/format`).
 *
 * @param p - the first broken rule.
 * @returns the `TokenizerError` {@link BpeTokenizer.fromPairs} throws for it.
 */
function mergeTableError(p: BpeMergeTableProblem): TokenizerError {
  switch (p.reason) {
    case 'layout-overflow': {
      const m = Number(p.merges);
      return new TokenizerError(
        TOKENIZER_ERROR_CODES.TOKENIZER_LAYOUT_OVERFLOW,
        `merge ranks do not fit tokenizer layout version 1: ${m} merges need id ${258 + m - 1}, above the u32 maximum 4294967295`,
        { length: m },
      );
    }
    case 'unknown-operand':
      return new TokenizerError(
        TOKENIZER_ERROR_CODES.TOKENIZER_UNKNOWN_MERGE_OPERAND,
        `merge rank ${p.rank} references unavailable training token ${p.id}; expected an id below ${p.limit}`,
        { rank: p.rank, tokenId: p.id },
      );
    case 'duplicate-pair':
      return new TokenizerError(TOKENIZER_ERROR_CODES.TOKENIZER_DUPLICATE_MERGE_PAIR, `merge rank ${p.rank} repeats training pair (${p.left}, ${p.right}) of an earlier rank`, { rank: p.rank });
  }
}

/**
 * A byte-level BPE tokenizer: an ordered merge table over bytes.
 *
 * @example
 * ```ts
 * const tok = BpeTokenizer.fromPairs([[97, 98]]); // rank 0: "a" + "b"
 * tok.encode('abc'); // Uint32Array [258, 101]
 * tok.encodeDocument('ab'); // Uint32Array [0, 258, 1]
 * new TextDecoder().decode(tok.decode([258, 101])); // 'abc'
 * ```
 */
export class BpeTokenizer implements Tokenizer {
  /** Always `'bpe'`. */
  readonly kind = 'bpe' as const;
  /** Always 0. */
  readonly bosId: number = BOS_ID;
  /** Always 1. */
  readonly eosId: number = EOS_ID;
  /** `258 + mergeCount`. */
  readonly vocabularySize: number;
  /** Number of merge rules. */
  readonly mergeCount: number;

  /** Merge rank r = (left, right) at [2r, 2r+1], training ids. */
  readonly #pairs: Uint32Array;
  /** Rank of (left, right) for two byte operands, −1 when none; index left·256 + right. */
  readonly #byteRanks: Int32Array;
  /** Rank of (left, right) when an operand is a merge. */
  readonly #mergeRanks: PairTable;
  /** Index x·256 + y is 1 when some merge joins a token ending in byte x to one starting with byte y. */
  readonly #crossable: Uint8Array;
  /** 1 when the training id is the left (resp. right) operand of some merge: a cheap miss filter. */
  readonly #isLeft: Uint8Array;
  readonly #isRight: Uint8Array;
  /** Byte length of each training id (may exceed 2^53 for pathological chains; only compared). */
  readonly #lengths: Float64Array;
  #identity: string | undefined;
  /** The encoder's tables and scratch, built on the first encode. */
  #encoder: BpeEncoder | undefined;
  /**
   * The token-level search: built once this tokenizer has encoded
   * `SEARCH_TUNING.afterBytes` bytes with the merge passes; null when the
   * vocabulary's bytes are too large to hold.
   */
  #search: BacktrackingEncoder | null | undefined;
  /** Bytes encoded with the merge passes before the search was built. */
  #encodedBytes = 0;

  private constructor(pairs: Uint32Array) {
    const m = pairs.length / 2;
    this.#pairs = pairs;
    this.mergeCount = m;
    this.vocabularySize = FIRST_MERGE_TRAINING_ID + BYTE_TOKEN_OFFSET + m;
    this.#byteRanks = new Int32Array(65536).fill(-1);
    this.#mergeRanks = new PairTable(m);
    this.#isLeft = new Uint8Array(FIRST_MERGE_TRAINING_ID + m);
    this.#isRight = new Uint8Array(FIRST_MERGE_TRAINING_ID + m);
    this.#lengths = new Float64Array(FIRST_MERGE_TRAINING_ID + m);
    this.#lengths.fill(1, 0, 256);
    this.#crossable = new Uint8Array(65536);
    const firstByte = new Uint8Array(FIRST_MERGE_TRAINING_ID + m);
    const lastByte = new Uint8Array(FIRST_MERGE_TRAINING_ID + m);
    for (let b = 0; b < 256; b++) {
      firstByte[b] = b;
      lastByte[b] = b;
    }
    for (let r = 0; r < m; r++) {
      const left = pairs[2 * r] as number;
      const right = pairs[2 * r + 1] as number;
      if (left < 256 && right < 256) this.#byteRanks[left * 256 + right] = r;
      else this.#mergeRanks.set(left, right, r);
      this.#isLeft[left] = 1;
      this.#isRight[right] = 1;
      this.#lengths[256 + r] = (this.#lengths[left] as number) + (this.#lengths[right] as number);
      firstByte[256 + r] = firstByte[left] as number;
      lastByte[256 + r] = lastByte[right] as number;
      this.#crossable[(lastByte[left] as number) * 256 + (firstByte[right] as number)] = 1;
    }
  }

  /**
   * Builds a tokenizer from a merge table in the training id space, checking it
   * as ../../../docs/spec/tokenizer-and-data.md §3.2 says: for each rank r in order, both operands
   * must be below 256 + r (left checked first), and the pair must not repeat an
   * earlier one.
   *
   * @param pairs - `[left, right]` per rank, or a flat `Uint32Array` `[l0, r0, l1, r1, …]`.
   * @returns the tokenizer.
   * @throws TokenizerError `TOKENIZER_LAYOUT_OVERFLOW`, `TOKENIZER_UNKNOWN_MERGE_OPERAND`
   *   (with `rank`, `tokenId`), `TOKENIZER_DUPLICATE_MERGE_PAIR` (with `rank`),
   *   `TOKENIZER_LIMIT_EXCEEDED` (more than 94,906,009 merges).
   * @throws TypeError when a pair is not two u32 integers.
   * @example
   * ```ts
   * BpeTokenizer.fromPairs([[32, 208], [208, 176]]).vocabularySize; // 260
   * ```
   */
  static fromPairs(pairs: BpePairList | Uint32Array): BpeTokenizer {
    const flat = pairs instanceof Uint32Array ? pairs : flattenPairs(pairs);
    if (flat.length % 2 !== 0) throw new TypeError(`a flat pair array needs an even length, got ${flat.length}`);
    const m = flat.length / 2;
    // The merge-table rules are the format's (bpeMergeTableProblem); the count is checked before this implementation's limit.
    const overflow = bpeMergeCountProblem(m);
    if (overflow !== null) throw mergeTableError(overflow);
    if (FIRST_MERGE_TRAINING_ID + m > MAX_PAIR_INDEX_SIZE) {
      throw new TokenizerError(
        TOKENIZER_ERROR_CODES.TOKENIZER_LIMIT_EXCEEDED,
        `a BPE tokenizer with ${m} merges exceeds this implementation's limit of ${MAX_PAIR_INDEX_SIZE - FIRST_MERGE_TRAINING_ID} merges`,
        { length: m },
      );
    }
    const problem = bpeMergeTableProblem(flat);
    if (problem !== null) throw mergeTableError(problem);
    return new BpeTokenizer(flat.slice());
  }

  /**
   * The merge table (training ids), one `[left, right]` per rank.
   * @returns a fresh copy.
   */
  pairs(): [number, number][] {
    const out: [number, number][] = [];
    for (let r = 0; r < this.mergeCount; r++) out.push([this.#pairs[2 * r] as number, this.#pairs[2 * r + 1] as number]);
    return out;
  }

  /**
   * Rank of a merge pair given in training ids.
   * @param left - left training id.
   * @param right - right training id.
   * @returns the rank, or −1 when the pair is not a merge.
   */
  mergeRank(left: number, right: number): number {
    if (left < 256 && right < 256) return left >= 0 && right >= 0 ? (this.#byteRanks[left * 256 + right] as number) : -1;
    if (this.#isLeft[left] !== 1 || this.#isRight[right] !== 1) return -1;
    return this.#mergeRanks.get(left, right);
  }

  /**
   * Content encoding (§3.3): bytes + 2, then every merge rank in rank order,
   * each one left-to-right non-overlapping pass. Implemented by cutting the
   * input where no merge can join the neighbouring bytes, then per-rank work
   * lists over a linked list of each segment (internal/bpe-encoder.ts): each
   * merge costs O(1) (two rank look-ups, two list appends), so it is linear
   * in the input and never rescans it per rank.
   *
   * @param input - text (encoded as UTF-8) or raw bytes (any bytes, valid UTF-8 or not).
   * @returns content token ids (no BOS/EOS).
   * @throws TypeError for text with an unpaired surrogate.
   */
  encode(input: Uint8Array | string): Uint32Array {
    const bytes = toUtf8Bytes(input);
    return this.#encodeInto(bytes, 0, 0);
  }

  /**
   * Document encoding (§3.4): `[0] + content + [1]`; the empty document is `[0, 1]`.
   * @param input - text or bytes.
   * @returns document token ids.
   * @throws TypeError for text with an unpaired surrogate.
   */
  encodeDocument(input: Uint8Array | string): Uint32Array {
    const bytes = toUtf8Bytes(input);
    const out = this.#encodeInto(bytes, 1, 1);
    out[0] = BOS_ID;
    out[out.length - 1] = EOS_ID;
    return out;
  }

  #encodeInto(bytes: Uint8Array, before: number, after: number): Uint32Array {
    const n = bytes.length;
    const out = new Uint32Array(n + before + after);
    if (this.mergeCount === 0 || n < 2) {
      for (let i = 0; i < n; i++) out[before + i] = (bytes[i] as number) + TOKEN_OFFSET;
      return out;
    }
    // Scratch reused across calls: encoding is synchronous and drains every list before returning.
    const encoder = (this.#encoder ??= new BpeEncoder(this.#pairs, this.#byteRanks, this.#mergeRanks));
    // First the token-level search (exact; gives up on text whose token pairs are mostly new to it) …
    if (this.#search === undefined && this.#encodedBytes >= SEARCH_TUNING.afterBytes) this.#search = BacktrackingEncoder.build(this.#pairs, this.#lengths, encoder);
    if (this.#search !== undefined && this.#search !== null) {
      const end = this.#search.encode(bytes, n, out, before, TOKEN_OFFSET);
      if (end >= 0) {
        const length = end + after;
        return length === out.length ? out : out.slice(0, length);
      }
    }
    // … else the merge passes. A boundary between bytes x and y that no merge
    // can cross (no merge joins a token ending in x to one starting with y)
    // splits the input exactly: no token ever spans it, and the rank passes on
    // either side never interact. Segment by segment keeps the working set small.
    const crossable = this.#crossable;
    let o = before;
    let start = 0;
    let x = bytes[0] as number;
    for (let i = 0; i < n; i++) {
      const y = i + 1 < n ? (bytes[i + 1] as number) : -1;
      if (y >= 0 && crossable[x * 256 + y] === 1) {
        x = y;
        continue;
      }
      if (i === start) out[o++] = x + TOKEN_OFFSET;
      else o = encoder.encodeSegment(bytes, start, i + 1, out, o, TOKEN_OFFSET);
      start = i + 1;
      x = y;
    }
    if (this.#search === undefined) this.#encodedBytes += n;
    const length = o + after;
    return length === out.length ? out : out.slice(0, length);
  }

  /**
   * The reference's encoding, traced: one pass per rank in rank order,
   * recording each rank that changed the sequence. O(n × merges): for tests,
   * teaching and conformance, not for bulk encoding.
   *
   * @param input - text or bytes.
   * @returns the initial ids, each changing rank with its replacements and result, and the content ids.
   */
  traceEncode(input: Uint8Array | string): BpeEncodeTrace {
    const bytes = toUtf8Bytes(input);
    let seq: number[] = Array.from(bytes, (b) => b);
    const initial = Uint32Array.from(seq, (t) => t + BYTE_TOKEN_OFFSET);
    const applications: BpeEncodeApplication[] = [];
    for (let r = 0; r < this.mergeCount && seq.length > 1; r++) {
      const result = replacePair(seq, [this.#pairs[2 * r] as number, this.#pairs[2 * r + 1] as number], FIRST_MERGE_TRAINING_ID + r);
      if (result.replacements > 0) {
        seq = result.sequence;
        applications.push({ rank: r, replacements: result.replacements, after: Uint32Array.from(seq, (t) => t + BYTE_TOKEN_OFFSET) });
      }
    }
    return { initial, applications, content: Uint32Array.from(seq, (t) => t + BYTE_TOKEN_OFFSET) };
  }

  /**
   * Content decoding (§3.5): first any 0/1 is an error, then any id outside the
   * vocabulary; the bytes of all ids concatenated. Accepts non-canonical id
   * sequences.
   *
   * @param ids - content token ids.
   * @returns the bytes.
   * @throws TokenizerError `TOKENIZER_CONTROL_TOKEN_IN_CONTENT` / `TOKENIZER_UNKNOWN_TOKEN`
   *   (with `position`), `TOKENIZER_LIMIT_EXCEEDED` above {@link MAX_DECODED_BYTES}.
   */
  decode(ids: ArrayLike<number>): Uint8Array {
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i] as number;
      if (id === BOS_ID || id === EOS_ID) throw controlInContent(i, id);
    }
    return this.#decodeRange(ids, 0, ids.length);
  }

  /**
   * Document decoding (§3.5): at least 2 ids, BOS first, EOS last, no control
   * id in between; then the inner part is content-decoded. Positions are in
   * the full list.
   *
   * @param ids - document token ids.
   * @returns the document's bytes.
   * @throws TokenizerError `TOKENIZER_DOCUMENT_TOO_SHORT`, `TOKENIZER_EXPECTED_BOS`,
   *   `TOKENIZER_EXPECTED_EOS`, `TOKENIZER_INTERIOR_CONTROL_TOKEN`, `TOKENIZER_UNKNOWN_TOKEN`.
   */
  decodeDocument(ids: ArrayLike<number>): Uint8Array {
    const n = ids.length;
    if (n < 2) {
      throw new TokenizerError(TOKENIZER_ERROR_CODES.TOKENIZER_DOCUMENT_TOO_SHORT, `document token list is too short: expected at least 2 ids (BOS, EOS), found ${n}`, { length: n });
    }
    if (ids[0] !== BOS_ID) {
      throw new TokenizerError(TOKENIZER_ERROR_CODES.TOKENIZER_EXPECTED_BOS, `expected BOS (0) at position 0 of the document, found ${ids[0]}`, { position: 0, tokenId: ids[0] as number });
    }
    if (ids[n - 1] !== EOS_ID) {
      throw new TokenizerError(TOKENIZER_ERROR_CODES.TOKENIZER_EXPECTED_EOS, `expected EOS (1) at position ${n - 1} (the end of the document), found ${ids[n - 1]}`, {
        position: n - 1,
        tokenId: ids[n - 1] as number,
      });
    }
    for (let i = 1; i < n - 1; i++) {
      const id = ids[i] as number;
      if (id === BOS_ID || id === EOS_ID) {
        throw new TokenizerError(TOKENIZER_ERROR_CODES.TOKENIZER_INTERIOR_CONTROL_TOKEN, `interior control token ${id} at position ${i} of the document; BOS and EOS may only open and close it`, {
          position: i,
          tokenId: id,
        });
      }
    }
    return this.#decodeRange(ids, 1, n - 1);
  }

  /**
   * Content decoding followed by the strict UTF-8 text view (§3.5).
   * @param ids - content token ids.
   * @returns the text.
   * @throws TokenizerError as {@link BpeTokenizer.decode}, or `TOKENIZER_INVALID_UTF8` with
   *   `offset` = the length of the longest valid prefix.
   */
  decodeText(ids: ArrayLike<number>): string {
    return decodeUtf8Strict(this.decode(ids));
  }

  /**
   * The bytes of one token id.
   * @param id - a token id.
   * @returns a fresh byte array (empty for BOS and EOS).
   * @throws TokenizerError `TOKENIZER_UNKNOWN_TOKEN` outside the vocabulary.
   */
  tokenBytes(id: number): Uint8Array {
    if (id === BOS_ID || id === EOS_ID) return new Uint8Array(0);
    return this.#decodeRange([id], 0, 1);
  }

  /**
   * The byte length of one token id (0 for BOS and EOS) from the lengths kept
   * with the merges, without building its bytes: a caller can bound what
   * spelling a vocabulary costs before it spells any of it. A chain of k
   * merges that each join the previous token with itself spells 2^k bytes, so
   * a valid table a few KiB long can hold tokens of any length; the result is
   * exact up to 2^53.
   * @param id - a token id.
   * @returns its length in bytes.
   * @throws TokenizerError `TOKENIZER_UNKNOWN_TOKEN` outside the vocabulary.
   */
  tokenLength(id: number): number {
    if (id === BOS_ID || id === EOS_ID) return 0;
    if (!Number.isInteger(id) || id < BYTE_TOKEN_OFFSET || id >= this.vocabularySize) {
      throw new TokenizerError(TOKENIZER_ERROR_CODES.TOKENIZER_UNKNOWN_TOKEN, `token ${id} is outside the vocabulary (expected an integer in 0…${this.vocabularySize - 1})`, { position: 0, tokenId: id });
    }
    return this.#lengths[id - BYTE_TOKEN_OFFSET] as number;
  }

  #decodeRange(ids: ArrayLike<number>, from: number, to: number): Uint8Array {
    const lengths = this.#lengths;
    const vocabulary = this.vocabularySize;
    let total = 0;
    for (let i = from; i < to; i++) {
      const id = ids[i] as number;
      if (!Number.isInteger(id) || id < BYTE_TOKEN_OFFSET || id >= vocabulary) {
        throw new TokenizerError(TOKENIZER_ERROR_CODES.TOKENIZER_UNKNOWN_TOKEN, `token ${id} at position ${i} is outside the vocabulary (expected an integer in 2…${vocabulary - 1})`, {
          position: i,
          tokenId: id,
        });
      }
      total += lengths[id - BYTE_TOKEN_OFFSET] as number;
    }
    if (total > MAX_DECODED_BYTES) {
      throw new TokenizerError(TOKENIZER_ERROR_CODES.TOKENIZER_LIMIT_EXCEEDED, `decoding would produce ${total} bytes, above the limit of ${MAX_DECODED_BYTES}`, { length: to - from });
    }
    const out = new Uint8Array(total);
    const pairs = this.#pairs;
    const stack: number[] = [];
    let o = 0;
    for (let i = from; i < to; i++) {
      stack.push((ids[i] as number) - BYTE_TOKEN_OFFSET);
      while (stack.length > 0) {
        const t = stack.pop() as number;
        if (t < 256) out[o++] = t;
        else {
          const r = t - FIRST_MERGE_TRAINING_ID;
          stack.push(pairs[2 * r + 1] as number, pairs[2 * r] as number);
        }
      }
    }
    return out;
  }

  /**
   * The checkpoint form: pairs in the training id space (../../format/SPEC.md §5.2).
   * @returns a fresh `BpeTokenizerState`.
   */
  toState(): BpeTokenizerState {
    return { kind: 'bpe', pairs: this.pairs() };
  }

  /**
   * The stable JSON form.
   * @returns `{ format, version, kind: 'bpe', layout: 1, pairs }`.
   */
  toJSON(): BpeTokenizerJSON {
    return { format: 'llmcp-tokenizer', version: 1, kind: 'bpe', layout: 1, pairs: this.pairs() };
  }

  /**
   * The canonical identity: SHA-256 of the canonical serialization. Two
   * tokenizers with the same vocabulary size but a different merge order have
   * different identities.
   * @returns `sha256:<64 hex digits>`.
   */
  identity(): string {
    this.#identity ??= identityOf(this.toJSON());
    return this.#identity;
  }
}

function flattenPairs(pairs: BpePairList): Uint32Array {
  const flat = new Uint32Array(pairs.length * 2);
  for (let r = 0; r < pairs.length; r++) {
    const pair = pairs[r];
    if (!Array.isArray(pair) || pair.length !== 2 || !isU32(pair[0] as number) || !isU32(pair[1] as number)) {
      throw new TypeError(`merge rank ${r}: expected a pair of two u32 integers, found ${JSON.stringify(pair)}`);
    }
    flat[2 * r] = pair[0] as number;
    flat[2 * r + 1] = pair[1] as number;
  }
  return flat;
}

function controlInContent(position: number, id: number): TokenizerError {
  return new TokenizerError(TOKENIZER_ERROR_CODES.TOKENIZER_CONTROL_TOKEN_IN_CONTENT, `control token ${id} (${id === BOS_ID ? 'BOS' : 'EOS'}) in content at position ${position}; content ids exclude 0 and 1`, {
    position,
    tokenId: id,
  });
}

/**
 * One left-to-right non-overlapping replacement pass (../../../docs/spec/tokenizer-and-data.md
 * §2.3 step 5).
 *
 * @param sequence - training ids.
 * @param pair - the merge's `[left, right]` training ids.
 * @param merged - the merge's own training id, written for each occurrence replaced.
 * @returns the new sequence and how many occurrences were replaced.
 */
export function replacePair(sequence: readonly number[], pair: readonly [left: number, right: number], merged: number): { sequence: number[]; replacements: number } {
  const [left, right] = pair;
  const out: number[] = [];
  let replacements = 0;
  let i = 0;
  while (i < sequence.length) {
    if (i + 1 < sequence.length && sequence[i] === left && sequence[i + 1] === right) {
      out.push(merged);
      replacements += 1;
      i += 2;
    } else {
      out.push(sequence[i] as number);
      i += 1;
    }
  }
  return { sequence: out, replacements };
}
