/**
 * Issue 34's acceptance on a generated text shaped like a real one: one short
 * record per line (a few long ones), no blank lines. The first `llmcp train
 * --size small --corpus` works; `--dry-run --json` says the windows reach at
 * least 99% of the training tokens and writes nothing; `eval` and `report`
 * work on the run with `rng_exact:true`; `latest/job.json` stays in
 * kilobytes; a run stopped before an epoch boundary resumes to the same bytes.
 * The model is the small size with a short budget (the test shares two cores).
 */
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { SplitMix64 } from '@llmcp/format';
import { parseConfig, trainRun } from '@llmcp/trainer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { llmcp, tempDir } from './helpers.ts';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

const WORDS = ['and', 'the', 'of', 'unto', 'he', 'said', 'land', 'people', 'king', 'house', 'day', 'water', 'light', 'river', 'stone', 'came', 'went', 'there', 'were', 'all'];

/** Many short records, one a line, a few long ones, no blank lines (a seeded generator). */
function recordsText(lines: number): string {
  const rng = new SplitMix64(34n);
  const out: string[] = [];
  for (let i = 0; i < lines; i += 1) {
    const words = i % 97 === 0 ? 60 + rng.nextBelow(40) : 3 + rng.nextBelow(9);
    const line = Array.from({ length: words }, () => WORDS[rng.nextBelow(WORDS.length)] as string).join(' ');
    out.push(`${line.charAt(0).toUpperCase()}${line.slice(1)}.`);
  }
  return `${out.join('\n')}\n`;
}

const corpus = path.join(tmp.dir, 'records.txt');
const runs = path.join(tmp.dir, 'runs');
const run = path.join(runs, 'small');
const steps = ['--steps', '36', '--threads', '1', '--plain'];

beforeAll(() => {
  writeFileSync(corpus, recordsText(900));
});

describe('your own text, one record per line', () => {
  it('plans the run with --dry-run --json: the windows reach at least 99% of the training tokens, and nothing is written', async () => {
    const r = await llmcp(['train', run, '--size', 'small', '--corpus', corpus, ...steps, '--dry-run', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const plan = JSON.parse(r.stdout) as Record<string, number | string>;
    expect(plan.schema).toBe('llmcp-plan/1');
    for (const key of ['parameters', 'peakMemoryBytes', 'trainingTokens', 'coveredTokens', 'stepsPerEpoch', 'estimatedSecondsPerEpoch']) expect(plan[key], key).toEqual(expect.any(Number));
    expect((plan.coveredTokens as number) / (plan.trainingTokens as number)).toBeGreaterThanOrEqual(0.99);
    // An epoch is one pass over the training tokens: windows of 64 at stride 64, in batches of 8.
    expect(plan.stepsPerEpoch).toBe(Math.ceil(Math.floor(((plan.trainingTokens as number) - 1) / 64) / 8));
    expect(plan.stepsPerEpoch as number).toBeLessThan(36);
    expect(existsSync(run)).toBe(false);
    const text = await llmcp(['train', run, '--size', 'small', '--corpus', corpus, ...steps, '--dry-run']);
    expect(text.stdout).toMatch(/^dry run of .*: nothing was written$/m);
    expect(text.stdout).toMatch(/records\.txt: 9\d\d lines/);
    expect(text.stdout).toMatch(/validation: .* change with --set evaluation\.maxBatches=<n>/);
    // --documents chooses the rule: one paragraph of 900 lines is one document, held out whole or not at all.
    const whole = await llmcp(['train', run, '--size', 'small', '--corpus', corpus, ...steps, '--documents', 'paragraphs', '--dry-run']);
    expect(whole.code).toBe(3);
    expect(whole.stderr).toMatch(/the (validation|train) partition is empty: the text corpus gave 1 document \(data\.source\.documents 'paragraphs'\).*--set data\.source\.documents=lines/);
    const corpusSource = await llmcp(['train', run, '--preset', 'ch33', '--documents', 'lines', '--dry-run']);
    expect([corpusSource.code, corpusSource.stderr.split('\n')[0]]).toEqual([2, 'llmcp train: error: --documents applies to a text corpus (a .txt or .jsonl file or a folder of them)']);
  });

  it('trains on the first command, saying what it trains on', async () => {
    const r = await llmcp(['train', run, '--size', 'small', '--corpus', corpus, ...steps]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/data: [\d,]+ training tokens in [\d,]+ documents, 99\.\d+% in [\d,]+ packed windows of 64 \(stride 64\)/);
    expect(statSync(path.join(run, 'checkpoints', 'latest', 'job.json')).size).toBeLessThan(64 * 1024);
  });

  it('eval and report work on the run, and report says rng_exact:true', async () => {
    const evaluation = await llmcp(['eval', run]);
    expect(evaluation.code, evaluation.stderr).toBe(0);
    const report = await llmcp(['report', run]);
    expect(report.code, report.stderr).toBe(0);
    expect(report.stdout).toContain('rng_exact:true');
    expect(report.stdout).not.toContain('rng_exact:false');
  });

  it('resumes a run stopped before an epoch boundary to the same bytes', async () => {
    const stopped = path.join(runs, 'stopped');
    const plan = JSON.parse((await llmcp(['train', stopped, '--size', 'small', '--corpus', corpus, ...steps, '--dry-run', '--json'])).stdout) as { stepsPerEpoch: number };
    // The same config as the run above, stopped (as Ctrl-C stops it) three steps before the first epoch ends.
    const printed = await llmcp(['config', 'small', '--corpus', corpus, '--set', 'steps=36', '--set', 'threads=1']);
    const config = parseConfig(JSON.parse(printed.stdout));
    const controller = new AbortController();
    const first = await trainRun({ runDir: stopped, config, signal: controller.signal, onEvent: (e) => e.type === 'step' && e.step === plan.stepsPerEpoch - 3 && controller.abort() });
    expect(first).toMatchObject({ status: 'stopped', step: plan.stepsPerEpoch - 3 });
    const resumed = await llmcp(['resume', stopped, '--plain']);
    expect(resumed.code, resumed.stderr).toBe(0);
    for (const file of ['checkpoints/latest/state.llmcp', 'checkpoints/best/state.llmcp']) {
      expect(readFileSync(path.join(stopped, file)).equals(readFileSync(path.join(run, file))), file).toBe(true);
    }
    const records = (dir: string): string[] => readFileSync(path.join(dir, 'loss.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.stringify({ ...JSON.parse(l), timing: undefined }));
    expect(records(stopped)).toEqual(records(run));
  });
});
