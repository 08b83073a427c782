/**
 * The llmcp inspector page: open files or whole run directories by picker or
 * drag and drop, decode and audit them with `@llmcp/format` in the browser,
 * render the result.
 */
import { inspectCheckpoint, locateByteDifferences } from '@llmcp/format/inspect';
import { droppedFiles } from './dropped-entries.ts';
import { h } from './dom.ts';
import { classify, type Opened, type OpenedCheckpoint, type OpenedForeign, type OpenedJob, type OpenedLossLog } from './opened.ts';
import { copiesOf, groupRunFiles, readRun, type OpenedRun, type PathedFile, type SlotInfo } from './run-directory.ts';
import { RUN_FILES } from './run-layout.ts';
import './style.css';
import { checkpointView, type CopyCheck } from './views/checkpoint.ts';
import { diffView } from './views/diff.ts';
import { foreignView } from './views/foreign.ts';
import { lossView, type CurveSource } from './views/loss.ts';
import { runView } from './views/run.ts';
import { importTrustedKey, type TrustedKey } from '@llmcp/trainer/provenance';

/** The checkpoint of a run's slot, shown with its copy check. */
interface OpenedSlot {
  readonly run: OpenedRun;
  readonly slot: string;
  readonly checkpoint: OpenedCheckpoint;
  readonly copyCheck: CopyCheck;
}

interface State {
  /** Run directories: the last two opened (A and B on the curves). */
  runs: OpenedRun[];
  slot: OpenedSlot | null;
  /** At most two: the last two opened. */
  checkpoints: OpenedCheckpoint[];
  /** Safetensors and GGUF files: the last two opened. */
  foreign: OpenedForeign[];
  loss: OpenedLossLog | null;
  job: OpenedJob | null;
  /** A public key opened (a `.pem` file): run manifests' signatures are checked against it. */
  trustKey: TrustedKey | null;
}

const state: State = { runs: [], slot: null, checkpoints: [], foreign: [], loss: null, job: null, trustKey: null };

function element<T extends HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (el === null) throw new Error(`missing #${id}`);
  return el as T;
}

function render(): void {
  const content = element<HTMLDivElement>('content');
  content.replaceChildren();
  if (state.runs.length > 0) {
    content.appendChild(
      h('div', { class: state.runs.length === 2 ? 'two-up' : 'one-up' }, ...state.runs.map((r, k) => runView({ run: r, letter: k === 0 ? 'A' : 'B', opened: state.slot?.run === r ? state.slot.slot : null, onOpen: (s) => void openSlot(r, s) }))),
    );
  }
  const sources: CurveSource[] = state.runs.filter((r) => r.loss !== null).map((r) => ({ name: r.name, history: r.loss as NonNullable<OpenedRun['loss']>, markers: r.markers }));
  if (state.loss !== null) sources.push({ name: state.loss.name, history: state.loss.history, markers: [] });
  let drawChart: (() => void) | null = null;
  if (sources.length > 0 || state.job !== null) {
    const view = lossView(sources.slice(-2), state.job);
    content.appendChild(view.element);
    drawChart = view.draw;
  }
  if (state.slot !== null) content.appendChild(checkpointView(state.slot.checkpoint, { id: 'slot', copyCheck: state.slot.copyCheck }));
  const [a, b] = state.checkpoints;
  if (a !== undefined && b !== undefined) content.appendChild(diffView(a, b));
  const grid = h('div', { class: state.checkpoints.length === 2 ? 'two-up' : 'one-up' }, ...state.checkpoints.map((c, k) => checkpointView(c, { id: `cp${k}` })));
  content.appendChild(grid);
  if (state.foreign.length > 0) content.appendChild(h('div', { class: state.foreign.length === 2 ? 'two-up' : 'one-up' }, ...state.foreign.map(foreignView)));
  drawChart?.();
  document.body.dataset.ready = String(Date.now());
}

async function bytesOf(blob: Blob): Promise<Uint8Array> {
  return new Uint8Array(await blob.arrayBuffer());
}

/**
 * Reads a slot's checkpoint and compares it with a copy of the same step (a step snapshot, else a named slot).
 *
 * @param run - the run.
 * @param slot - the slot.
 * @returns the audit and copy check, or null when the slot has no state file.
 */
async function loadSlot(run: OpenedRun, slot: SlotInfo): Promise<OpenedSlot | null> {
  if (slot.state === null) return null;
  const name = `${run.name}/${RUN_FILES.checkpoints}/${slot.name}/${RUN_FILES.state}`;
  const bytes = await bytesOf(slot.state);
  const opened = classify(name, bytes);
  const checkpoint: OpenedCheckpoint = opened.kind === 'checkpoint' ? opened : { kind: 'checkpoint', name, bytes, inspection: inspectCheckpoint(bytes) };
  const copy = copiesOf(run, slot)[0];
  let copyCheck: CopyCheck;
  if (copy === undefined || copy.state === null) {
    const others = run.slots.filter((s) => s.name !== slot.name && s.state !== null).map((s) => `${s.name} is step ${s.step ?? '?'}`);
    copyCheck = { label: slot.name, copy: null, note: `No other slot of step ${slot.step ?? '?'} holds a copy to compare with${others.length === 0 ? '.' : ` (${others.join(', ')}).`}` };
  } else {
    const copyBytes = await bytesOf(copy.state);
    const inspection = inspectCheckpoint(copyBytes);
    const differences = locateByteDifferences(bytes, copyBytes, { a: checkpoint.inspection, b: inspection });
    copyCheck = { label: slot.name, copy: { name: copy.name, inspection, differences }, note: `Compared with ${copy.name}, the copy of step ${slot.step ?? '?'}.` };
  }
  return { run, slot: slot.name, checkpoint, copyCheck };
}

async function openSlot(run: OpenedRun, slot: SlotInfo): Promise<void> {
  state.slot = await loadSlot(run, slot);
  render();
  document.getElementById('slot')?.scrollIntoView();
}

async function open(files: readonly PathedFile[]): Promise<void> {
  const status = element<HTMLParagraphElement>('status');
  const { runs, rest: others } = groupRunFiles(files);
  // A public key opened with (or before) a run: its manifests' signatures are checked against it.
  const keys = others.filter((f) => f.path.endsWith('.pem'));
  for (const k of keys) {
    try {
      state.trustKey = await importTrustedKey(await k.file.text(), k.path);
    } catch (e) {
      status.textContent = `${k.path}: ${(e as Error).message}`;
    }
  }
  const rest = others.filter((f) => !f.path.endsWith('.pem'));
  const openedRuns: OpenedRun[] = [];
  for (const dir of runs) openedRuns.push(await readRun(dir, state.trustKey));
  const opened: Opened[] = [];
  for (const f of rest) opened.push(classify(f.path.split('/').at(-1) ?? f.path, await bytesOf(f.file)));
  if (openedRuns.length > 0) {
    state.runs = [...state.runs, ...openedRuns].slice(-2);
    if (state.slot !== null && !state.runs.includes(state.slot.run)) state.slot = null;
    // Show the newest run's latest checkpoint (or its first slot with a state file).
    const newest = openedRuns.at(-1) as OpenedRun;
    const first = newest.slots.find((s) => s.name === 'latest' && s.state !== null) ?? newest.slots.find((s) => s.state !== null);
    if (first !== undefined) state.slot = await loadSlot(newest, first);
  }
  const newCheckpoints = opened.filter((o): o is OpenedCheckpoint => o.kind === 'checkpoint');
  if (newCheckpoints.length > 0) state.checkpoints = [...state.checkpoints, ...newCheckpoints].slice(-2);
  const newForeign = opened.filter((o): o is OpenedForeign => o.kind === 'foreign');
  if (newForeign.length > 0) state.foreign = [...state.foreign, ...newForeign].slice(-2);
  for (const o of opened) {
    if (o.kind === 'loss') state.loss = o;
    if (o.kind === 'job') state.job = o;
  }
  const what = [
    ...(keys.length === 0 || state.trustKey === null ? [] : [`public key ${state.trustKey.hint.slice(0, 16)}… (signatures are checked against it)`]),
    ...openedRuns.map((r) => `run directory ${r.name} (${r.slots.length} slot(s), ${r.loss?.training.length ?? 0} loss records)`),
    ...opened.map((o) => `${o.name} (${o.kind === 'foreign' ? `${o.format}, not an LLMCP35 checkpoint` : o.kind})`),
  ];
  status.textContent = `Opened ${what.join(', ') || 'nothing'}. Showing ${state.runs.length} run(s), ${state.checkpoints.length} checkpoint(s)${state.checkpoints.length === 2 ? ' and their comparison' : ''}.`;
  render();
}

function setup(): void {
  const input = element<HTMLInputElement>('file-input');
  input.addEventListener('change', () => {
    const files = Array.from(input.files ?? [], (file) => ({ path: file.name, file }));
    input.value = '';
    void open(files);
  });
  const dirInput = element<HTMLInputElement>('dir-input');
  dirInput.addEventListener('change', () => {
    const files = Array.from(dirInput.files ?? [], (file) => ({ path: file.webkitRelativePath || file.name, file }));
    dirInput.value = '';
    void open(files);
  });
  const zone = element<HTMLElement>('open');
  const over = (e: DragEvent): void => {
    e.preventDefault();
    zone.classList.add('dragging');
  };
  zone.addEventListener('dragenter', over);
  zone.addEventListener('dragover', over);
  zone.addEventListener('dragleave', () => zone.classList.remove('dragging'));
  zone.addEventListener('drop', (e: DragEvent) => {
    e.preventDefault();
    zone.classList.remove('dragging');
    void droppedFiles(e.dataTransfer).then(open);
  });
  // Dropping anywhere on the page opens the files instead of navigating away.
  window.addEventListener('dragover', (e) => e.preventDefault());
  window.addEventListener('drop', (e) => {
    e.preventDefault();
    if (!zone.contains(e.target as Node)) void droppedFiles(e.dataTransfer).then(open);
  });
}

setup();
