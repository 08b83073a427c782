/**
 * The lineage chain of a run, browser-safe: from a checkpoint's manifest,
 * parent link by parent link, back to the fresh model (step 0), to the
 * fork point in another run, or to a checkpoint written before manifests.
 * The one rule for what makes a link hold, shared by `verifyRun` and the
 * inspector (../../../docs/DESIGN.md "Provenance: manifests, signatures and lineage").
 *
 * A link holds when the parent it names is a manifest of the run (a slot's
 * or the lineage store's: present or pruned) of the run and step the link
 * says; when it names a checkpoint of another run that `run.json` records as
 * the fork source; or when it names a checkpoint without a manifest written
 * before the run wrote manifests. Anything else is a broken link, named.
 */
import type { Lineage } from './provenance.ts';

/** A checkpoint manifest of the run, as the chain sees it. */
export interface ChainEntry {
  /** Where it was read (`checkpoints/latest/model.sig`, `lineage/step_…sig`), for messages. */
  readonly source: string;
  /** Its subject digest (`sha256:…`). */
  readonly digest: string;
  readonly lineage: Lineage;
  /** Slots whose files verified against it (empty: pruned — only its manifest is left). */
  readonly slots: readonly string[];
}

/** What the run's own records say about its origin and its manifests (from `run.json`). */
export interface ChainContext {
  /** The run's id. */
  readonly runId: string;
  /** Forks into this run: the source run's id and step, and the forked state's checksum when recorded. */
  readonly forkedFrom: readonly { readonly runId: string; readonly step: number; readonly stateChecksum: string | null }[];
  /**
   * Since when the run writes manifests: a checkpoint of a later step must
   * have one. `-1`: since it was created; a step: since a resume from that
   * step (that checkpoint itself may have none); null: run.json records no
   * manifests (a run written before them).
   */
  readonly manifestsAfter: number | null;
}

/** The events of `run.json` {@link chainContext} reads (a structural subset of `RunEvent`). */
export interface ChainEvents {
  readonly events: readonly {
    readonly event: string;
    readonly step?: number;
    readonly runId?: string;
    readonly stateChecksum?: string;
    readonly provenance?: { readonly signer: string | null };
  }[];
}

/**
 * What run.json says about a run's manifests and forks, and the signers it
 * records for its segments (null: it records none).
 *
 * @param runJson - the run's run.json (null: none).
 * @param runId - the run's id.
 * @returns the chain's context and the recorded signers.
 */
export function chainContext(runJson: ChainEvents | null, runId: string): { context: ChainContext; signers: Set<string | null> | null } {
  let after: number | null = null;
  const signers = new Set<string | null>();
  const forkedFrom: { runId: string; step: number; stateChecksum: string | null }[] = [];
  for (const e of runJson?.events ?? []) {
    if (['created', 'restarted', 'resumed', 'pivot'].includes(e.event) && e.provenance !== undefined) {
      signers.add(e.provenance.signer);
      if (e.event !== 'pivot') {
        // A resume from a checkpoint without a manifest: that checkpoint may lack one, every later one has one.
        const from = e.event === 'resumed' ? (e.step ?? -1) : -1;
        after = after === null ? from : Math.min(after, from);
      }
    }
    if (e.event === 'forked-from' && e.runId !== undefined && e.step !== undefined) forkedFrom.push({ runId: e.runId, step: e.step, stateChecksum: e.stateChecksum ?? null });
  }
  return { context: { runId, forkedFrom, manifestsAfter: after }, signers: signers.size === 0 ? null : signers };
}

/** How one checkpoint of a chain links to its parent. */
export type LinkStatus =
  /** A fresh model: no parent. */
  | 'root'
  /** The parent is a manifest of this run. */
  | 'ok'
  /** The parent is the fork source, in another run (the chain ends here). */
  | 'fork'
  /** The parent was written before the run wrote manifests (the chain ends here). */
  | 'before-manifests'
  /** The link does not hold (see the problem). */
  | 'broken';

/** One checkpoint of a chain and how it links to its parent. */
export interface ChainLink {
  readonly digest: string;
  readonly step: number;
  readonly run: string | null;
  readonly via: Lineage['via'];
  /** Where its manifest was read. */
  readonly source: string;
  /** Slots holding its files (empty: pruned by retention or rotated out; its manifest is in `lineage/`). */
  readonly slots: readonly string[];
  readonly status: LinkStatus;
  /** Why the link is broken, or null. */
  readonly problem: string | null;
  /** The parent's digest as the link names it (null for a root, or a parent without a manifest). */
  readonly parent: string | null;
}

/** Finds the manifests of a digest (several: the same checkpoint saved again on another path). */
export type ChainIndex = ReadonlyMap<string, readonly ChainEntry[]>;

/**
 * Indexes manifests by subject digest, those with slots first.
 *
 * @param entries - every manifest of the run.
 * @returns the index.
 */
export function indexChain(entries: readonly ChainEntry[]): ChainIndex {
  const index = new Map<string, ChainEntry[]>();
  for (const e of entries) index.set(e.digest, [...(index.get(e.digest) ?? []), e]);
  for (const list of index.values()) list.sort((a, b) => b.slots.length - a.slots.length);
  return index;
}

function describeEntry(e: { readonly digest: string; readonly lineage: Lineage }): string {
  return `step ${e.lineage.step} (${e.digest.slice(0, 19)}…)`;
}

/** How `entry` links to its parent, and the parent entry to walk on to (null: the chain ends). */
function linkOf(entry: ChainEntry, index: ChainIndex, walk: { readonly context: ChainContext; readonly seen: ReadonlySet<ChainEntry> }): { status: LinkStatus; problem: string | null; next: ChainEntry | null } {
  const { context, seen } = walk;
  const { lineage } = entry;
  const parent = lineage.parent;
  const here = `${entry.source} (${describeEntry(entry)})`;
  if (parent === null) {
    return lineage.via === 'init' ? { status: 'root', problem: null, next: null } : { status: 'broken', problem: `${here} has no parent link but says it came by ${lineage.via}`, next: null };
  }
  if (parent.step > lineage.step) return { status: 'broken', problem: `${here} names a parent of step ${parent.step}, after its own step`, next: null };
  if (parent.run !== lineage.run) {
    const fork = context.forkedFrom.find((f) => f.runId === parent.run && f.step === parent.step && (f.stateChecksum === null || f.stateChecksum === parent.state));
    if (lineage.via === 'fork' && fork !== undefined) return { status: 'fork', problem: null, next: null };
    return { status: 'broken', problem: `${here} names a parent in run ${parent.run ?? '(none)'} at step ${parent.step}, which run.json does not record as this run's fork source`, next: null };
  }
  if (parent.manifest === null) {
    if (context.manifestsAfter !== null && parent.step > context.manifestsAfter) {
      return { status: 'broken', problem: `${here} names a parent of step ${parent.step} without a manifest, although run.json records manifests for every checkpoint after step ${context.manifestsAfter}`, next: null };
    }
    return { status: 'before-manifests', problem: null, next: null };
  }
  const found = index.get(parent.manifest) ?? [];
  // The same files may have several manifests (saved again on another path); walk on through one not on the chain yet.
  const fits = (e: ChainEntry): boolean => e.lineage.run === parent.run && e.lineage.step === parent.step;
  const match = found.find((e) => fits(e) && !seen.has(e)) ?? found.find(fits);
  if (match === undefined) {
    const other = found[0];
    return {
      status: 'broken',
      problem:
        other === undefined
          ? `${here} names its parent of step ${parent.step} as ${parent.manifest.slice(0, 19)}…, which is in no slot and not in lineage/`
          : `${here} names its parent ${parent.manifest.slice(0, 19)}… as step ${parent.step} of run ${parent.run ?? '(none)'}, but that manifest (${other.source}) is of step ${other.lineage.step} of run ${other.lineage.run ?? '(none)'}`,
      next: null,
    };
  }
  return { status: 'ok', problem: null, next: match };
}

/**
 * Walks a chain from a checkpoint back to its origin.
 *
 * @param start - the checkpoint to start from (the newest, usually).
 * @param index - every manifest of the run ({@link indexChain}).
 * @param context - what run.json records.
 * @returns the chain, newest first; a broken link ends it (its `problem` says why).
 */
export function walkChain(start: ChainEntry, index: ChainIndex, context: ChainContext): ChainLink[] {
  const links: ChainLink[] = [];
  const seen = new Set<ChainEntry>();
  let entry: ChainEntry | null = start;
  while (entry !== null) {
    if (seen.has(entry)) {
      const last = links.at(-1) as ChainLink;
      links[links.length - 1] = { ...last, status: 'broken', problem: `${last.source} closes a cycle of parent links` };
      break;
    }
    seen.add(entry);
    const { status, problem, next } = linkOf(entry, index, { context, seen });
    const { lineage } = entry;
    links.push({ digest: entry.digest, step: lineage.step, run: lineage.run, via: lineage.via, source: entry.source, slots: entry.slots, status, problem, parent: lineage.parent?.manifest ?? null });
    entry = next;
  }
  return links;
}
