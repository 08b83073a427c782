import { describe, expect, it } from 'vitest';
import { FORMAT_ERROR_CATEGORIES, FORMAT_ERROR_CODES, FormatError, isFormatError } from './errors.ts';

describe('FORMAT_ERROR_CODES', () => {
  it('maps every code to exactly one spec category and back (one code per §9.9 row)', () => {
    const codes = Object.values(FORMAT_ERROR_CODES);
    expect(Object.keys(FORMAT_ERROR_CODES)).toEqual(codes);
    const categories = codes.map((c) => FORMAT_ERROR_CATEGORIES[c]);
    expect(new Set(categories).size).toBe(codes.length);
    expect(categories).toContain('Allocation');
    expect(FORMAT_ERROR_CATEGORIES.FORMAT_LIMIT_EXCEEDED).toBe('Allocation');
    expect(codes.every((c) => c.startsWith('FORMAT_'))).toBe(true);
  });
});

describe('FormatError', () => {
  it('carries code, category, reason and context fields', () => {
    const cause = new Error('disk');
    const e = new FormatError('FORMAT_LAYOUT', 'bad', { reason: 'not-contiguous', offset: 12, field: 'descriptor[1].offset', recordName: 'x', recordIndex: 1, elementIndex: 2, expected: '2870', found: '2871', cause });
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe('FormatError');
    expect([e.code, e.category, e.reason, e.offset, e.field, e.recordName, e.recordIndex, e.elementIndex, e.expected, e.found]).toEqual([
      'FORMAT_LAYOUT',
      'Layout',
      'not-contiguous',
      12,
      'descriptor[1].offset',
      'x',
      1,
      2,
      '2870',
      '2871',
    ]);
    expect(e.cause).toBe(cause);
    expect('offset' in new FormatError('FORMAT_IO', 'x')).toBe(false);
    expect(new FormatError('FORMAT_IO', 'x').reason).toBe('unspecified');
  });
});

describe('isFormatError', () => {
  it('recognises instances and look-alikes from another copy of the package by name and code', () => {
    expect(isFormatError(new FormatError('FORMAT_TRUNCATED', 'x'))).toBe(true);
    const copy = Object.assign(new Error('x'), { name: 'FormatError', code: 'FORMAT_BPE' });
    expect(isFormatError(copy)).toBe(true);
    expect(isFormatError(Object.assign(new Error('x'), { name: 'FormatError', code: 'NOPE' }))).toBe(false);
    expect(isFormatError(new TypeError('x'))).toBe(false);
    expect(isFormatError(null)).toBe(false);
    expect(isFormatError('FORMAT_BPE')).toBe(false);
  });
});
