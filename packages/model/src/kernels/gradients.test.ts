/**
 * Finite-difference checks of every op's backward ([STYLE §19](../../../../docs/STYLE.md)), the second line
 * of defence after the bit-exact golden traces.
 */
import { describe, expect, it } from 'vitest';
import { checkGradient, dot, randomValues } from '../../test/helpers/gradcheck.ts';
import { exp, log1p } from '../math/index.ts';
import { attentionBackward, attentionForward, attentionScratch } from './attention.ts';
import { crossEntropyBackward, crossEntropyForward } from './cross-entropy.ts';
import { GEMM_ADD } from './gemm-flags.ts';
import { gemm } from './gemm.ts';
import { rmsNormBackward, rmsNormForward } from './rmsnorm.ts';
import { ropeBackward, ropeForward, ropeTables } from './rope.ts';
import { swigluBackward, swigluForward } from './swiglu.ts';

describe('rmsNormBackward', () => {
  it('matches central differences for the input and the gain', () => {
    const rows = 3;
    const D = 5;
    const x = randomValues(rows * D, 1);
    const params = randomValues(D, 2).map((g) => 1 + g / 2);
    const w = randomValues(rows * D, 3);
    const out = new Float64Array(rows * D);
    const norm = { out, normalized: new Float64Array(rows * D), inv: new Float64Array(rows), st: new Float64Array(rows), ms: new Float64Array(rows), dnormalized: new Float64Array(rows * D), rowAdjoints: new Float64Array(rows * 5) };
    const f = (): number => {
      rmsNormForward(norm, x, params, rows, D, 1e-6);
      return dot(w, out);
    };
    f();
    const dx = new Float64Array(rows * D);
    const terms = new Float64Array(rows * D);
    rmsNormBackward(dx, terms, norm, w, x, params, rows, D);
    const dg = new Float64Array(D);
    for (let r = 0; r < rows; r++) for (let c = 0; c < D; c++) (dg[c] as number) += terms[r * D + c]!;
    expect(checkGradient('dx', f, x, dx)).toBeNull();
    expect(checkGradient('dgain', f, params, dg)).toBeNull();
  });
});

describe('ropeBackward', () => {
  it('matches central differences (a rotation: the inverse angle)', () => {
    const T = 4;
    const d = 4;
    const D = 8;
    const tables = ropeTables(T, d, 10000);
    const x = randomValues(T * D, 4);
    const w = randomValues(T * D, 5);
    const out = new Float64Array(T * D);
    const f = (): number => {
      ropeForward(out, x, tables, T, D, d);
      return dot(w, out);
    };
    const dx = new Float64Array(T * D);
    ropeBackward(dx, w, tables, T, D, d);
    expect(checkGradient('dx', f, x, dx)).toBeNull();
  });
});

describe('attentionBackward', () => {
  it('matches central differences for rotated queries, keys and values (causal softmax included)', () => {
    const T = 5;
    const H = 2;
    const D = 6;
    const d = D / H;
    const scale = 1 / Math.sqrt(d);
    const q = randomValues(T * D, 6);
    const k = randomValues(T * D, 7);
    const v = randomValues(T * D, 8);
    const w = randomValues(T * D, 9);
    const scratch = attentionScratch(T, d);
    const merged = new Float64Array(T * D);
    const prob = new Float64Array(H * T * T);
    const f = (): number => {
      attentionForward(merged, prob, q, k, v, T, D, H, scale, scratch, null);
      return dot(w, merged);
    };
    f();
    const dq = new Float64Array(T * D);
    const dk = new Float64Array(T * D);
    const dv = new Float64Array(T * D);
    attentionBackward(dq, dk, dv, w, prob, q, k, v, T, D, H, scale, scratch, null);
    expect(checkGradient('dq', f, q, dq)).toBeNull();
    expect(checkGradient('dk', f, k, dk)).toBeNull();
    expect(checkGradient('dv', f, v, dv)).toBeNull();
  });
});

describe('swigluBackward', () => {
  it('matches central differences for the gate (both sigmoid branches) and the up projection', () => {
    const n = 9;
    const gate = randomValues(n, 10).map((x) => x * 4);
    const up = randomValues(n, 11);
    const w = randomValues(n, 12);
    const prod = new Float64Array(n);
    const silu = new Float64Array(n);
    const sigma = new Float64Array(n);
    const f = (): number => {
      swigluForward(prod, silu, sigma, gate, up, n);
      return dot(w, prod);
    };
    f();
    const dgate = new Float64Array(n);
    const dup = new Float64Array(n);
    swigluBackward(dgate, dup, new Float64Array(n), w, gate, sigma, silu, up, n);
    expect(gate.some((x) => x < 0) && gate.some((x) => x > 0)).toBe(true);
    expect(checkGradient('dgate', f, gate, dgate)).toBeNull();
    expect(checkGradient('dup', f, up, dup)).toBeNull();
  });
});

describe('crossEntropyBackward', () => {
  it('matches central differences of the mean loss', () => {
    const rows = 3;
    const V = 6;
    const logits = randomValues(rows * V, 13).map((x) => x * 3);
    const targets = [2, 0, 5];
    const rowLoss = new Float64Array(rows);
    const prob = new Float64Array(rows * V);
    const f = (): number => {
      crossEntropyForward(rowLoss, prob, logits, targets, 0, rows, V);
      return (rowLoss[0]! + rowLoss[1]! + rowLoss[2]!) / rows;
    };
    f();
    const g = new Float64Array(rows * V);
    crossEntropyBackward(g, prob, targets, 0, rows, V, 1 / rows);
    expect(checkGradient('dlogits', f, logits, g)).toBeNull();
  });

  it('handles tied maxima: the first tied class is skipped in the tail, the later ones count', () => {
    const rowLoss = new Float64Array(1);
    const prob = new Float64Array(3);
    crossEntropyForward(rowLoss, prob, Float64Array.of(1, 1, 0), [0], 0, 1, 3);
    // ln(e + e + 1) − 1 = ln(2 + e^-1): tail = exp(0) + exp(-1) after skipping the first maximum.
    expect(rowLoss[0]).toBe(log1p(1 + exp(-1)));
    expect(prob[0]).toBe(prob[1]);
  });
});

describe('gemm as a matrix product', () => {
  it('gives the gradients of y = x·W: dx = dy·Wᵀ and dW = xᵀ·dy', () => {
    const T = 3;
    const n = 4;
    const m = 5;
    const x = randomValues(T * n, 14);
    const W = randomValues(n * m, 15);
    const w = randomValues(T * m, 16);
    const y = new Float64Array(T * m);
    const f = (): number => {
      gemm(y, 0, m, x, 0, n, W, 0, m, T, m, n, 0);
      return dot(w, y);
    };
    const Wt = new Float64Array(m * n);
    for (let i = 0; i < n; i++) for (let o = 0; o < m; o++) Wt[o * n + i] = W[i * m + o]!;
    const dx = new Float64Array(T * n).fill(1);
    gemm(dx, 0, n, w, 0, m, Wt, 0, n, T, n, m, GEMM_ADD);
    const xT = new Float64Array(n * T);
    for (let t = 0; t < T; t++) for (let i = 0; i < n; i++) xT[i * T + t] = x[t * n + i]!;
    const dW = new Float64Array(n * m);
    gemm(dW, 0, m, xT, 0, T, w, 0, m, n, m, T, 0);
    expect(checkGradient('dx', f, x, dx.map((v) => v - 1))).toBeNull();
    expect(checkGradient('dW', f, W, dW)).toBeNull();
  });
});
