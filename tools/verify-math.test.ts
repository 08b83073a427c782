import { describe, expect, it } from 'vitest';
import { checkExp, checkLn, checkPow, checkSinCos } from './math-oracle.ts';
import { verifyMath } from './verify-math.ts';

const view = new DataView(new ArrayBuffer(8));

/** The neighbouring double (by bit pattern) above a finite positive x. */
function nextUp(x: number): number {
  view.setFloat64(0, x);
  view.setBigUint64(0, view.getBigUint64(0) + 1n);
  return view.getFloat64(0);
}

function nextDown(x: number): number {
  view.setFloat64(0, x);
  view.setBigUint64(0, view.getBigUint64(0) - 1n);
  return view.getFloat64(0);
}

describe('verifyMath (the CI sample of tools/verify-math.ts)', () => {
  it('finds every result of a 4,000-argument sample per function verified by the oracle', () => {
    const reports = verifyMath({ count: 4000, seed: 0x63692d73616d70n });
    expect(reports.map((r) => r.name)).toEqual(['exp', 'ln', 'log1p', 'sin', 'cos', 'pow']);
    for (const r of reports) {
      expect({ name: r.name, count: r.count, ok: r.ok, failures: r.failures }).toEqual({ name: r.name, count: 4000, ok: 4000, failures: [] });
    }
  });
});

describe('math oracle', () => {
  it('accepts the correctly rounded value and rejects its neighbours', () => {
    const cases: [string, (y: number) => string, number][] = [
      ['exp(1)', (y) => checkExp(1, y), 2.718281828459045],
      ['exp(-745.1332191019411)', (y) => checkExp(-745.1332191019411, y), 5e-324],
      ['exp(-720.5)', (y) => checkExp(-720.5, y), 1.2326102893e-313],
      ['exp(709.782712893384)', (y) => checkExp(709.782712893384, y), 1.7976931348622732e308],
      ['ln(10)', (y) => checkLn(10, y), 2.302585092994046],
      ['ln(1 + 2^-52)', (y) => checkLn(1 + 2 ** -52, y), 2.2204460492503128e-16],
      ['ln(5e-324)', (y) => checkLn(5e-324, y), -744.4400719213812],
      ['sin(1e22)', (y) => checkSinCos(1e22, y, false), -0.8522008497671888],
      ['cos(1)', (y) => checkSinCos(1, y, true), 0.5403023058681398],
      ['sin(1e-300)', (y) => checkSinCos(1e-300, y, false), 1e-300],
      ['pow(10000, -0.5)', (y) => checkPow(10000, -0.5, y), 0.01],
      ['pow(2, 0.5)', (y) => checkPow(2, 0.5, y), Math.SQRT2],
    ];
    for (const [name, check, y] of cases) {
      expect(`${name} → ${check(y)}`).toBe(`${name} → ok`);
      const up = y > 0 ? nextUp(y) : nextDown(y);
      const down = y > 0 ? nextDown(y) : nextUp(y);
      expect(`${name} ↑ → ${check(up)}`).toBe(`${name} ↑ → wrong`);
      expect(`${name} ↓ → ${check(down)}`).toBe(`${name} ↓ → wrong`);
    }
  });

  it('judges overflow, underflow and special values', () => {
    expect(checkExp(709.7827128933841, Infinity)).toBe('ok');
    expect(checkExp(709.7827128933841, Number.MAX_VALUE)).toBe('wrong');
    expect(checkExp(-745.1332191019412, 0)).toBe('ok');
    expect(checkExp(-745.1332191019412, 5e-324)).toBe('wrong');
    expect(checkExp(Number.NaN, Number.NaN)).toBe('ok');
    expect(checkExp(-Infinity, 0)).toBe('ok');
    expect(checkLn(-1, Number.NaN)).toBe('ok');
    expect(checkLn(0, -Infinity)).toBe('ok');
    expect(checkLn(1, 0)).toBe('ok');
    expect(checkSinCos(Infinity, Number.NaN, false)).toBe('ok');
    expect(checkSinCos(-0, -0, false)).toBe('ok');
    expect(checkSinCos(-0, 0, false)).toBe('wrong');
    expect(checkPow(Number.NaN, 0, 1)).toBe('ok');
    expect(checkPow(1, Number.NaN, 1)).toBe('ok');
    expect(checkPow(-1, Infinity, 1)).toBe('ok');
    expect(checkPow(-8, 1 / 3, Number.NaN)).toBe('ok');
    expect(checkPow(-0, -3, -Infinity)).toBe('ok');
    expect(checkPow(-2, 3, -8)).toBe('ok');
    expect(checkPow(-2, 3, 8)).toBe('wrong');
    expect(checkPow(10, 400, Infinity)).toBe('ok');
    expect(checkPow(0.1, 323, 1e-323)).toBe('ok');
  });
});
