/**
 * A run's `run.json` (format `llmcp-run/1`, see packages/trainer/src/run-manifest.ts):
 * the append-only log of decisions — created, resumed (with the slots refused
 * and the pieces repaired), restarted, stopped, completed, pivot, forked-from
 * and forked-to — read leniently, as plain rows for the page, and the steps
 * at which the curves get a marker (resumes, pivots, forks).
 */

/** One decision of the run, as shown. */
export interface RunEventRow {
  readonly index: number;
  readonly event: string;
  readonly time: string | null;
  readonly step: number | null;
  /** What else the event says (slot, refused slots, repairs, changed fields, the other run, reason). */
  readonly detail: string;
}

/** A marker on the curves. */
export interface EventMarker {
  readonly step: number;
  readonly event: 'resumed' | 'pivot' | 'forked-from' | 'forked-to';
  readonly label: string;
}

/** A parsed `run.json`. */
export interface RunManifestView {
  readonly runId: string | null;
  readonly events: readonly RunEventRow[];
  /** Why the file is not a run manifest, or null. */
  readonly problem: string | null;
}

const MARKED = new Set(['resumed', 'pivot', 'forked-from', 'forked-to']);

function str(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}

function list(v: unknown): string[] {
  return Array.isArray(v) ? v.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))) : [];
}

function detailOf(e: Record<string, unknown>): string {
  const parts: string[] = [];
  switch (e['event']) {
    case 'created':
      if (typeof e['steps'] === 'number') parts.push(`${e['steps']} steps`);
      break;
    case 'resumed': {
      if (str(e['slot']) !== null) parts.push(`from ${e['slot'] as string}`);
      if (typeof e['orphanedLossRecords'] === 'number' && e['orphanedLossRecords'] > 0) parts.push(`${e['orphanedLossRecords']} orphaned loss record(s) cut`);
      const refused = Array.isArray(e['refused']) ? (e['refused'] as unknown[]) : [];
      if (refused.length > 0) parts.push(`refused: ${refused.map((r) => `${str((r as Record<string, unknown>)['slot']) ?? '?'} (${str((r as Record<string, unknown>)['reason']) ?? '?'})`).join('; ')}`);
      const repaired = list(e['repaired']);
      if (repaired.length > 0) parts.push(`repaired: ${repaired.join(', ')}`);
      break;
    }
    case 'restarted':
    case 'stopped':
      if (str(e['reason']) !== null) parts.push(e['reason'] as string);
      break;
    case 'completed':
      if (typeof e['bestStep'] === 'number') parts.push(`best at step ${e['bestStep']}${typeof e['bestValidationLoss'] === 'number' ? ` (validation loss ${e['bestValidationLoss']})` : ''}`);
      break;
    case 'pivot':
      if (typeof e['pivot'] === 'number') parts.push(`pivot ${e['pivot']}`);
      if (list(e['changed']).length > 0) parts.push(`changed: ${list(e['changed']).join(', ')}`);
      if (str(e['reason']) !== null && e['reason'] !== '') parts.push(e['reason'] as string);
      break;
    case 'forked-from':
    case 'forked-to':
      parts.push(`${e['event'] === 'forked-from' ? 'from' : 'to'} ${str(e['run']) ?? '?'} (slot ${str(e['slot']) ?? '?'})`);
      if (list(e['changed']).length > 0) parts.push(`changed: ${list(e['changed']).join(', ')}`);
      break;
    default:
      break;
  }
  return parts.join(' · ');
}

/**
 * Reads `run.json` text.
 *
 * @param text - the file's text.
 * @returns its events (empty, with a problem, when it is not a run manifest).
 */
export function parseRunManifest(text: string): RunManifestView {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { runId: null, events: [], problem: `not valid JSON: ${(e as Error).message}` };
  }
  const o = value as Record<string, unknown> | null;
  if (typeof o !== 'object' || o === null || !Array.isArray(o['events'])) return { runId: null, events: [], problem: 'not a run manifest (no "events" list)' };
  const events: RunEventRow[] = (o['events'] as unknown[]).map((raw, index) => {
    const e = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
    return { index, event: str(e['event']) ?? '?', time: str(e['time']), step: typeof e['step'] === 'number' ? e['step'] : null, detail: detailOf(e) };
  });
  const problem = o['format'] === 'llmcp-run/1' ? null : `unexpected format ${JSON.stringify(o['format'])} (expected "llmcp-run/1")`;
  return { runId: str(o['runId']), events, problem };
}

/**
 * @param manifest - a parsed `run.json`.
 * @returns markers for the curves: every resume, pivot and fork, at its step.
 */
export function eventMarkers(manifest: RunManifestView): EventMarker[] {
  const out: EventMarker[] = [];
  for (const e of manifest.events) {
    if (e.step === null || !MARKED.has(e.event)) continue;
    out.push({ step: e.step, event: e.event as EventMarker['event'], label: e.event === 'resumed' ? 'resume' : e.event === 'pivot' ? 'pivot' : 'fork' });
  }
  return out;
}
