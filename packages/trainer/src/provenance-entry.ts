/**
 * `@llmcp/trainer/provenance`: the provenance manifests' reader, checker and
 * lineage chain, browser-safe (WebCrypto for signatures, no Node built-ins):
 * what the inspector shares with `llmcp verify`.
 */
export {
  MANIFEST_FILE,
  MANIFEST_SUFFIX,
  LINEAGE_DIR,
  SHARD_SIZE,
  LINEAGE_FORMAT,
  IN_TOTO_STATEMENT_TYPE,
  MODEL_SIGNING_PREDICATE_TYPE,
  DSSE_PAYLOAD_TYPE,
  SIGSTORE_BUNDLE_MEDIA_TYPE,
  parseManifest,
  importTrustedKey,
  verifyManifestSignature,
  shardRanges,
  pae,
} from './provenance.ts';
export type { Lineage, LineageParent, LineageVia, ManifestResource, ParsedManifest, SignatureStatus, TrustedKey, KeyAlgorithm } from './provenance.ts';
export { chainContext, indexChain, walkChain } from './lineage-chain.ts';
export type { ChainEntry, ChainContext, ChainEvents, ChainLink, ChainIndex, LinkStatus } from './lineage-chain.ts';
