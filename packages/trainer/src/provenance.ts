/**
 * Provenance manifests, browser-safe: the one reader and checker of the
 * manifest that llmcp writes beside every published checkpoint slot and
 * every export (`model.sig`, or `<file>.sig` beside a single exported
 * file), shared by the trainer, the CLI and the inspector.
 *
 * The layout is the OpenSSF model-signing format (sigstore/model-transparency,
 * predicate v1.0), byte for byte what its `model_signing` tool reads:
 *
 * - the file is a Sigstore bundle (`application/vnd.dev.sigstore.bundle.v0.3+json`)
 *   holding a DSSE envelope (secure-systems-lab/dsse v1.0.0) whose payload is an
 *   in-toto Statement v1 (`https://in-toto.io/Statement/v1`);
 * - the statement's predicate (`https://model_signing/signature/v1.0`) lists
 *   every file as shards of {@link SHARD_SIZE} bytes (`serialization.method`
 *   `shards`; resource names `path:start:end`, algorithm
 *   `sha256-sharded-<size>`, hex digests, sorted by path then offset), and the
 *   subject's digest is the SHA-256 of the concatenated resource digests;
 * - the signature, when there is one, is over DSSE's pre-authentication
 *   encoding ({@link pae}) of the payload: ECDSA (P-256 with SHA-256, P-384
 *   with SHA-384; DER) or Ed25519, with the SHA-256 of the public key's PEM as
 *   the bundle's `publicKey.hint`. An unsigned manifest has no signatures (and
 *   no hint): its hashes and lineage are still checked.
 *
 * llmcp's lineage goes in the predicate under `llmcp`, where v1.0 lets a
 * producer add fields ("any other field should be ignored by verifiers
 * adhering to v1.0"): run id, step, how the checkpoint came from its parent
 * (`via`), the parent's identity, the config digest, the input identities,
 * the implementation, the engine and the tool's version (see {@link Lineage}).
 *
 * Shards rather than whole files: the state file's first bytes hold its
 * LLMCP35 checksum, known only once every byte is written, so a SHA-256 of
 * the whole file could only start after the write; with shards every shard
 * but the first is hashed while the file is being written.
 */
import { z } from 'zod';
import { sha256Hex } from '@llmcp/tokenizer';
import { TrainerError } from './errors.ts';
import { canonicalJson } from './internal/canonical-text.ts';

/** The manifest's file name inside a checkpoint slot or an exported directory (the `model_signing` tool's default). */
export const MANIFEST_FILE = 'model.sig';
/** A run's lineage store: every checkpoint manifest it published (lineage-store.ts). */
export const LINEAGE_DIR = 'lineage';
/** The suffix of the manifest beside a single exported file (`model.safetensors.sig`). */
export const MANIFEST_SUFFIX = '.sig';
/** in-toto Statement v1. */
export const IN_TOTO_STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';
/** The OpenSSF model-signing predicate, v1.0. */
export const MODEL_SIGNING_PREDICATE_TYPE = 'https://model_signing/signature/v1.0';
/** The DSSE payload type of an in-toto statement. */
export const DSSE_PAYLOAD_TYPE = 'application/vnd.in-toto+json';
/** The Sigstore bundle media type `model_signing` writes and reads for key-based signatures. */
export const SIGSTORE_BUNDLE_MEDIA_TYPE = 'application/vnd.dev.sigstore.bundle.v0.3+json';
/** Shard size of the manifests llmcp writes (the state writer's chunk: every shard after the first is final once written). */
export const SHARD_SIZE: number = 4 * 1024 * 1024;
/** The format tag of llmcp's part of the predicate. */
export const LINEAGE_FORMAT = 'llmcp-lineage/1';
/** Largest manifest file read (a 2.6 GB state has 620 shards: about 100 kB). */
export const MAX_MANIFEST_BYTES: number = 64 * 1024 * 1024;

/** How a checkpoint came from its parent. */
export type LineageVia =
  /** A fresh model (no parent). */
  | 'init'
  /** Trained on from the parent in the same process. */
  | 'train'
  /** Trained on from the parent after a resume (the first save of a resumed process). */
  | 'resume'
  /** The parent under a new policy (same weights; `llmcp pivot`, or a resume that changed the step budget). */
  | 'pivot'
  /** The parent copied into a new run (`llmcp fork`; the parent is in another run). */
  | 'fork'
  /** An export of the parent. */
  | 'export';

/** The checkpoint a manifest's checkpoint or export came from. */
export interface LineageParent {
  /** Its run id (null: a bare checkpoint file outside any run). */
  readonly run: string | null;
  readonly step: number;
  /** Its `job.json` digest (`sha256:…`, the job's own `digest` field), or null for a bare checkpoint file. */
  readonly job: string | null;
  /** The subject digest of its manifest (`sha256:…`), or null when it has none (written before manifests, or a bare file). */
  readonly manifest: string | null;
  /** Its state file's LLMCP35 checksum label (`fnv1a64:…`). */
  readonly state: string;
}

/** llmcp's part of the predicate: where the checkpoint (or export) comes from. */
export interface Lineage {
  readonly format: typeof LINEAGE_FORMAT;
  readonly kind: 'checkpoint' | 'export';
  /** The run id (an export: the source checkpoint's, or null for a bare file). */
  readonly run: string | null;
  readonly step: number;
  readonly via: LineageVia;
  /** Null exactly for `via: 'init'`. */
  readonly parent: LineageParent | null;
  /** `sha256:` of the canonical config (the job's `configDigest`), or null when unknown (a bare file's export). */
  readonly config: string | null;
  /** Identities of the corpus, the split and the tokenizer (as the job records them), or null when unknown. */
  readonly inputs: { readonly corpus: string; readonly split: string; readonly tokenizer: string } | null;
  /** The numerics version (`inputs.implementation.id` of the job), or null when unknown. */
  readonly implementation: string | null;
  /** What computed the steps: the config's `engine` (absent: the llmcp engine) with its world size; null for exports. */
  readonly engine: { readonly kind: 'llmcp' | 'torch'; readonly worldSize: number } | null;
  /** The llmcp package that wrote the manifest and its version. */
  readonly tool: { readonly name: string; readonly version: string };
  /** Exports: the format written and its element type. */
  readonly export?: { readonly format: string; readonly dtype: string | null };
}

/** One resource of the predicate: a shard of a file (or a whole file, for manifests of the `files` method). */
export interface ManifestResource {
  /** As written: `path:start:end` (shards) or `path` (files). */
  readonly name: string;
  /** The file, relative to the manifest's directory (`/`-separated). */
  readonly path: string;
  readonly start: number;
  /** Exclusive; null for a whole file (`files` method). */
  readonly end: number | null;
  readonly algorithm: string;
  /** Lowercase hex. */
  readonly digest: string;
}

/** A parsed and structurally checked manifest (signature not checked: see {@link verifyManifestSignature}). */
export interface ParsedManifest {
  /** The DSSE payload bytes (what is signed, through {@link pae}). */
  readonly payload: Uint8Array;
  /** The signatures (raw bytes) and their key ids. */
  readonly signatures: readonly { readonly sig: Uint8Array; readonly keyid: string }[];
  /** The bundle's public key hint (SHA-256 hex of the signer's public key PEM), or null. */
  readonly hint: string | null;
  readonly subject: { readonly name: string; readonly digest: string };
  readonly serialization: { readonly method: 'shards' | 'files'; readonly shardSize: number | null; readonly ignorePaths: readonly string[] };
  readonly resources: readonly ManifestResource[];
  /** llmcp's lineage, or null for a manifest written by another tool. */
  readonly lineage: Lineage | null;
  /** `sha256:<subject digest>`: the identity of the checkpoint or export, as parent links name it. */
  readonly digest: string;
}

// ── encoding helpers (no Node built-ins) ──────────────────────────────────────

const utf8 = new TextEncoder();

/**
 * DSSE's pre-authentication encoding: `"DSSEv1" SP LEN(type) SP type SP LEN(body) SP body`,
 * lengths as ASCII decimals of byte counts (secure-systems-lab/dsse v1.0.0, its protocol document).
 *
 * @param payloadType - the payload type (UTF-8).
 * @param payload - the payload bytes.
 * @returns the bytes a signature covers.
 * @example
 * ```ts
 * new TextDecoder().decode(pae('http://example.com/HelloWorld', new TextEncoder().encode('hello world')));
 * // 'DSSEv1 29 http://example.com/HelloWorld 11 hello world'
 * ```
 */
export function pae(payloadType: string, payload: Uint8Array): Uint8Array {
  const type = utf8.encode(payloadType);
  const head = utf8.encode(`DSSEv1 ${type.length} `);
  const middle = utf8.encode(` ${payload.length} `);
  const out = new Uint8Array(head.length + type.length + middle.length + payload.length);
  out.set(head, 0);
  out.set(type, head.length);
  out.set(middle, head.length + type.length);
  out.set(payload, head.length + type.length + middle.length);
  return out;
}

/**
 * Standard base64 (with padding) of bytes.
 *
 * @param bytes - the data.
 * @returns the text.
 */
export function base64Encode(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/**
 * Decodes standard base64, refusing anything but its one canonical spelling
 * (padding included, unused bits zero): two spellings of the same bytes
 * would let a file change while what it says stays the same.
 *
 * @param text - the text.
 * @returns the bytes, or null when it is not canonical base64.
 */
export function base64Decode(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) return null;
  let binary: string;
  try {
    binary = atob(text);
  } catch {
    return null;
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
  return base64Encode(bytes) === text ? bytes : null;
}

/**
 * The resource name of a shard (`path:start:end`), as `model_signing` spells it.
 *
 * @param path - the file, relative to the manifest.
 * @param start - first byte.
 * @param end - one past the last byte.
 * @returns the name.
 */
export function shardName(path: string, start: number, end: number): string {
  return `${path}:${start}:${end}`;
}

/**
 * The digest algorithm name of a shard resource (`sha256-sharded-<size>`), as `model_signing` spells it.
 *
 * @param shardSize - the shard size.
 * @returns the name.
 */
export function shardAlgorithm(shardSize: number): string {
  return `sha256-sharded-${shardSize}`;
}

/**
 * The shards of a file: `[0, S)`, `[S, 2S)`, …, the last one ending at the
 * file's end; none for an empty file (as `model_signing` cuts them).
 *
 * @param size - the file's size.
 * @param shardSize - the shard size.
 * @returns the `[start, end)` ranges.
 */
export function shardRanges(size: number, shardSize: number = SHARD_SIZE): [number, number][] {
  const out: [number, number][] = [];
  for (let start = 0; start < size; start += shardSize) out.push([start, Math.min(size, start + shardSize)]);
  return out;
}

/** The order of resources: by path (component-wise, as POSIX paths compare), then by start. */
function compareResources(a: { readonly path: string; readonly start: number }, b: { readonly path: string; readonly start: number }): number {
  const pa = a.path.split('/');
  const pb = b.path.split('/');
  for (let i = 0; i < Math.min(pa.length, pb.length); i += 1) {
    const x = pa[i] as string;
    const y = pb[i] as string;
    if (x !== y) return x < y ? -1 : 1;
  }
  return pa.length - pb.length || a.start - b.start;
}

/**
 * Sorts resources in the predicate's canonical order (path, then offset).
 *
 * @param resources - the resources.
 * @returns a sorted copy.
 */
export function sortResources<T extends { readonly path: string; readonly start: number }>(resources: readonly T[]): T[] {
  return [...resources].sort(compareResources);
}

function hexToBytes(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i += 1) out[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/**
 * The subject digest: SHA-256 over the resource digests' bytes, in the order
 * the predicate lists them (`model_signing`'s rule).
 *
 * @param resources - the resources, in predicate order.
 * @returns lowercase hex.
 */
export function rootDigest(resources: readonly { readonly digest: string }[]): string {
  const all = new Uint8Array(32 * resources.length);
  resources.forEach((r, i) => all.set(hexToBytes(r.digest), 32 * i));
  return sha256Hex(all);
}

/** A relative POSIX path that stays inside its directory: no empty, `.` or `..` segment, no backslash, no NUL. */
function isContainedPath(p: string): boolean {
  return p.length > 0 && !p.includes('\\') && !p.includes('\0') && p.split('/').every((s) => s !== '' && s !== '.' && s !== '..');
}

// ── schema ───────────────────────────────────────────────────────────────────

const hex64 = z.string().regex(/^[0-9a-f]{64}$/);
const sha = z.string().regex(/^sha256:[0-9a-f]{64}$/);
const count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const text = z.string().min(1).max(4096);

const lineageSchema = z.strictObject({
  format: z.literal(LINEAGE_FORMAT),
  kind: z.enum(['checkpoint', 'export']),
  run: text.nullable(),
  step: count,
  via: z.enum(['init', 'train', 'resume', 'pivot', 'fork', 'export']),
  parent: z
    .strictObject({
      run: text.nullable(),
      step: count,
      job: sha.nullable(),
      manifest: sha.nullable(),
      state: z.string().regex(/^fnv1a64:[0-9a-f]{16}$/),
    })
    .nullable(),
  config: sha.nullable(),
  inputs: z.strictObject({ corpus: sha, split: sha, tokenizer: text }).nullable(),
  implementation: text.nullable(),
  engine: z.strictObject({ kind: z.enum(['llmcp', 'torch']), worldSize: z.number().int().positive().max(1 << 20) }).nullable(),
  tool: z.strictObject({ name: text, version: text }),
  export: z.strictObject({ format: text, dtype: text.nullable() }).optional(),
});

const statementSchema = z.object({
  _type: z.literal(IN_TOTO_STATEMENT_TYPE),
  subject: z.array(z.object({ name: z.string().max(4096), digest: z.object({ sha256: hex64 }) })).length(1),
  predicateType: z.literal(MODEL_SIGNING_PREDICATE_TYPE),
  predicate: z.object({
    serialization: z.object({
      method: z.enum(['shards', 'files']),
      hash_type: z.literal('sha256'),
      allow_symlinks: z.literal(false),
      shard_size: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
      ignore_paths: z.array(z.string().max(4096)).max(4096).optional(),
    }),
    resources: z.array(z.strictObject({ name: z.string().min(1).max(8192), algorithm: z.string().min(1).max(256), digest: hex64 })).min(1).max(1_000_000),
    llmcp: z.unknown().optional(),
  }),
});

const bundleSchema = z.strictObject({
  mediaType: z.literal(SIGSTORE_BUNDLE_MEDIA_TYPE),
  verificationMaterial: z.strictObject({
    publicKey: z.strictObject({ hint: hex64 }).optional(),
    tlogEntries: z.array(z.unknown()).max(0),
  }),
  dsseEnvelope: z.strictObject({
    payload: z.string().min(1),
    payloadType: z.literal(DSSE_PAYLOAD_TYPE),
    signatures: z.array(z.strictObject({ sig: z.string().min(1).max(4096), keyid: z.string().max(256) })).max(1),
  }),
});

function invalid(where: string, what: string): never {
  throw new TrainerError('TRAINER_MANIFEST_INVALID', `${where} is not a valid provenance manifest: ${what}`, { path: where });
}

function firstIssue(error: z.ZodError, root: string): string {
  const first = error.issues[0];
  const field = first === undefined ? '' : first.path.map(String).join('.');
  return `${root}${field === '' ? '' : `.${field}`}: ${first?.message ?? 'invalid'}`;
}

function parseResource(r: { readonly name: string; readonly algorithm: string; readonly digest: string }, serialization: { readonly method: 'shards' | 'files'; readonly shardSize: number | null }, where: string): ManifestResource {
  const { method, shardSize } = serialization;
  if (method === 'files') {
    if (!isContainedPath(r.name)) invalid(where, `resource name ${JSON.stringify(r.name)} is not a relative path inside the manifest's directory`);
    if (r.algorithm !== 'sha256') invalid(where, `resource ${r.name} has algorithm ${JSON.stringify(r.algorithm)}, expected "sha256"`);
    return { name: r.name, path: r.name, start: 0, end: null, algorithm: r.algorithm, digest: r.digest };
  }
  const m = /^(.+):(0|[1-9][0-9]{0,15}):([1-9][0-9]{0,15})$/.exec(r.name);
  if (m === null) invalid(where, `resource name ${JSON.stringify(r.name)} is not path:start:end`);
  const [, file, a, b] = m as unknown as [string, string, string, string];
  const start = Number(a);
  const end = Number(b);
  if (!isContainedPath(file)) invalid(where, `resource ${r.name} names ${JSON.stringify(file)}, not a relative path inside the manifest's directory`);
  if (!Number.isSafeInteger(end) || end <= start || end - start > (shardSize as number) || start % (shardSize as number) !== 0) {
    invalid(where, `resource ${r.name} is not a shard of ${shardSize} bytes`);
  }
  if (r.algorithm !== shardAlgorithm(shardSize as number)) invalid(where, `resource ${r.name} has algorithm ${JSON.stringify(r.algorithm)}, expected ${JSON.stringify(shardAlgorithm(shardSize as number))}`);
  return { name: r.name, path: file, start, end, algorithm: r.algorithm, digest: r.digest };
}

/** Each file's shards must tile it from 0 with no gap or overlap, every shard but its last full; each file at most once (files method). */
function checkTiling(resources: readonly ManifestResource[], shardSize: number | null, where: string): void {
  const byPath = new Map<string, ManifestResource[]>();
  for (const r of resources) byPath.set(r.path, [...(byPath.get(r.path) ?? []), r]);
  for (const [file, list] of byPath) {
    if (shardSize === null) {
      if (list.length > 1) invalid(where, `${file} is listed ${list.length} times`);
      continue;
    }
    let at = 0;
    list.forEach((r, i) => {
      if (r.start !== at) invalid(where, `the shards of ${file} do not follow each other: ${r.name} after byte ${at}`);
      if (i < list.length - 1 && (r.end as number) - r.start !== shardSize) invalid(where, `${r.name} is a short shard before the last one of ${file}`);
      at = r.end as number;
    });
  }
}

/**
 * Reads a manifest: the bundle, the envelope, the statement and llmcp's
 * lineage, with every structural rule of the layout checked — the subject
 * digest against the resources, canonical base64, resources sorted and
 * tiling each file, paths inside the manifest's directory. For a manifest
 * with llmcp's lineage, the file must also be exactly the bytes llmcp
 * writes for what it says (see {@link encodeBundleJson}), so no byte can
 * change unnoticed, even one that leaves the meaning alone. Nothing here
 * checks the signature ({@link verifyManifestSignature}) or the files
 * (the callers hash them).
 *
 * @param bytes - the manifest file.
 * @param where - its name for messages (and the error's `path`).
 * @returns the parsed manifest.
 * @throws TrainerError `TRAINER_MANIFEST_INVALID` naming what is wrong.
 */
export function parseManifest(bytes: Uint8Array, where: string): ParsedManifest {
  if (bytes.length > MAX_MANIFEST_BYTES) invalid(where, `${bytes.length} bytes, more than the ${MAX_MANIFEST_BYTES} a manifest may have`);
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (e) {
    invalid(where, `not UTF-8 JSON (${(e as Error).message})`);
  }
  const bundle = bundleSchema.safeParse(json);
  if (!bundle.success) invalid(where, firstIssue(bundle.error, 'bundle'));
  const envelope = bundle.data.dsseEnvelope;
  const payload = base64Decode(envelope.payload);
  if (payload === null) invalid(where, 'dsseEnvelope.payload is not canonical base64');
  const signatures = envelope.signatures.map((s, i) => {
    const sig = base64Decode(s.sig);
    if (sig === null || sig.length === 0) invalid(where, `dsseEnvelope.signatures[${i}].sig is not canonical base64`);
    return { sig, keyid: s.keyid };
  });
  const hint = bundle.data.verificationMaterial.publicKey?.hint ?? null;
  if ((hint === null) !== (signatures.length === 0)) invalid(where, hint === null ? 'a signature without verificationMaterial.publicKey.hint' : 'a public key hint without a signature');
  let statementJson: unknown;
  try {
    statementJson = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload));
  } catch (e) {
    invalid(where, `the DSSE payload is not UTF-8 JSON (${(e as Error).message})`);
  }
  const statement = statementSchema.safeParse(statementJson);
  if (!statement.success) invalid(where, firstIssue(statement.error, 'statement'));
  const { serialization } = statement.data.predicate;
  const shardSize = serialization.method === 'shards' ? (serialization.shard_size ?? invalid(where, 'serialization.shard_size is missing')) : null;
  const resources = statement.data.predicate.resources.map((r) => parseResource(r, { method: serialization.method, shardSize }, where));
  const sorted = sortResources(resources);
  if (sorted.some((r, i) => r !== resources[i])) invalid(where, 'the resources are not sorted by path and offset');
  resources.forEach((r, i) => {
    if (i > 0 && r.name === resources[i - 1]?.name) invalid(where, `resource ${r.name} is listed twice`);
  });
  checkTiling(resources, shardSize, where);
  const subject = statement.data.subject[0] as { name: string; digest: { sha256: string } };
  const computed = rootDigest(resources);
  if (computed !== subject.digest.sha256) invalid(where, `the subject digest ${subject.digest.sha256} is not the digest of its resources (${computed})`);
  let lineage: Lineage | null = null;
  const raw = statement.data.predicate.llmcp;
  if (raw !== undefined) {
    const parsed = lineageSchema.safeParse(raw);
    if (!parsed.success) invalid(where, firstIssue(parsed.error, 'predicate.llmcp'));
    lineage = parsed.data as Lineage;
    if ((lineage.parent === null) !== (lineage.via === 'init')) invalid(where, lineage.parent === null ? `lineage via ${lineage.via} without a parent` : 'lineage via init with a parent');
  }
  const manifest: ParsedManifest = {
    payload,
    signatures,
    hint,
    subject: { name: subject.name, digest: subject.digest.sha256 },
    serialization: { method: serialization.method, shardSize, ignorePaths: serialization.ignore_paths ?? [] },
    resources,
    lineage,
    digest: `sha256:${subject.digest.sha256}`,
  };
  if (lineage !== null) {
    // llmcp's manifests are canonical: the file is exactly the bundle llmcp writes for this payload and signature.
    const canonical = encodeBundleJson({ payload, signature: signatures[0] ?? null, hint });
    if (canonical.length !== bytes.length || canonical.some((b, i) => b !== bytes[i])) invalid(where, 'its bytes are not the canonical form llmcp writes (changed after it was written)');
    // llmcp's statements are canonical too: the payload is exactly its canonical JSON.
    let again: Uint8Array;
    try {
      again = utf8.encode(canonicalJson(statementJson));
    } catch (e) {
      invalid(where, `its payload has no canonical form (${(e as Error).message})`);
    }
    if (again.length !== payload.length || again.some((b, i) => b !== payload[i])) invalid(where, 'its payload is not the canonical statement llmcp writes');
  }
  return manifest;
}

// ── writing (browser-safe: the encoding is shared with the checker) ───────────

/** What a statement is built from. */
export interface StatementParts {
  /** The subject's name (informative: `model_signing` takes the directory's name). */
  readonly name: string;
  /** Every resource, any order (sorted here). */
  readonly resources: readonly Omit<ManifestResource, 'name' | 'algorithm'>[];
  /** Paths that are not part of the model (the manifest itself). */
  readonly ignorePaths: readonly string[];
  readonly lineage: Lineage;
}

/**
 * The in-toto statement of a manifest, as canonical JSON bytes (the DSSE payload).
 *
 * @param parts - subject name, resources (sharded at {@link SHARD_SIZE}), ignored paths, lineage.
 * @returns the payload and the subject digest (`sha256:…`).
 */
export function encodeStatement(parts: StatementParts): { payload: Uint8Array; digest: string } {
  const resources = sortResources(parts.resources).map((r) => {
    if (r.end === null) throw new TypeError('encodeStatement writes shards: every resource needs its end');
    return { name: shardName(r.path, r.start, r.end), algorithm: shardAlgorithm(SHARD_SIZE), digest: r.digest };
  });
  const root = rootDigest(resources);
  const statement = {
    _type: IN_TOTO_STATEMENT_TYPE,
    subject: [{ name: parts.name, digest: { sha256: root } }],
    predicateType: MODEL_SIGNING_PREDICATE_TYPE,
    predicate: {
      serialization: { method: 'shards', hash_type: 'sha256', shard_size: SHARD_SIZE, allow_symlinks: false, ignore_paths: [...parts.ignorePaths] },
      resources,
      llmcp: parts.lineage,
    },
  };
  return { payload: utf8.encode(canonicalJson(statement)), digest: `sha256:${root}` };
}

/**
 * The bytes of a manifest file: the Sigstore bundle with the DSSE envelope,
 * as canonical JSON and a final newline. `keyid` is empty, as `model_signing`
 * writes it (DSSE does not authenticate it; the key is named by the hint).
 *
 * @param parts - the payload, its signature (null: unsigned) and the signer's public key hint.
 * @param parts.payload - the statement bytes.
 * @param parts.signature - the signature, or null.
 * @param parts.hint - the SHA-256 hex of the signer's public key PEM, or null.
 * @returns the file's bytes.
 */
export function encodeBundleJson(parts: { readonly payload: Uint8Array; readonly signature: { readonly sig: Uint8Array } | null; readonly hint: string | null }): Uint8Array {
  const bundle = {
    mediaType: SIGSTORE_BUNDLE_MEDIA_TYPE,
    verificationMaterial: { ...(parts.hint === null ? {} : { publicKey: { hint: parts.hint } }), tlogEntries: [] },
    dsseEnvelope: {
      payload: base64Encode(parts.payload),
      payloadType: DSSE_PAYLOAD_TYPE,
      signatures: parts.signature === null ? [] : [{ sig: base64Encode(parts.signature.sig), keyid: '' }],
    },
  };
  return utf8.encode(`${canonicalJson(bundle)}\n`);
}

// ── public keys and signatures (WebCrypto: Node ≥ 20 and browsers) ────────────

/** An imported WebCrypto key (opaque here). */
export interface VerifyKey {
  readonly type: string;
}

/** The slice of WebCrypto's SubtleCrypto used here, typed locally (compiles with and without the DOM library). */
interface SubtleSlice {
  importKey(format: 'spki', keyData: Uint8Array, algorithm: Readonly<Record<string, string>>, extractable: boolean, usages: readonly 'verify'[]): Promise<VerifyKey>;
  verify(algorithm: Readonly<Record<string, string>>, key: VerifyKey, signature: Uint8Array, data: Uint8Array): Promise<boolean>;
}

function subtle(): SubtleSlice {
  const c = (globalThis as unknown as { crypto?: { subtle?: SubtleSlice } }).crypto;
  if (c?.subtle === undefined) throw new TypeError('WebCrypto (crypto.subtle) is not available here');
  return c.subtle;
}

/** A key algorithm llmcp signs and verifies with. */
export type KeyAlgorithm = 'ecdsa-p256' | 'ecdsa-p384' | 'ed25519';

/** A public key ready to verify signatures. */
export interface TrustedKey {
  readonly algorithm: KeyAlgorithm;
  /** SHA-256 hex of its canonical SubjectPublicKeyInfo PEM: the bundle's `publicKey.hint`. */
  readonly hint: string;
  /** Its canonical PEM. */
  readonly pem: string;
  readonly key: VerifyKey;
}

/**
 * The canonical PEM of a SubjectPublicKeyInfo (64-character lines, `\n`, a
 * final newline): what OpenSSL, Node and Python's `cryptography` write, so
 * its SHA-256 is the same hint everywhere.
 *
 * @param spki - the DER bytes.
 * @returns the PEM text.
 */
export function publicKeyPem(spki: Uint8Array): string {
  const body = base64Encode(spki).replace(/.{64}/g, '$&\n').replace(/\n$/, '');
  return `-----BEGIN PUBLIC KEY-----\n${body}\n-----END PUBLIC KEY-----\n`;
}

/**
 * The public key hint of a SubjectPublicKeyInfo: SHA-256 hex of its canonical PEM (`model_signing`'s rule).
 *
 * @param spki - the DER bytes.
 * @returns 64 lowercase hex digits.
 */
export function publicKeyHint(spki: Uint8Array): string {
  return sha256Hex(utf8.encode(publicKeyPem(spki)));
}

/**
 * The DER bytes inside the first `-----BEGIN PUBLIC KEY-----` block of a PEM text.
 *
 * @param pem - the text.
 * @returns the bytes, or null when there is no such block.
 */
function spkiOfPem(pem: string): Uint8Array | null {
  const m = /-----BEGIN PUBLIC KEY-----([A-Za-z0-9+/=\s]+)-----END PUBLIC KEY-----/.exec(pem);
  if (m === null) return null;
  return base64Decode((m[1] as string).replace(/\s+/g, ''));
}

const KEY_IMPORTS: readonly { readonly algorithm: KeyAlgorithm; readonly params: Readonly<Record<string, string>> }[] = [
  { algorithm: 'ed25519', params: { name: 'Ed25519' } },
  { algorithm: 'ecdsa-p256', params: { name: 'ECDSA', namedCurve: 'P-256' } },
  { algorithm: 'ecdsa-p384', params: { name: 'ECDSA', namedCurve: 'P-384' } },
];

/**
 * Reads a public key (PEM, `-----BEGIN PUBLIC KEY-----`, as `llmcp keygen`
 * and `openssl pkey -pubout` write it): ECDSA P-256, ECDSA P-384 or Ed25519.
 *
 * @param pem - the PEM text.
 * @param where - its name for messages.
 * @returns the key.
 * @throws TrainerError `TRAINER_KEY_INVALID` for anything else.
 */
export async function importTrustedKey(pem: string, where: string): Promise<TrustedKey> {
  const spki = spkiOfPem(pem);
  if (spki === null) throw new TrainerError('TRAINER_KEY_INVALID', `${where} holds no PEM public key (-----BEGIN PUBLIC KEY-----); give the .pub.pem that llmcp keygen wrote, or: openssl pkey -in private.pem -pubout`, { path: where });
  for (const { algorithm, params } of KEY_IMPORTS) {
    try {
      const key = await subtle().importKey('spki', spki, params, false, ['verify']);
      return { algorithm, hint: publicKeyHint(spki), pem: publicKeyPem(spki), key };
    } catch {
      // another algorithm
    }
  }
  throw new TrainerError('TRAINER_KEY_INVALID', `${where} is not an ECDSA P-256, ECDSA P-384 or Ed25519 public key`, { path: where });
}

/**
 * The fixed-width `r || s` form WebCrypto verifies, from an ECDSA signature
 * in DER (`SEQUENCE { INTEGER r, INTEGER s }`, what OpenSSL, Node and
 * `model_signing` write).
 *
 * @param der - the DER signature.
 * @param size - bytes of each of r and s (32 for P-256, 48 for P-384).
 * @returns the P1363 signature, or null when `der` is not such a DER value.
 */
export function ecdsaDerToP1363(der: Uint8Array, size: number): Uint8Array | null {
  let at = 0;
  const byte = (): number => {
    if (at >= der.length) throw new RangeError('truncated');
    return der[at++] as number;
  };
  const length = (): number => {
    const first = byte();
    if (first < 0x80) return first;
    if (first !== 0x81) throw new RangeError('length');
    const n = byte();
    if (n < 0x80) throw new RangeError('non-minimal length');
    return n;
  };
  const integer = (): Uint8Array => {
    if (byte() !== 0x02) throw new RangeError('integer tag');
    const n = length();
    if (n === 0 || at + n > der.length) throw new RangeError('integer length');
    let value = der.subarray(at, at + n);
    at += n;
    if ((value[0] as number) & 0x80) throw new RangeError('negative');
    if (value.length > 1 && value[0] === 0 && ((value[1] as number) & 0x80) === 0) throw new RangeError('non-minimal integer');
    if (value[0] === 0) value = value.subarray(1);
    if (value.length > size) throw new RangeError('too large');
    return value;
  };
  try {
    if (byte() !== 0x30) return null;
    const n = length();
    if (at + n !== der.length) return null;
    const r = integer();
    const s = integer();
    if (at !== der.length) return null;
    const out = new Uint8Array(2 * size);
    out.set(r, size - r.length);
    out.set(s, 2 * size - s.length);
    return out;
  } catch {
    return null;
  }
}

/** How a manifest's signature stands against a trusted key. */
export type SignatureStatus =
  /** Signed by the trusted key, and the signature verifies. */
  | 'verified'
  /** No signature. */
  | 'unsigned'
  /** Signed with another key (its hint differs from the trusted key's). */
  | 'other-key'
  /** The hint names the trusted key, but the signature does not verify over the payload. */
  | 'invalid';

/**
 * Checks a manifest's signature against a trusted key: DSSE's PAE of the
 * payload, ECDSA (DER) or Ed25519.
 *
 * @param manifest - a parsed manifest.
 * @param key - the trusted public key.
 * @returns how it stands.
 */
export async function verifyManifestSignature(manifest: ParsedManifest, key: TrustedKey): Promise<SignatureStatus> {
  const signature = manifest.signatures[0];
  if (signature === undefined) return 'unsigned';
  if (manifest.hint !== key.hint) return 'other-key';
  const data = pae(DSSE_PAYLOAD_TYPE, manifest.payload);
  try {
    if (key.algorithm === 'ed25519') return (await subtle().verify({ name: 'Ed25519' }, key.key, signature.sig, data)) ? 'verified' : 'invalid';
    const size = key.algorithm === 'ecdsa-p256' ? 32 : 48;
    const p1363 = ecdsaDerToP1363(signature.sig, size);
    if (p1363 === null) return 'invalid';
    const ok = await subtle().verify({ name: 'ECDSA', hash: key.algorithm === 'ecdsa-p256' ? 'SHA-256' : 'SHA-384' }, key.key, p1363, data);
    return ok ? 'verified' : 'invalid';
  } catch {
    return 'invalid';
  }
}
