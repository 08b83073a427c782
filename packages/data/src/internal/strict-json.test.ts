import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonDepthExceeded, MAX_JSON_DEPTH, parseStrictJson, StrictJsonError } from './strict-json.ts';

/** The nesting depth of a parsed value (arrays and objects). */
function depthOf(v: unknown): number {
  if (Array.isArray(v)) return 1 + Math.max(0, ...v.map(depthOf));
  if (typeof v === 'object' && v !== null) return 1 + Math.max(0, ...Object.values(v).map(depthOf));
  return 0;
}

/** A value nested `n` deep, wrapping `leaf` in arrays or objects. */
const nested = fc.tuple(fc.integer({ min: 0, max: 300 }), fc.array(fc.boolean(), { minLength: 300, maxLength: 300 }), fc.jsonValue({ maxDepth: 2 })).map(([n, kinds, leaf]) => {
  let v: unknown = leaf;
  for (let i = 0; i < n; i++) v = kinds[i] === true ? [v] : { '[{"\\\\': v };
  return v;
});

describe('jsonDepthExceeded', () => {
  it('finds the first bracket deeper than the limit exactly when the value nests deeper, brackets in strings aside', () => {
    fc.assert(
      fc.property(nested, fc.integer({ min: 0, max: 200 }), (value, limit) => {
        const text = JSON.stringify(value);
        const at = jsonDepthExceeded(text, limit);
        expect(at === null).toBe(depthOf(value) <= limit);
        if (at !== null) expect('[{').toContain(text[at]);
      }),
      { numRuns: 300 },
    );
  });

  it('agrees with the strict parser, whose limit is the default: refused there exactly when found here', () => {
    fc.assert(
      fc.property(nested, (value) => {
        const text = JSON.stringify(value);
        let refused = false;
        try {
          parseStrictJson(new TextEncoder().encode(text));
        } catch (e) {
          refused = e instanceof StrictJsonError && /deeper than/.test(e.message);
        }
        expect(jsonDepthExceeded(text) !== null).toBe(refused);
        expect(refused).toBe(depthOf(value) > MAX_JSON_DEPTH);
      }),
      { numRuns: 200 },
    );
  });

  it('scans 100,000 levels in one linear pass without recursion', () => {
    const text = '['.repeat(100_000) + ']'.repeat(100_000);
    expect(jsonDepthExceeded(text)).toBe(MAX_JSON_DEPTH);
    expect(jsonDepthExceeded(text, 100_000)).toBeNull();
  });
});
