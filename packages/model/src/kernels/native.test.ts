import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { isModelError } from '../errors.ts';
import { GEMM_ADD, GEMM_LOWER_K, GEMM_LOWER_OUT, GEMM_TRANS_A as TRANS_A, GEMM_UPPER_K } from './gemm-flags.ts';
import { matrix } from '../reference/matrix.ts';
import { gemmJs, transpose } from './gemm.ts';
import { kernelChoice, kernelInfo, openKernels, resolveKernels, setKernels } from './kernel-choice.ts';
import { loadNativeKernels, nativeAddonProblem, type NativeAddon, type NativePath } from './native.ts';
import { createWasmGemm } from './wasm-gemm.ts';
import { wasmProduct } from './wasm-set.ts';

const load = loadNativeKernels();
const addon = load.addon;
const PATHS: NativePath[] = addon === null ? [] : (['scalar', 'avx2', 'avx512'] as const).filter((p) => p === 'scalar' || p === 'avx2' || addon.bestPath() === 'avx512');
/** Skipped tests say why in their name (build the addon: node packages/model/native/build.mjs). */
const SKIPPED = addon === null ? ` — skipped: ${load.error ?? 'addon not built'}` : '';

const initialKernels = kernelChoice();
afterEach(() => {
  setKernels(initialKernels);
  addon?.setPath('best');
  addon?.setBlocking(0, 0);
});

/** The WebAssembly kernel on copied operands (the yardstick), or the JavaScript product without WebAssembly SIMD. */
const simd = createWasmGemm();

/** Values of every magnitude, signed zeros included (a −0 product must not leave a −0 sum: sums start at +0). */
function random(n: number, seed: number): Float64Array {
  let s = seed >>> 0;
  return Float64Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    if (s % 29 === 0) return -0;
    if (s % 31 === 0) return 0;
    return (s / 2 ** 32 - 0.5) * 2 ** ((s % 61) - 30);
  });
}

/** The index and both bit patterns of the first differing element, or null. */
function firstDifference(actual: Float64Array, expected: Float64Array, keep: (index: number) => boolean): string | null {
  const a = new BigUint64Array(actual.buffer, actual.byteOffset, actual.length);
  const e = new BigUint64Array(expected.buffer, expected.byteOffset, expected.length);
  if (a.length !== e.length) return `length ${a.length} ≠ ${e.length}`;
  for (let i = 0; i < a.length; i++) if (keep(i) && a[i] !== e[i]) return `index ${i}: ${a[i]!.toString(16)} ≠ ${e[i]!.toString(16)}`;
  return null;
}

interface Case {
  readonly M: number;
  readonly N: number;
  readonly K: number;
  readonly flags: number;
  /** Extra row-stride padding and leading offsets (views into larger arrays, as the model passes). */
  readonly pad: number;
  readonly seed: number;
}

/** Runs one case through `run` and the WebAssembly kernel (on A transposed back under TRANS_A); returns the first differing output or null. */
function compare(c: Case, run: (C: Float64Array, cOff: number, ldc: number, A: Float64Array, aOff: number, lda: number, B: Float64Array, bOff: number, ldb: number) => void): string | null {
  const { M, N, K, flags, pad, seed } = c;
  const transA = (flags & TRANS_A) !== 0;
  const lda = (transA ? M : K) + pad, ldb = N + pad, ldc = N + pad;
  const aOff = pad, bOff = 2 * pad, cOff = 3 * pad;
  const A = random(aOff + (transA ? K : M) * lda, seed);
  const at = (i: number, k: number): number => aOff + (transA ? k * lda + i : i * lda + k);
  // The causal flags require +0 in the masked part of A (row i: k > i for LOWER_K, k < i for UPPER_K).
  for (let i = 0; i < M; i++)
    for (let k = 0; k < K; k++) if (((flags & GEMM_LOWER_K) !== 0 && k > i) || ((flags & GEMM_UPPER_K) !== 0 && k < i)) A[at(i, k)] = 0;
  // The WebAssembly kernel's operand: A as stored [M, K] (the definition of the transposed variant).
  const plainA = new Float64Array(M * K);
  for (let i = 0; i < M; i++) for (let k = 0; k < K; k++) plainA[i * K + k] = A[at(i, k)]!;
  const B = random(bOff + K * ldb, seed + 1);
  const C0 = random(cOff + M * ldc, seed + 2);
  const native = C0.slice();
  const wasm = C0.slice();
  run(native, cOff, ldc, A, aOff, lda, B, bOff, ldb);
  const [c0, a0, b0] = [matrix(wasm, M, N, ldc, cOff), matrix(plainA, M, K), matrix(B, K, N, ldb, bOff)];
  if (simd !== null) wasmProduct(simd, c0, a0, b0, flags & ~TRANS_A);
  else gemmJs(c0, a0, b0, flags & ~TRANS_A);
  // Compared: every element of C except the unspecified ones above the diagonal under LOWER_OUT.
  const keep = (index: number): boolean => {
    const r = index - cOff;
    const i = Math.floor(r / ldc), j = r % ldc;
    if (r < 0 || j >= N) return true; // outside the view: must be untouched
    return (flags & GEMM_LOWER_OUT) === 0 || j <= i;
  };
  return firstDifference(native, wasm, keep);
}

/** Generated cases of the given dimensions, under every flag combination and padding. */
const gemmCases = (M: fc.Arbitrary<number>, N: fc.Arbitrary<number>, K: fc.Arbitrary<number>): fc.Arbitrary<Case> =>
  fc.record({ M, N, K, flags: fc.integer({ min: 0, max: 31 }), pad: fc.integer({ min: 0, max: 3 }), seed: fc.integer() });

const shapes = gemmCases(fc.integer({ min: 1, max: 41 }), fc.integer({ min: 1, max: 53 }), fc.integer({ min: 0, max: 37 }));

/** Edge shapes every path must pass: 1 × 1, k = 0 and 1, sizes around the vector and block widths. */
const EDGES: [number, number, number][] = [
  [1, 1, 0], [1, 1, 1], [1, 1, 7], [3, 5, 0], [2, 9, 1], [7, 7, 7], [8, 8, 8], [9, 25, 3], [6, 24, 16], [13, 23, 1], [1, 53, 33], [64, 16, 64], [17, 33, 129],
];

/**
 * Shapes of the packed AVX-512 path (more than 32 rows and more than 2^17 multiply-adds; B packed per K block of 128
 * rows × 24 columns, A^T too under TRANS_A with N > 48, running sums carried across K blocks, row chunks of 128): K
 * longer than one block and not a multiple of it, N not a multiple of 24, M not a multiple of 8, more than one row
 * chunk, long K under TRANS_A and the causal flags (every flag combination runs). The other paths must agree too.
 */
const PACKED: [number, number, number][] = [
  [41, 24, 1000], [48, 48, 256], [33, 25, 400], [40, 7, 600], [47, 49, 385], [36, 73, 200], [64, 3, 700], [33, 26, 1300], [72, 50, 40],
  [136, 30, 140], [137, 52, 129],
];

/**
 * Dimensions on and around every edge of the packed AVX2 path (more than one row and 4096 multiply-adds): one row
 * of A against panels of 48 columns of B, K blocks of 64 (running sums carried across them in a partial tile, never
 * in C), row chunks of 256 (A packed per K block at its first use: always under TRANS_A, else with 3 panels or more
 * and rows more than 72 apart), column blocks of 6 panels at 256 rows and 12 at 128 when K spans several blocks
 * (2 and 4 under SMALL_TILES), a block's panels as even as multiples of 4 columns go and none wider than 48 (49 →
 * 28 + 21, 97 → 36 + 32 + 29, 189 → 48 + 48 + 48 + 45, 256 → 44 + 44 + 40 + 44 + 44 + 40). The other paths must
 * agree too.
 */
const AVX2_M = [2, 3, 12, 13, 47, 128, 129, 255, 256, 257] as const;
const AVX2_N = [1, 4, 5, 16, 31, 32, 47, 48, 49, 52, 64, 79, 80, 95, 96, 97, 112, 142, 145, 189, 193, 200, 238] as const;
const AVX2_K = [0, 1, 63, 64, 65, 127, 128, 129, 200] as const;
const avx2Shapes = gemmCases(
  fc.oneof(fc.constantFrom(...AVX2_M), fc.integer({ min: 2, max: 300 })),
  fc.oneof(fc.constantFrom(...AVX2_N), fc.integer({ min: 1, max: 250 })),
  fc.oneof(fc.constantFrom(...AVX2_K), fc.integer({ min: 0, max: 300 })),
);

/** Packed AVX2 shapes every flag combination runs on: several column blocks (under SMALL_TILES), row chunks and K blocks at once. */
const AVX2_PACKED: [number, number, number][] = [
  [256, 200, 130], [257, 97, 65], [129, 200, 129], [13, 52, 64], [40, 112, 200], [127, 189, 130], [2, 97, 200],
];

/**
 * setBlocking's limits (doubles) for the column-block edges at small sizes: partial tiles of 24,576 doubles per row
 * chunk, 2 panels at 256 rows and 4 at 128 (the path's own 73,728 need N > 288 at 256 rows for a second block).
 */
const SMALL_TILES = 24_576;
/** With SMALL_TILES, a packed A is never kept: each column block packs it again. */
const KEEP_NONE = 1;

/** Random shapes with long K (several K blocks of the packed path). */
const longShapes = gemmCases(fc.integer({ min: 1, max: 72 }), fc.integer({ min: 1, max: 60 }), fc.integer({ min: 100, max: 700 }));

describe.skipIf(addon === null)(`native gemm (addon)${SKIPPED}`, () => {
  const nativeAddon = addon as NativeAddon;
  describe.each(PATHS)('%s path', (path) => {
    const run = (c: Case) => (C: Float64Array, cOff: number, ldc: number, A: Float64Array, aOff: number, lda: number, B: Float64Array, bOff: number, ldb: number): void => {
      nativeAddon.setPath(path);
      nativeAddon.gemm(C, cOff, ldc, A, aOff, lda, B, bOff, ldb, c.M, c.N, c.K, c.flags);
    };

    /** Generated cases: the first differing output of any is an error naming the case. */
    const agrees = (cases: fc.Arbitrary<Case>, numRuns: number): void =>
      fc.assert(
        fc.property(cases, (c) => {
          const d = compare(c, run(c));
          if (d !== null) throw new Error(`${JSON.stringify(c)}: ${d}`);
        }),
        { numRuns },
      );
    /** One shape under every flag combination, with each of the paddings. */
    const agreesEveryFlag = (M: number, N: number, K: number, pads: readonly number[], seed: number): void => {
      for (let flags = 0; flags < 32; flags++)
        for (const pad of pads) {
          const c = { M, N, K, flags, pad, seed: seed + flags };
          expect(compare(c, run(c)), JSON.stringify(c)).toBeNull();
        }
    };

    it('equals the WebAssembly kernel bit for bit for random shapes, strides and every flag combination (A transposed too)', () => {
      agrees(shapes, 300);
    });

    it('equals the WebAssembly kernel bit for bit for random shapes with long K (several K blocks), every flag combination', () => {
      agrees(longShapes, 60);
    });

    it.each(PACKED)('equals the WebAssembly kernel for the packed shape %i × %i × %i under every flag combination', (M, N, K) => {
      agreesEveryFlag(M, N, K, [0, 3], M * 7919 + N * 31 + K);
    });

    /** setBlocking's limits are the packed AVX2 path's alone: on another path a run under them would repeat the run without. */
    const noBlocking = path !== 'avx2';
    const AVX2_ONLY = '(skipped on the paths other than AVX2, which have no such limits)';

    it('equals the WebAssembly kernel bit for bit on the edges of the packed AVX2 blocking (panels, K blocks, chunks, column blocks)', () => {
      agrees(avx2Shapes, 40);
    });

    it.skipIf(noBlocking)(`equals the WebAssembly kernel bit for bit on the edges of the packed AVX2 blocking under small partial tiles ${AVX2_ONLY}`, () => {
      nativeAddon.setBlocking(SMALL_TILES, 0);
      agrees(avx2Shapes, 40);
    });

    it.each(AVX2_PACKED)('equals the WebAssembly kernel for the packed AVX2 shape %i × %i × %i under every flag combination', (M, N, K) => {
      agreesEveryFlag(M, N, K, [1], M * 7919 + N * 31 + K);
    });

    it.skipIf(noBlocking).each(AVX2_PACKED)(`equals the WebAssembly kernel for the packed AVX2 shape %i × %i × %i under every flag combination and small partial tiles ${AVX2_ONLY}`, (M, N, K) => {
      nativeAddon.setBlocking(SMALL_TILES, 0);
      agreesEveryFlag(M, N, K, [1], M * 7919 + N * 31 + K + 1);
    });

    it('equals the WebAssembly kernel for 256 × 300 × 65 and 128 × 580 × 65 under every flag combination (7 and 13 panels: two column blocks under the path\'s own limits)', () => {
      agreesEveryFlag(256, 300, 65, [1], 300);
      agreesEveryFlag(128, 580, 65, [1], 580);
    });

    it.skipIf(noBlocking).each([[256, 100, 200], [257, 97, 130], [300, 145, 129]])(`equals the WebAssembly kernel when a chunk's packed A is not kept for later column blocks but packed again at each: %i × %i × %i, every flag combination ${AVX2_ONLY}`, (M, N, K) => {
      nativeAddon.setBlocking(SMALL_TILES, KEEP_NONE);
      agreesEveryFlag(M, N, K, [1], M * 31 + N * 7 + K);
    });

    it.each(EDGES)('equals the WebAssembly kernel for %i × %i × %i under every flag combination', (M, N, K) => {
      agreesEveryFlag(M, N, K, [0, 2], M * 1000 + N * 10 + K);
    });
  });

  it('refuses blocking limits that are not non-negative integers', () => {
    for (const bad of [-1, 0.5, Number.NaN, Infinity, '8' as unknown as number]) {
      expect(() => nativeAddon.setBlocking(bad, 0)).toThrow(/partialTile must be a non-negative integer/);
      expect(() => nativeAddon.setBlocking(0, bad)).toThrow(/keptA must be a non-negative integer/);
    }
  });

  it('runs the native set\'s products and its one-row linear layer (cached decoding) with the bits of the WebAssembly/JavaScript products', () => {
    const set = openKernels({ vocabularySize: 5, modelWidth: 4, heads: 2, feedForwardWidth: 4, layers: 1, maxPositions: 4, ropeBase: 10000, rmsEpsilon: 1e-6 }, 'native');
    expect(set.kind).toBe(`native-${nativeAddon.bestPath()}`);
    const c = { M: 19, N: 37, K: 23, flags: GEMM_ADD | GEMM_LOWER_OUT, pad: 1, seed: 5 };
    expect(compare(c, (C, cOff, ldc, A, aOff, lda, B, bOff, ldb) => set.product(matrix(C, c.M, c.N, ldc, cOff), matrix(A, c.M, c.K, lda, aOff), matrix(B, c.K, c.N, ldb, bOff), c.flags))).toBeNull();
    for (const [N, K] of [[1, 1], [5, 0], [37, 23], [64, 128]] as const) {
      const x = random(K + 2, N), W = random(3 + K * N, K);
      const native = new Float64Array(N + 1), js = new Float64Array(N + 1);
      set.linearForward(matrix(native, 1, N), matrix(x, 1, K), { w: matrix(W, K, N, N, 3), t: null });
      gemmJs(matrix(js, 1, N), matrix(x, 1, K), matrix(W, K, N, N, 3), 0);
      expect(firstDifference(native, js, () => true)).toBeNull();
    }
  });

  it('refuses views that reach outside their arrays (RangeError) and wrong array types (TypeError)', () => {
    const A = new Float64Array(12), B = new Float64Array(12), C = new Float64Array(9);
    expect(() => nativeAddon.gemm(C, 0, 3, A, 0, 4, B, 0, 3, 3, 3, 4, 0)).not.toThrow();
    expect(() => nativeAddon.gemm(C, 1, 3, A, 0, 4, B, 0, 3, 3, 3, 4, 0)).toThrow(RangeError);
    expect(() => nativeAddon.gemm(C, 0, 3, A, 0, 4, B, 1, 3, 3, 3, 4, 0)).toThrow(RangeError);
    expect(() => nativeAddon.gemm(C, 0, 3, A, 0, 5, B, 0, 3, 3, 3, 4, 0)).toThrow(RangeError);
    expect(() => nativeAddon.gemm(C, 0, 2, A, 0, 4, B, 0, 3, 3, 3, 4, 0)).toThrow(RangeError);
    expect(() => nativeAddon.gemm(C, -1, 3, A, 0, 4, B, 0, 3, 3, 3, 4, 0)).toThrow(RangeError);
    expect(() => nativeAddon.gemm(C, 0.5, 3, A, 0, 4, B, 0, 3, 3, 3, 4, 0)).toThrow(RangeError);
    expect(() => nativeAddon.gemm(new Float32Array(9) as unknown as Float64Array, 0, 3, A, 0, 4, B, 0, 3, 3, 3, 4, 0)).toThrow(TypeError);
  });

  it('works on SharedArrayBuffer views (the threaded decoder)', () => {
    const share = (a: Float64Array): Float64Array => {
      const s = new Float64Array(new SharedArrayBuffer(a.byteLength));
      s.set(a);
      return s;
    };
    const A = random(6 * 5, 1), B = random(5 * 7, 2);
    const plain = new Float64Array(42), shared = share(plain);
    nativeAddon.gemm(plain, 0, 7, A, 0, 5, B, 0, 7, 6, 7, 5, 0);
    nativeAddon.gemm(shared, 0, 7, share(A), 0, 5, share(B), 0, 7, 6, 7, 5, 0);
    expect(firstDifference(shared, plain, () => true)).toBeNull();
  });
});

describe.skipIf(addon === null)(`native transpose (addon)${SKIPPED}`, () => {
  const nativeAddon = addon as NativeAddon;
  it.each(PATHS)('%s path: every element of dst = srcᵀ as gemm.ts transpose writes it, and nothing outside the view', (path) => {
    nativeAddon.setPath(path);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 5 }), fc.integer(), (R, S, pad, off, seed) => {
        const lds = S + pad, ldd = R + ((pad * 3) % 7);
        const src = random(off + R * lds + 3, seed);
        const dst = random(2 * off + S * ldd + 3, seed + 1);
        const expected = dst.slice();
        transpose(matrix(expected, S, R, ldd, 2 * off), matrix(src, R, S, lds, off));
        expect(nativeAddon.transpose(dst, 2 * off, ldd, src, off, lds, R, S)).toBe(0);
        expect(firstDifference(dst, expected, () => true)).toBeNull();
      }),
      { numRuns: 150, seed: 7 },
    );
  });

  it('refuses overlapping spans without writing, and bad extents with a RangeError', () => {
    const a = random(64, 3);
    const before = a.slice();
    expect(nativeAddon.transpose(a, 0, 8, a, 4, 8, 4, 4)).toBe(-1);
    expect(firstDifference(a, before, () => true)).toBeNull();
    const d = new Float64Array(12), s = new Float64Array(12);
    expect(nativeAddon.transpose(d, 0, 3, s, 0, 4, 3, 4)).toBe(0);
    expect(() => nativeAddon.transpose(d, 1, 3, s, 0, 4, 3, 4)).toThrow(RangeError);
    expect(() => nativeAddon.transpose(d, 0, 3, s, 0, 3, 3, 4)).toThrow(RangeError);
    expect(() => nativeAddon.transpose(d, 0, 2, s, 0, 4, 3, 4)).toThrow(RangeError);
  });
});

describe('setKernels / kernelInfo', () => {
  it('reports the set a choice resolves to: the JavaScript reference under "scalar", WebAssembly under "wasm" (or the reference without SIMD)', () => {
    setKernels('scalar');
    expect(kernelInfo()).toMatchObject({ requested: 'scalar', kind: 'js-scalar' });
    setKernels('wasm');
    expect(kernelInfo().requested).toBe('wasm');
    expect(kernelInfo().kind).toBe(simd === null ? 'js-scalar' : 'wasm-simd');
    setKernels('auto');
    expect(kernelInfo().kind).toBe(addon !== null ? `native-${addon.path()}` : simd === null ? 'js-scalar' : 'wasm-simd');
    expect(resolveKernels('scalar')).toBe('scalar');
  });

  it.skipIf(addon !== null)('refuses "native" with MODEL_KERNELS_UNAVAILABLE when the addon is missing', () => {
    try {
      setKernels('native');
      expect.unreachable();
    } catch (e) {
      expect(isModelError(e) && e.code === 'MODEL_KERNELS_UNAVAILABLE').toBe(true);
    }
  });

  it('refuses an unknown choice', () => {
    expect(() => setKernels('gpu' as 'auto')).toThrow(RangeError);
  });
});

describe('nativeAddonProblem', () => {
  it.skipIf(addon === null)(`accepts the built addon: every function, this ABI version, the product flags of gemm-flags.ts${SKIPPED}`, () => {
    expect(nativeAddonProblem(addon as NativeAddon, 'built')).toBeUndefined();
  });

  it.skipIf(addon === null)(`refuses an addon lacking a function, of another ABI version, or compiled with other product flags, whole${SKIPPED}`, () => {
    const built = addon as NativeAddon;
    const like = (change: Record<string, unknown>): NativeAddon => ({ ...built, ...change }) as NativeAddon;
    expect(nativeAddonProblem(like({ rope: undefined }), 'old.node')).toMatch(/old\.node lacks rope/);
    expect(nativeAddonProblem(like({ abiVersion: 3 }), 'old.node')).toMatch(/ABI version 3, expected 4/);
    expect(nativeAddonProblem(like({ transpose: undefined }), 'old.node')).toMatch(/old\.node lacks transpose/);
    expect(nativeAddonProblem(like({ gemmFlags: { ...built.gemmFlags, transA: 32 } }), 'odd.node')).toMatch(/transA = 32 \(expected 16\)/);
    expect(nativeAddonProblem(like({ gemmFlags: undefined }), 'odd.node')).toMatch(/product flags/);
  });
});
