/** One opened run directory: its slots (open one to audit it), its lineage chain and the decisions of its `run.json`. */
import { h, section, table } from '../dom.ts';
import { bytesText } from '../format-text.ts';
import type { OpenedRun, SlotInfo } from '../run-directory.ts';
import type { LineageView, SlotProvenance } from '../run-lineage.ts';

/** A slot's manifest verdict, as a table cell. */
function manifestCell(p: SlotProvenance | undefined): HTMLElement | string {
  if (p === undefined || p.files === 'no manifest') return h('span', { class: 'muted' }, 'no manifest');
  if (p.files !== 'ok') return h('span', { class: 'bad-text', title: p.problem ?? '' }, p.files === 'invalid' ? 'invalid' : 'files differ');
  const sig = p.signature === 'verified' ? 'signed ✓' : p.signature === 'signed' ? 'signed (not checked)' : p.signature === 'unsigned' ? 'unsigned' : `signature: ${p.signature ?? '?'}`;
  const bad = p.signature === 'other-key' || p.signature === 'invalid' || (p.problem !== null && p.signature !== 'signed');
  return h('span', { class: bad ? 'bad-text' : '', title: p.problem ?? '' }, `ok, ${sig}`);
}

/**
 * The lineage chain: one row per checkpoint from the newest back to its
 * origin, with how it came from its parent, the slots holding it (or pruned)
 * and the state of its link.
 *
 * @param lineage - the run's lineage.
 * @returns the section's content.
 */
function lineageView(lineage: LineageView): HTMLElement {
  if (lineage.state === 'none') return h('p', { class: 'muted' }, 'No provenance manifests (a run written before them): nothing to check.');
  const key = lineage.trustedKey === null ? 'Signatures not checked: open the public key (.pem) with the run to check them.' : `Signatures checked against the key ${lineage.trustedKey.slice(0, 16)}….`;
  const status = (s: string): string => (s === 'root' ? 'fresh model' : s === 'fork' ? 'fork point (the parent is in another run)' : s === 'before-manifests' ? 'from a checkpoint without a manifest' : s === 'ok' ? 'linked' : 'BROKEN');
  const rows = lineage.chain.map((l) => [
    String(l.step),
    l.via,
    l.slots.length === 0 ? h('span', { class: 'muted' }, 'pruned (manifest kept)') : l.slots.join(', '),
    h('span', { class: l.status === 'broken' ? 'bad-text' : 'ok-text', title: l.problem ?? '' }, status(l.status)),
    h('code', { title: l.digest }, l.digest.slice(7, 19)),
  ]);
  const ok = lineage.problems.length === 0;
  return h(
    'div',
    { 'data-role': 'lineage', 'data-ok': String(ok) },
    h('p', { class: ok ? 'ok-text' : 'bad-text' }, ok ? `Verified: ${lineage.chain.length} checkpoint(s) from the newest back to ${lineage.chain.at(-1)?.status === 'root' ? 'step 0' : 'its origin'}, unbroken.` : `${lineage.problems.length} problem(s).`, ` ${lineage.stored} manifest(s) in lineage/. ${key}`),
    rows.length === 0 ? null : table(['step', 'came by', 'slots', 'link', 'digest'], rows, { class: 'fields', 'data-role': 'chain' }),
    ok ? null : h('ul', { class: 'bad-text', 'data-role': 'lineage-problems' }, ...lineage.problems.map((p) => h('li', {}, p))),
  );
}

/** What {@link runView} shows. */
export interface RunViewOptions {
  readonly run: OpenedRun;
  /** Its letter on the curves (A, B). */
  readonly letter: string;
  /** The slot whose checkpoint is shown, if it is one of this run's. */
  readonly opened: string | null;
  /** Opens a slot's checkpoint. */
  readonly onOpen: (slot: SlotInfo) => void;
}

/**
 * @param options - the run, its letter, the slot shown and the open action.
 * @returns the view.
 */
export function runView(options: RunViewOptions): HTMLElement {
  const { run, letter, opened, onOpen } = options;
  const slots =
    run.slots.length === 0
      ? h('p', { class: 'muted' }, 'No checkpoints/ slots.')
      : table(
          ['slot', 'step', 'state.llmcp', 'job.json', 'manifest', ''],
          run.slots.map((s) => [
            h('code', {}, s.name),
            s.step === null ? '?' : String(s.step),
            s.state === null ? h('span', { class: 'bad-text' }, 'missing') : bytesText(s.state.size),
            s.jobProblem === null ? 'ok' : h('span', { class: 'bad-text' }, s.jobProblem),
            manifestCell(run.lineage.slots.find((p) => p.slot === s.name)),
            s.state === null
              ? ''
              : opened === s.name
                ? h('strong', {}, 'shown below')
                : h('button', { type: 'button', class: 'button small', 'data-slot': s.name, onclick: () => onOpen(s) }, 'open'),
          ]),
          { class: 'fields', 'data-role': 'slots' },
        );
  const m = run.manifest;
  const events =
    m === null
      ? h('p', { class: 'muted' }, 'No run.json.')
      : m.events.length === 0
        ? h('p', { class: m.problem === null ? 'muted' : 'bad-text' }, m.problem ?? 'run.json lists no events.')
        : table(
            ['#', 'event', 'step', 'time', 'detail'],
            m.events.map((e) => [String(e.index), h('span', { class: `event event-${e.event}` }, e.event), e.step === null ? '' : String(e.step), e.time ?? '', e.detail]),
            { class: 'fields', 'data-role': 'events' },
          );
  return h(
    'article',
    { class: 'run', 'data-role': 'run', 'data-name': run.name },
    h('h2', {}, `Run ${letter}: ${run.name}`, h('span', { class: 'muted' }, ` — ${run.fileCount} files${m?.runId ? `, run id ${m.runId}` : ''}`)),
    m?.problem === null || m === null ? null : h('p', { class: 'bad-text' }, `run.json: ${m.problem}`),
    run.loss === null ? h('p', { class: 'muted' }, 'No loss.jsonl.') : null,
    section('Checkpoint slots', { 'data-role': 'run-slots' }, slots),
    section(
      run.samples === null ? 'Sample audit' : `Sample audit (samples.json${run.samples.step === null ? '' : `, step ${run.samples.step}`})`,
      { 'data-role': 'run-samples' },
      run.samples === null
        ? h('p', { class: 'muted' }, 'No samples.json.')
        : run.samples.problem !== null
          ? h('p', { class: 'bad-text' }, run.samples.problem)
          : h('ol', { class: 'samples' }, ...run.samples.samples.map((t) => h('li', {}, h('code', {}, JSON.stringify(t))))),
    ),
    section('Lineage (provenance manifests)', { 'data-role': 'run-lineage' }, lineageView(run.lineage)),
    section('Decisions (run.json)', { 'data-role': 'run-events' }, events),
  );
}
