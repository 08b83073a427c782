/**
 * Verification of a run's provenance (Node): every manifest of the run — in
 * its slots and in its lineage store — read and checked, its signature
 * checked against a trusted key when one is given, and the lineage chain
 * walked from the newest checkpoint back to its origin (lineage-chain.ts).
 * The slots' files were checked against their manifests when the slots were
 * verified (`verifySlot`); this adds what only the whole run can say:
 *
 * - every manifest is of this run (a slot or an entry swapped in from another
 *   run is named), and every slot's manifest is in `lineage/`;
 * - a checkpoint that run.json says was written with a manifest has one;
 * - `latest` holds a checkpoint no older than `latest.backup`;
 * - every link holds (or names a pruned parent, the fork source, or a
 *   checkpoint from before manifests);
 * - with a trusted key, every manifest is signed by it and its signature
 *   verifies; without one, every signer is one run.json records.
 *
 * A run without any manifest, whose run.json records none, was written
 * before manifests: its report says so ("no manifest") and passes.
 */
import path from 'node:path';
import { chainContext, indexChain, walkChain, type ChainEntry, type ChainLink } from './lineage-chain.ts';
import { LINEAGE_DIR, lineageEntryName, parseLineageEntryName, readLineageStore } from './lineage-store.ts';
import { MANIFEST_FILE, parseManifest, verifyManifestSignature, type ParsedManifest, type SignatureStatus, type TrustedKey } from './provenance.ts';
import type { RunManifest } from './run-manifest.ts';
import type { VerifiedSlot } from './run-directory.ts';
import { statementDigest } from './checkpoint-manifest.ts';
import { isTrainerError, type TrainerErrorCode } from './errors.ts';

/** One thing wrong with a run's provenance. */
export interface ProvenanceProblem {
  readonly code: Extract<TrainerErrorCode, 'TRAINER_MANIFEST_INVALID' | 'TRAINER_MANIFEST_MISMATCH' | 'TRAINER_SIGNATURE_INVALID' | 'TRAINER_LINEAGE_BROKEN'>;
  readonly message: string;
  /** The file involved, relative to the run directory (`checkpoints/latest/model.sig`, `lineage/step_…sig`). */
  readonly file: string | null;
}

/** The verdict on one manifest file's signature. */
export interface ManifestVerdict {
  /** Relative to the run directory. */
  readonly file: string;
  readonly step: number;
  readonly digest: string;
  /** With a trusted key: how the signature stands against it; without: `signed` or `unsigned` (not checked). */
  readonly signature: SignatureStatus | 'signed';
  /** The signer's public key hint, or null when unsigned. */
  readonly signer: string | null;
}

/** The provenance part of a run's verification. */
export interface ProvenanceReport {
  readonly ok: boolean;
  /** `none`: no manifest anywhere and none recorded in run.json (a run written before manifests): nothing to check. */
  readonly state: 'none' | 'checked';
  /** The trusted key's hint, or null when none was given (signatures then not checked against a key). */
  readonly trustedKey: string | null;
  /** Every manifest file read (slots' and the store's). */
  readonly manifests: readonly ManifestVerdict[];
  /** The chain from the newest checkpoint back to its origin (empty without manifests). */
  readonly chain: readonly ChainLink[];
  /** Store entries no slot's chain reaches: a branch given up after a fallback, or a save cut short before its publication. */
  readonly unreached: readonly string[];
  readonly problems: readonly ProvenanceProblem[];
}

/** What {@link checkRunProvenance} examines. */
export interface RunProvenanceInput {
  readonly runDir: string;
  readonly runJson: RunManifest | null;
  /** The slots that verified (files checked against their manifests). */
  readonly slots: ReadonlyMap<string, VerifiedSlot>;
  /** The slot a resume would use (the chain starts there). */
  readonly resumeSlot: string | null;
  readonly trustKey: TrustedKey | null;
}

/**
 * Checks a run's provenance (see the module comment).
 *
 * @param input - the run, its run.json, its verified slots, the resume slot and the trusted key.
 * @returns the report; never throws for a damaged run.
 */
export async function checkRunProvenance(input: RunProvenanceInput): Promise<ProvenanceReport> {
  const { runDir, runJson, slots, resumeSlot, trustKey } = input;
  const runId = runJson?.runId ?? [...slots.values()][0]?.job.run.id ?? '';
  const problems: ProvenanceProblem[] = [];
  const problem = (code: ProvenanceProblem['code'], message: string, file: string | null): void => {
    if (!problems.some((p) => p.message === message)) problems.push({ code, message, file });
  };
  const { context, signers } = chainContext(runJson, runId);

  // The lineage store: every entry read, named for what it holds, of this run.
  const stored = new Map<string, { where: string; manifest: ParsedManifest }>();
  for (const entry of readLineageStore(runDir)) {
    if (entry.bytes === null) {
      problem('TRAINER_MANIFEST_INVALID', entry.problem ?? `${entry.where} cannot be read`, entry.where);
      continue;
    }
    let manifest: ParsedManifest;
    try {
      manifest = parseManifest(entry.bytes, entry.where);
    } catch (e) {
      problem(isTrainerError(e) && e.code === 'TRAINER_MANIFEST_INVALID' ? e.code : 'TRAINER_MANIFEST_INVALID', (e as Error).message, entry.where);
      continue;
    }
    const named = parseLineageEntryName(entry.name);
    const payloadDigest = statementDigest(manifest.payload);
    if (manifest.lineage === null || manifest.lineage.kind !== 'checkpoint') {
      problem('TRAINER_MANIFEST_INVALID', `${entry.where} holds no llmcp checkpoint lineage`, entry.where);
      continue;
    }
    if (named === null || named.payloadDigest !== payloadDigest || named.step !== manifest.lineage.step) {
      problem('TRAINER_MANIFEST_MISMATCH', `${entry.where} holds the manifest of step ${manifest.lineage.step} whose statement digest is ${payloadDigest}, not what its name says`, entry.where);
      continue;
    }
    if (manifest.lineage.run !== runId) {
      problem('TRAINER_MANIFEST_MISMATCH', `${entry.where} is a manifest of run ${manifest.lineage.run ?? '(none)'}, not of this run (${runId})`, entry.where);
      continue;
    }
    stored.set(payloadDigest, { where: entry.where, manifest });
  }

  // The slots' manifests: of this run, in the store; slots without one only where run.json allows it.
  const bySlot = new Map<string, { where: string; manifest: ParsedManifest; payloadDigest: string }>();
  for (const [slot, v] of slots) {
    const where = `checkpoints/${slot}/${MANIFEST_FILE}`;
    if (v.manifest === null) {
      if (context.manifestsAfter !== null && v.job.step > context.manifestsAfter) {
        problem('TRAINER_MANIFEST_MISMATCH', `checkpoints/${slot} (step ${v.job.step}) has no ${MANIFEST_FILE}, although run.json records manifests for every checkpoint after step ${context.manifestsAfter}`, where);
      }
      continue;
    }
    const manifest = v.manifest.parsed;
    const step = manifest.lineage?.step ?? v.job.step;
    if (manifest.lineage?.run !== runId) {
      problem('TRAINER_MANIFEST_MISMATCH', `checkpoints/${slot} holds a checkpoint of run ${manifest.lineage?.run ?? '(none)'}, not of this run (${runId})`, where);
      continue;
    }
    const payloadDigest = statementDigest(manifest.payload);
    if (!stored.has(payloadDigest)) {
      const name = path.posix.join(LINEAGE_DIR, lineageEntryName(step, payloadDigest));
      problem('TRAINER_LINEAGE_BROKEN', `${name}, the lineage store's copy of the manifest of checkpoints/${slot} (step ${step}), is missing`, name);
    }
    bySlot.set(slot, { where, manifest, payloadDigest });
  }
  if (stored.size === 0 && bySlot.size === 0 && signers === null) {
    return { ok: problems.length === 0, state: 'none', trustedKey: trustKey?.hint ?? null, manifests: [], chain: [], unreached: [], problems };
  }

  // latest is never older than its backup (a swap of the two is named).
  const latest = slots.get('latest');
  const backup = slots.get('latest.backup');
  if (latest !== undefined && backup !== undefined && backup.job.step > latest.job.step) {
    problem('TRAINER_MANIFEST_MISMATCH', `checkpoints/latest holds step ${latest.job.step}, older than checkpoints/latest.backup (step ${backup.job.step})`, 'checkpoints/latest');
  }

  // Signatures: against the trusted key, or (without one) the signers run.json records.
  const manifests: ManifestVerdict[] = [];
  const sign = async (file: string, manifest: ParsedManifest): Promise<void> => {
    const signer = manifest.hint;
    let signature: ManifestVerdict['signature'] = signer === null ? 'unsigned' : 'signed';
    if (trustKey !== null) {
      signature = await verifyManifestSignature(manifest, trustKey);
      if (signature !== 'verified') {
        const why =
          signature === 'unsigned'
            ? 'is not signed'
            : signature === 'other-key'
              ? `is signed by another key (hint ${signer ?? '?'}), not by the trusted key (hint ${trustKey.hint})`
              : 'has a signature that does not verify with the trusted key';
        problem('TRAINER_SIGNATURE_INVALID', `${file} ${why}`, file);
      }
    } else if (signers !== null && !signers.has(signer)) {
      problem('TRAINER_SIGNATURE_INVALID', `${file} is ${signer === null ? 'not signed' : `signed by key ${signer}`}, which run.json records for no segment of the run (it records ${[...signers].map((s) => s ?? 'unsigned').join(', ')})`, file);
    }
    manifests.push({ file, step: manifest.lineage?.step ?? -1, digest: manifest.digest, signature, signer });
  };
  for (const { where, manifest } of bySlot.values()) await sign(where, manifest);
  for (const { where, manifest } of stored.values()) await sign(where, manifest);

  // The chain: one entry per statement, with the slots that hold its files.
  const entries = new Map<string, { source: string; manifest: ParsedManifest; slots: string[] }>();
  for (const [digest, { where, manifest }] of stored) entries.set(digest, { source: where, manifest, slots: [] });
  for (const [slot, { where, manifest, payloadDigest }] of bySlot) {
    const e = entries.get(payloadDigest) ?? { source: where, manifest, slots: [] };
    e.slots.push(slot);
    entries.set(payloadDigest, e);
  }
  const chainEntries: ChainEntry[] = [...entries.values()].map((e) => ({ source: e.source, digest: e.manifest.digest, lineage: e.manifest.lineage as ChainEntry['lineage'], slots: e.slots }));
  const index = indexChain(chainEntries);
  const reached = new Set<string>();
  let chain: ChainLink[] = [];
  // The chain from the resume slot (the newest checkpoint); every other slot's ancestry is walked for broken links too.
  const starts = [...bySlot.keys()].sort((a, b) => (a === resumeSlot ? -1 : b === resumeSlot ? 1 : 0));
  for (const slot of starts) {
    const start = chainEntries.find((c) => c.slots.includes(slot));
    if (start === undefined) continue;
    const links = walkChain(start, index, context);
    if (chain.length === 0) chain = links;
    for (const l of links) {
      reached.add(l.digest);
      if (l.problem !== null) problem('TRAINER_LINEAGE_BROKEN', l.problem, l.source);
    }
  }
  const unreached = chainEntries.filter((c) => c.slots.length === 0 && !reached.has(c.digest)).map((c) => c.source);
  return { ok: problems.length === 0, state: 'checked', trustedKey: trustKey?.hint ?? null, manifests, chain, unreached, problems };
}
