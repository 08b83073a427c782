/**
 * Provenance manifests of exports, and the check of any manifest file
 * against the files beside it (Node). An export's manifest lists every
 * output file (shards and their SHA-256), names the checkpoint it was made
 * from as its parent (`via: 'export'`), and carries that checkpoint's
 * identities (config, inputs, implementation) and the export's format. A
 * directory export holds it as `model.sig`; a single file `F` has it beside
 * it as `F.sig`.
 */
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { checkResources, encodeManifest, type WrittenManifest } from './checkpoint-manifest.ts';
import { isTrainerError, TrainerError } from './errors.ts';
import type { Job } from './job.ts';
import type { ProvenanceProblem } from './run-provenance.ts';
import { LINEAGE_FORMAT, MANIFEST_FILE, MAX_MANIFEST_BYTES, parseManifest, verifyManifestSignature, type Lineage, type ParsedManifest, type SignatureStatus, type TrustedKey } from './provenance.ts';
import { shardBytes, shardFile, type ShardDigest } from './shard-hasher.ts';
import type { SigningKey } from './signing-key.ts';
import { sha256Hex } from './internal/canonical-json.ts';

/** The checkpoint an export was made from. */
export interface ExportSource {
  readonly step: number;
  /** Its state file's LLMCP35 checksum label. */
  readonly stateChecksum: string;
  /** Its job (a run's slot, or the job beside a checkpoint file), or null for a bare file. */
  readonly job: Job | null;
  /** Its manifest's subject digest, or null when it has none. */
  readonly manifest: string | null;
}

/** What an export manifest records. */
export interface ExportManifestParts {
  /** The subject's name (the output's name). */
  readonly name: string;
  /** Every output file covered: its path relative to the manifest's directory and its bytes. */
  readonly files: readonly { readonly path: string; readonly bytes: Uint8Array }[];
  /** Paths of the directory that are not part of the export (the manifest itself). */
  readonly ignorePaths: readonly string[];
  readonly source: ExportSource;
  /** The format written (`safetensors`, `gguf`, `hf`, `andrea-bin`, `andrea-config`) and its element type. */
  readonly export: { readonly format: string; readonly dtype: string | null };
  /** The package writing it and its version. */
  readonly tool: { readonly name: string; readonly version: string };
  /** Signs it (null: unsigned). */
  readonly key: SigningKey | null;
}

/**
 * The lineage of an export: the source checkpoint as its parent, the
 * source's identities, the export's format.
 *
 * @param parts - the source, the export and the tool.
 * @returns the lineage.
 * @throws TrainerError `TRAINER_MANIFEST_INVALID` for a step beyond 2^53 − 1 (a bare checkpoint file's u64 step).
 */
export function exportLineage(parts: Pick<ExportManifestParts, 'source' | 'export' | 'tool'>): Lineage {
  const { source } = parts;
  const job = source.job;
  // A manifest states steps as JSON numbers: one it could not state exactly is refused, never rounded.
  if (!Number.isSafeInteger(source.step) || source.step < 0) {
    throw new TrainerError('TRAINER_MANIFEST_INVALID', `step ${source.step} cannot be stated exactly in a provenance manifest (at most 2^53 − 1)`);
  }
  return {
    format: LINEAGE_FORMAT,
    kind: 'export',
    run: job?.run.id ?? null,
    step: source.step,
    via: 'export',
    parent: { run: job?.run.id ?? null, step: source.step, job: job?.digest ?? null, manifest: source.manifest, state: source.stateChecksum },
    config: job?.configDigest ?? null,
    inputs: job === null ? null : { corpus: job.inputs.corpus.sha256, split: job.inputs.split.sha256, tokenizer: job.inputs.tokenizer.identity },
    implementation: job?.inputs.implementation.id ?? null,
    engine: null,
    tool: parts.tool,
    export: parts.export,
  };
}

/**
 * Encodes (and signs) the manifest of an export.
 *
 * @param parts - outputs, source, format, tool, key.
 * @returns the manifest's bytes and digests.
 */
export function encodeExportManifest(parts: ExportManifestParts): WrittenManifest {
  const shards: ShardDigest[] = parts.files.flatMap((f) => shardBytes(f.path, f.bytes));
  return encodeManifest({ name: parts.name, shards, ignorePaths: parts.ignorePaths, lineage: exportLineage(parts), key: parts.key });
}

/** The result of {@link verifyManifestFile}. */
export interface ManifestFileVerification {
  readonly ok: boolean;
  /** The manifest file as given. */
  readonly file: string;
  /** The parsed manifest, or null when it cannot be read. */
  readonly manifest: ParsedManifest | null;
  /** With a trusted key: how the signature stands against it; without: `signed` or `unsigned` (not checked). */
  readonly signature: SignatureStatus | 'signed' | null;
  /** The files checked (relative to the manifest's directory). */
  readonly files: readonly string[];
  readonly problems: readonly ProvenanceProblem[];
}

/**
 * Checks a manifest file against the files it lists, in its directory: it
 * reads, the SHA-256 of every shard matches, every file is there, and — for
 * a directory's `model.sig` — no other file is (but those it ignores);
 * with a trusted key, it is signed by that key and the signature verifies.
 *
 * @param file - the manifest file (`model.sig`, `F.sig`).
 * @param options - the trusted key (null or absent: signatures not checked).
 * @param options.trustKey - the trusted key.
 * @returns the verdict (never throws for damaged files).
 */
export async function verifyManifestFile(file: string, options: { readonly trustKey?: TrustedKey | null } = {}): Promise<ManifestFileVerification> {
  const problems: ProvenanceProblem[] = [];
  const dir = path.dirname(file);
  let manifest: ParsedManifest;
  try {
    const size = lstatSync(file).size;
    if (size > MAX_MANIFEST_BYTES) throw new Error(`${size} bytes, more than a manifest may have`);
    manifest = parseManifest(new Uint8Array(readFileSync(file)), file);
  } catch (e) {
    problems.push({ code: 'TRAINER_MANIFEST_INVALID', message: isTrainerError(e) ? e.message : `${file} cannot be read: ${(e as Error).message}`, file });
    return { ok: false, file, manifest: null, signature: null, files: [], problems };
  }
  const listed = [...new Set(manifest.resources.map((r) => r.path))];
  const present = new Map<string, readonly ShardDigest[]>();
  const names = path.basename(file) === MANIFEST_FILE ? directoryFiles(dir, new Set([MANIFEST_FILE, ...manifest.serialization.ignorePaths])) : listed;
  for (const name of names) {
    try {
      present.set(name, manifest.serialization.method === 'shards' ? shardFile(path.join(dir, ...name.split('/')), name).shards : wholeFile(path.join(dir, ...name.split('/')), name));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') problems.push({ code: 'TRAINER_MANIFEST_MISMATCH', message: `${path.join(dir, name)} cannot be read: ${(e as Error).message}`, file: path.join(dir, name) });
    }
  }
  try {
    checkResources(manifest, present, { where: dir });
  } catch (e) {
    if (!isTrainerError(e)) throw e;
    problems.push({ code: 'TRAINER_MANIFEST_MISMATCH', message: e.message, file: e.path ?? file });
  }
  let signature: ManifestFileVerification['signature'] = manifest.hint === null ? 'unsigned' : 'signed';
  const key = options.trustKey ?? null;
  if (key !== null) {
    signature = await verifyManifestSignature(manifest, key);
    if (signature !== 'verified') {
      const why = signature === 'unsigned' ? 'is not signed' : signature === 'other-key' ? `is signed by another key (hint ${manifest.hint ?? '?'}), not by the trusted key (hint ${key.hint})` : 'has a signature that does not verify with the trusted key';
      problems.push({ code: 'TRAINER_SIGNATURE_INVALID', message: `${file} ${why}`, file });
    }
  }
  return { ok: problems.length === 0, file, manifest, signature, files: listed, problems };
}

/** The SHA-256 of a whole file as a `files`-method resource (manifests of other tools): one piece covering it. */
function wholeFile(file: string, name: string): ShardDigest[] {
  const { shards } = shardFile(file, name, Number.MAX_SAFE_INTEGER);
  return shards.length > 0 ? shards : shardBytesOfEmpty(name);
}

/** An empty file's one digest (SHA-256 of nothing), as a `files`-method manifest lists it. */
function shardBytesOfEmpty(name: string): ShardDigest[] {
  return [{ path: name, start: 0, end: 0, digest: sha256Hex(new Uint8Array(0)) }];
}

/** Regular files of a directory, recursively, as `/`-separated relative paths, without the ignored ones. */
function directoryFiles(dir: string, ignore: ReadonlySet<string>): string[] {
  const out: string[] = [];
  const walk = (rel: string): void => {
    for (const name of readdirSync(path.join(dir, rel)).sort()) {
      const r = rel === '' ? name : `${rel}/${name}`;
      if (ignore.has(r)) continue;
      const st = lstatSync(path.join(dir, r));
      if (st.isDirectory()) walk(r);
      else out.push(r);
    }
  };
  walk('');
  return out;
}
