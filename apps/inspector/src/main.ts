/**
 * The llmcp inspector page: open files by picker or drag and drop, decode
 * and audit them with `@llmcp/format` in the browser, render the result.
 */
import { h } from './dom.ts';
import { classify, type Opened, type OpenedCheckpoint, type OpenedForeign, type OpenedJob, type OpenedLossLog } from './opened.ts';
import './style.css';
import { checkpointView } from './views/checkpoint.ts';
import { diffView } from './views/diff.ts';
import { foreignView } from './views/foreign.ts';
import { lossView } from './views/loss.ts';

interface State {
  /** At most two: the last two opened. */
  checkpoints: OpenedCheckpoint[];
  /** Safetensors and GGUF files: the last two opened. */
  foreign: OpenedForeign[];
  loss: OpenedLossLog | null;
  job: OpenedJob | null;
}

const state: State = { checkpoints: [], foreign: [], loss: null, job: null };

function element<T extends HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (el === null) throw new Error(`missing #${id}`);
  return el as T;
}

function render(): void {
  const content = element<HTMLDivElement>('content');
  content.replaceChildren();
  const [a, b] = state.checkpoints;
  if (a !== undefined && b !== undefined) content.appendChild(diffView(a, b));
  let drawChart: (() => void) | null = null;
  if (state.loss !== null || state.job !== null) {
    const view = lossView(state.loss, state.job);
    content.appendChild(view.element);
    drawChart = view.draw;
  }
  const grid = h('div', { class: state.checkpoints.length === 2 ? 'two-up' : 'one-up' }, ...state.checkpoints.map(checkpointView));
  content.appendChild(grid);
  if (state.foreign.length > 0) content.appendChild(h('div', { class: state.foreign.length === 2 ? 'two-up' : 'one-up' }, ...state.foreign.map(foreignView)));
  drawChart?.();
  document.body.dataset.ready = String(Date.now());
}

async function open(files: readonly File[]): Promise<void> {
  const status = element<HTMLParagraphElement>('status');
  const opened: Opened[] = [];
  for (const file of files) {
    const bytes = new Uint8Array(await file.arrayBuffer());
    opened.push(classify(file.name, bytes));
  }
  const newCheckpoints = opened.filter((o): o is OpenedCheckpoint => o.kind === 'checkpoint');
  if (newCheckpoints.length > 0) state.checkpoints = [...state.checkpoints, ...newCheckpoints].slice(-2);
  const newForeign = opened.filter((o): o is OpenedForeign => o.kind === 'foreign');
  if (newForeign.length > 0) state.foreign = [...state.foreign, ...newForeign].slice(-2);
  for (const o of opened) {
    if (o.kind === 'loss') state.loss = o;
    if (o.kind === 'job') state.job = o;
  }
  status.textContent = `Opened ${opened.map((o) => `${o.name} (${o.kind === 'foreign' ? `${o.format}, not an LLMCP35 checkpoint` : o.kind})`).join(', ')}. Showing ${state.checkpoints.length} checkpoint(s)${state.checkpoints.length === 2 ? ' and their comparison' : ''}${state.loss !== null || state.job !== null ? ' and the loss curves' : ''}.`;
  render();
}

function setup(): void {
  const input = element<HTMLInputElement>('file-input');
  input.addEventListener('change', () => {
    const files = Array.from(input.files ?? []);
    input.value = '';
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
    void open(Array.from(e.dataTransfer?.files ?? []));
  });
  // Dropping anywhere on the page opens the files instead of navigating away.
  window.addEventListener('dragover', (e) => e.preventDefault());
  window.addEventListener('drop', (e) => {
    e.preventDefault();
    if (!zone.contains(e.target as Node)) void open(Array.from(e.dataTransfer?.files ?? []));
  });
}

setup();
