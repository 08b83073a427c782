/**
 * Finite-difference checks of every reference layer's backward ([STYLE §19](../../../../docs/STYLE.md)), the
 * second line of defence after the bit-exact golden traces; and the linear layer's products against its two
 * adjoint formulas.
 */
import { describe, expect, it } from 'vitest';
import { checkGradient, dot, gradientMismatches, randomValues } from '../../test/helpers/gradcheck.ts';
import { exp, log1p } from '../math/index.ts';
import { ADD_DINP, attentionBackward, attentionForward, crossEntropyBackward, crossEntropyForward, linearBackward, linearForward, rmsNormBackward, rmsNormForward, ropeBackward, ropeForward, ropeTables, swigluBackward, swigluForward, type NormActivations } from './layers.ts';
import { matrix, type Matrix } from './matrix.ts';

const rows = (x: Float64Array, columns: number): Matrix => matrix(x, x.length / columns, columns);

describe('rmsNormBackward', () => {
  it('matches central differences for the input and the gain', () => {
    const T = 3;
    const D = 5;
    const x = randomValues(T * D, 1);
    const gain = randomValues(D, 2).map((g) => 1 + g / 2);
    const w = randomValues(T * D, 3);
    const out = new Float64Array(T * D);
    const n: NormActivations = { out: rows(out, D), normalized: rows(new Float64Array(T * D), D), inv: new Float64Array(T), st: new Float64Array(T), ms: new Float64Array(T), dnormalized: rows(new Float64Array(T * D), D), rowAdjoints: new Float64Array(T * 5) };
    const f = (): number => {
      rmsNormForward(n, rows(x, D), gain, 1e-6);
      return dot(w, out);
    };
    f();
    const dx = new Float64Array(T * D);
    const terms = new Float64Array(T * D);
    rmsNormBackward(rows(dx, D), rows(terms, D), n, rows(w, D), rows(x, D), gain);
    const dg = new Float64Array(D);
    for (let r = 0; r < T; r++) for (let c = 0; c < D; c++) (dg[c] as number) += terms[r * D + c]!;
    expect(gradientMismatches(f, { dx: [x, dx], dgain: [gain, dg] })).toEqual([]);
  });
});

describe('ropeBackward', () => {
  it('matches central differences (a rotation: the inverse angle), from position 0 and from a later one', () => {
    const T = 4;
    const D = 8;
    const tables = ropeTables(T + 3, 4, 10000);
    const x = randomValues(T * D, 4);
    const w = randomValues(T * D, 5);
    const out = new Float64Array(T * D);
    for (const first of [0, 3]) {
      const f = (): number => {
        ropeForward(rows(out, D), rows(x, D), tables, first);
        return dot(w, out);
      };
      const dx = new Float64Array(T * D);
      ropeBackward(rows(dx, D), rows(w, D), tables, first);
      expect(checkGradient(`dx from ${first}`, f, x, dx)).toBeNull();
    }
  });
});

describe('attentionBackward', () => {
  it('matches central differences for rotated queries, keys and values (causal softmax included)', () => {
    const T = 5;
    const H = 2;
    const D = 6;
    const scale = 1 / Math.sqrt(D / H);
    const [q, k, v, w] = [6, 7, 8, 9].map((seed) => randomValues(T * D, seed)) as [Float64Array, Float64Array, Float64Array, Float64Array];
    const merged = new Float64Array(T * D);
    const att = { q: rows(q, D), k: rows(k, D), v: rows(v, D), prob: matrix(new Float64Array(H * T * T), H * T, T), trace: null };
    const f = (): number => {
      attentionForward(rows(merged, D), att, H, scale);
      return dot(w, merged);
    };
    f();
    const [dq, dk, dv] = [new Float64Array(T * D), new Float64Array(T * D), new Float64Array(T * D)];
    attentionBackward({ q: rows(dq, D), k: rows(dk, D), v: rows(dv, D) }, rows(w, D), att, H, scale);
    expect(gradientMismatches(f, { dq: [q, dq], dk: [k, dk], dv: [v, dv] })).toEqual([]);
  });
});

describe('swigluBackward', () => {
  it('matches central differences for the gate (both sigmoid branches) and the up projection', () => {
    const n = 9;
    const gate = randomValues(n, 10).map((x) => x * 4);
    const up = randomValues(n, 11);
    const w = randomValues(n, 12);
    const [prod, silu, sigma] = [new Float64Array(n), new Float64Array(n), new Float64Array(n)];
    const a = { gate: rows(gate, n), up: rows(up, n), prod: rows(prod, n), silu: rows(silu, n), sigma: rows(sigma, n) };
    const f = (): number => {
      swigluForward(a);
      return dot(w, prod);
    };
    f();
    const [dgate, dup] = [new Float64Array(n), new Float64Array(n)];
    swigluBackward({ gate: rows(dgate, n), up: rows(dup, n), silu: rows(new Float64Array(n), n), prod: rows(w, n) }, a);
    expect(gate.some((x) => x < 0) && gate.some((x) => x > 0)).toBe(true);
    expect(gradientMismatches(f, { dgate: [gate, dgate], dup: [up, dup] })).toEqual([]);
  });
});

describe('crossEntropyBackward', () => {
  it('matches central differences of the mean loss', () => {
    const T = 3;
    const V = 6;
    const logits = randomValues(T * V, 13).map((x) => x * 3);
    const targets = Int32Array.of(2, 0, 5);
    const rowLoss = new Float64Array(T);
    const prob = new Float64Array(T * V);
    const f = (): number => {
      crossEntropyForward(rowLoss, rows(prob, V), rows(logits, V), targets);
      return (rowLoss[0]! + rowLoss[1]! + rowLoss[2]!) / T;
    };
    f();
    const g = new Float64Array(T * V);
    crossEntropyBackward(rows(g, V), rows(prob, V), targets, 1 / T);
    expect(checkGradient('dlogits', f, logits, g)).toBeNull();
  });

  it('handles tied maxima: the first tied class is skipped in the tail, the later ones count', () => {
    const rowLoss = new Float64Array(1);
    const prob = new Float64Array(3);
    crossEntropyForward(rowLoss, rows(prob, 3), rows(Float64Array.of(1, 1, 0), 3), Int32Array.of(0));
    // ln(e + e + 1) − 1 = ln(2 + e^-1): tail = exp(0) + exp(-1) after skipping the first maximum.
    expect(rowLoss[0]).toBe(log1p(1 + exp(-1)));
    expect(prob[0]).toBe(prob[1]);
  });
});

describe('linearBackward', () => {
  it('gives the gradients of y = x·W: dx = dy·Wᵀ (added with ADD_DINP) and dW = xᵀ·dy', () => {
    const T = 3;
    const n = 4;
    const m = 5;
    const x = randomValues(T * n, 14);
    const W = randomValues(n * m, 15);
    const w = randomValues(T * m, 16);
    const y = new Float64Array(T * m);
    const Wt = new Float64Array(m * n);
    for (let i = 0; i < n; i++) for (let o = 0; o < m; o++) Wt[o * n + i] = W[i * m + o]!;
    const weight = { w: rows(W, m), t: rows(Wt, n) };
    const f = (): number => {
      linearForward(rows(y, m), rows(x, n), weight);
      return dot(w, y);
    };
    const dx = new Float64Array(T * n).fill(1);
    const dW = new Float64Array(n * m);
    linearBackward(rows(dx, n), rows(dW, m), rows(x, n), rows(w, m), weight, ADD_DINP);
    expect(gradientMismatches(f, { dx: [x, dx.map((v) => v - 1)], dW: [W, dW] })).toEqual([]);
  });
});
