/**
 * A progress display for training jobs, written to an injected stream so the
 * trainer app and the CLI share it. On a TTY it redraws one status line in
 * place (step/total, loss, validation loss, tokens/s, ETA, last checkpoint) and
 * prints evaluations and checkpoints above it; elsewhere it prints plain
 * periodic lines. `NO_COLOR` (any non-empty value) turns colour off.
 */
import type { TrainerEvent } from './events.ts';

/** The part of a writable stream the renderer uses. */
export interface ProgressStream {
  write(text: string): unknown;
  /** True for a terminal (live redraw). */
  readonly isTTY?: boolean;
  /** Terminal width, for truncating the status line. */
  readonly columns?: number;
}

/** Options of {@link createProgressRenderer}. */
export interface ProgressOptions {
  readonly stream: ProgressStream;
  /** Environment (for `NO_COLOR`); default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Minimum milliseconds between TTY redraws (default 100). */
  readonly redrawMs?: number;
  /** Milliseconds between plain status lines when not a TTY (default 10 000). */
  readonly plainIntervalMs?: number;
  /** Clock in milliseconds (default `performance.now`). */
  readonly now?: () => number;
  /** Force live (TTY) or plain output instead of asking the stream. */
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
  const live = options.live ?? stream.isTTY === true;
  const color = live && (env.NO_COLOR === undefined || env.NO_COLOR === '');
  const redrawMs = options.redrawMs ?? 100;
  const plainMs = options.plainIntervalMs ?? 10_000;
  const paint = (code: string, text: string): string => (color ? `\x1b[${code}m${text}\x1b[0m` : text);

  let step = 0;
  let total = 0;
  let loss: number | null = null;
  let validation: number | null = null;
  let best: { step: number; loss: number } | null = null;
  let lastCheckpoint: number | null = null;
  let evaluating: string | null = null;
  let stepMsAverage: number | null = null;
  let tokensPerStep = 0;
  let lastDraw = -Infinity;
  let lastPlain = -Infinity;
  let lineShown = false;

  const status = (): string => {
    const pct = total > 0 ? ` ${((100 * step) / total).toFixed(1).padStart(5)}%` : '';
    const tps = stepMsAverage !== null && stepMsAverage > 0 ? Math.round((tokensPerStep * 1000) / stepMsAverage) : null;
    const eta = stepMsAverage !== null ? formatDuration((total - step) * stepMsAverage) : '--';
    const parts = [
      `step ${step}/${total}${pct}`,
      `loss ${fixed(loss)}`,
      `val ${fixed(validation)}${best !== null ? ` (best ${fixed(best.loss)} @${best.step})` : ''}`,
      `${tps === null ? '--' : tps.toLocaleString('en-US')} tok/s`,
      `ETA ${eta}`,
      `ckpt ${lastCheckpoint === null ? '--' : `@${lastCheckpoint}`}`,
    ];
    if (evaluating !== null) parts.push(evaluating);
    let text = parts.join('  ');
    const width = stream.columns ?? 0;
    if (live && width > 10 && text.length > width - 1) text = `${text.slice(0, width - 2)}…`;
    return text;
  };

  const clearLine = (): void => {
    if (live && lineShown) {
      stream.write('\r\x1b[2K');
      lineShown = false;
    }
  };
  const draw = (force: boolean): void => {
    const t = now();
    if (live) {
      if (!force && t - lastDraw < redrawMs) return;
      lastDraw = t;
      stream.write(`\r\x1b[2K${paint('1', status())}`);
      lineShown = true;
    } else if (force || t - lastPlain >= plainMs) {
      lastPlain = t;
      stream.write(`${status()}\n`);
    }
  };
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
          log(
            event.resumedFrom === null
              ? `training ${event.runDir}: ${event.parameterCount.toLocaleString('en-US')} parameters, vocabulary ${event.vocabularySize}, ${total} steps`
              : `resuming ${event.runDir} from ${event.resumedFrom} at step ${event.step}/${total}`,
          );
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
          evaluating = `evaluating ${event.list} 0/${event.batches}`;
          draw(true);
          break;
        case 'evaluation-batch':
          evaluating = `evaluating ${event.list} ${event.index + 1}/${event.batches}`;
          draw(false);
          break;
        case 'evaluation-aborted':
          evaluating = null;
          log(`evaluation at step ${event.step} abandoned after ${event.batchesDone} batches (stop requested)`);
          break;
        case 'evaluation':
          evaluating = null;
          validation = event.validationLoss;
          best = { step: event.bestStep, loss: event.bestValidationLoss };
          log(
            `${paint('36', `step ${event.step}`)}: validation loss ${fixed(event.validationLoss)}` +
              (event.trainingLoss !== null ? `, training loss ${fixed(event.trainingLoss)}` : '') +
              (event.improved ? paint('32', ' (new best)') : `  (best ${fixed(event.bestValidationLoss)} at step ${event.bestStep})`),
          );
          break;
        case 'checkpoint':
          if (event.reason !== 'best') lastCheckpoint = event.step;
          draw(true);
          break;
        case 'checkpoint-saved':
          if (event.samples !== null && event.samples.length > 0) {
            log(`${paint('2', `sample @${event.step}:`)} ${JSON.stringify(event.samples[0])}`);
          } else if (!event.slots.every((s) => s === 'best')) {
            log(`${paint('2', `checkpoint @${event.step}`)} → ${event.slots.join(', ')} (${Math.round(event.saveMs)} ms)`);
          }
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
          stream.write(`${status()}\n`);
          break;
      }
    },
    finish(): void {
      clearLine();
    },
  };
}
