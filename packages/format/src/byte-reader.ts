/**
 * The one bounds-checked cursor over header bytes (../SPEC.md §9.2): every read
 * is little-endian through a DataView and confined to `[start, limit)`; a
 * read past `limit` throws FORMAT_TRUNCATED naming the field and offset.
 */
import { FormatError } from './errors.ts';
import { decodeUtf8Strict } from './utf8.ts';

/** A little-endian, bounds-checked reader over `bytes[start, limit)`. */
export class ByteReader {
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  readonly #limit: number;
  #pos: number;

  /**
   * @param bytes - the buffer (offsets are absolute positions in it).
   * @param start - first readable offset.
   * @param limit - end of the readable region (exclusive), at most `bytes.length`.
   */
  constructor(bytes: Uint8Array, start: number, limit: number) {
    this.#bytes = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.#pos = start;
    this.#limit = Math.min(limit, bytes.length);
  }

  /**
   * Where the next read starts.
   * @returns the current absolute offset.
   */
  get position(): number {
    return this.#pos;
  }

  /**
   * How much is left to read.
   * @returns the number of bytes left before the limit.
   */
  get remaining(): number {
    return this.#limit - this.#pos;
  }

  #need(width: number, field: string): number {
    if (width > this.#limit - this.#pos) {
      throw new FormatError(
        'FORMAT_TRUNCATED',
        `truncated header while reading ${field} at offset ${this.#pos}: expected ${width} byte(s), found ${Math.max(0, this.#limit - this.#pos)} before header end ${this.#limit}`,
        { reason: 'header-read', offset: this.#pos, field, expected: `${width} bytes`, found: `${Math.max(0, this.#limit - this.#pos)} bytes` },
      );
    }
    const at = this.#pos;
    this.#pos += width;
    return at;
  }

  /**
   * @param field - field name for errors.
   * @returns a u8.
   */
  u8(field: string): number {
    return this.#view.getUint8(this.#need(1, field));
  }

  /**
   * @param field - field name for errors.
   * @returns a u16.
   */
  u16(field: string): number {
    return this.#view.getUint16(this.#need(2, field), true);
  }

  /**
   * @param field - field name for errors.
   * @returns a u32.
   */
  u32(field: string): number {
    return this.#view.getUint32(this.#need(4, field), true);
  }

  /**
   * @param field - field name for errors.
   * @returns a u64 as bigint.
   */
  u64(field: string): bigint {
    return this.#view.getBigUint64(this.#need(8, field), true);
  }

  /**
   * @param field - field name for errors.
   * @returns an f64 (bit pattern preserved).
   */
  f64(field: string): number {
    return this.#view.getFloat64(this.#need(8, field), true);
  }

  /**
   * @param length - byte count.
   * @param field - field name for errors.
   * @returns a view (not a copy) of the next `length` bytes.
   */
  bytes(length: number, field: string): Uint8Array {
    const at = this.#need(length, field);
    return this.#bytes.subarray(at, at + length);
  }

  /**
   * Reads a `string` (u32 byte count + UTF-8 bytes, ../SPEC.md §2).
   * @param field - field name for errors.
   * @returns the text, or `undefined` text with its raw bytes when not valid UTF-8.
   */
  string(field: string): { text: string | undefined; raw: Uint8Array; offset: number } {
    const offset = this.#pos;
    const length = this.u32(`${field} length`);
    const raw = this.bytes(length, field);
    return { text: decodeUtf8Strict(raw), raw, offset };
  }
}
