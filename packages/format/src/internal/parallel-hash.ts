/**
 * An optional hook for the in-memory decoder: a hasher that runs the serial
 * FNV-1a (with the fused f64 screen) on another thread while the caller, still
 * synchronous, copies and checks the records. This module is browser-safe: it
 * only holds the hook. The Node entry (`node/sync-hasher.ts`, registered when
 * `@llmcp/format/node` is loaded) provides one; without it, or when it
 * declines or fails, the decoder hashes in-thread with the same result.
 */

/** One synchronous stream hashed elsewhere. */
export interface ParallelScanHasher {
  /**
   * Queues the next bytes of the stream (copied before returning; may wait for ring space).
   * @param bytes - the bytes.
   * @param tag - screen them as f64 words from their first byte, the flags OR-ed under this tag.
   */
  push(bytes: Uint8Array, tag?: number): void;
  /**
   * Waits for everything queued.
   * @returns the hash and the flags per tag, or null when the helper failed (the caller then hashes in-thread).
   */
  finish(): { readonly checksum: bigint; readonly flags: (tag: number) => number } | null;
}

/** Makes a hasher for a stream of `byteLength` bytes, or declines with null. */
export type ParallelScanHasherFactory = (byteLength: number) => ParallelScanHasher | null;

let factory: ParallelScanHasherFactory | null = null;

/**
 * Installs (or, with null, removes) the factory the decoder asks for a parallel hasher.
 * @param make - the factory.
 */
export function setParallelScanHasherFactory(make: ParallelScanHasherFactory | null): void {
  factory = make;
}

/**
 * A parallel hasher for a stream of `byteLength` bytes, if one is installed and accepts.
 * @param byteLength - the stream's length.
 * @returns the hasher or null.
 */
export function parallelScanHasher(byteLength: number): ParallelScanHasher | null {
  try {
    return factory?.(byteLength) ?? null;
  } catch {
    return null;
  }
}
