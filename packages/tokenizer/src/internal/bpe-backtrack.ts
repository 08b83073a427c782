/**
 * A second, faster way to compute the same BPE encoding (../../../../docs/spec/tokenizer-and-data.md
 * §3.3): a left-to-right search over whole tokens instead of merge passes.
 *
 * It rests on one property of the rank-ordered passes. Call a token *proper*
 * when its own bytes encode to that single token, and a pair of tokens
 * *compatible* when the bytes of the two encode to exactly those two tokens.
 * The encoding of a text is a sequence of proper tokens whose adjacent pairs
 * are all compatible, and it is the only such sequence: were two tokens of
 * such a sequence to be joined or split by the passes over the whole text, the
 * first rank to do so would do the same to the pair alone (its occurrences
 * and the left-to-right pairing of runs do not depend on anything outside the
 * pair), contradicting compatibility. (This is the argument of GitHub's `bpe`
 * crate, "backtracking" encoder, here for an explicit merge table.)
 *
 * So the encoder walks the text: at each position it takes the longest proper
 * token that matches (a byte trie), shortens it (to the longest proper token
 * that is a prefix of it) until it is compatible with the previous token and
 * does not end at a position already known to be a dead end, and when nothing
 * fits it marks the position dead and steps back one token. Because a
 * compatible prefix is the encoding of its own text, the token before any
 * reachable position is unique, so a dead end is dead for good; every single
 * byte is a proper token, so a sequence is always found. Compatibility is
 * decided once per pair by the exact merge-pass encoder on the pair's bytes
 * and kept in a bounded cache.
 *
 * Only built when the vocabulary's bytes are small enough to hold (see
 * {@link MAX_TOKEN_BYTES}); otherwise the merge-pass encoder does all the work.
 */
import type { BpeEncoder } from './bpe-encoder.ts';

/**
 * Above this many bytes over all token strings (or one token longer than
 * {@link MAX_TOKEN_LENGTH}) no trie is built; it also keeps a trie key
 * `node · 256 + byte + 1` within an int32.
 */
const MAX_TOKEN_BYTES = 1 << 22;
/** Longest token string the trie holds. */
const MAX_TOKEN_LENGTH = 1 << 16;
/**
 * When a tokenizer builds its search: after it has encoded this many bytes
 * with the merge passes (the build encodes every token's bytes once, so a
 * tokenizer used for a little text never pays for it). Tests set it to 0.
 */
export const SEARCH_TUNING: { afterBytes: number } = { afterBytes: 1 << 20 };

/** The search may decide one pair per this many bytes encoded (its allowance accrues over calls) … */
const BYTES_PER_DECISION = 256;
/** … saving up at most this many decisions. */
const MAX_ALLOWANCE = 4096;
/** Compatibility cache entries kept before the cache starts over (bounded memory). */
const MAX_CACHED_PAIRS = 1 << 20;
/** Most slots of the typed compatibility cache (twice {@link MAX_CACHED_PAIRS}: load at most 1/2); it starts at 4096 and doubles. */
const CACHE_SLOTS = MAX_CACHED_PAIRS * 2;
/** Largest id-space size for which `left × size + right + 1` stays a positive int32. */
const MAX_SMALL_SIZE = 46340;

/** The token-level search encoder of a merge table (see the module comment): the same encoding as the merge passes, found left to right over whole tokens. */
export class BacktrackingEncoder {
  readonly #exact: BpeEncoder;
  readonly #size: number;
  /** Bytes of training id t: #bytes[#start[t] … #start[t] + #length[t]). */
  readonly #bytes: Uint8Array;
  readonly #start: Int32Array;
  readonly #length: Int32Array;
  /** Longest proper token that is a proper prefix of t (−1 for single bytes and improper tokens). */
  readonly #prefix: Int32Array;
  /** Trie children: key node·256 + byte + 1 (0 = empty slot) → child node. */
  readonly #childKeys: Int32Array;
  readonly #childNodes: Int32Array;
  readonly #childShift: number;
  /**
   * The byte leading from node x to node x + 1 when x + 1 is its child, or −1
   * (the nodes of one inserted string are numbered consecutively, so walking
   * a long token mostly reads this array in order instead of the hash).
   */
  readonly #chainByte: Int16Array;
  /** Proper token spelled by a trie node, or −1. */
  readonly #nodeToken: Int32Array;
  /**
   * Compatibility cache. Up to 46340 ids: an open-addressing table of keys
   * `left · size + right + 1` (0 = empty) with 1 = compatible, 2 = not;
   * above, a `Map`. Both start over when full.
   */
  #cacheKeys: Int32Array | null;
  #cacheValues: Uint8Array;
  #cacheShift = 32 - 12;
  #cached = 0;
  readonly #compatible = new Map<number, boolean>();
  /** Pairs decided (merge passes run) so far; the search gives up on an input when it decides too many. */
  #decided = 0;
  /** Decisions the search may still make (see {@link BYTES_PER_DECISION}); may run a little negative. */
  #allowance = 0;
  #dead = new Uint8Array(0);
  #pair = new Uint8Array(0);
  #pairOut = new Uint32Array(0);

  private constructor(exact: BpeEncoder, size: number, bytes: Uint8Array, start: Int32Array, length: Int32Array, proper: Uint8Array, nodesNeeded: number) {
    this.#exact = exact;
    this.#size = size;
    this.#cacheKeys = size <= MAX_SMALL_SIZE ? new Int32Array(4096) : null;
    this.#cacheValues = new Uint8Array(size <= MAX_SMALL_SIZE ? 4096 : 0);
    this.#bytes = bytes;
    this.#start = start;
    this.#length = length;
    let capacity = 16;
    while (capacity < nodesNeeded * 2) capacity *= 2;
    this.#childKeys = new Int32Array(capacity);
    this.#childNodes = new Int32Array(capacity);
    this.#childShift = 32 - Math.log2(capacity);
    this.#nodeToken = new Int32Array(nodesNeeded + 1).fill(-1);
    this.#chainByte = new Int16Array(nodesNeeded + 1).fill(-1);
    this.#prefix = new Int32Array(size).fill(-1);
    let nodes = 1;
    for (let t = 0; t < size; t++) {
      if (proper[t] !== 1) continue;
      let node = 0;
      const s = start[t] as number;
      const e = s + (length[t] as number);
      for (let i = s; i < e; i++) {
        const b = bytes[i] as number;
        let child = this.#child(node, b);
        if (child < 0) {
          child = nodes++;
          this.#addChild(node, b, child);
          if (child === node + 1) this.#chainByte[node] = b;
        }
        node = child;
      }
      this.#nodeToken[node] = t;
    }
    for (let t = 256; t < size; t++) {
      if (proper[t] !== 1) continue;
      let node = 0;
      const s = start[t] as number;
      const e = s + (length[t] as number) - 1;
      for (let i = s; i < e; i++) {
        node = this.#child(node, bytes[i] as number);
        const found = this.#nodeToken[node] as number;
        if (found >= 0) this.#prefix[t] = found;
      }
    }
  }

  /**
   * Builds the search tables for a merge table, or returns null when the
   * vocabulary's bytes exceed the limits.
   * @param pairs - (left, right) of rank r at [2r, 2r+1], training ids.
   * @param lengths - byte length of each training id.
   * @param exact - the merge-pass encoder of the same table.
   */
  static build(pairs: Uint32Array, lengths: Float64Array, exact: BpeEncoder): BacktrackingEncoder | null {
    const m = pairs.length / 2;
    const size = 256 + m;
    let total = 0;
    for (let t = 0; t < size; t++) {
      const l = lengths[t] as number;
      if (l > MAX_TOKEN_LENGTH) return null;
      total += l;
      if (total > MAX_TOKEN_BYTES) return null;
    }
    const bytes = new Uint8Array(total);
    const start = new Int32Array(size);
    const length = new Int32Array(size);
    let o = 0;
    for (let t = 0; t < 256; t++) {
      start[t] = o;
      length[t] = 1;
      bytes[o++] = t;
    }
    for (let r = 0; r < m; r++) {
      const left = pairs[2 * r] as number;
      const right = pairs[2 * r + 1] as number;
      const t = 256 + r;
      start[t] = o;
      bytes.copyWithin(o, start[left] as number, (start[left] as number) + (length[left] as number));
      o += length[left] as number;
      bytes.copyWithin(o, start[right] as number, (start[right] as number) + (length[right] as number));
      o += length[right] as number;
      length[t] = (length[left] as number) + (length[right] as number);
    }
    // Proper tokens: their own bytes encode to them alone.
    const proper = new Uint8Array(size);
    proper.fill(1, 0, 256);
    let out = new Uint32Array(16);
    let nodesNeeded = 256;
    for (let t = 256; t < size; t++) {
      const l = length[t] as number;
      if (out.length < l) out = new Uint32Array(2 * l);
      const s = start[t] as number;
      const n = exact.encodeSegment(bytes.subarray(s, s + l), 0, l, out, 0, 0);
      if (n === 1 && out[0] === t) {
        proper[t] = 1;
        nodesNeeded += l;
      }
    }
    return new BacktrackingEncoder(exact, size, bytes, start, length, proper, nodesNeeded);
  }

  #child(node: number, byte: number): number {
    const keys = this.#childKeys;
    const mask = keys.length - 1;
    const key = node * 256 + byte + 1;
    for (let s = Math.imul(key, 0x9e3779b1) >>> this.#childShift; ; s = (s + 1) & mask) {
      const k = keys[s] as number;
      if (k === key) return this.#childNodes[s] as number;
      if (k === 0) return -1;
    }
  }

  #addChild(node: number, byte: number, child: number): void {
    const keys = this.#childKeys;
    const mask = keys.length - 1;
    const key = node * 256 + byte + 1;
    let s = Math.imul(key, 0x9e3779b1) >>> this.#childShift;
    while ((keys[s] as number) !== 0) s = (s + 1) & mask;
    keys[s] = key;
    this.#childNodes[s] = child;
  }

  /** The longest proper token matching bytes at `pos` (there is always one: every byte is). */
  #longest(bytes: Uint8Array, pos: number, n: number): number {
    const keys = this.#childKeys;
    const childNodes = this.#childNodes;
    const nodeToken = this.#nodeToken;
    const mask = keys.length - 1;
    const shift = this.#childShift;
    const chainByte = this.#chainByte;
    let node = 0;
    let best = -1;
    for (let i = pos; i < n; i++) {
      const b = bytes[i] as number;
      if (chainByte[node] === b) {
        node += 1;
        const t = nodeToken[node] as number;
        if (t >= 0) best = t;
        continue;
      }
      const key = node * 256 + b + 1;
      let child = -1;
      for (let s = Math.imul(key, 0x9e3779b1) >>> shift; ; s = (s + 1) & mask) {
        const k = keys[s] as number;
        if (k === key) {
          child = childNodes[s] as number;
          break;
        }
        if (k === 0) break;
      }
      if (child < 0) break;
      node = child;
      const t = nodeToken[node] as number;
      if (t >= 0) best = t;
    }
    return best;
  }

  #makeRoom(): void {
    const keys = this.#cacheKeys as Int32Array;
    if (this.#cached * 2 < keys.length) return;
    if (keys.length >= CACHE_SLOTS) {
      keys.fill(0);
      this.#cached = 0;
    } else this.#growCache();
  }

  /** Whether the bytes of `left` then `right` encode to exactly [left, right]. */
  #isCompatible(left: number, right: number): boolean {
    const keys = this.#cacheKeys;
    if (keys !== null) {
      const key = left * this.#size + right + 1;
      const mask = keys.length - 1;
      for (let s = Math.imul(key, 0x9e3779b1) >>> this.#cacheShift; ; s = (s + 1) & mask) {
        const k = keys[s] as number;
        if (k === key) return this.#cacheValues[s] === 1;
        if (k === 0) break;
      }
      const compatible = this.#decide(left, right);
      this.#makeRoom();
      this.#store(key, compatible ? 1 : 2);
      return compatible;
    }
    const key = left * this.#size + right;
    const known = this.#compatible.get(key);
    if (known !== undefined) return known;
    const compatible = this.#decide(left, right);
    if (this.#compatible.size >= MAX_CACHED_PAIRS) this.#compatible.clear();
    this.#compatible.set(key, compatible);
    return compatible;
  }

  #store(key: number, value: number): void {
    const keys = this.#cacheKeys as Int32Array;
    const mask = keys.length - 1;
    let s = Math.imul(key, 0x9e3779b1) >>> this.#cacheShift;
    while ((keys[s] as number) !== 0) s = (s + 1) & mask;
    keys[s] = key;
    this.#cacheValues[s] = value;
    this.#cached += 1;
  }

  #growCache(): void {
    const keys = this.#cacheKeys as Int32Array;
    const values = this.#cacheValues;
    this.#cacheKeys = new Int32Array(keys.length * 2);
    this.#cacheValues = new Uint8Array(keys.length * 2);
    this.#cacheShift -= 1;
    this.#cached = 0;
    for (let s = 0; s < keys.length; s++) if ((keys[s] as number) !== 0) this.#store(keys[s] as number, values[s] as number);
  }

  /** Runs the merge passes on the two tokens' bytes. */
  #decide(left: number, right: number): boolean {
    this.#decided += 1;
    const ll = this.#length[left] as number;
    const lr = this.#length[right] as number;
    const l = ll + lr;
    if (this.#pair.length < l) {
      this.#pair = new Uint8Array(2 * l);
      this.#pairOut = new Uint32Array(2 * l);
    }
    const pair = this.#pair;
    const sl = this.#start[left] as number;
    const sr = this.#start[right] as number;
    pair.set(this.#bytes.subarray(sl, sl + ll), 0);
    pair.set(this.#bytes.subarray(sr, sr + lr), ll);
    const n = this.#exact.encodeSegment(pair, 0, l, this.#pairOut, 0, 0);
    return n === 2 && this.#pairOut[0] === left && this.#pairOut[1] === right;
  }

  /**
   * Encodes bytes[0, n) into `out` from index `o` as training id + `offset`.
   * Gives up (−1) when it would have to decide more pairs than its allowance
   * (one per {@link BYTES_PER_DECISION} bytes encoded so far, saved up over
   * calls): deciding costs about as much as the merge passes over a few dozen
   * bytes, so on text whose token pairs are mostly new the caller's merge
   * passes are cheaper. The pairs decided so far stay cached, so on text that
   * recurs the search soon finds its pairs known; on text that does not, the
   * decisions cost at most about a tenth of the merge passes.
   * @returns the index after the last id, or −1 when it gave up or (not
   *   expected) found no sequence; the caller then uses the merge passes.
   */
  encode(bytes: Uint8Array, n: number, out: Uint32Array, o: number, offset: number): number {
    this.#allowance = Math.min(MAX_ALLOWANCE, this.#allowance + n / BYTES_PER_DECISION);
    const before = this.#decided;
    const end = this.#search(bytes, n, out, o, offset, before + this.#allowance);
    this.#allowance -= this.#decided - before;
    return end;
  }

  #search(bytes: Uint8Array, n: number, out: Uint32Array, o: number, offset: number, budget: number): number {
    if (this.#dead.length < n + 1) this.#dead = new Uint8Array(Math.max(n + 1, 2 * this.#dead.length));
    const dead = this.#dead;
    dead.fill(0, 0, n + 1);
    const length = this.#length;
    const prefix = this.#prefix;
    let top = o;
    let pos = 0;
    let next = n > 0 ? this.#longest(bytes, 0, n) : -1;
    while (next >= 0) {
      let token = next;
      const last = top > o ? (out[top - 1] as number) : -1;
      for (;;) {
        const end = pos + (length[token] as number);
        if (dead[end] === 0 && (last < 0 || this.#isCompatible(last, token))) {
          if (this.#decided > budget) return -1;
          out[top++] = token;
          pos = end;
          next = pos < n ? this.#longest(bytes, pos, n) : -1;
          break;
        }
        if (this.#decided > budget) return -1;
        const shorter = prefix[token] as number;
        if (shorter >= 0) {
          token = shorter;
          continue;
        }
        // Nothing fits from here after `last`: a dead end; step back one token.
        dead[pos] = 1;
        if (last < 0) return -1;
        top -= 1;
        pos -= length[last] as number;
        next = last;
        break;
      }
    }
    if (pos !== n) return -1;
    for (let i = o; i < top; i++) out[i] = (out[i] as number) + offset;
    return top;
  }
}
