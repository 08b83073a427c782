/**
 * A run's lineage store, `<run>/lineage/`: one file per checkpoint manifest
 * the run ever published, kept when its slot is rotated out or pruned by
 * retention (a few kilobytes each). The chain of a run therefore verifies
 * from its newest checkpoint back to step 0 (or to its fork point): a parent
 * whose files are gone is named *pruned* — its signed manifest is still here —
 * never a broken link.
 *
 * Each entry is written (temporary file, fsync, rename, fsync of the
 * directory) before the slots holding its checkpoint are published, so every
 * published manifest is in the store; a crash in between leaves an entry no
 * slot holds, never a slot without its entry. Entries are named
 * `step_NNNNNN-<sha256 of the statement>.sig`: the same checkpoint saved
 * again with the same lineage is the same entry.
 */
import { closeSync, existsSync, fsyncSync, openSync, readdirSync, readFileSync, renameSync, lstatSync } from 'node:fs';
import path from 'node:path';
import { LINEAGE_DIR, MANIFEST_SUFFIX } from './provenance.ts';
import { fsyncDirectory, makeDirectories, removeLeftovers, uniqueSibling, writeAllSync } from './internal/durable-fs.ts';

export { LINEAGE_DIR };

const ENTRY = /^step_(\d{6,})-([0-9a-f]{64})\.sig$/;

/**
 * The name of a store entry.
 *
 * @param step - the checkpoint's step.
 * @param payloadDigest - SHA-256 hex of the manifest's statement.
 * @returns `step_NNNNNN-<hex>.sig`.
 */
export function lineageEntryName(step: number, payloadDigest: string): string {
  return `step_${String(step).padStart(6, '0')}-${payloadDigest}${MANIFEST_SUFFIX}`;
}

/**
 * The step and statement digest a store entry's name stands for.
 *
 * @param name - a file name in `lineage/`.
 * @returns them, or null for any other name.
 */
export function parseLineageEntryName(name: string): { step: number; payloadDigest: string } | null {
  const m = ENTRY.exec(name);
  return m === null ? null : { step: Number(m[1]), payloadDigest: m[2] as string };
}

/**
 * Adds a manifest to the store (idempotent: an entry of the same name is
 * the same statement and is left as it is).
 *
 * @param runDir - the run directory.
 * @param entry - the checkpoint's step, its statement digest and the manifest's bytes.
 * @param entry.step - the step.
 * @param entry.payloadDigest - SHA-256 hex of the statement.
 * @param entry.bytes - the manifest file's bytes.
 */
export function storeManifest(runDir: string, entry: { readonly step: number; readonly payloadDigest: string; readonly bytes: Uint8Array }): void {
  const dir = path.join(runDir, LINEAGE_DIR);
  makeDirectories(dir);
  const target = path.join(dir, lineageEntryName(entry.step, entry.payloadDigest));
  if (existsSync(target)) return;
  const tmp = uniqueSibling(dir, 'tmp-entry');
  const fd = openSync(tmp, 'wx', 0o644);
  try {
    writeAllSync(fd, entry.bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, target);
  fsyncDirectory(dir);
}

/** One file of the store as read (not yet parsed). */
export interface LineageEntry {
  /** Its name inside `lineage/`. */
  readonly name: string;
  /** `lineage/<name>`, for messages. */
  readonly where: string;
  readonly bytes: Uint8Array | null;
  /** Why it could not be read, or why its name is not an entry's. */
  readonly problem: string | null;
}

/**
 * Reads every entry of a run's store (hidden `.tmp-*` leftovers of an
 * interrupted write are skipped).
 *
 * @param runDir - the run directory.
 * @returns the entries by name; empty when the run has no store.
 */
export function readLineageStore(runDir: string): LineageEntry[] {
  const dir = path.join(runDir, LINEAGE_DIR);
  let names: string[];
  try {
    if (!lstatSync(dir).isDirectory()) return [{ name: LINEAGE_DIR, where: LINEAGE_DIR, bytes: null, problem: `${LINEAGE_DIR} is not a directory` }];
    names = readdirSync(dir).sort();
  } catch {
    return [];
  }
  const out: LineageEntry[] = [];
  for (const name of names) {
    if (name.startsWith('.')) continue;
    const where = `${LINEAGE_DIR}/${name}`;
    if (parseLineageEntryName(name) === null) {
      out.push({ name, where, bytes: null, problem: `${where} is not a lineage entry (expected step_NNNNNN-<sha256>${MANIFEST_SUFFIX})` });
      continue;
    }
    try {
      const file = path.join(dir, name);
      if (!lstatSync(file).isFile()) throw new Error('not a regular file');
      out.push({ name, where, bytes: new Uint8Array(readFileSync(file)), problem: null });
    } catch (e) {
      out.push({ name, where, bytes: null, problem: `${where} cannot be read: ${(e as Error).message}` });
    }
  }
  return out;
}

/**
 * Removes leftovers of interrupted store writes (`.tmp-*`).
 *
 * @param runDir - the run directory.
 */
export function removeLineageLeftovers(runDir: string): void {
  removeLeftovers(path.join(runDir, LINEAGE_DIR));
}
