/**
 * What a file is, from its first bytes, and the one entry point that reads
 * the header of a foreign (non-LLMCP35) model file: safetensors or GGUF.
 */
import { MAGIC } from '../tags.ts';
import { ForeignFileError } from './errors.ts';
import { readGgufHeader, type GgufHeader } from './gguf.ts';
import { MAX_SAFETENSORS_HEADER_BYTES, readSafetensorsHeader, type ForeignReadOptions, type SafetensorsHeader } from './safetensors.ts';

/** The kinds of model file {@link detectFileKind} tells apart. */
export type FileKind = 'llmcp35' | 'safetensors' | 'gguf' | 'unknown';

/** A parsed foreign header. */
export type ForeignFile = SafetensorsHeader | GgufHeader;

/** Bytes {@link detectFileKind} looks at. */
export const FILE_KIND_PREFIX_BYTES = 9;

/**
 * Tells an LLMCP35 checkpoint, a safetensors file and a GGUF file apart by
 * their first bytes: `LLMCP35\0`; `GGUF`; or a u64 header length of at
 * least 2 and at most the safetensors limit (and, when the file length is
 * known, within the file) followed by `{`. Anything else is `unknown`.
 *
 * @param bytes - the file's first bytes ({@link FILE_KIND_PREFIX_BYTES} suffice).
 * @param fileLength - the whole file's length (default `bytes.length`).
 * @returns the kind.
 * @example
 * ```ts
 * detectFileKind(bytes); // 'safetensors'
 * ```
 */
export function detectFileKind(bytes: Uint8Array, fileLength: number = bytes.length): FileKind {
  if (bytes.length >= MAGIC.length && MAGIC.every((b, i) => bytes[i] === b)) return 'llmcp35';
  if (bytes.length >= 4 && bytes[0] === 0x47 && bytes[1] === 0x47 && bytes[2] === 0x55 && bytes[3] === 0x46) return 'gguf';
  if (bytes.length >= 9 && bytes[8] === 0x7b) {
    const n = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getBigUint64(0, true);
    if (n >= 2n && n <= BigInt(MAX_SAFETENSORS_HEADER_BYTES) && 8n + n <= BigInt(fileLength)) return 'safetensors';
  }
  return 'unknown';
}

/**
 * Reads the header of a safetensors or GGUF file (metadata and tensor
 * table; never the tensor data).
 *
 * @param bytes - the file, or its beginning (then give `fileLength`).
 * @param options - the whole file's length.
 * @returns the parsed header.
 * @throws ForeignFileError `FOREIGN_UNKNOWN_KIND` for anything else (an LLMCP35 file too), or the reader's error.
 * @example
 * ```ts
 * const file = readForeignFile(bytes);
 * console.log(file.kind, file.tensors.length);
 * ```
 */
export function readForeignFile(bytes: Uint8Array, options: ForeignReadOptions = {}): ForeignFile {
  const kind = detectFileKind(bytes, options.fileLength ?? bytes.length);
  if (kind === 'safetensors') return readSafetensorsHeader(bytes, options);
  if (kind === 'gguf') return readGgufHeader(bytes, options);
  throw new ForeignFileError('FOREIGN_UNKNOWN_KIND', kind === 'llmcp35' ? 'this is an LLMCP35 checkpoint, not a foreign file' : 'neither a safetensors file (u64 header length, then "{") nor a GGUF file ("GGUF")', { offset: 0 });
}
