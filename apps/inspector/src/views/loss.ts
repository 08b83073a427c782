/**
 * The curves of one or two runs (uPlot), from their `loss.jsonl` alone:
 * training and validation loss, learning rate, gradient norm; a log-scale
 * toggle and EMA smoothing; markers at resumes, pivots and forks (from
 * `run.json`); a second run overlaid in its own colours, dashed, with a legend.
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { h, section } from '../dom.ts';
import { short } from '../format-text.ts';
import { ema, type LossHistory } from '../loss-history.ts';
import type { OpenedJob } from '../opened.ts';
import type { EventMarker } from '../run-events.ts';

/** One run's curves. */
export interface CurveSource {
  readonly name: string;
  readonly history: LossHistory;
  readonly markers: readonly EventMarker[];
}

/** Colours per run (first run, second run). */
const COLOURS = {
  training: ['#2563eb', '#0d9488'],
  validation: ['#dc2626', '#d97706'],
  learningRate: ['#7c3aed', '#db2777'],
  gradientNorm: ['#059669', '#ea580c'],
  throughput: ['#0891b2', '#65a30d'],
  clock: ['#475569', '#a16207'],
} as const;
const MARKER_COLOURS: Record<EventMarker['event'], string> = { resumed: '#16a34a', pivot: '#9333ea', 'forked-from': '#f59e0b', 'forked-to': '#f59e0b' };
const DASH = [6, 4];
const RUN_LETTERS = ['A', 'B'];

interface Series {
  readonly label: string;
  readonly colour: string;
  readonly run: number;
  readonly values: Map<number, number>;
  readonly smooth: boolean;
  readonly points: boolean;
}

interface Panel {
  readonly key: string;
  readonly title: string;
  readonly axis: string;
  readonly series: (s: CurveSource, run: number) => Series[];
}

const PANELS: readonly Panel[] = [
  {
    key: 'loss',
    title: 'Loss',
    axis: 'loss',
    series: (s, run) => [
      { label: `${RUN_LETTERS[run]}: training loss`, colour: COLOURS.training[run] as string, run, values: new Map(s.history.training.map((p) => [p.step, p.loss])), smooth: true, points: false },
      { label: `${RUN_LETTERS[run]}: validation loss`, colour: COLOURS.validation[run] as string, run, values: new Map(s.history.evaluations.map((p) => [p.step, p.validationLoss])), smooth: false, points: true },
    ],
  },
  {
    key: 'lr',
    title: 'Learning rate',
    axis: 'rate',
    series: (s, run) => [{ label: `${RUN_LETTERS[run]}: learning rate`, colour: COLOURS.learningRate[run] as string, run, values: new Map(s.history.training.map((p) => [p.step, p.learningRate])), smooth: false, points: false }],
  },
  {
    key: 'grad',
    title: 'Gradient norm',
    axis: 'norm',
    series: (s, run) => [{ label: `${RUN_LETTERS[run]}: gradient norm`, colour: COLOURS.gradientNorm[run] as string, run, values: new Map(s.history.training.map((p) => [p.step, p.gradientNorm])), smooth: true, points: false }],
  },
  {
    key: 'throughput',
    title: 'Throughput (from the timing of loss.jsonl)',
    axis: 'tokens/s',
    series: (s, run) => [{ label: `${RUN_LETTERS[run]}: training tokens/s`, colour: COLOURS.throughput[run] as string, run, values: new Map(s.history.timing.map((p) => [p.step, p.tokensPerSecond])), smooth: true, points: false }],
  },
  {
    key: 'clock',
    title: 'Wall clock',
    axis: 'minutes',
    series: (s, run) => [
      {
        label: `${RUN_LETTERS[run]}: minutes since the first record`,
        colour: COLOURS.clock[run] as string,
        run,
        values: new Map(s.history.timing.flatMap((p) => (p.elapsedMs === null ? [] : [[p.step, p.elapsedMs / 60_000] as [number, number]]))),
        smooth: false,
        points: false,
      },
    ],
  },
];

/**
 * The tick labels of a value axis: on a log scale every tick is a power of ten's multiple above zero, written
 * short (`1e-4`, `0.001`), never rounded to a `0` that the axis cannot hold.
 *
 * @param splits - the tick values uPlot chose.
 * @param log - whether the axis is logarithmic.
 * @returns one label per tick (empty for a tick a log axis cannot show).
 */
export function axisLabels(splits: readonly (number | null)[], log: boolean): string[] {
  return splits.map((v) => {
    if (v === null || !Number.isFinite(v) || (log && v <= 0)) return '';
    if (v === 0) return '0';
    const a = Math.abs(v);
    return a >= 1e-3 && a < 1e6 ? String(Number(v.toPrecision(6))) : v.toExponential().replace(/\.?0+e/, 'e').replace('e+', 'e');
  });
}

function facts(s: CurveSource, run: number): string[] {
  const t = s.history.training;
  const out: string[] = [];
  const last = t.at(-1);
  const min = t.reduce((m, p) => Math.min(m, p.loss), Infinity);
  const evals = s.history.evaluations;
  const bestEval = evals.reduce<(typeof evals)[number] | null>((b, e) => (b === null || e.validationLoss < b.validationLoss ? e : b), null);
  out.push(
    `${RUN_LETTERS[run]} = ${s.name}: ${t.length} training steps${last === undefined ? '' : `, last loss ${short(last.loss)} at step ${last.step}, lowest ${short(min)}`}; ${evals.length} validation evaluations${bestEval === null ? '' : `, lowest ${short(bestEval.validationLoss)} at step ${bestEval.step}`}`,
  );
  if (s.history.badLineCount > 0) out.push(`${s.name}: ${s.history.badLineCount} line(s) are not loss records (first: line ${s.history.badLines[0]?.line}: ${s.history.badLines[0]?.problem})`);
  if (s.history.problem !== null) out.push(`${s.name}: not continuous: ${s.history.problem}`);
  return out;
}

/**
 * Builds the curves section; the charts are drawn once the section is in the document.
 *
 * @param sources - one or two runs (the first two are drawn).
 * @param job - a `job.json` opened on its own (summarised, not drawn).
 * @returns the section and its draw function.
 */
export function lossView(sources: readonly CurveSource[], job: OpenedJob | null): { element: HTMLElement; draw: () => void } {
  const runs = sources.slice(0, 2);
  const logScale = h('input', { type: 'checkbox', 'data-role': 'log-scale' });
  const smoothing = h('input', { type: 'range', min: 0, max: 0.99, step: 0.01, value: 0, 'data-role': 'smoothing' });
  const smoothingText = h('span', { 'data-role': 'smoothing-value' }, 'off');
  const controls = h(
    'div',
    { class: 'chart-controls' },
    h('label', {}, logScale, ' log scale'),
    h('label', {}, 'smoothing (EMA α) ', smoothing, ' ', smoothingText),
  );
  const legend = h(
    'ul',
    { class: 'run-legend', 'data-role': 'run-legend' },
    ...runs.map((s, run) => h('li', {}, h('span', { class: `legend-line${run === 1 ? ' dashed' : ''}`, style: `border-color: ${COLOURS.training[run]}` }), `${RUN_LETTERS[run]} = ${s.name}${run === 1 ? ' (dashed)' : ''}`)),
  );
  const markerList = runs.flatMap((s, run) => s.markers.map((m) => ({ ...m, run })));
  const markers =
    markerList.length === 0
      ? null
      : h(
          'ul',
          { class: 'markers', 'data-role': 'markers' },
          ...markerList.map((m) => h('li', {}, h('span', { class: 'swatch', style: `background: ${MARKER_COLOURS[m.event]}` }), `${RUN_LETTERS[m.run]}: ${m.label} at step ${m.step} (${m.event})`)),
        );
  const charts = PANELS.map((p) => ({ panel: p, el: h('div', { class: 'chart', 'data-role': `chart-${p.key}` }) }));
  const lines = runs.flatMap(facts);
  if (job !== null) lines.push(`${job.name}: ${job.validation.length} validation evaluations recorded (the curves come from loss.jsonl)`);
  const element = section(
    runs.length === 2 ? `Curves: ${runs[0]?.name} and ${runs[1]?.name}` : `Curves${runs[0] === undefined ? '' : `: ${runs[0].name}`}`,
    { 'data-role': 'loss', class: 'panel loss' },
    ...lines.map((f) => h('p', { class: f.includes('not continuous') || f.includes('not loss records') ? 'bad-text' : 'muted', 'data-role': 'loss-facts' }, f)),
    controls,
    legend,
    markers,
    ...charts.flatMap(({ panel, el }) => [h('h4', {}, panel.title), el]),
  );
  let plots: uPlot[] = [];
  const draw = (): void => {
    for (const p of plots) p.destroy();
    plots = [];
    const alpha = Number(smoothing.value);
    smoothingText.textContent = alpha === 0 ? 'off' : alpha.toFixed(2);
    const log = logScale.checked;
    for (const { panel, el } of charts) {
      const series = runs.flatMap((s, run) => panel.series(s, run)).filter((s) => s.values.size > 0);
      el.dataset.series = series.map((s) => s.label).join('|');
      if (series.length === 0) {
        el.replaceChildren(h('p', { class: 'muted' }, 'no records'));
        continue;
      }
      el.replaceChildren();
      const steps = [...new Set(series.flatMap((s) => [...s.values.keys()]))].sort((x, y) => x - y);
      const columns = series.map((s) => {
        const known = steps.filter((st) => s.values.has(st));
        const raw = known.map((st) => s.values.get(st) as number);
        const values = s.smooth && alpha > 0 ? ema(raw, alpha) : raw;
        const at = new Map(known.map((st, k) => [st, values[k] as number]));
        return steps.map((st) => {
          const v = at.get(st);
          return v === undefined || (log && v <= 0) ? null : v;
        });
      });
      const width = Math.max(320, Math.min(1100, el.clientWidth || 900));
      const opts: uPlot.Options = {
        width,
        height: panel.key === 'loss' ? 300 : 180,
        scales: { x: { time: false }, y: log ? { distr: 3, log: 10 } : {} },
        axes: [{ label: 'step' }, { label: panel.axis, values: (_u: uPlot, splits: number[]) => axisLabels(splits, log) }],
        series: [
          { label: 'step' },
          ...series.map((s) => ({
            label: s.label,
            stroke: s.colour,
            width: s.points ? 2 : 1.5,
            spanGaps: true,
            ...(s.run === 1 ? { dash: DASH } : {}),
            ...(s.points ? { points: { show: true, size: 6 } } : {}),
          })),
        ],
        hooks: {
          draw: [
            (u: uPlot) => {
              const ctx = u.ctx;
              ctx.save();
              for (const [k, m] of markerList.entries()) {
                const x = u.valToPos(m.step, 'x', true);
                if (!Number.isFinite(x) || x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
                ctx.strokeStyle = MARKER_COLOURS[m.event];
                ctx.lineWidth = 2 * devicePixelRatio;
                ctx.setLineDash(m.run === 1 ? [4 * devicePixelRatio, 4 * devicePixelRatio] : []);
                ctx.beginPath();
                ctx.moveTo(x, u.bbox.top);
                ctx.lineTo(x, u.bbox.top + u.bbox.height);
                ctx.stroke();
                ctx.fillStyle = MARKER_COLOURS[m.event];
                ctx.font = `${11 * devicePixelRatio}px system-ui, sans-serif`;
                ctx.fillText(`${RUN_LETTERS[m.run]} ${m.label}`, x + 3 * devicePixelRatio, u.bbox.top + 12 * devicePixelRatio * (1 + k));
              }
              ctx.restore();
            },
          ],
        },
      };
      // uPlot appends its canvas to `el`.
      plots.push(new uPlot(opts, [steps, ...columns] as uPlot.AlignedData, el));
    }
    element.dataset.drawn = `${log ? 'log' : 'linear'}:${alpha}`;
  };
  logScale.addEventListener('change', draw);
  smoothing.addEventListener('input', draw);
  return { element, draw };
}
