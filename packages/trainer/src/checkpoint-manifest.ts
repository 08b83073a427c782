/**
 * The provenance manifest of a checkpoint (Node): built from the checkpoint's
 * job and the SHA-256 of its files' shards, signed when a key is given,
 * written as `model.sig` into the checkpoint's temporary directory (so it is
 * published with the slot, by the same renames), and checked against a
 * slot's files when the slot is verified. The layout is provenance.ts's.
 */
import path from 'node:path';
import manifestJson from '../package.json' with { type: 'json' };
import { TrainerError } from './errors.ts';
import type { Job } from './job.ts';
import { encodeBundleJson, encodeStatement, LINEAGE_FORMAT, MANIFEST_FILE, type Lineage, type LineageParent, type LineageVia, type ParsedManifest } from './provenance.ts';
import type { ShardDigest } from './shard-hasher.ts';
import { signPayload, type SigningKey } from './signing-key.ts';
import { sha256Hex } from './internal/canonical-json.ts';
import { writeNewFileDurable } from './internal/durable-fs.ts';

/** The package and version recorded as the tool of a checkpoint manifest. */
export const TRAINER_TOOL: { readonly name: string; readonly version: string } = { name: '@llmcp/trainer', version: (manifestJson as { version: string }).version };

/** How a checkpoint about to be saved continues its parent (set by whoever knows the trajectory: the saver, a pivot, a fork). */
export interface LineageStep {
  readonly via: LineageVia;
  /** Null exactly for `init`. */
  readonly parent: LineageParent | null;
  /**
   * How the parent itself continued its own parent, when known (it has a
   * manifest). A checkpoint whose files are the parent's (the same step
   * saved again unchanged: a stop checkpoint right after a best-only save of
   * that step) is the parent, not its child: it takes this lineage, so its
   * statement — and its `lineage/` entry — is the parent's.
   */
  readonly parentLineage?: { readonly via: LineageVia; readonly parent: LineageParent | null } | null;
}

/** What a save or a pivot needs to write a checkpoint's manifest. */
export interface CheckpointProvenance extends LineageStep {
  /** The signing key, or null for an unsigned manifest. */
  readonly key: SigningKey | null;
}

/**
 * The lineage of a checkpoint: its run, step and trajectory, and the
 * identities its job records (config, inputs, implementation, engine).
 *
 * @param job - the checkpoint's sealed job.
 * @param step - how it continues its parent.
 * @returns the lineage.
 */
export function checkpointLineage(job: Job, step: LineageStep): Lineage {
  const engine = job.config.engine?.kind === 'torch' ? { kind: 'torch' as const, worldSize: job.config.engine.worldSize } : { kind: 'llmcp' as const, worldSize: 1 };
  return {
    format: LINEAGE_FORMAT,
    kind: 'checkpoint',
    run: job.run.id,
    step: job.step,
    via: step.via,
    parent: step.parent,
    config: job.configDigest,
    inputs: { corpus: job.inputs.corpus.sha256, split: job.inputs.split.sha256, tokenizer: job.inputs.tokenizer.identity },
    implementation: job.inputs.implementation.id,
    engine,
    tool: TRAINER_TOOL,
  };
}

/**
 * How a later checkpoint names this one as its parent.
 *
 * @param job - this checkpoint's job.
 * @param manifestDigest - its manifest's subject digest, or null when it has no manifest.
 * @returns the parent link.
 */
export function parentLink(job: Job, manifestDigest: string | null): LineageParent {
  return { run: job.run.id, step: job.step, job: job.digest, manifest: manifestDigest, state: job.state.checksum };
}

/** A manifest as written: its bytes, and the subject digest that names the checkpoint or export. */
export interface WrittenManifest {
  readonly bytes: Uint8Array;
  readonly digest: string;
  /** SHA-256 hex of the DSSE payload (the statement): names the manifest in a run's `lineage/`. */
  readonly payloadDigest: string;
}

/**
 * Encodes (and signs) a manifest.
 *
 * @param parts - the subject name, every file's shards, the paths to ignore, the lineage and the key (null: unsigned).
 * @param parts.name - the subject's name.
 * @param parts.shards - the shard digests of every file.
 * @param parts.ignorePaths - paths beside the files that are not part of the model (the manifest itself).
 * @param parts.lineage - llmcp's lineage.
 * @param parts.key - the signing key, or null.
 * @returns the manifest's bytes and digests.
 */
export function encodeManifest(parts: { readonly name: string; readonly shards: readonly ShardDigest[]; readonly ignorePaths: readonly string[]; readonly lineage: Lineage; readonly key: SigningKey | null }): WrittenManifest {
  const { payload, digest } = encodeStatement({ name: parts.name, resources: parts.shards, ignorePaths: parts.ignorePaths, lineage: parts.lineage });
  const signature = parts.key === null ? null : { sig: signPayload(parts.key, payload) };
  const bytes = encodeBundleJson({ payload, signature, hint: parts.key?.hint ?? null });
  return { bytes, digest, payloadDigest: statementDigest(payload) };
}

/**
 * SHA-256 hex of a DSSE payload (names a manifest in `lineage/`).
 *
 * @param payload - the statement bytes.
 * @returns the hex digest.
 */
export function statementDigest(payload: Uint8Array): string {
  return sha256Hex(payload);
}

/**
 * Writes a checkpoint's manifest into its (temporary) directory, durably.
 *
 * @param dir - the checkpoint directory.
 * @param parts - the job, the shards of `job.json` and `state.llmcp`, how it continues its parent, the key.
 * @param parts.job - the sealed job.
 * @param parts.shards - the shard digests of both files.
 * @param parts.provenance - via, parent and key.
 * @returns the manifest.
 */
export function writeCheckpointManifest(
  dir: string,
  parts: { readonly job: Job; readonly shards: readonly ShardDigest[]; readonly provenance: CheckpointProvenance },
): WrittenManifest & { readonly lineage: LineageStep } {
  const { job, shards, provenance } = parts;
  const encode = (step: LineageStep): WrittenManifest =>
    encodeManifest({ name: `${job.run.id}:step_${String(job.step).padStart(6, '0')}`, shards, ignorePaths: [MANIFEST_FILE], lineage: checkpointLineage(job, step), key: provenance.key });
  let step: LineageStep = { via: provenance.via, parent: provenance.parent };
  let manifest = encode(step);
  const parent = provenance.parent;
  const own = provenance.parentLineage;
  // The parent's own files saved again (the subject digest covers every byte): it is the parent, with the parent's lineage.
  if (parent !== null && own !== undefined && own !== null && parent.run === job.run.id && parent.step === job.step && parent.job === job.digest && parent.manifest === manifest.digest) {
    step = { via: own.via, parent: own.parent };
    manifest = encode(step);
  }
  writeNewFileDurable(path.join(dir, MANIFEST_FILE), manifest.bytes);
  return { ...manifest, lineage: step };
}

function mismatch(where: string, what: string, slot: string | undefined): never {
  throw new TrainerError('TRAINER_MANIFEST_MISMATCH', `${where}: ${what}`, { path: where, ...(slot === undefined ? {} : { slot }) });
}

/**
 * Checks files against a manifest's resources: the same files, the same
 * shards, the same digests. Names the first file and shard that differ.
 *
 * @param manifest - the parsed manifest.
 * @param files - the shard digests of every file present (by manifest path), in file order.
 * @param at - `where`: the directory's name for messages (`checkpoints/latest`); `slot`: the slot, for the error's context.
 * @param at.where - the directory for messages.
 * @param at.slot - the slot, if any.
 * @throws TrainerError `TRAINER_MANIFEST_MISMATCH`.
 */
export function checkResources(manifest: ParsedManifest, files: ReadonlyMap<string, readonly ShardDigest[]>, at: { readonly where: string; readonly slot?: string }): void {
  const { where, slot } = at;
  const listed = new Map<string, ParsedManifest['resources'][number][]>();
  for (const r of manifest.resources) listed.set(r.path, [...(listed.get(r.path) ?? []), r]);
  for (const [file, resources] of listed) {
    const shards = files.get(file);
    if (shards === undefined) mismatch(`${where}/${file}`, `is missing, and ${MANIFEST_FILE} lists it`, slot);
    const size = shards.at(-1)?.end ?? 0;
    const expected = resources.at(-1)?.end ?? 0;
    if (manifest.serialization.method === 'shards' && size !== expected) mismatch(`${where}/${file}`, `is ${size} bytes, ${MANIFEST_FILE} lists ${expected}`, slot);
    resources.forEach((r, i) => {
      const s = shards[i];
      if (s === undefined || s.digest !== r.digest) mismatch(`${where}/${file}`, `bytes [${r.start}, ${r.end ?? size}) have SHA-256 ${s?.digest ?? '(none)'}, ${MANIFEST_FILE} records ${r.digest}`, slot);
    });
  }
  for (const [file, shards] of files) {
    if (!listed.has(file) && shards.length > 0) mismatch(`${where}/${file}`, `is not listed in ${MANIFEST_FILE}`, slot);
  }
}

/**
 * Checks a slot's manifest against its files and its job: the resources are
 * exactly `job.json` and `state.llmcp` with their shard digests, and the
 * lineage names the job's run and step (and, for a `step_NNNNNN` slot, that
 * step): a manifest, or a whole slot, moved from another slot or run fails.
 *
 * @param manifest - the slot's parsed manifest.
 * @param slot - the slot's facts: name, directory for messages, job, and the shard digests of both files.
 * @param slot.name - the slot name.
 * @param slot.where - the slot's directory for messages (`checkpoints/latest`).
 * @param slot.job - the slot's verified job.
 * @param slot.files - the shard digests of `job.json` and `state.llmcp`.
 * @param slot.step - the step a `step_NNNNNN` name stands for, or null.
 * @throws TrainerError `TRAINER_MANIFEST_MISMATCH` or `TRAINER_MANIFEST_INVALID`.
 */
export function checkSlotManifest(
  manifest: ParsedManifest,
  slot: { readonly name: string; readonly where: string; readonly job: Job; readonly files: ReadonlyMap<string, readonly ShardDigest[]>; readonly step: number | null },
): void {
  const file = `${slot.where}/${MANIFEST_FILE}`;
  const lineage = manifest.lineage;
  if (lineage === null || lineage.kind !== 'checkpoint') {
    throw new TrainerError('TRAINER_MANIFEST_INVALID', `${file} holds no llmcp checkpoint lineage`, { path: file, slot: slot.name });
  }
  checkResources(manifest, slot.files, { where: slot.where, slot: slot.name });
  if (lineage.run !== slot.job.run.id) mismatch(file, `is a manifest of run ${lineage.run ?? '(none)'}, the slot's job is of run ${slot.job.run.id}`, slot.name);
  if (lineage.step !== slot.job.step) mismatch(file, `is a manifest of step ${lineage.step}, the slot's job is of step ${slot.job.step}`, slot.name);
  if (slot.step !== null && slot.step !== slot.job.step) mismatch(`${slot.where}`, `holds the checkpoint of step ${slot.job.step}, not of step ${slot.step} that its name says`, slot.name);
}
