/** Reading run directories in tests. */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** Every file under `dir` (relative path → SHA-256), for "nothing changed" checks. */
export function snapshotTree(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const name of readdirSync(d).sort()) {
      const full = path.join(d, name);
      const rel = path.relative(dir, full);
      if (statSync(full).isDirectory()) {
        out.set(`${rel}/`, 'dir');
        walk(full);
      } else out.set(rel, createHash('sha256').update(readFileSync(full)).digest('hex'));
    }
  };
  walk(dir);
  return out;
}

/** The bytes the equivalence tests compare. */
export interface FinalBytes {
  readonly state: Buffer;
  readonly best: Buffer;
  readonly loss: Buffer;
}

/** Final `latest/state.llmcp`, `best/state.llmcp` and `loss.jsonl` of a run. */
export function finalBytes(runDir: string): FinalBytes {
  const read = (rel: string): Buffer => (existsSync(path.join(runDir, rel)) ? readFileSync(path.join(runDir, rel)) : Buffer.alloc(0));
  return { state: read('checkpoints/latest/state.llmcp'), best: read('checkpoints/best/state.llmcp'), loss: read('loss.jsonl') };
}

/** Asserts two runs ended in byte-identical files; names the first difference. */
export function sameBytes(a: FinalBytes, b: FinalBytes): string | null {
  for (const key of ['state', 'best', 'loss'] as const) {
    const x = a[key];
    const y = b[key];
    if (x.length === 0) return `${key}: the reference has no such file`;
    if (Buffer.compare(x, y) !== 0) {
      let i = 0;
      while (i < Math.min(x.length, y.length) && x[i] === y[i]) i += 1;
      return `${key}: first difference at byte ${i} of ${x.length}/${y.length} (0x${x[i]?.toString(16)} vs 0x${y[i]?.toString(16)})`;
    }
  }
  return null;
}

/**
 * Rewrites a run as the trainer left it before provenance manifests: no
 * `model.sig` in any slot, no `lineage/`, no `provenance` in run.json's
 * events. Tests that rewrite a job.json to stand for an older trainer's
 * checkpoint call it first (a manifest would name the job they replace).
 *
 * @param runDir - the run directory.
 */
export function asWrittenBeforeManifests(runDir: string): void {
  const checkpoints = path.join(runDir, 'checkpoints');
  if (existsSync(checkpoints)) for (const slot of readdirSync(checkpoints)) rmSync(path.join(checkpoints, slot, 'model.sig'), { force: true });
  rmSync(path.join(runDir, 'lineage'), { recursive: true, force: true });
  const runJson = path.join(runDir, 'run.json');
  if (!existsSync(runJson)) return;
  const manifest = JSON.parse(readFileSync(runJson, 'utf8')) as { events: Record<string, unknown>[] };
  writeFileSync(runJson, `${JSON.stringify({ ...manifest, events: manifest.events.map(({ provenance: _none, ...rest }) => rest) }, null, 2)}\n`);
}
