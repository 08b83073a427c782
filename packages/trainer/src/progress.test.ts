import { describe, expect, it } from 'vitest';
import type { TrainerEvent } from './events.ts';
import { createProgressRenderer, formatDuration } from './progress.ts';

function sink(isTTY: boolean): { stream: { write(s: string): void; isTTY: boolean; columns: number }; text: () => string } {
  const chunks: string[] = [];
  return { stream: { write: (s: string) => void chunks.push(s), isTTY, columns: 200 }, text: () => chunks.join('') };
}

const events = (): TrainerEvent[] => [
  { type: 'start', runDir: 'runs/x', resumedFrom: null, step: 0, totalSteps: 100, parameterCount: 1234, vocabularySize: 266, tokensPerStep: 512 },
  { type: 'evaluation', step: 0, validationLoss: 5.5, trainingLoss: null, bestStep: 0, bestValidationLoss: 5.5, improved: true },
  ...Array.from({ length: 50 }, (_, i): TrainerEvent => ({ type: 'step', step: i + 1, totalSteps: 100, loss: 5 - i / 50, learningRate: 0.01, gradientNorm: 1, clipped: false, tokens: 512, stepMs: 100 })),
  { type: 'checkpoint', step: 50, reason: 'cadence', blockedMs: 1 },
  { type: 'checkpoint-saved', step: 50, slots: ['latest', 'step_000050'], saveMs: 20, samples: ['Once upon a time'] },
];

describe('createProgressRenderer', () => {
  it('prints plain periodic status lines without escape codes when not a TTY', () => {
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
    expect(text).toContain('training runs/x: 1,234 parameters, vocabulary 266, 100 steps');
    expect(text).toContain('step 0: validation loss 5.5000 (new best)');
    expect(text).toMatch(/step \d+\/100 .* loss 4\.\d{4} .* 5,120 tok\/s {2}ETA \d+s/);
    expect(text).toContain('sample @50: "Once upon a time"');
    const statusLines = text.split('\n').filter((l) => l.startsWith('step ') && l.includes('tok/s'));
    expect(statusLines.length).toBeGreaterThan(2);
    expect(statusLines.length).toBeLessThan(20);
  });

  it('redraws one line in place on a TTY, with colour unless NO_COLOR', () => {
    const tty = sink(true);
    const r = createProgressRenderer({ stream: tty.stream, env: {}, now: () => 0, redrawMs: 0 });
    for (const e of events()) r.onEvent(e);
    r.finish();
    expect(tty.text()).toContain('\r\x1b[2K');
    expect(tty.text()).toContain('\x1b[1m');
    expect(tty.text()).toContain('ckpt @50');

    const plain = sink(true);
    const q = createProgressRenderer({ stream: plain.stream, env: { NO_COLOR: '1' }, now: () => 0, redrawMs: 0 });
    for (const e of events()) q.onEvent(e);
    expect(plain.text()).not.toContain('\x1b[1m');
  });
});

describe('formatDuration', () => {
  it('formats seconds, minutes and hours', () => {
    expect([formatDuration(12_000), formatDuration(185_000), formatDuration(3_720_000), formatDuration(Number.NaN)]).toEqual(['12s', '3m05s', '1h02m', '--']);
  });
});
