/**
 * Bit identity of every kernel set's element-wise layers (SwiGLU, the
 * cross-entropy, RMSNorm, RoPE, attention) with the reference layers
 * (../reference/layers.ts), on every path a set takes: the native addon on
 * each vector path, the WebAssembly kernels in place on an arena's views and
 * on ordinary arrays (their copies and fallbacks). Sizes are generated: 0, 1,
 * odd, and beyond the native block (512) and the WebAssembly chunk (4096);
 * values include ±0, subnormals, huge, NaN and ±Infinity.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { REFERENCE_LAYERS, ropeTables, type AttentionActivations, type KernelSet, type NormActivations, type SwigluActivations, type SwigluAdjoints } from '../reference/layers.ts';
import { matrix, type Matrix } from '../reference/matrix.ts';
import { openKernelArena } from './kernel-arena.ts';
import { openKernels } from './kernel-choice.ts';
import type { Kernels, KernelSetName } from './kernel-set.ts';
import { loadNativeKernels, type NativePath } from './native.ts';
import { wasmCrossEntropyRows } from './wasm-cross-entropy.ts';
import { wasmSwigluBackward, wasmSwigluForward } from './wasm-swiglu.ts';
import { KERNEL_SETS } from '../../test/helpers/kernel-sets.ts';

const addon = loadNativeKernels().addon;
const NATIVE_PATHS: NativePath[] = addon === null ? [] : (['scalar', 'avx2', 'avx512'] as const).filter((p) => p === 'scalar' || p === 'avx2' || addon.bestPath() === 'avx512');
const CONFIG = { vocabularySize: 5, modelWidth: 4, heads: 2, feedForwardWidth: 4, layers: 1, maxPositions: 80, ropeBase: 10000, rmsEpsilon: 1e-6 };

afterEach(() => {
  addon?.setPath('best');
});

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
function firstDifference(name: string, got: Float64Array, want: Float64Array): string | null {
  if (got.length !== want.length) return `${name}: length ${got.length} ≠ ${want.length}`;
  const a = new BigUint64Array(got.buffer, got.byteOffset, got.length);
  const e = new BigUint64Array(want.buffer, want.byteOffset, want.length);
  for (let i = 0; i < got.length; i++) {
    if (a[i] === e[i] || (Number.isNaN(got[i]) && Number.isNaN(want[i]))) continue;
    return `${name}[${i}]: ${a[i]!.toString(16)} ≠ ${e[i]!.toString(16)}`;
  }
  return null;
}

/** Where a check's arrays come from: ordinary arrays, or views of one kernel arena (the WebAssembly kernels' in-place path), reused from its start by each comparison. */
type Alloc = ((n: number) => Float64Array) & { reset?: () => void };
const ordinary: Alloc = (n) => new Float64Array(n);
function arena(): Alloc {
  const whole = openKernelArena(1 << 21)!.take(1 << 21);
  let used = 0;
  const alloc: Alloc = (n) => {
    const view = new Float64Array(whole.buffer, whole.byteOffset + used * 8, n).fill(0);
    used += n;
    return view;
  };
  alloc.reset = () => {
    used = 0;
  };
  return alloc;
}

/** A copy of `v` from `alloc`. */
function copyOf(alloc: Alloc, v: Float64Array): Float64Array {
  const y = alloc(v.length);
  y.set(v);
  return y;
}

/**
 * Runs `op` on the set's layers and on the reference's, each on its own copy of the arrays `make` fills; compares
 * every array, tails included, but the elements `padding` names (a row's padding, which a set may run over).
 */
function compare(name: string, k: KernelSet, alloc: Alloc, make: (alloc: Alloc) => Float64Array[], op: (k: KernelSet, arrays: Float64Array[]) => void, padding: (i: number) => boolean = () => false): void {
  alloc.reset?.();
  const mine = make(alloc);
  const theirs = mine.map((a) => a.slice());
  op(k, mine);
  op(REFERENCE_LAYERS, theirs);
  mine.forEach((a, i) => {
    const [x, y] = [a.slice(), theirs[i]!];
    for (let e = 0; e < x.length; e++) if (padding(e)) x[e] = y[e] as number;
    expect(firstDifference(`${name} array ${i}`, x, y)).toBeNull();
  });
}

const SIZES = [0, 1, 2, 3, 7, 63, 64, 65, 511, 512, 513, 1000, 1537, 4097, 9001];

function checkSwiglu(k: KernelSet, alloc: Alloc, seed: number): void {
  const next = uniform(seed);
  for (const n of SIZES) {
    for (const specials of [false, true]) {
      // One row of n (a workspace's capacity leaves a tail: it must stay untouched), and rows with padded strides.
      for (const [rows, width, stride] of [[1, n, n + 3], [3, Math.ceil(n / 3), Math.ceil(n / 3) + 2]] as const) {
        const cap = rows * stride + 3;
        const view = (x: Float64Array): Matrix => matrix(x, rows, width, stride);
        const [gate, up, dprod] = [values(next, cap, 16, specials), values(next, cap, 4, specials), values(next, cap, 2, specials)];
        const make = (a: Alloc): Float64Array[] => {
          const outputs = (): Float64Array[] => Array.from({ length: 3 }, () => a(cap).fill(7));
          return [copyOf(a, gate), copyOf(a, up), ...outputs(), copyOf(a, dprod), ...outputs()];
        };
        // Padding of the inputs is +0, as in a workspace.
        const pad = (xs: Float64Array[]): Float64Array[] => {
          for (const x of [xs[0]!, xs[1]!, xs[5]!]) for (let r = 0; r < rows; r++) x.fill(0, r * stride + width, (r + 1) * stride);
          return xs;
        };
        compare(`swiglu ${rows}×${width}/${stride}${specials ? ' specials' : ''}`, k, alloc, (a) => pad(make(a)), (set, [gate, up, sigma, silu, prod, dprod, dgate, dup, dsilu]) => {
          const act: SwigluActivations = { gate: view(gate!), up: view(up!), sigma: view(sigma!), silu: view(silu!), prod: view(prod!) };
          const adj: SwigluAdjoints = { gate: view(dgate!), up: view(dup!), silu: view(dsilu!), prod: view(dprod!) };
          set.swigluForward(act);
          set.swigluBackward(adj, act);
        }, (e) => e < rows * stride && e % stride >= width);
      }
    }
  }
}

function checkCrossEntropy(k: KernelSet, alloc: Alloc, seed: number): void {
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
      const targets = Int32Array.from({ length: rows }, () => Math.floor(next() * V));
      const make = (a: Alloc): Float64Array[] => [copyOf(a, logits), a(rows * V + 2).fill(7), new Float64Array(rows + 1).fill(7), a(rows * V + 2).fill(7)];
      compare(`cross-entropy ${rows}×${V} ${kind}`, k, alloc, make, (set, [z, prob, rowLoss, dlogits]) => {
        set.crossEntropyForward(rowLoss!, matrix(prob!, rows, V), matrix(z!, rows, V), targets);
        set.crossEntropyBackward(matrix(dlogits!, rows, V), matrix(prob!, rows, V), targets, 1 / 4096);
      });
    }
  }
}

function checkRmsNorm(k: KernelSet, alloc: Alloc, seed: number): void {
  const next = uniform(seed);
  const shapes: [number, number][] = [[0, 4], [1, 1], [1, 64], [3, 7], [64, 64], [5, 129], [17, 128], [2, 600]];
  for (const [rows, D] of shapes) {
    for (const specials of [false, true]) {
      const RD = rows * D;
      const x0 = values(next, RD + 1, 6, specials);
      if (specials && rows > 1) x0.fill(0, 0, D); // a zero row: ms = 0, st = eps
      const [gain0, u0, dx0] = [values(next, D + 1, 3, specials), values(next, RD, 2, specials), values(next, RD + 1, 2, specials)];
      const make = (a: Alloc): Float64Array[] => {
        const f = (n: number): Float64Array => a(n + 1).fill(7);
        return [copyOf(a, x0), copyOf(a, gain0), copyOf(a, u0), copyOf(a, dx0), f(RD), f(RD), f(rows), f(rows), f(rows), f(RD), f(5 * rows), new Float64Array(RD + 1).fill(7)];
      };
      compare(`rmsnorm ${rows}×${D}${specials ? ' specials' : ''}`, k, alloc, make, (set, [x, gain, u, dx, out, normalized, inv, st, ms, dnormalized, rowAdjoints, gainTerms]) => {
        const m = (v: Float64Array): Matrix => matrix(v, rows, D);
        const n: NormActivations = { out: m(out!), normalized: m(normalized!), inv: inv!, st: st!, ms: ms!, dnormalized: m(dnormalized!), rowAdjoints: rowAdjoints! };
        set.rmsNormForward(n, m(x!), gain!, 1e-6);
        set.rmsNormBackward(m(dx!), m(gainTerms!), n, m(u!), m(x!), gain!);
      });
    }
  }
}

function checkRope(k: KernelSet, alloc: Alloc, seed: number): void {
  const next = uniform(seed);
  for (const [T, D, d] of [[0, 4, 2], [1, 2, 2], [3, 6, 2], [64, 64, 16], [17, 96, 32], [40, 12, 12]] as [number, number, number][]) {
    for (const specials of [false, true]) {
      const tables = ropeTables(T + 9, d, 10000);
      const src = values(next, T * D, 8, specials);
      for (const first of [0, 7]) {
        const make = (a: Alloc): Float64Array[] => [copyOf(a, src), a(T * D + 1).fill(7), a(T * D + 1).fill(7)];
        compare(`rope T=${T} D=${D} d=${d} from ${first}`, k, alloc, make, (set, [s, f, b]) => {
          set.ropeForward(matrix(f!, T, D), matrix(s!, T, D), tables, first);
          set.ropeBackward(matrix(b!, T, D), matrix(s!, T, D), tables, first);
        });
      }
    }
  }
}

/** Attention forward and backward of a training pass (a set of the shape's width and heads: its workspace holds the scratch, for T + 5 positions). */
function checkAttention(name: KernelSetName, alloc: Alloc, seed: number): void {
  const next = uniform(seed);
  for (const [T, D, H] of [[1, 4, 1], [2, 4, 2], [7, 12, 3], [33, 16, 2], [64, 64, 4]] as [number, number, number][]) {
    const k = openKernels({ ...CONFIG, modelWidth: D, heads: H, maxPositions: T + 5 }, name);
    k.workspace.ensureCapacity(T + 5);
    for (const spread of [1, 40]) {
      // spread 40: scores of thousands, shifts below −745 (exp undecided: those rows take exp() itself)
      const inputs = Array.from({ length: 4 }, () => values(next, T * D, 4 * spread, false));
      const make = (a: Alloc): Float64Array[] => [...inputs.map((v) => copyOf(a, v)), ...[T * D, H * T * T, T * D, T * D, T * D].map((n) => a(n).fill(7))];
      compare(`attention T=${T} D=${D} H=${H} spread=${spread}`, k, alloc, make, (set, [q, kk, v, dm, merged, prob, dq, dk, dv]) => {
        const m = (x: Float64Array): Matrix => matrix(x, T, D);
        const att: AttentionActivations = { q: m(q!), k: m(kk!), v: m(v!), prob: matrix(prob!, H * T, T), trace: null };
        set.attentionForward(m(merged!), att, H, 0.25);
        set.attentionBackward({ q: m(dq!), k: m(dk!), v: m(dv!) }, m(dm!), att, H, 0.25);
      });
    }
  }
}

/** Every check, on one kernel set and one kind of arrays. */
function checkAll(name: KernelSetName, alloc: Alloc, seed: number): void {
  const k = set(name);
  checkSwiglu(k, alloc, seed);
  checkCrossEntropy(k, alloc, seed + 1);
  checkRmsNorm(k, alloc, seed + 2);
  checkRope(k, alloc, seed + 3);
  checkAttention(name, alloc, seed + 4);
}

const set = (name: KernelSetName): Kernels => openKernels(CONFIG, name);
const NATIVE = KERNEL_SETS.find((k) => k.name === 'native')!;
const WASM = KERNEL_SETS.find((k) => k.name === 'wasm')!;

describe.each(NATIVE_PATHS)('the native set on the %s path', (path) => {
  it('gives the reference layers\' bits on ordinary arrays and on an arena\'s views', () => {
    addon!.setPath(path);
    checkAll('native', ordinary, 1);
    if (!WASM.missing) checkAll('native', arena(), 30);
  });
});

describe.skipIf(NATIVE.missing)(`the native set${NATIVE.skipped}`, () => {
  it('runs every element-wise layer in C', () => {
    const spies = (['swigluForward', 'swigluBackward', 'crossEntropyShifts', 'crossEntropyRows', 'rmsNormSums', 'rmsNormScale', 'rmsNormBackward', 'crossEntropyBackward', 'attentionSoftmax', 'attentionSoftmaxRows', 'attentionSoftmaxBackward', 'rope'] as const).map((f) => vi.spyOn(addon!, f));
    try {
      checkAll('native', ordinary, 11);
      for (const spy of spies) expect(spy).toHaveBeenCalled();
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });

  it('runs the reference loops when arrays overlap (the C functions decline them: same results)', () => {
    const n = 700;
    const next = uniform(3);
    const buf = new Float64Array(5 * n);
    buf.set(values(next, 2 * n, 16, true), 3 * n);
    // prod and silu share elements (an aliasing the kernels do not support natively): the native call declines.
    const prod = buf.subarray(0, n), silu = buf.subarray(n / 2, n / 2 + n), sigma = buf.subarray(2 * n, 3 * n);
    const gate = buf.subarray(3 * n, 4 * n), up = buf.subarray(4 * n, 5 * n);
    expect(addon!.swigluForward(prod, silu, sigma, gate, up, n, new Int32Array(n), new Float64Array(516))).toBe(-1);
    const view = (x: Float64Array): Matrix => matrix(x, 1, n);
    const copy = buf.slice();
    const at = (x: Float64Array): Float64Array => copy.subarray(x.byteOffset / 8, x.byteOffset / 8 + n);
    set('native').swigluForward({ gate: view(gate), up: view(up), sigma: view(sigma), silu: view(silu), prod: view(prod) });
    REFERENCE_LAYERS.swigluForward({ gate: view(at(gate)), up: view(at(up)), sigma: view(at(sigma)), silu: view(at(silu)), prod: view(at(prod)) });
    expect(firstDifference('overlapping swiglu', buf, copy)).toBeNull();
  });
});

describe.skipIf(WASM.missing)(`the wasm set${WASM.skipped}`, () => {
  it('gives the reference layers\' bits in place on an arena\'s views', () => {
    checkAll('wasm', arena(), 4);
  });

  it('gives the reference layers\' bits on ordinary arrays (copies and fallbacks)', () => {
    checkAll('wasm', ordinary, 9);
  });

  it('has SwiGLU and cross-entropy kernels that report exactly the lanes and rows whose exp is undecided', () => {
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
});
