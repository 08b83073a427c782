/**
 * The batch-wide reductions of a training pass, each in the reference's fixed
 * order (../../../../docs/spec/backward.md §1, §4.2, §4.4, §4.6; ../../../../docs/spec/model.md §13):
 *
 * - weight gradients: `(…((0 + S_0) + S_1) + …) + S_{B−1}` elementwise;
 * - RMSNorm gains: one flat sum over all B·T rows in row-major order;
 * - embedding: `(0 + dE_head) + dE_lookup`, the lookup part adding each
 *   position's row into its token's row in row-major position order;
 * - loss: the row losses summed in row-major order, divided by N.
 */
import type { WasmFold } from '../kernels/wasm-fold.ts';
import type { WeightGradients } from '../kernels/workspace.ts';
import type { ParameterEntry, ParameterKind, ParameterLayout } from '../layout.ts';
import { matrix, type Matrix } from '../reference/matrix.ts';
import type { Gradients } from '../reference/model.ts';

/** Shared (or thread-local) buffers of one batch. */
export interface BatchBuffers {
  /** Sequences the buffers hold. */
  readonly rows: number;
  /** Positions per sequence the buffers hold. */
  readonly columns: number;
  /** Number of partial slots (P elements each). */
  readonly slots: number;
  /** (B·T) per-row losses. */
  readonly rowLoss: Float64Array;
  /**
   * (slots, P) per-sequence weight partials: the slots of sequences whose
   * owner (below) is 0. Empty when every worker keeps its partials in a
   * region of its own (PhaseContext `regions`: decoder.ts).
   */
  readonly partials: Float64Array;
  /**
   * (slots) where the partial of the wave's sequence s is: 0 — slot s of
   * {@link partials}; w ≥ 1 — slot s of worker w's region. Written by the
   * thread that ran the sequence.
   */
  readonly owners: Int32Array;
  /** (2L+1, B·T, D) gain terms. */
  readonly gainTerms: Float64Array;
  /** (B·T, D) adjoints of the embedding output. */
  readonly dx0: Float64Array;
  /** (P) the pass adjoint being reduced. */
  readonly adjoint: Float64Array;
  /** (V·D) scratch for the embedding lookup gradient. */
  readonly lookup: Float64Array;
}

/** The {@link sequenceGradients} built for each batch buffers' rows, with the weight views they were built on (reused while those stay). */
const built = new WeakMap<BatchBuffers, Map<number, Gradients>>();

/**
 * Where one sequence's backward pass writes: its weight gradient S_b into
 * `weights`, its gain terms and its input's adjoint into its rows of the
 * batch buffers (built once per buffers, row, views and flag: reused).
 *
 * @param weights - the weight-gradient views (the sequence's slot, or a workspace's accumulator).
 * @param buffers - the batch buffers.
 * @param s - the sequence's first row in the batch, its rows (T), whether S_b is added, and 1/N.
 * @returns the gradients.
 */
export function sequenceGradients(weights: WeightGradients, buffers: BatchBuffers, s: { readonly row: number; readonly rows: number; readonly add: boolean; readonly scale: number }): Gradients {
  let rows = built.get(buffers);
  if (rows === undefined) built.set(buffers, (rows = new Map()));
  const old = rows.get(s.row);
  if (old !== undefined && old.embedding === weights.embedding && old.add === s.add && old.scale === s.scale && old.dx0.rows === s.rows) return old;
  const n = buffers.rows * buffers.columns;
  const D = buffers.dx0.length / n;
  const gain = (g: number): Matrix => matrix(buffers.gainTerms, s.rows, D, D, (g * n + s.row) * D);
  const g: Gradients = {
    embedding: weights.embedding,
    blocks: weights.blocks.map((w, l) => ({ ...w, attentionNorm: gain(2 * l), ffnNorm: gain(2 * l + 1) })),
    finalNorm: gain(2 * weights.blocks.length),
    dx0: matrix(buffers.dx0, s.rows, D, D, s.row * D),
    add: s.add,
    scale: s.scale,
  };
  rows.set(s.row, g);
  return g;
}

/** Allocates a Float64Array, on a SharedArrayBuffer when `shared`. */
export function allocateF64(length: number, shared: boolean): Float64Array {
  return shared ? new Float64Array(new SharedArrayBuffer(length * 8)) : new Float64Array(length);
}

/**
 * Allocates batch buffers.
 * @param layout - parameter layout.
 * @param layers - number of blocks.
 * @param D - model width.
 * @param rows - B.
 * @param columns - T.
 * @param slots - partial slots.
 * @param shared - allocate on SharedArrayBuffers (worker threads).
 * @param ownPartials - whether {@link BatchBuffers.partials} holds the slots (false: the workers' regions do, it is empty).
 * @param adjoint - where the adjoint goes (P elements: a view of a worker's memory, parallel/batch-pass.ts `arenaAdjoint`), or null for an array of its own.
 * @returns the buffers.
 */
export function allocateBatchBuffers(
  layout: ParameterLayout,
  layers: number,
  D: number,
  rows: number,
  columns: number,
  slots: number,
  shared: boolean,
  ownPartials = true,
  adjoint: Float64Array | null = null,
): BatchBuffers {
  const n = rows * columns;
  return {
    rows,
    columns,
    slots,
    rowLoss: allocateF64(n, shared),
    partials: allocateF64(ownPartials ? slots * layout.size : 0, shared),
    owners: shared ? new Int32Array(new SharedArrayBuffer(slots * 4)) : new Int32Array(slots),
    gainTerms: allocateF64((2 * layers + 1) * n * D, shared),
    dx0: allocateF64(n * D, shared),
    adjoint: adjoint ?? allocateF64(layout.size, shared),
    lookup: allocateF64((layout.entries[0] as { length: number }).length, shared),
  };
}

/**
 * Below this much work ({@link reduceWork}: about one unit per element read
 * by the fold) the calling thread reduces alone, since waking the worker
 * threads would cost more than their share of the work. The bits never
 * depend on it (tests force either path: ../parallel/tuning.ts).
 */
export const REDUCE_LOCAL_ELEMENTS: number = 1 << 19;

/**
 * The work of reducing one element, in units of about one element read by the
 * fold (kernels/wasm-fold.ts), for the elements of a kind of tensor: each of
 * the `partials` read; when the reduction finishes, the finiteness scan and
 * the write into the gradients (JavaScript, 3), a gain element's column sum
 * over the n rows (2 a row), an embedding element's zeroing, lookup add and
 * its share of the n scattered rows (4 + 2·n/V). From a 2-thread medium step
 * (partials 0.6 ns an element each, scan and write 1.8, gain sums 1.2 a row,
 * embedding about 6 ns an element): the slices' work, not their length, is
 * what the threads should share.
 */
function elementWork(kind: ParameterKind, partials: number, finish: boolean, n: number, V: number): number {
  if (!finish) return partials;
  return partials + 3 + (kind === 'gain' ? 2 * n : kind === 'embedding' ? 4 + (2 * n) / V : 0);
}

/**
 * @param layout - parameter layout.
 * @param partials - the partials the reduction adds.
 * @param finish - whether it finishes the adjoint too.
 * @param n - B·T rows.
 * @returns the work of the whole reduction (units of {@link elementWork}).
 */
export function reduceWork(layout: ParameterLayout, partials: number, finish: boolean, n: number): number {
  const V = (layout.entries[0] as ParameterEntry).shape[0] as number;
  let work = 0;
  for (const e of layout.entries) work += e.length * elementWork(e.kind, partials, finish, n, V);
  return work;
}

/**
 * Where the slices of a reduction shared by `slices` threads begin: whole
 * D-element rows (every tensor is a multiple of D long, so a slice finishes
 * only its own elements), cut so that each slice holds about the same work
 * ({@link elementWork}; within one row's work of an even share). The bits do
 * not depend on the cuts.
 *
 * @param layout - parameter layout.
 * @param D - model width.
 * @param slices - slices.
 * @param partials - the partials the reduction adds.
 * @param finish - whether it finishes the adjoint too.
 * @param n - B·T rows.
 * @returns slices + 1 element offsets, from 0 to P, non-decreasing, each a multiple of D.
 */
export function reduceSlices(layout: ParameterLayout, D: number, slices: number, partials: number, finish: boolean, n: number): number[] {
  const V = (layout.entries[0] as ParameterEntry).shape[0] as number;
  const total = reduceWork(layout, partials, finish, n);
  const cuts = [0];
  let before = 0; // the work of the entries before e
  let s = 1;
  for (const e of layout.entries) {
    const row = D * elementWork(e.kind, partials, finish, n, V);
    const rows = e.length / D;
    // Slice s starts at the first row before which at least s/slices of the work lies.
    for (; s < slices && before + rows * row >= (total * s) / slices; s++) {
      cuts.push(e.offset + (row > 0 ? D * Math.min(rows, Math.max(0, Math.ceil(((total * s) / slices - before) / row))) : 0));
    }
    before += rows * row;
  }
  while (cuts.length <= slices) cuts.push(layout.size);
  cuts[slices] = layout.size;
  return cuts;
}

/** Elements reduced per block of {@link reducePartials}: the accumulator block stays in cache across the sequences. */
const REDUCE_BLOCK = 2048;

/**
 * Adds the partial of one sequence into the adjoint over elements [from, to).
 * The first sequence (b = 0) is copied (`0 + S_0` equals S_0: a sum started at
 * +0.0 is never −0.0). Gain slots carry zeros here and are overwritten later.
 *
 * @param adjoint - (P) accumulator.
 * @param partials - partial slots.
 * @param slotOff - offset of this sequence's slot.
 * @param first - whether this is sequence 0.
 * @param from - first element.
 * @param to - end element (exclusive).
 */
export function reducePartial(adjoint: Float64Array, partials: Float64Array, slotOff: number, first: boolean, from: number, to: number): void {
  if (first) {
    adjoint.set(partials.subarray(slotOff + from, slotOff + to), from);
    return;
  }
  for (let i = from; i < to; i++) (adjoint[i] as number) += partials[slotOff + i] as number;
}

/**
 * Adds the partials `slots[0 …]` (each a P-element view laid out like the
 * parameters, in sequence order) into the adjoint over elements [from, to):
 * element i becomes `(…(adjoint[i] + S_first[i]) + …) + S_last[i]`, exactly
 * the order of one {@link reducePartial} per slot, in cache-sized blocks of
 * elements. Four, two or one slots at a time go through `fold` — a
 * WebAssembly kernel with the same additions (kernels/wasm-fold.ts) — when the
 * adjoint and those slots are views of its memory, else through JavaScript.
 *
 * @param adjoint - (P) accumulator.
 * @param slots - the partials to add, in order.
 * @param first - whether `slots[0]` holds sequence 0 (copied, not added).
 * @param from - first element.
 * @param to - end element (exclusive).
 * @param fold - the fold kernel on the adjoint's memory, or null.
 * @returns how many of the slots were added through `fold` (0 when [from, to) is empty).
 */
export function reducePartials(adjoint: Float64Array, slots: readonly Float64Array[], first: boolean, from: number, to: number, fold: WasmFold | null = null): number {
  const n = slots.length;
  // Whether each slot is in the fold's memory with the adjoint: the same for every block, so decided once; a group folds when all its slots are.
  const inFold = slots.map((p) => fold !== null && adjoint.buffer === fold.buffer && p.buffer === fold.buffer);
  let folded = 0;
  for (let lo = from; lo < to; lo += REDUCE_BLOCK) {
    const hi = Math.min(to, lo + REDUCE_BLOCK);
    // The slots the fold adds, counted in the first block (every block groups them alike).
    const count = lo === from ? 1 : 0;
    let s = 0;
    if (first && n > 0) {
      reducePartial(adjoint, slots[0] as Float64Array, 0, true, lo, hi);
      s++;
    }
    // Four slots per pass over the block, then two, then one: the additions of each element stay in slot order.
    for (; s + 3 < n; s += 4) {
      const p1 = slots[s] as Float64Array;
      const p2 = slots[s + 1] as Float64Array;
      const p3 = slots[s + 2] as Float64Array;
      const p4 = slots[s + 3] as Float64Array;
      if (inFold[s] && inFold[s + 1] && inFold[s + 2] && inFold[s + 3]) {
        (fold as WasmFold).add(adjoint, [p1, p2, p3, p4], lo, hi);
        folded += 4 * count;
        continue;
      }
      for (let i = lo; i < hi; i++) {
        adjoint[i] = (adjoint[i] as number) + (p1[i] as number) + (p2[i] as number) + (p3[i] as number) + (p4[i] as number);
      }
    }
    for (; s + 1 < n; s += 2) {
      const p1 = slots[s] as Float64Array;
      const p2 = slots[s + 1] as Float64Array;
      if (inFold[s] && inFold[s + 1]) {
        (fold as WasmFold).add(adjoint, [p1, p2], lo, hi);
        folded += 2 * count;
      } else for (let i = lo; i < hi; i++) adjoint[i] = (adjoint[i] as number) + (p1[i] as number) + (p2[i] as number);
    }
    if (s < n) {
      const p1 = slots[s] as Float64Array;
      if (inFold[s]) {
        (fold as WasmFold).add(adjoint, [p1], lo, hi);
        folded += count;
      } else reducePartial(adjoint, p1, 0, false, lo, hi);
    }
  }
  return folded;
}

/**
 * Column sums of a (rows, width) block: `dst[off + c] = (…((+0 + src[t0 + c])
 * + src[t0 + width + c]) + …)` over the rows in order — one flat sum per
 * column, eight columns at a time in registers (reading the block once, a
 * cache line per row and band), then the remaining columns one by one.
 *
 * @param dst - destination.
 * @param off - offset of the `width` sums in dst.
 * @param src - the rows.
 * @param t0 - offset of the first row in src.
 * @param rows - rows to sum.
 * @param width - columns (and the row stride).
 */
export function columnSums(dst: Float64Array, off: number, src: Float64Array, t0: number, rows: number, width: number): void {
  let c = 0;
  for (; c + 7 < width; c += 8) {
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    let s3 = 0;
    let s4 = 0;
    let s5 = 0;
    let s6 = 0;
    let s7 = 0;
    let t = t0 + c;
    for (let r = 0; r < rows; r++) {
      s0 += src[t] as number;
      s1 += src[t + 1] as number;
      s2 += src[t + 2] as number;
      s3 += src[t + 3] as number;
      s4 += src[t + 4] as number;
      s5 += src[t + 5] as number;
      s6 += src[t + 6] as number;
      s7 += src[t + 7] as number;
      t += width;
    }
    dst[off + c] = s0;
    dst[off + c + 1] = s1;
    dst[off + c + 2] = s2;
    dst[off + c + 3] = s3;
    dst[off + c + 4] = s4;
    dst[off + c + 5] = s5;
    dst[off + c + 6] = s6;
    dst[off + c + 7] = s7;
  }
  for (; c < width; c++) {
    let s = 0;
    let t = t0 + c;
    for (let r = 0; r < rows; r++) {
      s += src[t] as number;
      t += width;
    }
    dst[off + c] = s;
  }
}

/**
 * Finishes the elements [from, to) of the adjoint after their weight partials
 * were reduced: the gain sums of the gain vectors that start in the slice and
 * the embedding lookup part of the embedding rows in it, then a finiteness
 * scan of the slice. With `from` and `to` multiples of D (every tensor length
 * and offset is one), slices run by different threads touch disjoint elements
 * and every element gets the additions of {@link reduceGainsAndEmbedding}, in its order.
 *
 * @param adjoint - (P) accumulator (weights of the slice already reduced).
 * @param buffers - batch buffers with gain terms, input adjoints and the lookup scratch.
 * @param layout - parameter layout.
 * @param tokens - (B·T) input ids.
 * @param n - B·T rows.
 * @param D - model width.
 * @param from - first element (a multiple of D).
 * @param to - end element (exclusive, a multiple of D).
 * @returns the index of the first non-finite element of the slice, or −1.
 */
export function finishSlice(
  adjoint: Float64Array,
  buffers: BatchBuffers,
  layout: ParameterLayout,
  tokens: ArrayLike<number>,
  n: number,
  D: number,
  from: number,
  to: number,
): number {
  const stride = buffers.rows * buffers.columns * D;
  const terms = buffers.gainTerms;
  let g = 0;
  const gain = (off: number): void => {
    if (off >= from && off < to) columnSums(adjoint, off, terms, g * stride, n, D);
    g++;
  };
  for (const b of layout.blocks) {
    gain(b.attentionNorm);
    gain(b.ffnNorm);
  }
  gain(layout.finalNorm);
  const e = layout.embedding;
  const lo = Math.max(from, e);
  const hi = Math.min(to, e + buffers.lookup.length);
  if (lo < hi) {
    const lookup = buffers.lookup;
    lookup.fill(0, lo - e, hi - e);
    const dx0 = buffers.dx0;
    for (let r = 0; r < n; r++) {
      const row = (tokens[r] as number) * D;
      if (row < lo - e || row >= hi - e) continue;
      const src = r * D;
      for (let c = 0; c < D; c++) (lookup[row + c] as number) += dx0[src + c] as number;
    }
    for (let i = lo - e; i < hi - e; i++) adjoint[e + i] = (adjoint[e + i] as number) + (lookup[i] as number);
  }
  return firstNonFinite(adjoint, from, to);
}

/**
 * Finishes the adjoint after every weight partial was reduced: gain sums and
 * the embedding lookup part ({@link finishSlice} over all elements).
 *
 * @param adjoint - (P) accumulator (weights already reduced).
 * @param buffers - batch buffers with gain terms and input adjoints.
 * @param layout - parameter layout.
 * @param tokens - (B·T) input ids.
 * @param n - B·T rows.
 * @param D - model width.
 * @param V - vocabulary size.
 * @param lookup - (V·D) scratch for the lookup gradient.
 */
export function reduceGainsAndEmbedding(
  adjoint: Float64Array,
  buffers: BatchBuffers,
  layout: ParameterLayout,
  tokens: ArrayLike<number>,
  n: number,
  D: number,
  V: number,
  lookup: Float64Array,
): void {
  finishSlice(adjoint, { ...buffers, lookup: lookup.subarray(0, V * D) }, layout, tokens, n, D, 0, adjoint.length);
}

/**
 * The batch mean loss: row losses summed in order from +0.0, one division by N (canonical +0).
 * @param rowLoss - (≥ n) row losses.
 * @param n - N = B·T.
 * @returns the loss.
 */
export function meanLoss(rowLoss: Float64Array, n: number): number {
  let total = 0;
  for (let r = 0; r < n; r++) total += rowLoss[r] as number;
  return total / n + 0;
}

/**
 * Index of the first non-finite element of `values[from … to−1]`, or −1.
 * Eight values at a time: `v − v` is +0 for every finite v and NaN for ±∞ and
 * NaN, so the sum of eight of them is +0 exactly when all eight are finite;
 * a block that is not is searched one by one.
 *
 * @param values - values to scan.
 * @param from - first index (default 0).
 * @param to - end index, exclusive (default the length).
 * @returns the index or −1.
 */
export function firstNonFinite(values: Float64Array, from: number = 0, to: number = values.length): number {
  let i = from;
  for (; i + 8 <= to; i += 8) {
    const a0 = values[i] as number, a1 = values[i + 1] as number, a2 = values[i + 2] as number, a3 = values[i + 3] as number;
    const a4 = values[i + 4] as number, a5 = values[i + 5] as number, a6 = values[i + 6] as number, a7 = values[i + 7] as number;
    if (a0 - a0 + (a1 - a1) + (a2 - a2 + (a3 - a3)) + (a4 - a4 + (a5 - a5) + (a6 - a6 + (a7 - a7))) !== 0) break;
  }
  for (; i < to; i++) {
    const v = values[i] as number;
    if (v - v !== 0) return i;
  }
  return -1;
}
