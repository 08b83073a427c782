/**
 * Diagnostics for the checkpoint bench (not run by `pnpm bench`): the CPU and wall time of each checkpoint save
 * on the training thread — inline saves, so the model threads are idle and the process CPU time is the save's —
 * then of the pieces of a save on the final state: the sample audit, encoding and hashing the state, and reading
 * back `job.json` (what retention does for every slot). A 2-step run with validation and a cadence checkpoint at
 * every step: step 0 is a best-only save, step 1 a cadence save (latest/, step snapshot, audit, retention), step 2
 * the final one.
 *
 * Run: `node --conditions=@llmcp/source --import tsx packages/trainer/bench/save-cost.ts [medium|large]`.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { decodeCheckpoint, encodeCheckpoint } from '@llmcp/format';
import { kernelInfo } from '@llmcp/model';
import { parseConfig } from '../src/config.ts';
import { readSlotJob, resumeCandidates } from '../src/run-directory.ts';
import { trainRun } from '../src/run.ts';
import { runSampleAudit } from '../src/sample-audit.ts';
import { SHAPES, trainerConfigInput, writeCorpus } from './shapes.ts';

const which = process.argv[2] ?? 'medium';
if (which !== 'medium' && which !== 'large') throw new Error(`expected medium or large, found ${which}`);
const shape = SHAPES[which];
const ms = (micros: number): string => (micros / 1000).toFixed(1);

function time(label: string, f: () => unknown): void {
  const cpu = process.cpuUsage();
  const t = performance.now();
  f();
  const d = process.cpuUsage(cpu);
  console.log(`${label}: wall ${(performance.now() - t).toFixed(1)} ms, cpu ${ms(d.user + d.system)} ms`);
}

const dir = mkdtempSync(path.join(tmpdir(), 'llmcp-save-cost-'));
try {
  const corpus = writeCorpus(dir, shape.corpus);
  const runDir = path.join(dir, 'run');
  const config = parseConfig(trainerConfigInput(shape, { corpus, steps: 2, validateEvery: 1, checkpointEvery: 1, keepSteps: 1, threads: 2 }));
  console.log(`save cost: ${shape.label}, inline saves, load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  let cpu0 = process.cpuUsage();
  let t0 = performance.now();
  await trainRun({
    runDir,
    config,
    saveMode: 'inline',
    onEvent: (e) => {
      // A save follows its step's evaluation event directly (snapshot copy included).
      if (e.type === 'evaluation') {
        cpu0 = process.cpuUsage();
        t0 = performance.now();
      }
      if (e.type === 'checkpoint') {
        const c = process.cpuUsage(cpu0);
        console.log(`save at step ${e.step} (${e.reason}): wall ${(performance.now() - t0).toFixed(1)} ms, cpu ${ms(c.user + c.system)} ms (user ${ms(c.user)}, system ${ms(c.system)})`);
      }
    },
  });
  const stateFile = path.join(runDir, 'checkpoints', 'latest', 'state.llmcp');
  const bytes = readFileSync(stateFile);
  const state = decodeCheckpoint(bytes);
  const settings = { prompt: '', count: 1, maxNewTokens: 32, temperature: 0.8, topK: null };
  for (let i = 1; i <= 3; i += 1) time(`sample audit #${i} (1 × 32 tokens)`, () => runSampleAudit(state, settings, 2));
  for (let i = 1; i <= 2; i += 1) time(`encode state.llmcp #${i} (${(bytes.length / 1e6).toFixed(1)} MB)`, () => encodeCheckpoint(state));
  for (let i = 1; i <= 2; i += 1) time(`sha256 of state.llmcp #${i}`, () => createHash('sha256').update(bytes).digest('hex'));
  const jobBytes = readFileSync(path.join(runDir, 'checkpoints', 'latest', 'job.json'));
  const job = JSON.parse(jobBytes.toString('utf8')) as Record<string, unknown>;
  const members = Object.entries(job).map(([k, v]) => `${k} ${(JSON.stringify(v).length / 1e3).toFixed(1)} kB`);
  console.log(`job.json ${(jobBytes.length / 1e6).toFixed(2)} MB (compact JSON per member: ${members.join(', ')})`);
  for (let i = 1; i <= 3; i += 1) time(`readSlotJob(latest) #${i}`, () => readSlotJob(runDir, 'latest'));
  for (let i = 1; i <= 3; i += 1) time(`resumeCandidates #${i} (${resumeCandidates(runDir).join(', ')})`, () => resumeCandidates(runDir));
  console.log(`kernels ${kernelInfo().kind}, load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
