/**
 * Bit identity of the element-wise kernels of the training step (swiglu.ts, cross-entropy.ts, rmsnorm.ts,
 * rope.ts, and attention.ts's softmax) with their straightforward one-element-at-a-time definitions (written out
 * here, exp() per element; attention against its batched TypeScript loops), on every kernel path: the native
 * addon (each vector path), the WebAssembly kernels and the plain JavaScript fallback (no WebAssembly). Sizes are generated: 0, 1, odd, and beyond the native block (512) and the WebAssembly chunk
 * (4096); values include ±0, subnormals, huge, NaN and ±Infinity.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { exp } from '../math/exp.ts';
import { ln } from '../math/index.ts';
import { loadNativeKernels, setKernels, type NativePath } from './native.ts';
import * as attention from './attention.ts';
import * as crossEntropy from './cross-entropy.ts';
import * as rmsnorm from './rmsnorm.ts';
import * as rope from './rope.ts';
import * as swiglu from './swiglu.ts';
import { wasmCrossEntropyRows } from './wasm-cross-entropy.ts';
import { referenceCrossEntropy } from '../../test/helpers/reference-kernels.ts';
import { wasmSwigluBackward, wasmSwigluForward } from './wasm-swiglu.ts';

type Kernels = { swiglu: typeof swiglu; crossEntropy: typeof crossEntropy; rmsnorm: typeof rmsnorm; attention: typeof attention; rope: typeof rope };

const addon = loadNativeKernels().addon;
const NATIVE_PATHS: NativePath[] = addon === null ? [] : (['scalar', 'avx2', 'avx512'] as const).filter((p) => p === 'scalar' || p === 'avx2' || addon.bestPath() === 'avx512');

/** A deterministic generator of doubles in [0, 1). */
function uniform(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const SPECIALS = [0, -0, NaN, Infinity, -Infinity, 5e-324, -5e-324, 2.2e-308, -1e-310, 1e300, -1e300, 800, -800, 709.8, -745.3, 1e-300, 40, -40];

/** n values: mostly ordinary (scale `s`), a few specials when `specials`. */
function values(next: () => number, n: number, s: number, specials: boolean): Float64Array {
  const a = Float64Array.from({ length: n }, () => (next() - 0.5) * s);
  if (specials) for (let i = 0; i < n; i++) if (next() < 0.08) a[i] = SPECIALS[Math.floor(next() * SPECIALS.length)]!;
  return a;
}

/**
 * The first element whose bits differ; any NaN equals any NaN (the sign and payload of a NaN are not part of the
 * kernels' contract: JavaScript engines themselves differ there between interpreted and compiled code).
 */
function firstDifference(name: string, got: Float64Array, want: Float64Array, n: number): string | null {
  const a = new BigUint64Array(got.buffer, got.byteOffset, n);
  const e = new BigUint64Array(want.buffer, want.byteOffset, n);
  for (let i = 0; i < n; i++) {
    if (a[i] === e[i] || (Number.isNaN(got[i]) && Number.isNaN(want[i]))) continue;
    return `${name}[${i}]: ${a[i]!.toString(16)} ≠ ${e[i]!.toString(16)}`;
  }
  return null;
}

const SIZES = [0, 1, 2, 3, 7, 63, 64, 65, 511, 512, 513, 1000, 1537, 4097, 9001];

function swigluReference(gate: Float64Array, up: Float64Array, n: number): { prod: Float64Array; silu: Float64Array; sigma: Float64Array } {
  const prod = new Float64Array(n), silu = new Float64Array(n), sigma = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const x = gate[i]!;
    const e = exp(x >= 0 ? -x : x);
    const s = (x >= 0 ? 1.0 : e) / (1.0 + e);
    sigma[i] = s;
    silu[i] = x * s;
    prod[i] = x * s * up[i]!;
  }
  return { prod, silu, sigma };
}

function checkSwiglu(k: Kernels, seed: number): void {
  const next = uniform(seed);
  for (const n of SIZES) {
    for (const specials of [false, true]) {
      // Buffers longer than n (the workspace's capacity), their tails must stay untouched.
      const cap = n + 3;
      const gate = values(next, cap, 16, specials), up = values(next, cap, 4, specials);
      const prod = new Float64Array(cap).fill(7), silu = new Float64Array(cap).fill(7), sigma = new Float64Array(cap).fill(7);
      k.swiglu.swigluForward(prod, silu, sigma, gate, up, n);
      const r = swigluReference(gate, up, n);
      const tag = `forward n=${n}${specials ? ' specials' : ''}`;
      expect(firstDifference(`${tag} prod`, prod, r.prod, n)).toBeNull();
      expect(firstDifference(`${tag} silu`, silu, r.silu, n)).toBeNull();
      expect(firstDifference(`${tag} sigma`, sigma, r.sigma, n)).toBeNull();
      expect([prod[n], silu[n], sigma[n]]).toEqual([7, 7, 7]);

      const dprod = values(next, cap, 2, specials);
      const dgate = new Float64Array(cap).fill(7), dup = new Float64Array(cap).fill(7), dsilu = new Float64Array(cap).fill(7);
      k.swiglu.swigluBackward(dgate, dup, dsilu, dprod, gate, sigma, silu, up, n);
      const eg = new Float64Array(n), eu = new Float64Array(n), es = new Float64Array(n);
      for (let i = 0; i < n; i++) {
        const u = dprod[i]!;
        const ds = 0 + u * up[i]!;
        es[i] = ds;
        eu[i] = 0 + u * silu[i]!;
        const s = sigma[i]!;
        eg[i] = 0 + ds * (s * (1.0 + gate[i]! * (1.0 - s)));
      }
      const btag = `backward n=${n}${specials ? ' specials' : ''}`;
      expect(firstDifference(`${btag} dgate`, dgate, eg, n)).toBeNull();
      expect(firstDifference(`${btag} dup`, dup, eu, n)).toBeNull();
      expect(firstDifference(`${btag} dsilu`, dsilu, es, n)).toBeNull();
      expect([dgate[n], dup[n], dsilu[n]]).toEqual([7, 7, 7]);
    }
  }
}

function checkCrossEntropy(k: Kernels, seed: number): void {
  const next = uniform(seed);
  const shapes: [number, number][] = [[0, 5], [1, 1], [3, 1], [1, 2], [2, 63], [5, 67], [3, 512], [4, 513], [2, 1500], [9, 31], [2, 4100]];
  for (const [rows, V] of shapes) {
    for (const kind of ['plain', 'specials', 'ties'] as const) {
      const logits = values(next, rows * V, 30, kind === 'specials');
      if (kind === 'ties' && V > 1) {
        // Rows whose maximum repeats (one skipped, the others summed), with ±0 maxima, a tiny nonzero shift
        // before the maximum, a far-below logit (exp underflows: the slow path of exp), and an all-−∞ row.
        for (let r = 0; r < rows; r++) {
          const o = r * V;
          logits.fill(r % 2 === 0 ? -3 : -0.5, o, o + V);
          logits[o] = r % 3 === 0 ? -0 : 0;
          logits[o + (V - 1)] = r % 3 === 0 ? 0 : -0;
          if (V > 2) logits[o + 1] = -(2 ** -60);
          if (V > 3 && r % 2 === 1) logits[o + 2] = -800;
          if (r === rows - 1 && rows > 2) logits.fill(-Infinity, o, o + V);
        }
      }
      const targets = [9, ...Array.from({ length: rows }, () => Math.floor(next() * V))];
      const rowLoss = new Float64Array(rows + 1).fill(7), prob = new Float64Array(rows * V + 2).fill(7);
      k.crossEntropy.crossEntropyForward(rowLoss, prob, logits, targets, 1, rows, V);
      const { rowLoss: eLoss, prob: eProb } = referenceCrossEntropy(logits, targets, 1, rows, V);
      const tag = `${rows}×${V} ${kind}`;
      expect(firstDifference(`${tag} prob`, prob, eProb, rows * V)).toBeNull();
      expect(firstDifference(`${tag} rowLoss`, rowLoss, eLoss, rows)).toBeNull();
      expect([rowLoss[rows], prob[rows * V]]).toEqual([7, 7]);
    }
  }
}

function checkRmsNorm(k: Kernels, seed: number): void {
  const next = uniform(seed);
  const shapes: [number, number][] = [[0, 4], [1, 1], [1, 64], [3, 7], [64, 64], [5, 129], [17, 128], [2, 600]];
  for (const [rows, D] of shapes) {
    for (const specials of [false, true]) {
      const RD = rows * D;
      const x = values(next, RD + 1, 6, specials), gain = values(next, D + 1, 3, specials);
      if (specials && rows > 1) x.fill(0, 0, D); // a zero row: ms = 0, st = eps
      const f = (n: number): Float64Array => new Float64Array(n + 1).fill(7);
      const norm = { out: f(RD), normalized: f(RD), inv: f(rows), st: f(rows), ms: f(rows), dnormalized: f(RD), rowAdjoints: f(5 * rows) };
      k.rmsnorm.rmsNormForward(norm, x, gain, rows, D, 1e-6);
      const eOut = new Float64Array(RD), eNorm = new Float64Array(RD), eInv = new Float64Array(rows), eSt = new Float64Array(rows), eMs = new Float64Array(rows);
      for (let r = 0; r < rows; r++) {
        let s = 0;
        for (let c = 0; c < D; c++) s += x[r * D + c]! * x[r * D + c]!;
        eMs[r] = s / D;
        eSt[r] = s / D + 1e-6;
        const iv = exp(ln(eSt[r]!) * -0.5);
        eInv[r] = iv;
        for (let c = 0; c < D; c++) {
          eNorm[r * D + c] = x[r * D + c]! * iv;
          eOut[r * D + c] = x[r * D + c]! * iv * gain[c]!;
        }
      }
      const tag = `rmsnorm ${rows}×${D}${specials ? ' specials' : ''}`;
      expect(firstDifference(`${tag} out`, norm.out, eOut, RD)).toBeNull();
      expect(firstDifference(`${tag} normalized`, norm.normalized, eNorm, RD)).toBeNull();
      expect(firstDifference(`${tag} inv`, norm.inv, eInv, rows)).toBeNull();
      expect(firstDifference(`${tag} st`, norm.st, eSt, rows)).toBeNull();
      expect(firstDifference(`${tag} ms`, norm.ms, eMs, rows)).toBeNull();
      expect([norm.out[RD], norm.normalized[RD], norm.inv[rows], norm.ms[rows]]).toEqual([7, 7, 7, 7]);

      const u = values(next, RD, 2, specials), dx0 = values(next, RD + 1, 2, specials);
      const dx = dx0.slice(), gainTerms = f(RD);
      k.rmsnorm.rmsNormBackward(dx, gainTerms, norm, u, x, gain, rows, D);
      const eDx = dx0.slice(), eGt = new Float64Array(RD), eDn = new Float64Array(RD), eRa = new Float64Array(5 * rows);
      for (let r = 0; r < rows; r++) {
        const o = r * D, iv = eInv[r]!;
        let di = 0;
        for (let c = 0; c < D; c++) {
          eGt[o + c] = u[o + c]! * eNorm[o + c]!;
          eDn[o + c] = 0 + u[o + c]! * gain[c]!;
          di += eDn[o + c]! * x[o + c]!;
        }
        const dsl = 0 + di * iv, dlg = 0 + dsl * -0.5, dst = 0 + dlg / eSt[r]!, d2 = 0 + dst / D;
        eRa.set([di, dsl, dlg, dst, d2], 5 * r);
        for (let c = 0; c < D; c++) {
          const sq = d2 * x[o + c]!;
          eDx[o + c] = eDx[o + c]! + eDn[o + c]! * iv + sq + sq;
        }
      }
      expect(firstDifference(`${tag} dx`, dx, eDx, RD + 1)).toBeNull();
      expect(firstDifference(`${tag} gainTerms`, gainTerms, eGt, RD)).toBeNull();
      expect(firstDifference(`${tag} dnormalized`, norm.dnormalized, eDn, RD)).toBeNull();
      expect(firstDifference(`${tag} rowAdjoints`, norm.rowAdjoints, eRa, 5 * rows)).toBeNull();
      expect([gainTerms[RD], norm.dnormalized[RD], norm.rowAdjoints[5 * rows]]).toEqual([7, 7, 7]);
    }
  }
}

function checkCrossEntropyBackward(k: Kernels, seed: number): void {
  const next = uniform(seed);
  for (const [rows, V] of [[0, 3], [1, 1], [3, 7], [64, 512], [5, 1001]] as [number, number][]) {
    for (const specials of [false, true]) {
      const prob = values(next, rows * V, 1, specials);
      const t = Array.from({ length: rows + 2 }, () => Math.floor(next() * V));
      if (specials && rows > 1) t[3] = V + 5; // outside the row: no element gets the −1
      for (const targets of [Int32Array.from(t), t]) {
        const dl = new Float64Array(rows * V + 1).fill(7);
        k.crossEntropy.crossEntropyBackward(dl, prob, targets, 2, rows, V, 1 / 4096);
        const e = new Float64Array(rows * V);
        for (let r = 0; r < rows; r++)
          for (let c = 0; c < V; c++) e[r * V + c] = (c === t[2 + r] ? prob[r * V + c]! - 1.0 : prob[r * V + c]!) * (1 / 4096) + 0;
        expect(firstDifference(`ce backward ${rows}×${V}`, dl, e, rows * V)).toBeNull();
        expect(dl[rows * V]).toBe(7);
      }
    }
  }
}

/** attentionForward / attentionBackward of `k` against those of `ref` (the batched TypeScript loops), bit for bit. */
function checkAttention(k: Kernels, ref: () => void, mine: () => void, seed: number): void {
  const next = uniform(seed);
  for (const [T, D, H] of [[1, 4, 1], [2, 4, 2], [7, 12, 3], [33, 16, 2], [64, 64, 4]] as [number, number, number][]) {
    for (const spread of [1, 40]) {
      // spread 40: scores of thousands, shifts below −745 (exp undecided: those rows take exp() itself)
      const r = (): Float64Array => values(next, T * D, 4 * spread, false);
      const q = r(), kk = r(), v = r(), dm = r();
      const run = (set: () => void, cap: number): Float64Array[] => {
        set();
        const merged = new Float64Array(T * D), prob = new Float64Array(H * T * T).fill(7);
        const scratch = k.attention.attentionScratch(cap, D / H);
        k.attention.attentionForward(merged, prob, q, kk, v, T, D, H, 0.25, scratch, null);
        const dq = new Float64Array(T * D), dk = new Float64Array(T * D), dv = new Float64Array(T * D);
        k.attention.attentionBackward(dq, dk, dv, dm, prob, q, kk, v, T, D, H, 0.25, scratch, null);
        return [merged, prob, dq, dk, dv];
      };
      const want = run(ref, T);
      for (const cap of [T, T + 5]) {
        const got = run(mine, cap);
        for (let t = 0; t < want.length; t++) expect(firstDifference(`attention T=${T} D=${D} H=${H} spread=${spread} cap=${cap} output ${t}`, got[t]!, want[t]!, want[t]!.length)).toBeNull();
      }
    }
  }
}

function checkRope(k: Kernels, seed: number): void {
  const next = uniform(seed);
  for (const [T, D, d] of [[0, 4, 2], [1, 2, 2], [3, 6, 2], [64, 64, 16], [17, 96, 32], [40, 12, 12]] as [number, number, number][]) {
    for (const specials of [false, true]) {
      const tables = k.rope.ropeTables(T + 2, d, 10000);
      const src = values(next, T * D, 8, specials);
      const half = d / 2;
      for (const back of [false, true]) {
        const dst = new Float64Array(T * D + 1).fill(7);
        (back ? k.rope.ropeBackward : k.rope.ropeForward)(dst, src, tables, T, D, d);
        const e = new Float64Array(T * D);
        for (let t = 0; t < T; t++)
          for (let h0 = 0; h0 < D; h0 += d)
            for (let i = 0; i < half; i++) {
              const c = tables.cosines[t * half + i]!, s = tables.sines[t * half + i]!, o = t * D + h0 + 2 * i;
              const l = src[o]!, r = src[o + 1]!;
              e[o] = back ? l * c + r * s + 0 : l * c - r * s + 0;
              e[o + 1] = back ? -l * s + r * c + 0 : l * s + r * c + 0;
            }
        expect(firstDifference(`rope ${back ? 'backward' : 'forward'} T=${T} D=${D} d=${d}`, dst, e, T * D)).toBeNull();
        expect(dst[T * D]).toBe(7);
      }
    }
  }
}

const here: Kernels = { swiglu, crossEntropy, rmsnorm, attention, rope };

afterEach(() => {
  setKernels('auto');
  addon?.setPath('best');
});

describe.each(NATIVE_PATHS)('element-wise kernels, native addon on the %s path', (path) => {
  it('swigluForward / swigluBackward equal the per-element definition bit for bit', () => {
    setKernels('native');
    addon!.setPath(path);
    checkSwiglu(here, 1);
  });
  it('crossEntropyForward equals the per-element definition bit for bit', () => {
    setKernels('native');
    addon!.setPath(path);
    checkCrossEntropy(here, 2);
  });
  it('rmsNormForward / rmsNormBackward equal the per-element definition bit for bit', () => {
    setKernels('native');
    addon!.setPath(path);
    checkRmsNorm(here, 8);
  });
  it('crossEntropyBackward equals the per-element definition bit for bit', () => {
    setKernels('native');
    addon!.setPath(path);
    checkCrossEntropyBackward(here, 14);
  });
  it('ropeForward / ropeBackward equal the per-element definition bit for bit', () => {
    setKernels('native');
    addon!.setPath(path);
    checkRope(here, 20);
  });
  it('attentionForward / attentionBackward equal the WebAssembly kernels bit for bit (undecided rows included)', () => {
    checkAttention(here, () => setKernels('wasm'), () => {
      setKernels('native');
      addon!.setPath(path);
    }, 15);
  });
  it('falls back to the TypeScript loops when the arrays overlap (same results)', () => {
    setKernels('native');
    addon!.setPath(path);
    const n = 700;
    const next = uniform(3);
    const buf = new Float64Array(5 * n);
    buf.set(values(next, 2 * n, 16, true), 3 * n);
    // prod and silu share elements (an aliasing the kernels do not support natively): the native call declines.
    const prod = buf.subarray(0, n), silu = buf.subarray(n / 2, n / 2 + n), sigma = buf.subarray(2 * n, 3 * n);
    const gate = buf.subarray(3 * n, 4 * n), up = buf.subarray(4 * n, 5 * n);
    expect(addon!.swigluForward!(prod, silu, sigma, gate, up, n, new Int32Array(n), new Float64Array(516))).toBe(-1);
    swiglu.swigluForward(prod, silu, sigma, gate, up, n);
    const r = swigluReference(gate, up, n);
    expect(firstDifference('sigma', sigma, r.sigma, n)).toBeNull();
    expect(firstDifference('prod', prod, r.prod, n)).toBeNull(); // written after silu, element by element
  });
});

describe.runIf(addon !== null)('element-wise kernels, native addon', () => {
  it('runs the element-wise kernels in C under setKernels("native")', () => {
    setKernels('native');
    const a = addon!;
    const spies = (['swigluForward', 'swigluBackward', 'crossEntropyShifts', 'crossEntropyRows', 'rmsNormSums', 'rmsNormScale', 'rmsNormBackward', 'crossEntropyBackward', 'attentionSoftmax', 'attentionSoftmaxRows', 'attentionSoftmaxBackward', 'rope'] as const).map((f) => vi.spyOn(a, f));
    try {
      checkSwiglu(here, 11);
      checkCrossEntropy(here, 12);
      checkRmsNorm(here, 13);
      checkCrossEntropyBackward(here, 18);
      checkRope(here, 22);
      checkAttention(here, () => setKernels('native'), () => setKernels('native'), 19);
      for (const spy of spies) expect(spy).toHaveBeenCalled();
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });
});

describe('element-wise kernels, WebAssembly', () => {
  it('the SwiGLU and cross-entropy kernels run and report exactly the lanes and rows whose exp is undecided', () => {
    const n = 9;
    const gate = Float64Array.from([1, -2, NaN, 3, -800, 0.5, Infinity, -Infinity, 2]);
    const up = new Float64Array(n).fill(1);
    const out = (): Float64Array => new Float64Array(n);
    const und = new Int32Array(n);
    expect(wasmSwigluForward(out(), out(), out(), gate, up, n, und)).toBe(4);
    expect([...und.subarray(0, 4)]).toEqual([2, 4, 6, 7]);
    expect(wasmSwigluBackward(out(), out(), out(), up, gate, up, up, up, n)).toBe(n);
    const logits = Float64Array.from([0, 1, 2, 0, -900, 3, 1, 1, 1]);
    const stats = new Float64Array(6);
    const prob = new Float64Array(9);
    expect(wasmCrossEntropyRows(prob, logits, stats, 3, 3, und)).toBe(1);
    expect(und[0]).toBe(1);
    expect([stats[0], stats[4]]).toEqual([2, 1]);
    expect(wasmCrossEntropyRows(prob, new Float64Array(4000), stats, 1, 4000, und)).toBe(-1); // longer than a call holds
  });
  it('swigluForward / swigluBackward equal the per-element definition bit for bit', () => {
    setKernels('wasm');
    checkSwiglu(here, 4);
  });
  it('crossEntropyForward equals the per-element definition bit for bit', () => {
    setKernels('wasm');
    checkCrossEntropy(here, 5);
  });
  it('rmsNormForward / rmsNormBackward equal the per-element definition bit for bit', () => {
    setKernels('wasm');
    checkRmsNorm(here, 9);
  });
  it('crossEntropyBackward equals the per-element definition bit for bit', () => {
    setKernels('wasm');
    checkCrossEntropyBackward(here, 16);
  });
  it('ropeForward / ropeBackward equal the per-element definition bit for bit', () => {
    setKernels('wasm');
    checkRope(here, 21);
  });
});

describe('element-wise kernels, plain JavaScript (no WebAssembly)', () => {
  let js: Kernels;
  let jsNative: typeof import('./native.ts');
  beforeAll(async () => {
    vi.stubGlobal('WebAssembly', undefined);
    vi.resetModules();
    js = { swiglu: await import('./swiglu.ts'), crossEntropy: await import('./cross-entropy.ts'), rmsnorm: await import('./rmsnorm.ts'), attention: await import('./attention.ts'), rope: await import('./rope.ts') };
    jsNative = await import('./native.ts');
    jsNative.setKernels('wasm');
  });
  afterAll(() => {
    vi.unstubAllGlobals();
  });
  it('swigluForward / swigluBackward equal the per-element definition bit for bit', async () => {
    expect((await import('./wasm-exp.ts')).wasmExpAvailable()).toBe(false);
    checkSwiglu(js, 6);
  });
  it('crossEntropyForward equals the per-element definition bit for bit', () => {
    checkCrossEntropy(js, 7);
  });
  it('rmsNormForward / rmsNormBackward equal the per-element definition bit for bit', () => {
    checkRmsNorm(js, 10);
  });
  it('crossEntropyBackward equals the per-element definition bit for bit', () => {
    checkCrossEntropyBackward(js, 17);
  });
});
