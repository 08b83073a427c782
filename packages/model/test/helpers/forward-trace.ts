/**
 * Replays forward-trace.json (../../../../docs/spec/model.md §15, ../../../../docs/spec/backward.md §6): the initial ch33
 * model on the sequence [0, 1] with targets [1, 2], comparing every activation
 * and every node's pass adjoint of the reference tape with our buffers.
 */
import { Decoder, FIXTURE_DECODER_CONFIG } from '../../src/index.ts';
import { allocateBatchBuffers, reduceGainsAndEmbedding, reducePartial } from '../../src/internal/batch-reduce.ts';
import { DecoderPass } from '../../src/decoder-pass.ts';
import { firstMismatch, fixture } from './bits.ts';

interface Tensor {
  readonly shape: number[];
  readonly bits: string[];
}
interface NormTrace {
  readonly mean_square: Tensor;
  readonly inverse_rms: Tensor;
  readonly normalized: Tensor;
  readonly output: Tensor;
}
interface GraphNode {
  readonly index: number;
  readonly op: string;
  readonly shape: number[];
  readonly parameter?: string;
  readonly pass_adjoint_bits?: string[] | null;
}
/** The parts of forward-trace.json the replay reads. */
export interface ForwardTrace {
  readonly input_token_ids: number[];
  readonly targets: number[];
  readonly rope_tables: { inverse_frequencies: Tensor; cosines: Tensor; sines: Tensor };
  readonly [key: string]: unknown;
  readonly loss: { bits: string };
  readonly attention_scale: { bits: string };
  readonly gradients: { name: string; bits: string[] }[];
  readonly backward_graph: { nodes: GraphNode[] };
}

/** One comparison: a label, our values, the reference bits. */
export interface Check {
  readonly name: string;
  readonly actual: ArrayLike<number>;
  readonly expected: readonly string[];
}

/** [T, D] (one sequence) → [H, T, d]: the head split. */
function heads(x: Float64Array, T: number, H: number, d: number): Float64Array {
  const out = new Float64Array(T * H * d);
  for (let h = 0; h < H; h++) for (let t = 0; t < T; t++) for (let c = 0; c < d; c++) out[(h * T + t) * d + c] = x[t * H * d + h * d + c] as number;
  return out;
}

/** [T, D] → [H, d, T]: the transposed key lanes. */
function keysT(x: Float64Array, T: number, H: number, d: number): Float64Array {
  const out = new Float64Array(T * H * d);
  for (let h = 0; h < H; h++) for (let c = 0; c < d; c++) for (let t = 0; t < T; t++) out[(h * d + c) * T + t] = x[t * H * d + h * d + c] as number;
  return out;
}

/** Repeats each of `rows` values `width` times (a [rows, 1] adjoint broadcast to [rows, width]). */
function broadcast(values: Float64Array, stride: number, index: number, rows: number, width: number): Float64Array {
  const out = new Float64Array(rows * width);
  for (let r = 0; r < rows; r++) out.fill(values[r * stride + index] as number, r * width, r * width + width);
  return out;
}

function column(values: Float64Array, stride: number, index: number, rows: number): Float64Array {
  return broadcast(values, stride, index, rows, 1);
}

/**
 * Runs the trace case and lists every comparison (activations, node adjoints,
 * gradients). The caller checks that none mismatches.
 */
export function forwardTraceChecks(): Check[] {
  const trace = fixture<ForwardTrace>('forward-trace.json');
  const config = FIXTURE_DECODER_CONFIG;
  const { modelWidth: D, heads: H, vocabularySize: V } = config;
  const d = D / H;
  const T = trace.input_token_ids.length;
  const inputs = Int32Array.from(trace.input_token_ids);
  const targets = Int32Array.from(trace.targets);

  const model = new Decoder(config);
  model.initialize(33n);
  const loss = model.trainStep({ inputs, targets, rows: 1, columns: T });

  // The same pass on a tracing engine, reduced exactly like the decoder does.
  const engine = new DecoderPass(config, true);
  engine.prepare(model.parameters, -1);
  const seq = { tokens: inputs, targets, offset: 0, positions: T };
  engine.forward(seq);
  const buffers = allocateBatchBuffers(engine.layout, config.layers, D, 1, T, 1, false);
  engine.backward(seq, 1.0 / T, {
    rowLoss: buffers.rowLoss,
    rowLossOff: 0,
    partial: buffers.partials,
    partialOff: 0,
    accumulate: false,
    gainTerms: buffers.gainTerms,
    gainStride: T * D,
    gainOff: 0,
    dx0: buffers.dx0,
    dx0Off: 0,
  });
  const headPart = buffers.partials.slice(0, V * D);
  reducePartial(buffers.adjoint, buffers.partials, 0, true, 0, engine.layout.size);
  reduceGainsAndEmbedding(buffers.adjoint, buffers, engine.layout, inputs, T, D, V, new Float64Array(V * D));

  const a = engine.blocks[0]!;
  const g = engine.blockAdjoints[0]!;
  const tr = a.trace!;
  const checks: Check[] = [];
  const t = (key: string): Tensor => trace[key] as Tensor;
  const add = (name: string, actual: ArrayLike<number>, expected: readonly string[]): void => {
    checks.push({ name, actual, expected });
  };
  const norm = (key: string, n: { ms: Float64Array; inv: Float64Array; normalized: Float64Array; out: Float64Array }): void => {
    const nt = trace[key] as NormTrace;
    add(`${key}.mean_square`, n.ms.subarray(0, T), nt.mean_square.bits);
    add(`${key}.inverse_rms`, n.inv.subarray(0, T), nt.inverse_rms.bits);
    add(`${key}.normalized`, n.normalized.subarray(0, T * D), nt.normalized.bits);
    add(`${key}.output`, n.out.subarray(0, T * D), nt.output.bits);
  };

  // Forward activations, in model order.
  add('rope_tables.inverse_frequencies', engine.rope.inverseFrequencies, trace.rope_tables.inverse_frequencies.bits);
  add('rope_tables.cosines', engine.rope.cosines, trace.rope_tables.cosines.bits);
  add('rope_tables.sines', engine.rope.sines, trace.rope_tables.sines.bits);
  add('embedding', engine.hs[0]!.subarray(0, T * D), t('embedding').bits);
  norm('attention_norm', a.attentionNorm);
  add('q_linear', a.q.subarray(0, T * D), t('q_linear').bits);
  add('k_linear', a.k.subarray(0, T * D), t('k_linear').bits);
  add('v_linear', a.v.subarray(0, T * D), t('v_linear').bits);
  add('q_heads', heads(a.q, T, H, d), t('q_heads').bits);
  add('k_heads', heads(a.k, T, H, d), t('k_heads').bits);
  add('v_heads', heads(a.v, T, H, d), t('v_heads').bits);
  add('q_rotated', heads(a.qr, T, H, d), t('q_rotated').bits);
  add('k_rotated', heads(a.kr, T, H, d), t('k_rotated').bits);
  add('raw_scores', tr.raw.subarray(0, H * T * T), t('raw_scores').bits);
  add('attention_scale', [engine.scale], [trace.attention_scale.bits]);
  add('scaled_scores', tr.scaled.subarray(0, H * T * T), t('scaled_scores').bits);
  add('attention_weights', a.prob.subarray(0, H * T * T), t('attention_weights').bits);
  add('head_outputs', heads(a.merged, T, H, d), t('head_outputs').bits);
  add('merged_heads', a.merged.subarray(0, T * D), t('merged_heads').bits);
  add('attention_output', a.attention.subarray(0, T * D), t('attention_output').bits);
  add('after_attention_residual', a.h1.subarray(0, T * D), t('after_attention_residual').bits);
  norm('ffn_norm', a.ffnNorm);
  add('ffn_gate_linear', a.gate.subarray(0, T * config.feedForwardWidth), t('ffn_gate_linear').bits);
  add('ffn_gate_silu', a.silu.subarray(0, T * config.feedForwardWidth), t('ffn_gate_silu').bits);
  add('ffn_up', a.up.subarray(0, T * config.feedForwardWidth), t('ffn_up').bits);
  add('ffn_product', a.prod.subarray(0, T * config.feedForwardWidth), t('ffn_product').bits);
  add('ffn_output', a.ffn.subarray(0, T * D), t('ffn_output').bits);
  add('block_output', engine.hs[1]!.subarray(0, T * D), t('block_output').bits);
  norm('final_norm', engine.finalNorm);
  add('logits', engine.logits.subarray(0, T * V), t('logits').bits);
  add('loss (decoder)', [loss], [trace.loss.bits]);

  // Pass adjoints of every tape node (../../../../docs/spec/backward.md §2).
  const F = config.feedForwardWidth;
  const grad = (name: string): Float64Array => {
    const e = engine.layout.entries[engine.layout.indexByName.get(name)!]!;
    return buffers.adjoint.subarray(e.offset, e.offset + e.length);
  };
  const rows = (ra: Float64Array, i: number): Float64Array => column(ra, 5, i, T);
  const normNodes = (base: number, n: { rowAdjoints: Float64Array; dnormalized: Float64Array }): [number, ArrayLike<number>][] => [
    [base, broadcast(n.rowAdjoints, 5, 4, T, D)],
    [base + 1, rows(n.rowAdjoints, 3)],
    [base + 3, rows(n.rowAdjoints, 3)],
    [base + 4, rows(n.rowAdjoints, 2)],
    [base + 6, rows(n.rowAdjoints, 1)],
    [base + 7, rows(n.rowAdjoints, 0)],
    [base + 8, n.dnormalized.subarray(0, T * D)],
  ];
  const dEhead = new Float64Array(D * V);
  for (let v = 0; v < V; v++) for (let c = 0; c < D; c++) dEhead[c * V + v] = headPart[v * D + c] as number;
  const nodeValues = new Map<number, ArrayLike<number>>([
    [0, grad('token_embedding.weight')],
    [1, engine.dhs[0]!.subarray(0, T * D)],
    ...normNodes(2, a.attentionNorm),
    [11, grad('blocks.0.attention_norm.gain')],
    [12, g.n1.subarray(0, T * D)],
    [13, grad('blocks.0.attention.query.weight')],
    [14, g.q.subarray(0, T * D)],
    [15, g.q.subarray(0, T * D)],
    [16, heads(g.q, T, H, d)],
    [17, heads(g.qr, T, H, d)],
    [18, heads(g.qr, T, H, d)],
    [19, grad('blocks.0.attention.key.weight')],
    [20, g.k.subarray(0, T * D)],
    [21, g.k.subarray(0, T * D)],
    [22, heads(g.k, T, H, d)],
    [23, heads(g.kr, T, H, d)],
    [24, heads(g.kr, T, H, d)],
    [25, keysT(g.kr, T, H, d)],
    [26, tr.draw.subarray(0, H * T * T)],
    [28, tr.dscaled.subarray(0, H * T * T)],
    [29, tr.dprob.subarray(0, H * T * T)],
    [30, grad('blocks.0.attention.value.weight')],
    [31, g.v.subarray(0, T * D)],
    [32, g.v.subarray(0, T * D)],
    [33, heads(g.v, T, H, d)],
    [34, heads(g.v, T, H, d)],
    [35, heads(g.merged, T, H, d)],
    [36, heads(g.merged, T, H, d)],
    [37, g.merged.subarray(0, T * D)],
    [38, g.merged.subarray(0, T * D)],
    [39, grad('blocks.0.attention.output.weight')],
    [40, g.h1.subarray(0, T * D)],
    [41, g.h1.subarray(0, T * D)],
    ...normNodes(42, a.ffnNorm),
    [51, grad('blocks.0.ffn_norm.gain')],
    [52, g.n2.subarray(0, T * D)],
    [53, grad('blocks.0.ffn.gate.weight')],
    [54, g.gate.subarray(0, T * F)],
    [55, g.silu.subarray(0, T * F)],
    [56, grad('blocks.0.ffn.up.weight')],
    [57, g.up.subarray(0, T * F)],
    [58, g.prod.subarray(0, T * F)],
    [59, grad('blocks.0.ffn.down.weight')],
    [60, engine.dhs[1]!.subarray(0, T * D)],
    [61, engine.dhs[1]!.subarray(0, T * D)],
    ...normNodes(62, engine.finalNorm),
    [71, grad('final_norm.gain')],
    [72, engine.dnf.subarray(0, T * D)],
    [73, dEhead],
    [74, engine.dlogits.subarray(0, T * V)],
    [75, [1.0]],
  ]);
  for (const node of trace.backward_graph.nodes) {
    const expected = node.pass_adjoint_bits;
    if (node.op === 'constant') {
      if (expected != null && expected.length > 0) checks.push({ name: `node ${node.index} (constant)`, actual: [], expected });
      continue;
    }
    const actual = nodeValues.get(node.index);
    if (actual === undefined) throw new Error(`no value mapped for tape node ${node.index} (${node.op})`);
    add(`adjoint of node ${node.index} (${node.op}${node.parameter ? ` ${node.parameter}` : ''})`, actual, expected ?? []);
  }

  // Parameter gradients, from the decoder itself.
  for (const gt of trace.gradients) add(`gradient ${gt.name}`, model.gradient(gt.name), gt.bits);
  return checks;
}

/** Messages of every mismatching check, in order. */
export function forwardTraceMismatches(): string[] {
  const out: string[] = [];
  for (const c of forwardTraceChecks()) {
    const m = firstMismatch(c.name, c.actual, c.expected);
    if (m !== null) out.push(m);
  }
  return out;
}
