/** Canonical serialization and identity shared by both tokenizer kinds. */
import { sha256Hex } from '../sha256.ts';
import type { TokenizerJSON } from '../tokenizer.ts';

const ENCODER = new TextEncoder();

/**
 * The canonical bytes of a tokenizer: the UTF-8 of `JSON.stringify` of its
 * stable JSON form (members in the fixed order the classes build them, no
 * whitespace; every value is an integer or a lowercase hex string, so the
 * spelling is unique).
 */
export function canonicalBytes(json: TokenizerJSON): Uint8Array {
  return ENCODER.encode(JSON.stringify(json));
}

/** `sha256:<hex>` of {@link canonicalBytes}. */
export function identityOf(json: TokenizerJSON): string {
  return `sha256:${sha256Hex(canonicalBytes(json))}`;
}
