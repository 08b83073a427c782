/**
 * Replays forward-trace.json (../../../../docs/spec/model.md §15, ../../../../docs/spec/backward.md §6): the initial ch33
 * model on the sequence [0, 1] with targets [1, 2], comparing every activation
 * and every node's pass adjoint of the reference tape with our buffers.
 */
import { Decoder, FIXTURE_DECODER_CONFIG } from '../../src/index.ts';
import { allocateBatchBuffers, reduceGainsAndEmbedding, reducePartial, sequenceGradients } from '../../src/internal/batch-reduce.ts';
import { openKernels } from '../../src/kernels/kernel-choice.ts';
import type { KernelSetName } from '../../src/kernels/kernel-set.ts';
import type { Matrix } from '../../src/reference/matrix.ts';
import { decoderBackward, decoderForward } from '../../src/reference/model.ts';
import { fixture } from './bits.ts';

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

/** The values of a matrix whose rows are contiguous, as one array. */
function values(m: Matrix): Float64Array {
  return m.data.subarray(m.offset, m.offset + m.rows * m.columns);
}

/**
 * Runs the trace case on one kernel set and lists every comparison
 * (activations, node adjoints, gradients). The caller checks that none
 * mismatches.
 * @param set - the kernel set of the decoder and of the tracing pass.
 * @returns the comparisons.
 */
export function forwardTraceChecks(set: KernelSetName): Check[] {
  const trace = fixture<ForwardTrace>('forward-trace.json');
  const config = FIXTURE_DECODER_CONFIG;
  const { modelWidth: D, heads: H, vocabularySize: V } = config;
  const d = D / H;
  const T = trace.input_token_ids.length;
  const inputs = Int32Array.from(trace.input_token_ids);
  const targets = Int32Array.from(trace.targets);

  const model = new Decoder(config, { kernels: set });
  model.initialize(33n);
  const loss = model.trainStep({ inputs, targets, rows: 1, columns: T });

  // The same pass on a tracing workspace of the same set, reduced exactly like the decoder does.
  const kernels = openKernels(config, set, { trace: true });
  const engine = kernels.workspace;
  engine.prepare(model.parameters, -1);
  const state = engine.state(T);
  const seq = { tokens: inputs, offset: 0, targets, logitsFrom: 0 };
  decoderForward(kernels, state, seq);
  const buffers = allocateBatchBuffers(engine.layout, config.layers, D, 1, T, 1, false);
  decoderBackward(kernels, state, seq, sequenceGradients(engine.weightGradients(buffers.partials, 0, false), buffers, { row: 0, rows: T, add: false, scale: 1.0 / T }));
  engine.sequenceDone();
  const headPart = buffers.partials.slice(0, V * D);
  reducePartial(buffers.adjoint, buffers.partials, 0, true, 0, engine.layout.size);
  reduceGainsAndEmbedding(buffers.adjoint, buffers, engine.layout, inputs, T, D, V, new Float64Array(V * D));

  const a = state.acts.blocks[0]!;
  const g = state.adjoints.blocks[0]!;
  const tr = a.att.trace!;
  const checks: Check[] = [];
  const t = (key: string): Tensor => trace[key] as Tensor;
  const add = (name: string, actual: ArrayLike<number>, expected: readonly string[]): void => {
    checks.push({ name, actual, expected });
  };
  const norm = (key: string, n: { ms: Float64Array; inv: Float64Array; normalized: Matrix; out: Matrix }): void => {
    const nt = trace[key] as NormTrace;
    add(`${key}.mean_square`, n.ms.subarray(0, T), nt.mean_square.bits);
    add(`${key}.inverse_rms`, n.inv.subarray(0, T), nt.inverse_rms.bits);
    add(`${key}.normalized`, values(n.normalized), nt.normalized.bits);
    add(`${key}.output`, values(n.out), nt.output.bits);
  };
  const { acts, adjoints } = state;

  // Forward activations, in model order.
  add('rope_tables.inverse_frequencies', engine.rope.inverseFrequencies, trace.rope_tables.inverse_frequencies.bits);
  add('rope_tables.cosines', engine.rope.cosines, trace.rope_tables.cosines.bits);
  add('rope_tables.sines', engine.rope.sines, trace.rope_tables.sines.bits);
  add('embedding', values(acts.hs[0]!), t('embedding').bits);
  norm('attention_norm', a.n1);
  add('q_linear', values(a.q), t('q_linear').bits);
  add('k_linear', values(a.k), t('k_linear').bits);
  add('v_linear', values(a.v), t('v_linear').bits);
  add('q_heads', heads(values(a.q), T, H, d), t('q_heads').bits);
  add('k_heads', heads(values(a.k), T, H, d), t('k_heads').bits);
  add('v_heads', heads(values(a.v), T, H, d), t('v_heads').bits);
  add('q_rotated', heads(values(a.qr), T, H, d), t('q_rotated').bits);
  add('k_rotated', heads(values(a.kr), T, H, d), t('k_rotated').bits);
  add('raw_scores', tr.raw.subarray(0, H * T * T), t('raw_scores').bits);
  add('attention_scale', [engine.scale], [trace.attention_scale.bits]);
  add('scaled_scores', tr.scaled.subarray(0, H * T * T), t('scaled_scores').bits);
  add('attention_weights', values(a.att.prob), t('attention_weights').bits);
  add('head_outputs', heads(values(a.merged), T, H, d), t('head_outputs').bits);
  add('merged_heads', values(a.merged), t('merged_heads').bits);
  add('attention_output', values(a.attention), t('attention_output').bits);
  add('after_attention_residual', values(a.h1), t('after_attention_residual').bits);
  norm('ffn_norm', a.n2);
  add('ffn_gate_linear', values(a.glu.gate), t('ffn_gate_linear').bits);
  add('ffn_gate_silu', values(a.glu.silu), t('ffn_gate_silu').bits);
  add('ffn_up', values(a.glu.up), t('ffn_up').bits);
  add('ffn_product', values(a.glu.prod), t('ffn_product').bits);
  add('ffn_output', values(a.ffn), t('ffn_output').bits);
  add('block_output', values(acts.hs[1]!), t('block_output').bits);
  norm('final_norm', acts.finalNorm);
  add('logits', values(acts.logits), t('logits').bits);
  add('loss (decoder)', [loss], [trace.loss.bits]);

  // Pass adjoints of every tape node (../../../../docs/spec/backward.md §2).
  const grad = (name: string): Float64Array => {
    const e = engine.layout.entries[engine.layout.indexByName.get(name)!]!;
    return buffers.adjoint.subarray(e.offset, e.offset + e.length);
  };
  const rows = (ra: Float64Array, i: number): Float64Array => column(ra, 5, i, T);
  const normNodes = (base: number, n: { rowAdjoints: Float64Array; dnormalized: Matrix }): [number, ArrayLike<number>][] => [
    [base, broadcast(n.rowAdjoints, 5, 4, T, D)],
    [base + 1, rows(n.rowAdjoints, 3)],
    [base + 3, rows(n.rowAdjoints, 3)],
    [base + 4, rows(n.rowAdjoints, 2)],
    [base + 6, rows(n.rowAdjoints, 1)],
    [base + 7, rows(n.rowAdjoints, 0)],
    [base + 8, values(n.dnormalized)],
  ];
  /** The six nodes of the query or key path: the weight, the projection (two nodes), its heads, the rotated heads (two). */
  const rotatedNodes = (base: number, name: string, projected: Matrix, rotated: Matrix): [number, ArrayLike<number>][] => [
    [base, grad(`blocks.0.attention.${name}.weight`)],
    [base + 1, values(projected)],
    [base + 2, values(projected)],
    [base + 3, heads(values(projected), T, H, d)],
    [base + 4, heads(values(rotated), T, H, d)],
    [base + 5, heads(values(rotated), T, H, d)],
  ];
  const dEhead = new Float64Array(D * V);
  for (let v = 0; v < V; v++) for (let c = 0; c < D; c++) dEhead[c * V + v] = headPart[v * D + c] as number;
  const nodeValues = new Map<number, ArrayLike<number>>([
    [0, grad('token_embedding.weight')],
    [1, values(adjoints.dhs[0]!)],
    ...normNodes(2, a.n1),
    [11, grad('blocks.0.attention_norm.gain')],
    [12, values(g.n1)],
    ...rotatedNodes(13, 'query', g.q, g.att.q),
    ...rotatedNodes(19, 'key', g.k, g.att.k),
    [25, keysT(values(g.att.k), T, H, d)],
    [26, tr.draw.subarray(0, H * T * T)],
    [28, tr.dscaled.subarray(0, H * T * T)],
    [29, tr.dprob.subarray(0, H * T * T)],
    [30, grad('blocks.0.attention.value.weight')],
    [31, values(g.att.v)],
    [32, values(g.att.v)],
    [33, heads(values(g.att.v), T, H, d)],
    [34, heads(values(g.att.v), T, H, d)],
    [35, heads(values(g.merged), T, H, d)],
    [36, heads(values(g.merged), T, H, d)],
    [37, values(g.merged)],
    [38, values(g.merged)],
    [39, grad('blocks.0.attention.output.weight')],
    [40, values(g.h1)],
    [41, values(g.h1)],
    ...normNodes(42, a.n2),
    [51, grad('blocks.0.ffn_norm.gain')],
    [52, values(g.n2)],
    [53, grad('blocks.0.ffn.gate.weight')],
    [54, values(g.glu.gate)],
    [55, values(g.glu.silu)],
    [56, grad('blocks.0.ffn.up.weight')],
    [57, values(g.glu.up)],
    [58, values(g.glu.prod)],
    [59, grad('blocks.0.ffn.down.weight')],
    [60, values(adjoints.dhs[1]!)],
    [61, values(adjoints.dhs[1]!)],
    ...normNodes(62, acts.finalNorm),
    [71, grad('final_norm.gain')],
    [72, values(adjoints.dnf)],
    [73, dEhead],
    [74, values(adjoints.dlogits)],
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
