/**
 * The other core's load of thread-scaling.bench.ts: a child process training
 * its own single-thread decoder (same shape, its own weights and batch).
 * Commands on stdin, one per line: `run` — train step after step (it answers
 * `running` before the first), `stop` — finish the step under way and answer
 * `idle <ms>…` with the time of each step since the `run` (so the other side
 * sees how fast this core went beside it), `exit`. It prints `ready` once it
 * can start.
 *
 * Usage: `node --conditions=@llmcp/source --import tsx thread-scaling-peer.ts <medium|large> <native|wasm>`
 */
import { createInterface } from 'node:readline';
import { SplitMix64 } from '@llmcp/format';
import { Decoder, setKernels } from '@llmcp/model';
import { PEER_SHAPES, randomBatch, trainingStep } from './training-step.ts';

const shape = process.argv[2] as keyof typeof PEER_SHAPES;
setKernels(process.argv[3] === 'native' ? 'native' : 'wasm');
const s = PEER_SHAPES[shape];
const decoder = new Decoder(s.config);
decoder.initialize(2n);
const batch = randomBatch(new SplitMix64(8n), s.config.vocabularySize, s.batch, s.context);
const step = trainingStep(decoder);
let running = false;
/** Milliseconds of each step since the last `run`. */
let steps: number[] = [];

/** One step, then another after the event loop has read any command that came in. */
function loop(): void {
  if (!running) {
    process.stdout.write(`idle${steps.map((ms) => ` ${ms.toFixed(3)}`).join('')}\n`);
    return;
  }
  const t = performance.now();
  step(batch);
  steps.push(performance.now() - t);
  setImmediate(loop);
}

createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'run' && !running) {
    running = true;
    steps = [];
    process.stdout.write('running\n');
    setImmediate(loop);
  } else if (line === 'stop') {
    if (running) running = false;
    else process.stdout.write('idle\n');
  } else if (line === 'exit') {
    process.exit(0);
  }
});
process.stdout.write('ready\n');
