/**
 * A run's lineage as the page shows it: its provenance manifests (each slot's
 * `model.sig` and the lineage store `lineage/*.sig`) read with the trainer's
 * browser-safe reader, each slot's files hashed against its manifest
 * (WebCrypto SHA-256, one shard at a time), signatures checked against a
 * public key when one was opened with the run, and the chain walked from the
 * newest checkpoint back to its origin by the rule `llmcp verify` uses
 * (`@llmcp/trainer/provenance`).
 */
import {
  chainContext,
  indexChain,
  LINEAGE_DIR,
  MANIFEST_FILE,
  parseManifest,
  verifyManifestSignature,
  walkChain,
  type ChainEntry,
  type ChainEvents,
  type ChainLink,
  type ParsedManifest,
  type SignatureStatus,
  type TrustedKey,
} from '@llmcp/trainer/provenance';
import { compareSlots, isSlotName, RUN_FILES, stepOfSlot } from './run-layout.ts';

/** How one slot stands against its manifest. */
export interface SlotProvenance {
  readonly slot: string;
  /** `ok`: every shard of both files has the SHA-256 its manifest records; `mismatch`: one does not; `no manifest`; `invalid`: the manifest does not read. */
  readonly files: 'ok' | 'mismatch' | 'no manifest' | 'invalid';
  /** With a trusted key: how its signature stands; without: `signed` or `unsigned` (not checked). Null without a manifest. */
  readonly signature: SignatureStatus | 'signed' | null;
  readonly problem: string | null;
}

/** A run's lineage, as shown. */
export interface LineageView {
  /** `none`: the run has no manifest (written before them). */
  readonly state: 'none' | 'checked';
  readonly slots: readonly SlotProvenance[];
  /** Manifests in the lineage store. */
  readonly stored: number;
  /** From the newest checkpoint back to its origin. */
  readonly chain: readonly ChainLink[];
  /** The trusted key's hint, or null when none was opened. */
  readonly trustedKey: string | null;
  /** Every problem found (a file that does not read, a shard that differs, a broken link, a signature), in words. */
  readonly problems: readonly string[];
}

/** SHA-256 (hex) of bytes, by WebCrypto. */
async function sha256Of(bytes: ArrayBuffer | Uint8Array): Promise<string> {
  const data = bytes instanceof Uint8Array ? bytes.slice() : bytes;
  const hash = new Uint8Array(await crypto.subtle.digest('SHA-256', data));
  return Array.from(hash, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** SHA-256 (hex) of a piece of a file. */
async function digestOf(file: Blob, start: number, end: number): Promise<string> {
  return sha256Of(await file.slice(start, end).arrayBuffer());
}

/** Checks the files of a directory against a manifest's resources: the first difference, or null. */
async function filesProblem(manifest: ParsedManifest, files: (name: string) => Blob | undefined, where: string): Promise<string | null> {
  const listed = new Map<string, number>();
  for (const r of manifest.resources) {
    const file = files(r.path);
    if (file === undefined) return `${where}/${r.path} is missing, and ${MANIFEST_FILE} lists it`;
    const end = r.end ?? file.size;
    if (end > file.size) return `${where}/${r.path} is ${file.size} bytes, ${MANIFEST_FILE} lists ${end}`;
    if ((await digestOf(file, r.start, end)) !== r.digest) return `${where}/${r.path}: bytes [${r.start}, ${end}) differ from ${MANIFEST_FILE}`;
    listed.set(r.path, end);
  }
  for (const [path, end] of listed) {
    const size = files(path)?.size ?? 0;
    if (end !== size) return `${where}/${path} is ${size} bytes, ${MANIFEST_FILE} lists ${end}`;
  }
  return null;
}

function readManifest(bytes: Uint8Array, where: string): { manifest: ParsedManifest | null; problem: string | null } {
  try {
    return { manifest: parseManifest(bytes, where), problem: null };
  } catch (e) {
    return { manifest: null, problem: (e as Error).message };
  }
}

/**
 * Reads and checks a run's lineage.
 *
 * @param files - the run's files by path relative to the run.
 * @param trustKey - a public key opened with the run, or null.
 * @returns the lineage view.
 */
export async function readLineage(files: ReadonlyMap<string, Blob>, trustKey: TrustedKey | null): Promise<LineageView> {
  const problems: string[] = [];
  let runJson: (ChainEvents & { runId?: unknown }) | null = null;
  try {
    const text = await files.get(RUN_FILES.manifest)?.text();
    runJson = text === undefined ? null : (JSON.parse(text) as ChainEvents & { runId?: unknown });
  } catch {
    runJson = null; // the run view says what is wrong with run.json
  }
  const entries = new Map<string, { source: string; manifest: ParsedManifest; slots: string[] }>();
  let stored = 0;
  for (const [path, blob] of files) {
    const parts = path.split('/');
    if (parts.length !== 2 || parts[0] !== LINEAGE_DIR || !(parts[1] as string).endsWith('.sig')) continue;
    const { manifest, problem } = readManifest(new Uint8Array(await blob.arrayBuffer()), path);
    if (manifest === null) {
      problems.push(problem ?? `${path} does not read`);
      continue;
    }
    stored += 1;
    entries.set(await sha256Of(manifest.payload), { source: path, manifest, slots: [] });
  }
  const slotNames = [...new Set([...files.keys()].map((p) => p.split('/')).filter((p) => p.length === 3 && p[0] === RUN_FILES.checkpoints && isSlotName(p[1] as string)).map((p) => p[1] as string))].sort(compareSlots);
  const slots: SlotProvenance[] = [];
  const signature = async (m: ParsedManifest): Promise<SignatureStatus | 'signed'> => (trustKey === null ? (m.hint === null ? 'unsigned' : 'signed') : verifyManifestSignature(m, trustKey));
  for (const slot of slotNames) {
    const where = `${RUN_FILES.checkpoints}/${slot}`;
    const blob = files.get(`${where}/${MANIFEST_FILE}`);
    if (blob === undefined) {
      slots.push({ slot, files: 'no manifest', signature: null, problem: null });
      continue;
    }
    const { manifest, problem } = readManifest(new Uint8Array(await blob.arrayBuffer()), `${where}/${MANIFEST_FILE}`);
    if (manifest === null) {
      slots.push({ slot, files: 'invalid', signature: null, problem });
      problems.push(problem ?? `${where}/${MANIFEST_FILE} does not read`);
      continue;
    }
    const mismatch = await filesProblem(manifest, (name) => files.get(`${where}/${name}`), where);
    const named = stepOfSlot(slot);
    const wrongStep = named !== null && manifest.lineage !== null && manifest.lineage.step !== named ? `${where} holds the checkpoint of step ${manifest.lineage.step}, not of step ${named}` : null;
    const fileProblem = mismatch ?? wrongStep;
    const sig = await signature(manifest);
    const sigProblem = trustKey !== null && sig !== 'verified' ? `${where}/${MANIFEST_FILE}: ${sig === 'other-key' ? 'signed by another key' : sig === 'unsigned' ? 'not signed' : 'its signature does not verify'} (trusted key ${trustKey.hint.slice(0, 16)}…)` : null;
    slots.push({ slot, files: fileProblem === null ? 'ok' : 'mismatch', signature: sig, problem: fileProblem ?? sigProblem });
    for (const p of [fileProblem, sigProblem]) if (p !== null) problems.push(p);
    if (fileProblem !== null || manifest.lineage === null) continue;
    const key = await sha256Of(manifest.payload);
    const entry = entries.get(key) ?? { source: `${where}/${MANIFEST_FILE}`, manifest, slots: [] };
    entry.slots.push(slot);
    entries.set(key, entry);
  }
  if (trustKey !== null) {
    for (const e of entries.values()) {
      if (e.slots.length > 0) continue;
      const sig = await verifyManifestSignature(e.manifest, trustKey);
      if (sig !== 'verified') problems.push(`${e.source}: ${sig === 'other-key' ? 'signed by another key' : sig === 'unsigned' ? 'not signed' : 'its signature does not verify'}`);
    }
  }
  if (entries.size === 0 && slots.every((s) => s.files === 'no manifest')) return { state: 'none', slots, stored, chain: [], trustedKey: trustKey?.hint ?? null, problems };
  const chainEntries: ChainEntry[] = [...entries.values()].filter((e) => e.manifest.lineage !== null).map((e) => ({ source: e.source, digest: e.manifest.digest, lineage: e.manifest.lineage as ChainEntry['lineage'], slots: e.slots }));
  const runId = typeof runJson?.runId === 'string' ? runJson.runId : (chainEntries[0]?.lineage.run ?? '');
  const { context } = chainContext(runJson, runId);
  const index = indexChain(chainEntries);
  // The newest checkpoint: latest, else the newest slot that holds one.
  const start =
    chainEntries.find((e) => e.slots.includes('latest')) ??
    [...chainEntries].filter((e) => e.slots.length > 0).sort((a, b) => b.lineage.step - a.lineage.step)[0] ??
    null;
  const chain = start === null ? [] : walkChain(start, index, context);
  for (const l of chain) if (l.problem !== null) problems.push(l.problem);
  return { state: 'checked', slots, stored, chain, trustedKey: trustKey?.hint ?? null, problems };
}
