import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { GEMM_ADD, GEMM_LOWER_K, GEMM_LOWER_OUT, GEMM_TRANS_A, GEMM_UPPER_K } from './gemm-flags.ts';
import { gemm, gemmScalar, gemmTransA, pinGemmOperand, pinnedOffset, rowTimesMatrix, setGemmBackend, transpose, usesSimdGemm } from './gemm.ts';
import { kernelChoice, setKernels } from './native.ts';
import { createWasmGemm, ensureWasmCapacity } from './wasm-gemm.ts';

/** The specification: every C[i, j] an in-order dot product from +0.0. */
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

function sameBits(a: Float64Array, b: Float64Array): boolean {
  return a.length === b.length && a.every((x, i) => Object.is(x, b[i]));
}

/** Why a WebAssembly-only test is skipped, in its name. */
const NO_SIMD = usesSimdGemm() ? '' : ' — skipped: this runtime has no WebAssembly SIMD';

// Large enough to reach the SIMD kernel (M·N·K ≥ 2048) and to exercise every remainder path.
const dims = fc.record({ M: fc.integer({ min: 1, max: 23 }), N: fc.integer({ min: 1, max: 23 }), K: fc.integer({ min: 1, max: 29 }), seed: fc.integer() });

function random(n: number, seed: number): Float64Array {
  let s = seed >>> 0;
  return Float64Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s / 2 ** 32 - 0.5) * 2 ** ((s % 41) - 20);
  });
}

const implementations = [
  ['gemm (SIMD when available)', gemm],
  ['gemmScalar', gemmScalar],
] as const;

afterEach(() => setGemmBackend('auto'));

describe.each(implementations)('%s', (_name, impl) => {
  it('equals the in-order dot products bit for bit for any shape', () => {
    fc.assert(
      fc.property(dims, ({ M, N, K, seed }) => {
        const A = random(M * K, seed);
        const B = random(K * N, seed + 1);
        const C = new Float64Array(M * N);
        impl(C, 0, N, A, 0, K, B, 0, N, M, N, K, 0);
        return sameBits(C, naive(A, B, M, N, K));
      }),
    );
  });

  it('adds the finished dot product to C with GEMM_ADD ("previous + contribution")', () => {
    fc.assert(
      fc.property(dims, ({ M, N, K, seed }) => {
        const A = random(M * K, seed);
        const B = random(K * N, seed + 1);
        const prev = random(M * N, seed + 2);
        const C = prev.slice();
        impl(C, 0, N, A, 0, K, B, 0, N, M, N, K, GEMM_ADD);
        const dot = naive(A, B, M, N, K);
        return sameBits(C, prev.map((p, i) => p + dot[i]!));
      }),
    );
  });

  it('computes the causal part j ≤ i with GEMM_LOWER_OUT', () => {
    fc.assert(
      fc.property(dims, ({ M, N, K, seed }) => {
        const A = random(M * K, seed);
        const B = random(K * N, seed + 1);
        const C = new Float64Array(M * N).fill(NaN);
        impl(C, 0, N, A, 0, K, B, 0, N, M, N, K, GEMM_LOWER_OUT);
        const full = naive(A, B, M, N, K);
        for (let i = 0; i < M; i++) for (let j = 0; j <= Math.min(i, N - 1); j++) if (!Object.is(C[i * N + j], full[i * N + j])) return false;
        return true;
      }),
    );
  });

  it('restricts the contraction causally with GEMM_LOWER_K / GEMM_UPPER_K when the masked terms of A are +0', () => {
    fc.assert(
      fc.property(dims, ({ M, N, K, seed }) => {
        const lower = random(M * K, seed);
        const upper = random(M * K, seed + 3);
        for (let i = 0; i < M; i++)
          for (let k = 0; k < K; k++) {
            if (k > i) lower[i * K + k] = 0;
            if (k < i) upper[i * K + k] = 0;
          }
        const B = random(K * N, seed + 1);
        const C1 = new Float64Array(M * N);
        const C2 = new Float64Array(M * N);
        impl(C1, 0, N, lower, 0, K, B, 0, N, M, N, K, GEMM_LOWER_K);
        impl(C2, 0, N, upper, 0, K, B, 0, N, M, N, K, GEMM_UPPER_K);
        return sameBits(C1, naive(lower, B, M, N, K)) && sameBits(C2, naive(upper, B, M, N, K));
      }),
    );
  });

  it('honours offsets and row strides (head slices)', () => {
    const M = 9, N = 10, K = 24;
    const A = random(M * 30, 1);
    const B = random(K * 13, 2);
    const C = new Float64Array(3 + M * 12).fill(7);
    // A rows of width K from column 4 (lda 30), B rows of width N from column 2 (ldb 13), C at offset 3 with ldc 12.
    impl(C, 3, 12, A, 4, 30, B, 2, 13, M, N, K, 0);
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

describe('setGemmBackend', () => {
  it('switches between the SIMD and the scalar kernel', () => {
    setGemmBackend('scalar');
    expect(usesSimdGemm()).toBe(false);
    setGemmBackend('auto');
    expect(usesSimdGemm()).toBe(typeof (globalThis as { WebAssembly?: unknown }).WebAssembly === 'object');
  });
});

describe('rowTimesMatrix', () => {
  it('equals one row of the in-order dot products bit for bit (any width, with an offset)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 13 }), fc.integer({ min: 1, max: 13 }), fc.integer({ min: 0, max: 3 }), fc.integer(), (N, K, off, seed) => {
        const x = Float64Array.from({ length: K }, (_, i) => Math.sin(seed + i) * 1e3);
        const W = Float64Array.from({ length: off + K * N }, (_, i) => Math.cos(seed * 3 + i) / 7);
        const y = new Float64Array(N);
        rowTimesMatrix(y, x, W, off, N, K);
        return sameBits(y, naive(x, W.subarray(off), 1, N, K));
      }),
    );
  });
});

describe('transpose', () => {
  it('moves src[r, s] to dst[s, r] with strides', () => {
    const src = Float64Array.from({ length: 12 }, (_, i) => i);
    const dst = new Float64Array(12);
    transpose(dst, 0, 3, src, 0, 4, 3, 4);
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
          transpose(dst, dOff, ldd, src, sOff, lds, R, S);
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

describe('gemmTransA', () => {
  it.each(['simd', 'scalar', 'auto'] as const)('equals gemm on the transposed operand bit for bit, with and without GEMM_ADD and row strides (%s)', (b) => {
    setGemmBackend(b);
    fc.assert(
      fc.property(dims, fc.integer({ min: 0, max: 3 }), ({ M, N, K, seed }, pad) => {
        const lda = M + pad;
        const At = random(K * lda, seed); // stored [K, M] with row stride lda
        const A = new Float64Array(M * K);
        transpose(A, 0, K, At, 0, lda, K, M);
        const B = random(K * N, seed + 1);
        const prev = random(M * N, seed + 2);
        for (const flags of [0, GEMM_ADD]) {
          const want = prev.slice();
          gemmScalar(want, 0, N, A, 0, K, B, 0, N, M, N, K, flags);
          const got = prev.slice();
          gemmTransA(got, 0, N, At, 0, lda, B, 0, N, M, N, K, flags);
          if (!sameBits(got, want)) return false;
        }
        return true;
      }),
    );
  });
});

describe('pinGemmOperand', () => {
  it('reads a pinned operand in place (as A or B) with the same bits, and follows a re-pin after a change', () => {
    setGemmBackend('simd');
    const M = 9, N = 13, K = 17;
    const W = random(3 + K * N, 5); // B from offset 3
    const X = random(M * K, 6);
    pinGemmOperand(W);
    pinGemmOperand(X);
    const got = new Float64Array(M * N);
    gemm(got, 0, N, X, 0, K, W, 3, N, M, N, K, 0);
    const want = new Float64Array(M * N);
    gemmScalar(want, 0, N, X, 0, K, W, 3, N, M, N, K, 0);
    expect(sameBits(got, want)).toBe(true);
    W.set(random(W.length, 7));
    pinGemmOperand(W);
    gemm(got, 0, N, X, 0, K, W, 3, N, M, N, K, 0);
    gemmScalar(want, 0, N, X, 0, K, W, 3, N, M, N, K, 0);
    expect(sameBits(got, want)).toBe(true);
    // A pinned array that a product writes is dropped (its copy would go stale), then read from the array itself.
    gemm(W, 3, N, X, 0, K, random(K * N, 8), 0, N, M, N, K, 0);
    const after = new Float64Array(M * N);
    gemm(after, 0, N, X, 0, K, W, 3, N, M, N, K, 0);
    gemmScalar(want, 0, N, X, 0, K, W, 3, N, M, N, K, 0);
    expect(sameBits(after, want)).toBe(true);
  });

  it.skipIf(!usesSimdGemm())(`reads views (subarrays) of a pinned array in place too, and drops the pin when a view of it is written${NO_SIMD}`, () => {
    setGemmBackend('simd');
    const previous = kernelChoice();
    setKernels('wasm'); // pins are for the WebAssembly kernel (the native one reads the arrays in place)
    try {
      viewsOfPinnedArray();
    } finally {
      setKernels(previous);
    }
  });
});

function viewsOfPinnedArray(): void {
  const M = 5, N = 7, K = 6;
  const W = random(11 + K * N + 4, 9);
  const X = random(M * K, 10);
  pinGemmOperand(W);
  const base = pinnedOffset(W);
  expect(base).toBeGreaterThanOrEqual(0);
  const view = W.subarray(11, 11 + K * N);
  expect(pinnedOffset(view)).toBe(base + 11);
  expect(pinnedOffset(X)).toBe(-1);
  const got = new Float64Array(M * N);
  gemm(got, 0, N, X, 0, K, view, 0, N, M, N, K, 0);
  const want = new Float64Array(M * N);
  gemmScalar(want, 0, N, X, 0, K, W, 11, N, M, N, K, 0);
  expect(sameBits(got, want)).toBe(true);
  // Writing through a view makes the whole pinned copy stale: the pin is dropped.
  gemm(W.subarray(0, M * N), 0, N, X, 0, K, random(K * N, 11), 0, N, M, N, K, 0);
  expect(pinnedOffset(W)).toBe(-1);
  expect(pinnedOffset(view)).toBe(-1);
}

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
          gemmScalar(want, 0, ldc, Arow, 0, K, B, 0, ldb, M, N, K, logical);
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
