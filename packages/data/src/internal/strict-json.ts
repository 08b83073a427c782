/**
 * A strict JSON reader over UTF-8 bytes (RFC 8259 with the reference's
 * strictness, ../../../../docs/spec/tokenizer-and-data.md §1.2 and §7 item 2):
 *
 * - the input must be valid UTF-8; a byte-order mark is not whitespace;
 * - only space, tab, LF and CR are whitespace; nothing may follow the value;
 * - no trailing commas, comments, leading zeros, `+`, `.5`, `1.`, NaN;
 * - no raw control characters (U+0000–U+001F) inside strings; only the
 *   standard escapes; an unpaired surrogate escape is an error;
 * - an object may not repeat a key;
 * - nesting deeper than {@link MAX_JSON_DEPTH} is an error (no stack overflow);
 * - numbers are kept as their exact source spelling for the schema to judge.
 *
 * Every node carries the byte offset where it starts.
 */
import { utf8ValidUpTo } from '@llmcp/tokenizer';

/** Deepest nesting accepted (the reference's JSON reader uses the same limit). */
export const MAX_JSON_DEPTH = 128;

/**
 * Where a JSON text first nests deeper than `limit` (arrays and objects; the
 * brackets inside strings do not count), or null: a linear scan that lets a
 * reader refuse a document whose later processing (a schema, a copy, a
 * canonical form — recursive walks) would exhaust the stack, before it is
 * parsed. It does not validate the text otherwise.
 *
 * @param text - a JSON text (valid or not).
 * @param limit - the deepest nesting accepted (default {@link MAX_JSON_DEPTH}).
 * @returns the index (in UTF-16 code units) of the bracket that goes deeper than `limit`, or null.
 * @example
 * ```ts
 * jsonDepthExceeded('[[1]]', 1); // 1
 * jsonDepthExceeded('{"a":"[[["}'); // null
 * ```
 */
export function jsonDepthExceeded(text: string, limit: number = MAX_JSON_DEPTH): number | null {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i += 1; // backslash: the next unit is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth += 1;
      if (depth > limit) return i;
    } else if (c === 0x5d || c === 0x7d) depth -= 1;
  }
  return null;
}

/** A parsed JSON value with source offsets. */
export type JsonNode =
  | { readonly kind: 'null'; readonly offset: number }
  | { readonly kind: 'boolean'; readonly offset: number; readonly value: boolean }
  | { readonly kind: 'number'; readonly offset: number; readonly raw: string }
  | { readonly kind: 'string'; readonly offset: number; readonly value: string }
  | { readonly kind: 'array'; readonly offset: number; readonly items: readonly JsonNode[] }
  | { readonly kind: 'object'; readonly offset: number; readonly members: readonly JsonMember[] };

/** One object member. */
export interface JsonMember {
  readonly key: string;
  readonly keyOffset: number;
  readonly value: JsonNode;
}

/** A syntax error: what was expected and the byte offset. */
export class StrictJsonError extends Error {
  override readonly name = 'StrictJsonError' as const;
  readonly offset: number;
  constructor(message: string, offset: number) {
    super(message);
    this.offset = offset;
  }
}

const DECODER = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function describeByte(b: number | undefined): string {
  if (b === undefined) return 'end of input';
  if (b >= 0x20 && b < 0x7f) return `'${String.fromCharCode(b)}'`;
  return `byte 0x${b.toString(16).padStart(2, '0')}`;
}

/**
 * Parses one JSON document strictly.
 * @param bytes - the raw file bytes.
 * @returns the root node.
 * @throws StrictJsonError with the byte offset of the first problem.
 */
export function parseStrictJson(bytes: Uint8Array): JsonNode {
  const valid = utf8ValidUpTo(bytes);
  if (valid !== bytes.length) throw new StrictJsonError(`input is not valid UTF-8 at byte ${valid}`, valid);
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    throw new StrictJsonError('input starts with a byte-order mark (U+FEFF), which is not JSON whitespace', 0);
  }
  const parser = new Parser(bytes);
  parser.skipWhitespace();
  const root = parser.value(0);
  parser.skipWhitespace();
  if (parser.pos < bytes.length) throw new StrictJsonError(`expected end of input after the JSON value, found ${describeByte(bytes[parser.pos])}`, parser.pos);
  return root;
}

class Parser {
  pos = 0;
  readonly #bytes: Uint8Array;

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
  }

  skipWhitespace(): void {
    const b = this.#bytes;
    while (this.pos < b.length) {
      const c = b[this.pos];
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) this.pos += 1;
      else break;
    }
  }

  #fail(expected: string): never {
    throw new StrictJsonError(`expected ${expected}, found ${describeByte(this.#bytes[this.pos])}`, this.pos);
  }

  value(depth: number): JsonNode {
    const b = this.#bytes;
    const start = this.pos;
    const c = b[start];
    switch (c) {
      case 0x7b: // {
        return this.#object(depth + 1);
      case 0x5b: // [
        return this.#array(depth + 1);
      case 0x22: // "
        return { kind: 'string', offset: start, value: this.string() };
      case 0x74: // t
        this.#literal('true');
        return { kind: 'boolean', offset: start, value: true };
      case 0x66: // f
        this.#literal('false');
        return { kind: 'boolean', offset: start, value: false };
      case 0x6e: // n
        this.#literal('null');
        return { kind: 'null', offset: start };
      default:
        if (c === 0x2d || (c !== undefined && c >= 0x30 && c <= 0x39)) return this.#number();
        return this.#fail('a JSON value');
    }
  }

  #literal(word: string): void {
    for (let i = 0; i < word.length; i++) {
      if (this.#bytes[this.pos] !== word.charCodeAt(i)) this.#fail(`'${word}'`);
      this.pos += 1;
    }
  }

  #number(): JsonNode {
    const b = this.#bytes;
    const start = this.pos;
    const isDigit = (x: number | undefined): boolean => x !== undefined && x >= 0x30 && x <= 0x39;
    if (b[this.pos] === 0x2d) this.pos += 1;
    if (b[this.pos] === 0x30) {
      this.pos += 1;
      if (isDigit(b[this.pos])) throw new StrictJsonError('leading zeros are not allowed in JSON numbers', start);
    } else if (isDigit(b[this.pos])) {
      while (isDigit(b[this.pos])) this.pos += 1;
    } else this.#fail('a digit');
    if (b[this.pos] === 0x2e) {
      this.pos += 1;
      if (!isDigit(b[this.pos])) this.#fail('a digit after the decimal point');
      while (isDigit(b[this.pos])) this.pos += 1;
    }
    if (b[this.pos] === 0x65 || b[this.pos] === 0x45) {
      this.pos += 1;
      if (b[this.pos] === 0x2b || b[this.pos] === 0x2d) this.pos += 1;
      if (!isDigit(b[this.pos])) this.#fail('a digit in the exponent');
      while (isDigit(b[this.pos])) this.pos += 1;
    }
    return { kind: 'number', offset: start, raw: DECODER.decode(b.subarray(start, this.pos)) };
  }

  #hex4(): number {
    const b = this.#bytes;
    let value = 0;
    for (let i = 0; i < 4; i++) {
      const c = b[this.pos];
      let d: number;
      if (c !== undefined && c >= 0x30 && c <= 0x39) d = c - 0x30;
      else if (c !== undefined && c >= 0x61 && c <= 0x66) d = c - 0x57;
      else if (c !== undefined && c >= 0x41 && c <= 0x46) d = c - 0x37;
      else return this.#fail('a hex digit in a \\u escape');
      value = value * 16 + d;
      this.pos += 1;
    }
    return value;
  }

  /** Parses a string starting at the opening quote. */
  string(): string {
    const b = this.#bytes;
    this.pos += 1; // opening quote
    let out = '';
    let runStart = this.pos;
    for (;;) {
      const c = b[this.pos];
      if (c === undefined) throw new StrictJsonError('unterminated string', this.pos);
      if (c === 0x22) {
        out += DECODER.decode(b.subarray(runStart, this.pos));
        this.pos += 1;
        return out;
      }
      if (c < 0x20) throw new StrictJsonError(`raw control character 0x${c.toString(16).padStart(2, '0')} inside a string (it must be escaped)`, this.pos);
      if (c !== 0x5c) {
        this.pos += 1;
        continue;
      }
      out += DECODER.decode(b.subarray(runStart, this.pos));
      const escapeAt = this.pos;
      this.pos += 1;
      const e = b[this.pos];
      this.pos += 1;
      switch (e) {
        case 0x22:
          out += '"';
          break;
        case 0x5c:
          out += '\\';
          break;
        case 0x2f:
          out += '/';
          break;
        case 0x62:
          out += '\b';
          break;
        case 0x66:
          out += '\f';
          break;
        case 0x6e:
          out += '\n';
          break;
        case 0x72:
          out += '\r';
          break;
        case 0x74:
          out += '\t';
          break;
        case 0x75: {
          const unit = this.#hex4();
          if (unit >= 0xdc00 && unit <= 0xdfff) throw new StrictJsonError(`unpaired surrogate escape \\u${unit.toString(16)} (a low surrogate without a high one)`, escapeAt);
          if (unit >= 0xd800 && unit <= 0xdbff) {
            if (b[this.pos] !== 0x5c || b[this.pos + 1] !== 0x75) throw new StrictJsonError(`unpaired surrogate escape \\u${unit.toString(16)} (not followed by a low surrogate escape)`, escapeAt);
            this.pos += 2;
            const low = this.#hex4();
            if (low < 0xdc00 || low > 0xdfff) throw new StrictJsonError(`unpaired surrogate escape \\u${unit.toString(16)} (followed by \\u${low.toString(16)}, not a low surrogate)`, escapeAt);
            out += String.fromCharCode(unit, low);
          } else out += String.fromCharCode(unit);
          break;
        }
        default:
          this.pos = escapeAt + 1;
          this.#fail('a valid escape character');
      }
      runStart = this.pos;
    }
  }

  #array(depth: number): JsonNode {
    const start = this.pos;
    if (depth > MAX_JSON_DEPTH) throw new StrictJsonError(`JSON nesting deeper than ${MAX_JSON_DEPTH}`, start);
    this.pos += 1;
    const items: JsonNode[] = [];
    this.skipWhitespace();
    if (this.#bytes[this.pos] === 0x5d) {
      this.pos += 1;
      return { kind: 'array', offset: start, items };
    }
    for (;;) {
      this.skipWhitespace();
      items.push(this.value(depth));
      this.skipWhitespace();
      const c = this.#bytes[this.pos];
      if (c === 0x2c) {
        this.pos += 1;
        this.skipWhitespace();
        if (this.#bytes[this.pos] === 0x5d) this.#fail('a value after the comma (trailing commas are not allowed)');
        continue;
      }
      if (c === 0x5d) {
        this.pos += 1;
        return { kind: 'array', offset: start, items };
      }
      this.#fail("',' or ']'");
    }
  }

  #object(depth: number): JsonNode {
    const start = this.pos;
    if (depth > MAX_JSON_DEPTH) throw new StrictJsonError(`JSON nesting deeper than ${MAX_JSON_DEPTH}`, start);
    this.pos += 1;
    const members: JsonMember[] = [];
    const keys = new Set<string>();
    this.skipWhitespace();
    if (this.#bytes[this.pos] === 0x7d) {
      this.pos += 1;
      return { kind: 'object', offset: start, members };
    }
    for (;;) {
      this.skipWhitespace();
      if (this.#bytes[this.pos] !== 0x22) this.#fail(members.length > 0 ? 'a member name (trailing commas are not allowed)' : 'a member name');
      const keyOffset = this.pos;
      const key = this.string();
      if (keys.has(key)) throw new StrictJsonError(`duplicate member ${JSON.stringify(key)} in an object`, keyOffset);
      keys.add(key);
      this.skipWhitespace();
      if (this.#bytes[this.pos] !== 0x3a) this.#fail("':'");
      this.pos += 1;
      this.skipWhitespace();
      members.push({ key, keyOffset, value: this.value(depth) });
      this.skipWhitespace();
      const c = this.#bytes[this.pos];
      if (c === 0x2c) {
        this.pos += 1;
        continue;
      }
      if (c === 0x7d) {
        this.pos += 1;
        return { kind: 'object', offset: start, members };
      }
      this.#fail("',' or '}'");
    }
  }
}
