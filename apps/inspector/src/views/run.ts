/** One opened run directory: its slots (open one to audit it) and the decisions of its `run.json`. */
import { h, section, table } from '../dom.ts';
import { bytesText } from '../format-text.ts';
import type { OpenedRun, SlotInfo } from '../run-directory.ts';

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
          ['slot', 'step', 'state.llmcp', 'job.json', ''],
          run.slots.map((s) => [
            h('code', {}, s.name),
            s.step === null ? '?' : String(s.step),
            s.state === null ? h('span', { class: 'bad-text' }, 'missing') : bytesText(s.state.size),
            s.jobProblem === null ? 'ok' : h('span', { class: 'bad-text' }, s.jobProblem),
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
    section('Decisions (run.json)', { 'data-role': 'run-events' }, events),
  );
}
