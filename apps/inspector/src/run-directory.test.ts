import { describe, expect, it } from 'vitest';
import { ema } from './loss-history.ts';
import { copiesOf, groupRunFiles, parseSampleAudit, readRun, type PathedFile } from './run-directory.ts';
import { diffLabels } from './views/diff.ts';
import { axisLabels } from './views/loss.ts';
import { eventMarkers, parseRunManifest } from './run-events.ts';
import { compareSlots } from './run-layout.ts';
import { divergingColour, heatmapGrid } from './heatmap.ts';

function file(path: string, text = ''): PathedFile {
  return { path, file: new Blob([text]) };
}

const MANIFEST = JSON.stringify({
  format: 'llmcp-run/1',
  runId: 'r1',
  events: [
    { event: 'created', time: 't0', configDigest: 'sha256:x', steps: 16, config: {} },
    { event: 'stopped', time: 't1', step: 6, reason: 'signal' },
    { event: 'resumed', time: 't2', slot: 'latest', step: 6, orphanedLossRecords: 1, orphanedLossSha256: null, refused: [{ slot: 'latest', reason: 'TRAINER_STATE_INVALID' }], repaired: ['step snapshot'] },
    { event: 'pivot', time: 't3', pivot: 1, step: 10, changed: ['schedule'], fromConfigDigest: 'a', toConfigDigest: 'b', archive: 'archive/pivot-1', reason: 'slower' },
    { event: 'forked-to', time: 't4', run: '/x/b', runId: 'r2', slot: 'step_000008', step: 8, stateSha256: 's' },
    { event: 'completed', time: 't5', step: 16, bestStep: 16, bestValidationLoss: 1.25 },
  ],
});

describe('groupRunFiles', () => {
  it('finds run roots by run.json, loss.jsonl and checkpoints/<slot>/, and keeps other files apart', () => {
    const { runs, rest } = groupRunFiles([
      file('runs/a/run.json'),
      file('runs/a/checkpoints/latest/state.llmcp'),
      file('runs/a/archive/pivot-1/job.json'),
      file('runs/b/checkpoints/step_000008/job.json'),
      file('notes.txt'),
    ]);
    expect(runs.map((r) => [r.name, [...r.files.keys()]])).toEqual([
      ['a', ['run.json', 'checkpoints/latest/state.llmcp', 'archive/pivot-1/job.json']],
      ['b', ['checkpoints/step_000008/job.json']],
    ]);
    expect(rest.map((f) => f.path)).toEqual(['notes.txt']);
    // A dropped folder's entries start with '/'; the contents of a run opened directly have no root folder.
    expect(groupRunFiles([file('/r/loss.jsonl')]).runs.map((r) => r.name)).toEqual(['r']);
    expect(groupRunFiles([file('loss.jsonl'), file('checkpoints/best/job.json')]).runs.map((r) => [r.name, r.files.size])).toEqual([['run', 2]]);
    expect(groupRunFiles([file('loss.jsonl')])).toEqual({ runs: [], rest: [file('loss.jsonl')] });
    // A slot directory opened alone is not a run: its files open one by one.
    expect(groupRunFiles([file('latest/state.llmcp'), file('latest/job.json')]).runs).toEqual([]);
  });
});

describe('readRun', () => {
  it('reads events, markers, the loss history and the slots with their steps; finds same-step copies', async () => {
    const loss = '{"step":1,"loss":2,"learningRate":0.1,"gradientNorm":1,"clipped":false,"tokens":2}\n{"step":1,"validationLoss":2.5,"trainingLoss":null}\n';
    const { runs } = groupRunFiles([
      file('a/run.json', MANIFEST),
      file('a/loss.jsonl', loss),
      file('a/checkpoints/latest/state.llmcp', 'xx'),
      file('a/checkpoints/latest/job.json', '{"step":16}'),
      file('a/checkpoints/latest.backup/state.llmcp', 'x'),
      file('a/checkpoints/latest.backup/job.json', '{"step":12}'),
      file('a/checkpoints/step_000016/state.llmcp', 'xx'),
      file('a/checkpoints/step_000016/job.json', '{"step":16}'),
      file('a/checkpoints/step_000012/state.llmcp', 'x'),
      file('a/checkpoints/step_000012/job.json', '{"step":12}'),
      file('a/checkpoints/best/state.llmcp', 'xx'),
      file('a/checkpoints/best/job.json', 'not json'),
      file('a/checkpoints/.tmp-latest-1-2/state.llmcp', 'x'),
    ]);
    const run = await readRun(runs[0] as (typeof runs)[number]);
    expect(run.manifest?.runId).toBe('r1');
    expect(run.manifest?.events.map((e) => [e.event, e.step])).toEqual([
      ['created', null],
      ['stopped', 6],
      ['resumed', 6],
      ['pivot', 10],
      ['forked-to', 8],
      ['completed', 16],
    ]);
    expect(run.manifest?.events[2]?.detail).toBe('from latest · 1 orphaned loss record(s) cut · refused: latest (TRAINER_STATE_INVALID) · repaired: step snapshot');
    expect(run.markers).toEqual([
      { step: 6, event: 'resumed', label: 'resume' },
      { step: 10, event: 'pivot', label: 'pivot' },
      { step: 8, event: 'forked-to', label: 'fork' },
    ]);
    expect(run.loss?.evaluations).toEqual([{ step: 1, validationLoss: 2.5, trainingLoss: null }]);
    expect(run.slots.map((s) => [s.name, s.step, s.jobProblem === null])).toEqual([
      ['latest', 16, true],
      ['latest.backup', 12, true],
      ['best', null, false],
      ['step_000016', 16, true],
      ['step_000012', 12, true],
    ]);
    const latest = run.slots[0] as (typeof run.slots)[number];
    expect(copiesOf(run, latest).map((s) => s.name)).toEqual(['step_000016']);
    expect(copiesOf(run, run.slots[1] as (typeof run.slots)[number]).map((s) => s.name)).toEqual(['step_000012']);
  });

  it('reports a run.json that is not a manifest', () => {
    expect(parseRunManifest('[1]').problem).toBe('not a run manifest (no "events" list)');
    expect(parseRunManifest('{').problem).toMatch(/^not valid JSON/);
    expect(eventMarkers(parseRunManifest('{"format":"llmcp-run/1","events":[{"event":"forked-from","step":3}]}'))).toEqual([{ step: 3, event: 'forked-from', label: 'fork' }]);
  });

  it('orders slots: named in resume order, then step snapshots from the newest', () => {
    expect(['step_000002', 'best', 'step_000010', 'latest.backup', 'latest'].sort(compareSlots)).toEqual(['latest', 'latest.backup', 'best', 'step_000010', 'step_000002']);
  });
});

describe('ema', () => {
  it('smooths with s = α·s + (1 − α)·x from the first value, and leaves α = 0 unchanged', () => {
    expect(ema([4, 0, 0], 0.5)).toEqual([4, 2, 1]);
    expect(ema([1, 2, 3], 0)).toEqual([1, 2, 3]);
    expect(() => ema([1], 1)).toThrow(RangeError);
  });
});

describe('heatmapGrid', () => {
  it('reads a row-major matrix and averages blocks when it exceeds the cap', () => {
    const rows = 4;
    const columns = 6;
    const bytes = new Uint8Array(3 + rows * columns * 8);
    const view = new DataView(bytes.buffer, 3);
    for (let k = 0; k < rows * columns; k++) view.setFloat64(8 * k, k - 10, true);
    const full = heatmapGrid(bytes, { offset: 3, rows, columns });
    expect([full.rows, full.columns, full.scale]).toEqual([4, 6, 13]);
    expect(full.values[7]).toBe(-3);
    const small = heatmapGrid(bytes, { offset: 3, rows, columns, maxCells: 2 });
    expect([small.rows, small.columns, small.blockRows, small.blockColumns]).toEqual([2, 2, 2, 3]);
    // Top-left block: rows 0–1, columns 0–2 → values −10, −9, −8, −4, −3, −2.
    expect(small.values[0]).toBe(-6);
    expect(() => heatmapGrid(bytes, { offset: 4, rows, columns })).toThrow(RangeError);
  });

  it('colours negative blue, zero white, positive red and non-finite black', () => {
    expect(divergingColour(0, 1)).toEqual([255, 255, 255]);
    expect(divergingColour(-1, 1)).toEqual([0x21, 0x66, 0xac]);
    expect(divergingColour(5, 1)).toEqual([0xb2, 0x18, 0x2b]);
    expect(divergingColour(Number.NaN, 1)).toEqual([0, 0, 0]);
  });
});

describe('readRun: samples.json and timing', () => {
  it('reads the latest sample audit and the throughput and wall clock of loss.jsonl', async () => {
    const loss = [
      '{"step":1,"loss":2,"learningRate":0.1,"gradientNorm":1,"clipped":false,"tokens":512,"timing":{"tokensPerSecond":1000,"stepMs":512,"time":"2026-01-01T00:00:00.000Z"}}',
      '{"step":2,"loss":1.5,"learningRate":0.1,"gradientNorm":1,"clipped":false,"tokens":512,"timing":{"tokensPerSecond":2000,"stepMs":256,"time":"2026-01-01T00:01:30.000Z"}}',
    ].join('\n');
    const samples = JSON.stringify({ step: 2, rngState: '0x01', rngStateAfter: '0x02', samples: [{ text: 'Once upon', tokens: [0, 5] }, { tokens: [0, 1, 2] }] });
    const { runs } = groupRunFiles([file('a/loss.jsonl', loss), file('a/samples.json', samples)]);
    const run = await readRun(runs[0] as NonNullable<(typeof runs)[0]>);
    expect(run.samples).toEqual({ step: 2, samples: ['Once upon', '(3 tokens, not text)'], problem: null });
    expect(run.loss?.timing).toEqual([
      { step: 1, tokensPerSecond: 1000, stepMs: 512, elapsedMs: 0 },
      { step: 2, tokensPerSecond: 2000, stepMs: 256, elapsedMs: 90_000 },
    ]);
    expect(parseSampleAudit('{').problem).toMatch(/^samples\.json is not valid JSON/);
    const bare = await readRun(groupRunFiles([file('b/loss.jsonl', loss.split('\n')[0]?.replace(/,"timing":\{[^}]*\}/, ''))]).runs[0] as NonNullable<(typeof runs)[0]>);
    expect([bare.samples, bare.loss?.timing]).toEqual([null, []]);
  });
});

describe('diffLabels', () => {
  it('tells two state.llmcp files apart by the ends of their paths, else by step and checksum', () => {
    expect(diffLabels({ name: 'runs/a/checkpoints/best/state.llmcp', step: 8n, checksum: 'fnv1a64:1' }, { name: 'runs/a/checkpoints/step_000004/state.llmcp', step: 4n, checksum: 'fnv1a64:2' })).toEqual([
      'best/state.llmcp',
      'step_000004/state.llmcp',
    ]);
    expect(diffLabels({ name: 'runs/a/checkpoints/best/state.llmcp', step: 8n, checksum: null }, { name: 'runs/b/checkpoints/best/state.llmcp', step: 8n, checksum: null })).toEqual([
      'a/checkpoints/best/state.llmcp',
      'b/checkpoints/best/state.llmcp',
    ]);
    expect(diffLabels({ name: 'state.llmcp', step: 8n, checksum: 'fnv1a64:1' }, { name: 'state.llmcp', step: 16n, checksum: 'fnv1a64:2' })).toEqual([
      'state.llmcp (step 8, fnv1a64:1)',
      'state.llmcp (step 16, fnv1a64:2)',
    ]);
    expect(diffLabels({ name: 'x.llmcp', step: null, checksum: null }, { name: 'y.llmcp', step: null, checksum: null })).toEqual(['x.llmcp', 'y.llmcp']);
  });
});

describe('axisLabels', () => {
  it('labels a log axis of small learning rates without a 0 tick (the default number format rounds 1e-4 to 0)', () => {
    expect(new Intl.NumberFormat('en-US').format(0.0001)).toBe('0');
    expect(axisLabels([0.0001, 0.001, 0.01, 0.1], true)).toEqual(['1e-4', '0.001', '0.01', '0.1']);
    expect(axisLabels([0.00025, 2.5e-5, 1234.5, 0, -1, null], true)).toEqual(['2.5e-4', '2.5e-5', '1234.5', '', '', '']);
    expect(axisLabels([0, 0.5, 1], false)).toEqual(['0', '0.5', '1']);
  });
});
