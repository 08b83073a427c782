/**
 * How far two threads speed up one training step, against how far this
 * machine lets two cores go at all. Per shape (medium, large: the
 * `pnpm bench:peers` shapes) and kernel set (WebAssembly, and native when
 * the addon is built), in one process, so the host's noise hits both sides
 * of every ratio alike:
 *
 * - scaling: a 1-thread and a 2-thread decoder take steps in turn (the order
 *   alternating), and the median of the per-pair time ratios is reported;
 * - ceiling: the 1-thread decoder's step alone, against the same step while
 *   a child process trains an independent 1-thread decoder on the other core
 *   (thread-scaling-peer.ts; the step starts as soon as the peer has stopped,
 *   or has started, so no pause cools either side): two cores
 *   give at most 2 ÷ (together ÷ alone), the ceiling of any split of the
 *   work, whatever the shared caches, memory and clock let through.
 *
 * Read several runs: on the 2-core development VM (a Firecracker microVM) a
 * process, or one of its threads, runs the same WebAssembly code about 1.3×
 * slower for its whole life in roughly a third of starts (medium,
 * WebAssembly, 1 thread: 34–37 ms or 45–52 ms). It is the host, not the code:
 * six separately compiled copies of the matrix kernel in one process are all
 * fast or all slow together, and neither huge pages for the kernel arenas nor
 * pinning to either core changes it. A slow calling thread or worker drags
 * the 2-thread step with it, so the scaling moves from run to run; the
 * ceiling compares one decoder with itself and does not.
 *
 * Options (env): LLMCP_BENCH_CONFIGS=medium,large; LLMCP_BENCH_QUICK=1 → fewer pairs;
 * LLMCP_BENCH_KERNELS=wasm,native.
 * Run: `pnpm bench thread-scaling`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { loadavg } from 'node:os';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { SplitMix64 } from '@llmcp/format';
import { Decoder, kernelInfo, setKernels } from '@llmcp/model';
import { median, PEER_SHAPES, randomBatch, trainingStep } from './training-step.ts';

const quick = process.env['LLMCP_BENCH_QUICK'] === '1';
const shapes = (process.env['LLMCP_BENCH_CONFIGS']?.split(',') ?? ['medium', 'large']).filter((s): s is keyof typeof PEER_SHAPES => s in PEER_SHAPES);
const wanted = process.env['LLMCP_BENCH_KERNELS']?.split(',') ?? ['wasm', 'native'];

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The peer: a child process (thread-scaling-peer.ts) and a way to await its next line. */
function startPeer(shape: string, kernels: string): { send: (line: string) => void; next: () => Promise<string>; child: ChildProcess } {
  const child = spawn(process.execPath, ['--conditions=@llmcp/source', '--import', 'tsx', fileURLToPath(new URL('./thread-scaling-peer.ts', import.meta.url)), shape, kernels], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const w = waiting.shift();
    if (w === undefined) lines.push(line);
    else w(line);
  });
  return {
    child,
    send: (line) => child.stdin!.write(`${line}\n`),
    next: () => (lines.length > 0 ? Promise.resolve(lines.shift() as string) : new Promise((r) => waiting.push(r))),
  };
}

async function measure(shape: keyof typeof PEER_SHAPES, kernels: 'native' | 'wasm'): Promise<string> {
  setKernels(kernels);
  const s = PEER_SHAPES[shape];
  const batch = randomBatch(new SplitMix64(7n), s.config.vocabularySize, s.batch, s.context);
  const pairs = (shape === 'large' ? 8 : 24) / (quick ? 4 : 1);
  const one = new Decoder(s.config);
  const two = await Decoder.create(s.config, { threads: 2 });
  const peer = startPeer(shape, kernels);
  try {
    // The peer starts and warms up (V8 keeps compiling hot WebAssembly on background threads for a while) before anything is timed, then idles until told to run.
    if ((await peer.next()) !== 'ready') throw new Error('thread-scaling-peer did not start');
    peer.send('run');
    await peer.next();
    await pause(shape === 'large' ? 6000 : 2000);
    peer.send('stop');
    await peer.next();
    await pause(1000);
    for (const d of [one, two]) d.initialize(1n);
    const stepOne = trainingStep(one);
    const stepTwo = trainingStep(two);
    const timed = (step: typeof stepOne): number => {
      const t = performance.now();
      step(batch);
      return performance.now() - t;
    };
    for (let w = 0; w < 2; w++) {
      timed(stepOne);
      timed(stepTwo);
    }
    // Scaling: pairs of steps, the order alternating.
    const x1: number[] = [];
    const x2: number[] = [];
    const ratios: number[] = [];
    for (let p = 0; p < pairs; p++) {
      let a = 0;
      let b = 0;
      if (p % 2 === 0) {
        a = timed(stepOne);
        b = timed(stepTwo);
      } else {
        b = timed(stepTwo);
        a = timed(stepOne);
      }
      x1.push(a);
      x2.push(b);
      ratios.push(a / b);
    }
    // Ceiling: the same 1-thread step right after the peer stopped (its step in flight finished), or right after it started.
    const alone: number[] = [];
    const together: number[] = [];
    for (let p = 0; p < 2 * pairs; p++) {
      const beside = p % 2 === 1;
      peer.send(beside ? 'run' : 'stop');
      await peer.next(); // 'running', or 'idle' once its step under way ended
      (beside ? together : alone).push(timed(stepOne));
    }
    peer.send('stop');
    await peer.next();
    const scaling = median(ratios);
    const slowdown = median(together) / median(alone);
    const ceiling = 2 / slowdown;
    return (
      `${shape.padEnd(6)} ${kernels.padEnd(6)}  1 thread ${median(x1).toFixed(1).padStart(7)} ms  2 threads ${median(x2).toFixed(1).padStart(7)} ms  scaling ${scaling.toFixed(3)}  |  ` +
      `1 thread alone ${median(alone).toFixed(1).padStart(7)} ms, beside an independent training ${median(together).toFixed(1).padStart(7)} ms: 2-core ceiling ${ceiling.toFixed(3)}  |  ` +
      `scaling ÷ ceiling ${(scaling / ceiling).toFixed(3)}  (${pairs} pairs, load ${loadavg()[0]!.toFixed(2)})`
    );
  } finally {
    peer.send('exit');
    await new Promise((r) => (peer.child.exitCode === null ? peer.child.once('exit', r) : r(null)));
    await two.close();
  }
}

setKernels('auto');
const info = kernelInfo();
console.log(`thread scaling — one training step (forward + backward + clip + AdamW), B = 8; native kernels: ${info.nativeAvailable ? info.kind : `not available (${info.nativeError ?? 'unknown'})`}`);
for (const shape of shapes) {
  for (const kernels of ['wasm', 'native'] as const) {
    if (!wanted.includes(kernels)) continue;
    if (kernels === 'native' && !info.nativeAvailable) {
      console.log(`${shape.padEnd(6)} native  skipped: the addon is not available`);
      continue;
    }
    console.log(await measure(shape, kernels));
  }
}
