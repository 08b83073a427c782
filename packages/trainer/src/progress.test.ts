import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { TrainerEvent } from './events.ts';
import { createProgressRenderer, formatClock, formatDuration, layoutStatusLine, type StatusFields } from './progress.ts';
import type { RunPlan } from './run-plan.ts';

// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;
const visible = (s: string): string => s.replace(ANSI, '');

interface Sink {
  stream: { write(s: string): void; isTTY: boolean; columns: number };
  text: () => string;
}
function sink(isTTY: boolean, columns = 200): Sink {
  const chunks: string[] = [];
  return { stream: { write: (s: string) => void chunks.push(s), isTTY, columns }, text: () => chunks.join('') };
}

const start = (over: Partial<Extract<TrainerEvent, { type: 'start' }>> = {}): TrainerEvent => ({
  type: 'start',
  runDir: 'runs/x',
  resumedFrom: null,
  step: 0,
  totalSteps: 100,
  parameterCount: 1234,
  vocabularySize: 266,
  tokensPerStep: 512,
  lastValidation: null,
  best: null,
  ...over,
});

/** A run plan for the start event (1,000 training tokens, packed). */
const PLAN: RunPlan = {
  parameters: 1234,
  trainingTokens: 1000,
  coveredTokens: 1000,
  windows: 20,
  stepsPerEpoch: 3,
  epochs: 100 / 3,
  windowMode: 'packed',
  contextLength: 32,
  stride: 1,
  documents: 700,
  documentsWithoutWindow: 0,
  tokensWithoutWindow: 0,
  files: [{ path: 't.txt', documents: 'lines', documentCount: 700, skippedRecords: 0 }],
  partitions: { train: 700, validation: 40, test: 30 },
  evaluation: { validateEvery: 10, checkpointEvery: 20, passes: 11, validationBatches: 2, validationBatchesAvailable: 9, trainingBatches: 0, trainingBatchesAvailable: 0 },
};

const steps = (from: number, to: number): TrainerEvent[] =>
  Array.from({ length: to - from }, (_, i): TrainerEvent => ({ type: 'step', step: from + i + 1, totalSteps: 100, loss: 5 - (from + i) / 50, learningRate: 0.01, gradientNorm: 1, clipped: false, tokens: 512, stepMs: 100 }));

const events = (): TrainerEvent[] => [
  start(),
  { type: 'evaluation', step: 0, validationLoss: 5.5, trainingLoss: null, bestStep: 0, bestValidationLoss: 5.5, improved: true },
  ...steps(0, 50),
  { type: 'checkpoint', step: 50, reason: 'cadence', blockedMs: 1 },
  { type: 'checkpoint-saved', step: 50, slots: ['latest', 'step_000050'], saveMs: 20, saveThread: 'idle', samples: ['Once upon a time'] },
];

/** The text a terminal would show last on the status line (after the last carriage return). */
const lastStatus = (text: string): string => visible(text.slice(text.lastIndexOf('\r\x1b[2K') + 5));

describe('createProgressRenderer', () => {
  it('ends the start line with the kernels the model runs, when the event names them', () => {
    const out = sink(false);
    const r = createProgressRenderer({ stream: out.stream, env: {}, now: () => 0, plainIntervalMs: 1000 });
    r.onEvent(start({ kernels: 'native-avx512' }));
    r.onEvent(start({ resumedFrom: 'latest', step: 40, kernels: 'wasm-simd' }));
    r.finish();
    expect(out.text()).toContain('training runs/x: 1,234 parameters, vocabulary 266, 100 steps, kernels native-avx512\n');
    expect(out.text()).toContain('resuming runs/x from latest at step 40/100, kernels wasm-simd\n');
  });

  it('counts the evaluation passes and checkpoints still due in the time left, not the updates alone', () => {
    let t = 0;
    const out = sink(false);
    const r = createProgressRenderer({ stream: out.stream, env: {}, now: () => t, plainIntervalMs: 1 });
    const plan = { ...PLAN, evaluation: { ...PLAN.evaluation, validateEvery: 25, checkpointEvery: 50, validationBatches: 4, trainingBatches: 0 } };
    r.onEvent(start({ plan }));
    // Step 0's validation: 4 batches of 500 ms each.
    r.onEvent({ type: 'evaluation-start', step: 0, list: 'validation', batches: 4 });
    for (let i = 0; i < 4; i++) {
      t += 500;
      r.onEvent({ type: 'evaluation-batch', step: 0, list: 'validation', index: i, batches: 4 });
    }
    r.onEvent({ type: 'checkpoint', step: 0, reason: 'best', blockedMs: 200 });
    r.onEvent({ type: 'checkpoint-saved', step: 0, slots: ['best'], saveMs: 1000, saveThread: 'idle', samples: null });
    for (const e of steps(0, 60)) {
      t += 100;
      r.onEvent(e);
    }
    t += 1;
    r.onEvent(steps(60, 61)[0] as TrainerEvent);
    r.finish();
    const last = out.text().trim().split('\n').at(-1) as string;
    // 39 updates × 100 ms, validations at 75 and 100 (2 × 4 × 500 ms), one checkpoint at 100 (200 ms) and the final save (1 s): 9.1 s.
    expect(last).toMatch(/ 00:0\d<00:09 /);
  });

  it('prints what a new run trains on: tokens reached, the epoch, text left out, and the validation budget with its key', () => {
    const out = sink(false);
    const r = createProgressRenderer({ stream: out.stream, env: {}, now: () => 0 });
    r.onEvent(start({ plan: { ...PLAN, windowMode: 'documents', coveredTokens: 510, documentsWithoutWindow: 640, tokensWithoutWindow: 490 } }));
    r.finish();
    expect(out.text()).toContain('data: 1,000 training tokens in 700 documents, 51.00% in 20 windows inside documents of 32 (stride 1); an epoch is 3 steps, the budget 33 epochs');
    expect(out.text()).toMatch(/ {2}documents \(data\.source\.documents\): t\.txt: 700 lines; partitions train 700, validation 40, test 30/);
    expect(out.text()).toContain('  not trained on: 640 of 700 documents (490 tokens, 49.00%) are shorter than a window of 33 tokens; --set data.windows=packed trains on them');
    expect(out.text()).toContain('validation: 2 of 9 batches at step 0, every 10 steps and at the end (11 passes); change with --set evaluation.maxBatches=<n> (null: all)');
  });

  it('prints plain periodic status lines without escape codes or carriage returns when not a TTY', () => {
    let t = 0;
    const out = sink(false);
    const r = createProgressRenderer({ stream: out.stream, env: {}, now: () => t, plainIntervalMs: 1000 });
    for (const e of events()) {
      t += 100;
      r.onEvent(e);
    }
    r.finish();
    const text = out.text();
    expect(text).not.toContain('\x1b');
    expect(text).not.toContain('\r');
    expect(text).toContain('training runs/x: 1,234 parameters, vocabulary 266, 100 steps');
    expect(text).toContain('step 0: validation loss 5.5000 (new best)');
    expect(text).toMatch(/step \d+\/100 \d+% \d\d:\d\d<\d\d:\d\d {2}loss 4\.\d{4} {2}val 5\.5000 {2}best 5\.5000@0 {2}5\.1k tok\/s/);
    expect(text).toContain('sample @50: "Once upon a time"');
    const statusLines = text.split('\n').filter((l) => l.startsWith('step ') && l.includes('tok/s'));
    expect(statusLines.length).toBeGreaterThan(2);
    expect(statusLines.length).toBeLessThan(20);
  });

  it('redraws one bar line in place on a TTY, coloured unless NO_COLOR', () => {
    const tty = sink(true, 120);
    const r = createProgressRenderer({ stream: tty.stream, env: {}, now: () => 0, redrawMs: 0 });
    for (const e of events()) r.onEvent(e);
    expect(tty.text()).toContain('\r\x1b[2K');
    expect(tty.text()).toContain('\x1b[36m▕');
    expect(lastStatus(tty.text())).toMatch(/^▕█+.*▏ 50\/100 50% 00:00<00:05 {2}loss .* {2}5\.1k tok\/s {2}ckpt @50$/);
    r.finish();

    const plain = sink(true);
    const q = createProgressRenderer({ stream: plain.stream, env: { NO_COLOR: '1' }, now: () => 0, redrawMs: 0 });
    for (const e of events()) q.onEvent(e);
    expect(plain.text()).toContain('\r\x1b[2K');
    expect(plain.text()).not.toMatch(ANSI);
  });

  it('follows the llmcp colour policy: TERM=dumb means plain lines, FORCE_COLOR colours without redrawing', () => {
    const dumb = sink(true);
    const d = createProgressRenderer({ stream: dumb.stream, env: { TERM: 'dumb' }, now: () => 0 });
    for (const e of events()) d.onEvent(e);
    expect(dumb.text()).not.toContain('\x1b');
    expect(dumb.text()).not.toContain('\r');

    const forced = sink(false);
    const f = createProgressRenderer({ stream: forced.stream, env: { FORCE_COLOR: '1' }, now: () => 0 });
    for (const e of events()) f.onEvent(e);
    expect(forced.text()).toMatch(ANSI);
    expect(forced.text()).not.toContain('\r');
  });

  it('shows ckpt @N when the save completes, not when it begins', () => {
    const tty = sink(true);
    const r = createProgressRenderer({ stream: tty.stream, env: {}, now: () => 0, redrawMs: 0 });
    for (const e of [start(), ...steps(0, 20), { type: 'checkpoint', step: 20, reason: 'cadence', blockedMs: 1 } as const, ...steps(20, 22)]) r.onEvent(e);
    expect(lastStatus(tty.text())).toContain('ckpt --');
    r.onEvent({ type: 'checkpoint-saved', step: 20, slots: ['latest', 'step_000020'], saveMs: 5, saveThread: 'idle', samples: null });
    expect(lastStatus(tty.text())).toContain('ckpt @20');
    // A best-only save is a complete checkpoint too.
    r.onEvent({ type: 'checkpoint-saved', step: 22, slots: ['best'], saveMs: 5, saveThread: 'idle', samples: null });
    expect(lastStatus(tty.text())).toContain('ckpt @22');
  });

  it('shows the last validation, the best and the checkpoint of a resumed job at once', () => {
    const tty = sink(true, 121);
    const r = createProgressRenderer({ stream: tty.stream, env: {}, now: () => 0, redrawMs: 0 });
    r.onEvent(start({ resumedFrom: 'latest', step: 60, lastValidation: { step: 60, validationLoss: 2.25 }, best: { step: 40, validationLoss: 2.125 } }));
    const line = lastStatus(tty.text());
    expect(tty.text()).toContain('resuming runs/x from latest at step 60/100');
    expect(line).toContain('60/100 60%');
    expect(line).toContain('val 2.2500');
    expect(line).toContain('best 2.1250@40');
    expect(line).toContain('ckpt @60');
  });

  it('never lets the live line reach the last column, and cuts sample previews to the width', () => {
    for (const columns of [20, 40, 60, 80, 120]) {
      const tty = sink(true, columns);
      const r = createProgressRenderer({ stream: tty.stream, env: {}, now: () => 0, redrawMs: 0 });
      for (const e of [...events(), { type: 'checkpoint-saved', step: 50, slots: ['latest'], saveMs: 1, saveThread: 'idle', samples: ['x'.repeat(300)] } as const]) r.onEvent(e);
      for (const piece of tty.text().split('\r\x1b[2K').flatMap((p) => p.split('\n'))) {
        const text = visible(piece);
        if (text.startsWith('training ') || text.startsWith('step 0:')) continue; // messages are printed whole
        expect(text.length, JSON.stringify(piece)).toBeLessThan(columns);
      }
    }
  });
});

const FIELDS: StatusFields = {
  step: 412,
  totalSteps: 1000,
  elapsedMs: 48_000,
  remainingMs: 69_000,
  loss: 1.0831,
  validation: { step: 400, validationLoss: 1.2169 },
  best: { step: 300, validationLoss: 1.2169 },
  tokensPerSecond: 22_082,
  checkpointStep: 400,
  activity: 'eval val 3/5',
};

/** The fields of a laid-out line, by what they show. */
function present(line: string, clock: string): Set<string> {
  const found = new Set<string>();
  if (line.includes(clock)) found.add('time');
  const probes: [string, RegExp][] = [
    ['bar', /▕/],
    ['counter', /\d+\/\d+/],
    ['percent', /\d+%/],
    ['loss', /loss /],
    ['val', /val \d|val --/],
    ['best', /best /],
    ['tok/s', /tok\/s/],
    ['ckpt', /ckpt /],
    ['activity', /eval /],
  ];
  for (const [name, re] of probes) if (re.test(line)) found.add(name);
  return found;
}

/** Dropped first to last. */
const PRIORITY = ['activity', 'best', 'val', 'percent', 'loss', 'ckpt', 'counter', 'bar', 'tok/s', 'time'];

describe('layoutStatusLine', () => {
  it('lays out every field, tqdm style, when there is room', () => {
    expect(layoutStatusLine(FIELDS, 119)).toBe(
      '▕█████       ▏ 412/1000 41% 00:48<01:09  loss 1.0831  val 1.2169  best 1.2169@300  22.1k tok/s  ckpt @400  eval val 3/5',
    );
    expect(layoutStatusLine(FIELDS, Infinity, { bar: false })).toBe('step 412/1000 41% 00:48<01:09  loss 1.0831  val 1.2169  best 1.2169@300  22.1k tok/s  ckpt @400  eval val 3/5');
  });

  it('drops fields by priority on narrow terminals, keeping elapsed<remaining and tokens/s to the last', () => {
    expect(layoutStatusLine(FIELDS, 100)).toBe('▕█████████▉              ▏ 412/1000 41% 00:48<01:09  loss 1.0831  val 1.2169  22.1k tok/s  ckpt @400');
    expect(layoutStatusLine(FIELDS, 79)).toBe('▕██████▏        ▏ 412/1000 41% 00:48<01:09  loss 1.0831  22.1k tok/s  ckpt @400');
    expect(layoutStatusLine(FIELDS, 59)).toBe('▕█████       ▏ 412/1000 00:48<01:09  22.1k tok/s  ckpt @400');
    expect(layoutStatusLine(FIELDS, 40)).toBe('▕█████▍       ▏ 00:48<01:09  22.1k tok/s');
    expect(layoutStatusLine(FIELDS, 30)).toBe('00:48<01:09  22.1k tok/s');
    expect(layoutStatusLine(FIELDS, 11)).toBe('00:48<01:09');
    expect(layoutStatusLine(FIELDS, 5)).toBe('00:48');
    expect(layoutStatusLine(FIELDS, 0)).toBe('');
  });

  it('never exceeds the width and drops fields only in priority order, at every width', () => {
    const fields = fc.record({
      step: fc.nat({ max: 2_000_000 }),
      totalSteps: fc.integer({ min: 1, max: 2_000_000 }),
      elapsedMs: fc.nat({ max: 400_000_000 }),
      remainingMs: fc.option(fc.nat({ max: 400_000_000 })),
      loss: fc.option(fc.double({ min: 0, max: 20, noNaN: true })),
      validation: fc.option(fc.record({ step: fc.nat({ max: 2_000_000 }), validationLoss: fc.double({ min: 0, max: 20, noNaN: true }) })),
      best: fc.option(fc.record({ step: fc.nat({ max: 2_000_000 }), validationLoss: fc.double({ min: 0, max: 20, noNaN: true }) })),
      tokensPerSecond: fc.option(fc.double({ min: 0, max: 5e7, noNaN: true })),
      checkpointStep: fc.option(fc.nat({ max: 2_000_000 })),
      activity: fc.option(fc.constantFrom('eval val 3/5', 'eval train 12/40')),
    });
    fc.assert(
      fc.property(fields, fc.integer({ min: 0, max: 240 }), fc.boolean(), (f, width, bar) => {
        const line = layoutStatusLine(f, width, { bar, paint: (role, text) => `\x1b[${role === 'bar' ? 36 : 32}m${text}\x1b[39m` });
        const text = visible(line);
        expect(text.length).toBeLessThanOrEqual(width);
        expect(text).not.toMatch(/[\r\n]/);
        const clock = `${formatClock(f.elapsedMs)}<${formatClock(f.remainingMs)}`;
        const shown = present(text, clock);
        const full = present(layoutStatusLine(f, Infinity, { bar }), clock);
        // Whatever is kept outranks whatever is dropped.
        const dropped = PRIORITY.filter((p) => full.has(p) && !shown.has(p));
        const kept = PRIORITY.filter((p) => shown.has(p));
        for (const d of dropped) for (const k of kept) if (k !== 'time') expect(PRIORITY.indexOf(k), `${k} kept, ${d} dropped at ${width}: ${text}`).toBeGreaterThan(PRIORITY.indexOf(d));
        // The elapsed<remaining clock is there whenever it fits.
        if (width >= clock.length) expect(text).toContain(clock);
        else expect(text).toBe(clock.slice(0, width));
        // More room never shows fewer fields.
        expect(present(visible(layoutStatusLine(f, width + 1, { bar })), clock).size).toBeGreaterThanOrEqual(shown.size);
      }),
      { numRuns: 500, seed: 42 },
    );
  });
});

describe('formatDuration', () => {
  it('formats seconds, minutes and hours', () => {
    expect([formatDuration(12_000), formatDuration(185_000), formatDuration(3_720_000), formatDuration(Number.NaN)]).toEqual(['12s', '3m05s', '1h02m', '--']);
  });
});

describe('formatClock', () => {
  it('formats a clock as mm:ss, h:mm:ss from an hour, --:-- when unknown', () => {
    expect([formatClock(0), formatClock(69_999), formatClock(3_725_000), formatClock(null), formatClock(-1)]).toEqual(['00:00', '01:09', '1:02:05', '--:--', '--:--']);
  });
});
