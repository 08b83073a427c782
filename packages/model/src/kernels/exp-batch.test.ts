import { afterEach, describe, expect, it } from 'vitest';
import { exp, expSlowPathCount } from '../math/exp.ts';
import { batchExp, batchLn, expConstants, nativeExpKernel } from './exp-batch.ts';
import { ln } from '../math/ln.ts';
import { SplitMix64 } from '@llmcp/format';
import { matrix } from '../reference/matrix.ts';
import { openKernels } from './kernel-choice.ts';
import { loadNativeKernels, type NativeAddon, type NativePath } from './native.ts';
import { wasmExpAvailable, wasmExpInto } from './wasm-exp.ts';
import { referenceCrossEntropy } from '../../test/helpers/reference-kernels.ts';
import { KERNEL_SETS } from '../../test/helpers/kernel-sets.ts';
import { takesSlowPath } from '../../test/helpers/slow-path.ts';

const load = loadNativeKernels();
const addon = load.addon;
const PATHS: NativePath[] = addon === null ? [] : (['scalar', 'avx2', 'avx512'] as const).filter((p) => p === 'scalar' || p === 'avx2' || addon.bestPath() === 'avx512');
/** Skipped tests say why in their name (build the addon: node packages/model/native/build.mjs). */
const SKIPPED = addon === null ? ` — skipped: ${load.error ?? 'addon not built'}` : '';

afterEach(() => {
  addon?.setPath('best');
});

const LN2_128 = Math.LN2 / 128;

/** A deterministic generator of 32-bit words. */
function words(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s;
  };
}

/** The double after x (toward +Infinity), for finite x. */
function nextUp(x: number): number {
  if (x === 0) return Number.MIN_VALUE;
  const b = new Float64Array([x]);
  const u = new BigInt64Array(b.buffer);
  u[0] = u[0]! + (x > 0 ? 1n : -1n);
  return b[0]!;
}

/** The double before x (toward −Infinity), for finite x. */
function nextDown(x: number): number {
  return -nextUp(-x);
}

/** x and its neighbours up to `k` steps either side. */
function around(x: number, k: number): number[] {
  const out = [x];
  let up = x, down = x;
  for (let i = 0; i < k; i++) {
    up = nextUp(up);
    down = nextDown(down);
    out.push(up, down);
  }
  return out;
}

/** Arguments over the whole range, every path of exp.ts included (specials, subnormal results, E boundaries, slow path). */
function argumentSet(): Float64Array {
  const next = words(20261201);
  const xs: number[] = [];
  const bits = new Float64Array(1);
  const w = new Uint32Array(bits.buffer);
  // Random bit patterns: every double (mostly out of range or tiny).
  for (let i = 0; i < 4000; i++) {
    w[0] = next();
    w[1] = next();
    xs.push(bits[0]!);
  }
  // Uniform over the fast range and beyond, softmax shifts, small and tiny magnitudes.
  for (let i = 0; i < 40000; i++) xs.push((next() / 2 ** 32) * 1460 - 750);
  for (let i = 0; i < 20000; i++) xs.push(-(next() / 2 ** 32) * 40);
  for (let i = 0; i < 2000; i++) xs.push(((next() / 2 ** 32) - 0.5) * 2 ** (-(next() % 1100)));
  // Every table entry j (k = 128·E + j near each multiple of ln2/128), a few E.
  for (let k = -400; k <= 400; k++) xs.push(k * LN2_128, (k + 0.4999) * LN2_128, (k - 0.4999) * LN2_128);
  // Range ends and the E boundaries of the fast path (E = k >> 7: −1021, −1022 and 1023, 1024).
  for (const x of [709.79, -745.2, 709.78, 709.7827128933840, -745.1332191019411, -745.1332191019412, -708.3964185322641, -707.7032713517042, 709.0895657128241])
    xs.push(...around(x, 6));
  for (const k of [-130688, -130689, -130560, -130561, 131071, 131072, 130944, 130943])
    for (const f of [-0.5, -0.49, 0, 0.49, 0.5]) xs.push(...around((k + f) * LN2_128, 2));
  // Subnormal results.
  for (let i = 0; i < 500; i++) xs.push(-708.4 - (next() / 2 ** 32) * 36.8);
  // Specials.
  xs.push(NaN, -NaN, Infinity, -Infinity, 0, -0, Number.MIN_VALUE, -Number.MIN_VALUE, Number.MAX_VALUE, -Number.MAX_VALUE, 1, -1, 2.2250738585072014e-308);
  // Arguments that take exp.ts's BigInt slow path, found by scanning.
  xs.push(...slowPathArguments(24));
  return Float64Array.from(xs);
}

/** The first `count` arguments of a deterministic scan for which exp() takes its BigInt slow path. */
function slowPathArguments(count: number): number[] {
  const next = words(7);
  const found: number[] = [];
  for (let i = 0; i < 2_000_000 && found.length < count; i++) {
    const x = i % 2 === 0 ? -(next() / 2 ** 32) * 30 : (next() / 2 ** 32) * 1450 - 740;
    if (takesSlowPath(exp, expSlowPathCount, x)) found.push(x);
  }
  return found;
}

const ARGS = argumentSet();

/** The index and both bit patterns of the first difference between out[outOff …] and exp(x[xOff …]) over n, or null. */
function firstDifference(out: Float64Array, outOff: number, expected: Float64Array): string | null {
  const a = new BigUint64Array(out.buffer, out.byteOffset + 8 * outOff, expected.length);
  const e = new BigUint64Array(expected.buffer, expected.byteOffset, expected.length);
  for (let i = 0; i < e.length; i++) if (a[i] !== e[i]) return `index ${i}: ${a[i]!.toString(16)} ≠ ${e[i]!.toString(16)}`;
  return null;
}

function reference(x: Float64Array, xOff: number, n: number): Float64Array {
  const r = new Float64Array(n);
  for (let i = 0; i < n; i++) r[i] = exp(x[xOff + i]!);
  return r;
}

/** The native kernel finished like expInto does; also checks the undecided contract. */
function nativeExp(a: NativeAddon, out: Float64Array, outOff: number, x: Float64Array, xOff: number, n: number): number {
  const xs = x.slice(xOff, xOff + n);
  const und = new Int32Array(n + 3);
  const count = a.exp(out, outOff, x, xOff, n, und, expConstants());
  expect(count).toBeGreaterThanOrEqual(0);
  expect(count).toBeLessThanOrEqual(n);
  for (let k = 0; k < count; k++) {
    const i = und[k]!;
    if (k > 0) expect(i).toBeGreaterThan(und[k - 1]!);
    // An undecided element keeps its argument (so in-place calls can finish it).
    expect(Object.is(out[outOff + i], xs[i])).toBe(true);
    out[outOff + i] = exp(xs[i]!);
  }
  return count;
}

describe.skipIf(addon === null)(`native exp (addon)${SKIPPED}`, () => {
  const a = addon as NativeAddon;
  describe.each(PATHS)('%s path', (path) => {
    it('equals exp() bit for bit over the whole range, the range ends, E boundaries, subnormal results, specials and slow-path arguments', () => {
      a.setPath(path);
      const expected = reference(ARGS, 0, ARGS.length);
      const out = new Float64Array(ARGS.length);
      const count = nativeExp(a, out, 0, ARGS, 0, ARGS.length);
      expect(firstDifference(out, 0, expected)).toBeNull();
      // The fast path decides most lanes; the rest (out of range, specials, slow path, tiny) come back.
      expect(count).toBeGreaterThan(24);
      expect(count).toBeLessThan(ARGS.length / 2);
    });

    it('equals exp() for every length 0 … 33 (every remainder mod 8), at offsets, separate and in place', () => {
      a.setPath(path);
      for (let n = 0; n <= 33; n++)
        for (const [xOff, outOff] of [[0, 0], [3, 5], [7, 1]] as const) {
          const start = (n * 37) % (ARGS.length - 40);
          const x = new Float64Array(xOff + n + 2);
          x.set(ARGS.subarray(start, start + n), xOff);
          const expected = reference(x, xOff, n);
          const out = new Float64Array(outOff + n + 2).fill(-7);
          nativeExp(a, out, outOff, x, xOff, n);
          expect(firstDifference(out, outOff, expected), `n ${n} offsets ${xOff} ${outOff}`).toBeNull();
          // Nothing outside the view is written.
          for (let i = 0; i < outOff; i++) expect(out[i]).toBe(-7);
          for (let i = outOff + n; i < out.length; i++) expect(out[i]).toBe(-7);
          // In place.
          const y = x.slice();
          nativeExp(a, y, xOff, y, xOff, n);
          expect(firstDifference(y, xOff, expected), `in place n ${n}`).toBeNull();
        }
    });
  });

  it('batchExp runs the native kernel (undecided lanes finished by exp()) with the bits of exp()', () => {
    const kernel = nativeExpKernel(a);
    const expected = reference(ARGS, 0, ARGS.length);
    const out = new Float64Array(ARGS.length + 4);
    batchExp(kernel, out, 4, ARGS, 0, ARGS.length);
    expect(firstDifference(out, 4, expected)).toBeNull();
    const y = ARGS.slice();
    batchExp(kernel, y, 0, y, 0, y.length);
    expect(firstDifference(y, 0, expected)).toBeNull();
  });

  it('throws RangeError for out-of-bounds views, short undecided buffers, partial overlaps and bad constants; TypeError for wrong array types', () => {
    const C = expConstants();
    const x = new Float64Array(16), out = new Float64Array(16), und = new Int32Array(16);
    expect(a.exp(out, 0, x, 0, 16, und, C)).toBe(0);
    expect(() => a.exp(out, 1, x, 0, 16, und, C)).toThrow(RangeError);
    expect(() => a.exp(out, 0, x, 1, 16, und, C)).toThrow(RangeError);
    expect(() => a.exp(out, 0, x, 0, 17, und, C)).toThrow(RangeError);
    expect(() => a.exp(out, 0, x, 0, 16, new Int32Array(15), C)).toThrow(RangeError);
    expect(() => a.exp(out, 0, x, 0, -1, und, C)).toThrow(RangeError);
    expect(() => a.exp(out, 0.5, x, 0, 4, und, C)).toThrow(RangeError);
    expect(() => a.exp(out, 0, x, 0, 4, und, C.subarray(1))).toThrow(RangeError);
    expect(() => a.exp(x, 1, x, 0, 8, und, C)).toThrow(RangeError);
    expect(() => a.exp(x, 0, x, 0, 8, new Int32Array(x.buffer), C)).toThrow(RangeError);
    expect(() => a.exp(new Float32Array(16) as unknown as Float64Array, 0, x, 0, 4, und, C)).toThrow(TypeError);
    expect(() => a.exp(out, 0, [1, 2] as unknown as Float64Array, 0, 2, und, C)).toThrow(TypeError);
    expect(() => a.exp(out, 0, x, 0, 4, new Float64Array(16) as unknown as Int32Array, C)).toThrow(TypeError);
    expect(() => a.exp(out, 0, x, 0, 4, und, new Float32Array(516) as unknown as Float64Array)).toThrow(TypeError);
  });
});

describe.each([
  ['the WebAssembly kernel', wasmExpAvailable() ? wasmExpInto : null],
  ['no kernel (a loop over exp())', null],
] as const)('batchExp with %s', (_name, kernel) => {
  it('equals exp() bit for bit, at offsets, separate and in place, for every length 0 … 70', () => {
    const expected = reference(ARGS, 0, ARGS.length);
    const out = new Float64Array(ARGS.length + 2);
    batchExp(kernel, out, 2, ARGS, 0, ARGS.length);
    expect(firstDifference(out, 2, expected)).toBeNull();
    for (let n = 0; n <= 70; n++) {
      const y = ARGS.slice(100, 100 + n + 3);
      batchExp(kernel, y, 3, y, 3, n);
      expect(firstDifference(y, 3, reference(ARGS, 103, n))).toBeNull();
    }
  });
});

describe('batchLn', () => {
  it('equals ln() bit for bit (positive, subnormal, ±0, negative, NaN, ±Infinity), at offsets, separate and in place, for every length 0 … 40', () => {
    const rng = new SplitMix64(11n);
    const xs = new Float64Array(4000);
    for (let i = 0; i < xs.length; i++) {
      const pick = i % 5;
      xs[i] = pick === 0 ? 1e-5 + rng.nextUnit() : pick === 1 ? 2 ** (2098 * rng.nextUnit() - 1074) : pick === 2 ? 1 + (rng.nextUnit() - 0.5) * 1e-9 : pick === 3 ? -rng.nextUnit() : rng.nextUnit() * 1e300;
    }
    xs.set([0, -0, NaN, Infinity, -Infinity, 5e-324, 1, 2.2250738585072014e-308], 0);
    const out = new Float64Array(xs.length + 3);
    batchLn(out, 3, xs, 0, xs.length);
    for (let i = 0; i < xs.length; i++) expect(Object.is(out[3 + i], ln(xs[i] as number)), `ln(${xs[i]})`).toBe(true);
    for (let n = 0; n <= 40; n++) {
      const y = xs.slice(0, n + 2);
      batchLn(y, 2, y, 2, n);
      for (let i = 0; i < n; i++) expect(Object.is(y[2 + i], ln(xs[2 + i] as number))).toBe(true);
    }
  });
});

/** Every kernel set's layers that batch their exp calls, against their one-call-per-element definitions (written out here). */
describe.each(KERNEL_SETS)('batched exp call sites ($name kernels)$skipped', ({ name, missing }) => {
  const config = { vocabularySize: 5, modelWidth: 12, heads: 3, feedForwardWidth: 4, layers: 1, maxPositions: 32, ropeBase: 10000, rmsEpsilon: 1e-6 };

  it.skipIf(missing)('crossEntropyForward: probabilities and losses of the per-element definition, the exactly-zero shift skipped (not an exp of 1)', () => {
    const rows = 5, V = 67;
    const next = words(99);
    const logits = Float64Array.from({ length: rows * V }, () => ((next() / 2 ** 32) - 0.5) * 30);
    // Row 0: a key whose shift is tiny but nonzero (its exp rounds to 1) before the maximum, then small terms.
    logits.fill(-3, 0, V);
    logits[0] = 0;
    logits[1] = 2 ** -60;
    logits[2] = -0.5;
    logits[3] = -38;
    const targets = [0, 5, 66, 3, 1];
    const rowLoss = new Float64Array(rows), prob = new Float64Array(rows * V);
    openKernels(config, name).crossEntropyForward(rowLoss, matrix(prob, rows, V), matrix(logits, rows, V), Int32Array.from(targets));
    const { rowLoss: eRowLoss, prob: eProb } = referenceCrossEntropy(logits, targets, 0, rows, V);
    expect(firstDifference(prob, 0, eProb)).toBeNull();
    expect(firstDifference(rowLoss, 0, eRowLoss)).toBeNull();
  });

  it.skipIf(missing)('swigluForward: the branch-wise sigmoid of the per-element definition (NaN, ±0 and large gates included)', () => {
    const n = 203;
    const next = words(5);
    const gate = Float64Array.from({ length: n }, () => ((next() / 2 ** 32) - 0.5) * 60);
    gate.set([NaN, 0, -0, 800, -800, Infinity, -Infinity, 1e-300, -1e-300], 0);
    const up = Float64Array.from({ length: n }, () => (next() / 2 ** 32) - 0.5);
    const prod = new Float64Array(n), silu = new Float64Array(n), sigma = new Float64Array(n);
    const m = (x: Float64Array): ReturnType<typeof matrix> => matrix(x, 1, n);
    openKernels(config, name).swigluForward({ prod: m(prod), silu: m(silu), sigma: m(sigma), gate: m(gate), up: m(up) });
    const eProd = new Float64Array(n), eSilu = new Float64Array(n), eSigma = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const x = gate[i]!;
      let s: number;
      if (x >= 0) s = 1.0 / (1.0 + exp(-x));
      else {
        const e = exp(x);
        s = e / (1.0 + e);
      }
      eSigma[i] = s;
      eSilu[i] = x * s;
      eProd[i] = x * s * up[i]!;
    }
    expect(firstDifference(sigma, 0, eSigma)).toBeNull();
    expect(firstDifference(silu, 0, eSilu)).toBeNull();
    expect(firstDifference(prod, 0, eProd)).toBeNull();
  });

  it.skipIf(missing)('attentionForward: the reference\'s probabilities, also with a scratch sized for a longer sequence', () => {
    const T = 23, D = 12, H = 3;
    const next = words(11);
    const r = (): Float64Array => Float64Array.from({ length: T * D }, () => ((next() / 2 ** 32) - 0.5) * 8);
    const q = matrix(r(), T, D), k = matrix(r(), T, D), v = matrix(r(), T, D);
    const run = (set: 'scalar' | typeof name, cap: number): Float64Array => {
      const kernels = openKernels(config, set);
      kernels.workspace.ensureCapacity(cap);
      const prob = new Float64Array(H * T * T);
      kernels.attentionForward(matrix(new Float64Array(T * D), T, D), { q, k, v, prob: matrix(prob, H * T, T), trace: null }, H, 0.5);
      return prob;
    };
    const base = run('scalar', T);
    expect(firstDifference(run(name, T), 0, base)).toBeNull();
    expect(firstDifference(run(name, T + 9), 0, base)).toBeNull();
    // Row 0 is a single key: probability exactly 1.
    expect(base[0]).toBe(1);
  });
});
