import { describe, expect, it } from 'vitest';
import { goldenBytes } from '../test/golden.ts';
import { fixChecksum } from '../test/helpers/raw-file.ts';
import { byteDifferenceText, diffCheckpoints, locateByteDifferences, tensorDifferenceText } from './checkpoint-diff.ts';
import { inspectCheckpoint } from './inspect.ts';

const GOLDEN = goldenBytes();
const layout = inspectCheckpoint(GOLDEN);

function record(name: string, role: string): { offset: number; end: number } {
  const d = layout.descriptors.find((x) => x.name === name && x.role === role);
  if (d === undefined || d.end === null) throw new Error(`no ${role} ${name}`);
  return { offset: Number(d.offset), end: Number(d.end) };
}

describe('diffCheckpoints', () => {
  it('reports a file against itself as bit-identical with 33 identical tensors', () => {
    const d = diffCheckpoints(GOLDEN, GOLDEN.slice());
    expect(d.bitIdentical).toBe(true);
    expect(d.fields).toEqual([]);
    expect(d.checksumA).toBe('fnv1a64:2b8b6097eaed6a91');
    expect(d.tensors).toHaveLength(33);
    expect(d.tensors.every((t) => t.status === 'identical')).toBe(true);
    expect(d.tensors.map((t) => t.kind).filter((k, i, all) => all.indexOf(k) === i)).toEqual(['parameter', 'first-moment', 'second-moment']);
  });

  it('counts the differing elements of a tensor with max |Δ| and the first differing bits, and names changed header fields', () => {
    const { offset } = record('blocks.0.attention.key.weight', 'second-moment');
    const b = GOLDEN.slice();
    const view = new DataView(b.buffer);
    const before = view.getFloat64(offset + 8 * 2, true);
    view.setFloat64(offset + 8 * 2, -0, true);
    const fixed = fixChecksum(b);
    const d = diffCheckpoints(GOLDEN, fixed);
    expect(d.bitIdentical).toBe(false);
    expect(d.fields.map((f) => f.field)).toEqual(['checksum']);
    const changed = d.tensors.filter((t) => t.status !== 'identical');
    expect(Object.keys(changed[0] ?? {})).toEqual(['kind', 'name', 'shapeA', 'shapeB', 'status', 'elements', 'differing', 'maxAbsDelta', 'first']);
    expect(changed).toEqual([
      {
        kind: 'second-moment',
        name: 'blocks.0.attention.key.weight',
        status: 'different',
        shapeA: [4, 4],
        shapeB: [4, 4],
        elements: 16,
        differing: 1,
        maxAbsDelta: Math.abs(before),
        first: { index: 2, a: expect.stringMatching(/^0x[0-9a-f]{16}$/) as unknown as string, b: '0x8000000000000000' },
      },
    ]);
  });

  it('compares damaged files as far as they parse: tensors outside a truncated file are unreadable', () => {
    const cut = GOLDEN.slice(0, 4000);
    const d = diffCheckpoints(GOLDEN, cut);
    expect(d.fields.map((f) => f.field)).toEqual(['file length']);
    const statuses = new Set(d.tensors.map((t) => t.status));
    expect(statuses).toEqual(new Set(['identical', 'unreadable']));
    const none = diffCheckpoints(GOLDEN, new Uint8Array(0));
    expect(none.checksumB).toBe('(absent)');
    expect(none.tensors.every((t) => t.status === 'only-in-a')).toBe(true);
  });
});

describe('tensorDifferenceText', () => {
  it('words every status the same way for every caller, naming the files as asked', () => {
    const { offset } = record('blocks.0.attention.key.weight', 'second-moment');
    const b = GOLDEN.slice();
    new DataView(b.buffer).setFloat64(offset, 1.5, true);
    const changed = diffCheckpoints(GOLDEN, fixChecksum(b)).tensors.find((t) => t.status === 'different');
    expect(changed === undefined ? null : tensorDifferenceText(changed)).toBe('1 of 16 differ');
    const same = diffCheckpoints(GOLDEN, GOLDEN.slice()).tensors[0];
    expect(same === undefined ? null : tensorDifferenceText(same)).toBe('identical');
    const onlyA = diffCheckpoints(GOLDEN, new Uint8Array(0)).tensors[0];
    expect(onlyA === undefined ? null : tensorDifferenceText(onlyA)).toBe('only in a');
    expect(onlyA === undefined ? null : tensorDifferenceText(onlyA, { a: 'A', b: 'B' })).toBe('only in A');
    const onlyB = diffCheckpoints(new Uint8Array(0), GOLDEN).tensors[0];
    expect(onlyB === undefined ? null : tensorDifferenceText(onlyB, { a: 'A', b: 'B' })).toBe('only in B');
    const cut = diffCheckpoints(GOLDEN, GOLDEN.slice(0, 4000)).tensors.find((t) => t.status === 'unreadable');
    expect(cut === undefined ? null : tensorDifferenceText(cut)).toBe('not comparable (bytes outside the file)');
  });
});

describe('locateByteDifferences', () => {
  it('locates one flipped bit to the record element that holds it', () => {
    const { offset } = record('blocks.0.attention.query.weight', 'model-parameter');
    const damaged = GOLDEN.slice();
    damaged[offset + 8 * 3 + 5] = (damaged[offset + 8 * 3 + 5] as number) ^ 0x10;
    const d = locateByteDifferences(GOLDEN, damaged);
    expect(d).toMatchObject({ differingBytes: 1, differingBits: 1, truncated: false, layoutOf: 'a' });
    expect(d.runs).toEqual([
      { start: offset + 24, last: offset + 31, differingBytes: 1, differingBits: 1, region: 'record', name: 'blocks.0.attention.query.weight', role: 'model-parameter', firstElement: 3, lastElement: 3 },
    ]);
    expect(byteDifferenceText(d.runs[0] as (typeof d.runs)[number])).toBe(`bytes ${offset + 24}–${offset + 31} differ: record \`blocks.0.attention.query.weight\` (model-parameter) element 3 (1 bit)`);
    // The damaged copy as `a`: its layout (checksum mismatch) is not valid, so `b` names the bytes.
    expect(locateByteDifferences(damaged, GOLDEN).layoutOf).toBe('b');
  });

  it('names header fields and descriptor entries, and merges adjacent elements', () => {
    const b = GOLDEN.slice();
    b[30] = (b[30] as number) ^ 0xff;
    const entry = layout.descriptors[7];
    if (entry === undefined) throw new Error('no descriptor 7');
    b[entry.entryOffset + 1] = (b[entry.entryOffset + 1] as number) ^ 1;
    const { offset } = record('final_norm.gain', 'model-parameter');
    for (const k of [0, 8, 16]) b[offset + k] = (b[offset + k] as number) ^ 3;
    const runs = locateByteDifferences(GOLDEN, b).runs;
    expect(runs.map((r) => [r.region, r.name, r.firstElement, r.lastElement, r.differingBits])).toEqual([
      ['fixed-header', 'checksum', undefined, undefined, 8],
      ['descriptor-entry', `descriptor #7 (${entry.name})`, undefined, undefined, 1],
      ['record', 'final_norm.gain', 0, 2, 6],
    ]);
    expect(byteDifferenceText(runs[0] as (typeof runs)[number])).toBe('byte 30 differs: fixed header field checksum (8 bits)');
    expect(locateByteDifferences(GOLDEN, b, { maxRuns: 1 })).toMatchObject({ truncated: true, differingBytes: 5 });
  });
});
