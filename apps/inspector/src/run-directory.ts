/**
 * Whole run directories opened in the page (by the directory picker or by
 * dropping a folder): the files are grouped into runs by where `run.json`,
 * `loss.jsonl` and `checkpoints/<slot>/` lie, then each run is read —
 * `run.json` events, `loss.jsonl` curves, and per slot the step its
 * `job.json` records and the size of its `state.llmcp` (the state bytes
 * themselves are read only when a slot is opened).
 */
import { parseLossHistory, type LossHistory } from './loss-history.ts';
import { eventMarkers, parseRunManifest, type EventMarker, type RunManifestView } from './run-events.ts';
import { compareSlots, isSlotName, RUN_FILES, stepOfSlot } from './run-layout.ts';
import { readLineage, type LineageView } from './run-lineage.ts';
import type { TrustedKey } from '@llmcp/trainer/provenance';

/** A file with its path inside what was opened (`/`-separated, no leading `/`). */
export interface PathedFile {
  readonly path: string;
  readonly file: Blob;
}

/** The files of one run directory, by path relative to the run. */
export interface RunDirectory {
  readonly name: string;
  readonly files: ReadonlyMap<string, Blob>;
}

/** One checkpoint slot of a run. */
export interface SlotInfo {
  readonly name: string;
  /** The step its `job.json` records, or null (missing or unreadable job). */
  readonly step: number | null;
  readonly state: Blob | null;
  readonly job: Blob | null;
  /** Why the job could not be read, or null. */
  readonly jobProblem: string | null;
}

/** The latest sample audit of a run (`samples.json`): its step and the samples' texts. */
export interface SampleAuditView {
  readonly step: number | null;
  readonly samples: readonly string[];
  /** Why the file could not be read, or null. */
  readonly problem: string | null;
}

/**
 * Reads `samples.json` (the trainer's sample audit: `{ step, samples: [{ text, … }], … }`), tolerating what the page
 * cannot use: a sample without text shows as its token count.
 *
 * @param text - the file's text.
 * @returns the audit as shown.
 */
export function parseSampleAudit(text: string): SampleAuditView {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { step: null, samples: [], problem: `samples.json is not valid JSON: ${(e as Error).message}` };
  }
  const o = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  if (o === null || !Array.isArray(o['samples'])) return { step: null, samples: [], problem: 'samples.json holds no samples list' };
  const step = typeof o['step'] === 'number' && Number.isSafeInteger(o['step']) ? o['step'] : null;
  const samples = (o['samples'] as unknown[]).map((s) => {
    const r = typeof s === 'object' && s !== null ? (s as Record<string, unknown>) : {};
    if (typeof r['text'] === 'string') return r['text'];
    return Array.isArray(r['tokens']) ? `(${r['tokens'].length} tokens, not text)` : '(no text)';
  });
  return { step, samples, problem: null };
}

/** A run directory as read. */
export interface OpenedRun {
  readonly name: string;
  readonly manifest: RunManifestView | null;
  readonly loss: LossHistory | null;
  /** The latest sample audit (`samples.json`), or null when the run has none. */
  readonly samples: SampleAuditView | null;
  readonly slots: readonly SlotInfo[];
  readonly markers: readonly EventMarker[];
  readonly fileCount: number;
  /** Its provenance manifests checked and its lineage chain (`state: 'none'` for a run written before manifests). */
  readonly lineage: LineageView;
}

function normal(p: string): string {
  return p.replace(/\\/g, '/').replace(/^\/+/, '');
}

/**
 * @param p - a normalised path.
 * @returns the run root it reveals (`a/b` for `a/b/run.json` or `a/b/checkpoints/latest/x`), or null.
 */
function rootOf(p: string): string | null {
  const parts = p.split('/');
  const last = parts.at(-1);
  // A loss.jsonl opened on its own (no folder) is a file, not a run.
  if (last === RUN_FILES.manifest || (last === RUN_FILES.lossLog && parts.length > 1)) return parts.slice(0, -1).join('/');
  for (let k = parts.length - 3; k >= 0; k--) {
    if (parts[k] === RUN_FILES.checkpoints && isSlotName(parts[k + 1] as string)) return parts.slice(0, k).join('/');
  }
  return null;
}

/**
 * Groups opened files into run directories: a run is a directory holding
 * `run.json`, `loss.jsonl` or `checkpoints/<slot>/`. Files outside every run
 * are returned as they are (to be opened one by one).
 *
 * @param files - the opened files with their paths.
 * @returns the runs (in path order) and the other files.
 */
export function groupRunFiles(files: readonly PathedFile[]): { runs: RunDirectory[]; rest: PathedFile[] } {
  const roots = new Set<string>();
  for (const f of files) {
    const r = rootOf(normal(f.path));
    if (r !== null) roots.add(r);
  }
  // A root inside another run's checkpoints/ is not a run of its own.
  const sorted = [...roots].sort((a, b) => a.length - b.length);
  const kept = sorted.filter((r) => !sorted.some((o) => o !== r && (o === '' || r.startsWith(`${o}/`)) && r.slice(o === '' ? 0 : o.length + 1).startsWith(`${RUN_FILES.checkpoints}/`)));
  const byRoot = new Map<string, Map<string, Blob>>(kept.map((r) => [r, new Map()]));
  const rest: PathedFile[] = [];
  for (const f of files) {
    const p = normal(f.path);
    let best: string | null = null;
    for (const r of kept) if ((r === '' || p.startsWith(`${r}/`)) && (best === null || r.length > best.length)) best = r;
    if (best === null) rest.push(f);
    else byRoot.get(best)?.set(best === '' ? p : p.slice(best.length + 1), f.file);
  }
  const runs = [...byRoot.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([root, m]) => ({ name: root === '' ? 'run' : (root.split('/').at(-1) as string), files: m }));
  return { runs, rest };
}

async function jobStep(job: Blob): Promise<{ step: number | null; problem: string | null }> {
  try {
    const value = JSON.parse(await job.text()) as { step?: unknown } | null;
    const step = value?.step;
    return typeof step === 'number' && Number.isSafeInteger(step) && step >= 0 ? { step, problem: null } : { step: null, problem: 'job.json has no step' };
  } catch (e) {
    return { step: null, problem: `job.json is not valid JSON: ${(e as Error).message}` };
  }
}

/**
 * Reads a run: its manifest, its loss history, its slots and its lineage.
 *
 * @param dir - the run's files.
 * @param trustKey - a public key opened with it (signatures are checked against it), or null.
 * @returns the run as shown.
 */
export async function readRun(dir: RunDirectory, trustKey: TrustedKey | null = null): Promise<OpenedRun> {
  const manifestFile = dir.files.get(RUN_FILES.manifest);
  const lossFile = dir.files.get(RUN_FILES.lossLog);
  const manifest = manifestFile === undefined ? null : parseRunManifest(await manifestFile.text());
  const loss = lossFile === undefined ? null : parseLossHistory(await lossFile.text());
  const samplesFile = dir.files.get(RUN_FILES.samples);
  const samples = samplesFile === undefined ? null : parseSampleAudit(await samplesFile.text());
  const names = new Set<string>();
  for (const p of dir.files.keys()) {
    const parts = p.split('/');
    if (parts.length === 3 && parts[0] === RUN_FILES.checkpoints && isSlotName(parts[1] as string)) names.add(parts[1] as string);
  }
  const slots: SlotInfo[] = [];
  for (const name of [...names].sort(compareSlots)) {
    const state = dir.files.get(`${RUN_FILES.checkpoints}/${name}/${RUN_FILES.state}`) ?? null;
    const job = dir.files.get(`${RUN_FILES.checkpoints}/${name}/${RUN_FILES.job}`) ?? null;
    const read = job === null ? { step: stepOfSlot(name), problem: 'no job.json' } : await jobStep(job);
    slots.push({ name, step: read.step, state, job, jobProblem: read.problem });
  }
  const lineage = await readLineage(dir.files, trustKey);
  return { name: dir.name, manifest, loss, samples, slots, markers: manifest === null ? [] : eventMarkers(manifest), fileCount: dir.files.size, lineage };
}

/**
 * The copies of a slot's checkpoint in the same run: other slots with a
 * state file and the same step — step snapshots first, then the named slots
 * in resume order (`latest.backup` of the same step, `best`, …).
 *
 * @param run - the run.
 * @param slot - the slot.
 * @returns candidate copies, best first.
 */
export function copiesOf(run: OpenedRun, slot: SlotInfo): SlotInfo[] {
  if (slot.step === null) return [];
  const same = run.slots.filter((s) => s.name !== slot.name && s.state !== null && s.step === slot.step);
  const snapshots = same.filter((s) => stepOfSlot(s.name) !== null);
  const named = same.filter((s) => stepOfSlot(s.name) === null);
  return [...snapshots, ...named];
}
