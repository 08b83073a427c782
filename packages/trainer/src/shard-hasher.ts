/**
 * SHA-256 of file shards for provenance manifests (Node, node:crypto's
 * hardware SHA-256): from bytes passing by in file order (a load that
 * streams the file once, an export's bytes in memory), or from a file on
 * disk in bounded memory. The shards are the manifest's ({@link shardRanges}).
 */
import { createHash, type Hash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { SHARD_SIZE } from './provenance.ts';

/** The digest of one shard of a file. */
export interface ShardDigest {
  /** The file, relative to the manifest (`/`-separated). */
  readonly path: string;
  readonly start: number;
  readonly end: number;
  /** Lowercase hex SHA-256. */
  readonly digest: string;
}

/**
 * Hashes a file's shards from its bytes in order, in any chunking.
 *
 * @example
 * ```ts
 * const h = new ShardHasher('state.llmcp');
 * await loadCheckpoint(file, { onFileBytes: (chunk) => h.update(chunk) });
 * const shards = h.finish();
 * ```
 */
export class ShardHasher {
  readonly #path: string;
  readonly #shardSize: number;
  readonly #done: ShardDigest[] = [];
  #hash: Hash | null = null;
  #start = 0;
  #at = 0;

  /**
   * @param path - the file's name in the manifest.
   * @param shardSize - the shard size (default {@link SHARD_SIZE}).
   */
  constructor(path: string, shardSize: number = SHARD_SIZE) {
    this.#path = path;
    this.#shardSize = shardSize;
  }

  /**
   * Feeds the next bytes of the file.
   *
   * @param chunk - bytes (read during the call only).
   * @returns this hasher.
   */
  update(chunk: Uint8Array): this {
    let offset = 0;
    while (offset < chunk.length) {
      this.#hash ??= createHash('sha256');
      const room = this.#start + this.#shardSize - this.#at;
      const take = Math.min(room, chunk.length - offset);
      this.#hash.update(chunk.subarray(offset, offset + take));
      offset += take;
      this.#at += take;
      if (this.#at === this.#start + this.#shardSize) this.#close();
    }
    return this;
  }

  #close(): void {
    if (this.#hash === null) return;
    this.#done.push({ path: this.#path, start: this.#start, end: this.#at, digest: this.#hash.digest('hex') });
    this.#hash = null;
    this.#start = this.#at;
  }

  /**
   * Ends the file.
   *
   * @returns every shard's digest (none for an empty file).
   */
  finish(): ShardDigest[] {
    this.#close();
    return [...this.#done];
  }
}

/**
 * The shard digests of bytes in memory.
 *
 * @param path - the file's name in the manifest.
 * @param bytes - its content.
 * @returns the shard digests.
 */
export function shardBytes(path: string, bytes: Uint8Array): ShardDigest[] {
  return new ShardHasher(path).update(bytes).finish();
}

/** Bytes read at a time by {@link shardFile}. */
const READ_BYTES = 4 << 20;

/**
 * The shard digests of a file on disk, read in bounded memory.
 *
 * @param file - the file.
 * @param path - its name in the manifest.
 * @param shardSize - the shard size (default {@link SHARD_SIZE}).
 * @returns the shard digests and the size read.
 * @throws the read error (ENOENT, EISDIR, …).
 */
export function shardFile(file: string, path: string, shardSize: number = SHARD_SIZE): { shards: ShardDigest[]; size: number } {
  const fd = openSync(file, 'r');
  try {
    if (!fstatSync(fd).isFile()) throw Object.assign(new Error(`${file} is not a regular file`), { code: 'EISDIR', path: file });
    const hasher = new ShardHasher(path, shardSize);
    const buffer = new Uint8Array(READ_BYTES);
    let size = 0;
    for (let n = readSync(fd, buffer, 0, buffer.length, null); n > 0; n = readSync(fd, buffer, 0, buffer.length, null)) {
      hasher.update(buffer.subarray(0, n));
      size += n;
    }
    return { shards: hasher.finish(), size };
  } finally {
    closeSync(fd);
  }
}
