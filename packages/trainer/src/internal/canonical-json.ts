/**
 * Digests of canonical JSON (canonical-text.ts, re-exported here): job.json
 * digests and config identities, SHA-256 through node:crypto.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-text.ts';

export { canonicalJson } from './canonical-text.ts';
export type { JsonValue } from './canonical-text.ts';

/**
 * SHA-256 of bytes or text, as lowercase hex.
 *
 * @param data - bytes, or text hashed as UTF-8.
 * @returns 64 hex digits.
 */
export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/**
 * SHA-256 of the compact canonical JSON of `value`.
 *
 * @param value - plain JSON data.
 * @returns `sha256:<hex>`.
 */
export function canonicalDigest(value: unknown): string {
  return `sha256:${sha256Hex(canonicalJson(value))}`;
}
