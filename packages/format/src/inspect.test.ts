import { describe, expect, it } from 'vitest';
import { goldenBytes } from '../test/golden.ts';
import { buildFile, fixChecksum, openFile } from '../test/helpers/raw-file.ts';
import { decodeCheckpoint } from './decode.ts';
import { isFormatError } from './errors.ts';
import { formatErrorData, inspectCheckpoint } from './inspect.ts';

const GOLDEN = goldenBytes();

describe('inspectCheckpoint', () => {
  it('reports what it can of a file shorter than the fixed header', () => {
    const r = inspectCheckpoint(GOLDEN.slice(0, 20));
    expect(r.verdict.valid).toBe(false);
    if (!r.verdict.valid) expect(r.verdict.error).toMatchObject({ code: 'FORMAT_TRUNCATED', category: 'Truncated', offset: 0 });
    expect(r.fixedHeader.map((f) => f.field)).toEqual(['magic', 'format version', 'endian marker']);
    expect(r.checksum).toBeNull();
    expect(inspectCheckpoint(new Uint8Array(0)).fixedHeader).toEqual([]);
  });

  it('still parses the header of a file whose checksum is wrong, and shows stored vs computed', () => {
    const b = GOLDEN.slice();
    b[6000] = (b[6000] as number) ^ 0xff;
    const r = inspectCheckpoint(b);
    expect(r.verdict.valid ? '' : r.verdict.error.code).toBe('FORMAT_CHECKSUM_MISMATCH');
    expect(r.checksum).toMatchObject({ storedLabel: 'fnv1a64:2b8b6097eaed6a91', matches: false });
    expect(r.descriptors).toHaveLength(38);
    expect(r.decoder?.modelWidth).toBe(4n);
    expect(r.tokenizer).toMatchObject({ kind: 'literal', kindName: 'literal-u32', declaredVocabulary: 5n, records: 5, preview: ['30', '31', '32', '33', '34'] });
  });

  it('lists lenient header issues in file order and the first failing rule as the verdict', () => {
    const file = openFile(GOLDEN);
    file.adamw.learningRate = 0;
    file.descriptors[5]!.roleTag = 6;
    file.descriptors[1]!.offsetOverride = 2871n;
    const r = inspectCheckpoint(buildFile(file));
    expect(r.headerIssues.map((e) => e.code)).toEqual(['FORMAT_ADAMW_CONFIG', 'FORMAT_UNKNOWN_TENSOR_ROLE']);
    expect(r.verdict.valid ? '' : r.verdict.error.code).toBe('FORMAT_ADAMW_CONFIG');
    expect(r.descriptors[1]!.checks).toEqual({ byteLengthMatchesShape: true, contiguous: false, withinFile: true });
    expect(r.descriptors[2]!.checks.contiguous).toBe(false);
    expect(r.descriptors[5]!.role).toBeNull();
    expect(r.descriptors.map((d) => d.slice).slice(3, 7)).toEqual(['tokenizer', 'tokenizer', 'model', 'model']);
  });

  it('says where parsing stopped for a header cut short', () => {
    const b = GOLDEN.slice(0, 60);
    const v = new DataView(b.buffer);
    v.setBigUint64(14, 60n, true);
    v.setBigUint64(22, 0n, true);
    const r = inspectCheckpoint(fixChecksum(b));
    expect(r.parseStoppedAt).toMatchObject({ code: 'FORMAT_TRUNCATED', field: 'tokenizer vocabulary', offset: 59 });
    expect(r.fields.map((f) => f.field)).toEqual(['tokenizer layout version', 'sampling RNG algorithm version', 'selected step', 'sampling RNG state', 'tokenizer kind']);
    expect(r.samplingRngState).toBe(0x9e3779b97f4a7c38n);
  });

  it('parses the variable header of a file with the wrong extent (truncated by one byte)', () => {
    const r = inspectCheckpoint(GOLDEN.slice(0, GOLDEN.length - 1));
    expect(r.headerIssues[0]?.code).toBe('FORMAT_FILE_EXTENT');
    expect(r.descriptors).toHaveLength(38);
    expect(r.descriptors[37]!.checks.withinFile).toBe(false);
  });
});

describe('formatErrorData', () => {
  it('copies code, category, reason, message and the context fields present into plain JSON-able data', () => {
    const b = GOLDEN.slice();
    b[6000] = (b[6000] as number) ^ 0xff;
    let caught: unknown;
    try {
      decodeCheckpoint(b);
    } catch (e) {
      caught = e;
    }
    if (!isFormatError(caught)) throw new Error('expected a FormatError');
    const data = formatErrorData(caught);
    const { code, category, reason, message, offset, field, recordName, recordIndex, elementIndex, expected, found } = caught;
    expect(data).toEqual({ code, category, reason, message, offset, field, recordName, recordIndex, elementIndex, expected, found });
    expect(Object.values(data)).not.toContain(undefined);
    expect(data).toMatchObject({ code: 'FORMAT_CHECKSUM_MISMATCH', offset: 30 });
    expect(Object.getPrototypeOf(data)).toBe(Object.prototype);
    expect(JSON.parse(JSON.stringify(data))).toEqual(data);
    // The same shape as the verdict of an inspection of the same bytes.
    const r = inspectCheckpoint(b);
    expect(r.verdict.valid ? null : r.verdict.error).toEqual(data);
  });
});
