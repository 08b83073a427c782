/** Loss and validation curves (uPlot) from `loss.jsonl` and/or `job.json`. */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { h, section } from '../dom.ts';
import { short } from '../format-text.ts';
import type { LossPoint, OpenedJob, OpenedLossLog } from '../opened.ts';

/** Builds the chart section; the chart itself is drawn once the section is in the document. */
export function lossView(log: OpenedLossLog | null, job: OpenedJob | null): { element: HTMLElement; draw: () => void } {
  const training: readonly LossPoint[] = log?.training ?? [];
  const validation: readonly LossPoint[] = [...(log?.validation ?? []), ...(job?.validation ?? [])];
  const steps = [...new Set([...training.map((p) => p.step), ...validation.map((p) => p.step)])].sort((x, y) => x - y);
  const index = new Map(steps.map((st, k) => [st, k]));
  const trainY: (number | null)[] = steps.map(() => null);
  const validY: (number | null)[] = steps.map(() => null);
  for (const p of training) trainY[index.get(p.step) as number] = p.loss;
  for (const p of validation) validY[index.get(p.step) as number] = p.loss;
  const chart = h('div', { class: 'chart', 'data-role': 'loss-chart' });
  const facts: string[] = [];
  if (log !== null) {
    const last = training.at(-1);
    const min = training.reduce((m, p) => Math.min(m, p.loss), Infinity);
    facts.push(`${log.name}: ${training.length} steps${last === undefined ? '' : `, last loss ${short(last.loss)} at step ${last.step}, lowest ${short(min)}`}`);
    if (log.badLines > 0) facts.push(`${log.badLines} line(s) were not loss records`);
    if (log.problem !== null) facts.push(`not continuous: ${log.problem}`);
  }
  if (job !== null) facts.push(`${job.name}: ${job.validation.length} validation evaluations`);
  const element = section('Loss', { 'data-role': 'loss', class: 'panel loss' }, ...facts.map((f) => h('p', { class: f.startsWith('not continuous') ? 'bad-text' : 'muted' }, f)), chart);
  const draw = (): void => {
    const width = Math.max(320, Math.min(1100, chart.clientWidth || 900));
    const opts: uPlot.Options = {
      width,
      height: 320,
      scales: { x: { time: false } },
      axes: [{ label: 'step' }, { label: 'loss' }],
      series: [
        { label: 'step' },
        { label: 'training loss', stroke: '#2563eb', width: 1.5 },
        { label: 'validation loss', stroke: '#dc2626', width: 2, spanGaps: true, points: { show: true, size: 6 } },
      ],
    };
    // uPlot appends its canvas to `chart`.
    new uPlot(opts, [steps, trainY, validY] as uPlot.AlignedData, chart);
  };
  return { element, draw };
}
