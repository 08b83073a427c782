/**
 * A progress display for training jobs, written to an injected stream so the
 * trainer app and the CLI share it. On a terminal it redraws one status line
 * in place, tqdm style (`▕████▏ 412/1000 41% 00:48<01:09  loss 1.0831  val
 * 1.2169  best 1.2169@300  22.1k tok/s  ckpt @400`), that never wraps: on a
 * narrow terminal fields are dropped by a fixed priority
 * ({@link layoutStatusLine}; elapsed<remaining and tokens/s go last).
 * Evaluations, samples and stops are printed above it. Elsewhere (not a TTY,
 * `TERM=dumb`) it prints plain lines at a fixed cadence, without carriage
 * returns. Colour follows the one llmcp policy ({@link colorEnabled}).
 */
import type { TrainerEvent } from './events.ts';
import { describeRunPlan, type RunPlan } from './run-plan.ts';
import { colorEnabled, liveRedrawEnabled } from './terminal.ts';

/** The part of a writable stream the renderer uses. */
export interface ProgressStream {
  write(text: string): unknown;
  /** True for a terminal (live redraw). */
  readonly isTTY?: boolean;
  /** Terminal width, for fitting the status line (read at every redraw: a resized terminal is followed). */
  readonly columns?: number;
}

/** Options of {@link createProgressRenderer}. */
export interface ProgressOptions {
  readonly stream: ProgressStream;
  /** Environment (`NO_COLOR`, `FORCE_COLOR`, `TERM`); default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Minimum milliseconds between TTY redraws (default 100). */
  readonly redrawMs?: number;
  /** Milliseconds between plain status lines when not a TTY (default 10 000). */
  readonly plainIntervalMs?: number;
  /** Clock in milliseconds (default `performance.now`). */
  readonly now?: () => number;
  /** Force live (redrawn) or plain output instead of asking the stream and `TERM`. */
  readonly live?: boolean;
}

/** A progress renderer. */
export interface ProgressRenderer {
  /** Feeds one event. */
  onEvent(event: TrainerEvent): void;
  /** Prints a message above the status line. */
  log(message: string): void;
  /** Ends the live line (call before printing anything else). */
  finish(): void;
}

/**
 * Formats a duration as `1h02m`, `3m05s` or `12s`.
 *
 * @param ms - milliseconds.
 * @returns the text.
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '--';
  const s = Math.round(ms / 1000);
  if (s >= 3600) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${s}s`;
}

function fixed(x: number | null, digits = 4): string {
  return x === null || !Number.isFinite(x) ? '--' : x.toFixed(digits);
}

/** What the status line shows; {@link layoutStatusLine} fits it to a width. */
export interface StatusFields {
  readonly step: number;
  readonly totalSteps: number;
  /** Milliseconds since this process started the job. */
  readonly elapsedMs: number;
  /** Estimated milliseconds to the end of the step budget, or null before the first step. */
  readonly remainingMs: number | null;
  /** Training loss of the newest step, or null. */
  readonly loss: number | null;
  /** The newest validation result, or null. */
  readonly validation: { readonly step: number; readonly validationLoss: number } | null;
  /** The best validation result so far, or null. */
  readonly best: { readonly step: number; readonly validationLoss: number } | null;
  /** Training throughput, or null before the first step. */
  readonly tokensPerSecond: number | null;
  /** Step of the newest checkpoint that is completely saved, or null. */
  readonly checkpointStep: number | null;
  /** Transient activity (`eval val 3/5`), or null. */
  readonly activity: string | null;
}

/** How a field of the status line is styled. */
export type StatusRole = 'bar' | 'best' | 'dim' | 'plain';

/** Options of {@link layoutStatusLine}. */
export interface StatusLayoutOptions {
  /** Draw the progress bar (live display); without it the counter reads `step 412/1000` (default true). */
  readonly bar?: boolean;
  /** Styles a field's text (colour codes take no columns); default: unstyled. */
  readonly paint?: (role: StatusRole, text: string) => string;
}

/** Inner width of the progress bar: at least {@link BAR_MIN} cells or it is dropped, at most {@link BAR_MAX}. */
const BAR_MIN = 8;
const BAR_MAX = 30;
const EIGHTHS = ['', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];

/**
 * Formats a duration as a clock: `01:09`, or `1:02:05` from an hour on;
 * `--:--` when unknown.
 *
 * @param ms - milliseconds, or null.
 * @returns the text.
 */
export function formatClock(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms) || ms < 0) return '--:--';
  const s = Math.floor(ms / 1000);
  const two = (n: number): string => String(n).padStart(2, '0');
  if (s >= 3600) return `${Math.floor(s / 3600)}:${two(Math.floor((s % 3600) / 60))}:${two(s % 60)}`;
  return `${two(Math.floor(s / 60))}:${two(s % 60)}`;
}

function compactRate(perSecond: number): string {
  if (perSecond >= 1e6) return `${(perSecond / 1e6).toFixed(perSecond >= 1e7 ? 0 : 2)}M`;
  if (perSecond >= 1e3) return `${(perSecond / 1e3).toFixed(perSecond >= 1e5 ? 0 : 1)}k`;
  return String(Math.round(perSecond));
}

function barText(fraction: number, inner: number): string {
  const eighths = Math.round(Math.min(1, Math.max(0, fraction)) * inner * 8);
  const full = Math.floor(eighths / 8);
  const part = EIGHTHS[eighths % 8] ?? '';
  return `▕${'█'.repeat(full)}${part}${' '.repeat(inner - full - (part === '' ? 0 : 1))}▏`;
}

interface Segment {
  readonly text: string;
  readonly role: StatusRole;
  /** Higher is kept longer. */
  readonly keep: number;
  /** Separator before it when a field precedes it. */
  readonly glue: string;
}

/**
 * The fields of the status line, highest priority last to be dropped:
 * elapsed<remaining (10), tokens/s (9), bar (8), counter (7), checkpoint (6),
 * loss (5), percent (4), last validation (3), best (2), activity (1).
 * Display order: bar, counter, percent, time, loss, val, best, tok/s, ckpt, activity.
 *
 * @param f - what to show.
 * @param bar - whether the bar is drawn.
 * @returns the fields present.
 */
function segments(f: StatusFields, bar: boolean): (Segment & { readonly isBar: boolean })[] {
  const pct = f.totalSteps > 0 ? Math.floor((100 * Math.min(f.step, f.totalSteps)) / f.totalSteps) : 0;
  const all: (Segment & { isBar: boolean; show: boolean })[] = [
    { text: '', role: 'bar', keep: 8, glue: '', isBar: true, show: bar },
    { text: `${bar ? '' : 'step '}${f.step}/${f.totalSteps}`, role: 'plain', keep: 7, glue: ' ', isBar: false, show: true },
    { text: `${pct}%`, role: 'plain', keep: 4, glue: ' ', isBar: false, show: true },
    { text: `${formatClock(f.elapsedMs)}<${formatClock(f.remainingMs)}`, role: 'plain', keep: 10, glue: ' ', isBar: false, show: true },
    { text: `loss ${fixed(f.loss)}`, role: 'plain', keep: 5, glue: '  ', isBar: false, show: true },
    { text: `val ${fixed(f.validation?.validationLoss ?? null)}`, role: 'plain', keep: 3, glue: '  ', isBar: false, show: true },
    { text: `best ${f.best === null ? '--' : `${fixed(f.best.validationLoss)}@${f.best.step}`}`, role: 'best', keep: 2, glue: '  ', isBar: false, show: true },
    { text: `${f.tokensPerSecond === null ? '--' : compactRate(f.tokensPerSecond)} tok/s`, role: 'plain', keep: 9, glue: '  ', isBar: false, show: true },
    { text: `ckpt ${f.checkpointStep === null ? '--' : `@${f.checkpointStep}`}`, role: 'dim', keep: 6, glue: '  ', isBar: false, show: true },
    { text: f.activity ?? '', role: 'dim', keep: 1, glue: '  ', isBar: false, show: f.activity !== null },
  ];
  return all.filter((s) => s.show);
}

/**
 * Lays out the status line in at most `width` columns: fields are dropped by
 * a fixed priority until the rest fits (activity, best, last validation,
 * percent, loss, checkpoint, counter, bar, tokens/s, and last
 * elapsed<remaining, which is cut at the width when nothing else fits); the
 * bar then grows into the free space (up to 30 cells). Every character used
 * takes one column, so the result never wraps a terminal `width + 1` wide.
 *
 * @param fields - what to show.
 * @param width - the most columns the line may take (`Infinity`: no limit).
 * @param options - bar, styling.
 * @returns the line (styled by `options.paint`; its visible length is at most `width`).
 * @example
 * ```ts
 * layoutStatusLine(fields, process.stderr.columns - 1);
 * // '▕███████████▊                  ▏ 412/1000 41% 00:48<01:09  loss 1.0831  val 1.2169  best 1.2169@300  22.1k tok/s  ckpt @400'
 * ```
 */
export function layoutStatusLine(fields: StatusFields, width: number, options: StatusLayoutOptions = {}): string {
  const paint = options.paint ?? ((_role: StatusRole, text: string): string => text);
  const limit = Number.isNaN(width) ? 0 : Math.max(0, Math.floor(Math.min(width, Number.MAX_SAFE_INTEGER)));
  let shown = segments(fields, options.bar ?? true);
  const length = (list: readonly (Segment & { isBar: boolean })[], barInner: number): number =>
    list.reduce((n, s, i) => n + (i === 0 ? 0 : s.glue.length) + (s.isBar ? barInner + 2 : s.text.length), 0);
  while (shown.length > 1 && length(shown, BAR_MIN) > limit) {
    const lowest = shown.reduce((a, b) => (b.keep < a.keep ? b : a));
    shown = shown.filter((s) => s !== lowest);
  }
  const only = shown[0];
  if (shown.length === 1 && only !== undefined && only.text.length > limit) return limit === 0 ? '' : paint(only.role, only.text.slice(0, limit));
  // Free columns for the bar's cells (the bar counted as its two ends only); the loop above left at least BAR_MIN.
  const inner = Math.max(BAR_MIN, Math.min(BAR_MAX, limit - length(shown, 0)));
  return shown
    .map((s, i) => {
      const text = s.isBar ? barText(fields.totalSteps > 0 ? fields.step / fields.totalSteps : 0, inner) : s.text;
      return `${i === 0 ? '' : s.glue}${paint(s.role, text)}`;
    })
    .join('');
}

/**
 * Creates a progress renderer.
 *
 * @param options - stream, environment, clock.
 * @returns the renderer.
 * @example
 * ```ts
 * const progress = createProgressRenderer({ stream: process.stderr });
 * await trainRun({ runDir, config, onEvent: (e) => progress.onEvent(e) });
 * progress.finish();
 * ```
 */
export function createProgressRenderer(options: ProgressOptions): ProgressRenderer {
  const { stream } = options;
  const env = options.env ?? process.env;
  const now = options.now ?? ((): number => performance.now());
  const live = options.live ?? liveRedrawEnabled(stream, env);
  const color = colorEnabled(stream, env);
  const redrawMs = options.redrawMs ?? 100;
  const plainMs = options.plainIntervalMs ?? 10_000;
  const paint = (code: string, text: string): string => (color ? `\x1b[${code}m${text}\x1b[${code === '1' || code === '2' ? '22' : '39'}m` : text);
  const paintRole = (role: StatusRole, text: string): string => (role === 'bar' ? paint('36', text) : role === 'best' ? paint('32', text) : role === 'dim' ? paint('2', text) : text);

  let step = 0;
  let total = 0;
  let startedAt: number | null = null;
  let loss: number | null = null;
  let validation: { step: number; validationLoss: number } | null = null;
  let best: { step: number; validationLoss: number } | null = null;
  let lastCheckpoint: number | null = null;
  let evaluating: string | null = null;
  let stepMsAverage: number | null = null;
  let tokensPerStep = 0;
  // What the rest of the run holds besides updates: evaluation passes (timed per batch as they run) and checkpoints.
  let plan: RunPlan | null = null;
  let evaluationBatchMs: number | null = null;
  let evaluationBatchStarted: number | null = null;
  let checkpointMs: number | null = null;
  let saveMs: number | null = null;
  let lastDraw = -Infinity;
  let lastPlain = -Infinity;
  let lineShown = false;

  /** Columns a live line may take: one less than the terminal, so the cursor never reaches the last column (no wrap). */
  const liveWidth = (): number => Math.max(0, (stream.columns !== undefined && stream.columns > 0 ? stream.columns : 80) - 1);
  const status = (t: number): string => {
    const fields: StatusFields = {
      step,
      totalSteps: total,
      elapsedMs: startedAt === null ? 0 : t - startedAt,
      remainingMs: stepMsAverage === null ? null : remainingMs(step, total, stepMsAverage),
      loss,
      validation,
      best,
      tokensPerSecond: stepMsAverage !== null && stepMsAverage > 0 ? (tokensPerStep * 1000) / stepMsAverage : null,
      checkpointStep: lastCheckpoint,
      activity: evaluating,
    };
    // Plain lines on a terminal (`--plain`, `TERM=dumb`) fit it too; in a pipe or a file they are whole.
    const plainWidth = stream.isTTY === true && stream.columns !== undefined && stream.columns > 0 ? stream.columns - 1 : Infinity;
    return live ? layoutStatusLine(fields, liveWidth(), { paint: paintRole }) : layoutStatusLine(fields, plainWidth, { bar: false, paint: paintRole });
  };

  /**
   * The rest of the run: its updates, the evaluation passes still due (step 0, every N, the last step; at the
   * measured time per batch, once one has run) and the cadence checkpoints still due (training waits for the
   * copy of each, the blocking time measured; and for the whole final save, as long as the last one took).
   */
  const remainingMs = (at: number, end: number, perStep: number): number => {
    let ms = Math.max(0, end - at) * perStep;
    if (plan === null) return ms;
    const e = plan.evaluation;
    const due = (every: number): number => Math.max(0, Math.floor(end / every) - Math.floor(at / every) + (end % every === 0 || at >= end ? 0 : 1));
    if (evaluationBatchMs !== null) ms += due(e.validateEvery) * (e.validationBatches + e.trainingBatches) * evaluationBatchMs;
    if (checkpointMs !== null) ms += due(e.checkpointEvery) * checkpointMs;
    if (saveMs !== null && at < end) ms += saveMs;
    return ms;
  };

  const clearLine = (): void => {
    if (live && lineShown) {
      stream.write('\r\x1b[2K');
      lineShown = false;
    }
  };
  // Live: redraws (at most every `redrawMs` unless forced). Plain: a line every `plainIntervalMs`, or now when forced.
  const draw = (force: boolean): void => {
    const t = now();
    if (live) {
      if (!force && t - lastDraw < redrawMs) return;
      lastDraw = t;
      stream.write(`\r\x1b[2K${status(t)}`);
      lineShown = true;
    } else if (force || t - lastPlain >= plainMs) {
      lastPlain = t;
      stream.write(`${status(t)}\n`);
    }
  };
  // Live: a preview (a sample) is cut to `room` columns so it does not wrap; other messages are printed whole.
  const preview = (text: string, room: number): string => (live && text.length > room ? `${text.slice(0, Math.max(0, room - 1))}…` : text);
  const log = (message: string): void => {
    clearLine();
    stream.write(`${message}\n`);
    if (live) draw(true);
  };

  return {
    log,
    onEvent(event: TrainerEvent): void {
      switch (event.type) {
        case 'start':
          step = event.step;
          total = event.totalSteps;
          tokensPerStep = event.tokensPerStep;
          startedAt = now();
          // A resumed job shows its last validation, its best and its checkpoint at once, not after the next evaluation.
          validation = event.lastValidation;
          best = event.best;
          lastCheckpoint = event.resumedFrom === null ? null : event.step;
          plan = event.plan ?? null;
          log(
            (event.resumedFrom === null
              ? `training ${event.runDir}: ${event.parameterCount.toLocaleString('en-US')} parameters, vocabulary ${event.vocabularySize}, ${total} steps`
              : `resuming ${event.runDir} from ${event.resumedFrom} at step ${event.step}/${total}`) +
              // The torch engine's line names torch, its ranks, device and precision; the llmcp engine's its kernels.
              (event.engine?.startsWith('torch') === true ? `, engine ${event.engine}` : event.kernels === undefined ? '' : `, kernels ${event.kernels}`),
          );
          if (event.plan !== undefined && event.resumedFrom === null) for (const line of describeRunPlan(event.plan)) log(line);
          break;
        case 'engine-status':
          log(event.message);
          break;
        case 'step':
          step = event.step;
          total = event.totalSteps;
          loss = event.loss;
          tokensPerStep = event.tokens;
          stepMsAverage = stepMsAverage === null ? event.stepMs : stepMsAverage * 0.9 + event.stepMs * 0.1;
          draw(false);
          break;
        case 'evaluation-start':
          evaluating = `eval ${event.list === 'validation' ? 'val' : 'train'} 0/${event.batches}`;
          evaluationBatchStarted = now();
          draw(live);
          break;
        case 'evaluation-batch': {
          evaluating = `eval ${event.list === 'validation' ? 'val' : 'train'} ${event.index + 1}/${event.batches}`;
          const t = now();
          if (evaluationBatchStarted !== null) {
            const ms = t - evaluationBatchStarted;
            evaluationBatchMs = evaluationBatchMs === null ? ms : evaluationBatchMs * 0.8 + ms * 0.2;
          }
          evaluationBatchStarted = t;
          draw(false);
          break;
        }
        case 'evaluation-aborted':
          evaluating = null;
          log(`evaluation at step ${event.step} abandoned after ${event.batchesDone} batches (stop requested)`);
          break;
        case 'evaluation':
          evaluating = null;
          validation = { step: event.step, validationLoss: event.validationLoss };
          best = { step: event.bestStep, validationLoss: event.bestValidationLoss };
          log(
            `${paint('36', `step ${event.step}`)}: validation loss ${fixed(event.validationLoss)}` +
              (event.trainingLoss !== null ? `, training loss ${fixed(event.trainingLoss)}` : '') +
              (event.improved ? paint('32', ' (new best)') : `  (best ${fixed(event.bestValidationLoss)} at step ${event.bestStep})`),
          );
          break;
        case 'checkpoint':
          // A save has only begun (in the background); `ckpt @N` waits for its completion below.
          checkpointMs = checkpointMs === null ? event.blockedMs : checkpointMs * 0.8 + event.blockedMs * 0.2;
          break;
        case 'checkpoint-saved':
          lastCheckpoint = Math.max(lastCheckpoint ?? 0, event.step);
          saveMs = event.saveMs;
          if (event.samples !== null && event.samples.length > 0) {
            const prefix = `sample @${event.step}:`;
            log(`${paint('2', prefix)} ${preview(JSON.stringify(event.samples[0]), liveWidth() - prefix.length - 1)}`);
          } else if (!event.slots.every((s) => s === 'best')) {
            log(`${paint('2', `checkpoint @${event.step}`)} → ${event.slots.join(', ')} (${Math.round(event.saveMs)} ms)`);
          } else draw(live);
          break;
        case 'signal':
          log(
            event.signal === 'SIGUSR1'
              ? 'SIGUSR1: a checkpoint will be written at the end of this step'
              : `${event.signal}: stopping after this step (checkpointing; press Ctrl-C again to exit at once)`,
          );
          break;
        case 'stopped':
          log(`stopped at step ${event.step} (${event.reason}); checkpoint written, resume to continue`);
          break;
        case 'completed':
          step = event.step;
          clearLine();
          stream.write(`${status(now())}\n`);
          break;
      }
    },
    finish(): void {
      clearLine();
    },
  };
}
