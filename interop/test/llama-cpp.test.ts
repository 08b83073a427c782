/**
 * GGUF interoperability, proven with llama.cpp's own code: node-llama-cpp
 * 3.21.1 (its prebuilt CPU binaries; nothing is built or downloaded) loads the
 * GGUF exports of three models — a trained byte-level BPE model (the app's
 * tiny size, rectangular feed-forward), a trained 2-layer model with 4 heads,
 * and the ch33 fixture (literal tokenizer, every matrix square) — and
 * `@huggingface/gguf` parses their metadata and tensor tables.
 *
 * With an f32 KV cache and flash attention off, llama.cpp's greedy
 * continuation from llmcp's prompt ids equals llmcp's up to the context limit,
 * and its next-token probabilities agree with llmcp's to ≤ 1e-4. With its
 * default context settings (f16 KV cache) the greedy agreement is measured
 * and reported, as is the text-tokenization agreement on the validation split
 * (llama.cpp splits text with a regex before BPE; llmcp does not).
 *
 * Skips with a message when the interop workspace is not installed
 * (`pnpm install --dir interop --frozen-lockfile`) or the prebuilt binary
 * cannot run on this machine.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli, type CliStream } from '@llmcp/cli';
import { decodeCheckpoint, SplitMix64, type DecodedCheckpoint } from '@llmcp/format';
import { Decoder, generate } from '@llmcp/model';
import { tokenizerFromState, type AnyTokenizer } from '@llmcp/tokenizer';
import { parseConfig, trainRun } from '@llmcp/trainer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const INTEROP = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const REPO = path.resolve(INTEROP, '..');
const INSTALLED = existsSync(path.join(INTEROP, 'node_modules', 'node-llama-cpp', 'package.json')) && existsSync(path.join(INTEROP, 'node_modules', '@huggingface', 'gguf', 'package.json'));
const NOT_INSTALLED = 'SKIPPED: the interop workspace is not installed; run `pnpm install --dir interop --frozen-lockfile` to run the llama.cpp (node-llama-cpp 3.21.1) GGUF tests';
const GOLDEN = path.join(REPO, 'packages/conformance/fixtures/golden-6330.llmcp');
const STORIES = path.join(REPO, 'apps/trainer/corpus/stories.json');
const STORIES_SPLIT = path.join(REPO, 'apps/trainer/corpus/stories-split.json');
/** Probability agreement required at f32 (issue 10, acceptance 1). */
const PROBABILITY_TOLERANCE = 1e-4;

type NodeLlamaCpp = typeof import('node-llama-cpp');
type Llama = Awaited<ReturnType<NodeLlamaCpp['getLlama']>>;
type LlamaModel = Awaited<ReturnType<Llama['loadModel']>>;
type Token = import('node-llama-cpp').Token;
type ControlledItem = import('node-llama-cpp').ControlledEvaluateInputItem;

/** llmcp ids as node-llama-cpp's branded token numbers. */
const asTokens = (ids: readonly number[]): Token[] => ids as unknown as Token[];
/** One controlled-evaluation item per id, each asking for the next token's probabilities (and/or greedy choice). */
const controlled = (ids: readonly number[], next: { probabilities?: boolean; token?: boolean }): ControlledItem[] =>
  asTokens(ids).map((t): ControlledItem => [t, { generateNext: { ...next, options: { temperature: 0 } } }]);

interface Subject {
  readonly label: string;
  readonly checkpoint: DecodedCheckpoint;
  readonly tokenizer: AnyTokenizer;
  readonly decoder: Decoder;
  readonly gguf: string;
  /** Prompts (llmcp ids) for the exact greedy comparison. */
  readonly prompts: readonly (readonly number[])[];
}

class Sink implements CliStream {
  text = '';
  readonly isTTY = false;
  write(chunk: string): boolean {
    this.text += chunk;
    return true;
  }
}

async function exportGguf(source: string, out: string, extra: readonly string[] = []): Promise<void> {
  const stdout = new Sink();
  const stderr = new Sink();
  const code = await runCli(['export', '--to', 'gguf', source, '-o', out, ...extra], { stdout, stderr, env: {}, cwd: REPO });
  if (code !== 0) throw new Error(`llmcp export --to gguf ${source} exited with ${code}: ${stderr.text}`);
}

interface StoryDocument {
  readonly id: string;
  readonly text: string;
}

function validationTexts(): string[] {
  const docs = JSON.parse(readFileSync(STORIES, 'utf8')) as StoryDocument[];
  const split = JSON.parse(readFileSync(STORIES_SPLIT, 'utf8')) as { validation: string[] };
  const byId = new Map(docs.map((d) => [d.id, d.text]));
  return split.validation.map((id) => byId.get(id) as string);
}

function softmax(logits: Float64Array, from: number, V: number): Float64Array {
  let max = -Infinity;
  for (let v = 0; v < V; v++) max = Math.max(max, logits[from + v] as number);
  const p = new Float64Array(V);
  let z = 0;
  for (let v = 0; v < V; v++) z += p[v] = Math.exp((logits[from + v] as number) - max);
  for (let v = 0; v < V; v++) p[v] = (p[v] as number) / z;
  return p;
}

/** llmcp's greedy choice at every row (ties to the smaller id, as `generate` does). */
function argmaxRows(logits: Float64Array, V: number): number[] {
  const out: number[] = [];
  for (let r = 0; r * V < logits.length; r++) {
    let best = 0;
    for (let v = 1; v < V; v++) if ((logits[r * V + v] as number) > (logits[r * V + best] as number)) best = v;
    out.push(best);
  }
  return out;
}

function llmcpGreedy(subject: Subject, prompt: readonly number[]): number[] {
  const n = subject.checkpoint.decoder.maxPositions - prompt.length;
  return generate(subject.decoder, { prompt, mode: { kind: 'greedy' }, rng: new SplitMix64(0n), maxNewTokens: n }).tokens;
}

/** Prompts from the validation split: document starts (BOS + k tokens) of several lengths. */
function bpePrompts(tokenizer: AnyTokenizer, P: number, texts: readonly string[], count: number): number[][] {
  const out: number[][] = [];
  const lengths = [1, 2, 3, 5, 8, Math.floor(P / 2), P - 1];
  for (let i = 0; out.length < count; i++) {
    const ids = Array.from(tokenizer.encodeDocument(texts[i % texts.length] as string));
    const k = Math.min(lengths[i % lengths.length] as number, P - 1, ids.length);
    out.push(ids.slice(0, k));
  }
  return out;
}

function smallConfig(model: { width: number; heads: number; feedForwardWidth: number; layers: number }, contextLength: number, merges: number, steps: number): ReturnType<typeof parseConfig> {
  return parseConfig({
    steps,
    data: { source: { kind: 'corpus', corpus: STORIES, split: STORIES_SPLIT }, contextLength, stride: 1, batchSize: 8, shuffle: { seed: 1, epochs: 'reshuffle' } },
    tokenizer: { kind: 'bpe', merges },
    model: { ...model, initSeed: 1 },
    optimizer: { learningRate: 0.01, weightDecay: 0.01, clipNorm: 1 },
    schedule: { kind: 'constant', rate: 0.01 },
    evaluation: { validateEvery: steps, batchSize: 32, stride: contextLength },
    checkpoint: { every: steps, keepSteps: 1 },
    sampling: { seed: 7, prompt: '', count: 1, maxNewTokens: 8, temperature: 0.8, topK: 40 },
    log: { timing: false },
  });
}

if (!INSTALLED) {
  describe('GGUF export in llama.cpp (node-llama-cpp)', () => {
    it.skip(NOT_INSTALLED, () => {});
  });
  console.warn(NOT_INSTALLED);
} else {
  describe('GGUF export in llama.cpp (node-llama-cpp 3.21.1)', () => {
    const tmp = mkdtempSync(path.join(tmpdir(), 'llmcp-interop-'));
    let nlc: NodeLlamaCpp;
    let llama: Llama | null = null;
    let unavailable: string | null = null;
    const subjects: Subject[] = [];
    const models = new Map<string, LlamaModel>();
    const texts = validationTexts();

    beforeAll(async () => {
      nlc = await import('node-llama-cpp');
      try {
        // Prebuilt binaries only: never build, never download.
        llama = await nlc.getLlama({ build: 'never', usePrebuiltBinaries: true, skipDownload: true, gpu: false, progressLogs: false, logLevel: nlc.LlamaLogLevel.error });
      } catch (e) {
        unavailable = `SKIPPED: node-llama-cpp's prebuilt llama.cpp binary cannot run on this machine (${(e as Error).message})`;
        console.warn(unavailable);
        return;
      }
      // (a) a trained byte-level BPE model: the app's tiny size (D32 H2 F128 L1, 512 ids, context 32).
      const tiny = path.join(tmp, 'tiny');
      await trainRun({ runDir: tiny, config: smallConfig({ width: 32, heads: 2, feedForwardWidth: 128, layers: 1 }, 32, 254, 60), saveMode: 'inline' });
      // (b) a trained 2-layer model with 4 heads (D16 H4 F40 L2, 322 ids, context 24).
      const deep = path.join(tmp, 'two-layer');
      await trainRun({ runDir: deep, config: smallConfig({ width: 16, heads: 4, feedForwardWidth: 40, layers: 2 }, 24, 64, 40), saveMode: 'inline' });
      for (const [label, runDir] of [
        ['tiny BPE (D32 H2 F128 L1)', tiny],
        ['2-layer BPE (D16 H4 F40 L2)', deep],
      ] as const) {
        const out = path.join(tmp, `${path.basename(runDir)}.gguf`);
        await exportGguf(runDir, out); // a run directory: its best slot
        const checkpoint = decodeCheckpoint(new Uint8Array(readFileSync(path.join(runDir, 'checkpoints', 'best', 'state.llmcp'))));
        const tokenizer = tokenizerFromState(checkpoint.tokenizer);
        subjects.push({ label, checkpoint, tokenizer, decoder: Decoder.fromCheckpoint(checkpoint), gguf: out, prompts: bpePrompts(tokenizer, checkpoint.decoder.maxPositions, texts, 12) });
      }
      // (c) the ch33 fixture model: literal tokenizer of 5 pieces, D4 H2 F4 L1, context 2.
      const ch33 = path.join(tmp, 'ch33.gguf');
      await exportGguf(GOLDEN, ch33);
      const golden = decodeCheckpoint(new Uint8Array(readFileSync(GOLDEN)));
      subjects.push({ label: 'ch33 fixture (literal, D4 H2 F4 L1)', checkpoint: golden, tokenizer: tokenizerFromState(golden.tokenizer), decoder: Decoder.fromCheckpoint(golden), gguf: ch33, prompts: [[0], [1], [2], [3], [4]] });
      for (const s of subjects) models.set(s.label, await llama.loadModel({ modelPath: s.gguf, gpuLayers: 0 }));
    }, 600_000);

    afterAll(async () => {
      for (const m of models.values()) await m.dispose();
      await llama?.dispose();
      rmSync(tmp, { recursive: true, force: true });
    });

    // node-llama-cpp shifts a full context before it evaluates more: one spare cell keeps all P positions in place.
    // One thread everywhere: not a numerics setting, but far faster than contended threads on a busy machine.
    const contextSize = (s: Subject): number => s.checkpoint.decoder.maxPositions + 1;
    const exactContext = async (s: Subject) =>
      (models.get(s.label) as LlamaModel).createContext({
        contextSize: contextSize(s),
        batchSize: s.checkpoint.decoder.maxPositions,
        sequences: 1,
        threads: 1,
        flashAttention: false,
        experimentalKvCacheKeyType: 'F32',
        experimentalKvCacheValueType: 'F32',
      });

    it('@huggingface/gguf parses every export: GGUF v3, llama metadata, the tokenizer, and every tensor under its llama.cpp name and ne', async (ctx) => {
      if (unavailable !== null) ctx.skip(unavailable);
      const { gguf } = await import('@huggingface/gguf');
      for (const s of subjects) {
        const { metadata, tensorInfos } = await gguf(s.gguf, { allowLocalFile: true });
        const d = s.checkpoint.decoder;
        const m = metadata as unknown as Record<string, unknown>;
        expect(m.version).toBe(3);
        expect(m['general.architecture']).toBe('llama');
        expect(m['general.source.checksum']).toBe(s.checkpoint.layout.checksumLabel);
        expect(m['general.source.step']).toBe(s.checkpoint.selectedStep);
        expect([m['llama.vocab_size'], m['llama.context_length'], m['llama.embedding_length'], m['llama.block_count'], m['llama.feed_forward_length']]).toEqual([
          d.vocabularySize,
          d.maxPositions,
          d.modelWidth,
          d.layers,
          d.feedForwardWidth,
        ]);
        expect([m['llama.attention.head_count'], m['llama.attention.head_count_kv'], m['llama.rope.dimension_count']]).toEqual([d.heads, d.heads, d.modelWidth / d.heads]);
        expect(m['llama.rope.freq_base']).toBe(Math.fround(d.ropeBase));
        expect(m['llama.attention.layer_norm_rms_epsilon']).toBe(Math.fround(d.rmsEpsilon));
        expect(m['tokenizer.ggml.model']).toBe('gpt2');
        expect((m['tokenizer.ggml.tokens'] as string[]).length).toBe(d.vocabularySize);
        const merges = m['tokenizer.ggml.merges'] as string[];
        expect(merges.length).toBe(s.tokenizer.kind === 'bpe' ? d.vocabularySize - 258 : 0);
        const { D, F, V } = { D: d.modelWidth, F: d.feedForwardWidth, V: d.vocabularySize };
        const expected: [string, number[]][] = [['token_embd.weight', [D, V]]];
        for (let l = 0; l < d.layers; l++) {
          expected.push(
            [`blk.${l}.attn_norm.weight`, [D]],
            [`blk.${l}.attn_q.weight`, [D, D]],
            [`blk.${l}.attn_k.weight`, [D, D]],
            [`blk.${l}.attn_v.weight`, [D, D]],
            [`blk.${l}.attn_output.weight`, [D, D]],
            [`blk.${l}.ffn_norm.weight`, [D]],
            [`blk.${l}.ffn_gate.weight`, [D, F]],
            [`blk.${l}.ffn_up.weight`, [D, F]],
            [`blk.${l}.ffn_down.weight`, [F, D]],
          );
        }
        expected.push(['output_norm.weight', [D]]);
        expect(tensorInfos.map((t) => [t.name, t.shape.map(Number)])).toEqual(expected);
        expect(new Set(tensorInfos.map((t) => t.dtype))).toEqual(new Set([0])); // GGMLQuantizationType.F32
      }
    });

    it('greedy continuations from llmcp prompt ids equal llmcp up to the context limit (f32 KV cache, flash attention off)', async (ctx) => {
      if (unavailable !== null) ctx.skip(unavailable);
      for (const s of subjects) {
        const context = await exactContext(s);
        const sequence = context.getSequence();
        let equal = 0;
        for (const prompt of s.prompts) {
          const want = llmcpGreedy(s, prompt);
          await sequence.clearHistory();
          const got: number[] = [];
          for await (const token of sequence.evaluate(asTokens(prompt), { temperature: 0, yieldEogToken: true })) {
            got.push(token);
            if (got.length === want.length) break; // llama.cpp does not stop at the trained context; llmcp's limit does
          }
          expect(got, `${s.label}, prompt ${JSON.stringify(prompt)}`).toEqual(want);
          equal += 1;
        }
        console.log(`[interop] ${s.label}: greedy continuations equal on ${equal} of ${s.prompts.length} prompts (up to ${s.checkpoint.decoder.maxPositions} positions)`);
        await context.dispose();
      }
    }, 300_000);

    it(`next-token probabilities agree with llmcp to ≤ ${PROBABILITY_TOLERANCE} at every position (f32)`, async (ctx) => {
      if (unavailable !== null) ctx.skip(unavailable);
      let overall = 0;
      for (const s of subjects) {
        const context = await exactContext(s);
        const sequence = context.getSequence();
        const V = s.checkpoint.decoder.vocabularySize;
        let max = 0;
        let positions = 0;
        for (const prompt of s.prompts) {
          const tokens = [...prompt, ...llmcpGreedy(s, prompt)].slice(0, s.checkpoint.decoder.maxPositions);
          await sequence.clearHistory();
          const out = await sequence.controlledEvaluate(controlled(tokens, { probabilities: true }));
          const logits = s.decoder.logits(tokens);
          for (let i = 0; i < tokens.length; i++) {
            const theirs = out[i]?.next.probabilities;
            expect(theirs, `${s.label}: no probabilities at position ${i}`).toBeDefined();
            const ours = softmax(logits, i * V, V);
            for (let v = 0; v < V; v++) max = Math.max(max, Math.abs((theirs?.get(v as Token) ?? 0) - (ours[v] as number)));
            positions += 1;
          }
        }
        console.log(`[interop] ${s.label}: max |Δp| = ${max.toExponential(2)} over ${positions} positions × ${V} tokens`);
        expect(max).toBeLessThanOrEqual(PROBABILITY_TOLERANCE);
        overall = Math.max(overall, max);
        await context.dispose();
      }
      console.log(`[interop] max |Δp| over all models = ${overall.toExponential(2)}`);
    }, 300_000);

    it('reports how often greedy tokens agree with llama.cpp default context settings (f16 KV cache)', async (ctx) => {
      if (unavailable !== null) ctx.skip(unavailable);
      for (const s of subjects.filter((x) => x.tokenizer.kind === 'bpe')) {
        const P = s.checkpoint.decoder.maxPositions;
        const V = s.checkpoint.decoder.vocabularySize;
        const context = await (models.get(s.label) as LlamaModel).createContext({ contextSize: contextSize(s), sequences: 1, threads: 1 });
        const sequence = context.getSequence();
        // Teacher-forced: every position of P-token windows of the validation documents.
        let agree = 0;
        let total = 0;
        for (const text of texts) {
          const ids = Array.from(s.tokenizer.encodeDocument(text));
          for (let start = 0; start + 1 < ids.length; start += P) {
            const window = ids.slice(start, start + P);
            await sequence.clearHistory();
            const out = await sequence.controlledEvaluate(controlled(window, { token: true }));
            const ours = argmaxRows(s.decoder.logits(window), V);
            for (let i = 0; i < window.length; i++) {
              total += 1;
              if ((out[i]?.next.token as number | null | undefined) === ours[i]) agree += 1;
            }
          }
        }
        // Free-running: whole greedy continuations from many prompts.
        const prompts = bpePrompts(s.tokenizer, P, texts, 100);
        let same = 0;
        for (const prompt of prompts) {
          const want = llmcpGreedy(s, prompt);
          await sequence.clearHistory();
          const got: number[] = [];
          for await (const token of sequence.evaluate(asTokens(prompt), { temperature: 0, yieldEogToken: true })) {
            got.push(token);
            if (got.length === want.length) break;
          }
          if (got.every((t, i) => t === want[i])) same += 1;
        }
        console.log(
          `[interop] ${s.label}, default settings: next-token greedy agreement ${agree}/${total} = ${((100 * agree) / total).toFixed(2)}% of validation positions; ` +
            `whole continuations equal on ${same}/${prompts.length} prompts`,
        );
        expect(agree / total).toBeGreaterThan(0.9);
        await context.dispose();
      }
    }, 600_000);

    it('reports the text-tokenization agreement on the validation split; detokenizing llmcp ids round-trips exactly', async (ctx) => {
      if (unavailable !== null) ctx.skip(unavailable);
      for (const s of subjects) {
        const model = models.get(s.label) as LlamaModel;
        const docs = s.tokenizer.kind === 'bpe' ? texts : ['0', '01234', '43210', '4401223', '1'.repeat(7)];
        let identical = 0;
        let ours = 0;
        let theirs = 0;
        for (const text of docs) {
          const want = Array.from(s.tokenizer.encode(text));
          const got = model.tokenize(text, false);
          if (got.length === want.length && got.every((t, i) => t === want[i])) identical += 1;
          ours += want.length;
          theirs += got.length;
          expect(model.detokenize(asTokens(want), false)).toBe(text);
        }
        console.log(
          `[interop] ${s.label}: llama.cpp text tokenization equals llmcp on ${identical}/${docs.length} validation documents ` +
            `(${ours} llmcp ids vs ${theirs} llama.cpp ids)`,
        );
        if (s.tokenizer.kind === 'literal') expect(identical).toBe(docs.length); // one-byte pieces: no merges to disagree on
      }
    });

    it('an f16 export loads and stays close to llmcp', async (ctx) => {
      if (unavailable !== null) ctx.skip(unavailable);
      const s = subjects[0] as Subject;
      const out = path.join(tmp, 'tiny-f16.gguf');
      await exportGguf(path.join(tmp, 'tiny'), out, ['--dtype', 'f16']);
      const { gguf } = await import('@huggingface/gguf');
      const { tensorInfos } = await gguf(out, { allowLocalFile: true });
      expect(tensorInfos.map((t) => [t.name, t.dtype]).filter(([, dt]) => dt === 1).map(([n]) => n)).toEqual(tensorInfos.filter((t) => t.n_dims === 2).map((t) => t.name));
      const model = await (llama as Llama).loadModel({ modelPath: out, gpuLayers: 0 });
      const context = await model.createContext({ contextSize: contextSize(s), threads: 1, flashAttention: false, experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32' });
      const sequence = context.getSequence();
      const V = s.checkpoint.decoder.vocabularySize;
      let max = 0;
      for (const prompt of s.prompts) {
        const tokens = [...prompt, ...llmcpGreedy(s, prompt)];
        await sequence.clearHistory();
        const res = await sequence.controlledEvaluate(controlled(tokens, { probabilities: true }));
        const logits = s.decoder.logits(tokens);
        for (let i = 0; i < tokens.length; i++) {
          const ours = softmax(logits, i * V, V);
          for (let v = 0; v < V; v++) max = Math.max(max, Math.abs((res[i]?.next.probabilities?.get(v as Token) ?? 0) - (ours[v] as number)));
        }
      }
      console.log(`[interop] ${s.label}, f16 export: max |Δp| = ${max.toExponential(2)}`);
      expect(max).toBeLessThan(0.05);
      await context.dispose();
      await model.dispose();
    }, 300_000);
  });
}
