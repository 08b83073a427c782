/**
 * Prepares the GPU check (gpu_check.py) on a machine with Node: trains a small
 * model on the app's story corpus, exports it with `llmcp export --to hf`, and
 * writes what llmcp computes for a few prompts — its token ids, its logits at
 * every position, its greedy continuation — into `tools/gpu-check/.data/`
 * (git-ignored), for gpu_check.py to compare on a machine where only Python,
 * PyTorch with CUDA and transformers may exist.
 *
 * Usage: node --conditions=@llmcp/source --import tsx tools/gpu-check/prepare.ts
 * then carry tools/gpu-check/.data to the GPU machine (./README.md).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeCheckpoint } from '@llmcp/format';
import { Decoder } from '@llmcp/model';
import { parseConfig, sizePresetConfigInput, trainRun } from '@llmcp/trainer';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const data = path.join(here, '.data');
const PROMPTS = ['One morning', 'The little fox', 'Once upon a time, a girl named'];
const GREEDY_TOKENS = 24;

rmSync(data, { recursive: true, force: true });
mkdirSync(data, { recursive: true });
// The run stays here; only the export and the expectations travel.
const runDir = path.join(mkdtempSync(path.join(tmpdir(), 'llmcp-gpu-check-')), 'run');
const source = { kind: 'corpus' as const, corpus: path.join(root, 'apps/trainer/corpus/stories.json'), split: path.join(root, 'apps/trainer/corpus/stories-split.json') };
const config = parseConfig({ ...(sizePresetConfigInput({ source, size: 'tiny', steps: 200, timing: false }) as object), threads: 1 });
process.stderr.write('training a tiny model (200 steps)…\n');
await trainRun({ runDir, config, saveMode: 'inline' });
/** `llmcp <args>` from the sources; its stdout. */
function llmcp(args: readonly string[]): string {
  const r = spawnSync(process.execPath, ['--conditions=@llmcp/source', '--import', 'tsx', path.join(root, 'packages/cli/src/bin.ts'), ...args], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`llmcp ${args.join(' ')} failed (${String(r.status)}): ${r.stderr}`);
  return r.stdout;
}
const hf = path.join(data, 'hf');
llmcp(['export', '--to', 'hf', `${runDir}:best`, hf]);
const state = decodeCheckpoint(readFileSync(path.join(runDir, 'checkpoints', 'best', 'state.llmcp')));
const model = Decoder.fromCheckpoint(state);
const V = state.decoder.vocabularySize;
const prompts = PROMPTS.map((text) => {
  // llmcp's own greedy generation: its prompt ids and the ids it continues with.
  const sample = JSON.parse(llmcp(['sample', `${runDir}:best`, '--prompt', text, '--max-tokens', String(GREEDY_TOKENS), '--temperature', '0', '--json'])) as {
    samples: { promptTokens: number[]; tokens: number[] }[];
  };
  const { promptTokens: ids, tokens: greedy } = sample.samples[0] as { promptTokens: number[]; tokens: number[] };
  const logits = model.logits(ids);
  return { text, ids, logits: Array.from({ length: ids.length }, (_, t) => Array.from(logits.subarray(t * V, (t + 1) * V))), greedy };
});
writeFileSync(path.join(data, 'expected.json'), JSON.stringify({ decoder: state.decoder, prompts }));
process.stderr.write(`wrote ${path.relative(root, data)}: hf/, expected.json (${PROMPTS.length} prompts)\n`);
rmSync(path.dirname(runDir), { recursive: true, force: true });
