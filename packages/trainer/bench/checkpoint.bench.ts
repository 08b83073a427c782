/**
 * Checkpoint overhead of a training run (acceptance 8): the medium config
 * (vocabulary 512 = byte-level BPE with 254 merges, D64/H4/F256/L2, context
 * 64, batch 8) with validation and a checkpoint every 100 steps. Reports the
 * time the training thread is blocked per checkpoint (snapshot copy, waiting
 * for a previous save) and the total blocked time as a share of the training
 * loop's wall time — target ≤ 1% — for background (worker) saves, and the
 * same for inline saves for contrast.
 *
 * Run: `pnpm bench trainer` (or `node --conditions=@llmcp/source --import tsx bench/checkpoint.bench.ts [--steps N]`).
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SplitMix64 } from '@llmcp/format';
import { parseConfig } from '../src/config.ts';
import type { TrainerEvent } from '../src/events.ts';
import { trainRun } from '../src/run.ts';
import type { SaveMode } from '../src/background-saver.ts';

const stepsArg = process.argv.indexOf('--steps');
const STEPS = stepsArg > 0 ? Number(process.argv[stepsArg + 1]) : 300;

/** A deterministic pseudo-English text corpus (~300 KB) from a seeded word list. */
function writeCorpus(dir: string): string {
  const rng = new SplitMix64(512n);
  const syllables = ['ka', 'lo', 'mi', 'ta', 're', 'su', 'no', 'vi', 'de', 'an', 'or', 'el', 'is', 'um', 'pe', 'ro', 'sa', 'ti', 'ne', 'ba'];
  const words = Array.from({ length: 400 }, () => Array.from({ length: 1 + rng.nextBelow(3) }, () => syllables[rng.nextBelow(syllables.length)]).join(''));
  const paragraphs: string[] = [];
  let size = 0;
  while (size < 300_000) {
    const sentences = Array.from({ length: 3 + rng.nextBelow(5) }, () => {
      const n = 4 + rng.nextBelow(10);
      const s = Array.from({ length: n }, () => words[Math.min(rng.nextBelow(words.length), rng.nextBelow(words.length))]).join(' ');
      return `${s.charAt(0).toUpperCase()}${s.slice(1)}.`;
    });
    const p = sentences.join(' ');
    paragraphs.push(p);
    size += p.length + 2;
  }
  const file = path.join(dir, 'corpus.txt');
  writeFileSync(file, `${paragraphs.join('\n\n')}\n`);
  return file;
}

interface Measured {
  readonly mode: SaveMode;
  readonly wallMs: number;
  readonly blocked: readonly { step: number; reason: string; ms: number }[];
  readonly saveMs: readonly number[];
  readonly stateBytes: number;
  readonly tokensPerSecond: number;
}

async function measure(mode: SaveMode, corpus: string): Promise<Measured> {
  const dir = mkdtempSync(path.join(tmpdir(), 'llmcp-trainer-bench-'));
  const config = parseConfig({
    steps: STEPS,
    data: { source: { kind: 'text', path: corpus, validationFraction: 0.02 }, contextLength: 64, batchSize: 8, shuffle: { seed: 1 } },
    tokenizer: { kind: 'bpe', merges: 254 },
    model: { width: 64, heads: 4, feedForwardWidth: 256, layers: 2 },
    optimizer: { learningRate: 0.003 },
    schedule: { kind: 'constant', rate: 0.003 },
    evaluation: { validateEvery: 100, batchSize: 32, stride: 64, maxBatches: 2 },
    checkpoint: { every: 100, keepSteps: 3 },
    sampling: { count: 1, maxNewTokens: 32 },
    log: { timing: true },
  });
  const blocked: { step: number; reason: string; ms: number }[] = [];
  const saveMs: number[] = [];
  let started = 0;
  let tokens = 0;
  let stepMs = 0;
  const onEvent = (e: TrainerEvent): void => {
    if (e.type === 'start') started = performance.now();
    if (e.type === 'checkpoint') blocked.push({ step: e.step, reason: e.reason, ms: e.blockedMs });
    if (e.type === 'checkpoint-saved') saveMs.push(e.saveMs);
    if (e.type === 'step') {
      tokens += e.tokens;
      stepMs += e.stepMs;
    }
  };
  await trainRun({ runDir: path.join(dir, 'run'), config, saveMode: mode, onEvent });
  const wallMs = performance.now() - started;
  const stateBytes = statSync(path.join(dir, 'run', 'checkpoints', 'latest', 'state.llmcp')).size;
  rmSync(dir, { recursive: true, force: true });
  return { mode, wallMs, blocked, saveMs, stateBytes, tokensPerSecond: (tokens * 1000) / stepMs };
}

function report(m: Measured): void {
  const total = m.blocked.reduce((a, b) => a + b.ms, 0);
  const cadence = m.blocked.filter((b) => b.reason === 'cadence' || b.reason === 'final');
  const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  console.log(`\n${m.mode} saves: ${STEPS} steps in ${(m.wallMs / 1000).toFixed(1)} s (${Math.round(m.tokensPerSecond)} tokens/s in updates), state.llmcp ${(m.stateBytes / 1e6).toFixed(2)} MB`);
  console.log(`  checkpoints: ${m.blocked.length} (${cadence.length} cadence/final with sample audit, ${m.blocked.length - cadence.length} best)`);
  for (const b of m.blocked) console.log(`    step ${String(b.step).padStart(4)} ${b.reason.padEnd(7)} blocked ${b.ms.toFixed(2)} ms`);
  console.log(`  blocked per checkpoint: mean ${mean(m.blocked.map((b) => b.ms)).toFixed(2)} ms, max ${Math.max(...m.blocked.map((b) => b.ms)).toFixed(2)} ms`);
  console.log(`  save work per checkpoint (encode, audit, writes): mean ${mean(m.saveMs).toFixed(1)} ms${m.mode === 'worker' ? ' (off the training thread)' : ''}`);
  console.log(`  checkpoint overhead: ${total.toFixed(1)} ms of ${(m.wallMs / 1000).toFixed(1)} s = ${((100 * total) / m.wallMs).toFixed(3)}% of wall time (target ≤ 1%)`);
}

const corpusDir = mkdtempSync(path.join(tmpdir(), 'llmcp-trainer-bench-corpus-'));
const corpus = writeCorpus(corpusDir);
console.log(`trainer checkpoint bench: medium config (V512/D64/H4/F256/L2, ctx 64, batch 8), checkpoint + validation every 100 steps, ${STEPS} steps`);
report(await measure('worker', corpus));
report(await measure('inline', corpus));
rmSync(corpusDir, { recursive: true, force: true });
