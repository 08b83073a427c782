/**
 * The matrix products of the kernel sets — gemm.ts's JavaScript loops, the
 * WebAssembly kernel on operands copied into its memory or in an arena, the
 * native kernels — against the in-order dot products, bit for bit, for any
 * shape, flag, offset and row stride; the transposition; and the WebAssembly
 * kernel itself at its element offsets.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { matrix, type Matrix } from '../reference/matrix.ts';
import { GEMM_ADD, GEMM_LOWER_K, GEMM_LOWER_OUT, GEMM_TRANS_A, GEMM_UPPER_K } from './gemm-flags.ts';
import { gemmJs, transpose } from './gemm.ts';
import { openKernels } from './kernel-choice.ts';
import { createWasmGemm, ensureWasmCapacity } from './wasm-gemm.ts';
import { wasmProduct } from './wasm-set.ts';
import { KERNEL_SETS } from '../../test/helpers/kernel-sets.ts';

function sameBits(a: Float64Array, b: Float64Array): boolean {
  return a.length === b.length && a.every((x, i) => Object.is(x, b[i]));
}

// Large enough to reach the SIMD kernel (M·N·K ≥ 2048) and to exercise every remainder path.
const dims = fc.record({ M: fc.integer({ min: 1, max: 23 }), N: fc.integer({ min: 1, max: 23 }), K: fc.integer({ min: 1, max: 29 }), seed: fc.integer() });

function random(n: number, seed: number): Float64Array {
  let s = seed >>> 0;
  return Float64Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s / 2 ** 32 - 0.5) * 2 ** ((s % 41) - 20);
  });
}

/** The naive in-order dot products of row-major A [M, K] and B [K, N]. */
function naive(A: Float64Array, B: Float64Array, M: number, N: number, K: number): Float64Array {
  const C = new Float64Array(M * N);
  for (let i = 0; i < M; i++)
    for (let j = 0; j < N; j++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += A[i * K + k]! * B[k * N + j]!;
      C[i * N + j] = s;
    }
  return C;
}

const config = { vocabularySize: 5, modelWidth: 4, heads: 2, feedForwardWidth: 4, layers: 1, maxPositions: 4, ropeBase: 10000, rmsEpsilon: 1e-6 };
const SIMD = KERNEL_SETS.find((k) => k.name === 'wasm')!;
type Product = (c: Matrix, a: Matrix, b: Matrix, flags: number) => void;

/** Every product, with whether it runs here: the sets' own, and the WebAssembly kernel on copied operands whatever their size. */
const products: readonly (readonly [string, boolean, string, () => Product])[] = [
  ...KERNEL_SETS.map(({ name, missing, skipped }) => [`${name} set`, missing, skipped, () => {
    const k = openKernels(config, name);
    return (c: Matrix, a: Matrix, b: Matrix, flags: number) => k.product(c, a, b, flags);
  }] as const),
  ['WebAssembly kernel on copied operands', SIMD.missing, SIMD.skipped, () => {
    const w = createWasmGemm()!;
    return (c: Matrix, a: Matrix, b: Matrix, flags: number) => wasmProduct(w, c, a, b, flags);
  }],
];

describe.each(products)('the product of the %s', (_name, missing, skipped, make) => {
  it.skipIf(missing)(`equals the in-order dot products bit for bit for any shape, written or added (GEMM_ADD: "previous + contribution")${skipped}`, () => {
    const product = make();
    fc.assert(
      fc.property(dims, ({ M, N, K, seed }) => {
        const A = random(M * K, seed);
        const B = random(K * N, seed + 1);
        const prev = random(M * N, seed + 2);
        const C = new Float64Array(M * N);
        product(matrix(C, M, N), matrix(A, M, K), matrix(B, K, N), 0);
        const added = prev.slice();
        product(matrix(added, M, N), matrix(A, M, K), matrix(B, K, N), GEMM_ADD);
        const dot = naive(A, B, M, N, K);
        return sameBits(C, dot) && sameBits(added, prev.map((p, i) => p + dot[i]!));
      }),
    );
  });

  it.skipIf(missing)(`computes the causal part j ≤ i with GEMM_LOWER_OUT, and restricts the contraction with GEMM_LOWER_K / GEMM_UPPER_K when the masked terms of A are +0${skipped}`, () => {
    const product = make();
    fc.assert(
      fc.property(dims, ({ M, N, K, seed }) => {
        const A = random(M * K, seed);
        const B = random(K * N, seed + 1);
        const C = new Float64Array(M * N).fill(NaN);
        product(matrix(C, M, N), matrix(A, M, K), matrix(B, K, N), GEMM_LOWER_OUT);
        const full = naive(A, B, M, N, K);
        for (let i = 0; i < M; i++) for (let j = 0; j <= Math.min(i, N - 1); j++) if (!Object.is(C[i * N + j], full[i * N + j])) return false;
        const lower = random(M * K, seed);
        const upper = random(M * K, seed + 3);
        for (let i = 0; i < M; i++)
          for (let k = 0; k < K; k++) {
            if (k > i) lower[i * K + k] = 0;
            if (k < i) upper[i * K + k] = 0;
          }
        const C1 = new Float64Array(M * N);
        const C2 = new Float64Array(M * N);
        product(matrix(C1, M, N), matrix(lower, M, K), matrix(B, K, N), GEMM_LOWER_K);
        product(matrix(C2, M, N), matrix(upper, M, K), matrix(B, K, N), GEMM_UPPER_K);
        return sameBits(C1, naive(lower, B, M, N, K)) && sameBits(C2, naive(upper, B, M, N, K));
      }),
    );
  });

  it.skipIf(missing)(`reads A stored transposed with GEMM_TRANS_A, with row strides, the same bits as on A itself${skipped}`, () => {
    const product = make();
    fc.assert(
      fc.property(dims, fc.integer({ min: 0, max: 3 }), ({ M, N, K, seed }, pad) => {
        const At = random(K * (M + pad), seed); // stored [K, M] with row stride M + pad
        const A = new Float64Array(M * K);
        transpose(matrix(A, M, K), matrix(At, K, M, M + pad));
        const B = random(K * N, seed + 1);
        const prev = random(M * N, seed + 2);
        for (const flags of [0, GEMM_ADD]) {
          const want = prev.slice();
          gemmJs(matrix(want, M, N), matrix(A, M, K), matrix(B, K, N), flags);
          const got = prev.slice();
          product(matrix(got, M, N), matrix(At, K, M, M + pad), matrix(B, K, N), flags | GEMM_TRANS_A);
          if (!sameBits(got, want)) return false;
        }
        return true;
      }),
    );
  });

  it.skipIf(missing)(`honours offsets and row strides (head slices)${skipped}`, () => {
    const product = make();
    const M = 9, N = 10, K = 24;
    const A = random(M * 30, 1);
    const B = random(K * 13, 2);
    const C = new Float64Array(3 + M * 12).fill(7);
    // A rows of width K from column 4 (lda 30), B rows of width N from column 2 (ldb 13), C at offset 3 with ldc 12.
    product(matrix(C, M, N, 12, 3), matrix(A, M, K, 30, 4), matrix(B, K, N, 13, 2), 0);
    for (let i = 0; i < M; i++)
      for (let j = 0; j < N; j++) {
        let s = 0;
        for (let k = 0; k < K; k++) s += A[4 + i * 30 + k]! * B[2 + k * 13 + j]!;
        expect(Object.is(C[3 + i * 12 + j], s)).toBe(true);
      }
    expect(C[0]).toBe(7);
    expect(C[3 + 10]).toBe(7);
  });
});

describe('transpose', () => {
  it('moves src[r, s] to dst[s, r] with strides', () => {
    const src = Float64Array.from({ length: 12 }, (_, i) => i);
    const dst = new Float64Array(12);
    transpose(matrix(dst, 4, 3), matrix(src, 3, 4));
    expect(Array.from(dst)).toEqual([0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]);
  });

  it('writes exactly dst[s, r] = src[r, s] for generated shapes, strides and offsets (bands of 8 rows and the rest), nothing else', () => {
    fc.assert(
      fc.property(
        fc.record({ R: fc.integer({ min: 0, max: 40 }), S: fc.integer({ min: 0, max: 40 }), padS: fc.integer({ min: 0, max: 5 }), padD: fc.integer({ min: 0, max: 5 }), sOff: fc.integer({ min: 0, max: 9 }), dOff: fc.integer({ min: 0, max: 9 }) }),
        ({ R, S, padS, padD, sOff, dOff }) => {
          const lds = S + padS;
          const ldd = R + padD;
          const src = Float64Array.from({ length: sOff + R * lds + 3 }, (_, i) => i + 0.5);
          const dst = new Float64Array(dOff + S * ldd + 3).fill(-1);
          transpose(matrix(dst, S, R, ldd, dOff), matrix(src, R, S, lds, sOff));
          for (let i = 0; i < dst.length; i++) {
            const k = i - dOff;
            const s = Math.floor(k / ldd);
            const r = k - s * ldd;
            const inside = k >= 0 && s < S && r < R;
            if (dst[i] !== (inside ? src[sOff + r * lds + s] : -1)) return false;
          }
          return true;
        },
      ),
    );
  });
});

describe('the WebAssembly kernel itself (wasm-gemm.ts)', () => {
  const kernel = createWasmGemm();

  /** Finite values of every kind: ±0, subnormals, tiny, ordinary and large magnitudes (no overflow over 70 terms). */
  function values(n: number, seed: number): Float64Array {
    let s = seed >>> 0;
    const next = (): number => {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      return s;
    };
    return Float64Array.from({ length: n }, () => {
      const r = next(), sign = next() & 1 ? -1 : 1;
      switch (r % 8) {
        case 0: return sign * 0;
        case 1: return sign * (next() % 1000) * 5e-324; // subnormal
        case 2: return sign * (next() / 2 ** 32) * 2 ** -1030; // subnormal range, several bits
        case 3: return sign * (next() / 2 ** 32) * 1e150;
        case 4: return sign * (next() / 2 ** 32) * 1e-150;
        default: return sign * (next() / 2 ** 32 - 0.5) * 2 ** ((next() % 41) - 20);
      }
    });
  }

  const bits = (x: number): bigint => new BigUint64Array(Float64Array.of(x).buffer)[0]!;

  it.skipIf(kernel === null)('gives the scalar loop\'s bit patterns for any shape 0…70, all 32 flag combinations and strided operands', () => {
    const w = kernel!;
    fc.assert(
      fc.property(
        fc.record({
          M: fc.integer({ min: 0, max: 70 }), N: fc.integer({ min: 0, max: 70 }), K: fc.integer({ min: 0, max: 70 }),
          flags: fc.integer({ min: 0, max: 31 }), padA: fc.integer({ min: 0, max: 5 }), padB: fc.integer({ min: 0, max: 5 }), padC: fc.integer({ min: 0, max: 5 }),
          offset: fc.integer({ min: 0, max: 3 }), seed: fc.integer(),
        }),
        ({ M, N, K, flags, padA, padB, padC, offset, seed }) => {
          const transA = (flags & GEMM_TRANS_A) !== 0;
          const logical = flags & 15;
          // A[i, k] row-major (lda = K + padA) or stored transposed At[k, i] (lda = M + padA)
          const lda = (transA ? M : K) + padA, ldb = N + padB, ldc = N + padC;
          const aLen = (transA ? K : M) * lda, bLen = K * ldb, cLen = M * ldc;
          const A = values(aLen, seed), B = values(bLen, seed + 1), C0 = values(cLen, seed + 2);
          const at = (i: number, k: number): number => (transA ? k * lda + i : i * lda + k);
          for (let i = 0; i < M; i++)
            for (let k = 0; k < K; k++) if (((logical & GEMM_LOWER_K) !== 0 && k > i) || ((logical & GEMM_UPPER_K) !== 0 && k < i)) A[at(i, k)] = 0;
          // the reference: the scalar loop on the row-major A
          const Arow = new Float64Array(M * K);
          for (let i = 0; i < M; i++) for (let k = 0; k < K; k++) Arow[i * K + k] = A[at(i, k)]!;
          const want = C0.slice();
          gemmJs(matrix(want, M, N, ldc), matrix(Arow, M, K), matrix(B, K, N, ldb), logical);
          // the kernel, operands at odd element offsets in its memory
          const a = offset, b = a + aLen + offset, c = b + bLen + offset;
          ensureWasmCapacity(w, c + cLen + 1);
          w.view.set(A, a);
          w.view.set(B, b);
          w.view.set(C0, c);
          w.run(c, ldc, a, lda, b, ldb, M, N, K, flags);
          const got = w.view.subarray(c, c + cLen);
          for (let i = 0; i < M; i++)
            for (let j = 0; j < ldc; j++) {
              const q = i * ldc + j;
              // entries above the diagonal are unspecified with GEMM_LOWER_OUT; the row padding is never written
              if (j < N && (logical & GEMM_LOWER_OUT) !== 0 && j > i) continue;
              if (bits(got[q]!) !== bits(j < N ? want[q]! : C0[q]!)) return false;
            }
          return true;
        },
      ),
      { numRuns: 400 },
    );
  });
});
