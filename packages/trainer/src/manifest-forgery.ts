/**
 * Forged manifests, for negative-control tests only (`@llmcp/trainer/testing`):
 * a manifest's statement rewritten (a parent link changed or removed) and
 * written back in llmcp's canonical form, keeping its old signature, dropping
 * it, or re-signed with another key — what an attacker without the run's key
 * can produce. Tests show that verification names each one.
 */
import { TrainerError } from './errors.ts';
import { encodeBundleJson, parseManifest } from './provenance.ts';
import { signPayload, type SigningKey } from './signing-key.ts';
import { canonicalJson } from './internal/canonical-text.ts';

/** How a forged manifest is signed: its old signature kept (now over another payload), none, or a new one by `key`. */
export type ForgedSignature = 'keep' | 'none' | { readonly key: SigningKey };

/**
 * Rewrites a manifest.
 *
 * @param bytes - an llmcp manifest.
 * @param forgery - `edit` changes the statement in place (JSON, `predicate.llmcp` is the lineage); `signature` says how it is signed.
 * @param forgery.edit - the change (default: none).
 * @param forgery.signature - how the result is signed.
 * @returns the forged manifest's bytes, canonical.
 * @throws TrainerError `TRAINER_MANIFEST_INVALID` when `bytes` is not a manifest.
 */
export function forgeManifest(bytes: Uint8Array, forgery: { readonly edit?: (statement: { predicate: { llmcp: Record<string, unknown> } } & Record<string, unknown>) => void; readonly signature: ForgedSignature }): Uint8Array {
  const parsed = parseManifest(bytes, 'manifest');
  const statement = JSON.parse(new TextDecoder().decode(parsed.payload)) as { predicate: { llmcp: Record<string, unknown> } } & Record<string, unknown>;
  forgery.edit?.(statement);
  const payload = new TextEncoder().encode(canonicalJson(statement));
  const { signature } = forgery;
  if (signature === 'none') return encodeBundleJson({ payload, signature: null, hint: null });
  if (signature === 'keep') {
    const old = parsed.signatures[0];
    if (old === undefined) throw new TrainerError('TRAINER_MANIFEST_INVALID', 'the manifest has no signature to keep', {});
    return encodeBundleJson({ payload, signature: old, hint: parsed.hint });
  }
  return encodeBundleJson({ payload, signature: { sig: signPayload(signature.key, payload) }, hint: signature.key.hint });
}
