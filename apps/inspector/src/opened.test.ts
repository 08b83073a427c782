import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { diffCheckpoints } from '@llmcp/format/inspect';
import { classify, parseJob, parseLossLog } from './opened.ts';
import { f64Stats } from './stats.ts';

const FIXTURES = new URL('../../../packages/conformance/fixtures/', import.meta.url);
const golden = new Uint8Array(readFileSync(new URL('golden-6330.llmcp', FIXTURES)));

describe('classify', () => {
  it('inspects LLMCP35 bytes whatever their name, and a .llmcp name whatever its bytes', () => {
    const a = classify('weights.bin', golden);
    expect(a.kind).toBe('checkpoint');
    expect(a.kind === 'checkpoint' && a.inspection.verdict.valid).toBe(true);
    const b = classify('x.llmcp', new TextEncoder().encode('{"step":1,"loss":2}\n'));
    expect(b.kind === 'checkpoint' && !b.inspection.verdict.valid && b.inspection.verdict.error.code).toBe('FORMAT_TRUNCATED');
  });

  it('recognises loss logs and job files', () => {
    expect(classify('loss.jsonl', new TextEncoder().encode('{"step":1,"loss":2.5}\n')).kind).toBe('loss');
    expect(classify('log.txt', new TextEncoder().encode('{"step":1,"loss":2.5}\n')).kind).toBe('loss');
    expect(classify('job.json', new TextEncoder().encode('{"step":3,"evaluations":[{"step":0,"validationLoss":1.5}]}')).kind).toBe('job');
    expect(classify('notes.json', new TextEncoder().encode('{"hello":1}')).kind).toBe('checkpoint');
  });
});

/** A minimal safetensors file: u64 header length, JSON padded with spaces, data. */
function safetensors(header: unknown, data: number): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const n = Math.ceil(json.length / 8) * 8;
  const out = new Uint8Array(8 + n + data).fill(0x20, 8, 8 + n);
  new DataView(out.buffer).setBigUint64(0, BigInt(n), true);
  out.set(json, 8);
  return out;
}

describe('classify (foreign files)', () => {
  it('recognises a safetensors file whatever its name and shows its tensor table', () => {
    const o = classify('weights.llmcp', safetensors({ __metadata__: { format: 'pt' }, w: { dtype: 'F32', shape: [2, 2], data_offsets: [0, 16] } }, 16));
    expect(o.kind).toBe('foreign');
    if (o.kind !== 'foreign') return;
    expect(o.format).toBe('safetensors');
    if (o.header?.kind !== 'safetensors') throw new Error('expected a safetensors header');
    expect(o.header.tensors.map((t) => [t.name, t.dtype, t.shape])).toEqual([['w', 'F32', [2, 2]]]);
  });

  it('recognises a GGUF file and reports a damaged header with its code', () => {
    const bytes = new Uint8Array(24);
    bytes.set([0x47, 0x47, 0x55, 0x46, 3, 0, 0, 0]);
    const empty = classify('m.gguf', bytes);
    expect(empty.kind === 'foreign' && empty.header?.kind).toBe('gguf');
    new DataView(bytes.buffer).setBigUint64(8, 0xffffffffffffffffn, true);
    const damaged = classify('m.gguf', bytes);
    expect(damaged.kind === 'foreign' && damaged.error?.code).toBe('FOREIGN_LIMIT_EXCEEDED');
  });
});

describe('parseLossLog', () => {
  it('reads training and evaluation records with the trainer parser, counts bad lines and reports the first gap', () => {
    const text = [
      '{"step":1,"loss":3,"learningRate":0.1,"gradientNorm":1,"clipped":false,"tokens":4}',
      'not json',
      '{"step":2,"loss":2,"learningRate":0.1,"gradientNorm":0.5,"clipped":true,"tokens":4}',
      '{"step":2,"validationLoss":2.5,"trainingLoss":null}',
      '{"step":4,"loss":1,"learningRate":0.05,"gradientNorm":0.25,"clipped":false,"tokens":4}',
      '{"step":5,"loss":1}',
    ].join('\n');
    const log = parseLossLog('loss.jsonl', text);
    expect(log.history.training.map((p) => [p.step, p.loss, p.learningRate, p.gradientNorm])).toEqual([
      [1, 3, 0.1, 1],
      [2, 2, 0.1, 0.5],
      [4, 1, 0.05, 0.25],
    ]);
    expect(log.history.evaluations).toEqual([{ step: 2, validationLoss: 2.5, trainingLoss: null }]);
    expect(log.history.badLineCount).toBe(2);
    expect(log.history.badLines.map((b) => b.line)).toEqual([2, 6]);
    expect(log.history.badLines[1]?.problem).toBe('"learningRate" is not a finite number');
    expect(log.history.problem).toBe('line 5 has step 4, expected 3');
  });

  it('recognises a log that starts with an evaluation record (step 0) by its content', () => {
    const o = classify('history.txt', new TextEncoder().encode('{"step":0,"validationLoss":1.5,"trainingLoss":null}\n'));
    expect(o.kind === 'loss' && o.history.evaluations).toEqual([{ step: 0, validationLoss: 1.5, trainingLoss: null }]);
  });

  it('reads the evaluations of a job file', () => {
    expect(parseJob('job.json', { evaluations: [{ step: 0, validationLoss: 1.9, trainingLoss: null }, { step: 2 }] })?.validation).toEqual([{ step: 0, loss: 1.9 }]);
    expect(parseJob('job.json', { step: 1 })).toBeNull();
  });
});

describe('f64Stats', () => {
  it('computes min, max, mean, RMS, zeros, non-finite values and a histogram from unaligned bytes', () => {
    const bytes = new Uint8Array(1 + 6 * 8);
    const view = new DataView(bytes.buffer, 1);
    [1, -1, 0, -0, Number.NaN, 3].forEach((x, i) => view.setFloat64(8 * i, x, true));
    const s = f64Stats(bytes, 1, 6);
    expect(s).toMatchObject({ count: 6, min: -1, max: 3, mean: 3 / 5, zeros: 2, nonFinite: 1 });
    expect(s.rms).toBe(Math.sqrt(11 / 5));
    expect(s.histogram.reduce((a, b) => a + b, 0)).toBe(5);
    expect(s.histogram[0]).toBe(1);
    expect(s.histogram.at(-1)).toBe(1);
  });
});

describe('diffCheckpoints (shared with llmcp diff)', () => {
  it('finds the one differing second-moment element and the checksum field of a damaged file', () => {
    const other = new Uint8Array(readFileSync(new URL('malformed/second-moment-negative-zero.llmcp', FIXTURES)));
    const a = classify('a', golden);
    const b = classify('b', other);
    if (a.kind !== 'checkpoint' || b.kind !== 'checkpoint') throw new Error('expected checkpoints');
    const d = diffCheckpoints(golden, other, { a: a.inspection, b: b.inspection });
    expect(d.bitIdentical).toBe(false);
    expect(d.fields.map((f) => f.field)).toEqual(['checksum']);
    const changed = d.tensors.filter((t) => t.status !== 'identical');
    expect(changed).toHaveLength(1);
    expect(changed[0]).toMatchObject({ kind: 'second-moment', differing: 1 });
    expect(changed[0]?.first?.b).toBe('0x8000000000000000');
    expect(diffCheckpoints(golden, golden).bitIdentical).toBe(true);
  });
});
