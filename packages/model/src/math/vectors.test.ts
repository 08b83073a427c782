import { describe, expect, it } from 'vitest';
import { bits as bitPattern, f64, fixture } from '../../test/helpers/bits.ts';
import { cos, exp, ln, log1p, pow, sin } from './index.ts';

/** The 16-hex-digit bit pattern of x (every NaN as the canonical 7ff8000000000000: JS defines no NaN payloads). */
function bits(x: number): string {
  return x !== x ? '7ff8000000000000' : bitPattern(x);
}

interface LibmCall {
  fn: 'exp' | 'log' | 'log1p' | 'sin' | 'cos' | 'pow';
  args: string[];
  result: string;
  math_js_matches: boolean;
  correctly_rounded: boolean;
}

const FUNCTIONS: Record<LibmCall['fn'], (args: number[]) => number> = {
  exp: ([x]) => exp(x as number),
  log: ([x]) => ln(x as number),
  log1p: ([x]) => log1p(x as number),
  sin: ([x]) => sin(x as number),
  cos: ([x]) => cos(x as number),
  pow: ([x, y]) => pow(x as number, y as number),
};

/** Every case whose result bits differ, described with both bit patterns. */
function mismatches(cases: readonly { name: string; args: string[]; expected: string }[], f: (args: number[]) => number): string[] {
  const out: string[] = [];
  for (const c of cases) {
    const found = bits(f(c.args.map(f64)));
    if (found !== c.expected) out.push(`${c.name}(${c.args.join(', ')}): expected ${c.expected}, found ${found}`);
  }
  return out;
}

describe('libm-calls.json (every transcendental argument of the reference run)', () => {
  const data = fixture<{ summary: Record<string, { unique_args_all: number }>; calls: LibmCall[] }>('libm-calls.json');

  for (const fn of Object.keys(FUNCTIONS) as LibmCall['fn'][]) {
    it(`reproduces the reference bits of every ${fn} argument`, () => {
      const cases = data.calls.filter((c) => c.fn === fn).map((c) => ({ name: fn, args: c.args, expected: c.result }));
      expect(cases.length).toBe(data.summary[fn]?.unique_args_all);
      expect(mismatches(cases, FUNCTIONS[fn]).slice(0, 5)).toEqual([]);
    });
  }

  it('includes the arguments on which V8 differs from the reference', () => {
    const v8Differs = data.calls.filter((c) => !c.math_js_matches);
    expect(v8Differs.filter((c) => c.fn === 'exp').length).toBe(71);
    expect(v8Differs.filter((c) => c.fn === 'log').length).toBe(11);
    const cases = v8Differs.map((c) => ({ name: c.fn, args: c.args, expected: c.result }));
    const failures = cases.filter((c) => bits(FUNCTIONS[c.name as LibmCall['fn']](c.args.map(f64))) !== c.expected);
    expect(failures).toEqual([]);
  });
});

describe('cr-exp-ln.json (correctly rounded results by 80-digit decimal arithmetic)', () => {
  const data = fixture<{ exp: [string, string][]; ln: [string, string][] }>('cr-exp-ln.json');

  it('exp gives the correctly rounded bits for all 20,000 arguments', () => {
    expect(data.exp.length).toBe(20000);
    const cases = data.exp.map(([x, y]) => ({ name: 'exp', args: [x], expected: y }));
    expect(mismatches(cases, FUNCTIONS.exp).slice(0, 5)).toEqual([]);
  });

  it('ln gives the correctly rounded bits for all 20,000 arguments', () => {
    expect(data.ln.length).toBe(20000);
    const cases = data.ln.map(([x, y]) => ({ name: 'ln', args: [x], expected: y }));
    expect(mismatches(cases, FUNCTIONS.log).slice(0, 5)).toEqual([]);
  });
});

describe('math-log1p-fdlibm.json (fdlibm log1p over all of its branches)', () => {
  const data = fixture<{ cases: [string, string][] }>('log1p-fdlibm.json');

  it('log1p reproduces every fdlibm result bit for bit', () => {
    expect(data.cases.length).toBe(4096);
    const cases = data.cases.map(([x, y]) => ({ name: 'log1p', args: [x], expected: y }));
    expect(mismatches(cases, FUNCTIONS.log1p).slice(0, 5)).toEqual([]);
  });
});
